/** The pure helpers behind /a2a and /mcp: JSON-RPC framing, A2A parts and tasks, the card, MCP tools. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { agentCard, requestBaseUrl } from "../../src/agents/a2a/card.js";
import {
  contentText,
  errorText,
  type IncomingMessage,
  readIncomingMessage,
  replyText,
  resumeValue,
  toA2AMessage,
  toGraphInput,
} from "../../src/agents/a2a/messages.js";
import { historyOf, outcomeOf, stateOfRun, statusUpdate } from "../../src/agents/a2a/tasks.js";
import { sendParamsFromV1, stateFromV1, v1StreamResponse, v1Task } from "../../src/agents/a2a/v1.js";
import { parseVersion, route } from "../../src/agents/a2a/versions.js";
import { accepts, parseEnvelope, RpcError, rpcError, rpcResult } from "../../src/agents/jsonrpc.js";
import { simplifyInputSchema, toolName } from "../../src/agents/mcp/tools.js";
import { publicBaseUrl } from "../../src/config/settings.js";
import type { Assistant } from "../../src/storage/ports.js";

const CTX = "9e11569d-8671-4d5a-b66b-28f7df74f054";
const IDS = { taskId: "task-1", contextId: CTX };

/** The code of the RpcError `fn` throws. */
function codeOf(fn: () => unknown): number {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof RpcError, String(err));
    return err.code;
  }
  assert.fail("expected an RpcError");
}

describe("JSON-RPC envelopes", () => {
  const kindAndCode = (text: string) => {
    const e = parseEnvelope(text);
    return e.kind === "invalid" ? [e.kind, e.error.code, e.id] : [e.kind];
  };

  test("requests, notifications and responses", () => {
    assert.deepEqual(parseEnvelope('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":1}}'), {
      kind: "request",
      id: 1,
      method: "ping",
      params: { a: 1 },
    });
    assert.deepEqual(parseEnvelope('{"jsonrpc":"2.0","id":"x","method":"ping"}'), {
      kind: "request",
      id: "x",
      method: "ping",
      params: undefined,
    });
    assert.deepEqual(kindAndCode('{"jsonrpc":"2.0","method":"notifications/initialized"}'), ["notification"]);
    assert.deepEqual(kindAndCode('{"jsonrpc":"2.0","id":3,"result":{}}'), ["response"]);
    assert.deepEqual(kindAndCode('{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}'), ["response"]);
  });

  test("each malformed envelope gets its own code; the id is echoed when it can be read", () => {
    assert.deepEqual(kindAndCode("{"), ["invalid", -32700, null]);
    assert.deepEqual(kindAndCode(""), ["invalid", -32700, null]);
    assert.deepEqual(kindAndCode("[]"), ["invalid", -32600, null]);
    assert.deepEqual(kindAndCode("null"), ["invalid", -32600, null]);
    assert.deepEqual(kindAndCode('"x"'), ["invalid", -32600, null]);
    assert.deepEqual(kindAndCode('{"jsonrpc":"2.0","id":[1],"method":"x"}'), ["invalid", -32600, null]);
    assert.deepEqual(kindAndCode('{"jsonrpc":"2.0","id":true,"method":"x"}'), ["invalid", -32600, null]);
    assert.deepEqual(kindAndCode('{"jsonrpc":"2.0","id":null,"method":"x"}'), ["invalid", -32600, null]);
    assert.deepEqual(kindAndCode('{"id":4,"method":"x"}'), ["invalid", -32600, 4]);
    assert.deepEqual(kindAndCode('{"jsonrpc":"1.0","id":4,"method":"x"}'), ["invalid", -32600, 4]);
    assert.deepEqual(kindAndCode('{"jsonrpc":"2.0","id":4}'), ["invalid", -32600, 4]);
    assert.deepEqual(kindAndCode('{"jsonrpc":"2.0"}'), ["invalid", -32600, null]);
    assert.deepEqual(kindAndCode('{"jsonrpc":"2.0","id":4,"method":7}'), ["invalid", -32601, 4]);
  });

  test("responses keep the id's JSON type; error data only when there is some", () => {
    assert.deepEqual(rpcResult(1, { ok: true }), { jsonrpc: "2.0", id: 1, result: { ok: true } });
    assert.deepEqual(rpcResult("1", null), { jsonrpc: "2.0", id: "1", result: null });
    assert.deepEqual(rpcError(null, new RpcError(-32700, "bad")), {
      jsonrpc: "2.0",
      id: null,
      error: { code: -32700, message: "bad" },
    });
    assert.deepEqual(rpcError(2, new RpcError(-32602, "bad", { field: "x" })).error, {
      code: -32602,
      message: "bad",
      data: { field: "x" },
    });
  });

  test("Accept: exact types, wildcards, lists, q=0; no header accepts anything", () => {
    assert.equal(accepts(undefined, ["application/json"]), true);
    assert.equal(accepts("", ["application/json"]), true);
    assert.equal(accepts("application/json", ["application/json"]), true);
    assert.equal(accepts("Application/JSON; charset=utf-8", ["application/json"]), true);
    assert.equal(accepts("text/html, application/*;q=0.5", ["application/json"]), true);
    assert.equal(accepts("*/*", ["text/event-stream"]), true);
    assert.equal(accepts("text/*", ["text/event-stream"]), true);
    assert.equal(accepts("application/json, text/event-stream", ["text/event-stream"]), true);
    assert.equal(accepts("text/html", ["application/json"]), false);
    assert.equal(accepts("application/json", ["text/event-stream"]), false);
    assert.equal(accepts("application/json;q=0", ["application/json"]), false);
  });
});

describe("A2A incoming messages", () => {
  const msg = (over: Record<string, unknown> = {}) => ({
    kind: "message",
    role: "user",
    messageId: "m-1",
    parts: [{ kind: "text", text: "hi" }],
    ...over,
  });

  test("the v0.3 shape and the spec's (params.messageId, params.thread.threadId)", () => {
    const v03 = readIncomingMessage({ message: msg({ contextId: CTX }) });
    assert.equal(v03.contextId, CTX);
    assert.equal(v03.message.messageId, "m-1");
    assert.deepEqual(v03.texts, ["hi"]);

    const spec = readIncomingMessage({
      message: { role: "user", parts: [{ kind: "text", text: "hi" }] },
      messageId: "m-2",
      thread: { threadId: CTX },
    });
    assert.equal(spec.message.messageId, "m-2");
    assert.equal(spec.contextId, CTX);
    assert.equal(spec.message.contextId, CTX);
    assert.equal(readIncomingMessage({ message: msg() }).contextId, undefined);
  });

  test("missing or malformed fields are -32602; unsupported parts -32005", () => {
    assert.equal(
      codeOf(() => readIncomingMessage(undefined)),
      -32602,
    );
    assert.equal(
      codeOf(() => readIncomingMessage([])),
      -32602,
    );
    assert.equal(
      codeOf(() => readIncomingMessage({})),
      -32602,
    );
    assert.equal(
      codeOf(() => readIncomingMessage({ message: msg({ messageId: "" }) })),
      -32602,
    );
    assert.equal(
      codeOf(() => readIncomingMessage({ message: msg({ role: "robot" }) })),
      -32602,
    );
    assert.equal(
      codeOf(() => readIncomingMessage({ message: msg({ parts: {} }) })),
      -32602,
    );
    assert.equal(
      codeOf(() => readIncomingMessage({ message: msg({ parts: [] }) })),
      -32602,
    );
    assert.equal(
      codeOf(() => readIncomingMessage({ message: msg({ parts: ["hi"] }) })),
      -32602,
    );
    assert.equal(
      codeOf(() => readIncomingMessage({ message: msg({ parts: [{ kind: "text", text: 1 }] }) })),
      -32602,
    );
    assert.equal(
      codeOf(() => readIncomingMessage({ message: msg({ contextId: "abc" }) })),
      -32602,
    );
    assert.equal(
      codeOf(() => readIncomingMessage({ message: msg(), thread: { threadId: 5 } })),
      -32602,
    );
    const file = { kind: "file", file: { bytes: "aGk=", mimeType: "text/plain" } };
    assert.equal(
      codeOf(() => readIncomingMessage({ message: msg({ parts: [file] }) })),
      -32005,
    );
    assert.equal(
      codeOf(() => readIncomingMessage({ message: msg({ parts: [{ kind: "data", data: null }] }) })),
      -32005,
    );
    assert.equal(
      codeOf(() => readIncomingMessage({ message: msg({ parts: [{ kind: "data", data: [1] }] }) })),
      -32005,
    );
  });

  test("graph input: a human message per text part (ids from messageId), data merged on top", () => {
    const incoming = readIncomingMessage({
      message: msg({
        parts: [
          { kind: "text", text: "one" },
          { kind: "data", data: { topic: "x", n: 1 } },
          { kind: "text", text: "two" },
          { kind: "data", data: { n: 2 } },
        ],
      }),
    });
    assert.deepEqual(toGraphInput(incoming), {
      messages: [
        { role: "human", content: "one", id: "m-1" },
        { role: "human", content: "two", id: "m-1:1" },
      ],
      topic: "x",
      n: 2,
    });
    const agent = readIncomingMessage({ message: msg({ role: "agent" }) });
    assert.equal((toGraphInput(agent).messages as { role: string }[])[0]!.role, "assistant");
    const dataOnly = readIncomingMessage({
      message: msg({ parts: [{ kind: "data", data: { item: "a" } }] }),
    });
    assert.deepEqual(toGraphInput(dataOnly), { item: "a" });
  });

  test("resume values: the text, the data, or both", () => {
    const of = (parts: unknown[]): IncomingMessage => readIncomingMessage({ message: msg({ parts }) });
    assert.equal(resumeValue(of([{ kind: "text", text: "yes" }])), "yes");
    assert.deepEqual(resumeValue(of([{ kind: "data", data: { ok: true } }])), { ok: true });
    assert.deepEqual(
      resumeValue(
        of([
          { kind: "text", text: "yes" },
          { kind: "data", data: { ok: true } },
        ]),
      ),
      { text: "yes", ok: true },
    );
  });
});

describe("A2A replies and tasks", () => {
  const human = (content: unknown, id = "h") => ({ type: "human", content, id });
  const ai = (content: unknown, id = "a") => ({ type: "ai", content, id, tool_calls: [] });

  test("content text: strings, text blocks joined, other blocks skipped", () => {
    assert.equal(contentText("plain"), "plain");
    assert.equal(
      contentText([
        { type: "text", text: "a" },
        { type: "image_url", image_url: "x" },
        "b",
        { type: "text", text: "c" },
      ]),
      "abc",
    );
    assert.equal(contentText(null), "");
    assert.equal(contentText({ weird: 1 }), '{"weird":1}');
  });

  test("reply: the last AI message, else the last message, else the whole state as JSON", () => {
    assert.equal(replyText({ messages: [human("q"), ai("first"), human("again"), ai("second")] }), "second");
    assert.equal(replyText({ messages: [ai("answer"), human("follow-up")] }), "answer");
    assert.equal(replyText({ messages: [human("only")] }), "only");
    assert.equal(replyText({ messages: [{ role: "assistant", content: "dict form" }] }), "dict form");
    assert.equal(replyText({ count: 1 }), '{"count":1}');
    assert.equal(replyText({ messages: [] }), '{"messages":[]}');
    assert.equal(replyText(null), "null");
  });

  test("error text from the runtime's {error, message}", () => {
    assert.equal(errorText({ error: "CustomError", message: "Boo!" }), "CustomError: Boo!");
    assert.equal(errorText({ message: "plain" }), "plain");
    assert.equal(errorText("text"), "text");
  });

  test("outcomes: completed with the reply artifact, failed with the error, input-required, canceled", () => {
    const done = outcomeOf({ messages: [human("q"), ai("hello")] }, IDS, "asst");
    assert.equal(done.state, "completed");
    assert.deepEqual(done.artifacts[0]!.parts, [{ kind: "text", text: "hello" }]);
    assert.equal(done.artifacts[0]!.name, "Assistant Response");

    const failed = outcomeOf({ __error__: { error: "CustomError", message: "Boo!" } }, IDS, "asst");
    assert.equal(failed.state, "failed");
    assert.equal(failed.text, "Error executing assistant: CustomError: Boo!");
    assert.deepEqual(failed.artifacts, []);

    const asked = outcomeOf(
      { messages: [human("deploy")], __interrupt__: [{ id: "i1", value: { question: "approve?" } }] },
      IDS,
      "asst",
    );
    assert.equal(asked.state, "input-required");
    assert.equal(asked.text, '{"question":"approve?"}');
    assert.deepEqual(asked.artifacts[0]!.parts, [
      { kind: "data", data: { id: "i1", value: { question: "approve?" } } },
    ]);

    assert.equal(outcomeOf({ messages: [] }, IDS, "asst", "interrupted").state, "canceled");
    assert.equal(outcomeOf(undefined, IDS, "asst", "error").state, "failed");
  });

  test("run statuses as task states", () => {
    assert.equal(stateOfRun("pending", false), "submitted");
    assert.equal(stateOfRun("running", false), "working");
    assert.equal(stateOfRun("success", false), "completed");
    assert.equal(stateOfRun("success", true), "input-required");
    assert.equal(stateOfRun("error", false), "failed");
    assert.equal(stateOfRun("timeout", false), "failed");
    assert.equal(stateOfRun("interrupted", false), "canceled");
  });

  test("history: roles, ids, tool calls as a data part, the last N", () => {
    const values = {
      messages: [
        human("q", "h1"),
        { type: "ai", content: "", id: "a1", tool_calls: [{ name: "t", args: {} }] },
        ai("done", "a2"),
      ],
    };
    const history = historyOf(values, IDS);
    assert.deepEqual(
      history.map((m) => [m.role, m.messageId, m.parts.map((p) => p.kind)]),
      [
        ["user", "h1", ["text"]],
        ["agent", "a1", ["text", "data"]],
        ["agent", "a2", ["text"]],
      ],
    );
    assert.equal(history[0]!.taskId, "task-1");
    assert.equal(history[0]!.contextId, CTX);
    assert.deepEqual(
      historyOf(values, IDS, 1).map((m) => m.messageId),
      ["a2"],
    );
    assert.deepEqual(historyOf(values, IDS, 0), []);
    assert.deepEqual(historyOf({ count: 1 }, IDS), []);
    assert.equal(toA2AMessage({ type: "human", content: "x" }, { ...IDS, fallbackId: "fb" }).messageId, "fb");
  });
});

describe("agent card and public URL", () => {
  const assistant: Assistant = {
    assistant_id: "fe096781-5601-53d2-b2f6-0d3403f7e9ca",
    graph_id: "agent",
    version: 1,
    name: "agent",
    description: null,
    config: {},
    context: {},
    metadata: {},
    created_at: "",
    updated_at: "",
  };

  test("a v0.3 card with streaming, modes and one skill", () => {
    const card = agentCard(assistant, "https://x.example/base");
    assert.equal(card.url, "https://x.example/base/a2a/fe096781-5601-53d2-b2f6-0d3403f7e9ca");
    assert.equal(card.description, "agent assistant");
    assert.equal(card.protocolVersion, "0.3.0");
    assert.equal(card.capabilities.streaming, true);
    assert.equal(card.skills[0]!.id, "fe096781-5601-53d2-b2f6-0d3403f7e9ca-main");
  });

  test("HANGAR_PUBLIC_URL: unset, with a path, trailing slashes dropped, invalid values refused", () => {
    assert.equal(publicBaseUrl({}), null);
    assert.equal(publicBaseUrl({ HANGAR_PUBLIC_URL: "  " }), null);
    assert.equal(
      publicBaseUrl({ HANGAR_PUBLIC_URL: "https://agents.example.com/" }),
      "https://agents.example.com",
    );
    assert.equal(publicBaseUrl({ HANGAR_PUBLIC_URL: "http://h:8080/api//" }), "http://h:8080/api");
    assert.throws(() => publicBaseUrl({ HANGAR_PUBLIC_URL: "agents.example.com" }), /HANGAR_PUBLIC_URL/);
    assert.throws(
      () => publicBaseUrl({ HANGAR_PUBLIC_URL: "ftp://agents.example.com" }),
      /HANGAR_PUBLIC_URL/,
    );
  });

  test("request base URL: the request's origin, forwarded proto and host applied when valid", () => {
    const h = (x: Record<string, string>) => new Headers(x);
    assert.equal(requestBaseUrl("http://127.0.0.1:2024/.well-known/x?y", h({})), "http://127.0.0.1:2024");
    assert.equal(
      requestBaseUrl(
        "http://127.0.0.1:2024/x",
        h({ "x-forwarded-proto": "https", "x-forwarded-host": "a.example" }),
      ),
      "https://a.example",
    );
    assert.equal(
      requestBaseUrl("http://127.0.0.1:2024/x", h({ "x-forwarded-host": "a.example:8443, proxy.local" })),
      "http://a.example:8443",
    );
    assert.equal(
      requestBaseUrl(
        "http://127.0.0.1:2024/x",
        h({ "x-forwarded-host": "evil/path", "x-forwarded-proto": "gopher" }),
      ),
      "http://127.0.0.1:2024",
    );
  });
});

describe("MCP tools", () => {
  test("tool names: whitespace to _, other characters dropped, at most 128", () => {
    assert.equal(toolName("agent"), "agent");
    assert.equal(toolName("  My Helper\tBot! (v2) "), "My_Helper_Bot_v2");
    assert.equal(toolName("a.b-c_d"), "a.b-c_d");
    assert.equal(toolName("日本語"), "");
    assert.equal(toolName("x".repeat(200)).length, 128);
  });

  test("the channel schema of a MessagesAnnotation graph: messages become a string", () => {
    const schema = {
      type: "object",
      properties: {
        messages: {
          type: "array",
          items: { type: "object", properties: { role: { type: "string" }, content: {} } },
        },
        log: {},
      },
    };
    assert.deepEqual(simplifyInputSchema(schema), {
      type: "object",
      properties: {
        messages: { type: "string", description: "The user message to send to the agent." },
        log: {},
      },
    });
  });

  test("zod StateSchema graphs: the messages marker, nested $schema dropped, required kept", () => {
    const schema = {
      type: "object",
      properties: {
        messages: { langgraph_type: "messages", description: "A list of chat messages" },
        topic: { $schema: "http://json-schema.org/draft-07/schema#", type: "string" },
      },
      required: ["topic", "gone"],
    };
    assert.deepEqual(simplifyInputSchema(schema), {
      type: "object",
      required: ["topic"],
      properties: {
        messages: { type: "string", description: "The user message to send to the agent." },
        topic: { type: "string" },
      },
    });
  });

  test("Pydantic-style $defs: message defs removed, arrays of refs or unions of refs simplified", () => {
    const schema = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      title: "Input",
      properties: {
        messages: {
          title: "Messages",
          type: "array",
          items: { anyOf: [{ $ref: "#/$defs/AIMessage" }, { $ref: "#/$defs/HumanMessage" }] },
        },
        history: { type: "array", items: { $ref: "#/$defs/BaseMessage" } },
        doc: { $ref: "#/$defs/Doc" },
        flag: true,
      },
      $defs: {
        AIMessage: { type: "object" },
        HumanMessage: { type: "object" },
        BaseMessage: { type: "object" },
        ToolCall: { type: "object" },
        Doc: { type: "object", properties: { text: { type: "string" } } },
      },
    };
    assert.deepEqual(simplifyInputSchema(schema), {
      type: "object",
      title: "Input",
      $defs: { Doc: { type: "object", properties: { text: { type: "string" } } } },
      properties: {
        messages: {
          type: "string",
          description: "The user message to send to the agent.",
          title: "Messages",
        },
        history: { type: "string", description: "The user message to send to the agent." },
        doc: { $ref: "#/$defs/Doc" },
        flag: {},
      },
    });
  });

  test("no schema at all is still an object schema", () => {
    assert.deepEqual(simplifyInputSchema(undefined), { type: "object", properties: {} });
    assert.deepEqual(simplifyInputSchema({ type: "object" }), { type: "object", properties: {} });
  });
});

describe("A2A versions and the 1.0 wire", () => {
  test("versions: major.minor, a patch ignored; only 1.0 and 0.3", () => {
    assert.equal(parseVersion("1.0"), "1.0");
    assert.equal(parseVersion("1"), "1.0");
    assert.equal(parseVersion(" 1.0.7 "), "1.0");
    assert.equal(parseVersion("0.3.0"), "0.3");
    for (const v of ["0.2", "1.1", "2.0", "v1", "", "1.0-rc"]) assert.equal(parseVersion(v), null, v);
  });

  test("route: the header first, else the method's name; each version's own names only", () => {
    assert.deepEqual(route(undefined, "SendMessage"), { version: "1.0", operation: "send" });
    assert.deepEqual(route(undefined, "message/send"), { version: "0.3", operation: "send" });
    assert.deepEqual(route("", "tasks/resubscribe"), { version: "0.3", operation: "subscribe" });
    assert.deepEqual(route("1.0", "ListTasks"), { version: "1.0", operation: "list" });
    assert.deepEqual(route("0.3", "tasks/pushNotificationConfig/set"), {
      version: "0.3",
      operation: "push-config",
    });
    assert.equal(
      codeOf(() => route("1.0", "message/send")),
      -32601,
    );
    assert.equal(
      codeOf(() => route("0.3", "SendMessage")),
      -32601,
    );
    assert.equal(
      codeOf(() => route(undefined, "toString")),
      -32601,
      "no prototype keys",
    );
    assert.equal(
      codeOf(() => route(undefined, "tasks/unknown")),
      -32601,
    );
    assert.equal(
      codeOf(() => route("0.4", "SendMessage")),
      -32009,
    );
  });

  test("1.0 params in: roles and parts translated; file parts -32005; push configs -32003", () => {
    const params = sendParamsFromV1({
      message: {
        messageId: "m1",
        role: "ROLE_AGENT",
        contextId: "",
        parts: [{ text: "hi", metadata: { a: 1 } }, { data: { k: 1 } }],
      },
      configuration: { returnImmediately: true, historyLength: 2 },
    });
    assert.deepEqual(params, {
      message: {
        kind: "message",
        messageId: "m1",
        role: "agent",
        parts: [
          { kind: "text", text: "hi", metadata: { a: 1 } },
          { kind: "data", data: { k: 1 } },
        ],
      },
      configuration: { blocking: false, historyLength: 2 },
    });
    const msg = (parts: unknown[], role: unknown = "ROLE_USER") => ({
      message: { messageId: "m", role, parts },
    });
    assert.equal(sendParamsFromV1(msg([{ text: "x" }], 1)).message && "ok", "ok", "a proto enum number");
    assert.equal(
      codeOf(() => sendParamsFromV1(msg([{ text: "x" }], "user"))),
      -32602,
    );
    assert.equal(
      codeOf(() => sendParamsFromV1(msg([{ url: "https://x" }]))),
      -32005,
    );
    assert.equal(
      codeOf(() => sendParamsFromV1(msg([{ raw: "aGk=" }]))),
      -32005,
    );
    assert.equal(
      codeOf(() => sendParamsFromV1(msg([{ metadata: {} }]))),
      -32602,
    );
    assert.equal(
      codeOf(() =>
        sendParamsFromV1({
          ...msg([{ text: "x" }]),
          configuration: { taskPushNotificationConfig: { url: "u" } },
        }),
      ),
      -32003,
    );
  });

  test("1.0 shapes out: enums by name, no kind, the stream's wrappers, no final", () => {
    const status = {
      state: "input-required" as const,
      timestamp: "t",
      message: toA2AMessage({ type: "ai", content: "?" }, { ...IDS, fallbackId: "s" }),
    };
    const task = { kind: "task" as const, id: "task-1", contextId: CTX, status };
    assert.deepEqual(v1Task(task), {
      id: "task-1",
      contextId: CTX,
      status: {
        state: "TASK_STATE_INPUT_REQUIRED",
        message: {
          messageId: "s",
          role: "ROLE_AGENT",
          parts: [{ text: "?" }],
          taskId: "task-1",
          contextId: CTX,
        },
        timestamp: "t",
      },
    });
    assert.deepEqual(Object.keys(v1StreamResponse(task)), ["task"]);
    const update = v1StreamResponse(statusUpdate(IDS, { state: "completed", timestamp: "t" }, true));
    assert.deepEqual(update, {
      statusUpdate: {
        taskId: "task-1",
        contextId: CTX,
        status: { state: "TASK_STATE_COMPLETED", timestamp: "t" },
      },
    });
    assert.equal(stateFromV1("TASK_STATE_FAILED"), "failed");
    assert.equal(stateFromV1(3), "completed");
    assert.equal(stateFromV1("completed"), undefined);
  });
});
