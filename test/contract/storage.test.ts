/**
 * The storage port contract, run against every adapter (test/helpers/adapters.ts): the same tests,
 * once on SQLite and once on Postgres (when `HANGAR_TEST_POSTGRES_URI` is set; see there).
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { type Checkpoint, emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import fc from "fast-check";
import pg from "pg";
import { HangarError } from "../../src/errors.js";
import { type AuthFilter, matchesFilter } from "../../src/storage/filter.js";
import type { Run, Storage, Thread } from "../../src/storage/ports.js";
import { openPostgresStorage } from "../../src/storage/sql/index.js";
import { MIGRATIONS } from "../../src/storage/sql/migrations.js";
import { ADAPTERS, type Fixture, PG_URI } from "../helpers/adapters.js";
import { admission, makeAssistant, ORG } from "../helpers/storage-records.js";

function checkpoint(id: string, values: Record<string, unknown> = {}): Checkpoint {
  const cp = emptyCheckpoint();
  cp.id = id;
  cp.channel_values = values;
  return cp;
}

async function putCheckpoint(storage: Storage, threadId: string, runId: string, id: string) {
  await storage.checkpointer.put(
    { configurable: { thread_id: threadId, checkpoint_ns: "" }, metadata: { run_id: runId } },
    checkpoint(id, { n: id }),
    { source: "loop", step: 0, parents: {} },
    {},
  );
}

async function checkpointIds(storage: Storage, threadId: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const t of storage.checkpointer.list({ configurable: { thread_id: threadId } }))
    ids.push(t.config.configurable?.checkpoint_id as string);
  return ids;
}

/** A cron to create: every minute, due at 1,000, no thread; `over` changes any field. */
const cronInput = (assistantId: string, over: Record<string, unknown> = {}) => ({
  cron_id: randomUUID(),
  assistant_id: assistantId,
  thread_id: null,
  user_id: null,
  schedule: "* * * * *",
  timezone: null,
  end_time: null,
  enabled: true,
  on_run_completed: null,
  payload: { input: { x: 1 } },
  metadata: { k: "v" },
  next_run_at: 1_000,
  ...over,
});

/** Postgres' jsonb equality: same kind, numbers by value, arrays in order, objects whatever their key order. */
function jsonbEqual(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b))
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonbEqual(x, b[i]))
    );
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a);
    return (
      ka.length === Object.keys(b).length &&
      ka.every((k) => k in b && jsonbEqual((a as any)[k], (b as any)[k]))
    );
  }
  return a === b;
}

/** The metadata filters' containment (the dialect's `jsonContains`): objects key by key, the rest equal. */
function jsonbContains(doc: unknown, filter: Record<string, unknown>): boolean {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return false;
  return Object.entries(filter).every(([k, f]) => {
    if (!(k in doc)) return false;
    const v = (doc as Record<string, unknown>)[k];
    return f !== null && typeof f === "object" && !Array.isArray(f)
      ? jsonbContains(v, f as Record<string, unknown>)
      : jsonbEqual(v, f);
  });
}

const isKind = (kind: string) => (err: unknown) => err instanceof HangarError && err.kind === kind;

async function statuses(storage: Storage, threadId: string): Promise<string[]> {
  const runs = await storage.runs.list(ORG, threadId, { limit: 100, offset: 0 });
  return runs.map((r) => r.status).sort();
}

/** Claims until nothing is due. */
async function drain(storage: Storage): Promise<string[]> {
  const claimed: string[] = [];
  for (;;) {
    const { run } = await storage.runs.claimNext();
    if (!run) return claimed;
    claimed.push(run.run_id);
  }
}

for (const adapter of ADAPTERS) {
  describe(`storage contract: ${adapter.name}`, { skip: adapter.skip }, () => {
    /** Runs `fn` against a fresh database of this adapter. */
    const withStorage = (fn: (storage: Storage, fx: Fixture) => Promise<void>) => async () => {
      const fx = await adapter.open();
      try {
        await fn(fx.storage, fx);
      } finally {
        await fx.close();
      }
    };

    describe("admission", () => {
      test(
        "enqueue: creates the thread, queues runs in order, thread busy",
        withStorage(async (s) => {
          const a = await makeAssistant(s);
          const t = randomUUID();
          const r1 = await s.runs.admit(ORG, admission(a, t, { metadata: { k: 1 } }));
          const r2 = await s.runs.admit(ORG, admission(a, t));
          assert.equal(r1.run.status, "pending");
          assert.deepEqual(r1.run.metadata, { k: 1 });
          assert.deepEqual(r2.runningToStop, []);
          const thread = await s.threads.get(ORG, t);
          assert.equal(thread?.status, "busy");
          assert.equal(thread?.metadata.graph_id, "agent");
          assert.equal(thread?.metadata.assistant_id, a.assistant_id);
          const runs = await s.runs.list(ORG, t, { limit: 10, offset: 0 });
          assert.deepEqual(
            runs.map((r) => r.run_id),
            [r2.run.run_id, r1.run.run_id],
          );
          assert.deepEqual(await s.runs.get(ORG, t, r1.run.run_id), r1.run);
          assert.equal(await s.runs.get("other-org", null, r1.run.run_id), null);
        }),
      );

      test(
        "if_not_exists=reject on a missing thread, and another organization's thread: not found",
        withStorage(async (s) => {
          const a = await makeAssistant(s);
          await assert.rejects(
            s.runs.admit(ORG, admission(a, randomUUID(), { if_not_exists: "reject" })),
            isKind("not_found"),
          );
          const t = randomUUID();
          await s.threads.create("org-b", { thread_id: t, metadata: {} }, "raise");
          await assert.rejects(s.runs.admit(ORG, admission(a, t)), isKind("not_found"));
        }),
      );

      test(
        "reject: conflict while a run is pending or running, accepted once the thread is idle",
        withStorage(async (s) => {
          const a = await makeAssistant(s);
          const t = randomUUID();
          await s.runs.admit(ORG, admission(a, t));
          await assert.rejects(
            s.runs.admit(ORG, admission(a, t, { multitask_strategy: "reject" })),
            isKind("conflict"),
          );
          const { run } = await s.runs.claimNext();
          await assert.rejects(
            s.runs.admit(ORG, admission(a, t, { multitask_strategy: "reject" })),
            isKind("conflict"),
          );
          await s.runs.complete({ run_id: run!.run_id, status: "success", values: { x: 1 }, hasNext: false });
          const ok = await s.runs.admit(ORG, admission(a, t, { multitask_strategy: "reject" }));
          assert.equal(ok.run.status, "pending");
        }),
      );

      test(
        "interrupt: pending priors interrupted, the running one returned to stop",
        withStorage(async (s) => {
          const a = await makeAssistant(s);
          const t = randomUUID();
          const first = await s.runs.admit(ORG, admission(a, t));
          await s.runs.claimNext();
          const second = await s.runs.admit(ORG, admission(a, t));
          const third = await s.runs.admit(ORG, admission(a, t, { multitask_strategy: "interrupt" }));
          assert.deepEqual(
            third.runningToStop.map((r) => r.run_id),
            [first.run.run_id],
          );
          assert.deepEqual(
            third.pendingSettled.map((r) => r.run_id),
            [second.run.run_id],
          );
          assert.equal((await s.runs.get(ORG, t, second.run.run_id))?.status, "interrupted");
          assert.equal((await s.runs.get(ORG, t, third.run.run_id))?.status, "pending");
        }),
      );

      test(
        "rollback: pending priors deleted with their checkpoints, the running one returned to stop",
        withStorage(async (s) => {
          const a = await makeAssistant(s);
          const t = randomUUID();
          const first = await s.runs.admit(ORG, admission(a, t));
          await s.runs.claimNext();
          const second = await s.runs.admit(ORG, admission(a, t));
          await putCheckpoint(s, t, second.run.run_id, "cp-0002");
          await putCheckpoint(s, t, first.run.run_id, "cp-0001");
          const third = await s.runs.admit(ORG, admission(a, t, { multitask_strategy: "rollback" }));
          assert.deepEqual(
            third.runningToStop.map((r) => r.run_id),
            [first.run.run_id],
          );
          assert.deepEqual(
            third.pendingSettled.map((r) => r.run_id),
            [second.run.run_id],
          );
          assert.equal(await s.runs.get(ORG, t, second.run.run_id), null);
          assert.deepEqual(await checkpointIds(s, t), ["cp-0001"]);
        }),
      );

      for (const [strategy, expected] of [
        ["reject", { admitted: 1, statuses: ["pending"] }],
        ["enqueue", { admitted: 10, statuses: Array(10).fill("pending") }],
        ["interrupt", { admitted: 10, statuses: [...Array(9).fill("interrupted"), "pending"] }],
        ["rollback", { admitted: 10, statuses: ["pending"] }],
      ] as const)
        for (const existing of [false, true])
          test(
            `10 concurrent admissions on one ${existing ? "existing" : "new"} thread, ${strategy}: exactly the right outcome`,
            withStorage(async (s, fx) => {
              const a = await makeAssistant(s);
              const t = randomUUID();
              if (existing) await s.threads.create(ORG, { thread_id: t, metadata: {} }, "raise");
              const views = [s, await fx.another(), await fx.another()];
              const results = await Promise.allSettled(
                Array.from({ length: 10 }, (_, i) =>
                  views[i % views.length].runs.admit(ORG, admission(a, t, { multitask_strategy: strategy })),
                ),
              );
              const admitted = results.filter((r) => r.status === "fulfilled");
              assert.equal(
                admitted.length,
                expected.admitted,
                JSON.stringify(results.filter((r) => r.status === "rejected")),
              );
              for (const r of results)
                if (r.status === "rejected") assert.ok(isKind("conflict")(r.reason), String(r.reason));
              assert.deepEqual(await statuses(s, t), [...expected.statuses]);
              assert.equal((await s.threads.get(ORG, t))?.status, "busy");
            }),
          );
    });

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

    describe("assistants", () => {
      test(
        "versions, setLatest, search and count with metadata containment",
        withStorage(async (s) => {
          const a = await makeAssistant(s, {
            team: "x",
            tags: ["a", "b"],
            nested: { k: 1, deep: { z: true } },
          });
          const b = await makeAssistant(s, { team: "y", tags: ["a"] });
          await assert.rejects(s.assistants.create(ORG, { ...a, metadata: {} }, "raise"), isKind("conflict"));
          assert.equal((await s.assistants.create(ORG, { ...a, metadata: {} }, "do_nothing")).version, 1);

          const v2 = await s.assistants.update(ORG, a.assistant_id, {
            name: "renamed",
            metadata: { extra: 1 },
          });
          assert.equal(v2?.version, 2);
          assert.equal(v2?.name, "renamed");
          assert.deepEqual(v2?.metadata, {
            team: "x",
            tags: ["a", "b"],
            nested: { k: 1, deep: { z: true } },
            extra: 1,
          });
          const versions = await s.assistants.versions(ORG, a.assistant_id, { limit: 10, offset: 0 });
          assert.deepEqual(
            versions.map((v) => v.version),
            [2, 1],
          );
          assert.deepEqual(
            (
              await s.assistants.versions(ORG, a.assistant_id, {
                metadata: { extra: 1 },
                limit: 10,
                offset: 0,
              })
            ).map((v) => v.version),
            [2],
          );
          const back = await s.assistants.setLatest(ORG, a.assistant_id, 1);
          assert.equal(back?.version, 1);
          assert.equal(back?.name, "agent");
          assert.equal((await s.assistants.get(ORG, a.assistant_id))?.name, "agent");
          assert.equal(await s.assistants.setLatest(ORG, a.assistant_id, 9), null);

          const ids = async (metadata: Record<string, unknown>) =>
            (
              await s.assistants.search(ORG, {
                metadata,
                limit: 10,
                offset: 0,
                sort_by: "created_at",
                sort_order: "asc",
              })
            ).items.map((x) => x.assistant_id);
          assert.deepEqual(await ids({ team: "x" }), [a.assistant_id]);
          assert.deepEqual(await ids({ nested: { k: 1 } }), [a.assistant_id]);
          assert.deepEqual(await ids({ nested: { deep: { z: true } } }), [a.assistant_id]);
          assert.deepEqual(await ids({ nested: {} }), [a.assistant_id]);
          assert.deepEqual(await ids({ tags: ["a"] }), [b.assistant_id], "arrays match only when equal");
          assert.equal((await ids({ tags: ["a", "b"] })).length, 1);
          assert.deepEqual(await ids({ team: null }), []);
          assert.equal(await s.assistants.count(ORG, { metadata: { tags: ["a"] } }), 1);
          assert.equal(await s.assistants.count(ORG, {}), 2);
          assert.equal(await s.assistants.count(ORG, { name: "AGE" }), 2);
          assert.equal(await s.assistants.count("org-b", {}), 0);

          const system = await s.assistants.ensureSystem({ ...a, assistant_id: randomUUID(), metadata: {} });
          assert.ok(
            await s.assistants.get("org-b", system.assistant_id),
            "system assistants are visible to all",
          );
          await assert.rejects(
            s.assistants.update("org-b", system.assistant_id, { name: "mine" }),
            isKind("conflict"),
          );
          await assert.rejects(s.assistants.setLatest("org-b", system.assistant_id, 1), isKind("conflict"));
          assert.equal((await s.assistants.update(ORG, system.assistant_id, { name: "ops" }))?.version, 2);
          assert.equal(
            (await s.assistants.delete("org-b", system.assistant_id, { deleteThreads: false })).deleted,
            false,
          );
          assert.equal(
            (await s.assistants.delete(ORG, a.assistant_id, { deleteThreads: false })).deleted,
            true,
          );
          assert.equal(await s.assistants.get(ORG, a.assistant_id), null);
        }),
      );

      test(
        "delete: with its threads (their runs and checkpoints), its queued runs elsewhere; running runs stay",
        withStorage(async (s) => {
          const [a, b, c] = [await makeAssistant(s), await makeAssistant(s), await makeAssistant(s)];
          const [t1, t2, t3] = [randomUUID(), randomUUID(), randomUUID()];
          const r1 = (await s.runs.admit(ORG, admission(a, t1))).run;
          assert.equal((await s.runs.claimNext()).run?.run_id, r1.run_id);
          await putCheckpoint(s, t1, r1.run_id, "1");
          const rB1 = (await s.runs.admit(ORG, admission(b, t2))).run;
          assert.equal((await s.runs.claimNext()).run?.run_id, rB1.run_id);
          const rA = (await s.runs.admit(ORG, admission(a, t2))).run; // queued behind rB1
          const rB2 = (await s.runs.admit(ORG, admission(b, t2))).run; // t2 is b's again
          const rC = (await s.runs.admit(ORG, admission(c, t3))).run;
          const elsewhere = randomUUID(); // another organization's thread naming the same assistant
          await s.threads.create(
            "org-b",
            { thread_id: elsewhere, metadata: { assistant_id: a.assistant_id } },
            "raise",
          );

          assert.deepEqual(await s.assistants.delete(ORG, a.assistant_id, { deleteThreads: true }), {
            deleted: true,
            runningRunIds: [r1.run_id],
            pendingRunIds: [rA.run_id],
          });
          assert.equal(await s.threads.get(ORG, t1), null, "its thread goes");
          assert.equal(await s.runs.get(ORG, null, r1.run_id), null, "with its runs");
          assert.deepEqual(await checkpointIds(s, t1), [], "and checkpoints");
          assert.ok(await s.threads.get("org-b", elsewhere), "other organizations' threads stay");
          assert.deepEqual(await statuses(s, t2), ["pending", "running"], "its queued run elsewhere goes");
          assert.equal((await s.threads.get(ORG, t2))?.status, "busy");

          assert.deepEqual(await s.assistants.delete(ORG, c.assistant_id, { deleteThreads: false }), {
            deleted: true,
            runningRunIds: [],
            pendingRunIds: [rC.run_id],
          });
          assert.equal((await s.threads.get(ORG, t3))?.status, "idle", "a thread left with nothing settles");

          assert.deepEqual(await s.assistants.delete(ORG, b.assistant_id, { deleteThreads: false }), {
            deleted: true,
            runningRunIds: [rB1.run_id],
            pendingRunIds: [rB2.run_id],
          });
          assert.deepEqual(await statuses(s, t2), ["running"], "an executing run keeps its row");
          assert.equal((await s.threads.get(ORG, t2))?.status, "busy");
          assert.equal(
            (await s.assistants.delete(ORG, b.assistant_id, { deleteThreads: true })).deleted,
            false,
          );
        }),
      );

      test(
        "search: names match as literal substrings; ties keep creation order both ways across pages",
        withStorage(async (s) => {
          const named = async (name: string) =>
            (
              await s.assistants.create(
                ORG,
                {
                  assistant_id: randomUUID(),
                  graph_id: "agent",
                  name,
                  description: null,
                  config: {},
                  context: {},
                  metadata: {},
                },
                "raise",
              )
            ).assistant_id;
          const ids = [await named("Same"), await named("same"), await named("SAME")];
          const odd = [await named("50%_off\\x"), await named("500 off")];
          assert.equal(await s.assistants.count(ORG, { name: "0%_" }), 1, "% and _ are literal");
          assert.equal(await s.assistants.count(ORG, { name: "_" }), 1);
          assert.equal(await s.assistants.count(ORG, { name: "f\\" }), 1);
          assert.equal(await s.assistants.count(ORG, { name: "SAm" }), 3, "case-insensitive");
          assert.equal(await s.assistants.count(ORG, { name: "" }), 5);
          const page = async (sort_order: "asc" | "desc", offset: number) =>
            await s.assistants.search(ORG, {
              name: "same",
              sort_by: "graph_id",
              sort_order,
              limit: 2,
              offset,
            });
          for (const order of ["asc", "desc"] as const) {
            const all = [...(await page(order, 0)).items, ...(await page(order, 2)).items];
            assert.deepEqual(
              all.map((x) => x.assistant_id),
              order === "asc" ? ids : [...ids].reverse(),
            );
            assert.equal((await page(order, 2)).total, 3);
          }
          assert.equal(odd.length, 2);
        }),
      );
    });

    describe("threads", () => {
      test(
        "authorization filters ($eq, $contains, scalars) select in SQL exactly the rows matchesFilter accepts",
        withStorage(async (s) => {
          // Metadata and filters drawn from a small domain, so that matches and near misses both occur.
          const scalar = fc.oneof(
            fc.constantFrom("a", "b", "1", ""),
            fc.constantFrom(1, 2, 1.5),
            fc.boolean(),
          );
          const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.constant(null));
          const metadata = fc.dictionary(fc.constantFrom("owner", "team", "tags"), value, { maxKeys: 3 });
          const condition = fc.oneof(
            scalar,
            scalar.map(($eq) => ({ $eq })),
            fc
              .oneof(scalar, fc.array(scalar, { minLength: 1, maxLength: 2 }))
              .map(($contains) => ({ $contains })),
          );
          const filter = fc.dictionary(fc.constantFrom("owner", "team", "tags"), condition, {
            minKeys: 1,
            maxKeys: 2,
          });
          const rows = fc.sample(metadata, { numRuns: 40, seed: 15 });
          const threads: Thread[] = [];
          for (const m of rows)
            threads.push(await s.threads.create(ORG, { thread_id: randomUUID(), metadata: m }, "raise"));
          const query = { limit: 1000, offset: 0, sort_by: "created_at", sort_order: "asc" } as const;
          for (const f of fc.sample(filter, { numRuns: 60, seed: 16 })) {
            const auth = f as AuthFilter;
            const expected = threads.filter((t) => matchesFilter(t.metadata, auth)).map((t) => t.thread_id);
            const found = (await s.threads.search(ORG, { ...query, auth })).items.map((t) => t.thread_id);
            assert.deepEqual(found, expected, `filter ${JSON.stringify(f)}`);
            assert.equal(await s.threads.count(ORG, { auth }), expected.length);
          }
        }),
      );

      test(
        "metadata containment of any value shape selects exactly what jsonb's @> selects, never an error",
        withStorage(async (s) => {
          // Rows and filters hold scalars, arrays and objects at the same keys, so every filter meets
          // every kind of stored value (a scalar where it has an array was an SQLite error).
          const scalar = fc.oneof(fc.constantFrom("a", "1", ""), fc.constantFrom(1, 1.5), fc.boolean());
          const leaf = fc.oneof(scalar, fc.constant(null), fc.array(scalar, { maxLength: 2 }));
          const value = fc.oneof(
            leaf,
            fc.dictionary(fc.constantFrom("x", "y"), leaf, { maxKeys: 2 }),
            fc.array(fc.dictionary(fc.constantFrom("x"), scalar, { maxKeys: 1 }), { maxLength: 1 }),
          );
          const doc = fc.dictionary(fc.constantFrom("owner", "tags", "o.k"), value, { maxKeys: 3 });
          const threads: Thread[] = [];
          for (const m of fc.sample(doc, { numRuns: 40, seed: 25 }))
            threads.push(await s.threads.create(ORG, { thread_id: randomUUID(), metadata: m }, "raise"));
          // Each filter is also one of the rows' own metadata now and then: matches occur.
          const filters = [
            ...fc.sample(doc, { numRuns: 60, seed: 26 }),
            ...threads.slice(0, 10).map((t) => t.metadata),
          ];
          const query = { limit: 1000, offset: 0, sort_by: "created_at", sort_order: "asc" } as const;
          for (const metadata of filters) {
            const expected = threads
              .filter((t) => jsonbContains(t.metadata, metadata))
              .map((t) => t.thread_id);
            const found = (await s.threads.search(ORG, { ...query, metadata })).items.map((t) => t.thread_id);
            assert.deepEqual(found, expected, `filter ${JSON.stringify(metadata)}`);
            assert.equal(await s.threads.count(ORG, { metadata }), expected.length);
          }
        }),
      );

      test(
        "create, patch, search and count by metadata, values and status, copy with checkpoints, delete",
        withStorage(async (s) => {
          const a = await makeAssistant(s);
          const t1 = await s.threads.create(
            ORG,
            { thread_id: randomUUID(), metadata: { user: "u1", n: 1 } },
            "raise",
          );
          const t2 = await s.threads.create(
            ORG,
            { thread_id: randomUUID(), metadata: { user: "u2" } },
            "raise",
          );
          await assert.rejects(
            s.threads.create(ORG, { thread_id: t1.thread_id, metadata: {} }, "raise"),
            isKind("conflict"),
          );
          await assert.rejects(
            s.threads.create("org-b", { thread_id: t1.thread_id, metadata: {} }, "do_nothing"),
            isKind("conflict"),
          );
          assert.equal(
            (await s.threads.create(ORG, { thread_id: t1.thread_id, metadata: {} }, "do_nothing")).metadata
              .user,
            "u1",
          );
          assert.equal(t1.status, "idle");
          assert.equal(t1.values, undefined);
          assert.deepEqual((await s.threads.patch(ORG, t1.thread_id, { n: 2, more: true }))?.metadata, {
            user: "u1",
            n: 2,
            more: true,
          });
          assert.equal(await s.threads.patch("org-b", t1.thread_id, { n: 3 }), null);
          await s.threads.recordState(ORG, t2.thread_id, {
            values: { messages: [{ role: "user", content: "hi" }], topic: "x" },
            interrupts: {},
            hasNext: false,
          });

          const search = (q: Record<string, unknown>) =>
            s.threads.search(ORG, { limit: 10, offset: 0, sort_by: "created_at", sort_order: "desc", ...q });
          assert.deepEqual(
            (await search({ metadata: { user: "u1" } })).items.map((t) => t.thread_id),
            [t1.thread_id],
          );
          assert.deepEqual(
            (await search({ values: { topic: "x" } })).items.map((t) => t.thread_id),
            [t2.thread_id],
          );
          const all = await search({});
          assert.deepEqual(
            all.items.map((t) => t.thread_id),
            [t2.thread_id, t1.thread_id],
          );
          assert.equal(all.total, 2);
          assert.deepEqual(
            (await search({ ids: [t1.thread_id] })).items.map((t) => t.thread_id),
            [t1.thread_id],
          );
          assert.equal(await s.threads.count(ORG, { status: "idle" }), 2);
          assert.equal(await s.threads.count(ORG, { metadata: { user: "nobody" } }), 0);
          assert.equal(
            (await s.threads.search(ORG, { limit: 1, offset: 1, sort_by: "created_at", sort_order: "desc" }))
              .items[0].thread_id,
            t1.thread_id,
          );

          const r = await s.runs.admit(ORG, admission(a, t2.thread_id));
          await putCheckpoint(s, t2.thread_id, r.run.run_id, "cp-0001");
          await putCheckpoint(s, t2.thread_id, r.run.run_id, "cp-0002");
          const copyId = randomUUID();
          const copy = await s.threads.copy(ORG, t2.thread_id, copyId);
          assert.equal(copy?.status, "idle", "a busy thread's copy is idle");
          assert.equal(copy?.metadata.thread_id, copyId);
          assert.deepEqual(copy?.values, { messages: [{ role: "user", content: "hi" }], topic: "x" });
          assert.deepEqual(await checkpointIds(s, copyId), ["cp-0002", "cp-0001"]);
          const tuple = await s.checkpointer.getTuple({ configurable: { thread_id: copyId } });
          assert.equal(tuple?.checkpoint.id, "cp-0002");
          assert.equal(await s.threads.copy("org-b", t2.thread_id, randomUUID()), null);

          const deleted = await s.threads.delete(ORG, t2.thread_id);
          // The pending run it had is reported by the delete itself (its readers are released from that).
          assert.deepEqual(deleted, { deleted: true, runningRunIds: [], pendingRunIds: [r.run.run_id] });
          assert.deepEqual(await checkpointIds(s, t2.thread_id), []);
          assert.equal(await s.runs.get(ORG, null, r.run.run_id), null);
          assert.deepEqual(await checkpointIds(s, copyId), ["cp-0002", "cp-0001"], "the copy keeps its own");
          assert.deepEqual(await s.threads.delete(ORG, t2.thread_id), {
            deleted: false,
            runningRunIds: [],
            pendingRunIds: [],
          });
        }),
      );

      test(
        "admission's new thread, bindGraph, copy onto an existing id, concurrent patches, JSON null values",
        withStorage(async (s, fx) => {
          const a = await makeAssistant(s);
          // A thread the admission creates is bound to the assistant's graph over the request's metadata,
          // takes the run's thread config, and is busy: as an existing thread the admission updates.
          const t = randomUUID();
          await s.runs.admit(
            ORG,
            admission(a, t, {
              metadata: { graph_id: "other", k: 1 },
              thread_config: { configurable: { x: 1 } },
            }),
          );
          const created = await s.threads.get(ORG, t);
          assert.deepEqual(created?.metadata, { graph_id: "agent", assistant_id: a.assistant_id, k: 1 });
          assert.deepEqual(created?.config, { configurable: { x: 1 } });
          assert.equal(created?.status, "busy");
          await s.runs.admit(ORG, admission(a, t, { thread_config: { configurable: { x: 2 } } }));
          assert.deepEqual((await s.threads.get(ORG, t))?.config, { configurable: { x: 2 } });
          await s.runs.admit(ORG, admission(a, t));
          assert.deepEqual((await s.threads.get(ORG, t))?.config, { configurable: { x: 2 } }, "kept");

          const u = await s.threads.create(ORG, { thread_id: randomUUID(), metadata: { k: "v" } }, "raise");
          await s.threads.bindGraph(ORG, u.thread_id, "g2", "a2");
          await s.threads.bindGraph("org-b", u.thread_id, "g3", "a3");
          assert.deepEqual((await s.threads.get(ORG, u.thread_id))?.metadata, {
            k: "v",
            graph_id: "g2",
            assistant_id: "a2",
          });

          await assert.rejects(s.threads.copy(ORG, u.thread_id, t), isKind("conflict"));

          // Patches of one thread from several connections at once: every key lands.
          const views = [s, await fx.another(), await fx.another()];
          await Promise.all(
            Array.from({ length: 12 }, (_, i) =>
              views[i % views.length].threads.patch(ORG, u.thread_id, { [`p${i}`]: i }),
            ),
          );
          const patched = (await s.threads.get(ORG, u.thread_id))?.metadata ?? {};
          for (let i = 0; i < 12; i++) assert.equal(patched[`p${i}`], i);

          // A state of JSON null is a value (the thread has values), unlike no state at all.
          await s.threads.recordState(ORG, u.thread_id, { values: null, interrupts: {}, hasNext: false });
          const nulled = await s.threads.get(ORG, u.thread_id);
          assert.ok(nulled && "values" in nulled && nulled.values === null);
          assert.equal(
            "values" in (await s.threads.create(ORG, { thread_id: randomUUID(), metadata: {} }, "raise")),
            false,
          );
        }),
      );
    });

    describe("auth", () => {
      test(
        "keys: create, find, count, revoke by prefix or id, organizations",
        withStorage(async (s) => {
          const k1 = await s.auth.createKey("org-a", "hash-1", "hk_aaaa");
          await s.auth.createKey("org-b", "hash-2", "hk_bbbb");
          await s.auth.createKey("org-b", "hash-3", "hk_bbbb");
          assert.deepEqual(await s.auth.findActiveKey("hash-1"), { id: k1.id, org_id: "org-a" });
          assert.equal(await s.auth.findActiveKey("nope"), null);
          assert.equal(await s.auth.countActiveKeys(), 3);
          await assert.rejects(s.auth.revokeKey("hk_bbbb"), isKind("conflict"));
          const revoked = await s.auth.revokeKey("hk_aaaa");
          assert.equal(revoked?.id, k1.id);
          assert.ok(revoked?.revoked_at);
          assert.equal(await s.auth.findActiveKey("hash-1"), null);
          assert.equal(await s.auth.revokeKey("missing"), null);
          assert.equal((await s.auth.listKeys()).length, 3);
          await s.sandboxes.setStorageQuota("org-c", 1024);
          assert.deepEqual(await s.auth.listOrgs(), [
            { org_id: "org-a", active_keys: 0, sandbox_storage_quota_bytes: null },
            { org_id: "org-b", active_keys: 2, sandbox_storage_quota_bytes: null },
            { org_id: "org-c", active_keys: 0, sandbox_storage_quota_bytes: 1024 },
          ]);
        }),
      );
    });

    describe("checkpointer", () => {
      test(
        "pending writes in (task_path, task_id, idx) order, special channels replace, list filter/before/limit",
        withStorage(async (s) => {
          const cp = s.checkpointer;
          const cfg = (id?: string) => ({
            configurable: { thread_id: "t", checkpoint_ns: "", ...(id ? { checkpoint_id: id } : {}) },
            metadata: { run_id: "r1", user: "u" },
          });
          await cp.put(cfg(), checkpoint("cp-0001"), { source: "input", step: -1, parents: {} }, {});
          await cp.put(
            cfg("cp-0001"),
            checkpoint("cp-0002", { v: 2 }),
            { source: "loop", step: 0, parents: {} },
            {},
          );
          await cp.put(
            cfg("cp-0002"),
            checkpoint("cp-0003", { v: 3 }),
            { source: "loop", step: 1, parents: {} },
            {},
          );
          await cp.putWrites(
            cfg("cp-0003"),
            [
              ["b", 2],
              ["a", 1],
            ],
            "task-2",
            "~1",
          );
          await cp.putWrites(cfg("cp-0003"), [["c", 3]], "task-1", "~0");
          await cp.putWrites(cfg("cp-0003"), [["b", "again"]], "task-2", "~1"); // regular writes never overwrite
          await cp.putWrites(cfg("cp-0003"), [["__error__", "first"]], "task-3", "~2");
          await cp.putWrites(cfg("cp-0003"), [["__error__", "second"]], "task-3", "~2"); // special ones do

          const latest = await cp.getTuple({ configurable: { thread_id: "t" } });
          assert.equal(latest?.checkpoint.id, "cp-0003");
          assert.deepEqual(latest?.checkpoint.channel_values, { v: 3 });
          assert.deepEqual(latest?.parentConfig?.configurable?.checkpoint_id, "cp-0002");
          assert.deepEqual(latest?.pendingWrites, [
            ["task-1", "c", 3],
            ["task-2", "b", 2],
            ["task-2", "a", 1],
            ["task-3", "__error__", "second"],
          ]);
          const metadata = (latest?.metadata ?? {}) as Record<string, unknown>;
          assert.equal(metadata.run_id, "r1");
          assert.equal(metadata.user, "u");

          const ids = async (opts: Parameters<typeof cp.list>[1]) => {
            const out: string[] = [];
            for await (const t of cp.list({ configurable: { thread_id: "t" } }, opts))
              out.push(t.checkpoint.id);
            return out;
          };
          assert.deepEqual(await ids({ filter: { source: "loop" } }), ["cp-0003", "cp-0002"]);
          assert.deepEqual(await ids({ filter: { step: 0, user: "u" } }), ["cp-0002"]);
          assert.deepEqual(await ids({ before: { configurable: { checkpoint_id: "cp-0003" } } }), [
            "cp-0002",
            "cp-0001",
          ]);
          assert.deepEqual(await ids({ limit: 1 }), ["cp-0003"]);
          assert.equal(
            await cp.getTuple({ configurable: { thread_id: "t", checkpoint_id: "cp-9999" } }),
            undefined,
          );

          // A fenced run's checkpoints and writes are dropped.
          cp.fenceRun("r2");
          const fenced = {
            configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "cp-0003" },
            metadata: { run_id: "r2" },
          };
          await cp.put(fenced, checkpoint("cp-0004"), { source: "loop", step: 2, parents: {} }, {});
          await cp.putWrites(fenced, [["z", 1]], "task-9");
          assert.equal((await cp.getTuple({ configurable: { thread_id: "t" } }))?.checkpoint.id, "cp-0003");
          assert.equal((await cp.getTuple({ configurable: { thread_id: "t" } }))?.pendingWrites?.length, 4);
          await cp.deleteThread("t");
          assert.equal(await cp.getTuple({ configurable: { thread_id: "t" } }), undefined);
        }),
      );
    });

    describe("store", () => {
      test(
        "write, get, search (namespace, filters, vectors), namespaces, TTL expiry and refresh",
        withStorage(async (s) => {
          const now = Date.parse("2026-01-01T00:00:00Z");
          await s.store.write(
            ORG,
            [
              {
                namespace: ["u1", "notes"],
                key: "a",
                value: { text: "cats", n: 1, tags: ["x"], o: { p: 1, q: 2 } },
                ttlMinutes: null,
                vectors: [{ field: "text", vector: [1, 0, 0] }],
              },
              {
                namespace: ["u1", "notes"],
                key: "b",
                value: { text: "dogs", n: 5, s: "m" },
                ttlMinutes: 1,
                vectors: [{ field: "text", vector: [0, 1, 0] }],
              },
              {
                namespace: ["u1", "prefs"],
                key: "c",
                value: { n: 3, s: "z" },
                ttlMinutes: null,
                vectors: [],
              },
              { namespace: ["u10"], key: "d", value: { n: 9 }, ttlMinutes: null, vectors: [] },
            ],
            now,
          );
          await s.store.write(
            "org-b",
            [{ namespace: ["u1"], key: "z", value: {}, ttlMinutes: null, vectors: [] }],
            now,
          );
          const got = await s.store.get(ORG, ["u1", "notes"], "a", { refreshTtl: false, now });
          assert.deepEqual(got?.value, { text: "cats", n: 1, tags: ["x"], o: { p: 1, q: 2 } });
          assert.deepEqual(got?.namespace, ["u1", "notes"]);
          const search = async (q: Partial<Parameters<Storage["store"]["search"]>[1]>, at = now) =>
            (
              await s.store.search(
                ORG,
                { namespacePrefix: [], filter: [], limit: 10, offset: 0, refreshTtl: false, ...q },
                at,
              )
            ).map((h) => h.key);
          assert.deepEqual((await search({ namespacePrefix: ["u1"] })).sort(), ["a", "b", "c"]);
          assert.deepEqual(
            await search({ filter: [{ field: "n", op: "gt", value: 2 }] }).then((k) => k.sort()),
            ["b", "c", "d"],
          );
          assert.deepEqual(await search({ filter: [{ field: "s", op: "lt", value: "n" }] }), ["b"]);
          assert.deepEqual((await search({ filter: [{ field: "n", op: "ne", value: 1 }] })).sort(), [
            "b",
            "c",
            "d",
          ]);
          assert.deepEqual((await search({ filter: [{ field: "n", op: "in", value: [1, 9] }] })).sort(), [
            "a",
            "d",
          ]);
          assert.deepEqual((await search({ filter: [{ field: "n", op: "nin", value: [1, 9] }] })).sort(), [
            "b",
            "c",
          ]);
          assert.deepEqual(await search({ filter: [{ field: "o", op: "eq", value: { p: 1 } }] }), ["a"]);
          assert.deepEqual(await search({ filter: [{ field: "tags", op: "eq", value: ["x"] }] }), ["a"]);
          const ranked = await s.store.search(
            ORG,
            {
              namespacePrefix: ["u1"],
              filter: [],
              limit: 10,
              offset: 0,
              refreshTtl: false,
              queryVector: [0.1, 1, 0],
            },
            now,
          );
          assert.deepEqual(
            ranked.map((h) => h.key),
            ["b", "a", "c"],
          );
          assert.ok(
            Math.abs((ranked[0].score as number) - 1 / Math.sqrt(1.01)) < 1e-6,
            String(ranked[0].score),
          );
          assert.equal(ranked[2].score, null);

          assert.deepEqual(await s.store.listNamespaces(ORG, { limit: 10, offset: 0 }, now), [
            ["u1", "notes"],
            ["u1", "prefs"],
            ["u10"],
          ]);
          assert.deepEqual(
            await s.store.listNamespaces(ORG, { prefix: ["u1"], maxDepth: 1, limit: 10, offset: 0 }, now),
            [["u1"]],
          );
          assert.deepEqual(
            await s.store.listNamespaces(ORG, { suffix: ["prefs"], limit: 10, offset: 0 }, now),
            [["u1", "prefs"]],
          );

          assert.equal(await s.store.nextExpiry(), now + 60_000);
          assert.ok(await s.store.get(ORG, ["u1", "notes"], "b", { refreshTtl: true, now: now + 30_000 }));
          assert.equal(await s.store.nextExpiry(), now + 90_000);
          assert.equal(
            await s.store.get(ORG, ["u1", "notes"], "b", { refreshTtl: false, now: now + 90_000 }),
            null,
          );
          assert.equal(await s.store.sweepExpired(now + 90_000), 1);
          assert.equal(await s.store.nextExpiry(), null);
          await s.store.write(
            ORG,
            [{ namespace: ["u1", "notes"], key: "a", value: null, ttlMinutes: null, vectors: [] }],
            now,
          );
          assert.equal(await s.store.get(ORG, ["u1", "notes"], "a", { refreshTtl: false, now }), null);
        }),
      );
    });

    describe("crons", () => {
      test(
        "create, update, search, due listing, tick claims, cascade on thread delete",
        withStorage(async (s) => {
          const a = await makeAssistant(s);
          const t = await s.threads.create(ORG, { thread_id: randomUUID(), metadata: {} }, "raise");
          const input = (over: Record<string, unknown> = {}) => cronInput(a.assistant_id, over);
          await assert.rejects(s.crons.create(ORG, input({ thread_id: randomUUID() })), isKind("not_found"));
          const c1 = await s.crons.create(ORG, input({ thread_id: t.thread_id, next_run_at: 2_000 }));
          const c2 = await s.crons.create(ORG, input({ next_run_at: null, enabled: false }));
          const c3 = await s.crons.create(ORG, input());
          assert.equal(c1.next_run_date, new Date(2_000).toISOString());
          assert.equal(c2.enabled, false);
          const sorted = await s.crons.search(ORG, {
            limit: 10,
            offset: 0,
            sort_by: "next_run_date",
            sort_order: "desc",
          });
          assert.deepEqual(
            sorted.items.map((c) => c.cron_id),
            [c1.cron_id, c3.cron_id, c2.cron_id],
            "nulls last",
          );
          assert.equal(sorted.total, 3);
          assert.equal(await s.crons.count(ORG, { enabled: true }), 2);
          assert.equal(await s.crons.count(ORG, { metadata: { k: "v" }, thread_id: t.thread_id }), 1);
          assert.deepEqual(
            (await s.crons.listDue(1_500, 10)).map((d) => d.cron.cron_id),
            [c3.cron_id],
          );
          assert.equal(await s.crons.nextDueAt(), 1_000);
          assert.equal(await s.crons.claimTick(c3.cron_id, 1_000, 61_000), true);
          assert.equal(await s.crons.claimTick(c3.cron_id, 1_000, 61_000), false, "a tick is won once");
          const updated = await s.crons.update(ORG, c2.cron_id, {
            enabled: true,
            next_run_at: 500,
            metadata: { k: "w" },
          });
          assert.equal(updated?.enabled, true);
          assert.deepEqual(updated?.metadata, { k: "w" });
          assert.equal(await s.crons.nextDueAt(), 500);
          assert.equal(await s.crons.update("org-b", c2.cron_id, { enabled: false }), null);
          await s.threads.delete(ORG, t.thread_id);
          assert.equal(await s.crons.get(ORG, c1.cron_id), null, "deleting the thread deletes its crons");
          assert.equal(await s.crons.delete(ORG, c2.cron_id), true);
          assert.equal(await s.crons.delete(ORG, c2.cron_id), false);
        }),
      );

      test(
        "a cron needs its assistant; searches keep creation order among ties, NULLs last both ways",
        withStorage(async (s) => {
          const a = await makeAssistant(s);
          const input = (over: Record<string, unknown> = {}) => ({
            cron_id: randomUUID(),
            assistant_id: a.assistant_id,
            thread_id: null,
            user_id: null,
            schedule: "* * * * *",
            timezone: null,
            end_time: null,
            enabled: true,
            on_run_completed: "delete" as const,
            payload: {},
            metadata: {},
            next_run_at: 1_000,
            ...over,
          });
          await assert.rejects(
            s.crons.create(ORG, input({ assistant_id: randomUUID() })),
            isKind("not_found"),
          );
          const ids: string[] = [];
          for (const next_run_at of [5_000, 5_000, null, 5_000])
            ids.push((await s.crons.create(ORG, input({ next_run_at }))).cron_id);
          const order = async (sort_order: "asc" | "desc") => {
            const q = { sort_by: "next_run_date", sort_order, limit: 3 } as const;
            const first = await s.crons.search(ORG, { ...q, offset: 0 });
            const rest = await s.crons.search(ORG, { ...q, offset: 3 });
            assert.equal(first.total, 4);
            return [...first.items, ...rest.items].map((c) => c.cron_id);
          };
          assert.deepEqual(await order("asc"), [ids[0], ids[1], ids[3], ids[2]]);
          assert.deepEqual(await order("desc"), [ids[3], ids[1], ids[0], ids[2]]);
          assert.deepEqual(
            (await s.crons.listDue(5_000, 10)).map((d) => d.cron.cron_id),
            [ids[0], ids[1], ids[3]],
          );
        }),
      );
    });

    describe("records", () => {
      test(
        "a record has the port's fields only (not the table's own: org_id, seq, queue columns), as written and as read",
        withStorage(async (s) => {
          const keys = (record: object | null | undefined) => Object.keys(record ?? {}).sort();
          const a = await makeAssistant(s, { k: 1 });
          const assistantKeys = [
            "assistant_id",
            "config",
            "context",
            "created_at",
            "description",
            "graph_id",
            "metadata",
            "name",
            "updated_at",
            "version",
          ];
          assert.deepEqual(keys(a), assistantKeys);
          assert.deepEqual(await s.assistants.get(ORG, a.assistant_id), a);
          const updated = await s.assistants.update(ORG, a.assistant_id, { metadata: { k: 2 } });
          assert.deepEqual(await s.assistants.get(ORG, a.assistant_id), updated);
          const [version] = await s.assistants.versions(ORG, a.assistant_id, { limit: 1, offset: 0 });
          assert.deepEqual(
            keys(version),
            assistantKeys.filter((k) => k !== "updated_at"),
          );

          const { run } = await s.runs.admit(ORG, admission(a, randomUUID(), { metadata: { m: 1 } }));
          assert.deepEqual(keys(run), [
            "assistant_id",
            "attempt",
            "created_at",
            "kwargs",
            "metadata",
            "multitask_strategy",
            "run_id",
            "status",
            "thread_id",
            "updated_at",
          ]);
          assert.deepEqual(await s.runs.get(ORG, run.thread_id, run.run_id), run);
          const thread = await s.threads.get(ORG, run.thread_id);
          assert.deepEqual(keys(thread), [
            "config",
            "created_at",
            "interrupts",
            "metadata",
            "state_updated_at",
            "status",
            "thread_id",
            "updated_at",
          ]);

          const cron = await s.crons.create(ORG, cronInput(a.assistant_id, { thread_id: run.thread_id }));
          assert.deepEqual(keys(cron), [
            "assistant_id",
            "created_at",
            "cron_id",
            "enabled",
            "end_time",
            "metadata",
            "next_run_date",
            "on_run_completed",
            "payload",
            "schedule",
            "thread_id",
            "timezone",
            "updated_at",
            "user_id",
          ]);
          assert.deepEqual(await s.crons.get(ORG, cron.cron_id), cron);
        }),
      );
    });

    describe("sandboxes", () => {
      test(
        "volumes and templates: names, quota, grow-only, mounts, pages",
        withStorage(async (s) => {
          const GI = 1024 ** 3;
          await s.sandboxes.ensureStorageQuota(ORG, 10 * GI);
          await s.sandboxes.ensureStorageQuota(ORG, 1 * GI);
          assert.deepEqual(await s.sandboxes.storageUsage(ORG), { quota_bytes: 10 * GI, usage_bytes: 0 });
          const vol = (name: string, gi: number) => ({
            id: randomUUID(),
            name,
            size: `${gi}Gi`,
            size_bytes: gi * GI,
            storage_class: "standard",
          });
          const v1 = await s.sandboxes.createVolume(ORG, vol("data", 4));
          assert.equal(v1.status, "created");
          assert.equal((await s.sandboxes.createVolume(ORG, vol("data", 1))).status, "name_taken");
          assert.equal((await s.sandboxes.createVolume(ORG, vol("big", 7))).status, "quota_exceeded");
          await s.sandboxes.createVolume(ORG, vol("logs", 2));
          assert.equal(
            (await s.sandboxes.updateVolume(ORG, "data", { size: { text: "1Gi", bytes: GI } })).status,
            "shrink",
          );
          assert.equal((await s.sandboxes.updateVolume(ORG, "data", { name: "logs" })).status, "name_taken");
          const grown = await s.sandboxes.updateVolume(ORG, "data", {
            name: "data2",
            size: { text: "5Gi", bytes: 5 * GI },
          });
          assert.equal(grown.status, "updated");
          assert.deepEqual(await s.sandboxes.storageUsage(ORG), {
            quota_bytes: 10 * GI,
            usage_bytes: 7 * GI,
          });

          const tpl = (name: string, mounts: string[]) => ({
            id: randomUUID(),
            name,
            image: "python:3.12",
            resources: { cpu: "1", memory: "1Gi" },
            volume_mounts: mounts.map((m, i) => ({ volume_name: m, mount_path: `/mnt/${i}` })),
          });
          assert.deepEqual(await s.sandboxes.createTemplate(ORG, tpl("t1", ["nope", "data2", "nope"])), {
            status: "missing_volumes",
            names: ["nope"],
          });
          const t1 = await s.sandboxes.createTemplate(ORG, tpl("t1", ["data2", "logs"]));
          assert.equal(t1.status, "created");
          assert.equal((await s.sandboxes.createTemplate(ORG, tpl("t1", []))).status, "name_taken");
          await s.sandboxes.createTemplate(ORG, tpl("t2", ["logs"]));
          assert.deepEqual(await s.sandboxes.deleteVolume(ORG, "logs"), {
            status: "in_use",
            templates: ["t1", "t2"],
          });
          await s.sandboxes.updateVolume(ORG, "data2", { name: "data3" });
          assert.deepEqual((await s.sandboxes.getTemplate(ORG, "t1"))?.volume_mounts, [
            { volume_name: "data3", mount_path: "/mnt/0" },
            { volume_name: "logs", mount_path: "/mnt/1" },
          ]);
          assert.equal((await s.sandboxes.renameTemplate(ORG, "t1", "t2")).status, "name_taken");
          assert.equal((await s.sandboxes.renameTemplate(ORG, "t1", "T-one")).status, "updated");
          const page = await s.sandboxes.listTemplates(ORG, { limit: 1, offset: 0, name_contains: "t" });
          assert.deepEqual(
            page.items.map((t) => t.name),
            ["T-one"],
          );
          assert.equal(page.hasMore, true);
          assert.deepEqual(await s.sandboxes.deleteTemplate(ORG, "T-one"), { status: "deleted" });
          assert.deepEqual(await s.sandboxes.deleteTemplate(ORG, "T-one"), { status: "not_found" });
          assert.equal((await s.sandboxes.deleteVolume(ORG, "data3")).status, "deleted");
          const volumes = await s.sandboxes.listVolumes(ORG, { limit: 10, offset: 0 });
          assert.deepEqual(
            volumes.items.map((v) => v.name),
            ["logs"],
          );
          assert.equal(await s.sandboxes.getVolume("org-b", "logs"), null);
        }),
      );

      test(
        "concurrent volume creations against one quota: only what fits is created",
        withStorage(async (s, fx) => {
          const GI = 1024 ** 3;
          await s.sandboxes.setStorageQuota(ORG, 3 * GI);
          const views = [s, await fx.another(), await fx.another()];
          const results = await Promise.all(
            Array.from({ length: 10 }, (_, i) =>
              views[i % views.length].sandboxes.createVolume(ORG, {
                id: randomUUID(),
                name: `v${i}`,
                size: "1Gi",
                size_bytes: GI,
                storage_class: "standard",
              }),
            ),
          );
          assert.equal(results.filter((r) => r.status === "created").length, 3);
          assert.deepEqual(await s.sandboxes.storageUsage(ORG), { quota_bytes: 3 * GI, usage_bytes: 3 * GI });
        }),
      );

      test(
        "boxes and pools: names, warm claims, template in use, TTL fields, pool deletion",
        withStorage(async (s) => {
          const tpl = (name: string, mounts: { volume_name: string; mount_path: string }[] = []) => ({
            id: randomUUID(),
            name,
            image: "hangar/host",
            resources: { cpu: "500m", memory: "512Mi" },
            volume_mounts: mounts,
          });
          await s.sandboxes.ensureStorageQuota(ORG, 1024 ** 4);
          await s.sandboxes.createTemplate(ORG, tpl("plain"));
          await s.sandboxes.createVolume(ORG, {
            id: randomUUID(),
            name: "vol",
            size: "1Gi",
            size_bytes: 1024 ** 3,
            storage_class: "standard",
          });
          await s.sandboxes.createTemplate(
            ORG,
            tpl("stateful", [{ volume_name: "vol", mount_path: "/data" }]),
          );
          const box = (name: string, template_name = "plain", pool_id: string | null = null) => ({
            id: randomUUID(),
            name,
            template_name,
            pool_id,
            ttl_seconds: 0,
            idle_ttl_seconds: 0,
            expires_at: null,
          });

          const b1 = await s.sandboxBoxes.createBox(ORG, box("b1"));
          assert.equal(b1.status, "created");
          if (b1.status !== "created") return;
          assert.equal(b1.box.status, "provisioning");
          assert.equal(b1.box.template_name, "plain");
          assert.equal((await s.sandboxBoxes.createBox(ORG, box("b1"))).status, "name_taken");
          assert.equal(
            (await s.sandboxBoxes.createBox(ORG, box("b2", "ghost"))).status,
            "template_not_found",
          );
          assert.equal((await s.sandboxBoxes.createBox("org-b", box("b1"))).status, "template_not_found");

          assert.equal((await s.sandboxBoxes.setBoxStatus(b1.box.id, "ready", null))?.status, "ready");
          const renamed = await s.sandboxBoxes.updateBox(ORG, "b1", {
            name: "b-one",
            ttl_seconds: 60,
            expires_at: "x",
          });
          assert.equal(renamed.status, "updated");
          if (renamed.status === "updated") {
            assert.equal(renamed.box.id, b1.box.id);
            assert.equal(renamed.box.ttl_seconds, 60);
          }
          await s.sandboxBoxes.touchBox(b1.box.id, "2030-01-01T00:00:00.000Z", null);
          assert.equal(
            (await s.sandboxBoxes.getBoxById(b1.box.id))?.last_active_at,
            "2030-01-01T00:00:00.000Z",
          );
          // Templates follow renames; a template in use cannot be deleted.
          await s.sandboxes.renameTemplate(ORG, "plain", "plain2");
          assert.equal((await s.sandboxBoxes.getBox(ORG, "b-one"))?.template_name, "plain2");
          assert.deepEqual(await s.sandboxes.deleteTemplate(ORG, "plain2"), {
            status: "in_use",
            sandboxes: ["b-one"],
            pools: [],
          });

          // Pools: stateless templates only; warm boxes are hidden and claimed once.
          const mkPool = (name: string, template_name: string) => ({
            id: randomUUID(),
            name,
            template_name,
            replicas: 1,
          });
          assert.equal(
            (await s.sandboxBoxes.createPool(ORG, mkPool("p", "stateful"))).status,
            "template_has_volumes",
          );
          assert.equal(
            (await s.sandboxBoxes.createPool(ORG, mkPool("p", "ghost"))).status,
            "template_not_found",
          );
          const pool = await s.sandboxBoxes.createPool(ORG, mkPool("p", "plain2"));
          assert.equal(pool.status, "created");
          if (pool.status !== "created") return;
          assert.deepEqual(await s.sandboxBoxes.getPool(ORG, "p"), pool.pool);
          assert.equal((await s.sandboxBoxes.createPool(ORG, mkPool("p", "plain2"))).status, "name_taken");
          const warm = await s.sandboxBoxes.createBox(ORG, box("p-warm", "plain2", pool.pool.id));
          assert.equal(warm.status, "created");
          if (warm.status !== "created") return;
          const claim = {
            ttl_seconds: 0,
            idle_ttl_seconds: 0,
            expires_at: null,
            now: new Date().toISOString(),
          };
          assert.equal(
            (await s.sandboxBoxes.claimWarmBox(ORG, "plain2", claim)).status,
            "none",
            "not ready yet",
          );
          await s.sandboxBoxes.setBoxStatus(warm.box.id, "ready", null);
          assert.deepEqual(
            (await s.sandboxBoxes.listBoxes(ORG, { limit: 10, offset: 0 })).items.map((b) => b.name),
            ["b-one"],
          );
          assert.equal(
            (await s.sandboxBoxes.claimWarmBox(ORG, "plain2", { ...claim, name: "b-one" })).status,
            "name_taken",
          );
          const claimed = await s.sandboxBoxes.claimWarmBox(ORG, "plain2", { ...claim, name: "mine" });
          assert.equal(claimed.status, "claimed");
          if (claimed.status === "claimed") {
            assert.equal(claimed.box.id, warm.box.id);
            assert.equal(claimed.box.pool_id, null);
          }
          assert.equal((await s.sandboxBoxes.claimWarmBox(ORG, "plain2", claim)).status, "none");
          assert.deepEqual(await s.sandboxes.deleteTemplate(ORG, "plain2"), {
            status: "in_use",
            sandboxes: ["b-one", "mine"],
            pools: ["p"],
          });

          const again = await s.sandboxBoxes.createBox(ORG, box("p-warm2", "plain2", pool.pool.id));
          assert.equal(again.status, "created");
          const resized = await s.sandboxBoxes.updatePool(ORG, "p", { replicas: 0 });
          assert.equal(resized.status, "updated");
          if (resized.status === "updated")
            assert.deepEqual(await s.sandboxBoxes.getPool(ORG, "p"), resized.pool);
          assert.equal((await s.sandboxBoxes.getPool(ORG, "p"))?.replicas, 0);
          const deleted = await s.sandboxBoxes.deletePool(ORG, "p");
          assert.deepEqual(
            deleted?.boxes.map((b) => b.name),
            ["p-warm2"],
          );
          assert.equal(await s.sandboxBoxes.deletePool(ORG, "p"), null);
          for (const b of await s.sandboxBoxes.listAllBoxes()) await s.sandboxBoxes.deleteBox(b.id);
          assert.equal(await s.sandboxBoxes.deleteBox(b1.box.id), null);
          assert.deepEqual(await s.sandboxes.deleteTemplate(ORG, "plain2"), { status: "deleted" });
        }),
      );

      test(
        "name filters: a case-insensitive substring, LIKE's wildcards taken literally; template pages keep their mounts",
        withStorage(async (s) => {
          await s.sandboxes.ensureStorageQuota(ORG, 1024 ** 4);
          const names = ["a%b", "a_b", "axb", "AXB", "a\\b"];
          for (const name of names) {
            const created = await s.sandboxes.createVolume(ORG, {
              id: randomUUID(),
              name,
              size: "1Gi",
              size_bytes: 1024 ** 3,
              storage_class: "standard",
            });
            assert.equal(created.status, "created");
          }
          const volumes = async (name_contains: string) =>
            (await s.sandboxes.listVolumes(ORG, { limit: 10, offset: 0, name_contains })).items.map(
              (v) => v.name,
            );
          assert.deepEqual(await volumes("%"), ["a%b"]);
          assert.deepEqual(await volumes("_"), ["a_b"]);
          assert.deepEqual(await volumes("\\"), ["a\\b"]);
          assert.deepEqual(await volumes("X"), ["axb", "AXB"]);
          assert.deepEqual(await volumes(""), names);

          const template = (name: string, mounts: string[]) => ({
            id: randomUUID(),
            name,
            image: "hangar/host",
            resources: { cpu: "1", memory: "1Gi" },
            volume_mounts: mounts.map((m, i) => ({ volume_name: m, mount_path: `/m/${i}` })),
          });
          await s.sandboxes.createTemplate(ORG, template("t_1", ["axb", "a%b", "AXB"]));
          await s.sandboxes.createTemplate(ORG, template("t-2", []));
          await s.sandboxes.createTemplate(ORG, template("T_3", ["a_b"]));
          const page = await s.sandboxes.listTemplates(ORG, { limit: 10, offset: 0, name_contains: "_" });
          assert.deepEqual(
            page.items.map((t) => [t.name, t.volume_mounts.map((m) => `${m.volume_name}@${m.mount_path}`)]),
            [
              ["t_1", ["axb@/m/0", "a%b@/m/1", "AXB@/m/2"]],
              ["T_3", ["a_b@/m/0"]],
            ],
          );

          await s.sandboxBoxes.createBox(ORG, {
            id: randomUUID(),
            name: "Box_1",
            template_name: "t-2",
            ttl_seconds: 0,
            idle_ttl_seconds: 0,
            expires_at: null,
          });
          await s.sandboxBoxes.createBox(ORG, {
            id: randomUUID(),
            name: "box-2",
            template_name: "t-2",
            ttl_seconds: 0,
            idle_ttl_seconds: 0,
            expires_at: null,
          });
          const boxes = async (name_contains: string) =>
            (await s.sandboxBoxes.listBoxes(ORG, { limit: 10, offset: 0, name_contains })).items.map(
              (b) => b.name,
            );
          assert.deepEqual(await boxes("_"), ["Box_1"]);
          assert.deepEqual(await boxes("BOX"), ["Box_1", "box-2"]);
          await s.sandboxBoxes.createPool(ORG, {
            id: randomUUID(),
            name: "p_1",
            template_name: "t-2",
            replicas: 0,
          });
          await s.sandboxBoxes.createPool(ORG, {
            id: randomUUID(),
            name: "P-2",
            template_name: "t-2",
            replicas: 0,
          });
          const pools = async (name_contains: string) =>
            (await s.sandboxBoxes.listPools(ORG, { limit: 10, offset: 0, name_contains })).items.map(
              (p) => p.name,
            );
          assert.deepEqual(await pools("_"), ["p_1"]);
          assert.deepEqual(await pools("p"), ["p_1", "P-2"]);
        }),
      );

      test(
        "concurrent warm claims from several connections: each warm box goes to one create",
        withStorage(async (s, fx) => {
          await s.sandboxes.createTemplate(ORG, {
            id: randomUUID(),
            name: "warm",
            image: "hangar/host",
            resources: { cpu: "1", memory: "1Gi" },
            volume_mounts: [],
          });
          const pool = await s.sandboxBoxes.createPool(ORG, {
            id: randomUUID(),
            name: "p",
            template_name: "warm",
            replicas: 3,
          });
          assert.equal(pool.status, "created");
          if (pool.status !== "created") return;
          for (let i = 0; i < 3; i++) {
            const warm = await s.sandboxBoxes.createBox(ORG, {
              id: randomUUID(),
              name: `warm-${i}`,
              template_name: "warm",
              pool_id: pool.pool.id,
              ttl_seconds: 0,
              idle_ttl_seconds: 0,
              expires_at: null,
            });
            assert.equal(warm.status, "created");
            if (warm.status === "created") await s.sandboxBoxes.setBoxStatus(warm.box.id, "ready", null);
          }
          const views = [s, await fx.another(), await fx.another()];
          const results = await Promise.all(
            Array.from({ length: 8 }, (_, i) =>
              views[i % views.length].sandboxBoxes.claimWarmBox(ORG, "warm", {
                name: `mine-${i}`,
                ttl_seconds: 0,
                idle_ttl_seconds: 0,
                expires_at: null,
                now: new Date().toISOString(),
              }),
            ),
          );
          const claimed = results.flatMap((r) => (r.status === "claimed" ? [r.box] : []));
          assert.equal(claimed.length, 3);
          assert.equal(new Set(claimed.map((b) => b.id)).size, 3);
          assert.equal(results.filter((r) => r.status === "none").length, 5);
          assert.deepEqual(await s.sandboxBoxes.poolBoxes(pool.pool.id), []);
          assert.deepEqual(
            (await s.sandboxBoxes.listBoxes(ORG, { limit: 10, offset: 0 })).items.map((b) => b.name).sort(),
            claimed.map((b) => b.name).sort(),
          );
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

      test("migrations: processes opening one schema at once migrate it once", async () => {
        const uri = PG_URI as string;
        const schema = `hangar_test_${randomBytes(6).toString("hex")}`;
        const opened = await Promise.all([1, 2, 3].map(() => openPostgresStorage({ uri, schema })));
        const client = new pg.Client({ connectionString: uri });
        await client.connect();
        try {
          const { rows } = await client.query(`SELECT name FROM ${schema}.hangar_migration ORDER BY name`);
          assert.deepEqual(
            rows.map((r) => r.name),
            MIGRATIONS.map((m) => m.name),
          );
        } finally {
          for (const s of opened) await s.close();
          await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          await client.end();
        }
      });
    }
  });
}
