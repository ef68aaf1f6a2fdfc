/**
 * The `durability` run parameter (`sync` | `async` | `exit`) and the deprecated `checkpoint_during`,
 * through the official SDK: `exit` writes the run's checkpoints only when it ends, the others after
 * each step; every mode ends in the same state. Crons keep theirs for the runs they make.
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
  startHangar,
  waitFor,
} from "../helpers/server.js";

const T = { timeout: 60_000 };
const EVERY_SECOND = "* * * * * *";

describe("run durability", () => {
  let h: Hangar;
  let c: Client;
  before(async () => {
    h = await startHangar({ env: { HANGAR_CRON_MIN_INTERVAL_SECONDS: "1" } }); // EVERY_SECOND allowed
    c = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  /** Runs the echo agent once on a new thread; its final messages and how many checkpoints it left. */
  async function runWith(payload: Record<string, unknown>) {
    const thread = await c.threads.create();
    const values = await c.runs.wait(thread.thread_id, "agent", { input: human("hi"), ...payload });
    const history = await c.threads.getHistory(thread.thread_id, { limit: 100 });
    return { messages: contents(values), checkpoints: history.length };
  }

  test("exit writes the run's checkpoints only at its end; sync and async after each step", T, async () => {
    const byDefault = await runWith({});
    const sync = await runWith({ durability: "sync" });
    const async_ = await runWith({ durability: "async" });
    const exit = await runWith({ durability: "exit" });
    for (const r of [byDefault, sync, async_, exit]) assert.deepEqual(r.messages, ["hi", "echo: hi"]);
    // The input, the start and the echo node's step, each a checkpoint; with exit only the last.
    assert.equal(sync.checkpoints, 3);
    assert.equal(async_.checkpoints, 3);
    assert.equal(byDefault.checkpoints, 3, "async is the default");
    assert.equal(exit.checkpoints, 1);
  });

  test("checkpoint_during: false means exit, true async; durability wins over it", T, async () => {
    assert.equal((await runWith({ checkpointDuring: false })).checkpoints, 1);
    assert.equal((await runWith({ checkpointDuring: true })).checkpoints, 3);
    assert.equal((await runWith({ checkpointDuring: false, durability: "sync" })).checkpoints, 3);
  });

  test("a cron's runs keep its durability", T, async () => {
    const thread = await c.threads.create();
    const cron = await c.crons.createForThread(thread.thread_id, "agent", {
      schedule: EVERY_SECOND,
      input: human("tick"),
      durability: "exit",
    });
    const run = await waitFor(async () => (await c.runs.list(thread.thread_id))[0] ?? null, {
      timeoutMs: 15_000,
    });
    await c.crons.delete(cron.cron_id);
    assert.equal((run as unknown as { kwargs: { durability?: string } }).kwargs.durability, "exit");
    // One checkpoint per run (it may have fired more than once before its deletion).
    const runs = await c.runs.list(thread.thread_id);
    for (const r of runs) await c.runs.join(thread.thread_id, r.run_id);
    assert.equal((await c.threads.getHistory(thread.thread_id, { limit: 100 })).length, runs.length);
  });

  test("an unknown durability is a 422 naming the field", T, async () => {
    const thread = await c.threads.create();
    for (const durability of ["never", 1, true]) {
      const res = await http(h.url, "POST", `/threads/${thread.thread_id}/runs`, {
        assistant_id: "agent",
        input: human("x"),
        durability,
      });
      assertValidation(res, "durability", JSON.stringify(durability));
    }
    const cron = await http(h.url, "POST", `/threads/${thread.thread_id}/runs/crons`, {
      assistant_id: "agent",
      schedule: "0 0 * * *",
      durability: "later",
    });
    assertValidation(cron, "durability", "cron");
  });
});
