/**
 * bad-input.test.ts on a fresh Postgres database (plain `hangar dev` with POSTGRES_URI, no Redis), in a
 * file of its own so that each engine's run has the per-file time budget to itself. Runs when
 * HANGAR_TEST_POSTGRES_URI is set (CI sets it).
 */
import { describe, test } from "node:test";
import { fuzz, REQUESTS } from "../helpers/bad-input-server.js";
import { freshDatabase, PG_SKIP } from "../helpers/postgres.js";
import { type Hangar, startHangar } from "../helpers/server.js";

describe("bad input generated from /openapi.json (Postgres)", () => {
  test(`Postgres: ${REQUESTS} requests, no 5xx or hang, still works after`, {
    timeout: 240_000,
    skip: PG_SKIP,
  }, async (t) => {
    const db = await freshDatabase();
    let h: Hangar | undefined;
    try {
      h = await startHangar({ env: { POSTGRES_URI: db.uri } });
      await fuzz(h, t);
    } finally {
      await h?.stop();
      await db.drop();
    }
  });
});
