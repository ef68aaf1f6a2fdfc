/**
 * The storage port contract (test/helpers/storage-contract.ts), the run queue after admission (RunsRepo): claims, leases, completion, cancelling, recovery.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import pg from "pg";
import type { Run, Storage } from "../../src/storage/ports.js";
import { PG_URI } from "../helpers/adapters.js";
import {
  checkpointIds,
  isKind,
  putCheckpoint,
  statuses,
  storageContract,
} from "../helpers/storage-contract.js";
import { admission, makeAssistant, ORG } from "../helpers/storage-records.js";

/** Claims until nothing is due. */
async function drain(storage: Storage): Promise<string[]> {
  const claimed: string[] = [];
  for (;;) {
    const { run } = await storage.runs.claimNext();
    if (!run) return claimed;
    claimed.push(run.run_id);
  }
}

storageContract((withStorage, adapter) => {
  describe("queue", () => {
    test(
      "claimNext: oldest due first, one running run per thread, delayed runs report when they are due",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const [t1, t2] = [randomUUID(), randomUUID()];
        const a1 = await s.runs.admit(ORG, admission(a, t1));
        const a2 = await s.runs.admit(ORG, admission(a, t1));
        const b1 = await s.runs.admit(ORG, admission(a, t2));
        const later = new Date(Date.now() + 60_000);
        await s.runs.admit(ORG, admission(a, randomUUID(), { not_before: later }));

        await s.threads.patch(ORG, t1, { owner: "alice" });
        const c1 = await s.runs.claimNext();
        assert.equal(c1.run?.run_id, a1.run.run_id);
        assert.equal(c1.run?.status, "running");
        assert.equal(c1.run?.attempt, 1);
        assert.equal(c1.org, ORG);
        assert.equal(c1.threadMetadata?.owner, "alice", "the claim hands over the thread's metadata");
        assert.equal(c1.claimable, true, "b1 could be claimed next");
        assert.equal(c1.waiting, true, "a2 waits behind a1");
        const c2 = await s.runs.claimNext();
        assert.equal(c2.run?.run_id, b1.run.run_id, "t1 is executing a1, so its a2 waits");
        assert.equal(c2.waiting, true);
        const c3 = await s.runs.claimNext();
        assert.equal(c3.run, null);
        assert.equal(c3.nextDueAt?.getTime(), later.getTime());
        assert.equal(c3.claimable, false, "an empty claim says no other claim would find one");
        assert.equal(c3.waiting, true, "a2 still waits: claim again when a1 ends");

        await s.runs.complete({ run_id: a1.run.run_id, status: "success", hasNext: false });
        const c4 = await s.runs.claimNext();
        assert.equal(c4.run?.run_id, a2.run.run_id);
        assert.equal(c4.waiting, false, "nothing due waits any more (the delayed run is not due)");
        const c5 = await s.runs.claimNext();
        assert.deepEqual([c5.run, c5.claimable, c5.waiting], [null, false, false]);
      }),
    );

    test(
      "two claimers racing (separate connections): every run claimed once, never two running per thread",
      withStorage(async (s, fx) => {
        const a = await makeAssistant(s);
        const threads = Array.from({ length: 8 }, () => randomUUID());
        for (const t of threads) {
          await s.runs.admit(ORG, admission(a, t));
          await s.runs.admit(ORG, admission(a, t));
          await s.runs.admit(ORG, admission(a, t));
        }
        const other = await fx.another();
        const [x, y] = await Promise.all([drain(s), drain(other)]);
        const claimed = [...x, ...y];
        assert.equal(new Set(claimed).size, claimed.length, "no run claimed twice");
        assert.equal(claimed.length, threads.length, "exactly one run per thread while each is running");
        for (const t of threads) {
          const running = (await s.runs.list(ORG, t, { limit: 10, offset: 0, status: "running" })).length;
          assert.equal(running, 1, `thread ${t} runs ${running}`);
        }
      }),
    );

    test(
      "concurrent enqueues execute in admission order (created_at, then queue order)",
      withStorage(async (s, fx) => {
        const a = await makeAssistant(s);
        const t = randomUUID();
        const views = [s, await fx.another(), await fx.another()];
        const notBefore = new Date(); // computed before admission, as the runtime does
        await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            views[i % views.length].runs.admit(ORG, admission(a, t, { not_before: notBefore })),
          ),
        );
        const created: string[] = [];
        for (;;) {
          const { run } = await s.runs.claimNext();
          if (!run) break;
          created.push(run.created_at);
          await s.runs.complete({ run_id: run.run_id, status: "success", hasNext: false });
        }
        assert.equal(created.length, 10);
        assert.deepEqual(created, [...created].sort(), "claimed in created_at order");
      }),
    );

    test(
      "soak: admissions of every strategy, claims, completions and cancels from 3 connections at once",
      withStorage(async (s, fx) => {
        const a = await makeAssistant(s);
        const threads = Array.from({ length: 4 }, () => randomUUID());
        const views = [s, await fx.another(), await fx.another()];
        const strategies = ["enqueue", "reject", "interrupt", "rollback"] as const;
        let admitting = true;
        const admitter = async (v: Storage, seed: number) => {
          for (let i = 0; i < 25; i++) {
            const strategy = strategies[(i + seed) % strategies.length];
            const thread = threads[(i * 7 + seed) % threads.length];
            const r = await v.runs
              .admit(ORG, admission(a, thread, { multitask_strategy: strategy }))
              .catch((err) => {
                if (!isKind("conflict")(err)) throw err;
                return null;
              });
            // The runtime stops running runs that interrupt/rollback admissions return.
            for (const stop of r?.runningToStop ?? []) {
              if (strategy === "rollback") await v.runs.completeRolledBack(stop.run_id);
              else await v.runs.complete({ run_id: stop.run_id, status: "interrupted", hasNext: false });
            }
          }
        };
        const worker = async (v: Storage) => {
          for (let idle = 0; idle < 3; ) {
            const { run } = await v.runs.claimNext();
            if (!run) {
              if (!admitting) idle++;
              await new Promise((r) => setTimeout(r, 5));
              continue;
            }
            idle = 0;
            await v.runs.complete({
              run_id: run.run_id,
              status: "success",
              values: { by: run.run_id },
              hasNext: false,
            });
          }
        };
        const workers = views.map((v) => worker(v));
        await Promise.all(views.map((v, i) => admitter(v, i)));
        admitting = false;
        await Promise.all(workers);
        for (const t of threads) {
          const st = await statuses(s, t);
          assert.ok(
            st.every((x) => x === "success" || x === "interrupted"),
            `thread ${t}: ${st.join(",")}`,
          );
          assert.equal((await s.threads.get(ORG, t))?.status, "idle");
        }
      }),
    );

    test(
      "complete: thread status and values follow the run (idle, busy, interrupted, error)",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const t = randomUUID();
        const r1 = await s.runs.admit(ORG, admission(a, t));
        const r2 = await s.runs.admit(ORG, admission(a, t));
        await s.runs.claimNext();
        const done = await s.runs.complete({
          run_id: r1.run.run_id,
          status: "success",
          values: { n: 1 },
          hasNext: false,
        });
        assert.equal(done?.status, "success");
        let thread = await s.threads.get(ORG, t);
        assert.equal(thread?.status, "busy", "r2 still pending");
        assert.deepEqual(thread?.values, { n: 1 });
        assert.equal(
          await s.runs.complete({ run_id: r1.run.run_id, status: "success", hasNext: false }),
          null,
        );

        await s.runs.claimNext();
        const interrupts = { task: [{ id: "i1", value: "ask" }] };
        await s.runs.complete({
          run_id: r2.run.run_id,
          status: "interrupted",
          values: { n: 2 },
          interrupts,
          hasNext: true,
        });
        thread = await s.threads.get(ORG, t);
        assert.equal(thread?.status, "interrupted");
        assert.deepEqual(thread?.interrupts, interrupts);

        const r3 = await s.runs.admit(ORG, admission(a, t));
        await s.runs.claimNext();
        await s.runs.complete({
          run_id: r3.run.run_id,
          status: "error",
          hasNext: false,
          interrupts: {},
          error: { error: "ValueError", message: "boom" },
        });
        thread = await s.threads.get(ORG, t);
        assert.equal(thread?.status, "error");
        assert.deepEqual(thread?.error, { error: "ValueError", message: "boom" });
        assert.deepEqual(thread?.values, { n: 2 }, "values unchanged when the run gives none");

        const r4 = await s.runs.admit(ORG, admission(a, t));
        await s.runs.claimNext();
        await s.runs.complete({
          run_id: r4.run.run_id,
          status: "success",
          values: null,
          interrupts: {},
          hasNext: false,
        });
        thread = await s.threads.get(ORG, t);
        assert.equal(thread?.status, "idle");
        assert.equal(thread?.values, null, "a null state is kept as null, not dropped");
        assert.equal(thread?.error, undefined);
      }),
    );

    test(
      "rollback of a running run deletes it and its checkpoints; run delete and cancelPending",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const t = randomUUID();
        const r1 = await s.runs.admit(ORG, admission(a, t));
        await s.runs.claimNext();
        await putCheckpoint(s, t, r1.run.run_id, "cp-0001");
        await s.runs.complete({
          run_id: r1.run.run_id,
          status: "success",
          values: { v: 1 },
          hasNext: false,
        });
        const r2 = await s.runs.admit(ORG, admission(a, t));
        await s.runs.claimNext();
        await putCheckpoint(s, t, r2.run.run_id, "cp-0002");
        assert.equal(await s.runs.delete(ORG, t, r2.run.run_id), "running");
        await s.runs.completeRolledBack(r2.run.run_id);
        assert.equal(await s.runs.get(ORG, t, r2.run.run_id), null);
        assert.deepEqual(await checkpointIds(s, t), ["cp-0001"]);
        assert.equal((await s.threads.get(ORG, t))?.status, "idle");

        assert.equal(await s.runs.delete(ORG, t, r1.run.run_id), "deleted");
        assert.deepEqual(await checkpointIds(s, t), []);
        assert.equal(await s.runs.delete(ORG, t, r1.run.run_id), "absent");

        const p1 = await s.runs.admit(ORG, admission(a, t));
        const p2 = await s.runs.admit(ORG, admission(a, t));
        assert.equal((await s.runs.cancelPending(p1.run.run_id, "interrupt"))?.status, "interrupted");
        assert.equal((await s.runs.get(ORG, t, p1.run.run_id))?.status, "interrupted");
        await s.runs.cancelPending(p2.run.run_id, "rollback");
        assert.equal(await s.runs.get(ORG, t, p2.run.run_id), null);
        assert.equal(await s.runs.cancelPending(p2.run.run_id, "rollback"), null);
        assert.equal((await s.threads.get(ORG, t))?.status, "idle");
      }),
    );

    test(
      "requeue and recoverInterrupted: attempts count, past maxAttempts the run fails and the thread errors",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const [t1, t2] = [randomUUID(), randomUUID()];
        const r1 = await s.runs.admit(ORG, admission(a, t1));
        const r2 = await s.runs.admit(ORG, admission(a, t2));
        await s.runs.claimNext();
        await s.runs.requeue(r1.run.run_id);
        assert.equal((await s.runs.get(ORG, t1, r1.run.run_id))?.status, "pending");
        const again = await s.runs.claimNext();
        assert.equal(again.run?.run_id, r1.run.run_id);
        assert.equal(again.run?.attempt, 2);
        assert.equal((await s.runs.claimNext()).run?.run_id, r2.run.run_id);

        const { requeued, failed } = await s.runs.recoverInterrupted(2); // as if every lease had expired
        assert.deepEqual(requeued, [r2.run.run_id]);
        assert.deepEqual(failed, [r1.run.run_id]);
        assert.equal((await s.runs.get(ORG, t1, r1.run.run_id))?.status, "error");
        const thread = await s.threads.get(ORG, t1);
        assert.equal(thread?.status, "error");
        assert.deepEqual(thread?.error, { error: "RunAbandoned", message: "Run failed after 2 attempts" });
        assert.equal((await s.runs.get(ORG, t2, r2.run.run_id))?.status, "pending");
      }),
    );

    test(
      "leases: a heartbeat keeps them, an expired one is swept (requeued, then failed past maxAttempts)",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const t = randomUUID();
        const r = await s.runs.admit(ORG, admission(a, t));
        const w1 = { workerId: "w1", ms: 150 };
        const w2 = { workerId: "w2", ms: 60_000 };
        assert.equal((await s.runs.claimNext(w1)).run?.run_id, r.run.run_id);
        // Renewed in time: nothing to sweep.
        assert.deepEqual(await s.runs.renewLeases(w1, [r.run.run_id]), {
          lost: [],
          recovered: [],
          stopRequested: [],
        });
        assert.deepEqual((await s.runs.sweepExpiredLeases(3)).requeued, []);
        // Another worker cannot renew what it does not hold.
        assert.deepEqual((await s.runs.renewLeases(w2, [r.run.run_id])).lost, [r.run.run_id]);
        await new Promise((resolve) => setTimeout(resolve, 250));
        assert.deepEqual(await s.runs.sweepExpiredLeases(3), {
          requeued: [r.run.run_id],
          failed: [],
          interrupted: [],
          rolledBack: [],
        });
        // The dead worker's heartbeat now learns it lost the run, which is in flight again without it;
        // its late settlement is refused.
        assert.deepEqual(await s.runs.renewLeases(w1, [r.run.run_id]), {
          lost: [r.run.run_id],
          recovered: [r.run.run_id],
          stopRequested: [],
        });
        const again = await s.runs.claimNext(w2);
        assert.equal(again.run?.attempt, 2);
        assert.equal(
          await s.runs.complete({ run_id: r.run.run_id, attempt: 1, status: "success", hasNext: false }),
          null,
        );
        await s.runs.requeue(r.run.run_id, 1); // a stale hand-back changes nothing either
        assert.equal((await s.runs.get(ORG, t, r.run.run_id))?.status, "running");
        // Handed back and claimed a third time, it expires again: three attempts are all it may have.
        await s.runs.claimNext(w1); // nothing else due; w1 claims nothing
        const w3 = { workerId: "w3", ms: 1 };
        await s.runs.requeue(r.run.run_id, 2);
        assert.equal((await s.runs.claimNext(w3)).run?.attempt, 3);
        await new Promise((resolve) => setTimeout(resolve, 20));
        assert.deepEqual((await s.runs.sweepExpiredLeases(3)).failed, [r.run.run_id]);
        assert.equal((await s.threads.get(ORG, t))?.status, "error");
        // A run that ended is lost to its heartbeat, but not in flight elsewhere: nothing to warn about.
        assert.deepEqual(await s.runs.renewLeases(w3, [r.run.run_id]), {
          lost: [r.run.run_id],
          recovered: [],
          stopRequested: [],
        });
      }),
    );

    test(
      "stop requests are recorded: the heartbeat reports them and a dead worker's run is settled as asked",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const [t1, t2] = [randomUUID(), randomUUID()];
        const r1 = await s.runs.admit(ORG, admission(a, t1));
        const r2 = await s.runs.admit(ORG, admission(a, t2));
        const lease = { workerId: "w", ms: 100 };
        await s.runs.claimNext(lease);
        await s.runs.claimNext(lease);
        await putCheckpoint(s, t2, r2.run.run_id, "cp-r2");
        assert.equal(await s.runs.requestStop(r1.run.run_id, "interrupt"), true);
        // A rollback double text records the request on the running run it returns.
        const r3 = await s.runs.admit(ORG, admission(a, t2, { multitask_strategy: "rollback" }));
        assert.deepEqual(
          r3.runningToStop.map((r) => r.run_id),
          [r2.run.run_id],
        );
        const renewal = await s.runs.renewLeases(lease, [r1.run.run_id, r2.run.run_id]);
        assert.deepEqual(
          renewal.stopRequested.sort((x, y) => x.action.localeCompare(y.action)),
          [
            { run_id: r1.run.run_id, action: "interrupt" },
            { run_id: r2.run.run_id, action: "rollback" },
          ],
        );
        await new Promise((resolve) => setTimeout(resolve, 200));
        const swept = await s.runs.sweepExpiredLeases(3);
        assert.deepEqual(swept.interrupted, [r1.run.run_id]);
        assert.deepEqual(swept.rolledBack, [r2.run.run_id]);
        assert.equal((await s.runs.get(ORG, t1, r1.run.run_id))?.status, "interrupted");
        assert.equal((await s.threads.get(ORG, t1))?.status, "idle");
        assert.equal(await s.runs.get(ORG, t2, r2.run.run_id), null);
        assert.deepEqual(await checkpointIds(s, t2), []);
        // The thread's queued run can go now; a request for a run not running is refused.
        assert.equal((await s.runs.claimNext(lease)).run?.run_id, r3.run.run_id);
        assert.equal(await s.runs.requestStop(r1.run.run_id, "interrupt"), false);
      }),
    );

    test(
      "stateless runs: temporary thread hidden from search and deleted afterwards",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const t = randomUUID();
        const base = admission(a, t, { stateless: true, if_not_exists: "reject" });
        const r = await s.runs.admit(ORG, { ...base, kwargs: { ...base.kwargs, temporary: true } });
        assert.equal(
          (await s.threads.search(ORG, { limit: 10, offset: 0, sort_by: "created_at", sort_order: "asc" }))
            .total,
          0,
        );
        await s.runs.claimNext();
        // Ending the run deletes its temporary thread in the same transaction (issue 15: a crash
        // between the two left it behind).
        assert.equal(
          (await s.runs.complete({ run_id: r.run.run_id, status: "success", hasNext: false }))?.status,
          "success",
        );
        assert.equal(await s.threads.get(ORG, t), null);
        assert.equal(await s.runs.get(ORG, null, r.run.run_id), null);

        // So does every other way a run ends: cancel while pending, rollback, abandoned by recovery.
        const admitTemp = async () => {
          const b = admission(a, randomUUID(), { stateless: true, if_not_exists: "reject" });
          return (await s.runs.admit(ORG, { ...b, kwargs: { ...b.kwargs, temporary: true } })).run;
        };
        const endings: Record<string, (run: Run) => Promise<unknown>> = {
          "cancel while pending": (run) => s.runs.cancelPending(run.run_id, "interrupt"),
          rollback: async (run) => {
            await s.runs.claimNext();
            await s.runs.completeRolledBack(run.run_id);
          },
          "abandoned by recovery": async () => {
            await s.runs.claimNext();
            await s.runs.recoverInterrupted(1); // its first attempt was the last allowed: RunAbandoned
          },
        };
        for (const [how, end] of Object.entries(endings)) {
          const run = await admitTemp();
          await end(run);
          assert.equal(await s.threads.get(ORG, run.thread_id), null, `${how}: thread gone`);
          assert.equal(await s.runs.get(ORG, null, run.run_id), null, `${how}: run gone`);
        }
      }),
    );
  });

  if (adapter.name === "postgres") {
    test(
      "a claim that skips a thread locked by another transaction asks to be retried soon (no lost wake-up)",
      withStorage(async (s, fx) => {
        const a = await makeAssistant(s);
        const t = randomUUID();
        const r = await s.runs.admit(ORG, admission(a, t));
        const blocker = new pg.Client({ connectionString: PG_URI });
        await blocker.connect();
        try {
          await blocker.query("BEGIN");
          await blocker.query(`SELECT 1 FROM ${fx.schema}.threads WHERE thread_id = $1 FOR UPDATE`, [t]);
          const claimed = await s.runs.claimNext();
          assert.equal(claimed.run, null);
          assert.ok(
            claimed.nextDueAt && claimed.nextDueAt.getTime() - Date.now() < 1000,
            String(claimed.nextDueAt),
          );
          await blocker.query("ROLLBACK");
          assert.equal((await s.runs.claimNext()).run?.run_id, r.run.run_id);
        } finally {
          await blocker.end();
        }
      }),
    );
  }
});
