import pg from "pg";

/**
 * The Postgres connection: a pool whose connections use the adapter's schema (`search_path`), a
 * `tx(fn)` helper that scopes a transaction to a callback, and the versioned migrations.
 *
 * Differences from the SQLite adapter's tables, on purpose:
 * - JSON columns are `jsonb`, so metadata filters are `@>` containment (GIN-indexable). jsonb does not
 *   keep object key order; no API promises it.
 * - Timestamps stay ISO-8601 text, exactly as SQLite stores and returns them (millisecond precision,
 *   `Z`), so both adapters answer byte-identical timestamps and compare them the same way.
 * - Identifier and ordering columns are `COLLATE "C"`: byte order, like SQLite's BINARY collation,
 *   whatever the database's locale.
 */

/** What repositories need of a connection or a pool: one query at a time. */
export interface Queryable {
  query<R extends pg.QueryResultRow = any>(text: string, params?: unknown[]): Promise<pg.QueryResult<R>>;
}

export class PgDatabase {
  readonly pool: pg.Pool;
  readonly schema: string;

  constructor(pool: pg.Pool, schema: string) {
    this.pool = pool;
    this.schema = schema;
  }

  query<R extends pg.QueryResultRow = any>(text: string, params?: unknown[]): Promise<pg.QueryResult<R>> {
    return this.pool.query<R>(text, params);
  }

  /** Runs `fn` in one transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws. */
  /**
   * Runs `fn` in a transaction. One that Postgres aborted as a deadlock victim (or a serialization
   * failure) is run again, a few times, after a short random pause: the other transaction has gone on.
   */
  async tx<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect();
      try {
        await client.query("BEGIN");
        const result = await fn(client);
        await client.query("COMMIT");
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => {});
        if (!RETRYABLE.has((err as { code?: string }).code ?? "") || attempt >= 4) throw err;
      } finally {
        client.release();
      }
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * attempt));
    }
  }
}

/** deadlock_detected, serialization_failure: the transaction may simply be run again. */
const RETRYABLE = new Set(["40P01", "40001"]);

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** bigint (int8) columns hold epoch ms, counts and sequence numbers: all safe JavaScript numbers. */
const types = {
  getTypeParser(oid: number, format?: string) {
    if (oid === pg.types.builtins.INT8) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as "text");
  },
};

function createPool(opts: { uri: string; schema?: string; max?: number }): { pool: pg.Pool; schema: string } {
  const schema = opts.schema ?? "public";
  if (!SCHEMA_NAME.test(schema)) throw new Error(`Invalid Postgres schema name: ${JSON.stringify(schema)}`);
  const pool = new pg.Pool({
    connectionString: opts.uri,
    max: opts.max ?? 10,
    options: `-c search_path=${schema}`,
    types,
  });
  // An idle connection dropped by the server must not crash the process; the pool replaces it.
  pool.on("error", () => {});
  return { pool, schema };
}

/** `hangar migrate`: applies what is missing and reports it. */
export async function runMigrations(opts: {
  uri: string;
  schema?: string;
}): Promise<{ applied: number[]; version: number }> {
  const { pool, schema } = createPool({ ...opts, max: 1 });
  try {
    const { applied } = await migrate(pool, schema);
    return { applied, version: MIGRATIONS.length };
  } finally {
    await pool.end();
  }
}

export async function openDatabase(opts: {
  uri: string;
  schema?: string;
  max?: number;
}): Promise<PgDatabase> {
  const { pool, schema } = createPool(opts);
  try {
    await migrate(pool, schema);
  } catch (err) {
    await pool.end();
    throw err;
  }
  return new PgDatabase(pool, schema);
}

/**
 * Applies the migrations the database lacks, each in its own transaction, recorded in
 * `hangar_migrations`. A session advisory lock (keyed by the schema) makes processes that start at
 * once migrate one after the other: the first applies, the others find nothing left to do. A database
 * migrated by a newer Hangar is refused rather than used with a schema this code does not know.
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<{ applied: number[] }> {
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    await client.query("SELECT pg_advisory_lock(726854, hashtext($1))", [schema]);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${schema}.hangar_migrations (
           version INTEGER PRIMARY KEY,
           applied_at TEXT NOT NULL
         )`,
      );
      const { rows } = await client.query<{ v: number | null }>(
        `SELECT MAX(version) AS v FROM ${schema}.hangar_migrations`,
      );
      const current = rows[0].v ?? 0;
      if (current > MIGRATIONS.length) {
        throw new Error(
          `Postgres schema "${schema}" is at migration ${current}, newer than this Hangar knows (${MIGRATIONS.length}); upgrade Hangar`,
        );
      }
      for (let v = current; v < MIGRATIONS.length; v++) {
        await client.query("BEGIN");
        try {
          await client.query(`SET LOCAL search_path TO ${schema}`);
          await client.query(MIGRATIONS[v]);
          await client.query("INSERT INTO hangar_migrations (version, applied_at) VALUES ($1, $2)", [
            v + 1,
            new Date().toISOString(),
          ]);
          await client.query("COMMIT");
        } catch (err) {
          await client.query("ROLLBACK").catch(() => {});
          throw err;
        }
        applied.push(v + 1);
      }
    } finally {
      await client.query("SELECT pg_advisory_unlock(726854, hashtext($1))", [schema]).catch(() => {});
    }
  } finally {
    client.release();
  }
  return { applied };
}

/** Versioned migrations, applied in order. Never edit a released one: append a new one. */
const MIGRATIONS: string[] = [
  // 1: assistants, threads, runs, checkpoints.
  `
  CREATE TABLE assistants (
    assistant_id TEXT COLLATE "C" PRIMARY KEY,
    org_id TEXT NOT NULL,           -- '' = system assistant, visible to every organization
    graph_id TEXT COLLATE "C" NOT NULL,
    version INTEGER NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    description TEXT,
    config JSONB NOT NULL,
    context JSONB NOT NULL,
    metadata JSONB NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    seq BIGSERIAL NOT NULL          -- insertion order, the tie-breaker SQLite's rowid is
  );
  CREATE INDEX assistants_org_created ON assistants (org_id, created_at);
  CREATE INDEX assistants_metadata ON assistants USING GIN (metadata jsonb_path_ops);
  CREATE TABLE assistant_versions (
    assistant_id TEXT COLLATE "C" NOT NULL REFERENCES assistants (assistant_id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    graph_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    config JSONB NOT NULL,
    context JSONB NOT NULL,
    metadata JSONB NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (assistant_id, version)
  );
  CREATE TABLE threads (
    thread_id TEXT COLLATE "C" PRIMARY KEY,
    org_id TEXT NOT NULL,
    status TEXT COLLATE "C" NOT NULL,
    metadata JSONB NOT NULL,
    config JSONB NOT NULL,
    "values" JSONB,
    has_values BOOLEAN GENERATED ALWAYS AS ("values" IS NOT NULL) STORED,
    interrupts JSONB NOT NULL,
    error JSONB,
    temporary BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    state_updated_at TEXT COLLATE "C" NOT NULL,
    seq BIGSERIAL NOT NULL
  );
  CREATE INDEX threads_org_created ON threads (org_id, created_at);
  CREATE INDEX threads_metadata ON threads USING GIN (metadata jsonb_path_ops);
  CREATE TABLE runs (
    seq BIGSERIAL PRIMARY KEY,                -- queue order among runs due at the same time
    run_id TEXT COLLATE "C" NOT NULL UNIQUE,
    thread_id TEXT COLLATE "C" NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    org_id TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    status TEXT NOT NULL,
    metadata JSONB NOT NULL,
    kwargs JSONB NOT NULL,
    multitask_strategy TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    not_before BIGINT NOT NULL,               -- epoch ms; after_seconds makes it later than created_at
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX runs_thread_status ON runs (thread_id, status);
  CREATE INDEX runs_pending_due ON runs (not_before, seq) WHERE status = 'pending';
  -- At most one executing run per thread, enforced by the database itself (see runs.ts claimNext).
  CREATE UNIQUE INDEX runs_one_running ON runs (thread_id) WHERE status = 'running';
  CREATE INDEX runs_assistant ON runs (assistant_id);
  CREATE TABLE checkpoints (
    thread_id TEXT COLLATE "C" NOT NULL,
    checkpoint_ns TEXT COLLATE "C" NOT NULL DEFAULT '',
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    parent_checkpoint_id TEXT,
    run_id TEXT,
    type TEXT,
    checkpoint BYTEA NOT NULL,
    metadata BYTEA NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
  );
  CREATE INDEX checkpoints_thread_run ON checkpoints (thread_id, run_id);
  CREATE TABLE checkpoint_writes (
    thread_id TEXT COLLATE "C" NOT NULL,
    checkpoint_ns TEXT COLLATE "C" NOT NULL DEFAULT '',
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT,
    value BYTEA,
    task_path TEXT COLLATE "C" NOT NULL DEFAULT '',
    run_id TEXT,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
  );
  CREATE INDEX checkpoint_writes_run ON checkpoint_writes (thread_id, run_id);
  `,
  // 2: the sandbox area, API keys.
  `
  CREATE TABLE org_usage_billing (
    org_id TEXT COLLATE "C" PRIMARY KEY,
    sandbox_storage_quota_bytes BIGINT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE TABLE sandbox_volumes (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    name TEXT NOT NULL,
    size TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    storage_class TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (org_id, name)
  );
  CREATE INDEX sandbox_volumes_org ON sandbox_volumes (org_id, seq);
  CREATE TABLE sandbox_templates (
    seq BIGSERIAL PRIMARY KEY,
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
    volume_id TEXT NOT NULL REFERENCES sandbox_volumes (id),
    mount_path TEXT NOT NULL,
    PRIMARY KEY (template_id, position)
  );
  CREATE INDEX sandbox_template_mounts_volume ON sandbox_template_mounts (volume_id);
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    org_id TEXT COLLATE "C" NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    revoked_at TEXT,
    seq BIGSERIAL NOT NULL
  );
  CREATE INDEX api_keys_org ON api_keys (org_id);
  `,
  // 3: crons and the long-term memory store.
  `
  CREATE TABLE crons (
    cron_id TEXT COLLATE "C" PRIMARY KEY,
    org_id TEXT NOT NULL,
    assistant_id TEXT COLLATE "C" NOT NULL REFERENCES assistants (assistant_id) ON DELETE CASCADE,
    thread_id TEXT COLLATE "C" REFERENCES threads (thread_id) ON DELETE CASCADE,
    user_id TEXT,
    schedule TEXT NOT NULL,
    timezone TEXT,
    end_time TEXT COLLATE "C",
    enabled BOOLEAN NOT NULL,
    on_run_completed TEXT,
    payload JSONB NOT NULL,
    metadata JSONB NOT NULL,
    next_run_at BIGINT,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    seq BIGSERIAL NOT NULL
  );
  CREATE INDEX crons_due ON crons (next_run_at) WHERE next_run_at IS NOT NULL;
  CREATE INDEX crons_org_created ON crons (org_id, created_at);
  CREATE INDEX crons_thread ON crons (thread_id);
  CREATE INDEX crons_assistant ON crons (assistant_id);
  CREATE TABLE store_items (
    org_id TEXT COLLATE "C" NOT NULL,
    namespace TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    value JSONB NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    ttl_minutes DOUBLE PRECISION,
    expires_at BIGINT,
    PRIMARY KEY (org_id, namespace, key)
  );
  CREATE INDEX store_items_expiry ON store_items (expires_at) WHERE expires_at IS NOT NULL;
  CREATE TABLE store_vectors (
    org_id TEXT COLLATE "C" NOT NULL,
    namespace TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    field TEXT NOT NULL,
    embedding REAL[] NOT NULL,
    PRIMARY KEY (org_id, namespace, key, field),
    FOREIGN KEY (org_id, namespace, key) REFERENCES store_items (org_id, namespace, key) ON DELETE CASCADE
  );
  -- Cosine similarity of two float32 vectors, computed in double precision like SQLite's hangar_cosine;
  -- NULL when the lengths differ or a vector is all zeros.
  CREATE FUNCTION hangar_cosine(a REAL[], b REAL[]) RETURNS DOUBLE PRECISION
  LANGUAGE sql IMMUTABLE AS $fn$
    SELECT CASE WHEN cardinality(a) IS DISTINCT FROM cardinality(b) THEN NULL ELSE (
      SELECT CASE WHEN SUM(x::float8 * x::float8) = 0 OR SUM(y::float8 * y::float8) = 0 THEN NULL
             ELSE SUM(x::float8 * y::float8) / SQRT(SUM(x::float8 * x::float8) * SUM(y::float8 * y::float8)) END
      FROM unnest(a, b) AS t(x, y)) END
  $fn$;
  `,
  // 4: run leases (the worker executing a run and until when it holds it) and recorded stop requests.
  `
  ALTER TABLE runs ADD COLUMN worker_id TEXT;
  ALTER TABLE runs ADD COLUMN lease_expires_at BIGINT;
  ALTER TABLE runs ADD COLUMN stop_requested TEXT;
  CREATE INDEX runs_running_lease ON runs (lease_expires_at) WHERE status = 'running';
  `,
  // 5: running sandboxes ("boxes") and pools of warm ones (postgres/sandbox-boxes.ts).
  `
  CREATE TABLE sandbox_pools (
    seq BIGSERIAL PRIMARY KEY,
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
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    org_id TEXT NOT NULL,
    name TEXT NOT NULL,
    template_id TEXT NOT NULL REFERENCES sandbox_templates (id),
    pool_id TEXT REFERENCES sandbox_pools (id) ON DELETE SET NULL,
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
  // 6: thread TTLs (langgraph.json checkpointer.ttl, a thread's own ttl): minutes after updated_at, the
  // strategy, and the updated_at a keep_latest sweep last pruned at (so it prunes once per update).
  `
  ALTER TABLE threads ADD COLUMN ttl_minutes DOUBLE PRECISION;
  ALTER TABLE threads ADD COLUMN ttl_strategy TEXT;
  ALTER TABLE threads ADD COLUMN ttl_swept_at TEXT COLLATE "C";
  CREATE INDEX threads_ttl ON threads (updated_at) WHERE ttl_minutes IS NOT NULL;
  `,
];

export const MIGRATION_COUNT = MIGRATIONS.length;
