/**
 * The protocol converter (src/protocol/events.ts) and filter (src/protocol/filter.ts), in process:
 * what a LangGraph stream becomes, and which readers get it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { AIMessageChunk } from "@langchain/core/messages";
import { type ProducedEvent, ThreadEventConverter } from "../../src/protocol/events.js";
import { channelOf, matches } from "../../src/protocol/filter.js";
import { toPlain } from "../../src/runtime/graphs/serialize.js";

const converter = () => {
  const out: ProducedEvent[] = [];
  const c = new ThreadEventConverter({ runId: "r1", graphName: "g", toPlain, emit: (e) => out.push(e) });
  return { c, out, brief: () => out.map((e) => `${e.method}:${(e.data as any).event ?? ""}`) };
};

describe("protocol converter", () => {
  test("values: __interrupt__ becomes input.requested once per id; an empty state is not sent", () => {
    const { c, out } = converter();
    c.chunk([], "values", { __interrupt__: [{ id: "i1", value: { q: 1 } }] });
    c.chunk([], "values", { a: 1, __interrupt__: [{ id: "i1", value: { q: 1 } }] });
    c.finish({ status: "success", interrupted: true });
    assert.deepEqual(
      out.map((e) => e.method),
      ["input.requested", "values", "lifecycle"],
    );
    assert.deepEqual(out[0]!.data, { interrupt_id: "i1", payload: { q: 1 } });
    assert.deepEqual(out[1]!.data, { a: 1 });
    assert.deepEqual(out[2]!.data, { event: "interrupted", graph_name: "g" });
  });

  test("a checkpoint comes before the values of its step", () => {
    const { c, out } = converter();
    c.chunk([], "values", { a: 1 });
    c.chunk([], "checkpoints", {
      config: { configurable: { checkpoint_id: "c1" } },
      metadata: { step: 0, source: "loop" },
    });
    assert.deepEqual(
      out.map((e) => e.method),
      ["checkpoints", "values"],
    );
    assert.deepEqual(out[0]!.data, { id: "c1", step: 0, source: "loop" });
  });

  test("streamed chunks become content blocks; a subgraph's namespace starts and ends; errors fail the root", () => {
    const { c, out, brief } = converter();
    c.start(["i0"]);
    const ns = ["sub:t1"];
    const meta = { langgraph_node: "n" };
    c.chunk(ns, "messages", [new AIMessageChunk({ id: "m1", content: "He" }), meta]);
    c.chunk(ns, "messages", [new AIMessageChunk({ id: "m1", content: "llo" }), meta]);
    c.chunk(ns, "messages", [
      new AIMessageChunk({
        id: "m1",
        content: "",
        tool_call_chunks: [{ type: "tool_call_chunk", index: 0, id: "call1", name: "t", args: '{"x":' }],
      }),
      meta,
    ]);
    c.chunk(ns, "messages", [
      new AIMessageChunk({
        id: "m1",
        content: "",
        tool_call_chunks: [{ type: "tool_call_chunk", index: 0, args: "1}" }],
      }),
      meta,
    ]);
    c.chunk([], "tasks", { id: "t1", name: "sub", result: {}, error: null });
    c.finish({ status: "error", error: { error: "Error", message: "boom" } });
    assert.deepEqual(brief(), [
      "lifecycle:running",
      "input.answered:",
      "lifecycle:started",
      "messages:message-start",
      "messages:content-block-start",
      "messages:content-block-delta",
      "messages:content-block-delta",
      "messages:content-block-finish",
      "messages:content-block-start",
      "messages:content-block-delta",
      "messages:content-block-delta",
      "messages:content-block-finish",
      "messages:message-finish",
      "tasks:",
      "lifecycle:completed",
      "lifecycle:failed",
    ]);
    assert.deepEqual(out[1]!.data, { interrupt_ids: ["i0"] });
    assert.deepEqual(out[7]!.data, {
      event: "content-block-finish",
      index: 0,
      content: { type: "text", text: "Hello" },
    });
    assert.deepEqual((out[8]!.data as any).content, {
      type: "tool_call_chunk",
      id: "call1",
      name: "t",
      args: "",
      index: 0,
    });
    assert.deepEqual((out[11]!.data as any).content, {
      type: "tool_call",
      id: "call1",
      name: "t",
      args: { x: 1 },
    });
    assert.equal((out.at(-1)!.data as any).error, JSON.stringify({ error: "Error", message: "boom" }));
  });
});

describe("protocol converter: node tasks, as the reference sends them", () => {
  test("a node task's messages go in its namespace (started, then completed after its result)", () => {
    const { c, out } = converter();
    const meta = { langgraph_node: "model", langgraph_checkpoint_ns: "model:t1" };
    c.chunk([], "tasks", { id: "t1", name: "model", input: {}, triggers: [] });
    c.chunk([], "messages", [new AIMessageChunk({ id: "m1", content: "Hi" }), meta]);
    c.chunk([], "updates", { model: { messages: [] } });
    c.chunk([], "tasks", { id: "t1", name: "model", result: {}, error: null });
    const shown = out.map((e) => [
      e.method,
      (e.data as any).event ?? "",
      e.namespace.join("/"),
      e.node ?? "",
    ]);
    assert.deepEqual(shown, [
      ["tasks", "", "", ""],
      ["lifecycle", "started", "model:t1", ""],
      ["messages", "message-start", "model:t1", ""],
      ["messages", "content-block-start", "model:t1", ""],
      ["messages", "content-block-delta", "model:t1", ""],
      ["messages", "content-block-finish", "model:t1", ""],
      ["messages", "message-finish", "model:t1", ""],
      ["updates", "", "", "model"],
      ["tasks", "", "", ""],
      ["lifecycle", "completed", "model:t1", ""],
    ]);
  });

  test("a tool call whose args arrive whole starts with them and has no delta", () => {
    const { c, out } = converter();
    c.chunk([], "messages", [
      new AIMessageChunk({
        id: "m1",
        content: "",
        tool_call_chunks: [{ type: "tool_call_chunk", index: 0, id: "c1", name: "t", args: '{"x":1}' }],
      }),
      {},
    ]);
    c.finish({ status: "success", interrupted: false });
    assert.deepEqual(
      out.map((e) => (e.data as any).event),
      ["message-start", "content-block-start", "content-block-finish", "message-finish", "completed"],
    );
    assert.equal((out[1]!.data as any).content.args, '{"x":1}');
  });

  test("the input checkpoint (step -1) is not sent", () => {
    const { c, out } = converter();
    c.chunk([], "checkpoints", {
      config: { configurable: { checkpoint_id: "c0" } },
      metadata: { step: -1, source: "input" },
    });
    c.chunk([], "checkpoints", {
      config: { configurable: { checkpoint_id: "c1" } },
      parentConfig: { configurable: { checkpoint_id: "c0" } },
      metadata: { step: 0, source: "loop" },
    });
    assert.deepEqual(
      out.map((e) => e.data),
      [{ id: "c1", parent_id: "c0", step: 0, source: "loop" }],
    );
  });

  test("with the tools mode, tool events come with its chunks, in the callbacks' node task namespace", () => {
    const out: ProducedEvent[] = [];
    const c = new ThreadEventConverter({
      runId: "r1",
      graphName: "g",
      toPlain,
      toolsInStream: true,
      emit: (e) => out.push(e),
    });
    const meta = { langgraph_node: "tools", langgraph_checkpoint_ns: "tools:t2" };
    c.tool("start", "run-a", { name: "lookup", input: '{"city":"Paris"}', callId: "call-1", metadata: meta });
    c.tool("end", "run-a", { output: "sunny" });
    assert.equal(out.length, 0, "the callbacks alone send nothing");
    c.chunk([], "tools", {
      event: "on_tool_start",
      toolCallId: "call-1",
      name: "lookup",
      input: '{"city":"Paris"}',
    });
    c.chunk([], "tools", { event: "on_tool_end", toolCallId: "call-1", name: "lookup", output: "sunny" });
    assert.deepEqual(
      out.map((e) => [e.method, (e.data as any).event, e.namespace.join("/")]),
      [
        ["lifecycle", "started", "tools:t2"],
        ["tools", "tool-started", "tools:t2"],
        ["tools", "tool-finished", "tools:t2"],
      ],
    );
    assert.deepEqual(out[2]!.data, { event: "tool-finished", tool_call_id: "call-1", output: "sunny" });
  });
});

describe("protocol filter", () => {
  const ev = (method: string, namespace: string[], data: unknown = {}) => ({ method, namespace, data });
  test("channels: input is input.requested and input.answered; custom:<name> also matches custom", () => {
    assert.equal(channelOf(ev("input.answered", [])), "input");
    assert.equal(channelOf(ev("custom", [], { name: "x", payload: 1 })), "custom:x");
    assert.ok(matches(ev("custom", [], { name: "x" }), { channels: ["custom"] }));
    assert.ok(!matches(ev("custom", [], { name: "x" }), { channels: ["custom:y"] }));
    assert.ok(!matches(ev("weird", []), { channels: ["values"] }));
  });
  test("namespaces: a segment without ':' matches the name before an event segment's ':'; depth bounds", () => {
    const deep = ev("values", ["research:a", "lookup:b"]);
    assert.ok(matches(deep, { channels: ["values"], namespaces: [["research"]] }));
    assert.ok(!matches(deep, { channels: ["values"], namespaces: [["research:z"]] }));
    assert.ok(matches(deep, { channels: ["values"], namespaces: [["research"]], depth: 1 }));
    assert.ok(!matches(deep, { channels: ["values"], namespaces: [[]], depth: 1 }));
    assert.ok(
      matches(deep, { channels: ["values"], namespaces: [], depth: 0 }),
      "no namespaces: depth ignored",
    );
  });
});
