/**
 * A fresh database on the test Postgres (`HANGAR_TEST_POSTGRES_URI`) for e2e suites that start servers
 * on Postgres: each gets its own, dropped at the end, so suites never see each other's rows.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

export const PG_URI = process.env.HANGAR_TEST_POSTGRES_URI;

/** Why a Postgres suite is skipped (no URI), or undefined when it runs. */
export const PG_SKIP = PG_URI ? undefined : "HANGAR_TEST_POSTGRES_URI is not set (CI sets it)";

async function admin(sql: string): Promise<void> {
  const db = new pg.Client({ connectionString: PG_URI });
  await db.connect();
  try {
    await db.query(sql);
  } finally {
    await db.end();
  }
}

export interface FreshDatabase {
  name: string;
  /** The test URI with this database's name. */
  uri: string;
  drop(): Promise<void>;
}

export async function freshDatabase(prefix = "hangar_e2e"): Promise<FreshDatabase> {
  const name = `${prefix}_${randomBytes(5).toString("hex")}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(PG_URI as string);
  url.pathname = `/${name}`;
  return { name, uri: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
