/**
 * bad-input-sweep.test.ts on a fresh Postgres database, in a file of its own so that each engine's sweep
 * has the per-file time budget to itself. Runs when HANGAR_TEST_POSTGRES_URI is set (CI sets it).
 */
import { describe, test } from "node:test";
import { sweep } from "../helpers/bad-input-server.js";
import { freshDatabase, PG_SKIP } from "../helpers/postgres.js";
import { type Hangar, startHangar } from "../helpers/server.js";

describe("the sweep of sizes and filter shapes (Postgres)", () => {
  test("Postgres: no 5xx", { timeout: 240_000, skip: PG_SKIP }, async (t) => {
    const db = await freshDatabase();
    let h: Hangar | undefined;
    try {
      h = await startHangar({ env: { POSTGRES_URI: db.uri } });
      await sweep(h, t);
    } finally {
      await h?.stop();
      await db.drop();
    }
  });
});
