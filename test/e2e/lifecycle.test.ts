/**
 * Run lifecycle edges: whoever waits on a run is always released, whatever ends it (a double text
 * settling a queued run, a delete, a restart), and nothing answers 500.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import {
  assertValidation,
  client,
  contents,
  type Hangar,
  http,
  human,
  rejection,
  startHangar,
  waitFor,
} from "../helpers/server.js";

const T = { timeout: 60_000 };
const slow = (text: string, sleepMs: number) => ({
  input: human(text),
  config: { configurable: { sleep_ms: sleepMs } },
});
/** Resolves with the join's outcome, or "hung" if it has not answered within `ms`. */
const settledWithin = <X>(p: Promise<X>, ms: number) =>
  Promise.race([
    p.then(
      (v) => ({ v }),
      (e) => ({ e }),
    ),
    new Promise<"hung">((r) => setTimeout(() => r("hung"), ms)),
  ]);

describe("run lifecycle edges", () => {
  let h: Hangar;
  let c: Client;
  before(async () => {
    h = await startHangar();
    c = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  test("a queued run interrupted by a double text releases its joiners", T, async () => {
    const t = (await c.threads.create()).thread_id;
    await c.runs.create(t, "slow", slow("first", 3000));
    const queued = await c.runs.create(t, "slow", slow("queued", 10));
    const joining = c.runs.join(t, queued.run_id);
    await c.runs.create(t, "agent", { input: human("third"), multitaskStrategy: "interrupt" });
    assert.notEqual(await settledWithin(joining, 5000), "hung", "join of the interrupted queued run hung");
    assert.equal((await c.runs.get(t, queued.run_id)).status, "interrupted");
  });

  test("a queued run rolled back by a double text releases its joiners", T, async () => {
    const t = (await c.threads.create()).thread_id;
    await c.runs.create(t, "slow", slow("first", 3000));
    const queued = await c.runs.create(t, "slow", slow("queued", 10));
    const joining = c.runs.join(t, queued.run_id);
    const winner = await c.runs.create(t, "agent", { input: human("third"), multitaskStrategy: "rollback" });
    assert.notEqual(await settledWithin(joining, 5000), "hung", "join of the rolled-back queued run hung");
    await c.runs.join(t, winner.run_id);
    assert.deepEqual(contents((await c.threads.getState(t)).values), ["third", "echo: third"]);
  });

  test("deleting a queued run, or its thread, releases whoever waits on it", T, async () => {
    const t = (await c.threads.create()).thread_id;
    await c.runs.create(t, "slow", slow("first", 3000));
    const queued = await c.runs.create(t, "slow", slow("queued", 10));
    const joining = c.runs.join(t, queued.run_id);
    assert.equal((await http(h.url, "DELETE", `/threads/${t}/runs/${queued.run_id}`)).status, 204);
    assert.notEqual(await settledWithin(joining, 5000), "hung", "join of a deleted run hung");

    const t2 = (await c.threads.create()).thread_id;
    await c.runs.create(t2, "slow", slow("first", 3000));
    const queued2 = await c.runs.create(t2, "slow", slow("queued", 10));
    const joining2 = c.runs.join(t2, queued2.run_id);
    await c.threads.delete(t2);
    assert.notEqual(await settledWithin(joining2, 5000), "hung", "join of a run of a deleted thread hung");
    assert.equal((await rejection(c.threads.get(t2))).status, 404);
  });

  test(
    "deleting an assistant stops its running run, releases its queued one, and frees the thread",
    T,
    async () => {
      const assistant = await c.assistants.create({ graphId: "slow", name: "doomed" });
      const t = (await c.threads.create()).thread_id;
      const running = await c.runs.create(t, assistant.assistant_id, slow("first", 5000));
      await waitFor(async () => (await c.runs.get(t, running.run_id)).status === "running" || undefined, {
        timeoutMs: 5000,
      });
      const queued = await c.runs.create(t, assistant.assistant_id, slow("queued", 10));
      const joinRunning = c.runs.join(t, running.run_id);
      const joinQueued = c.runs.join(t, queued.run_id);
      await c.assistants.delete(assistant.assistant_id);
      assert.notEqual(
        await settledWithin(joinQueued, 5000),
        "hung",
        "join of a queued run of a deleted assistant",
      );
      assert.notEqual(
        await settledWithin(joinRunning, 5000),
        "hung",
        "join of a running run of a deleted assistant",
      );
      for (const r of [running, queued]) assert.equal((await rejection(c.runs.get(t, r.run_id))).status, 404);
      const thread = await waitFor(
        async () => {
          const th = await c.threads.get(t);
          return th.status !== "busy" ? th : undefined;
        },
        { timeoutMs: 5000, what: "thread no longer busy" },
      );
      assert.equal(thread.status, "idle");
      // The thread takes new runs again.
      await c.runs.wait(t, "agent", { input: human("again") });
    },
  );

  test("after_seconds beyond a year is a 422, not a 500", T, async () => {
    const t = (await c.threads.create()).thread_id;
    const res = await http(h.url, "POST", `/threads/${t}/runs`, {
      assistant_id: "agent",
      after_seconds: 1e16,
    });
    assertValidation(res, "after_seconds");
  });
});

describe("runs queued before a restart", () => {
  test("join waits for a run queued before a restart and returns its own result", T, async () => {
    let h = await startHangar();
    const c1 = client(h.url);
    const t = (await c1.threads.create()).thread_id;
    await c1.runs.wait(t, "agent", { input: human("before") });
    const delayed = await c1.runs.create(t, "agent", { input: human("after restart"), afterSeconds: 2 });
    await h.stop();
    h = await startHangar({ dataDir: h.dataDir });
    try {
      const c2 = client(h.url);
      const result = await c2.runs.join(t, delayed.run_id);
      assert.deepEqual(contents(result), ["before", "echo: before", "after restart", "echo: after restart"]);
      await waitFor(async () => (await c2.runs.get(t, delayed.run_id)).status === "success" || undefined, {
        timeoutMs: 5000,
      });
    } finally {
      await h.stop();
    }
  });
});
