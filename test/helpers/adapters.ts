/**
 * The storage adapters the contract tests run against (kysely's DIALECTS pattern): the same tests,
 * once on SQLite and once on Postgres.
 *
 * Postgres runs when `HANGAR_TEST_POSTGRES_URI` is set, and then FAILS if the server is unreachable
 * (CI sets it; a silent skip there would hide a broken adapter). Unset: the Postgres half is skipped
 * with a visible reason. Each Postgres database gets a fresh schema `hangar_test_<random>`, dropped on
 * close; each SQLite one a fresh data directory.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, afterEach } from "node:test";
import Database from "better-sqlite3";
import pg from "pg";
import type { Storage } from "../../src/storage/ports.js";
import { openPostgresStorage, openSqliteStorage } from "../../src/storage/sql/index.js";

export const PG_URI = process.env.HANGAR_TEST_POSTGRES_URI;

export type AdapterName = "sqlite" | "postgres";

/** One opened database: the storage under test, and ways to look at the same database from elsewhere. */
export interface Fixture {
  adapter: AdapterName;
  storage: Storage;
  /** Postgres: the schema of this database. */
  schema?: string;
  /** SQLite: the data directory (`<dataDir>/hangar.sqlite`). */
  dataDir?: string;
  /**
   * A second, independent process's view of the database. One process owns an SQLite file, so there
   * it is the same storage (its single connection); on Postgres a second `openPostgresStorage` on the
   * same schema.
   */
  another(): Promise<Storage>;
  /**
   * A second storage opened now on the same database, as a restarted process would: SQLite a second
   * connection to the file, Postgres a second pool on the schema. Closed with the fixture.
   */
  reopen(): Promise<Storage>;
  /**
   * Raw SQL on the database, through a connection of its own; `$1, $2, ...` placeholders on both
   * adapters. For the few checks the ports do not expose (row contents, counts).
   */
  sql<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
  close(): Promise<void>;
}

export interface Adapter {
  name: AdapterName;
  skip?: string;
  open(): Promise<Fixture>;
}

const tmp = mkdtempSync(path.join(os.tmpdir(), "hangar-contract-"));
after(() => rmSync(tmp, { recursive: true, force: true }));
let dbCount = 0;
const newDataDir = () => path.join(tmp, `db-${++dbCount}`);

/** `$1` → `@p1`: better-sqlite3 binds numbered parameters by name. */
function sqliteParams(text: string, params: unknown[]): [string, Record<string, unknown>] {
  const named = Object.fromEntries(params.map((p, i) => [`p${i + 1}`, p]));
  return [text.replace(/\$(\d+)/g, "@p$1"), named];
}

export const ADAPTERS: Adapter[] = [
  {
    name: "sqlite",
    async open() {
      const dataDir = newDataDir();
      const storage = await openSqliteStorage({ dataDir, synchronous: "normal" });
      const reopened: Storage[] = [];
      let raw: Database.Database | undefined;
      return {
        adapter: "sqlite",
        storage,
        dataDir,
        another: async () => storage,
        async reopen() {
          const other = await openSqliteStorage({ dataDir, synchronous: "normal" });
          reopened.push(other);
          return other;
        },
        async sql<R>(text: string, params: unknown[] = []) {
          if (!raw) {
            raw = new Database(path.join(dataDir, "hangar.sqlite"));
            raw.pragma("busy_timeout = 5000");
          }
          const [query, named] = sqliteParams(text, params);
          const stmt = raw.prepare(query);
          if (stmt.reader) return stmt.all(named) as R[];
          stmt.run(named);
          return [];
        },
        async close() {
          raw?.close();
          for (const s of reopened) await s.close();
          await storage.close();
        },
      };
    },
  },
  {
    name: "postgres",
    skip: PG_URI
      ? undefined
      : "HANGAR_TEST_POSTGRES_URI is not set (e.g. postgres://postgres@127.0.0.1:5432/test)",
    async open() {
      const uri = PG_URI as string;
      const schema = `hangar_test_${randomBytes(6).toString("hex")}`;
      const storage = await openPostgresStorage({ uri, schema });
      const others: Storage[] = [];
      let raw: pg.Pool | undefined;
      const second = async () => {
        const other = await openPostgresStorage({ uri, schema });
        others.push(other);
        return other;
      };
      return {
        adapter: "postgres",
        storage,
        schema,
        another: second,
        reopen: second,
        async sql<R>(text: string, params: unknown[] = []) {
          raw ??= new pg.Pool({ connectionString: uri, max: 1, options: `-c search_path=${schema}` });
          return (await raw.query(text, params)).rows as R[];
        },
        async close() {
          await raw?.end();
          for (const s of [storage, ...others]) await s.close();
          const client = new pg.Client({ connectionString: uri });
          await client.connect();
          try {
            await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          } finally {
            await client.end();
          }
        },
      };
    },
  },
];

/**
 * For a `describe` of one adapter: returns `open()`, which opens a fresh database of that adapter that
 * is closed (and, on Postgres, dropped) after the test that opened it.
 */
export function useFixtures(adapter: Adapter): () => Promise<Fixture> {
  const opened: Fixture[] = [];
  afterEach(async () => {
    for (const fx of opened.splice(0)) await fx.close();
  });
  return async () => {
    const fx = await adapter.open();
    opened.push(fx);
    return fx;
  };
}
