import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import { client, contents, type Hangar, http, human, startHangar, waitFor } from "../helpers/server.js";

const FINAL = new Set(["success", "error", "interrupted", "timeout"]);

describe("durability: kill -9 and restart on the same data dir", () => {
  let h: Hangar;
  let c: Client;
  before(async () => {
    h = await startHangar();
    c = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  const restart = async () => {
    await h.kill9();
    h = await startHangar({ dataDir: h.dataDir });
    c = client(h.url);
  };

  test("nothing acknowledged is lost; the executing run is recovered; queued runs run", {
    timeout: 90_000,
  }, async (ctx) => {
    // --- before the crash ------------------------------------------------------------------------
    const assistant = await c.assistants.create({
      graphId: "agent",
      name: "durable",
      metadata: { keep: true },
    });
    const updated = await c.assistants.update(assistant.assistant_id, { metadata: { version: "two" } });

    const done = await c.threads.create({ metadata: { kind: "done" } });
    await c.runs.wait(done.thread_id, assistant.assistant_id, { input: human("one") });
    await c.runs.wait(done.thread_id, "agent", { input: human("two") });
    const doneThread = await c.threads.get(done.thread_id);
    const doneState = await c.threads.getState(done.thread_id);
    const doneHistory = await c.threads.getHistory(done.thread_id, { limit: 100 });
    const doneRuns = await c.runs.list(done.thread_id, { limit: 100 });
    assert.equal(doneRuns.length, 2);

    const interrupted = await c.threads.create({ metadata: { kind: "interrupted" } });
    await c.runs.wait(interrupted.thread_id, "interrupt", { input: human("approve me") });
    const interruptedState = await c.threads.getState(interrupted.thread_id);

    // A run executing at the kill, with a run queued behind it on the same thread.
    const busy = await c.threads.create({ metadata: { kind: "busy" } });
    const executing = await c.runs.create(busy.thread_id, "slow", {
      input: human("in flight"),
      config: { configurable: { sleep_ms: 5000 } },
    });
    await waitFor(async () => (await c.runs.get(busy.thread_id, executing.run_id)).status === "running", {
      what: "slow run running",
    });
    const queued = await c.runs.create(busy.thread_id, "agent", { input: human("queued") });
    assert.equal(queued.status, "pending");

    // A run scheduled for later, pending at the kill, on its own thread.
    const later = await c.threads.create({ metadata: { kind: "later" } });
    const scheduled = await c.runs.create(later.thread_id, "agent", {
      input: human("later"),
      afterSeconds: 3,
    });

    // Writes acknowledged just before the kill.
    const lastMoment = await Promise.all(
      Array.from({ length: 20 }, (_, i) => c.threads.create({ metadata: { kind: "last-moment", i } })),
    );

    await restart();

    // --- after the restart -------------------------------------------------------------------------
    assert.deepEqual(await c.assistants.get(assistant.assistant_id), updated);
    assert.deepEqual(
      (await c.assistants.getVersions(assistant.assistant_id)).map((v) => v.version),
      [2, 1],
    );

    const doneAfter = await c.threads.get(done.thread_id);
    assert.deepEqual(doneAfter, doneThread);
    assert.deepEqual(await c.threads.getState(done.thread_id), doneState);
    assert.deepEqual(await c.threads.getHistory(done.thread_id, { limit: 100 }), doneHistory);
    assert.deepEqual(await c.runs.list(done.thread_id, { limit: 100 }), doneRuns);

    assert.equal((await c.threads.get(interrupted.thread_id)).status, "interrupted");
    assert.deepEqual(await c.threads.getState(interrupted.thread_id), interruptedState);
    const resumed = await c.runs.wait(interrupted.thread_id, "interrupt", {
      command: { resume: "after crash" },
    });
    assert.deepEqual(contents(resumed), ["approve me", "approved: after crash"]);

    const found = await c.threads.search({ metadata: { kind: "last-moment" }, limit: 100 });
    assert.deepEqual(found.map((t) => t.thread_id).sort(), lastMoment.map((t) => t.thread_id).sort());

    // The run that was executing reaches a final status (retried or failed), and the queued one runs.
    const executingFinal = await waitFor(
      async () => {
        const run = await c.runs.get(busy.thread_id, executing.run_id);
        return FINAL.has(run.status) ? run : null;
      },
      { timeoutMs: 30_000, intervalMs: 200, what: "the executing run reaches a final status" },
    );
    const queuedFinal = await waitFor(
      async () => {
        const run = await c.runs.get(busy.thread_id, queued.run_id);
        return FINAL.has(run.status) ? run : null;
      },
      { timeoutMs: 30_000, intervalMs: 200, what: "the queued run runs" },
    );
    ctx.diagnostic(`the run executing at the kill ended ${executingFinal.status} after the restart`);
    assert.equal(queuedFinal.status, "success");
    const busyThread = await waitFor(
      async () => {
        const t = await c.threads.get(busy.thread_id);
        return t.status !== "busy" ? t : null;
      },
      { timeoutMs: 10_000, what: "the thread is not left busy" },
    );
    assert.equal(busyThread.status, "idle");
    const busyMessages = contents((await c.threads.getState(busy.thread_id)).values);
    assert.equal(busyMessages[0], "in flight");
    assert.deepEqual(busyMessages.slice(-2), ["queued", "echo: queued"]);
    if (executingFinal.status === "success") {
      assert.deepEqual(busyMessages, ["in flight", "slow echo: in flight", "queued", "echo: queued"]);
    }

    const scheduledOut = await c.runs.join(later.thread_id, scheduled.run_id);
    assert.deepEqual(contents(scheduledOut), ["later", "echo: later"]);
    assert.equal((await c.runs.get(later.thread_id, scheduled.run_id)).status, "success");

    // The server keeps working normally on the recovered data.
    const more = await c.runs.wait(done.thread_id, "agent", { input: human("three") });
    assert.deepEqual(contents(more), ["one", "echo: one", "two", "echo: two", "three", "echo: three"]);
    assert.equal((await http(h.url, "GET", "/ok")).status, 200);
  });

  test("a second crash in a row loses nothing either", { timeout: 60_000 }, async () => {
    const t = await c.threads.create({ metadata: { kind: "second-crash" } });
    await c.runs.wait(t.thread_id, "agent", { input: human("survive") });
    const state = await c.threads.getState(t.thread_id);
    await restart();
    await restart();
    assert.deepEqual(await c.threads.getState(t.thread_id), state);
    assert.equal((await c.threads.get(t.thread_id)).status, "idle");
  });

  test("SIGTERM shuts down cleanly (exit code 0) and the data is there after a restart", {
    timeout: 60_000,
  }, async () => {
    const t = await c.threads.create({ metadata: { kind: "graceful" } });
    await c.runs.wait(t.thread_id, "agent", { input: human("bye") });
    const code = await h.stop();
    assert.equal(code, 0, `exit code ${code}; logs:\n${h.logs()}`);
    h = await startHangar({ dataDir: h.dataDir });
    c = client(h.url);
    assert.deepEqual(contents((await c.threads.getState(t.thread_id)).values), ["bye", "echo: bye"]);
  });
});
