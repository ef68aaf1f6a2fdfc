/**
 * The thread-centric streaming protocol over SSE + commands, against a real server: driven through
 * `client.threads.stream()` of @langchain/langgraph-sdk 1.15.0 and through raw HTTP where the test
 * needs the wire (seq, since, errors). Graphs: test/e2e/fixtures/protocol/graphs.ts.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import WebSocket from "ws";
import {
  ALL_CHANNELS as ALL,
  PROTOCOL_CONFIG as CONFIG,
  command,
  post,
  readEvents,
  rootEnd,
} from "../helpers/protocol.js";
import { client, type Hangar, startHangar } from "../helpers/server.js";

describe("protocol v2 over SSE (SQLite)", () => {
  let h: Hangar;
  before(async () => {
    h = await startHangar({ config: CONFIG, env: { HANGAR_THREAD_EVENTS_MAX: "60" } });
  });
  after(async () => {
    await h?.stop();
  });

  // The same over the WebSocket transport (src/protocol/socket.ts): the SDK's commands and subscriptions go on one socket.
  for (const transport of ["sse", "websocket"] as const)
    test(`SDK (${transport}): a message streams its reply in content blocks, a tool call, a subgraph's namespaced events`, async () => {
      const sdk = client(h.url);
      const thread = sdk.threads.stream({
        assistantId: "agent",
        ...(transport === "websocket" && {
          transport: "websocket" as const,
          webSocketFactory: (url: string) => new WebSocket(url) as unknown as globalThis.WebSocket,
        }),
      });
      const events: any[] = [];
      const sub = await thread.subscribe(["messages", "tools", "lifecycle", "values"] as const);
      const done = (async () => {
        for await (const e of sub as AsyncIterable<any>) {
          events.push(e);
          if (rootEnd(e)) break;
        }
      })();
      await thread.run.start({
        input: { messages: [{ type: "human", content: "weather?", id: "client-msg-1" }] },
      });
      await Promise.race([done, new Promise((_, rej) => setTimeout(() => rej(new Error("no end")), 60_000))]);
      await thread.close();

      const root = events.filter((e) => e.method === "lifecycle" && e.params.namespace.length === 0);
      assert.deepEqual(
        root.map((e) => e.params.data.event),
        ["running", "completed"],
      );
      const messages = events.filter((e) => e.method === "messages");
      const starts = messages.filter((e) => e.params.data.event === "message-start");
      assert.ok(starts.every((e) => e.params.data.role === "ai"));
      const toolCall = messages.find(
        (e) => e.params.data.event === "content-block-finish" && e.params.data.content.type === "tool_call",
      );
      assert.deepEqual(toolCall.params.data.content, {
        type: "tool_call",
        id: "call_weather_1",
        name: "get_weather",
        args: { city: "Paris" },
      });
      // A node task's messages stream in its namespace, as the reference's do: the root graph's `model`
      // node's in ["model:<task>"], the subgraph's `lookup` node's in ["research:<t>", "lookup:<t>"].
      const rootModel = (e: any) =>
        e.params.namespace.length === 1 && e.params.namespace[0].startsWith("model:");
      assert.ok(
        messages.every((e) => e.params.namespace.length > 0),
        "no message events in the root graph's own namespace",
      );
      const rootText = messages
        .filter((e) => rootModel(e) && e.params.data.delta?.type === "text-delta")
        .map((e) => e.params.data.delta.text)
        .join("");
      assert.equal(rootText, "The weather in Paris is sunny.");
      const tools = events.filter((e) => e.method === "tools");
      assert.deepEqual(
        tools.map((e) => e.params.data.event),
        ["tool-started", "tool-finished"],
      );
      assert.ok(
        tools.every((e) => e.params.namespace.length === 1 && e.params.namespace[0].startsWith("tools:")),
      );
      const sub1 = messages.filter((e) => e.params.namespace[0]?.startsWith("research:"));
      assert.equal(
        sub1
          .filter((e) => e.params.data.delta?.type === "text-delta")
          .map((e) => e.params.data.delta.text)
          .join(""),
        "Found it.",
      );
      assert.ok(
        sub1.every((e) => e.params.namespace.length === 2 && e.params.namespace[1].startsWith("lookup:")),
      );
      const research = events.filter(
        (e) => e.method === "lifecycle" && e.params.namespace[0]?.startsWith("research:"),
      );
      assert.deepEqual(
        research.map((e) => [e.params.data.event, e.params.data.graph_name]),
        [
          ["started", "research"],
          ["started", "lookup"],
          ["completed", "lookup"],
          ["completed", "research"],
        ],
      );
      // The client's message id is kept; streamed message ids are those stored in state.
      const state = await sdk.threads.getState(thread.threadId);
      const ids = ((state.values as any).messages as any[]).map((m) => m.id);
      assert.equal(ids[0], "client-msg-1");
      for (const s of starts.filter(rootModel)) assert.ok(ids.includes(s.params.data.id));
      // Ordinary runs: listed by REST.
      const runs = await sdk.runs.list(thread.threadId);
      assert.equal(runs.length, 1);
      assert.equal(runs[0]!.status, "success");
    });

  test("an interrupt is shown and resumed with input.respond; input.answered follows", async () => {
    const threadId = randomUUID();
    const started = await command(h, threadId, "run.start", {
      assistant_id: "hitl",
      input: { messages: [] },
    });
    assert.equal(started.body.type, "success", JSON.stringify(started.body));
    const first = await readEvents(h, threadId, { channels: ["lifecycle", "input"] }, rootEnd);
    const asked = first.find((e) => e.method === "input.requested");
    assert.deepEqual(asked.params.data.payload, { question: "Approve?" });
    assert.equal(first.at(-1).params.data.event, "interrupted");

    const wrong = await command(h, threadId, "input.respond", {
      namespace: [],
      interrupt_id: "nope",
      response: 1,
    });
    assert.equal(wrong.status, 200);
    assert.equal(wrong.body.error, "no_such_interrupt");

    const sdk = client(h.url);
    const thread = sdk.threads.stream(threadId, { assistantId: "hitl" });
    await thread.input.respond({
      namespace: [],
      interrupt_id: asked.params.data.interrupt_id,
      response: "yes",
    });
    await thread.close();
    const since = first.at(-1).seq;
    const second = await readEvents(h, threadId, { channels: ["lifecycle", "input"], since }, rootEnd);
    assert.ok(second.every((e) => e.seq > since));
    const answered = second.find((e) => e.method === "input.answered");
    assert.deepEqual(answered.params.data.interrupt_ids, [asked.params.data.interrupt_id]);
    assert.equal(second.at(-1).params.data.event, "completed");
    const state = await sdk.threads.getState(threadId);
    assert.equal(((state.values as any).messages as any[]).at(-1).content, 'approved: "yes"');

    // run.start with input on a thread with a pending interrupt resumes it (as the reference 1.5.1 does).
    const again = await command(h, threadId, "run.start", { assistant_id: "hitl", input: { messages: [] } });
    assert.equal(again.body.type, "success");
    const third = await readEvents(
      h,
      threadId,
      { channels: ["lifecycle", "input"], since: second.at(-1).seq },
      rootEnd,
    );
    assert.equal(third.at(-1).params.data.event, "interrupted");
    const resumed = await command(h, threadId, "run.start", { assistant_id: "hitl", input: "no" });
    assert.equal(resumed.body.type, "success");
    const fourth = await readEvents(
      h,
      threadId,
      { channels: ["lifecycle", "input"], since: third.at(-1).seq },
      rootEnd,
    );
    assert.ok(fourth.some((e) => e.method === "input.answered"));
    assert.equal(fourth.at(-1).params.data.event, "completed");
    const after = await sdk.threads.getState(threadId);
    assert.equal(((after.values as any).messages as any[]).at(-1).content, 'approved: "no"');
  });

  test("REST runs serve the tools and lifecycle stream modes (SDK 1.15 types)", async () => {
    const sdk = client(h.url);
    const t = (await sdk.threads.create()).thread_id;
    const chunks: { event: string; data: any }[] = [];
    for await (const chunk of sdk.runs.stream(t, "agent", {
      input: { messages: [{ type: "human", content: "weather?" }] },
      streamMode: ["tools", "lifecycle"],
      streamSubgraphs: true,
    }))
      chunks.push(chunk as any);
    const tools = chunks.filter((c) => c.event === "tools");
    assert.deepEqual(
      tools.map((c) => c.data.event),
      ["on_tool_start", "on_tool_end"],
    );
    assert.equal(tools[0]!.data.toolCallId, "call_weather_1");
    assert.equal(tools[0]!.data.name, "get_weather");
    assert.equal(tools[1]!.data.output.content, "Sunny in Paris");
    const lifecycle = chunks.filter((c) => c.event.startsWith("lifecycle|research:"));
    assert.deepEqual(
      lifecycle.map((c) => c.data.event),
      ["started", "completed"],
    );
    assert.equal(lifecycle[0]!.data.namespace[0], lifecycle[0]!.event.split("|")[1]);
    // Runs without the protocol write nothing to the thread's event buffer.
    assert.equal((await command(h, t, "state.get", { namespace: [] })).body.meta.applied_through_seq, 0);
  });

  test("run.start applies the multitask strategy: reject refuses while a run is in flight", async () => {
    const threadId = randomUUID();
    const slow = {
      assistant_id: "chatter",
      input: { messages: [] },
      config: { configurable: { count: 50, delay_ms: 20 } },
    };
    assert.equal((await command(h, threadId, "run.start", slow)).body.type, "success");
    const refused = await command(h, threadId, "run.start", { ...slow, multitask_strategy: "reject" });
    assert.equal(refused.status, 200);
    assert.equal(refused.body.error, "invalid_argument");
    assert.match(refused.body.message, /already running/);
    const interrupting = await command(h, threadId, "run.start", { ...slow, multitaskStrategy: "interrupt" });
    assert.equal(interrupting.body.type, "success");
    const runs = await client(h.url).runs.list(threadId);
    assert.equal(runs.length, 2);
  });

  test("bad commands get the protocol's error at HTTP 200; bad bodies a 400 naming the problem", async () => {
    const threadId = randomUUID();
    const unknown = await command(h, threadId, "no.such", {});
    assert.deepEqual(
      [unknown.status, unknown.body.type, unknown.body.error],
      [200, "error", "unknown_command"],
    );
    const noAssistant = await command(h, threadId, "run.start", { input: {} });
    assert.deepEqual([noAssistant.status, noAssistant.body.error], [200, "invalid_argument"]);
    assert.match(noAssistant.body.message, /assistant_id/);
    const badAssistant = await command(h, threadId, "run.start", { assistant_id: "missing", input: {} });
    assert.deepEqual([badAssistant.status, badAssistant.body.error], [200, "invalid_argument"]);
    const malformed = await post(h, `/threads/${threadId}/commands`, "{not json");
    assert.equal(malformed.status, 400);
    assert.match((await malformed.json()).message, /JSON/);
    const noId = await post(h, `/threads/${threadId}/commands`, { method: "state.get" });
    assert.equal(noId.status, 400);
    assert.match((await noId.json()).message, /id/);
    const badStream = await post(h, `/threads/${threadId}/stream/events`, { channels: "values" });
    assert.equal(badStream.status, 400);
    assert.match((await badStream.json()).message, /channels/);
    const badThread = await post(h, "/threads/not-a-uuid/stream/events", { channels: ["values"] });
    assert.equal(badThread.status, 400);
    // Unknown keys are accepted.
    const extra = await readEvents(h, threadId, { channels: ["values"], whatever: 1 }, () => true, 500);
    assert.deepEqual(extra, []);
  });

  test("retention: a reader whose since is older than what is kept is told what it missed", async () => {
    const threadId = randomUUID();
    await command(h, threadId, "run.start", {
      assistant_id: "chatter",
      input: { messages: [] },
      config: { configurable: { count: 100 } },
    });
    const end = (await readEvents(h, threadId, { channels: ["lifecycle"] }, rootEnd)).at(-1);
    assert.ok(end.seq > 100, `${end.seq} events`);
    const all = await readEvents(h, threadId, { channels: ALL }, (e) => e.seq === end.seq);
    assert.equal(all.length, 60, "the newest 60 are kept");
    assert.ok(
      all.every((e) => e.type === "event"),
      "no missed report without since",
    );
    const withSince = await readEvents(h, threadId, { channels: ALL, since: 0 }, (e) => e.seq === end.seq);
    assert.equal(withSince[0].type, "error");
    assert.equal(withSince[0].id, null);
    assert.equal(withSince[0].missed.from, 1);
    assert.equal(withSince[0].missed.to, withSince[1].seq - 1);
    const seqs = withSince.slice(1).map((e) => e.seq);
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => seqs[0] + i),
    );
  });

  test("deleting a thread ends its streams; a new thread of the same id starts at seq 1 with none of the old events", async () => {
    const threadId = randomUUID();
    const start = () =>
      command(h, threadId, "run.start", {
        assistant_id: "chatter",
        input: { messages: [] },
        config: { configurable: { count: 3 } },
      });
    await start();
    const first = await readEvents(h, threadId, { channels: ALL }, rootEnd);
    const lastSeq = first.at(-1).seq;
    // A reader following the thread live, past everything it had.
    const ac = new AbortController();
    const following = fetch(`${h.url}/threads/${threadId}/stream/events`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ channels: ALL, since: lastSeq }),
      signal: ac.signal,
    });
    const res = await following;
    assert.equal(res.status, 200);
    const ended = res.text();
    assert.equal((await fetch(`${h.url}/threads/${threadId}`, { method: "DELETE" })).status, 204);
    const timeout = setTimeout(() => ac.abort(), 15_000);
    try {
      await ended; // the stream ends by itself: it does not go on following another thread of this id
    } finally {
      clearTimeout(timeout);
    }
    assert.equal(ac.signal.aborted, false, "the stream ended after the delete");
    await start();
    const again = await readEvents(h, threadId, { channels: ALL }, rootEnd);
    // Numbered from 1 again: none of the deleted thread's events is kept or replayed.
    assert.deepEqual(
      again.map((e) => e.seq),
      Array.from({ length: again.length }, (_, i) => i + 1),
    );
  });
});

describe("protocol v2: since after kill -9 and restart", () => {
  test("a since replay misses nothing and repeats nothing; seq continues", async () => {
    const first = await startHangar({ config: CONFIG });
    const threadId = randomUUID();
    await command(first, threadId, "run.start", {
      assistant_id: "chatter",
      input: { messages: [] },
      config: { configurable: { count: 20 } },
    });
    const before = await readEvents(first, threadId, { channels: ALL }, rootEnd);
    const lastSeq = before.at(-1).seq;
    assert.deepEqual(
      before.map((e) => e.seq),
      Array.from({ length: lastSeq }, (_, i) => i + 1),
    );
    await first.kill9();
    const second = await startHangar({ config: CONFIG, dataDir: first.dataDir });
    try {
      const middle = Math.floor(lastSeq / 2);
      const replay = await readEvents(
        second,
        threadId,
        { channels: ALL, since: middle },
        (e) => e.seq === lastSeq,
      );
      assert.deepEqual(
        replay.map((e) => e.seq),
        Array.from({ length: lastSeq - middle }, (_, i) => middle + 1 + i),
      );
      assert.deepEqual(replay, before.slice(middle));
      await command(second, threadId, "run.start", {
        assistant_id: "chatter",
        input: { messages: [] },
        config: { configurable: { count: 2 } },
      });
      const next = await readEvents(second, threadId, { channels: ["lifecycle"], since: lastSeq }, rootEnd);
      assert.equal(next[0].seq, lastSeq + 1);
    } finally {
      await second.stop();
    }
  });
});

describe("protocol v2: organizations", () => {
  test("another organization's thread is invisible", async () => {
    const h = await startHangar({ config: CONFIG, env: { HANGAR_API_KEYS: "key-a:org-a,key-b:org-b" } });
    try {
      const a = { "x-api-key": "key-a" };
      const b = { "x-api-key": "key-b" };
      const threadId = randomUUID();
      const started = await command(
        h,
        threadId,
        "run.start",
        { assistant_id: "chatter", input: { messages: [] } },
        a,
      );
      assert.equal(started.body.type, "success");
      const own = await readEvents(h, threadId, { channels: ALL }, rootEnd, 30_000, a);
      assert.ok(own.length > 3);
      const other = await readEvents(h, threadId, { channels: ALL, since: 0 }, () => true, 1_500, b);
      assert.deepEqual(other, []);
      const state = await command(h, threadId, "state.get", { namespace: [] }, b);
      assert.equal(state.body.type, "error");
      const none = await post(h, `/threads/${threadId}/commands`, { id: 1, method: "state.get", params: {} });
      assert.equal(none.status, 401);
    } finally {
      await h.stop();
    }
  });
});
