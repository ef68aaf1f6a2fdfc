/**
 * The schema's versions, one list for both engines, applied in order by `migrate`: SQL written once,
 * with the column types that differ per engine from `COLUMN_TYPES`. Never edit a released migration:
 * append a new one. Deliberate differences between the engines' tables:
 * - Postgres' JSON columns are `jsonb` (metadata filters are `@>` containment, GIN-indexed); SQLite's
 *   are text. Both travel as text (tables.ts).
 * - Identifier and ordering columns are `COLLATE "C"` on Postgres: byte order, like SQLite's BINARY
 *   collation, whatever the database's locale.
 */
import type { Kysely } from "kysely";
import type { SqlDatabase } from "./database.js";
import type { Dialect } from "./dialect.js";
import { sql } from "./kysely.js";

/** The column types that differ per engine. */
const COLUMN_TYPES = {
  sqlite: {
    /** Identifiers and columns searches sort by. */
    id: "TEXT",
    json: "TEXT",
    bool: "INTEGER",
    /** A boolean column's false, as a default. */
    false: "0",
    bigint: "INTEGER",
    double: "REAL",
    bytes: "BLOB",
    vector: "BLOB",
    serialKey: "INTEGER PRIMARY KEY AUTOINCREMENT",
    /** Postgres' insertion-order column for tables without a `seq` key (`, seq bigserial`); none on SQLite. */
    seqColumn: "",
  },
  postgres: {
    id: 'TEXT COLLATE "C"',
    json: "JSONB",
    bool: "BOOLEAN",
    false: "FALSE",
    bigint: "BIGINT",
    double: "DOUBLE PRECISION",
    bytes: "BYTEA",
    vector: "REAL[]",
    serialKey: "BIGSERIAL PRIMARY KEY",
    seqColumn: ",\n    seq BIGSERIAL NOT NULL",
  },
} satisfies Record<Dialect["name"], Record<string, string>>;

type ColumnTypes = (typeof COLUMN_TYPES)["sqlite"];

interface HangarMigration {
  name: string;
  up(t: ColumnTypes, engine: Dialect["name"]): string[];
  /**
   * Runs before `up` in the same transaction; true when the database already has what `up` makes
   * (a database created before migrations were written once), so `up` is skipped.
   */
  adopt?(db: Kysely<any>, engine: Dialect["name"]): Promise<boolean>;
  /**
   * SQLite: `up` makes tables again and drops the old ones, so foreign keys are off while it runs
   * (SQLite's documented way; the pragma cannot change inside a transaction) and checked before commit.
   */
  rebuildsTables?: boolean;
}

/**
 * Databases created before this list existed were migrated by one list per engine: SQLite to
 * `user_version` 7, Postgres to version 6 of `hangar_migrations`. Both equal the baseline below.
 * Per engine: that final version, how to read the version a database is at (0: none), and what the
 * baseline removes of the old list's bookkeeping once it adopts the database.
 */
const LEGACY = {
  sqlite: {
    final: 7,
    async version(db: Kysely<any>): Promise<number> {
      const { rows } = await sql<{ user_version: number }>`PRAGMA user_version`.execute(db);
      return rows[0]?.user_version ?? 0;
    },
    async retire(): Promise<void> {},
  },
  postgres: {
    final: 6,
    async version(db: Kysely<any>): Promise<number> {
      const found = await sql<{ t: string | null }>`SELECT to_regclass('hangar_migrations') AS t`.execute(db);
      if (!found.rows[0]?.t) return 0;
      const max = await sql<{ v: number | null }>`SELECT MAX(version) AS v FROM hangar_migrations`.execute(
        db,
      );
      return max.rows[0]?.v ?? 0;
    },
    async retire(db: Kysely<any>): Promise<void> {
      await sql`DROP TABLE hangar_migrations`.execute(db);
    },
  },
} satisfies Record<Dialect["name"], unknown>;

async function adoptLegacy(db: Kysely<any>, engine: Dialect["name"]): Promise<boolean> {
  const legacy = LEGACY[engine];
  const version = await legacy.version(db);
  if (version === 0) return false;
  if (version !== legacy.final) {
    throw new Error(
      `This ${engine} database was made by a development build of Hangar (schema ${version}); open it once with Hangar 0.1.0 to bring it to schema ${legacy.final}`,
    );
  }
  await legacy.retire(db);
  return true;
}

export const MIGRATIONS: HangarMigration[] = [
  {
    name: "0001_baseline",
    adopt: adoptLegacy,
    up: (t, engine) => [
      `CREATE TABLE assistants (
        assistant_id ${t.id} PRIMARY KEY,
        org_id TEXT NOT NULL,           -- '' = system assistant, visible to every organization
        graph_id ${t.id} NOT NULL,
        version INTEGER NOT NULL,
        name ${t.id} NOT NULL,
        description TEXT,
        config ${t.json} NOT NULL,
        context ${t.json} NOT NULL,
        metadata ${t.json} NOT NULL,
        created_at ${t.id} NOT NULL,
        updated_at ${t.id} NOT NULL${t.seqColumn}
      )`,
      "CREATE INDEX assistants_org_created ON assistants (org_id, created_at)",
      `CREATE TABLE assistant_versions (
        assistant_id ${t.id} NOT NULL REFERENCES assistants (assistant_id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        graph_id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT,
        config ${t.json} NOT NULL,
        context ${t.json} NOT NULL,
        metadata ${t.json} NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (assistant_id, version)
      )`,
      `CREATE TABLE threads (
        thread_id ${t.id} PRIMARY KEY,
        org_id TEXT NOT NULL,
        status ${t.id} NOT NULL,
        metadata ${t.json} NOT NULL,
        config ${t.json} NOT NULL,
        "values" ${t.json},
        interrupts ${t.json} NOT NULL,
        error ${t.json},
        temporary ${t.bool} NOT NULL DEFAULT ${t.false},
        created_at ${t.id} NOT NULL,
        updated_at ${t.id} NOT NULL,
        state_updated_at ${t.id} NOT NULL,
        -- thread TTL: minutes after updated_at, the strategy, the updated_at a keep_latest sweep last
        -- pruned at (so it prunes once per update)
        ttl_minutes ${t.double},
        ttl_strategy TEXT,
        ttl_swept_at ${t.id}${t.seqColumn}
      )`,
      "CREATE INDEX threads_org_created ON threads (org_id, created_at)",
      `CREATE TABLE runs (
        seq ${t.serialKey},             -- queue order among runs due at the same time
        run_id ${t.id} NOT NULL UNIQUE,
        thread_id ${t.id} NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
        org_id TEXT NOT NULL,
        assistant_id TEXT NOT NULL,
        status TEXT NOT NULL,
        metadata ${t.json} NOT NULL,
        kwargs ${t.json} NOT NULL,
        multitask_strategy TEXT NOT NULL,
        attempt INTEGER NOT NULL DEFAULT 0,
        not_before ${t.bigint} NOT NULL, -- epoch ms; after_seconds makes it later than created_at
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        worker_id TEXT,                  -- the worker executing the run
        lease_expires_at ${t.bigint},    -- epoch ms until which that worker holds it
        stop_requested TEXT              -- a recorded stop request: interrupt | rollback
      )`,
      "CREATE INDEX runs_thread_status ON runs (thread_id, status)",
      "CREATE INDEX runs_pending_due ON runs (not_before, seq) WHERE status = 'pending'",
      "CREATE INDEX runs_assistant ON runs (assistant_id)",
      "CREATE INDEX runs_running_lease ON runs (lease_expires_at) WHERE status = 'running'",
      // At most one executing run per thread, enforced by the database itself.
      "CREATE UNIQUE INDEX runs_one_running ON runs (thread_id) WHERE status = 'running'",
      `CREATE TABLE checkpoints (
        thread_id ${t.id} NOT NULL,
        checkpoint_ns ${t.id} NOT NULL DEFAULT '',
        checkpoint_id ${t.id} NOT NULL,
        parent_checkpoint_id TEXT,
        run_id TEXT,                     -- copied from the metadata, so one run's checkpoints can go
        type TEXT,
        checkpoint ${t.bytes} NOT NULL,
        metadata ${t.bytes} NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
      )`,
      "CREATE INDEX checkpoints_thread_run ON checkpoints (thread_id, run_id)",
      `CREATE TABLE checkpoint_writes (
        thread_id ${t.id} NOT NULL,
        checkpoint_ns ${t.id} NOT NULL DEFAULT '',
        checkpoint_id ${t.id} NOT NULL,
        task_id ${t.id} NOT NULL,
        idx INTEGER NOT NULL,
        channel TEXT NOT NULL,
        type TEXT,
        value ${t.bytes},
        task_path ${t.id} NOT NULL DEFAULT '',
        run_id TEXT,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
      )`,
      // The sandbox area: organizations' sandbox storage quota, volumes, templates and their mounts.
      `CREATE TABLE org_usage_billing (
        org_id ${t.id} PRIMARY KEY,
        sandbox_storage_quota_bytes ${t.bigint} NOT NULL,
        updated_at TEXT NOT NULL
      )`,
      `CREATE TABLE sandbox_volumes (
        seq ${t.serialKey},              -- creation order = list order
        id TEXT NOT NULL UNIQUE,
        org_id TEXT NOT NULL,
        name TEXT NOT NULL,
        size TEXT NOT NULL,              -- as the client wrote it
        size_bytes ${t.bigint} NOT NULL, -- what comparisons and the quota use
        storage_class TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (org_id, name)
      )`,
      "CREATE INDEX sandbox_volumes_org ON sandbox_volumes (org_id, seq)",
      `CREATE TABLE sandbox_templates (
        seq ${t.serialKey},
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
      )`,
      "CREATE INDEX sandbox_templates_org ON sandbox_templates (org_id, seq)",
      `CREATE TABLE sandbox_template_mounts (
        template_id TEXT NOT NULL REFERENCES sandbox_templates (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        volume_id TEXT NOT NULL REFERENCES sandbox_volumes (id),  -- no cascade: a mounted volume stays
        mount_path TEXT NOT NULL,
        PRIMARY KEY (template_id, position)
      )`,
      "CREATE INDEX sandbox_template_mounts_volume ON sandbox_template_mounts (volume_id)",
      // API keys: only a SHA-256 hash of each key is stored.
      `CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        org_id ${t.id} NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,
        created_at ${t.id} NOT NULL,
        revoked_at TEXT${t.seqColumn}
      )`,
      "CREATE INDEX api_keys_org ON api_keys (org_id)",
      `CREATE TABLE crons (
        cron_id ${t.id} PRIMARY KEY,
        org_id TEXT NOT NULL,
        assistant_id ${t.id} NOT NULL REFERENCES assistants (assistant_id) ON DELETE CASCADE,
        thread_id ${t.id} REFERENCES threads (thread_id) ON DELETE CASCADE,  -- NULL: stateless cron
        user_id TEXT,
        schedule TEXT NOT NULL,
        timezone TEXT,
        end_time ${t.id},
        enabled ${t.bool} NOT NULL,
        on_run_completed TEXT,
        payload ${t.json} NOT NULL,
        metadata ${t.json} NOT NULL,
        next_run_at ${t.bigint},         -- epoch ms of the next firing; NULL = none (disabled, ended)
        created_at ${t.id} NOT NULL,
        updated_at ${t.id} NOT NULL${t.seqColumn}
      )`,
      "CREATE INDEX crons_due ON crons (next_run_at) WHERE next_run_at IS NOT NULL",
      "CREATE INDEX crons_org_created ON crons (org_id, created_at)",
      "CREATE INDEX crons_thread ON crons (thread_id)",
      "CREATE INDEX crons_assistant ON crons (assistant_id)",
      // The long-term memory store.
      `CREATE TABLE store_items (
        org_id ${t.id} NOT NULL,
        namespace ${t.id} NOT NULL,      -- labels joined with '.', which no label contains
        key ${t.id} NOT NULL,
        value ${t.json} NOT NULL,
        created_at TEXT NOT NULL,
        updated_at ${t.id} NOT NULL,
        ttl_minutes ${t.double},         -- NULL = never expires
        expires_at ${t.bigint},          -- epoch ms; reads treat the item as gone from then on
        PRIMARY KEY (org_id, namespace, key)
      )`,
      "CREATE INDEX store_items_expiry ON store_items (expires_at) WHERE expires_at IS NOT NULL",
      `CREATE TABLE store_vectors (
        org_id ${t.id} NOT NULL,
        namespace ${t.id} NOT NULL,
        key ${t.id} NOT NULL,
        field TEXT NOT NULL,             -- which text of the item: a field path, '.N' for the Nth of several
        embedding ${t.vector} NOT NULL,  -- float32 (dialect.vector)
        PRIMARY KEY (org_id, namespace, key, field),
        FOREIGN KEY (org_id, namespace, key) REFERENCES store_items (org_id, namespace, key) ON DELETE CASCADE
      )`,
      // Running sandboxes ("boxes") and pools of warm ones, pointing at their template by id.
      `CREATE TABLE sandbox_pools (
        seq ${t.serialKey},
        id TEXT NOT NULL UNIQUE,
        org_id TEXT NOT NULL,
        name TEXT NOT NULL,
        template_id TEXT NOT NULL REFERENCES sandbox_templates (id),
        replicas INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (org_id, name)
      )`,
      "CREATE INDEX sandbox_pools_template ON sandbox_pools (template_id)",
      `CREATE TABLE sandbox_boxes (
        seq ${t.serialKey},              -- creation order = list order
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
      )`,
      "CREATE INDEX sandbox_boxes_org ON sandbox_boxes (org_id, seq)",
      "CREATE INDEX sandbox_boxes_template ON sandbox_boxes (template_id)",
      "CREATE INDEX sandbox_boxes_pool ON sandbox_boxes (pool_id)",
      "CREATE INDEX threads_ttl ON threads (updated_at) WHERE ttl_minutes IS NOT NULL",
      ...ENGINE_ONLY[engine],
    ],
  },
  {
    // Where the two legacy schemas differed, the baseline's choice: SQLite's running runs become unique
    // per thread (as on Postgres); Postgres' index of writes by run goes (as on SQLite: a run's writes
    // are found within its thread's primary-key range, and the index cost every putWrites a write).
    name: "0002_align_legacy_schemas",
    up: () => [
      "DROP INDEX IF EXISTS runs_running",
      "CREATE UNIQUE INDEX IF NOT EXISTS runs_one_running ON runs (thread_id) WHERE status = 'running'",
      "DROP INDEX IF EXISTS checkpoint_writes_run",
    ],
  },
  {
    // How a failed run failed, with its stack trace (the thread keeps the type and message only).
    name: "0003_run_errors",
    up: (t) => [`ALTER TABLE runs ADD COLUMN error ${t.json}`],
  },
  {
    // What custom auth handlers stamp on the sandbox area's records (their owner), as on threads.
    name: "0004_sandbox_metadata",
    up: (t) =>
      ["sandbox_volumes", "sandbox_templates", "sandbox_pools", "sandbox_boxes"].map(
        (table) => `ALTER TABLE ${table} ADD COLUMN metadata ${t.json} NOT NULL DEFAULT '{}'`,
      ),
  },
  {
    // Protocol-v2 thread events (thread-events.ts). Keyed by organization too, with no foreign key to
    // threads: they go with their thread in deleteThreads.
    name: "0005_thread_events",
    up: (t) => [
      `CREATE TABLE thread_event_heads (
        org_id ${t.id} NOT NULL,
        thread_id ${t.id} NOT NULL,
        last_seq ${t.bigint} NOT NULL,
        first_seq ${t.bigint} NOT NULL,
        bytes ${t.bigint} NOT NULL,
        PRIMARY KEY (org_id, thread_id)
      )`,
      `CREATE TABLE thread_events (
        org_id ${t.id} NOT NULL,
        thread_id ${t.id} NOT NULL,
        seq ${t.bigint} NOT NULL,
        bytes INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (org_id, thread_id, seq)
      )`,
    ],
  },
  {
    // Client-chosen ids (threads, assistants) are unique per organization, not across them: another
    // organization's thread or assistant id must answer as a fresh one (not 409), and two organizations
    // may each have a thread of the same id. Keys become (org_id, id), and what hangs off a thread or an
    // assistant (runs, crons, checkpoints, pending writes, versions) carries its organization. Run and cron
    // ids stay globally unique: the server makes them. Checkpoints of a thread that no longer exists
    // (unreachable: every read goes through the thread) are not carried.
    name: "0006_org_scoped_ids",
    rebuildsTables: true,
    up: (t, engine) => ORG_SCOPED_IDS[engine](t),
  },
];

/** The indexes 0006_org_scoped_ids leaves on the tables it changes (the same on both engines). */
const ORG_SCOPED_INDEXES = [
  "CREATE INDEX assistants_org_created ON assistants (org_id, created_at)",
  "CREATE INDEX threads_org_created ON threads (org_id, created_at)",
  "CREATE INDEX threads_ttl ON threads (updated_at) WHERE ttl_minutes IS NOT NULL",
  "CREATE INDEX runs_thread_status ON runs (org_id, thread_id, status)",
  "CREATE INDEX runs_pending_due ON runs (not_before, seq) WHERE status = 'pending'",
  "CREATE INDEX runs_assistant ON runs (assistant_id)",
  "CREATE INDEX runs_running_lease ON runs (lease_expires_at) WHERE status = 'running'",
  // At most one executing run per thread, enforced by the database itself.
  "CREATE UNIQUE INDEX runs_one_running ON runs (org_id, thread_id) WHERE status = 'running'",
  "CREATE INDEX checkpoints_thread_run ON checkpoints (org_id, thread_id, run_id)",
  "CREATE INDEX crons_due ON crons (next_run_at) WHERE next_run_at IS NOT NULL",
  "CREATE INDEX crons_org_created ON crons (org_id, created_at)",
  "CREATE INDEX crons_thread ON crons (org_id, thread_id)",
  "CREATE INDEX crons_assistant ON crons (assistant_id)",
];

/**
 * 0006_org_scoped_ids per engine. SQLite cannot change a primary key: each table is made again under
 * a new name, filled, and put in the old one's place (foreign keys off meanwhile: `rebuildsTables`).
 * Postgres changes the keys in place. Crons no longer reference assistants: a cron may run a system
 * assistant (organization ''), so deleting an assistant deletes its crons itself.
 */
const ORG_SCOPED_IDS: Record<Dialect["name"], (t: ColumnTypes) => string[]> = {
  sqlite: (t) => {
    // Columns named, never `*`: a database adopted from the legacy schema may order them otherwise.
    const rebuild = (table: string, ddl: string, from: string, columns: string[], select = columns) => [
      `CREATE TABLE ${table}_0006 (${ddl})`,
      `INSERT INTO ${table}_0006 (${columns.join(", ")}) SELECT ${select.join(", ")} FROM ${from}`,
      `DROP TABLE ${table}`,
      `ALTER TABLE ${table}_0006 RENAME TO ${table}`,
    ];
    const columnsOf = (ddl: string) =>
      ddl
        .split("\n")
        .map((line) => line.trim().split(" ")[0]!)
        .filter((name) => /^("?)[a-z_]+\1$/.test(name) && !["PRIMARY", "FOREIGN"].includes(name));
    const copy = (table: string, ddl: string, order = "rowid") =>
      rebuild(table, ddl, `${table} ORDER BY ${order}`, columnsOf(ddl));
    /** A table gaining its thread's (or assistant's) organization, `parent` joined as p on `on`. */
    const withOrg = (table: string, ddl: string, parent: string, on: string) => {
      const columns = columnsOf(ddl);
      const select = columns.map((c) => (c === "org_id" ? "p.org_id" : `x.${c}`));
      return rebuild(table, ddl, `${table} x JOIN ${parent} p ON ${on} ORDER BY x.rowid`, columns, select);
    };
    return [
      ...copy(
        "assistants",
        `assistant_id ${t.id} NOT NULL,
        org_id TEXT NOT NULL,           -- '' = system assistant, visible to every organization
        graph_id ${t.id} NOT NULL,
        version INTEGER NOT NULL,
        name ${t.id} NOT NULL,
        description TEXT,
        config ${t.json} NOT NULL,
        context ${t.json} NOT NULL,
        metadata ${t.json} NOT NULL,
        created_at ${t.id} NOT NULL,
        updated_at ${t.id} NOT NULL,
        PRIMARY KEY (org_id, assistant_id)`,
      ),
      ...withOrg(
        "assistant_versions",
        `org_id TEXT NOT NULL,
        assistant_id ${t.id} NOT NULL,
        version INTEGER NOT NULL,
        graph_id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT,
        config ${t.json} NOT NULL,
        context ${t.json} NOT NULL,
        metadata ${t.json} NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (org_id, assistant_id, version),
        FOREIGN KEY (org_id, assistant_id) REFERENCES assistants (org_id, assistant_id) ON DELETE CASCADE`,
        "assistants",
        "p.assistant_id = x.assistant_id",
      ),
      ...copy(
        "threads",
        `thread_id ${t.id} NOT NULL,
        org_id TEXT NOT NULL,
        status ${t.id} NOT NULL,
        metadata ${t.json} NOT NULL,
        config ${t.json} NOT NULL,
        "values" ${t.json},
        interrupts ${t.json} NOT NULL,
        error ${t.json},
        temporary ${t.bool} NOT NULL DEFAULT ${t.false},
        created_at ${t.id} NOT NULL,
        updated_at ${t.id} NOT NULL,
        state_updated_at ${t.id} NOT NULL,
        ttl_minutes ${t.double},
        ttl_strategy TEXT,
        ttl_swept_at ${t.id},
        PRIMARY KEY (org_id, thread_id)`,
      ),
      ...copy(
        "runs",
        `seq ${t.serialKey},
        run_id ${t.id} NOT NULL UNIQUE,
        thread_id ${t.id} NOT NULL,
        org_id TEXT NOT NULL,
        assistant_id TEXT NOT NULL,
        status TEXT NOT NULL,
        metadata ${t.json} NOT NULL,
        kwargs ${t.json} NOT NULL,
        multitask_strategy TEXT NOT NULL,
        attempt INTEGER NOT NULL DEFAULT 0,
        not_before ${t.bigint} NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        worker_id TEXT,
        lease_expires_at ${t.bigint},
        stop_requested TEXT,
        error ${t.json},
        FOREIGN KEY (org_id, thread_id) REFERENCES threads (org_id, thread_id) ON DELETE CASCADE`,
        "seq",
      ),
      ...withOrg(
        "checkpoints",
        `org_id TEXT NOT NULL,
        thread_id ${t.id} NOT NULL,
        checkpoint_ns ${t.id} NOT NULL DEFAULT '',
        checkpoint_id ${t.id} NOT NULL,
        parent_checkpoint_id TEXT,
        run_id TEXT,
        type TEXT,
        checkpoint ${t.bytes} NOT NULL,
        metadata ${t.bytes} NOT NULL,
        PRIMARY KEY (org_id, thread_id, checkpoint_ns, checkpoint_id)`,
        "threads",
        "p.thread_id = x.thread_id",
      ),
      ...withOrg(
        "checkpoint_writes",
        `org_id TEXT NOT NULL,
        thread_id ${t.id} NOT NULL,
        checkpoint_ns ${t.id} NOT NULL DEFAULT '',
        checkpoint_id ${t.id} NOT NULL,
        task_id ${t.id} NOT NULL,
        idx INTEGER NOT NULL,
        channel TEXT NOT NULL,
        type TEXT,
        value ${t.bytes},
        task_path ${t.id} NOT NULL DEFAULT '',
        run_id TEXT,
        PRIMARY KEY (org_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)`,
        "threads",
        "p.thread_id = x.thread_id",
      ),
      ...copy(
        "crons",
        `cron_id ${t.id} PRIMARY KEY,
        org_id TEXT NOT NULL,
        assistant_id ${t.id} NOT NULL,
        thread_id ${t.id},               -- NULL: stateless cron
        user_id TEXT,
        schedule TEXT NOT NULL,
        timezone TEXT,
        end_time ${t.id},
        enabled ${t.bool} NOT NULL,
        on_run_completed TEXT,
        payload ${t.json} NOT NULL,
        metadata ${t.json} NOT NULL,
        next_run_at ${t.bigint},
        created_at ${t.id} NOT NULL,
        updated_at ${t.id} NOT NULL,
        FOREIGN KEY (org_id, thread_id) REFERENCES threads (org_id, thread_id) ON DELETE CASCADE`,
      ),
      ...ORG_SCOPED_INDEXES,
    ];
  },
  postgres: () => {
    // Constraint names as the database has them (a legacy-adopted database may name them otherwise).
    const dropConstraints = (where: string) => `DO $do$ DECLARE c record; BEGIN
      FOR c IN SELECT conrelid::regclass AS tbl, conname FROM pg_constraint WHERE ${where} LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.tbl, c.conname);
      END LOOP;
    END $do$`;
    const addOrg = (table: string, from: string, join: string) => [
      `ALTER TABLE ${table} ADD COLUMN org_id TEXT NOT NULL DEFAULT ''`,
      `UPDATE ${table} x SET org_id = p.org_id FROM ${from} p WHERE ${join}`,
      `ALTER TABLE ${table} ALTER COLUMN org_id DROP DEFAULT`,
    ];
    const indexes = ORG_SCOPED_INDEXES.map((ddl) => ddl.split(" ON ")[0]!.split(" ").at(-1)!);
    return [
      dropConstraints("contype = 'f' AND confrelid IN ('threads'::regclass, 'assistants'::regclass)"),
      dropConstraints(
        "contype = 'p' AND conrelid IN ('threads'::regclass, 'assistants'::regclass, 'assistant_versions'::regclass, 'checkpoints'::regclass, 'checkpoint_writes'::regclass)",
      ),
      ...indexes.map((name) => `DROP INDEX IF EXISTS ${name}`),
      ...addOrg("assistant_versions", "assistants", "p.assistant_id = x.assistant_id"),
      ...addOrg("checkpoints", "threads", "p.thread_id = x.thread_id"),
      ...addOrg("checkpoint_writes", "threads", "p.thread_id = x.thread_id"),
      "DELETE FROM checkpoints c WHERE NOT EXISTS (SELECT 1 FROM threads t WHERE t.thread_id = c.thread_id)",
      "DELETE FROM checkpoint_writes c WHERE NOT EXISTS (SELECT 1 FROM threads t WHERE t.thread_id = c.thread_id)",
      "ALTER TABLE assistants ADD PRIMARY KEY (org_id, assistant_id)",
      "ALTER TABLE assistant_versions ADD PRIMARY KEY (org_id, assistant_id, version)",
      "ALTER TABLE threads ADD PRIMARY KEY (org_id, thread_id)",
      "ALTER TABLE checkpoints ADD PRIMARY KEY (org_id, thread_id, checkpoint_ns, checkpoint_id)",
      "ALTER TABLE checkpoint_writes ADD PRIMARY KEY (org_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)",
      "ALTER TABLE assistant_versions ADD FOREIGN KEY (org_id, assistant_id) REFERENCES assistants (org_id, assistant_id) ON DELETE CASCADE",
      "ALTER TABLE runs ADD FOREIGN KEY (org_id, thread_id) REFERENCES threads (org_id, thread_id) ON DELETE CASCADE",
      "ALTER TABLE crons ADD FOREIGN KEY (org_id, thread_id) REFERENCES threads (org_id, thread_id) ON DELETE CASCADE",
      ...ORG_SCOPED_INDEXES,
    ];
  },
};

/**
 * What only one engine's baseline has. Postgres: GIN indexes for `@>` filters, and the cosine function
 * SQLite registers in code.
 */
const ENGINE_ONLY: Record<Dialect["name"], string[]> = {
  sqlite: [],
  postgres: [
    "CREATE INDEX assistants_metadata ON assistants USING GIN (metadata jsonb_path_ops)",
    "CREATE INDEX threads_metadata ON threads USING GIN (metadata jsonb_path_ops)",
    `ALTER TABLE threads ADD COLUMN has_values BOOLEAN GENERATED ALWAYS AS ("values" IS NOT NULL) STORED`,
    // Cosine similarity of two float32 vectors in double precision, like SQLite's hangar_cosine; NULL
    // when the lengths differ or a vector is all zeros.
    `CREATE FUNCTION hangar_cosine(a REAL[], b REAL[]) RETURNS DOUBLE PRECISION
  LANGUAGE sql IMMUTABLE AS $fn$
    SELECT CASE WHEN cardinality(a) IS DISTINCT FROM cardinality(b) THEN NULL ELSE (
      SELECT CASE WHEN SUM(x::float8 * x::float8) = 0 OR SUM(y::float8 * y::float8) = 0 THEN NULL
             ELSE SUM(x::float8 * y::float8) / SQRT(SUM(x::float8 * x::float8) * SUM(y::float8 * y::float8)) END
      FROM unnest(a, b) AS t(x, y)) END
  $fn$`,
  ],
};

export const MIGRATION_TABLE = "hangar_migration";

/**
 * Applies what the database lacks, each migration in its own transaction with its record; returns the
 * names applied. Processes opening one database at once: on Postgres they take turns under an
 * advisory lock (`dialect.lockMigrations`); on SQLite each transaction begins IMMEDIATE and checks its
 * record first. (Kysely's Migrator was tried first: it looks for its table by introspecting every
 * schema of the database, which fails when another client drops a schema meanwhile.)
 */
export async function migrate(database: SqlDatabase, opts: { schema?: string } = {}): Promise<string[]> {
  const engine = database.dialect.name;
  const applied: string[] = [];
  await (database.db as unknown as Kysely<any>).connection().execute(async (db) => {
    await database.dialect.lockMigrations(db, opts.schema ?? "public", async () => {
      await sql`CREATE TABLE IF NOT EXISTS ${sql.table(MIGRATION_TABLE)} (
        name TEXT PRIMARY KEY,
        applied_at TEXT NOT NULL
      )`.execute(db);
      await refuseNewerSchema(db);
      for (const m of MIGRATIONS) {
        const keysOff = m.rebuildsTables && engine === "sqlite";
        if (keysOff) await sql`PRAGMA foreign_keys = OFF`.execute(db);
        try {
          await db.transaction().execute(async (tx) => {
            const done = await tx
              .selectFrom(MIGRATION_TABLE)
              .select("name")
              .where("name", "=", m.name)
              .executeTakeFirst();
            if (done) return;
            if (!(m.adopt && (await m.adopt(tx, engine)))) {
              for (const statement of m.up(COLUMN_TYPES[engine], engine))
                await sql.raw(statement).execute(tx);
            }
            await tx
              .insertInto(MIGRATION_TABLE)
              .values({ name: m.name, applied_at: new Date().toISOString() })
              .execute();
            if (keysOff) {
              const broken = await sql`PRAGMA foreign_key_check`.execute(tx);
              if (broken.rows.length)
                throw new Error(
                  `${m.name} left rows whose foreign keys point nowhere: ${JSON.stringify(broken.rows[0])}`,
                );
            }
            applied.push(m.name);
          });
        } finally {
          if (keysOff) await sql`PRAGMA foreign_keys = ON`.execute(db);
        }
      }
    });
  });
  return applied;
}

/** Refuses a database migrated by a newer Hangar (it has migrations this code does not know). */
async function refuseNewerSchema(db: Kysely<any>): Promise<void> {
  const rows = await db.selectFrom(MIGRATION_TABLE).select("name").execute();
  const known = new Set(MIGRATIONS.map((m) => m.name));
  const unknown = rows.map((r): string => r.name).filter((name) => !known.has(name));
  if (unknown.length) {
    throw new Error(
      `The database's schema is newer than this Hangar: it has migration ${unknown.sort().at(-1)}, and this Hangar knows up to ${MIGRATIONS.at(-1)?.name}; upgrade Hangar`,
    );
  }
}
