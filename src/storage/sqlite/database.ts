import { mkdirSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";

export type Db = Database.Database;

/**
 * Versioned migrations, applied in order on open; `PRAGMA user_version` records the last one.
 * Never edit a released migration: append a new one.
 */
const MIGRATIONS: string[] = [
  `
  CREATE TABLE assistants (
    assistant_id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,           -- '' = system assistant, visible to every organization
    graph_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config TEXT NOT NULL,
    context TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX assistants_org_created ON assistants (org_id, created_at);
  CREATE TABLE assistant_versions (
    assistant_id TEXT NOT NULL REFERENCES assistants (assistant_id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    graph_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config TEXT NOT NULL,
    context TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (assistant_id, version)
  );
  CREATE TABLE threads (
    thread_id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    status TEXT NOT NULL,
    metadata TEXT NOT NULL,
    config TEXT NOT NULL,
    "values" TEXT,
    interrupts TEXT NOT NULL,
    error TEXT,
    temporary INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    state_updated_at TEXT NOT NULL
  );
  CREATE INDEX threads_org_created ON threads (org_id, created_at);
  CREATE TABLE runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,   -- queue order among runs due at the same time
    run_id TEXT NOT NULL UNIQUE,
    thread_id TEXT NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    org_id TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    status TEXT NOT NULL,
    metadata TEXT NOT NULL,
    kwargs TEXT NOT NULL,
    multitask_strategy TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    not_before INTEGER NOT NULL,              -- epoch ms; after_seconds makes it later than created_at
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX runs_thread_status ON runs (thread_id, status);
  CREATE INDEX runs_pending_due ON runs (not_before, seq) WHERE status = 'pending';
  CREATE INDEX runs_running ON runs (thread_id) WHERE status = 'running';
  CREATE INDEX runs_assistant ON runs (assistant_id);
  `,
  // 2: the sandbox area (src/storage/sqlite/sandboxes.ts): organizations' usage billing (sandbox storage
  // quota), volumes, templates and their volume mounts. Names are unique per organization.
  `
  CREATE TABLE org_usage_billing (
    org_id TEXT PRIMARY KEY,
    sandbox_storage_quota_bytes INTEGER NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE TABLE sandbox_volumes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,          -- creation order = list order
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    name TEXT NOT NULL,
    size TEXT NOT NULL,                             -- as the client wrote it
    size_bytes INTEGER NOT NULL,                    -- what comparisons and the quota use
    storage_class TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (org_id, name)
  );
  CREATE INDEX sandbox_volumes_org ON sandbox_volumes (org_id, seq);
  CREATE TABLE sandbox_templates (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    name TEXT NOT NULL,
    image TEXT NOT NULL,
    cpu TEXT NOT NULL,
    memory TEXT NOT NULL,
    storage TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (org_id, name)
  );
  CREATE INDEX sandbox_templates_org ON sandbox_templates (org_id, seq);
  CREATE TABLE sandbox_template_mounts (
    template_id TEXT NOT NULL REFERENCES sandbox_templates (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    volume_id TEXT NOT NULL REFERENCES sandbox_volumes (id),  -- no cascade: a mounted volume stays
    mount_path TEXT NOT NULL,
    PRIMARY KEY (template_id, position)
  );
  CREATE INDEX sandbox_template_mounts_volume ON sandbox_template_mounts (volume_id);
  `,
  // 3: API keys (only a SHA-256 hash of each key is stored).
  `
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
  );
  CREATE INDEX api_keys_org ON api_keys (org_id);
  `,
  // 4: crons (src/storage/sqlite/crons.ts) and the long-term memory store (src/storage/sqlite/store.ts).
  `
  CREATE TABLE crons (
    cron_id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    assistant_id TEXT NOT NULL REFERENCES assistants (assistant_id) ON DELETE CASCADE,
    thread_id TEXT REFERENCES threads (thread_id) ON DELETE CASCADE,  -- NULL: stateless cron
    user_id TEXT,
    schedule TEXT NOT NULL,
    timezone TEXT,
    end_time TEXT,
    enabled INTEGER NOT NULL,
    on_run_completed TEXT,
    payload TEXT NOT NULL,
    metadata TEXT NOT NULL,
    next_run_at INTEGER,                      -- epoch ms of the next firing; NULL = none (disabled, ended)
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX crons_due ON crons (next_run_at) WHERE next_run_at IS NOT NULL;
  CREATE INDEX crons_org_created ON crons (org_id, created_at);
  CREATE INDEX crons_thread ON crons (thread_id);
  CREATE INDEX crons_assistant ON crons (assistant_id);
  CREATE TABLE store_items (
    org_id TEXT NOT NULL,
    namespace TEXT NOT NULL,                  -- labels joined with '.', which no label contains
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ttl_minutes REAL,                         -- NULL = never expires
    expires_at INTEGER,                       -- epoch ms; reads treat the item as gone from then on
    PRIMARY KEY (org_id, namespace, key)
  );
  CREATE INDEX store_items_expiry ON store_items (expires_at) WHERE expires_at IS NOT NULL;
  CREATE TABLE store_vectors (
    org_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    field TEXT NOT NULL,                      -- which text of the item: a field path, '.N' for the Nth of several
    embedding BLOB NOT NULL,                  -- float32, little-endian
    PRIMARY KEY (org_id, namespace, key, field),
    FOREIGN KEY (org_id, namespace, key) REFERENCES store_items (org_id, namespace, key) ON DELETE CASCADE
  );
  `,
  // 5: run leases (the worker executing a run and until when it holds it) and recorded stop requests.
  `
  ALTER TABLE runs ADD COLUMN worker_id TEXT;
  ALTER TABLE runs ADD COLUMN lease_expires_at INTEGER;
  ALTER TABLE runs ADD COLUMN stop_requested TEXT;
  CREATE INDEX runs_running_lease ON runs (lease_expires_at) WHERE status = 'running';
  `,
  // 6: running sandboxes ("boxes") and pools of warm ones (src/storage/sqlite/sandbox-boxes.ts). Both
  // point at their template by id (renames are followed; an in-use template cannot be deleted).
  `
  CREATE TABLE sandbox_pools (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    name TEXT NOT NULL,
    template_id TEXT NOT NULL REFERENCES sandbox_templates (id),
    replicas INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (org_id, name)
  );
  CREATE INDEX sandbox_pools_template ON sandbox_pools (template_id);
  CREATE TABLE sandbox_boxes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,          -- creation order = list order
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    name TEXT NOT NULL,
    template_id TEXT NOT NULL REFERENCES sandbox_templates (id),
    pool_id TEXT REFERENCES sandbox_pools (id) ON DELETE SET NULL,  -- set while a warm pool member
    status TEXT NOT NULL,
    status_message TEXT,
    ttl_seconds INTEGER NOT NULL,
    idle_ttl_seconds INTEGER NOT NULL,
    expires_at TEXT,
    last_active_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (org_id, name)
  );
  CREATE INDEX sandbox_boxes_org ON sandbox_boxes (org_id, seq);
  CREATE INDEX sandbox_boxes_template ON sandbox_boxes (template_id);
  CREATE INDEX sandbox_boxes_pool ON sandbox_boxes (pool_id);
  `,
  // 7: thread TTLs (langgraph.json checkpointer.ttl, a thread's own ttl): minutes after updated_at, the
  // strategy, and the updated_at a keep_latest sweep last pruned at (so it prunes once per update).
  `
  ALTER TABLE threads ADD COLUMN ttl_minutes REAL;
  ALTER TABLE threads ADD COLUMN ttl_strategy TEXT;
  ALTER TABLE threads ADD COLUMN ttl_swept_at TEXT;
  CREATE INDEX threads_ttl ON threads (updated_at) WHERE ttl_minutes IS NOT NULL;
  `,
];

export function openDatabase(dataDir: string, synchronous: "normal" | "full"): Db {
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(path.join(dataDir, "hangar.sqlite"));
  // WAL: readers never block the writer. synchronous=NORMAL keeps every committed transaction across a
  // process crash (kill -9, OOM); FULL also across power loss, at one fsync per commit.
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}`);
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  beginImmediate(db);
  migrate(db);
  return db;
}

/**
 * Makes every transaction of this connection begin IMMEDIATE (nested ones stay savepoints). Several
 * connections write to the file (the executor threads, `hangar keys` while the server runs): a deferred
 * transaction that reads and then writes fails at once with SQLITE_BUSY when another connection
 * committed in between, whereas one that takes the write lock first waits for it (busy_timeout) and
 * then reads the latest data, so each check-then-write stays atomic across connections.
 */
function beginImmediate(db: Db): void {
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: (...args: any[]) => unknown) => transaction(fn).immediate) as Db["transaction"];
}

function migrate(db: Db): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}

/**
 * Statements are prepared once per SQL text and connection, and reused: preparing costs more than
 * running most of these queries, and several run on every run's hot path. Search queries build their
 * SQL from the filter's shape, so the cache is bounded.
 */
const statements = new WeakMap<Db, Map<string, Database.Statement<any[], any>>>();
const MAX_CACHED_STATEMENTS = 1000;

export function prepared<P extends unknown[] = any[], R = any>(
  db: Db,
  sql: string,
): Database.Statement<P, R> {
  let cache = statements.get(db);
  if (!cache) {
    cache = new Map();
    statements.set(db, cache);
  }
  let stmt = cache.get(sql);
  if (!stmt) {
    if (cache.size >= MAX_CACHED_STATEMENTS) cache.clear();
    stmt = db.prepare(sql);
    cache.set(sql, stmt);
  }
  return stmt as unknown as Database.Statement<P, R>;
}

export function statementCache(db: Db): (sql: string) => Database.Statement<any[], any> {
  return (sql) => prepared(db, sql);
}
