/**
 * The double-texting (multitask) behaviour, as one suite run against every deployment shape: the
 * embedded server (multitask.test.ts) and the scale-out cluster of API and worker processes
 * (scale-out-multitask.test.ts), so "behaves exactly as in embedded mode" is the same assertions, not a claim.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Client, Run } from "@langchain/langgraph-sdk";
import { type ApiResponse, assertDetail, client, contents, http, human, waitFor } from "../helpers/server.js";

/** Where the suite sends requests: `url` for reads and most calls, `writeUrl` for run creation. */
export interface Deployment {
  url: string;
  /** Another API process of the same deployment (the same as `url` for one server). */
  writeUrl: string;
  stop(): Promise<unknown>;
}

const T = { timeout: 60_000 };
const IN_FLIGHT = new Set(["pending", "running"]);

export function multitaskSuite(title: string, start: () => Promise<Deployment>): void {
  describe(title, () => {
    let h: Deployment;
    let c: Client;
    before(async () => {
      h = await start();
      c = client(h.url);
    });
    after(async () => {
      await h?.stop();
    });

    const slowBody = (text: string, sleepMs: number, extra: Record<string, unknown> = {}) => ({
      assistant_id: "slow",
      input: human(text),
      config: { configurable: { sleep_ms: sleepMs } },
      ...extra,
    });

    /** Admits on `writeUrl`; given an index `i`, even ones go to `url` (the other API process). */
    const createRun = (threadId: string, body: Record<string, unknown>, i = 1) =>
      http<Run>(i % 2 ? h.writeUrl : h.url, "POST", `/threads/${threadId}/runs`, body);

    const status = async (threadId: string, runId: string) => (await c.runs.get(threadId, runId)).status;

    const waitRunning = (threadId: string, runId: string) =>
      waitFor(async () => (await status(threadId, runId)) === "running", { what: `run ${runId} running` });

    /** Waits until no run of the thread is pending or running, and returns them all. */
    const settled = (threadId: string, timeoutMs = 30_000) =>
      waitFor(
        async () => {
          const runs = await c.runs.list(threadId, { limit: 100 });
          return runs.every((r) => !IN_FLIGHT.has(r.status)) ? runs : null;
        },
        { timeoutMs, intervalMs: 100, what: "all runs settled" },
      );

    const messageContents = async (threadId: string) => contents((await c.threads.getState(threadId)).values);

    // ---------------------------------------------------------------------------------------------

    test(
      "enqueue (the default): the second run waits, both succeed, the state has both turns",
      T,
      async () => {
        const t = (await c.threads.create()).thread_id;
        const r1 = await createRun(t, slowBody("first", 800));
        assert.equal(r1.status, 200);
        const r2 = await createRun(t, slowBody("second", 50));
        assert.equal(r2.status, 200);
        assert.equal(r2.body.multitask_strategy, "enqueue");
        await waitRunning(t, r1.body.run_id);
        assert.equal(await status(t, r2.body.run_id), "pending", "the second run waits for the first");
        await c.runs.join(t, r2.body.run_id);
        assert.equal(await status(t, r1.body.run_id), "success");
        assert.equal(await status(t, r2.body.run_id), "success");
        assert.deepEqual(await messageContents(t), [
          "first",
          "slow echo: first",
          "second",
          "slow echo: second",
        ]);
        assert.equal((await c.threads.get(t)).status, "idle");
      },
    );

    test("reject: 409 while a run is in flight, nothing is created, the first run completes", T, async () => {
      const t = (await c.threads.create()).thread_id;
      const r1 = await createRun(t, slowBody("first", 1000));
      const rejected = await createRun(t, slowBody("second", 50, { multitask_strategy: "reject" }));
      assertDetail(rejected as ApiResponse, 409, "reject while running");
      const viaStream = await http(h.url, "POST", `/threads/${t}/runs/stream`, {
        ...slowBody("third", 50),
        multitask_strategy: "reject",
      });
      assertDetail(viaStream, 409, "reject on the stream endpoint");
      const viaWait = await http(h.url, "POST", `/threads/${t}/runs/wait`, {
        ...slowBody("fourth", 50),
        multitask_strategy: "reject",
      });
      assertDetail(viaWait, 409, "reject on the wait endpoint");
      const runs = await c.runs.list(t);
      assert.deepEqual(
        runs.map((r) => r.run_id),
        [r1.body.run_id],
      );
      await c.runs.join(t, r1.body.run_id);
      assert.equal(await status(t, r1.body.run_id), "success");
      assert.deepEqual(await messageContents(t), ["first", "slow echo: first"]);
      // Once the thread is idle, reject admits a run again.
      const after = await createRun(t, slowBody("fifth", 10, { multitask_strategy: "reject" }));
      assert.equal(after.status, 200);
      await c.runs.join(t, after.body.run_id);
    });

    test("reject also refuses while the prior run is still pending", T, async () => {
      const t = (await c.threads.create()).thread_id;
      const r1 = await createRun(t, slowBody("scheduled", 10, { after_seconds: 30 }));
      assertDetail(
        await createRun(t, slowBody("x", 10, { multitask_strategy: "reject" })),
        409,
        "reject vs pending",
      );
      assert.equal((await c.runs.list(t)).length, 1);
      await c.runs.cancel(t, r1.body.run_id, true);
    });

    test(
      "interrupt: the running run stops at once (interrupted, progress kept), the new one continues",
      T,
      async () => {
        const t = (await c.threads.create()).thread_id;
        const r1 = await createRun(t, slowBody("first", 10_000));
        await waitRunning(t, r1.body.run_id);
        // Running is claimed, not yet checkpointed: the progress to keep is its input checkpoint.
        await waitFor(async () => (await messageContents(t)).includes("first"), {
          what: "run 1's input checkpoint",
        });
        const started = Date.now();
        const r2 = await createRun(t, slowBody("second", 50, { multitask_strategy: "interrupt" }));
        assert.equal(r2.status, 200);
        await c.runs.join(t, r2.body.run_id);
        assert.ok(Date.now() - started < 5000, "the first run did not run to completion");
        assert.equal(await status(t, r2.body.run_id), "success");
        await waitFor(async () => (await status(t, r1.body.run_id)) === "interrupted", {
          what: "run 1 interrupted",
        });
        // Run 1's input checkpoint is kept; run 2 continues from it.
        assert.deepEqual(await messageContents(t), ["first", "second", "slow echo: second"]);
        assert.equal((await c.threads.get(t)).status, "idle");
      },
    );

    test("interrupt of a pending run: it ends interrupted without running", T, async () => {
      const t = (await c.threads.create()).thread_id;
      const r1 = await createRun(t, slowBody("scheduled", 10, { after_seconds: 30 }));
      const r2 = await createRun(t, slowBody("now", 10, { multitask_strategy: "interrupt" }));
      await c.runs.join(t, r2.body.run_id);
      assert.equal(await status(t, r1.body.run_id), "interrupted");
      assert.equal(await status(t, r2.body.run_id), "success");
      assert.deepEqual(await messageContents(t), ["now", "slow echo: now"]);
    });

    test(
      "rollback on a running run (the spec's scenario): run 1 is gone, the state holds only run 2",
      T,
      async () => {
        const thread = await c.threads.create();
        const t = thread.thread_id;
        const run1 = await c.runs.create(t, "slow", {
          input: human("first"),
          config: { configurable: { sleep_ms: 10_000 } },
        });
        await waitRunning(t, run1.run_id);
        const run2 = await c.runs.create(t, "slow", {
          input: human("second"),
          config: { configurable: { sleep_ms: 50 } },
          multitaskStrategy: "rollback",
        });
        await c.runs.join(t, run2.run_id);
        assertDetail(
          await http(h.url, "GET", `/threads/${t}/runs/${run1.run_id}`),
          404,
          "run 1 after rollback",
        );
        const state = await c.threads.getState(t);
        const messages = (state.values as any).messages;
        assert.equal(messages.length, 2, JSON.stringify(messages));
        assert.deepEqual(contents(state.values), ["second", "slow echo: second"]);
        const history = await c.threads.getHistory(t, { limit: 100 });
        assert.equal(history.length, 3, "only run 2's checkpoints are left");
        assert.ok(!JSON.stringify(history).includes('"first"'), "no trace of run 1 in the history");
        assert.deepEqual(
          (await c.runs.list(t)).map((r) => r.run_id),
          [run2.run_id],
        );
        assert.equal(await status(t, run2.run_id), "success");
        assert.equal((await c.threads.get(t)).status, "idle");
      },
    );

    test("rollback on a pending run: it is deleted before it runs", T, async () => {
      const t = (await c.threads.create()).thread_id;
      const r1 = await createRun(t, slowBody("scheduled", 10, { after_seconds: 30 }));
      const r2 = await createRun(t, slowBody("now", 10, { multitask_strategy: "rollback" }));
      assert.equal(r2.status, 200);
      await c.runs.join(t, r2.body.run_id);
      assertDetail(
        await http(h.url, "GET", `/threads/${t}/runs/${r1.body.run_id}`),
        404,
        "pending run after rollback",
      );
      assert.deepEqual(await messageContents(t), ["now", "slow echo: now"]);
      assert.equal((await c.runs.list(t)).length, 1);
    });

    test("rollback removes both the running run and the one queued behind it", T, async () => {
      const t = (await c.threads.create()).thread_id;
      // One graph throughout: state and history are read through the thread's current graph.
      await c.runs.wait(t, "slow", { input: human("kept"), config: { configurable: { sleep_ms: 10 } } });
      const keptHistory = await c.threads.getHistory(t, { limit: 100 });
      const r1 = await createRun(t, slowBody("running", 10_000));
      await waitRunning(t, r1.body.run_id);
      const r2 = await createRun(t, slowBody("queued", 10));
      assert.equal(await status(t, r2.body.run_id), "pending");
      const r3 = await createRun(t, slowBody("winner", 10, { multitask_strategy: "rollback" }));
      await c.runs.join(t, r3.body.run_id);
      for (const r of [r1, r2]) {
        assertDetail(await http(h.url, "GET", `/threads/${t}/runs/${r.body.run_id}`), 404, "rolled back");
      }
      assert.deepEqual(await messageContents(t), ["kept", "slow echo: kept", "winner", "slow echo: winner"]);
      assert.equal((await c.runs.list(t)).length, 2);
      // The checkpoints of the run before the rolled-back ones are untouched.
      const keptIds = new Set(keptHistory.map((s) => s.checkpoint.checkpoint_id));
      const history = await c.threads.getHistory(t, { limit: 100 });
      assert.deepEqual(
        history.filter((s) => keptIds.has(s.checkpoint.checkpoint_id)),
        keptHistory,
      );
      assert.equal(history.length, keptHistory.length + 3, "plus exactly the winner's checkpoints");
    });

    // ---------------------------------------------------------------------------------------------
    // 10 concurrent double texts on one thread

    // Half of each burst is admitted by one API process and half by the other (one server: both the same).
    const burst = (threadId: string, strategy: string | undefined, sleepMs: number, tag: string) =>
      Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          createRun(
            threadId,
            slowBody(`${tag}${i}`, sleepMs, strategy ? { multitask_strategy: strategy } : {}),
            i,
          ).then((res) => ({ i, res })),
        ),
      );

    test("10 concurrent enqueue: all succeed, one after the other, in admission order", T, async () => {
      const t = (await c.threads.create()).thread_id;
      const results = await burst(t, undefined, 50, "m");
      for (const { res } of results) assert.equal(res.status, 200, res.text);
      const runs = await settled(t);
      assert.equal(runs.length, 10);
      assert.ok(
        runs.every((r) => r.status === "success"),
        runs.map((r) => r.status).join(","),
      );

      const messages = await messageContents(t);
      assert.equal(messages.length, 20, JSON.stringify(messages));
      const order: number[] = [];
      for (let k = 0; k < 10; k++) {
        const m = /^m(\d)$/.exec(messages[2 * k]!);
        assert.ok(m, `message ${2 * k} is a human turn: ${messages[2 * k]}`);
        assert.equal(messages[2 * k + 1], `slow echo: ${messages[2 * k]}`, "turns do not interleave");
        order.push(Number(m[1]));
      }
      assert.deepEqual([...order].sort(), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "each message ran exactly once");
      // Execution order follows admission order (created_at; ties allowed).
      const createdAt = new Map(results.map(({ i, res }) => [i, Date.parse(res.body.created_at)]));
      for (let k = 1; k < order.length; k++) {
        assert.ok(
          createdAt.get(order[k - 1]!)! <= createdAt.get(order[k]!)!,
          `run m${order[k - 1]} executed before m${order[k]} but was admitted later`,
        );
      }
      assert.equal((await c.threads.get(t)).status, "idle");
    });

    test("10 concurrent reject: exactly one admitted per busy period, the rest 409", T, async () => {
      const t = (await c.threads.create()).thread_id;
      for (const round of [1, 2]) {
        const results = await burst(t, "reject", 1000, `r${round}-`);
        const admitted = results.filter(({ res }) => res.status === 200);
        const refused = results.filter(({ res }) => res.status === 409);
        assert.equal(admitted.length, 1, `round ${round}: ${results.map(({ res }) => res.status)}`);
        assert.equal(refused.length, 9, `round ${round}: ${results.map(({ res }) => res.status)}`);
        for (const { res } of refused) assertDetail(res, 409, "refused double text");
        assert.equal((await c.runs.list(t, { limit: 100 })).length, round, "one run per busy period");
        await c.runs.join(t, admitted[0]!.res.body.run_id);
        assert.equal(await status(t, admitted[0]!.res.body.run_id), "success");
      }
      assert.equal((await c.threads.get(t)).status, "idle");
      assert.equal((await messageContents(t)).length, 4);
    });

    test("10 concurrent interrupt: exactly one success, the others interrupted, thread idle", T, async () => {
      const t = (await c.threads.create()).thread_id;
      const results = await burst(t, "interrupt", 1500, "i");
      for (const { res } of results) assert.equal(res.status, 200, res.text);
      const runs = await settled(t);
      assert.equal(runs.length, 10);
      const winners = runs.filter((r) => r.status === "success");
      assert.equal(winners.length, 1, runs.map((r) => r.status).join(","));
      assert.ok(
        runs.filter((r) => r !== winners[0]).every((r) => r.status === "interrupted"),
        runs.map((r) => r.status).join(","),
      );
      const winner = results.find(({ res }) => res.body.run_id === winners[0]!.run_id)!;
      const messages = await messageContents(t);
      assert.equal(messages.at(-1), `slow echo: i${winner.i}`);
      assert.equal(messages.filter((m) => m.startsWith("slow echo")).length, 1, JSON.stringify(messages));
      assert.equal((await c.threads.get(t)).status, "idle");
    });

    test(
      "10 concurrent rollback: exactly one run survives and succeeds, the state holds only it",
      T,
      async () => {
        const t = (await c.threads.create()).thread_id;
        const results = await burst(t, "rollback", 1500, "b");
        for (const { res } of results) assert.equal(res.status, 200, res.text);
        const runs = await settled(t);
        assert.equal(runs.length, 1, runs.map((r) => `${r.run_id}:${r.status}`).join(","));
        assert.equal(runs[0]!.status, "success");
        const winner = results.find(({ res }) => res.body.run_id === runs[0]!.run_id)!;
        for (const { res } of results) {
          if (res.body.run_id === runs[0]!.run_id) continue;
          assertDetail(await http(h.url, "GET", `/threads/${t}/runs/${res.body.run_id}`), 404, "rolled back");
        }
        assert.deepEqual(await messageContents(t), [`b${winner.i}`, `slow echo: b${winner.i}`]);
        assert.equal((await c.threads.get(t)).status, "idle");
      },
    );
  });
}
