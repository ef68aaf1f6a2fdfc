import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import {
  client,
  collect,
  contents,
  fixturesConfig,
  type Hangar,
  human,
  startHangar,
} from "../helpers/server.js";

const T = { timeout: 30_000 };

describe("interrupts and resume", () => {
  let h: Hangar;
  let c: Client;
  before(async () => {
    h = await startHangar({ config: await fixturesConfig() });
    c = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  const log = (values: unknown) => (values as { log?: string[] }).log;

  test(
    "interrupt(): run success, thread interrupted, interrupts in state and thread; resume",
    T,
    async () => {
      const t = (await c.threads.create()).thread_id;
      let runId = "";
      const out = (await c.runs.wait(t, "interrupt", {
        input: human("deploy"),
        onRunCreated: (p) => {
          runId = p.run_id;
        },
      })) as any;
      assert.ok(Array.isArray(out.__interrupt__), JSON.stringify(out));
      assert.equal(out.__interrupt__.length, 1);
      assert.deepEqual(out.__interrupt__[0].value, { question: "approve?" });
      assert.equal(typeof out.__interrupt__[0].id, "string");
      const interruptId = out.__interrupt__[0].id;

      assert.equal(
        (await c.runs.get(t, runId)).status,
        "success",
        "a run stopped at interrupt() is a success",
      );
      const thread = await c.threads.get(t);
      assert.equal(thread.status, "interrupted");

      const state = await c.threads.getState(t);
      assert.deepEqual(state.next, ["ask"]);
      assert.equal(state.tasks.length, 1);
      const task = state.tasks[0]!;
      assert.equal(task.name, "ask");
      assert.equal(task.interrupts.length, 1);
      assert.deepEqual(task.interrupts[0]!.value, { question: "approve?" });
      assert.equal(task.interrupts[0]!.id, interruptId);
      assert.deepEqual(contents(state.values), ["deploy"]);

      assert.deepEqual(
        Object.keys(thread.interrupts ?? {}),
        [task.id],
        "thread.interrupts is keyed by task id",
      );
      const threadInterrupts = thread.interrupts[task.id]!;
      assert.equal(threadInterrupts.length, 1);
      assert.deepEqual(threadInterrupts[0]!.value, { question: "approve?" });
      assert.equal(threadInterrupts[0]!.id, interruptId);

      const resumed = await c.runs.wait(t, "interrupt", { command: { resume: "yes" } });
      assert.deepEqual(contents(resumed), ["deploy", "approved: yes"]);
      const after = await c.threads.get(t);
      assert.equal(after.status, "idle");
      assert.deepEqual(after.interrupts ?? {}, {});
      const finalState = await c.threads.getState(t);
      assert.deepEqual(finalState.next, []);
      assert.deepEqual(finalState.tasks, []);
    },
  );

  test("the interrupt shows up in the stream; resume with a structured value over a stream", T, async () => {
    const t = (await c.threads.create()).thread_id;
    const parts = await collect(
      c.runs.stream(t, "interrupt", { input: human("stream it"), streamMode: ["updates", "values"] }),
    );
    assert.equal(parts[0].event, "metadata");
    assert.ok(!parts.some((p) => p.event === "error"), JSON.stringify(parts));
    const interruptUpdate = parts.find((p) => p.event === "updates" && p.data.__interrupt__);
    assert.ok(interruptUpdate, JSON.stringify(parts));
    assert.deepEqual(interruptUpdate.data.__interrupt__[0].value, { question: "approve?" });

    const resumed = await collect(
      c.runs.stream(t, "interrupt", { command: { resume: { ok: true } }, streamMode: "values" }),
    );
    assert.ok(!resumed.some((p) => p.event === "error"), JSON.stringify(resumed));
    assert.deepEqual(contents(resumed.at(-1).data), ["stream it", 'approved: {"ok":true}']);
    assert.equal((await c.threads.get(t)).status, "idle");
  });

  test("command.update with resume applies the update before the node resumes", T, async () => {
    const t = (await c.threads.create()).thread_id;
    await c.runs.wait(t, "interrupt", { input: human("deploy") });
    const out = await c.runs.wait(t, "interrupt", {
      command: { resume: "y", update: { messages: [{ role: "human", content: "extra" }] } },
    });
    assert.deepEqual(contents(out), ["deploy", "extra", "approved: y"]);
  });

  test("command.update on a thread stopped by interrupt_after, then the graph continues", T, async () => {
    const t = (await c.threads.create()).thread_id;
    await c.runs.wait(t, "steps", { input: { log: ["start"] }, interruptAfter: ["one"] });
    const out = await c.runs.wait(t, "steps", { command: { update: { log: ["upd"] } } });
    assert.deepEqual(log(out), ["start", "one", "upd", "two", "three"]);
    assert.equal((await c.threads.get(t)).status, "idle");
  });

  test("command.goto jumps to a node", T, async () => {
    const t = (await c.threads.create()).thread_id;
    const out = await c.runs.wait(t, "steps", { command: { goto: "three" } });
    assert.deepEqual(log(out), ["three"]);
    const gotoSend = await c.runs.wait((await c.threads.create()).thread_id, "steps", {
      command: { goto: { node: "two", input: { log: ["sent"] } } },
    });
    // A Send runs "two" with the given input; its update appends "two" to the thread's (empty) log.
    assert.deepEqual(log(gotoSend), ["two", "three"]);
  });

  test("interrupt_before stops before the node; null input continues", T, async () => {
    const t = (await c.threads.create()).thread_id;
    let runId = "";
    await c.runs.wait(t, "steps", {
      input: { log: ["start"] },
      interruptBefore: ["two"],
      onRunCreated: (p) => {
        runId = p.run_id;
      },
    });
    assert.equal((await c.runs.get(t, runId)).status, "success");
    const thread = await c.threads.get(t);
    assert.equal(thread.status, "interrupted");
    const state = await c.threads.getState(t);
    assert.deepEqual(state.next, ["two"]);
    assert.deepEqual(log(state.values), ["start", "one"]);
    assert.deepEqual(
      state.tasks.map((task) => [task.name, task.interrupts]),
      [["two", []]],
    );

    const out = await c.runs.wait(t, "steps", { input: null });
    assert.deepEqual(log(out), ["start", "one", "two", "three"]);
    assert.equal((await c.threads.get(t)).status, "idle");
  });

  test('interrupt_before "*" stops before the first node', T, async () => {
    const t = (await c.threads.create()).thread_id;
    await c.runs.wait(t, "steps", { input: { log: ["start"] }, interruptBefore: "*" });
    const state = await c.threads.getState(t);
    assert.deepEqual(state.next, ["one"]);
    assert.deepEqual(log(state.values), ["start"]);
    assert.equal((await c.threads.get(t)).status, "interrupted");
  });

  test("interrupt_after stops after the node; continuing with no input finishes", T, async () => {
    const t = (await c.threads.create()).thread_id;
    await c.runs.wait(t, "steps", { input: { log: ["start"] }, interruptAfter: ["one", "two"] });
    let state = await c.threads.getState(t);
    assert.deepEqual(state.next, ["two"]);
    assert.deepEqual(log(state.values), ["start", "one"]);
    assert.equal((await c.threads.get(t)).status, "interrupted");

    // Continue: the run's own interrupt_after applies again and stops after "two".
    await c.runs.wait(t, "steps", { input: null, interruptAfter: ["two"] });
    state = await c.threads.getState(t);
    assert.deepEqual(state.next, ["three"]);
    assert.deepEqual(log(state.values), ["start", "one", "two"]);

    // Body without an `input` key at all.
    const out = await c.runs.wait(t, "steps", {});
    assert.deepEqual(log(out), ["start", "one", "two", "three"]);
    assert.equal((await c.threads.get(t)).status, "idle");
  });

  test("resuming a thread that is not interrupted does not crash the server", T, async () => {
    const t = (await c.threads.create()).thread_id;
    await c.runs.wait(t, "agent", { input: human("plain") });
    const out = await c.runs.wait(t, "agent", {
      command: { resume: "nothing to resume" },
      raiseError: false,
    });
    // Either a no-op run or a graph error, never an HTTP failure; the thread must not be left busy.
    assert.ok(out && typeof out === "object");
    assert.notEqual((await c.threads.get(t)).status, "busy");
  });
});
