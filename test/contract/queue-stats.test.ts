/**
 * `runs.stats()` (the queue figures of `GET /metrics`) against every adapter (test/helpers/adapters.ts).
 * Run times are set through SQL so the waits are known exactly.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { ADAPTERS, useFixtures } from "../helpers/adapters.js";
import { admission, makeAssistant, ORG } from "../helpers/storage-records.js";

/** Close enough: the figures are taken a few milliseconds after the test computes its own. */
function near(actual: number | null, expected: number, what: string) {
  assert.ok(actual !== null && Math.abs(actual - expected) < 2, `${what}: ${actual} ≈ ${expected}`);
}

for (const adapter of ADAPTERS) {
  describe(`queue stats: ${adapter.name}`, { skip: adapter.skip }, () => {
    const open = useFixtures(adapter);

    test("an empty queue: zero counts, no waits", async () => {
      const { storage } = await open();
      assert.deepEqual(await storage.runs.stats(), {
        n_pending: 0,
        n_running: 0,
        pending_runs_wait_time_max_secs: null,
        pending_runs_wait_time_med_secs: null,
        pending_unblocked_runs_wait_time_max_secs: null,
      });
    });

    test("counts pending and running runs; waits from when each run became due", async () => {
      const fx = await open();
      const s = fx.storage;
      const a = await makeAssistant(s);
      const [t1, t2, t3] = [randomUUID(), randomUUID(), randomUUID()];
      const now = Date.now();
      /** Admits a run on `thread` due at `now + offsetMs` (set by SQL: admission stamps its own time). */
      const queue = async (thread: string, offsetMs: number) => {
        const { run } = await s.runs.admit(
          ORG,
          admission(a, thread, { not_before: new Date(now + Math.max(0, offsetMs)) }),
        );
        await fx.sql("UPDATE runs SET not_before = $1 WHERE run_id = $2", [now + offsetMs, run.run_id]);
        return run;
      };
      // t1: one running, one waiting behind it (blocked) for 100 s.
      const running = await queue(t1, -200_000);
      await queue(t1, -100_000);
      // t2: two due runs, unblocked, waiting 40 s and 10 s.
      await queue(t2, -40_000);
      await queue(t2, -10_000);
      // t3: delayed, not due for a minute: pending, but not waiting.
      await queue(t3, 60_000);
      await fx.sql("UPDATE runs SET status = 'running' WHERE run_id = $1", [running.run_id]);

      const stats = await s.runs.stats();
      assert.equal(stats.n_pending, 4);
      assert.equal(stats.n_running, 1);
      near(stats.pending_runs_wait_time_max_secs, 100, "max wait (the blocked run)");
      near(stats.pending_runs_wait_time_med_secs, 40, "median of 100, 40, 10");
      near(stats.pending_unblocked_runs_wait_time_max_secs, 40, "max wait of a run a worker could take");

      // An even count: the median is the mean of the middle two (100, 40, 10, 4 → 25).
      await queue(randomUUID(), -4_000);
      near((await s.runs.stats()).pending_runs_wait_time_med_secs, 25, "median of four");
    });
  });
}
