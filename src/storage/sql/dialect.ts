/**
 * What truly differs between SQLite and Postgres, in one place; everything else (upserts, RETURNING,
 * JSON text, timestamps) is the same SQL on both, written once against Kysely. The rest of the
 * differences are the connections themselves (database.ts' openSqlite and openPostgres) and the
 * engines' DDL, kept as data by engine with the migrations (migrations.ts). Locks: SQLite's
 * transactions begin IMMEDIATE (database.ts) and hold the database's write lock until COMMIT, what
 * `FOR UPDATE` gives per row on Postgres, so on SQLite the lock helpers add nothing.
 */
import type { Expression, Kysely, RawBuilder, SqlBool } from "kysely";
import { type AuthFilter, type AuthScalar, conditionOf } from "../filter.js";
import { sql } from "./kysely.js";

type Comparison = ">" | ">=" | "<" | "<=";

/** A select builder that can take a row lock (Kysely's SelectQueryBuilder and its subtypes). */
interface Lockable<QB> {
  forUpdate(of?: any): QB;
  forShare(of?: any): QB;
  skipLocked(): QB;
}

export interface Dialect {
  /** The engine, as migrations.ts keys its per-engine DDL by it; code asks the members below instead. */
  readonly name: "sqlite" | "postgres";
  /**
   * One process owns the database (the embedded SQLite file), so runs found `running` at its start
   * are orphans (`Storage.exclusive`); a shared database (Postgres) relies on leases instead.
   */
  readonly exclusive: boolean;
  /**
   * A transaction holds the whole database's write lock from its first statement (SQLite: BEGIN
   * IMMEDIATE, database.ts), so what it reads stays as read until it commits: a check-then-write needs
   * no row lock, and concurrent claimers need no pick-then-lock protocol (runs' claims).
   */
  readonly serializesTransactions: boolean;
  /**
   * `SELECT … FOR UPDATE [OF table] [SKIP LOCKED]` on Postgres; the query as it is on SQLite. `skipLocked`:
   * rows another transaction holds are left out instead of waited for (each claim happens once).
   * `share`: `FOR SHARE` instead, for a row that must stay (not be changed or deleted) until COMMIT
   * while other transactions may still read and share-lock it (a parent row checked before an insert).
   */
  lock<QB extends Lockable<QB>>(qb: QB, opts?: { skipLocked?: boolean; of?: string; share?: boolean }): QB;
  /** Now, in epoch ms, by the database's clock (leases compare across processes on Postgres). */
  nowMs(): RawBuilder<number>;
  /**
   * JSON containment (`{a: 1, b: {c: "x"}}` ⊆ column): objects match key by key, recursively; `null`
   * matches a JSON null; arrays and other values match only when equal, as jsonb compares them. A value
   * of another kind in the row (a scalar where the filter has an array or object) is no match, never
   * an error: the same answers on both engines.
   */
  jsonContains(column: string, filter: Record<string, unknown>): Expression<SqlBool>;
  /**
   * A top-level key of a JSON document stored as UTF-8 bytes (`checkpoints.metadata`) equals `value`,
   * compared as jsonb compares (objects whatever their key order, numbers by value, kinds never mixed).
   * Absent keys never match.
   */
  jsonBytesKeyEquals(column: string, key: string, value: unknown): Expression<SqlBool>;
  /** An authorization filter (src/storage/filter.ts) on a metadata column: `$eq` scalars, `$contains` lists. */
  authFilter(column: string, filter: AuthFilter): Expression<SqlBool>;
  /** A boolean as the column stores it. */
  bool(value: boolean): number | boolean;
  /** An embedding as `store_vectors.embedding` stores it. */
  vector(values: ArrayLike<number>): unknown;
  /** An embedding parameter for `hangar_cosine(column, …)` in a query. */
  vectorParam(values: ArrayLike<number>): RawBuilder<unknown>;
  /**
   * The column that orders a table's rows by insertion, where the table has no `seq` of its own
   * (assistants, threads, api_keys, crons): SQLite's `rowid`, Postgres' `seq`.
   */
  insertionOrder(table?: string): RawBuilder<number>;
  /** A unique or primary-key constraint refused the write. */
  isUniqueViolation(err: unknown): boolean;
  /**
   * Runs `fn` (the migrations) while no other process migrates the same database: a session advisory
   * lock keyed by the schema on Postgres (`db` is one connection); just `fn` on SQLite.
   */
  lockMigrations(db: Kysely<any>, schema: string, fn: () => Promise<void>): Promise<void>;
  /**
   * Compares a top-level field of a JSON object column with a number or a string: true only when the
   * field holds a JSON value of the same kind (numbers never compare with strings) and the comparison
   * holds. Numbers compare numerically, strings byte by byte (SQLite's BINARY collation, Postgres'
   * `COLLATE "C"`). The store's `$gt`, `$gte`, `$lt`, `$lte` filters.
   */
  jsonCompare(column: string, field: string, op: Comparison, value: number | string): Expression<SqlBool>;
  /**
   * A statement that serialises the transactions that run it with the same (`space`, `key`) until they
   * end, for check-then-write rules over rows that may not exist yet (unique names, quotas): Postgres'
   * transaction-scoped advisory lock; null on SQLite.
   */
  advisoryLock(space: number, key: string): RawBuilder<unknown> | null;
  /**
   * An ISO-8601 timestamp column (`…Z`, as every `*_at` text column holds) as epoch ms, for arithmetic
   * on stored times (a thread's TTL runs from its `updated_at`): the engines' date functions differ.
   */
  isoToMs(column: string): RawBuilder<number>;
}

const TRUE = sql<SqlBool>`1 = 1`;
const and = (clauses: Expression<SqlBool>[]): Expression<SqlBool> =>
  clauses.length ? sql<SqlBool>`(${sql.join(clauses, sql` AND `)})` : TRUE;

// ── SQLite ─────────────────────────────────────────────────────────────────────────────────────────

/** A JSON path step for SQLite's JSON functions: the key quoted, so dots and quotes in it are literal. */
const pathKey = (key: string) => `"${key.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;

/**
 * `doc` at `path` equals the scalar `v` as JSON, as Postgres' jsonb compares: same kind (booleans are
 * not the numbers 1 and 0, numbers not strings), numbers by value (1 equals 1.0).
 */
function sqliteScalarEquals(type: Expression<unknown>, atom: Expression<unknown>, v: AuthScalar) {
  if (typeof v === "boolean") return sql<SqlBool>`${type} = ${v ? "true" : "false"}`;
  if (typeof v === "number") return sql<SqlBool>`(${type} IN ('integer', 'real') AND ${atom} = ${v})`;
  return sql<SqlBool>`(${type} = 'text' AND ${atom} = ${v})`;
}

/**
 * The JSON at `path` of `col` equals `value` (jsonb equality: arrays element by element in order,
 * objects key by key whatever their order). Every comparison checks the kind first, so a stored scalar
 * where the filter has an array or object is simply no match (json() of a bare string was an error).
 */
function sqliteEquals(col: Expression<unknown>, path: string, value: unknown): Expression<SqlBool> {
  const type = sql`json_type(${col}, ${path})`;
  if (value === null) return sql<SqlBool>`${type} = 'null'`;
  if (Array.isArray(value))
    return and([
      sql<SqlBool>`${type} = 'array'`,
      sql<SqlBool>`json_array_length(${col}, ${path}) = ${value.length}`,
      ...value.map((item, i) => sqliteEquals(col, `${path}[${i}]`, item)),
    ]);
  if (typeof value === "object")
    return and([
      sql<SqlBool>`${type} = 'object'`,
      sql<SqlBool>`(SELECT count(*) FROM json_each(${col}, ${path})) = ${Object.keys(value).length}`,
      ...Object.entries(value).map(([k, v]) => sqliteEquals(col, `${path}.${pathKey(k)}`, v)),
    ]);
  return sqliteScalarEquals(type, sql`json_extract(${col}, ${path})`, value as AuthScalar);
}

/** Containment as Postgres' `@>` on objects: objects key by key, recursively; anything else equal. */
function sqliteContains(
  column: string,
  filter: Record<string, unknown>,
  prefix = "$",
): Expression<SqlBool>[] {
  const col = sql.ref(column);
  return Object.entries(filter).map(([key, value]) => {
    const p = `${prefix}.${pathKey(key)}`;
    if (value === null || typeof value !== "object" || Array.isArray(value))
      return sqliteEquals(col, p, value);
    const nested = sqliteContains(column, value as Record<string, unknown>, p);
    return and([sql<SqlBool>`json_type(${col}, ${p}) = 'object'`, ...nested]);
  });
}

function float32Blob(values: ArrayLike<number>): Buffer {
  const f = Float32Array.from(values);
  return Buffer.from(f.buffer, f.byteOffset, f.byteLength);
}

export const sqliteDialect: Dialect = {
  name: "sqlite",
  exclusive: true,
  serializesTransactions: true,
  lock: (qb) => qb,
  // The same clock as the process's (one host), read by SQLite: no parameter, so queries using it compile once.
  nowMs: () => sql<number>`CAST(unixepoch('subsec') * 1000 AS INTEGER)`,
  jsonContains: (column, filter) => and(sqliteContains(column, filter)),
  jsonBytesKeyEquals: (column, key, value) =>
    sqliteEquals(sql`CAST(${sql.ref(column)} AS TEXT)`, `$.${pathKey(key)}`, value),
  authFilter(column, filter) {
    const col = sql.ref(column);
    const clauses: Expression<SqlBool>[] = [];
    for (const [key, condition] of Object.entries(filter)) {
      const path = `$.${pathKey(key)}`;
      const c = conditionOf(condition);
      if ("eq" in c) {
        clauses.push(sqliteEquals(col, path, c.eq));
        continue;
      }
      clauses.push(sql`json_type(${col}, ${path}) = 'array'`);
      for (const v of c.contains) {
        const matches = sqliteScalarEquals(sql.ref("e.type"), sql.ref("e.atom"), v);
        clauses.push(sql`EXISTS (SELECT 1 FROM json_each(${col}, ${path}) e WHERE ${matches})`);
      }
    }
    return and(clauses);
  },
  bool: (value) => (value ? 1 : 0),
  vector: float32Blob,
  vectorParam: (values) => sql`${float32Blob(values)}`,
  insertionOrder: (table) => sql.ref(table ? `${table}.rowid` : "rowid"),
  isUniqueViolation: (err) => {
    const code = (err as { code?: string }).code;
    return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
  },
  lockMigrations: (_db, _schema, fn) => fn(),
  jsonCompare(column, field, op, value) {
    const col = sql.ref(column);
    const path = `$.${pathKey(field)}`;
    const types = typeof value === "number" ? sql`('integer', 'real')` : sql`('text')`;
    return sql<SqlBool>`(json_type(${col}, ${path}) IN ${types} AND json_extract(${col}, ${path}) ${sql.raw(op)} ${value})`;
  },
  advisoryLock: () => null,
  isoToMs: (column) => sql<number>`((julianday(${sql.ref(column)}) - 2440587.5) * 86400000.0)`,
};

// ── Postgres ───────────────────────────────────────────────────────────────────────────────────────

/**
 * Everything but arrays goes into one `column @> $n` (served by the GIN index); arrays are compared
 * whole with `#>`, because `@>` would also accept a longer array that merely contains the filter's.
 */
function pgContains(column: string, filter: Record<string, unknown>): Expression<SqlBool> {
  const col = sql.ref(column);
  const arrays: [string[], unknown[]][] = [];
  const split = (obj: Record<string, unknown>, path: string[]): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(obj)) {
      if (Array.isArray(value)) arrays.push([[...path, key], value]);
      else if (value !== null && typeof value === "object")
        out[key] = split(value as Record<string, unknown>, [...path, key]);
      else out[key] = value;
    }
    return out;
  };
  const contained = split(filter, []);
  const clauses: RawBuilder<SqlBool>[] = [];
  if (Object.keys(contained).length) clauses.push(sql`${col} @> ${JSON.stringify(contained)}::jsonb`);
  for (const [path, value] of arrays) {
    clauses.push(sql`${col} #> ${path}::text[] = ${JSON.stringify(value)}::jsonb`);
  }
  return and(clauses);
}

export const postgresDialect: Dialect = {
  name: "postgres",
  exclusive: false,
  serializesTransactions: false,
  lock(qb, { share, of, skipLocked } = {}) {
    const locked = share ? qb.forShare(of) : qb.forUpdate(of);
    return skipLocked ? locked.skipLocked() : locked;
  },
  nowMs: () => sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`,
  jsonContains: pgContains,
  jsonBytesKeyEquals: (column, key, value) =>
    sql<SqlBool>`(convert_from(${sql.ref(column)}, 'UTF8')::jsonb -> ${key}::text) = ${JSON.stringify(value)}::jsonb`,
  authFilter(column, filter) {
    const col = sql.ref(column);
    const clauses: RawBuilder<SqlBool>[] = [];
    for (const [key, condition] of Object.entries(filter)) {
      const c = conditionOf(condition);
      if ("eq" in c) {
        clauses.push(sql`${col} @> ${JSON.stringify({ [key]: c.eq })}::jsonb`);
        continue;
      }
      const field = sql`${col} -> ${key}::text`;
      clauses.push(
        sql`jsonb_typeof(${field}) = 'array'`,
        sql`${field} @> ${JSON.stringify(c.contains)}::jsonb`,
      );
    }
    return and(clauses);
  },
  bool: (value) => value,
  vector: (values) => Array.from(values),
  vectorParam: (values) => sql`${Array.from(values)}::real[]`,
  insertionOrder: (table) => sql.ref(table ? `${table}.seq` : "seq"),
  isUniqueViolation: (err) => (err as { code?: string }).code === "23505",
  async lockMigrations(db, schema, fn) {
    await sql`SELECT pg_advisory_lock(726854, hashtext(${schema}))`.execute(db);
    try {
      await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(schema)}`.execute(db);
      await fn();
    } finally {
      await sql`SELECT pg_advisory_unlock(726854, hashtext(${schema}))`.execute(db).catch(() => {});
    }
  },
  jsonCompare(column, field, op, value) {
    const col = sql.ref(column);
    return typeof value === "number"
      ? sql<SqlBool>`(jsonb_typeof(${col} -> ${field}::text) = 'number' AND (${col} ->> ${field}::text)::numeric ${sql.raw(op)} ${value}::numeric)`
      : sql<SqlBool>`(jsonb_typeof(${col} -> ${field}::text) = 'string' AND (${col} ->> ${field}::text) COLLATE "C" ${sql.raw(op)} ${value}::text)`;
  },
  advisoryLock: (space, key) => sql`SELECT pg_advisory_xact_lock(${space}, hashtext(${key}))`,
  isoToMs: (column) => sql<number>`(extract(epoch from ${sql.ref(column)}::timestamptz) * 1000)`,
};
