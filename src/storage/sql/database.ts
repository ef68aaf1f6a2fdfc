/**
 * The connection to either engine, behind one Kysely instance and one `transaction(body)`.
 *
 * A transaction's body is a generator: it builds each query with Kysely and yields it (`all`, `first`,
 * `changed` below), and gets the query's result back. The database runs the yielded queries:
 * - SQLite (better-sqlite3, synchronous): the whole transaction runs in one synchronous call, from
 *   `BEGIN IMMEDIATE` to `COMMIT`, so it holds the file's write lock (across the API's and the executor
 *   threads' connections) only for its own statements, with no other work of the thread in between: a
 *   check-then-write is atomic without row locks, and a thread busy running graphs does not keep the
 *   other threads' writes waiting (an async body let every promise continuation queued on the thread run
 *   inside the transaction).
 * - Postgres (`pg` pool): a transaction is one pooled connection and each yielded query is awaited; row
 *   locks come from `dialect.lock`. One the server aborted as a deadlock victim or serialization failure
 *   is run again.
 * A body cannot await anything else (a generator cannot await), which is what SQLite's model needs.
 *
 * Also the base of the repositories and the few query helpers they share.
 */
import { closeSync, openSync } from "node:fs";
import path from "node:path";
import { setImmediate as setImmediateP, setTimeout as setTimeoutP } from "node:timers/promises";
import Database from "better-sqlite3";
import type {
  Compilable,
  DatabaseConnection,
  Expression,
  Dialect as KyselyDialect,
  QueryResult,
  SelectQueryBuilder,
  SqlBool,
} from "kysely";
import type pg from "pg";
import type { SearchQuery, SortOrder } from "../ports.js";
import { PRIVATE_FILE_MODE, privateDir } from "../private-dir.js";
import { type Dialect, postgresDialect, sqliteDialect } from "./dialect.js";
import { CompiledQuery, Kysely, kysely, sql } from "./kysely.js";
import { migrate } from "./migrations.js";
import { Prepared } from "./prepared.js";
import type { Tables } from "./tables.js";

/** What queries are built with: the database, or a transaction's builder (whose queries are yielded). */
export type Executor = Kysely<Tables>;

/** A transaction body, or a part of one (`yield*`): yields compiled queries, gets their results, returns T. */
export type TxSteps<T> = Generator<CompiledQuery, T, QueryResult<any>>;

/** Runs the query in the transaction: its rows. */
export function* all<R>(query: Compilable<R>): TxSteps<R[]> {
  return (yield query.compile()).rows;
}

/** Runs the query in the transaction: its first row. */
export function* first<R>(query: Compilable<R>): TxSteps<R | undefined> {
  return (yield query.compile()).rows[0];
}

/** Runs the write in the transaction: how many rows it inserted, updated or deleted. */
export function* changed(query: Compilable<unknown>): TxSteps<number> {
  return Number((yield query.compile()).numAffectedRows ?? 0n);
}

/** Runs one compiled query: synchronously on SQLite. */
type RunSync = (query: CompiledQuery) => QueryResult<any>;

/** The database, for `transaction`; openSqlite and openPostgres make one. */
export class SqlDatabase {
  readonly dialect: Dialect;
  /** The builder transaction bodies get: it compiles, and refuses to execute (its queries are yielded). */
  readonly #builder: Kysely<Tables>;
  readonly #runSync?: RunSync;
  readonly #groups?: SqliteWriteGroups;
  readonly #prepared = new Map<string, Prepared<any>>();
  /** The migrations applied when this connection opened the database (migrations.ts). */
  migrated: string[] = [];

  constructor(
    readonly db: Kysely<Tables>,
    engine: { dialect: Dialect; kysely: KyselyDialect; runSync?: RunSync; groups?: SqliteWriteGroups },
    close: () => Promise<void>,
  ) {
    // Writes waiting for their group's commit are committed before the connection closes.
    this.close = async () => {
      await this.flushWrites();
      await close();
    };
    this.dialect = engine.dialect;
    this.#builder = compileOnly(engine.kysely);
    this.#runSync = engine.runSync;
    this.#groups = engine.groups;
  }

  /** Closes the connection, once the grouped writes asked for are committed. */
  readonly close: () => Promise<void>;

  /**
   * The query `build` makes (with `slot` placeholders), compiled once for this database under `key`
   * (`<repository>.<query>`; a key of its own for each shape of a query that varies).
   */
  prepared<R>(key: string, build: (db: Kysely<Tables>) => Compilable<R>): Prepared<R> {
    let query = this.#prepared.get(key);
    if (!query) {
      query = new Prepared(build(this.db));
      this.#prepared.set(key, query);
    }
    return query;
  }

  /**
   * Runs one compiled query outside a transaction. On SQLite it is one synchronous call (after any wait
   * for the write lock), without the round of promises Kysely's executor takes per query. `unless`: not
   * run (no rows) if it holds when the query would run, checked again after each wait for the lock.
   * It runs after the grouped writes asked for before it (`write`), as statements on one connection do.
   */
  async execute<R>(query: CompiledQuery<R>, unless?: () => boolean): Promise<QueryResult<R>> {
    const runSync = this.#runSync;
    if (unless?.()) return { rows: [] };
    if (!runSync) return this.db.executeQuery(query);
    if (this.#groups?.pending) await this.#groups.flush();
    return whenWriteLockFree(() => (unless?.() ? { rows: [] } : runSync(query)));
  }

  /**
   * A write that need not commit alone (the checkpointer's): like `execute`, but on SQLite the writes
   * asked for in one turn of the event loop commit together (`SqliteWriteGroups`).
   */
  write<R>(query: CompiledQuery<R>, unless?: () => boolean): Promise<QueryResult<R>> {
    return this.#groups ? this.#groups.write(query, unless) : this.execute(query, unless);
  }

  /** Waits until the writes asked for so far (`write`) are committed or have failed. */
  async flushWrites(): Promise<void> {
    await this.#groups?.flush();
  }

  /** Runs `body` in one transaction: COMMIT when it returns, ROLLBACK when it throws. */
  async transaction<T>(body: (tx: Executor) => TxSteps<T>): Promise<T> {
    const runSync = this.#runSync;
    if (runSync) {
      if (this.#groups?.pending) await this.#groups.flush(); // after the writes asked for before it
      // Nothing else can run on the connection inside one attempt: Kysely's own queries on it are single
      // statements, each one synchronous call too (SyncSqliteDriver).
      return whenWriteLockFree(() => {
        runSync(BEGIN); // the write lock: SQLITE_BUSY here while another connection holds it
        try {
          const result = drive(body(this.#builder), runSync);
          runSync(COMMIT);
          return result;
        } catch (err) {
          try {
            runSync(ROLLBACK);
          } catch {} // SQLite rolled it back itself (some errors do): the body's error is the one to throw
          throw err;
        }
      });
    }
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.transaction().execute(async (trx) => {
          const steps = body(this.#builder);
          let step = steps.next();
          while (!step.done)
            step = await trx.executeQuery(step.value).then(
              (result) => steps.next(result),
              (err) => steps.throw(err), // a failed query is thrown into the body
            );
          return step.value;
        });
      } catch (err) {
        if (!RETRYABLE.has((err as { code?: string }).code ?? "") || attempt >= 4) throw err;
      }
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * attempt));
    }
  }
}

/** How long a SQLite connection waits for another to release the write lock before SQLITE_BUSY. */
const SQLITE_BUSY_TIMEOUT_MS = 5000;

/**
 * Runs `attempt` (a transaction, or a statement outside one) again while SQLITE_BUSY refuses it the
 * write lock, which another connection (another thread's) holds for a few hundred µs as a rule: SQLite's
 * own busy handler would block the thread in sleeps of 1 ms and more; here its event loop turns between
 * tries, so its other work goes on. A refused attempt changed nothing (a transaction is refused at BEGIN).
 */
async function whenWriteLockFree<T>(attempt: () => T): Promise<T> {
  for (const started = Date.now(); ; ) {
    try {
      return attempt();
    } catch (err) {
      const waited = Date.now() - started;
      const busy = String((err as { code?: unknown }).code).startsWith("SQLITE_BUSY");
      if (!busy || waited >= SQLITE_BUSY_TIMEOUT_MS) throw err;
      await (waited < 2 ? setImmediateP() : setTimeoutP(1)); // a long holder (a migration): no spinning
    }
  }
}

const BEGIN = CompiledQuery.raw("begin immediate");
const COMMIT = CompiledQuery.raw("commit");
const ROLLBACK = CompiledQuery.raw("rollback");

/** Runs a transaction body to its end, each query synchronously; a failed query is thrown into the body. */
function drive<T>(steps: TxSteps<T>, runSync: RunSync): T {
  let step = steps.next();
  while (!step.done) {
    let result: QueryResult<any>;
    try {
      result = runSync(step.value);
    } catch (err) {
      step = steps.throw(err);
      continue;
    }
    step = steps.next(result);
  }
  return step.value;
}

/** A driver that refuses to execute: a transaction's queries are yielded to the database, not run by its builder. */
class CompileOnlyDriver extends kysely.DummyDriver {
  override async acquireConnection(): Promise<DatabaseConnection> {
    throw new Error(
      "A query built in a transaction body must be yielded (all, first, changed), not executed",
    );
  }
}

function compileOnly(dialect: KyselyDialect): Kysely<Tables> {
  return new Kysely<Tables>({
    dialect: {
      createAdapter: () => dialect.createAdapter(),
      createDriver: () => new CompileOnlyDriver(),
      createIntrospector: (db) => dialect.createIntrospector(db),
      createQueryCompiler: () => dialect.createQueryCompiler(),
    },
  });
}

/** What every repository holds: the database and its engine's dialect. */
export abstract class SqlRepo {
  protected readonly dialect: Dialect;
  constructor(protected readonly database: SqlDatabase) {
    this.dialect = database.dialect;
  }

  /** `database.transaction`, with the body called on this repository. */
  protected transaction<T>(body: (this: this, tx: Executor) => TxSteps<T>): Promise<T> {
    return this.database.transaction((tx) => body.call(this, tx));
  }

  /** The query's first row as a record (`to`), or null when it finds none. */
  protected async recordOrNull<R, T>(query: { executeTakeFirst(): Promise<R | undefined> }, to: (r: R) => T) {
    const row = await query.executeTakeFirst();
    return row ? to(row) : null;
  }

  /** How many rows a filtered select finds. */
  protected async countOf(qb: SelectQueryBuilder<Tables, any, object>): Promise<number> {
    const { n } = await qb.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    return Number(n);
  }

  /**
   * A search: the page `q` asks for of the rows `filtered` selects, as `sorted` selects and orders them
   * (in `q`'s order; ties in creation order), and how many there are in all.
   */
  protected async searchPage<TB extends keyof Tables, R, T>(
    filtered: SelectQueryBuilder<Tables, TB, object>,
    sorted: (
      qb: SelectQueryBuilder<Tables, TB, object>,
      order: SortOrder,
    ) => SelectQueryBuilder<Tables, TB, R>,
    to: (row: R) => T,
    q: Pick<SearchQuery, "limit" | "offset" | "sort_order">,
  ): Promise<{ items: T[]; total: number }> {
    const order = q.sort_order === "asc" ? "asc" : "desc";
    const rows = await sorted(filtered, order)
      .orderBy(this.dialect.insertionOrder(), order)
      .limit(q.limit)
      .offset(q.offset)
      .execute();
    return { items: rows.map(to), total: await this.countOf(filtered) };
  }
}

/** `column` contains `text`, case-insensitively (LIKE with the text's wildcards escaped): one SQL for both. */
export function nameContains(column: string, text: string): Expression<SqlBool> {
  const pattern = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return sql<SqlBool>`lower(${sql.ref(column)}) LIKE lower(${pattern}) ESCAPE '\\'`;
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

/**
 * Kysely's driver for SQLite: each query is one synchronous call to `runSync`, so there is nothing to
 * wait for and no connection mutex (Kysely's own driver has one). Its transactions (the migrations',
 * run before the database is handed out) begin IMMEDIATE too.
 */
/**
 * Group commit on one SQLite connection: the writes asked for in one turn of the event loop commit
 * together, in one transaction at the end of the turn (each commit writes every page it changed to the
 * WAL, and a run's checkpoints, or many runs', share pages). Each write's promise resolves once it is
 * committed. If one write of a group fails, the group is rolled back and each write runs alone, with its
 * own outcome. Every other statement on the connection (`SqlDatabase`, Kysely's driver) first waits for
 * the groups asked for before it (`flush`), so statements keep their order on the connection.
 */
class SqliteWriteGroups {
  /** Writes asked for in this turn, committed at its end (or before a statement that comes after them). */
  #group: GroupedWrite[] | null = null;
  #groupCommit: NodeJS.Immediate | null = null;
  /** Groups being committed (waiting for the write lock, or re-run one by one): each settles, never rejects. */
  readonly #committing = new Set<Promise<unknown>>();

  constructor(readonly runSync: RunSync) {}

  /** Writes are waiting for, or in, their group's commit. */
  get pending(): boolean {
    return this.#group !== null || this.#committing.size > 0;
  }

  write<R>(query: CompiledQuery<R>, unless?: () => boolean): Promise<QueryResult<R>> {
    if (unless?.()) return Promise.resolve({ rows: [] });
    return new Promise((resolve, reject) => {
      if (!this.#group) {
        this.#group = [];
        this.#groupCommit = setImmediate(() => this.#commitWaiting());
      }
      this.#group.push({ query, unless, resolve, reject });
    });
  }

  /** Waits until the writes asked for so far are committed or have failed. */
  async flush(): Promise<void> {
    this.#commitWaiting();
    await Promise.all([...this.#committing]);
  }

  /** Starts the commit of the group of writes waiting, if any. */
  #commitWaiting(): void {
    const group = this.#group;
    if (!group) return;
    clearImmediate(this.#groupCommit!);
    this.#group = null;
    this.#groupCommit = null;
    const commit = this.#commit(group);
    this.#committing.add(commit);
    void commit.finally(() => this.#committing.delete(commit));
  }

  #commit(group: GroupedWrite[]): Promise<unknown> {
    const { runSync } = this;
    const alone = (w: GroupedWrite) =>
      whenWriteLockFree(() => (w.unless?.() ? { rows: [] } : runSync(w.query))).then(w.resolve, w.reject);
    return whenWriteLockFree(() => {
      runSync(BEGIN);
      try {
        const results = group.map((w) => (w.unless?.() ? { rows: [] } : runSync(w.query)));
        runSync(COMMIT);
        return results;
      } catch {
        try {
          runSync(ROLLBACK);
        } catch {} // SQLite rolled it back itself
        return null;
      }
    }).then(
      (results) => Promise.all(group.map((w, i) => (results ? w.resolve(results[i]!) : alone(w)))),
      (err) => {
        for (const w of group) w.reject(err); // the write lock was not free in time
      },
    );
  }
}

/** A write waiting for its group's commit. */
interface GroupedWrite {
  query: CompiledQuery;
  unless?: () => boolean;
  resolve: (result: QueryResult<any>) => void;
  reject: (err: unknown) => void;
}

class SyncSqliteDriver extends kysely.DummyDriver {
  constructor(
    readonly runSync: RunSync,
    readonly groups: SqliteWriteGroups,
    readonly close: () => void,
  ) {
    super();
  }
  override async acquireConnection(): Promise<DatabaseConnection> {
    if (this.groups.pending) await this.groups.flush(); // Kysely's queries too run after the writes before them
    return {
      executeQuery: (query) => whenWriteLockFree(() => this.runSync(query)),
      streamQuery: () => {
        throw new Error("Not supported");
      },
    };
  }
  override async beginTransaction() {
    if (this.groups.pending) await this.groups.flush();
    await whenWriteLockFree(() => this.runSync(BEGIN));
  }
  override async commitTransaction() {
    this.runSync(COMMIT);
  }
  override async rollbackTransaction() {
    this.runSync(ROLLBACK);
  }
  override async destroy() {
    this.close();
  }
}

/** SQLite runs DDL in transactions: migrations apply whole or not at all. */
class TransactionalSqliteAdapter extends kysely.SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
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
  privateDir(opts.dataDir);
  // Made 0600 before SQLite opens it: SQLite gives its -wal and -shm files the database file's mode.
  const file = path.join(opts.dataDir, "hangar.sqlite");
  closeSync(openSync(file, "a", PRIVATE_FILE_MODE));
  const raw = new Database(file);
  // WAL: readers never block the writer. synchronous=NORMAL keeps every committed transaction across a
  // process crash (kill -9, OOM); FULL also across power loss, at one fsync per commit.
  raw.pragma("journal_mode = WAL");
  raw.pragma(`synchronous = ${opts.synchronous === "full" ? "FULL" : "NORMAL"}`);
  raw.pragma("foreign_keys = ON");
  raw.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  raw.function("hangar_cosine", { deterministic: true }, (a: unknown, b: unknown) =>
    cosineOfBlobs(a as Buffer | null, b as Buffer | null),
  );
  // Statements are prepared once per SQL text and reused: preparing costs more than running most of
  // these queries, and several run on every run's hot path. Searches build their SQL from the filter's
  // shape, so the cache is bounded.
  const statements = new Map<string, Database.Statement>();
  const runSync: RunSync = ({ sql: text, parameters }) => {
    let stmt = statements.get(text);
    if (!stmt) {
      if (statements.size >= 1000) statements.clear();
      stmt = raw.prepare(text);
      statements.set(text, stmt);
    }
    if (stmt.reader) return { rows: stmt.all(parameters as unknown[]) };
    return { rows: [], numAffectedRows: BigInt(stmt.run(parameters as unknown[]).changes) };
  };
  const groups = new SqliteWriteGroups(runSync);
  const kyselyDialect: KyselyDialect = {
    createAdapter: () => new TransactionalSqliteAdapter(),
    createDriver: () => new SyncSqliteDriver(runSync, groups, () => raw.close()),
    createIntrospector: (db) => new kysely.SqliteIntrospector(db),
    createQueryCompiler: () => new kysely.SqliteQueryCompiler(),
  };
  const db = new Kysely<Tables>({ dialect: kyselyDialect });
  const database = await migrated(
    new SqlDatabase(db, { dialect: sqliteDialect, kysely: kyselyDialect, runSync, groups }, async () => {
      // Fold the WAL back into the main file so the data dir is one self-contained file at rest.
      if (!opts.secondary && raw.open) raw.pragma("wal_checkpoint(TRUNCATE)");
      await db.destroy();
    }),
  );
  // From now on every statement goes through whenWriteLockFree, which waits for the write lock without
  // blocking the thread; SQLite's handler (used while opening) would sleep instead.
  raw.pragma("busy_timeout = 0");
  return database;
}

// ── Postgres ───────────────────────────────────────────────────────────────────────────────────────

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * int8 columns hold epoch ms, counts and sequence numbers: all safe JavaScript numbers. JSON columns
 * come back as text, as SQLite's do, and the repositories parse them (tables.ts).
 */
const typesOf = (pgTypes: typeof pg.types) => ({
  getTypeParser(oid: number, format?: string) {
    if (oid === pgTypes.builtins.INT8) return (value: string) => Number(value);
    if (oid === pgTypes.builtins.JSONB || oid === pgTypes.builtins.JSON) return (value: string) => value;
    return pgTypes.getTypeParser(oid, format as "text");
  },
});

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
  // Loaded here, not at start-up: an embedded server never needs the driver (4 MB of RSS).
  const { default: pgDriver } = await import("pg");
  const pool = new pgDriver.Pool({
    connectionString: opts.uri,
    max: opts.max ?? 10,
    options: `-c search_path=${schema}`,
    types: typesOf(pgDriver.types),
  });
  // An idle connection dropped by the server must not crash the process; the pool replaces it.
  pool.on("error", () => {});
  const kyselyDialect = new kysely.PostgresDialect({ pool });
  const db = new Kysely<Tables>({ dialect: kyselyDialect });
  const database = new SqlDatabase(db, { dialect: postgresDialect, kysely: kyselyDialect }, () =>
    db.destroy(),
  );
  return migrated(database, schema);
}
