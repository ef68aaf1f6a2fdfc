import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import {
  assertDetail,
  assertValidation,
  checkAll,
  client,
  collect,
  contents,
  defaultAssistantId,
  fixturesConfig,
  type Hangar,
  http,
  human,
  iterSSE,
  readSSE,
  rejection,
  type SSEEvent,
  startHangar,
  UUID_RE,
  waitFor,
} from "../helpers/server.js";

const T = { timeout: 30_000 };

type Part = { event: string; data: any; id?: string };

/** The invariants every run stream keeps: `metadata` first with the run id, no `end`, no `error`. */
function checkStream(parts: Part[], opts: { error?: boolean } = {}): string {
  assert.ok(parts.length > 0, "the stream has events");
  assert.equal(parts[0]!.event, "metadata", `first event: ${JSON.stringify(parts[0])}`);
  const runId = parts[0]!.data?.run_id;
  assert.match(String(runId), UUID_RE);
  assert.ok(!parts.some((p) => p.event === "end"), "no trailing end event");
  if (!opts.error) {
    const errors = parts.filter((p) => p.event === "error");
    assert.deepEqual(errors, [], "no error events");
  }
  return runId;
}

const eventNames = (parts: Part[]) => new Set(parts.map((p) => p.event));

describe("runs", () => {
  let h: Hangar;
  let c: Client;
  before(async () => {
    h = await startHangar({ config: await fixturesConfig() });
    c = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  const postStream = (
    path: string,
    body: unknown,
    init: { signal?: AbortSignal; headers?: Record<string, string> } = {},
  ) =>
    fetch(`${h.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...init.headers },
      body: JSON.stringify(body),
      signal: init.signal,
    });

  const joinStream = (threadId: string, runId: string, lastEventId?: string) =>
    fetch(`${h.url}/threads/${threadId}/runs/${runId}/stream`, {
      headers: lastEventId === undefined ? {} : { "Last-Event-ID": lastEventId },
    });

  const status = async (threadId: string, runId: string) => (await c.runs.get(threadId, runId)).status;

  // ---------------------------------------------------------------------------------------------
  // create / join / wait

  test("create answers the pending run with Content-Location; join returns the final values", T, async () => {
    const t = await c.threads.create();
    const res = await http(h.url, "POST", `/threads/${t.thread_id}/runs`, {
      assistant_id: "agent",
      input: human("hi"),
    });
    assert.equal(res.status, 200);
    const run = res.body;
    assert.match(run.run_id, UUID_RE);
    assert.equal(run.thread_id, t.thread_id);
    assert.equal(run.assistant_id, defaultAssistantId("agent"), "a graph id maps to its default assistant");
    assert.equal(run.status, "pending");
    assert.equal(run.multitask_strategy, "enqueue", "enqueue is the default strategy");
    assert.equal(typeof run.metadata, "object");
    assert.ok(!Number.isNaN(Date.parse(run.created_at)));
    assert.equal(res.headers.get("content-location"), `/threads/${t.thread_id}/runs/${run.run_id}`);

    const out = await c.runs.join(t.thread_id, run.run_id);
    assert.deepEqual(contents(out), ["hi", "echo: hi"]);
    const done = await c.runs.get(t.thread_id, run.run_id);
    assert.equal(done.status, "success");
    const thread = await c.threads.get(t.thread_id);
    assert.equal(thread.status, "idle");
    assert.deepEqual(contents(thread.values), ["hi", "echo: hi"]);
    assert.equal(thread.metadata?.graph_id, "agent");
    // Joining a finished run again gives the same result.
    assert.deepEqual(contents(await c.runs.join(t.thread_id, run.run_id)), ["hi", "echo: hi"]);
  });

  test("wait returns the final values, with Content-Location", T, async () => {
    const t = await c.threads.create();
    const res = await http(h.url, "POST", `/threads/${t.thread_id}/runs/wait`, {
      assistant_id: "agent",
      input: human("yo"),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(contents(res.body), ["yo", "echo: yo"]);
    const loc = res.headers.get("content-location") ?? "";
    const m = new RegExp(`^/threads/${t.thread_id}/runs/([0-9a-f-]{36})$`).exec(loc);
    assert.ok(m, `content-location ${loc}`);
    assert.equal((await c.runs.get(t.thread_id, m[1]!)).status, "success");
    const values = await c.runs.wait(t.thread_id, defaultAssistantId("agent"), { input: human("again") });
    assert.deepEqual(contents(values), ["yo", "echo: yo", "again", "echo: again"]);
  });

  test(
    "a graph whose output schema is narrower than its state: the thread keeps the whole state",
    T,
    async () => {
      // The executor takes a run's final state from its last `values` chunk: `graph.stream` streams every
      // state channel there, whatever the output schema says.
      const t = await c.threads.create();
      const waited = await c.runs.wait(t.thread_id, "narrow", { input: { question: "q" } });
      assert.deepEqual(waited, { question: "q", answer: "re: q", scratch: "kept" });
      const state = await c.threads.getState(t.thread_id);
      assert.deepEqual(state.values, { question: "q", answer: "re: q", scratch: "kept" });
      assert.deepEqual((await c.threads.get(t.thread_id)).values, {
        question: "q",
        answer: "re: q",
        scratch: "kept",
      });
      assert.deepEqual(state.next, []);
    },
  );

  test("onRunCreated fires exactly once for create, wait and stream", T, async () => {
    const t = await c.threads.create();
    const seen: { run_id: string; thread_id?: string }[] = [];
    const record = (p: { run_id: string; thread_id?: string }) => {
      seen.push(p);
    };
    const run = await c.runs.create(t.thread_id, "agent", { input: human("1"), onRunCreated: record });
    assert.deepEqual(seen, [{ run_id: run.run_id, thread_id: t.thread_id }]);
    await c.runs.join(t.thread_id, run.run_id);

    seen.length = 0;
    await c.runs.wait(t.thread_id, "agent", { input: human("2"), onRunCreated: record });
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.thread_id, t.thread_id);
    assert.equal((await c.runs.get(t.thread_id, seen[0]!.run_id)).status, "success");

    seen.length = 0;
    const parts = await collect(
      c.runs.stream(t.thread_id, "agent", { input: human("3"), onRunCreated: record }),
    );
    const runId = checkStream(parts);
    assert.deepEqual(seen, [{ run_id: runId, thread_id: t.thread_id }]);
  });

  // ---------------------------------------------------------------------------------------------
  // streaming

  test(
    "stream (raw): SSE headers, Location, Content-Location, monotonic ids, metadata first",
    T,
    async () => {
      const t = await c.threads.create();
      const res = await postStream(`/threads/${t.thread_id}/runs/stream`, {
        assistant_id: "agent",
        input: human("hi"),
        stream_mode: ["values", "updates"],
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
      const contentLocation = res.headers.get("content-location") ?? "";
      const m = new RegExp(`^/threads/${t.thread_id}/runs/([0-9a-f-]{36})$`).exec(contentLocation);
      assert.ok(m, `content-location ${contentLocation}`);
      const runId = m[1]!;
      const location = res.headers.get("location") ?? "";
      assert.match(
        location,
        new RegExp(`^/threads/${t.thread_id}/runs/${runId}/stream(\\?|$)`),
        `location ${location}`,
      );

      const events = await readSSE(res);
      assert.equal(checkStream(events), runId);
      const ids = events.map((e) => e.id);
      assert.ok(
        ids.every((id) => id !== undefined && /^\d+$/.test(id)),
        `every event has a numeric id: ${JSON.stringify(ids)}`,
      );
      const nums = ids.map(Number);
      for (let i = 1; i < nums.length; i++) assert.ok(nums[i]! > nums[i - 1]!, `ids increase: ${nums}`);
      assert.deepEqual(eventNames(events), new Set(["metadata", "values", "updates"]));
      assert.equal(events.at(-1)!.event, "values");
      assert.deepEqual(contents(events.at(-1)!.data), ["hi", "echo: hi"]);
    },
  );

  test("stream mode values: input state first, final state last", T, async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, "agent", { input: human("hi"), streamMode: "values" }),
    );
    const runId = checkStream(parts);
    assert.deepEqual(eventNames(parts), new Set(["metadata", "values"]));
    const values = parts.filter((p) => p.event === "values").map((p) => contents(p.data));
    assert.deepEqual(values[0], ["hi"]);
    assert.deepEqual(values.at(-1), ["hi", "echo: hi"]);
    const last = parts.at(-1)!.data.messages;
    assert.deepEqual(
      last.map((m: any) => m.type),
      ["human", "ai"],
    );
    assert.ok(
      last.every((m: any) => typeof m.id === "string"),
      "messages have ids",
    );
    assert.equal(await status(t.thread_id, runId), "success");
  });

  test("stream mode updates: one update per node", T, async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, "agent", { input: human("hi"), streamMode: "updates" }),
    );
    checkStream(parts);
    assert.deepEqual(eventNames(parts), new Set(["metadata", "updates"]));
    const updates = parts.filter((p) => p.event === "updates");
    assert.deepEqual(
      updates.map((p) => Object.keys(p.data)),
      [["echo"]],
    );
    assert.deepEqual(contents(updates[0]!.data.echo), ["echo: hi"]);
  });

  test("stream mode messages-tuple: [message, metadata] events named messages", T, async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, "agent", { input: human("hi"), streamMode: "messages-tuple" }),
    );
    checkStream(parts);
    assert.deepEqual(eventNames(parts), new Set(["metadata", "messages"]));
    const tuples = parts.filter((p) => p.event === "messages").map((p) => p.data);
    assert.ok(
      tuples.every((d) => Array.isArray(d) && d.length === 2),
      JSON.stringify(tuples),
    );
    const echo = tuples.find(([m]) => m.content === "echo: hi");
    assert.ok(echo, JSON.stringify(tuples));
    assert.equal(echo[1].langgraph_node, "echo");
  });

  test("stream mode messages (legacy): messages/complete for the input and the reply", T, async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, "agent", { input: human("hi"), streamMode: "messages" }),
    );
    checkStream(parts);
    // No chat model streams here: no messages/metadata or partial, as in the reference (stream-modes.test.ts
    // compares the streaming case with it).
    assert.deepEqual(
      parts.slice(1).map((p) => [p.event, p.data.map((m: any) => m.content)]),
      [
        ["messages/complete", ["hi"]],
        ["messages/complete", ["echo: hi"]],
      ],
    );
  });

  test("stream mode custom on slow: the writer's progress events in order", T, async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, "slow", {
        input: human("hi"),
        streamMode: "custom",
        config: { configurable: { sleep_ms: 450 } },
      }),
    );
    checkStream(parts);
    assert.deepEqual(eventNames(parts), new Set(["metadata", "custom"]));
    const progress = parts.filter((p) => p.event === "custom").map((p) => p.data.progress);
    assert.ok(progress.length >= 3, `progress events: ${progress}`);
    assert.deepEqual(
      progress,
      progress.map((_, i) => i),
    );
  });

  test("stream mode debug: checkpoint, task and task_result; checkpoints match history", T, async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, "agent", { input: human("hi"), streamMode: "debug" }),
    );
    checkStream(parts);
    assert.deepEqual(eventNames(parts), new Set(["metadata", "debug"]));
    const debug = parts.filter((p) => p.event === "debug").map((p) => p.data);
    const types = new Set(debug.map((d) => d.type));
    for (const type of ["checkpoint", "task", "task_result"])
      assert.ok(types.has(type), `debug ${type}: ${[...types]}`);
    assert.ok(debug.every((d) => typeof d.step === "number" && typeof d.timestamp === "string"));
    const checkpoints = debug.filter((d) => d.type === "checkpoint").map((d) => d.payload);
    const history = (await c.threads.getHistory(t.thread_id, { limit: 100 })).reverse();
    assert.deepEqual(
      // As in both reference servers: checkpoint payloads carry `checkpoint` and `parent_checkpoint` objects.
      checkpoints.map((p) => ({
        step: p.metadata?.step,
        id: p.checkpoint?.checkpoint_id,
        parent: p.parent_checkpoint?.checkpoint_id ?? null,
      })),
      history.map((s) => ({
        step: s.metadata?.step,
        id: s.checkpoint.checkpoint_id,
        parent: s.parent_checkpoint?.checkpoint_id ?? null,
      })),
    );
  });

  test("stream mode tasks: a start and a result per task", T, async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, "agent", { input: human("hi"), streamMode: "tasks" }),
    );
    checkStream(parts);
    assert.deepEqual(eventNames(parts), new Set(["metadata", "tasks"]));
    const tasks = parts.filter((p) => p.event === "tasks").map((p) => p.data);
    const start = tasks.find((d) => d.name === "echo" && "input" in d);
    const result = tasks.find((d) => d.name === "echo" && "result" in d);
    assert.ok(start && result, JSON.stringify(tasks));
    assert.equal(start.id, result.id);
    assert.ok(Array.isArray(start.triggers));
    assert.ok(!result.error, JSON.stringify(result));
  });

  test("stream mode checkpoints: one per checkpoint, the last is the final state", T, async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, "agent", { input: human("hi"), streamMode: "checkpoints" }),
    );
    checkStream(parts);
    assert.deepEqual(eventNames(parts), new Set(["metadata", "checkpoints"]));
    const cps = parts.filter((p) => p.event === "checkpoints").map((p) => p.data);
    assert.equal(cps.length, 3, "input, after __start__, after echo");
    assert.deepEqual(
      cps.map((cp) => cp.metadata?.step),
      [-1, 0, 1],
    );
    assert.deepEqual(contents(cps.at(-1).values), ["hi", "echo: hi"]);
    assert.deepEqual(cps.at(-1).next, []);
    const state = await c.threads.getState(t.thread_id);
    assert.equal(cps.at(-1).config?.configurable?.checkpoint_id, state.checkpoint.checkpoint_id);
  });

  test("stream mode events: LangChain stream events of the graph", T, async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, "agent", { input: human("hi"), streamMode: "events" }),
    );
    checkStream(parts);
    assert.deepEqual(eventNames(parts), new Set(["metadata", "events"]));
    const kinds = new Set(parts.filter((p) => p.event === "events").map((p) => p.data.event));
    assert.ok(kinds.has("on_chain_start") && kinds.has("on_chain_end"), [...kinds].join(","));
    assert.ok(
      parts.some((p) => p.event === "events" && p.data.name === "echo" && p.data.event === "on_chain_end"),
      "the echo node's end event",
    );
  });

  test("stream_subgraphs on subgraph: events from the child namespace are named <mode>|<ns>", T, async () => {
    const t = await c.threads.create();
    const parts = await collect(
      c.runs.stream(t.thread_id, "subgraph", {
        input: human("deep"),
        streamMode: ["values", "updates"],
        streamSubgraphs: true,
      }),
    );
    checkStream(parts);
    const names = parts.map((p) => p.event);
    assert.ok(
      names.some((n) => /^values\|child:[0-9a-f-]+$/.test(n)),
      `values|child:<task id> in ${names}`,
    );
    const childUpdate = parts.find((p) => /^updates\|child:/.test(p.event));
    assert.ok(childUpdate, `updates|child:… in ${names}`);
    assert.deepEqual(Object.keys(childUpdate.data), ["child_echo"]);
    assert.deepEqual(contents(parts.filter((p) => p.event === "values").at(-1)!.data), [
      "deep",
      "subgraph echo: deep",
    ]);

    const flat = await collect(
      c.runs.stream(t.thread_id, "subgraph", { input: human("flat"), streamMode: ["values", "updates"] }),
    );
    checkStream(flat);
    assert.ok(!flat.some((p) => p.event.includes("|")), "no namespaced events without stream_subgraphs");
  });

  test(
    "a failing graph: error event, run error, thread error; wait throws; join returns __error__",
    T,
    async () => {
      const t = await c.threads.create();
      const parts = await collect(
        c.runs.stream(t.thread_id, "fail", { input: human("x"), streamMode: "values" }),
      );
      const runId = checkStream(parts, { error: true });
      assert.deepEqual(parts.at(-1), {
        event: "error",
        data: { error: "CustomError", message: "Boo!" },
        id: parts.at(-1)!.id,
      });
      assert.equal(await status(t.thread_id, runId), "error");
      assert.equal((await c.threads.get(t.thread_id)).status, "error");

      const err = await rejection(c.runs.wait(t.thread_id, "fail", { input: human("y") }));
      assert.match(err.message, /CustomError/);
      assert.match(err.message, /Boo!/);

      const run = await c.runs.create(t.thread_id, "fail", { input: human("z") });
      const joined = (await c.runs.join(t.thread_id, run.run_id)) as any;
      assert.deepEqual(joined, { __error__: { error: "CustomError", message: "Boo!" } });
      assert.equal(await status(t.thread_id, run.run_id), "error");
    },
  );

  // ---------------------------------------------------------------------------------------------
  // join stream

  test("join stream replays after Last-Event-ID (-1 = everything)", T, async () => {
    const t = await c.threads.create();
    const res = await postStream(`/threads/${t.thread_id}/runs/stream`, {
      assistant_id: "agent",
      input: human("replay"),
      stream_mode: ["values", "updates"],
    });
    const original = await readSSE(res);
    const runId = checkStream(original);
    assert.ok(original.length >= 4, JSON.stringify(original));

    const all = await joinStream(t.thread_id, runId, "-1");
    assert.equal(all.status, 200);
    assert.match(all.headers.get("content-type") ?? "", /^text\/event-stream/);
    assert.deepEqual(await readSSE(all), original);

    const rest = await readSSE(await joinStream(t.thread_id, runId, original[1]!.id!));
    assert.deepEqual(rest, original.slice(2));

    const viaSdk = await collect(c.runs.joinStream(t.thread_id, runId, { lastEventId: "-1" }));
    assert.deepEqual(
      viaSdk.map((p) => ({ event: p.event, data: p.data, id: p.id })),
      original,
    );

    const unknown = await joinStream(t.thread_id, randomUUID(), "-1");
    if (unknown.status === 200) {
      // The reference answers with a single error event for an unknown run.
      const evs = await readSSE(unknown);
      assert.equal(evs.at(-1)?.event, "error");
    } else {
      assert.equal(unknown.status, 404);
    }
  });

  test("several readers joining the same run each see every event", T, async () => {
    const t = await c.threads.create();
    const run = await c.runs.create(t.thread_id, "slow", {
      input: human("share"),
      streamMode: ["values", "custom"],
      config: { configurable: { sleep_ms: 700 } },
    });
    const [a, b, late] = await Promise.all([
      joinStream(t.thread_id, run.run_id, "-1").then(readSSE),
      joinStream(t.thread_id, run.run_id, "-1").then(readSSE),
      joinStream(t.thread_id, run.run_id).then(readSSE),
    ]);
    checkStream(a);
    assert.deepEqual(b, a);
    assert.ok(a.filter((e) => e.event === "custom").length >= 3, JSON.stringify(a));
    assert.deepEqual(contents(a.at(-1)!.data), ["share", "slow echo: share"]);
    // A reader without Last-Event-ID sees a suffix of the same log, including the end of the run.
    assert.ok(late.length > 0, "the late reader got events");
    assert.deepEqual(late, a.slice(a.length - late.length));
    // Still replayable after the run ended.
    assert.deepEqual(await readSSE(await joinStream(t.thread_id, run.run_id, "-1")), a);
  });

  test("heartbeat comments keep an idle stream alive", { timeout: 45_000 }, async () => {
    // Hangar sends a `:` comment line while a stream is idle (every 15 s); 17 s without events must carry one.
    const t = await c.threads.create();
    const res = await postStream(`/threads/${t.thread_id}/runs/stream`, {
      assistant_id: "slow",
      input: human("quiet"),
      stream_mode: ["values"],
      config: { configurable: { sleep_ms: 17_000 } },
    });
    assert.equal(res.status, 200);
    const raw = await res.text();
    assert.ok(
      raw.split(/\r?\n/).some((line) => line.startsWith(":")),
      `no comment line in ${raw.length} bytes`,
    );
    // The SSE parser ignores them: the events are the usual ones.
    const events = await readSSE(new Response(raw));
    checkStream(events);
    assert.deepEqual(contents(events.at(-1)!.data), ["quiet", "slow echo: quiet"]);
  });

  // ---------------------------------------------------------------------------------------------
  // list / get / delete / cancel

  test("list (newest first, limit/offset/status), get, delete", T, async () => {
    const t = await c.threads.create();
    const ids: string[] = [];
    for (const text of ["a", "b", "c"]) {
      let id = "";
      await c.runs.wait(t.thread_id, "agent", { input: human(text), onRunCreated: (p) => (id = p.run_id) });
      ids.push(id);
    }
    const listed = await c.runs.list(t.thread_id);
    // The official server lists a thread's runs newest first (guess: the JS reference lists oldest first).
    assert.deepEqual(
      listed.map((r) => r.run_id),
      [...ids].reverse(),
    );
    assert.ok(listed.every((r) => r.status === "success" && r.thread_id === t.thread_id));
    const p1 = await c.runs.list(t.thread_id, { limit: 2 });
    const p2 = await c.runs.list(t.thread_id, { limit: 2, offset: 2 });
    assert.deepEqual(
      [...p1, ...p2].map((r) => r.run_id),
      [...ids].reverse(),
    );
    assert.equal(p2.length, 1);

    const pending = await c.runs.create(t.thread_id, "agent", { input: human("later"), afterSeconds: 60 });
    assert.deepEqual(
      (await c.runs.list(t.thread_id, { status: "pending" })).map((r) => r.run_id),
      [pending.run_id],
    );
    assert.equal((await c.runs.list(t.thread_id, { status: "success" })).length, 3);

    const got = await c.runs.get(t.thread_id, ids[0]!);
    assert.equal(got.run_id, ids[0]);
    assert.equal(got.assistant_id, defaultAssistantId("agent"));

    await c.runs.cancel(t.thread_id, pending.run_id);
    await waitFor(async () => (await status(t.thread_id, pending.run_id)) === "interrupted", {
      what: "cancelled",
    });
    assert.equal((await c.threads.get(t.thread_id)).status, "idle");

    const del = await http(h.url, "DELETE", `/threads/${t.thread_id}/runs/${ids[0]}`);
    assert.equal(del.status, 204);
    assertDetail(await http(h.url, "GET", `/threads/${t.thread_id}/runs/${ids[0]}`), 404, "get deleted run");
    assertDetail(await http(h.url, "DELETE", `/threads/${t.thread_id}/runs/${ids[0]}`), 404, "delete twice");
    assert.equal((await c.runs.list(t.thread_id)).length, 3);

    assertDetail(
      await http(h.url, "GET", `/threads/${t.thread_id}/runs/${randomUUID()}`),
      404,
      "unknown run",
    );
    const other = await c.threads.create();
    assertDetail(
      await http(h.url, "GET", `/threads/${other.thread_id}/runs/${ids[1]}`),
      404,
      "run of another thread",
    );
    assertDetail(await http(h.url, "GET", `/threads/${randomUUID()}/runs`), 404, "runs of a missing thread");
  });

  const startSlow = async (text: string, sleepMs = 10_000, threadId?: string) => {
    const t = threadId ?? (await c.threads.create()).thread_id;
    const run = await c.runs.create(t, "slow", {
      input: human(text),
      config: { configurable: { sleep_ms: sleepMs } },
    });
    await waitFor(async () => (await status(t, run.run_id)) === "running", { what: "run running" });
    return { t, run };
  };

  test("cancel (interrupt, wait): the running run stops at once, interrupted, progress kept", T, async () => {
    const { t, run } = await startSlow("cancel me");
    const started = Date.now();
    const res = await http(h.url, "POST", `/threads/${t}/runs/${run.run_id}/cancel?wait=1&action=interrupt`);
    assert.ok(res.status === 200 || res.status === 204, `cancel status ${res.status} ${res.text}`);
    assert.ok(Date.now() - started < 5000, "the run was stopped, not waited out");
    assert.equal(await status(t, run.run_id), "interrupted");
    const thread = await c.threads.get(t);
    assert.equal(thread.status, "idle");
    assert.deepEqual(
      contents((await c.threads.getState(t)).values),
      ["cancel me"],
      "the input checkpoint stays",
    );
  });

  test("cancel (interrupt, no wait) via the SDK: the run ends interrupted", T, async () => {
    const { t, run } = await startSlow("cancel me later");
    const raw = await http(h.url, "POST", `/threads/${t}/runs/${run.run_id}/cancel?wait=0&action=interrupt`);
    assert.ok([200, 202, 204].includes(raw.status), `cancel status ${raw.status} ${raw.text}`);
    await waitFor(async () => (await status(t, run.run_id)) === "interrupted", {
      timeoutMs: 5000,
      what: "interrupted",
    });
    assert.notEqual((await c.threads.get(t)).status, "busy");
    // SDK form on a second run.
    const second = await startSlow("again", 10_000, t);
    await c.runs.cancel(t, second.run.run_id, false, "interrupt");
    await waitFor(async () => (await status(t, second.run.run_id)) === "interrupted", {
      timeoutMs: 5000,
      what: "interrupted (sdk)",
    });
  });

  test("cancel (rollback, wait): the run and its checkpoints are deleted", T, async () => {
    const t = (await c.threads.create()).thread_id;
    // One graph throughout: state and history are read through the thread's current graph.
    await c.runs.wait(t, "slow", { input: human("keep"), config: { configurable: { sleep_ms: 10 } } });
    const stateBefore = await c.threads.getState(t);
    const historyBefore = await c.threads.getHistory(t, { limit: 100 });
    const { run } = await startSlow("doomed", 10_000, t);
    await c.runs.cancel(t, run.run_id, true, "rollback");
    assertDetail(await http(h.url, "GET", `/threads/${t}/runs/${run.run_id}`), 404, "rolled-back run");
    assert.deepEqual(await c.threads.getState(t), stateBefore);
    assert.deepEqual(await c.threads.getHistory(t, { limit: 100 }), historyBefore);
    const thread = await c.threads.get(t);
    assert.equal(thread.status, "idle");
    assert.deepEqual(contents(thread.values), ["keep", "slow echo: keep"]);
    assert.equal((await c.runs.list(t)).length, 1);
  });

  test("rollback of a run on another graph restores the thread's graph binding", T, async () => {
    const t = (await c.threads.create()).thread_id;
    await c.runs.wait(t, "agent", { input: human("keep") });
    const threadBefore = await c.threads.get(t);
    const stateBefore = await c.threads.getState(t);
    const historyBefore = await c.threads.getHistory(t, { limit: 100 });
    const { run } = await startSlow("doomed", 10_000, t);
    assert.equal((await c.threads.get(t)).metadata?.graph_id, "slow");
    await c.runs.cancel(t, run.run_id, true, "rollback");
    const threadAfter = await c.threads.get(t);
    assert.equal(threadAfter.metadata?.graph_id, "agent");
    assert.deepEqual(threadAfter.metadata, threadBefore.metadata);
    assert.deepEqual(await c.threads.getState(t), stateBefore);
    assert.deepEqual(await c.threads.getHistory(t, { limit: 100 }), historyBefore);
  });

  test("cancel (rollback, no wait): the run disappears", T, async () => {
    const { t, run } = await startSlow("doomed too");
    const raw = await http(h.url, "POST", `/threads/${t}/runs/${run.run_id}/cancel?action=rollback`);
    assert.ok([200, 202, 204].includes(raw.status), `cancel status ${raw.status} ${raw.text}`);
    await waitFor(async () => (await http(h.url, "GET", `/threads/${t}/runs/${run.run_id}`)).status === 404, {
      timeoutMs: 5000,
      what: "run deleted",
    });
    await waitFor(async () => (await c.threads.get(t)).status === "idle", {
      timeoutMs: 5000,
      what: "thread idle",
    });
    assert.deepEqual(await c.threads.getHistory(t), []);
  });

  test("cancel of an unknown run → 404; unknown action → 422", T, async () => {
    const t = await c.threads.create();
    assertDetail(
      await http(h.url, "POST", `/threads/${t.thread_id}/runs/${randomUUID()}/cancel`),
      404,
      "unknown",
    );
    const run = await c.runs.create(t.thread_id, "agent", { input: human("x"), afterSeconds: 30 });
    assertValidation(
      await http(h.url, "POST", `/threads/${t.thread_id}/runs/${run.run_id}/cancel?action=explode`),
      "action",
      "action=explode",
    );
    await c.runs.cancel(t.thread_id, run.run_id, true);
    assert.equal(await status(t.thread_id, run.run_id), "interrupted");
  });

  // ---------------------------------------------------------------------------------------------
  // stateless runs

  test("stateless POST /runs: a temporary thread, deleted after the run by default", T, async () => {
    const res = await http(h.url, "POST", "/runs", { assistant_id: "agent", input: human("temp") });
    assert.equal(res.status, 200);
    const run = res.body;
    assert.match(run.run_id, UUID_RE);
    assert.match(run.thread_id, UUID_RE);
    const loc = res.headers.get("content-location") ?? "";
    assert.match(
      loc,
      new RegExp(`^(/threads/${run.thread_id})?/runs/${run.run_id}$`),
      `content-location ${loc}`,
    );
    await waitFor(async () => (await http(h.url, "GET", `/threads/${run.thread_id}`)).status === 404, {
      timeoutMs: 10_000,
      what: "temporary thread deleted",
    });
  });

  test("stateless /runs/wait and /runs/stream", T, async () => {
    const out = await c.runs.wait(null, "agent", { input: human("once") });
    assert.deepEqual(contents(out), ["once", "echo: once"]);

    const raw = await http(h.url, "POST", "/runs/wait", { assistant_id: "agent", input: human("raw") });
    assert.equal(raw.status, 200);
    assert.deepEqual(contents(raw.body), ["raw", "echo: raw"]);
    assert.match(raw.headers.get("content-location") ?? "", /\/runs\/[0-9a-f-]{36}$/);

    const seen: { run_id: string }[] = [];
    const parts = await collect(
      c.runs.stream(null, "agent", {
        input: human("streamed"),
        streamMode: ["values", "updates"],
        onRunCreated: (p) => seen.push(p),
      }),
    );
    const runId = checkStream(parts);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.run_id, runId);
    assert.deepEqual(contents(parts.filter((p) => p.event === "values").at(-1)!.data), [
      "streamed",
      "echo: streamed",
    ]);

    const err = await rejection(c.runs.wait(null, "fail", { input: human("x") }));
    assert.match(err.message, /CustomError/);
  });

  // Regression (issue 15): a stateless run's temporary thread went with it as it ended, and the
  // handler that looked the run up again to wait on it answered 404 (about 1 call in 40).
  test("stateless wait and stream always answer the finished run: sequential and 16 at once", {
    timeout: 90_000,
  }, async () => {
    const failures: string[] = [];
    const waitOnce = async (i: number) => {
      try {
        const out = await c.runs.wait(null, "agent", { input: human(`n${i}`) });
        if (contents(out).at(-1) !== `echo: n${i}`) failures.push(`wait ${i}: ${JSON.stringify(out)}`);
      } catch (err) {
        failures.push(`wait ${i}: ${(err as Error).message}`);
      }
    };
    for (let i = 0; i < 200; i++) await waitOnce(i);
    let next = 200;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < 500) await waitOnce(next++);
      }),
    );
    for (let i = 0; i < 100; i++) {
      const res = await postStream("/runs/stream", { assistant_id: "agent", input: human(`s${i}`) });
      const events = await readSSE(res);
      const last = events.filter((e) => e.event === "values").at(-1);
      if (res.status !== 200 || !last || contents(last.data).at(-1) !== `echo: s${i}`)
        failures.push(`stream ${i}: ${res.status} ${JSON.stringify(events.slice(0, 2))}`);
    }
    assert.deepEqual(failures, []);
  });

  // Regression (issue 15): stateless runs executed without a checkpointer, so interrupt() failed them
  // with "No checkpointer set"; the official server runs them on a temporary thread.
  test(
    "a stateless run of a graph that calls interrupt() ends with __interrupt__, not an error",
    T,
    async () => {
      const out = (await c.runs.wait(null, "interrupt", { input: human("approve?") })) as any;
      assert.equal(out.__error__, undefined, JSON.stringify(out));
      assert.deepEqual(contents(out), ["approve?"]);
      assert.deepEqual(
        out.__interrupt__.map((i: { value: unknown }) => i.value),
        [{ question: "approve?" }],
      );

      const parts = await collect(
        c.runs.stream(null, "interrupt", { input: human("stream me"), streamMode: ["updates"] }),
      );
      assert.ok(!parts.some((p) => p.event === "error"), JSON.stringify(parts));
      const update = parts.find((p) => p.event === "updates" && p.data.__interrupt__);
      assert.ok(update, `an __interrupt__ update: ${JSON.stringify(parts)}`);

      // Kept (on_completion keep), the thread is a real one: interrupted, and it can be resumed.
      const kept = await http(h.url, "POST", "/runs", {
        assistant_id: "interrupt",
        input: human("keep me"),
        on_completion: "keep",
      });
      assert.equal(kept.status, 200);
      const joined = (await c.runs.join(kept.body.thread_id, kept.body.run_id)) as any;
      assert.equal(joined.__interrupt__.length, 1);
      const thread = await c.threads.get(kept.body.thread_id);
      assert.equal(thread.status, "interrupted");
      const resumed = await c.runs.wait(thread.thread_id, "interrupt", { command: { resume: "yes" } });
      assert.deepEqual(contents(resumed), ["keep me", "approved: yes"]);
    },
  );

  test("stateless on_completion keep leaves the thread; /runs/batch keep vs delete", T, async () => {
    const kept = await http(h.url, "POST", "/runs", {
      assistant_id: "agent",
      input: human("keep me"),
      on_completion: "keep",
    });
    assert.equal(kept.status, 200);
    const keptRun = kept.body;
    assert.deepEqual(contents(await c.runs.join(keptRun.thread_id, keptRun.run_id)), [
      "keep me",
      "echo: keep me",
    ]);
    assert.equal(await status(keptRun.thread_id, keptRun.run_id), "success");
    assert.deepEqual(contents((await c.threads.getState(keptRun.thread_id)).values), [
      "keep me",
      "echo: keep me",
    ]);

    const batch = await http(h.url, "POST", "/runs/batch", [
      { assistant_id: "agent", input: human("b-keep"), on_completion: "keep" },
      { assistant_id: "agent", input: human("b-delete"), on_completion: "delete" },
    ]);
    assert.equal(batch.status, 200);
    assert.ok(Array.isArray(batch.body) && batch.body.length === 2, batch.text);
    const [keep, del] = batch.body;
    assert.notEqual(keep.thread_id, del.thread_id);
    await waitFor(async () => (await status(keep.thread_id, keep.run_id)) === "success", {
      timeoutMs: 10_000,
      what: "kept run success",
    });
    assert.deepEqual(contents((await c.threads.getState(keep.thread_id)).values), ["b-keep", "echo: b-keep"]);
    await waitFor(async () => (await http(h.url, "GET", `/threads/${del.thread_id}`)).status === 404, {
      timeoutMs: 10_000,
      what: "temporary thread deleted",
    });
    // The thread that was kept is still there afterwards.
    assert.equal((await http(h.url, "GET", `/threads/${keep.thread_id}`)).status, 200);

    const viaSdk = await c.runs.createBatch([
      { assistantId: "agent", input: human("s1") },
      { assistantId: "agent", input: human("s2") },
    ]);
    assert.equal(viaSdk.length, 2);
    assert.ok(viaSdk.every((r) => UUID_RE.test(r.run_id)));
  });

  // ---------------------------------------------------------------------------------------------
  // run options

  test("if_not_exists: create makes the thread; reject (the default) → 404", T, async () => {
    const fresh = randomUUID();
    const out = await c.runs.wait(fresh, "agent", { input: human("new"), ifNotExists: "create" });
    assert.deepEqual(contents(out), ["new", "echo: new"]);
    const thread = await c.threads.get(fresh);
    assert.equal(thread.thread_id, fresh);
    assert.equal(thread.metadata?.graph_id, "agent");

    const missing = randomUUID();
    assertDetail(
      await http(h.url, "POST", `/threads/${missing}/runs`, { assistant_id: "agent", input: human("x") }),
      404,
      "default if_not_exists",
    );
    assertDetail(
      await http(h.url, "POST", `/threads/${missing}/runs`, {
        assistant_id: "agent",
        input: human("x"),
        if_not_exists: "reject",
      }),
      404,
      "if_not_exists reject",
    );
    assertDetail(
      await http(h.url, "POST", `/threads/${missing}/runs/wait`, {
        assistant_id: "agent",
        input: human("x"),
      }),
      404,
      "wait on a missing thread",
    );
    const stream = await postStream(`/threads/${missing}/runs/stream`, {
      assistant_id: "agent",
      input: human("x"),
    });
    assert.equal(stream.status, 404, "stream on a missing thread is refused before the stream starts");
    await stream.body?.cancel();
    assert.equal((await http(h.url, "GET", `/threads/${missing}`)).status, 404);
  });

  test("after_seconds: the run stays pending until then", T, async () => {
    const t = await c.threads.create();
    const created = Date.now();
    const run = await c.runs.create(t.thread_id, "agent", { input: human("later"), afterSeconds: 2 });
    assert.equal(run.status, "pending");
    // No signal exists for "has not started yet": sample the status for 1.5 s (bounded loop).
    while (Date.now() - created < 1500) {
      assert.equal(await status(t.thread_id, run.run_id), "pending", `at ${Date.now() - created} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const out = await c.runs.join(t.thread_id, run.run_id);
    assert.ok(Date.now() - created >= 1900, `finished after ${Date.now() - created} ms`);
    assert.deepEqual(contents(out), ["later", "echo: later"]);
    assert.equal(await status(t.thread_id, run.run_id), "success");
  });

  test("config, context and metadata reach the graph and the run record", T, async () => {
    const t = await c.threads.create();
    let runId = "";
    const out = (await c.runs.wait(t.thread_id, "probe", {
      input: { question: "q" },
      config: { configurable: { probe: "p1" } },
      context: { user: "u1" },
      metadata: { origin: "e2e" },
      onRunCreated: (p) => (runId = p.run_id),
    })) as any;
    assert.equal(out.seen.probe, "p1");
    assert.deepEqual(out.seen.context, { user: "u1" });
    assert.equal(out.seen.thread_id, t.thread_id);
    // Guess (reference behaviour): the run id is in configurable too.
    assert.equal(out.seen.run_id, runId);
    const run = await c.runs.get(t.thread_id, runId);
    assert.equal(run.metadata?.origin, "e2e");
    const state = await c.threads.getState(t.thread_id);
    assert.equal(state.metadata?.origin, "e2e", "run metadata is written into checkpoint metadata");
  });

  test("an assistant's config and context apply to its runs; the run's own config wins", T, async () => {
    const a = await c.assistants.create({
      graphId: "probe",
      config: { configurable: { probe: "from-assistant" } },
      context: { user: "assistant-user" },
    });
    const t = await c.threads.create();
    const first = (await c.runs.wait(t.thread_id, a.assistant_id, { input: { question: "1" } })) as any;
    assert.equal(first.seen.probe, "from-assistant");
    assert.deepEqual(first.seen.context, { user: "assistant-user" });
    const second = (await c.runs.wait(t.thread_id, a.assistant_id, {
      input: { question: "2" },
      config: { configurable: { probe: "from-run" } },
      context: { user: "run-user" },
    })) as any;
    assert.equal(second.seen.probe, "from-run");
    assert.deepEqual(second.seen.context, { user: "run-user" });
  });

  test("checkpoint_id / checkpoint continue from an earlier checkpoint", T, async () => {
    const t = await c.threads.create();
    await c.runs.wait(t.thread_id, "agent", { input: human("a") });
    await c.runs.wait(t.thread_id, "agent", { input: human("b") });
    const history = await c.threads.getHistory(t.thread_id, { limit: 100 });
    const afterA = history.find(
      (s) => s.next.length === 0 && JSON.stringify(contents(s.values)) === JSON.stringify(["a", "echo: a"]),
    );
    assert.ok(afterA, "the checkpoint after the first run");
    const out = await c.runs.wait(t.thread_id, "agent", {
      input: human("c"),
      checkpointId: afterA.checkpoint.checkpoint_id!,
    });
    assert.deepEqual(contents(out), ["a", "echo: a", "c", "echo: c"]);
    assert.deepEqual(contents((await c.threads.getState(t.thread_id)).values), [
      "a",
      "echo: a",
      "c",
      "echo: c",
    ]);
    const out2 = await c.runs.wait(t.thread_id, "agent", {
      input: human("d"),
      checkpoint: { checkpoint_id: afterA.checkpoint.checkpoint_id! } as any,
    });
    assert.deepEqual(contents(out2), ["a", "echo: a", "d", "echo: d"]);
  });

  test("webhook: the run is POSTed to the URL when it ends", T, async () => {
    const received: { url: string; body: any }[] = [];
    const server: Server = createServer((req, res) => {
      let raw = "";
      req.setEncoding("utf8");
      req.on("data", (chunk) => (raw += chunk));
      req.on("end", () => {
        let body: any = raw;
        try {
          body = JSON.parse(raw);
        } catch {}
        if (req.method === "POST") received.push({ url: req.url ?? "", body });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    try {
      const port = (server.address() as AddressInfo).port;
      const t = await c.threads.create();
      let runId = "";
      await c.runs.wait(t.thread_id, "agent", {
        input: human("hook"),
        webhook: `http://127.0.0.1:${port}/hook?n=1`,
        onRunCreated: (p) => (runId = p.run_id),
      });
      const hit = await waitFor(() => received.find((r) => r.body?.run_id === runId), {
        timeoutMs: 10_000,
        what: "webhook POST",
      });
      assert.equal(hit.url, "/hook?n=1");
      assert.equal(hit.body.status, "success");
      assert.equal(hit.body.thread_id, t.thread_id);

      let failId = "";
      await c.runs.wait(t.thread_id, "fail", {
        input: human("hook"),
        webhook: `http://127.0.0.1:${port}/hook?n=2`,
        raiseError: false,
        onRunCreated: (p) => (failId = p.run_id),
      });
      const failHit = await waitFor(() => received.find((r) => r.body?.run_id === failId), {
        timeoutMs: 10_000,
        what: "webhook POST for the failed run",
      });
      assert.equal(failHit.body.status, "error");
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  test("on_disconnect cancel: dropping the stream interrupts the run", T, async () => {
    const t = await c.threads.create();
    const ac = new AbortController();
    const res = await postStream(
      `/threads/${t.thread_id}/runs/stream`,
      {
        assistant_id: "slow",
        input: human("hang up"),
        stream_mode: ["custom"],
        on_disconnect: "cancel",
        config: { configurable: { sleep_ms: 10_000 } },
      },
      { signal: ac.signal },
    );
    assert.equal(res.status, 200);
    const it = iterSSE(res);
    const first = (await it.next()).value as SSEEvent;
    assert.equal(first.event, "metadata");
    const runId = first.data.run_id;
    // Wait for the run to be executing before hanging up.
    for (let i = 0; i < 50; i++) {
      const next = await it.next();
      if (next.done || next.value.event === "custom") break;
    }
    ac.abort();
    await it.return(undefined).catch(() => {});
    await waitFor(async () => (await status(t.thread_id, runId)) === "interrupted", {
      timeoutMs: 8000,
      what: "run interrupted after disconnect",
    });
    await waitFor(async () => (await c.threads.get(t.thread_id)).status !== "busy", {
      what: "thread not busy",
    });
  });

  test("on_disconnect continue (the default): the run finishes after the client left", T, async () => {
    const t = await c.threads.create();
    const ac = new AbortController();
    const res = await postStream(
      `/threads/${t.thread_id}/runs/stream`,
      { assistant_id: "slow", input: human("keep going"), config: { configurable: { sleep_ms: 800 } } },
      { signal: ac.signal },
    );
    const it = iterSSE(res);
    const first = (await it.next()).value as SSEEvent;
    const runId = first.data.run_id;
    ac.abort();
    await it.return(undefined).catch(() => {});
    const out = await c.runs.join(t.thread_id, runId);
    assert.deepEqual(contents(out), ["keep going", "slow echo: keep going"]);
    assert.equal(await status(t.thread_id, runId), "success");
  });

  // ---------------------------------------------------------------------------------------------
  // bad inputs

  test("an unknown assistant is a 404 everywhere, and nothing is created", T, async () => {
    const t = await c.threads.create();
    for (const assistant of ["no_such_graph", randomUUID()]) {
      for (const path of [
        `/threads/${t.thread_id}/runs`,
        `/threads/${t.thread_id}/runs/wait`,
        "/runs",
        "/runs/wait",
      ]) {
        assertDetail(
          await http(h.url, "POST", path, { assistant_id: assistant, input: human("x") }),
          404,
          `${path} ${assistant}`,
        );
      }
      const stream = await postStream(`/threads/${t.thread_id}/runs/stream`, {
        assistant_id: assistant,
        input: human("x"),
      });
      assert.equal(stream.status, 404, "refused before the stream starts");
      assert.match(stream.headers.get("content-type") ?? "", /application\/json/);
      await stream.body?.cancel();
    }
    const err = await rejection(c.runs.create(t.thread_id, "no_such_graph", { input: human("x") }));
    assert.equal(err.status, 404);
    assert.deepEqual(await c.runs.list(t.thread_id), []);
    assert.equal((await c.threads.get(t.thread_id)).status, "idle");
  });

  test("bad run bodies, params and queries are 422 naming the field; nothing is created", T, async () => {
    const t = await c.threads.create();
    const base = { assistant_id: "agent", input: human("x") };
    const cases: [string, unknown, string][] = [
      ["runs", {}, "assistant_id"],
      ["runs", { assistant_id: 5 }, "assistant_id"],
      ["runs", { ...base, stream_mode: "bogus" }, "stream_mode"],
      ["runs", { ...base, stream_mode: ["values", "bogus"] }, "stream_mode"],
      ["runs", { ...base, multitask_strategy: "bogus" }, "multitask_strategy"],
      ["runs", { ...base, if_not_exists: "maybe" }, "if_not_exists"],
      ["runs", { ...base, after_seconds: "soon" }, "after_seconds"],
      ["runs", { ...base, metadata: "x" }, "metadata"],
      ["runs", { ...base, config: "x" }, "config"],
      ["runs", { ...base, config: { configurable: 3 } }, "configurable"],
      ["runs", { ...base, context: 5 }, "context"],
      ["runs", { ...base, interrupt_before: 5 }, "interrupt_before"],
      ["runs", { ...base, command: "resume" }, "command"],
      ["runs", { ...base, checkpoint_id: 7 }, "checkpoint_id"],
      ["runs", { ...base, stream_subgraphs: "yes" }, "stream_subgraphs"],
      ["runs", { ...base, webhook: 42 }, "webhook"],
      ["runs/stream", { ...base, on_disconnect: "explode" }, "on_disconnect"],
      ["runs/stream", { ...base, stream_mode: "bogus" }, "stream_mode"],
      ["runs/stream", { ...base, multitask_strategy: "bogus" }, "multitask_strategy"],
      ["runs/wait", { ...base, multitask_strategy: "bogus" }, "multitask_strategy"],
    ];
    const checks: [string, () => Promise<void>][] = cases.map(([suffix, body, field]) => [
      `${suffix} ${JSON.stringify(body)}`,
      async () =>
        assertValidation(await http(h.url, "POST", `/threads/${t.thread_id}/${suffix}`, body), field),
    ]);
    for (const [path, body, field] of [
      ["/runs", { ...base, on_completion: "maybe" }, "on_completion"],
      ["/runs/stream", { ...base, stream_mode: "bogus" }, "stream_mode"],
      ["/runs/batch", { ...base }, undefined],
      ["/runs/batch", [], undefined],
      ["/runs/batch", [{ ...base, stream_mode: "bogus" }], "stream_mode"],
    ] as const) {
      checks.push([
        `${path} ${JSON.stringify(body)}`,
        async () => assertValidation(await http(h.url, "POST", path, body), field),
      ]);
    }
    for (const [method, path] of [
      ["POST", "/threads/not-a-uuid/runs"],
      ["GET", `/threads/${t.thread_id}/runs/not-a-uuid`],
      ["DELETE", `/threads/${t.thread_id}/runs/not-a-uuid`],
      ["GET", `/threads/${t.thread_id}/runs/not-a-uuid/join`],
      ["POST", `/threads/${t.thread_id}/runs/not-a-uuid/cancel`],
      ["GET", `/threads/${t.thread_id}/runs?limit=abc`],
      ["GET", `/threads/${t.thread_id}/runs?status=bogus`],
      ["GET", `/threads/${t.thread_id}/runs?offset=-1`],
    ] as const) {
      checks.push([
        `${method} ${path}`,
        async () =>
          assertValidation(
            await http(h.url, method, path, method === "POST" && path.endsWith("/runs") ? base : undefined),
          ),
      ]);
    }
    await checkAll(checks);
    assert.deepEqual(await c.runs.list(t.thread_id), []);
    assert.equal((await c.threads.get(t.thread_id)).status, "idle");
  });
});
