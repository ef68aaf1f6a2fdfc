/**
 * The connection to either engine, behind one Kysely instance and one `transaction(fn)`.
 *
 * Execution model:
 * - SQLite (better-sqlite3, synchronous): one connection per thread, statements prepared once per SQL
 *   text and reused. Kysely's SQLite driver serialises callers on the connection with a mutex; every
 *   transaction begins IMMEDIATE (the write lock from the first statement, across the API's and the
 *   executor threads' connections to the file), so a check-then-write is atomic without row locks.
 *   A transaction's statements resolve at once (no I/O is awaited), so it holds the lock for one turn
 *   of the event loop: callbacks must not await anything but their own queries.
 * - Postgres (`pg` pool): a transaction is one pooled connection; row locks come from `dialect.lock`.
 *   One the server aborted as a deadlock victim or serialization failure is run again.
 *
 * Also the base of the repositories and the few query helpers they share.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import type {
  DatabaseConnection,
  Expression,
  ExpressionBuilder,
  SelectQueryBuilder,
  SqlBool,
  Transaction,
} from "kysely";
import pg from "pg";
import type { SandboxListQuery, SandboxPage } from "../sandbox-ports.js";
import { type Dialect, postgresDialect, sqliteDialect } from "./dialect.js";
import {
  CompiledQuery,
  Kysely,
  PostgresDialect,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  sql,
} from "./kysely.js";
import { migrate } from "./migrations.js";
import type { Tables } from "./tables.js";

/** A connection or a transaction: what repositories run queries on. */
export type Executor = Kysely<Tables>;
export type Tx = Transaction<Tables>;

export class SqlDatabase {
  readonly db: Kysely<Tables>;
  readonly dialect: Dialect;
  readonly #close: () => Promise<void>;
  /** The migrations applied when this connection opened the database (migrations.ts). */
  migrated: string[] = [];

  constructor(db: Kysely<Tables>, dialect: Dialect, close: () => Promise<void>) {
    this.db = db;
    this.dialect = dialect;
    this.#close = close;
  }

  /** Runs `fn` in one transaction: COMMIT when it resolves, ROLLBACK when it throws. */
  async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.transaction().execute(fn);
      } catch (err) {
        if (!RETRYABLE.has((err as { code?: string }).code ?? "") || attempt >= 4) throw err;
      }
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * attempt));
    }
  }

  close(): Promise<void> {
    return this.#close();
  }
}

/** What every repository holds: the database and its engine's dialect. */
export abstract class SqlRepo {
  protected readonly dialect: Dialect;
  constructor(protected readonly database: SqlDatabase) {
    this.dialect = database.dialect;
  }

  /** The write's result, or undefined when a unique constraint refused it (a concurrent write took the name). */
  protected async unlessDuplicate<T>(write: Promise<T>): Promise<T | undefined> {
    try {
      return await write;
    } catch (err) {
      if (this.dialect.isUniqueViolation(err)) return undefined;
      throw err;
    }
  }
}

/** `column` contains `text`, case-insensitively (LIKE with the text's wildcards escaped): one SQL for both. */
export function nameContains(column: string, text: string): Expression<SqlBool> {
  const pattern = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return sql<SqlBool>`lower(${sql.ref(column)}) LIKE lower(${pattern}) ESCAPE '\\'`;
}

/** Where the row (of the table `prefix` names, as `"b."`) is the organization's and is called `name`. */
export const orgNamed =
  (org: string, name: string, prefix = "") =>
  (eb: ExpressionBuilder<any, any>) =>
    eb.and([eb(`${prefix}org_id`, "=", org), eb(`${prefix}name`, "=", name)]);

/**
 * A page in creation order (`<alias>.seq`) of the rows whose name contains `q.name_contains`: one row
 * more than asked for tells whether there are more.
 */
export async function page<O>(
  qb: SelectQueryBuilder<Tables, any, O>,
  alias: string,
  q: SandboxListQuery,
): Promise<SandboxPage<O>> {
  const rows = await qb
    .$if(!!q.name_contains, (b) => b.where(nameContains(`${alias}.name`, q.name_contains!)))
    .orderBy(sql.ref(`${alias}.seq`))
    .limit(q.limit + 1)
    .offset(q.offset)
    .execute();
  return { items: rows.slice(0, q.limit), hasMore: rows.length > q.limit };
}

/** How many rows a filtered select finds. */
export async function countOf(qb: SelectQueryBuilder<Tables, any, object>): Promise<number> {
  const { n } = await qb.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  return Number(n);
}

/** Migrates a database just opened, closing it if that fails. */
async function migrated(database: SqlDatabase, schema?: string): Promise<SqlDatabase> {
  try {
    database.migrated = await migrate(database, { schema });
  } catch (err) {
    await database.db.destroy();
    throw err;
  }
  return database;
}

/** Postgres' deadlock_detected and serialization_failure: the transaction may simply be run again. */
const RETRYABLE = new Set(["40P01", "40001"]);

// ── SQLite ─────────────────────────────────────────────────────────────────────────────────────────

/** Every transaction begins IMMEDIATE (see above); nested ones are savepoints, as Kysely makes them. */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}

/** SQLite runs DDL in transactions: migrations apply whole or not at all. */
class TransactionalSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class HangarSqliteDialect extends SqliteDialect {
  readonly #database: ConstructorParameters<typeof SqliteDialect>[0]["database"];
  constructor(database: ConstructorParameters<typeof SqliteDialect>[0]["database"]) {
    super({ database });
    this.#database = database;
  }
  override createDriver() {
    return new ImmediateSqliteDriver({ database: this.#database });
  }
  override createAdapter() {
    return new TransactionalSqliteAdapter();
  }
}

/**
 * Statements are prepared once per SQL text and reused: preparing costs more than running most of
 * these queries, and several run on every run's hot path. Searches build their SQL from the filter's
 * shape, so the cache is bounded.
 */
function withStatementCache(raw: Database.Database) {
  const cache = new Map<string, Database.Statement>();
  return {
    close: () => raw.close(),
    prepare(sqlText: string) {
      let stmt = cache.get(sqlText);
      if (!stmt) {
        if (cache.size >= 1000) cache.clear();
        stmt = raw.prepare(sqlText);
        cache.set(sqlText, stmt);
      }
      return stmt;
    },
  };
}

/** Cosine similarity of two float32 blobs, in double precision; NULL for mismatched or zero vectors. */
function cosineOfBlobs(a: Buffer | null, b: Buffer | null): number | null {
  if (!a || !b || a.byteLength !== b.byteLength) return null;
  const x = new Float32Array(a.buffer, a.byteOffset, a.byteLength / 4);
  const y = new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  let dot = 0;
  let nx = 0;
  let ny = 0;
  for (let i = 0; i < x.length; i++) {
    dot += x[i] * y[i];
    nx += x[i] * x[i];
    ny += y[i] * y[i];
  }
  return nx === 0 || ny === 0 ? null : dot / Math.sqrt(nx * ny);
}

/**
 * Embedded storage: one SQLite file (`<dataDir>/hangar.sqlite`). `secondary`: another connection of the
 * process that owns the file (an executor thread); it leaves folding the WAL back at close to the owner.
 */
export async function openSqlite(opts: {
  dataDir: string;
  synchronous: "normal" | "full";
  secondary?: boolean;
}): Promise<SqlDatabase> {
  mkdirSync(opts.dataDir, { recursive: true });
  const raw = new Database(path.join(opts.dataDir, "hangar.sqlite"));
  // WAL: readers never block the writer. synchronous=NORMAL keeps every committed transaction across a
  // process crash (kill -9, OOM); FULL also across power loss, at one fsync per commit.
  raw.pragma("journal_mode = WAL");
  raw.pragma(`synchronous = ${opts.synchronous === "full" ? "FULL" : "NORMAL"}`);
  raw.pragma("foreign_keys = ON");
  raw.pragma("busy_timeout = 5000");
  raw.function("hangar_cosine", { deterministic: true }, (a: unknown, b: unknown) =>
    cosineOfBlobs(a as Buffer | null, b as Buffer | null),
  );
  const db = new Kysely<Tables>({ dialect: new HangarSqliteDialect(withStatementCache(raw)) });
  return migrated(
    new SqlDatabase(db, sqliteDialect, async () => {
      // Fold the WAL back into the main file so the data dir is one self-contained file at rest.
      if (!opts.secondary && raw.open) raw.pragma("wal_checkpoint(TRUNCATE)");
      await db.destroy();
    }),
  );
}

// ── Postgres ───────────────────────────────────────────────────────────────────────────────────────

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * int8 columns hold epoch ms, counts and sequence numbers: all safe JavaScript numbers. JSON columns
 * come back as text, as SQLite's do, and the repositories parse them (tables.ts).
 */
const types = {
  getTypeParser(oid: number, format?: string) {
    if (oid === pg.types.builtins.INT8) return (value: string) => Number(value);
    if (oid === pg.types.builtins.JSONB || oid === pg.types.builtins.JSON) return (value: string) => value;
    return pg.types.getTypeParser(oid, format as "text");
  },
};

/**
 * Scale-out storage: everything in one Postgres schema (`public` unless `schema` is given), whose name
 * the pool's connections put on their `search_path`. Migrations run on open, once across processes
 * starting at once.
 */
export async function openPostgres(opts: {
  uri: string;
  schema?: string;
  max?: number;
}): Promise<SqlDatabase> {
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
  const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
  return migrated(new SqlDatabase(db, postgresDialect, () => db.destroy()), schema);
}
