/**
 * The sweep (test/helpers/bad-input.ts `RequestArbitraries.sweep`), on embedded SQLite: every string field of every operation oversized (1 MB in bodies, 15,000 characters
 * in paths and queries) and every filter of every search and count given values of every shape (array,
 * object, nested, null, number, string, boolean), each answered with a 4xx or a 2xx, never a 5xx.
 * Apart from bad-input*.test.ts's random requests so that each has the per-file time budget to itself;
 * the same on Postgres: bad-input-sweep-postgres.test.ts.
 */
import { describe, test } from "node:test";
import { sweep } from "../helpers/bad-input-server.js";
import { startHangar } from "../helpers/server.js";

describe("the sweep of sizes and filter shapes", () => {
  test("embedded SQLite: no 5xx", { timeout: 240_000 }, async (t) => {
    const h = await startHangar();
    try {
      await sweep(h, t);
    } finally {
      await h.stop();
    }
  });
});
