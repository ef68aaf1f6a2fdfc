/**
 * A2A end to end: the real server, driven by the official A2A client (`@a2a-js/sdk` 0.3.14, the last
 * release of the v0.3 protocol line) and by raw HTTP for the spec's exact request and every error case.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import {
  A2AClient,
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  TaskNotFoundError,
} from "@a2a-js/sdk/client";
import type { Client as LangGraphClient } from "@langchain/langgraph-sdk";
import {
  client,
  contents,
  defaultAssistantId,
  type Hangar,
  http,
  iterSSE,
  REPO_ROOT,
  readSSE,
  startHangar,
  UUID_RE,
} from "../helpers/server.js";

const T = { timeout: 30_000 };
const JSON_HEADERS = { Accept: "application/json", "Content-Type": "application/json" };
const AGENT = defaultAssistantId("agent");
/** The example graphs plus `streamer`, a chat model that streams its reply token by token. */
const A2A_CONFIG = join(REPO_ROOT, "test", "e2e", "fixtures", "a2a.json");

type Event = Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent;

const userMessage = (text: string, extra: Partial<Message> = {}): Message => ({
  kind: "message",
  role: "user",
  messageId: randomUUID(),
  parts: [{ kind: "text", text }],
  ...extra,
});

const asTask = (x: Message | Task): Task => {
  assert.equal(x.kind, "task", `expected a Task, got ${JSON.stringify(x)}`);
  return x as Task;
};

const artifactText = (t: Task) => {
  const part = t.artifacts?.[0]?.parts?.[0];
  return part?.kind === "text" ? part.text : undefined;
};

const statusText = (status: { message?: Message }) => {
  const part = status.message?.parts?.[0];
  return part?.kind === "text" ? part.text : undefined;
};

describe("A2A", () => {
  let h: Hangar;
  let lg: LangGraphClient;
  const cardUrl = (assistantId: string) =>
    `${h.url}/.well-known/agent-card.json?assistant_id=${encodeURIComponent(assistantId)}`;
  /** An official client for an assistant, discovered from its card URL (query string included). */
  const a2a = (assistantId: string): Promise<Client> =>
    new ClientFactory().createFromUrl(cardUrl(assistantId), "");
  /** Raw JSON-RPC to the A2A endpoint. */
  const rpc = (assistantId: string, body: unknown, headers: Record<string, string> = JSON_HEADERS) =>
    http(h.url, "POST", `/a2a/${assistantId}`, body, headers);
  const call = (assistantId: string, method: string, params: unknown, id: string | number = 1) =>
    rpc(assistantId, { jsonrpc: "2.0", id, method, params });

  before(async () => {
    h = await startHangar({ config: A2A_CONFIG });
    lg = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  describe("agent card", () => {
    test(
      "the card of an assistant, by graph id or assistant id, pointing at its A2A endpoint",
      T,
      async () => {
        const byGraph = await http(h.url, "GET", "/.well-known/agent-card.json?assistant_id=agent");
        assert.equal(byGraph.status, 200, byGraph.text);
        const card = byGraph.body;
        assert.equal(card.protocolVersion, "0.3.0");
        assert.equal(card.name, "agent");
        assert.equal(card.description, "Chat agent that echoes the last human message");
        assert.equal(card.url, `${h.url}/a2a/${AGENT}`);
        assert.equal(card.preferredTransport, "JSONRPC");
        assert.equal(typeof card.version, "string");
        assert.equal(card.capabilities.streaming, true);
        assert.deepEqual(card.defaultInputModes, ["application/json", "text/plain"]);
        assert.deepEqual(card.defaultOutputModes, ["application/json", "text/plain"]);
        assert.equal(card.skills.length, 1);
        assert.equal(card.skills[0].id, `${AGENT}-main`);
        assert.deepEqual(card.skills[0].tags, ["assistant", "langgraph"]);

        const byId = await http(h.url, "GET", `/.well-known/agent-card.json?assistant_id=${AGENT}`);
        assert.deepEqual(byId.body, card);
        // Where A2A clients also look: the endpoint itself and its own well-known path.
        assert.deepEqual((await http(h.url, "GET", `/a2a/${AGENT}`)).body, card);
        assert.deepEqual((await http(h.url, "GET", `/a2a/${AGENT}/.well-known/agent-card.json`)).body, card);
      },
    );

    test(
      "a user-created assistant has its own card; no description falls back to '<name> assistant'",
      T,
      async () => {
        const created = await lg.assistants.create({ graphId: "agent", name: "Helper" });
        const res = await http(
          h.url,
          "GET",
          `/.well-known/agent-card.json?assistant_id=${created.assistant_id}`,
        );
        assert.equal(res.status, 200);
        assert.equal(res.body.name, "Helper");
        assert.equal(res.body.description, "Helper assistant");
        assert.equal(res.body.url, `${h.url}/a2a/${created.assistant_id}`);
      },
    );

    test("the card URL follows X-Forwarded-Proto and X-Forwarded-Host", T, async () => {
      const res = await http(h.url, "GET", "/.well-known/agent-card.json?assistant_id=agent", undefined, {
        "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": "agents.example.com",
      });
      assert.equal(res.body.url, `https://agents.example.com/a2a/${AGENT}`);
    });

    test("a missing or unknown assistant id is a 400 with a JSON-RPC style error", T, async () => {
      const missing = await http(h.url, "GET", "/.well-known/agent-card.json");
      assert.equal(missing.status, 400);
      assert.deepEqual(missing.body, {
        error: { code: -32602, message: "Missing required query parameter: assistant_id" },
      });
      const unknown = await http(h.url, "GET", "/.well-known/agent-card.json?assistant_id=nope");
      assert.equal(unknown.status, 400);
      assert.deepEqual(unknown.body, { error: { code: -32602, message: "Assistant 'nope' not found" } });
    });

    test("the official client discovers the card from its URL with the query string", T, async () => {
      const c = await a2a("agent");
      const card = await c.getAgentCard();
      assert.equal(card.name, "agent");
      assert.equal(card.url, `${h.url}/a2a/${AGENT}`);
      const legacy = await A2AClient.fromCardUrl(cardUrl("agent"));
      assert.equal((await legacy.getAgentCard()).name, "agent");
    });
  });

  describe("official client", () => {
    test(
      "sendMessage: a completed task whose first artifact holds the reply; contextId continues",
      T,
      async () => {
        const c = await a2a("agent");
        const first = asTask(await c.sendMessage({ message: userMessage("hello") }));
        assert.equal(first.status.state, "completed");
        assert.equal(artifactText(first), "echo: hello");
        assert.match(first.contextId, UUID_RE);
        assert.match(first.id, UUID_RE);
        assert.deepEqual(
          first.history?.map((m) => [m.role, m.parts[0]?.kind === "text" ? m.parts[0].text : null]),
          [
            ["user", "hello"],
            ["agent", "echo: hello"],
          ],
        );

        const second = asTask(
          await c.sendMessage({ message: userMessage("again", { contextId: first.contextId }) }),
        );
        assert.equal(second.contextId, first.contextId);
        assert.notEqual(second.id, first.id, "every message is a new task (run) in the same context");
        assert.equal(artifactText(second), "echo: again");
        assert.equal(second.history?.length, 4);

        // The context is the thread: its state holds the whole conversation.
        const state = await lg.threads.getState(first.contextId);
        assert.deepEqual(contents(state.values), ["hello", "echo: hello", "again", "echo: again"]);
      },
    );

    test("sendMessageStream: task, working, text so far, artifact, final completed update", T, async () => {
      const c = await a2a("agent");
      const events: Event[] = [];
      for await (const e of c.sendMessageStream({ message: userMessage("streamed") }))
        events.push(e as Event);
      const kinds = events.map((e) => (e.kind === "status-update" ? `${e.kind}:${e.status.state}` : e.kind));
      assert.equal(kinds[0], "task");
      assert.equal(kinds[1], "status-update:working");
      assert.equal(kinds.at(-2), "artifact-update");
      assert.equal(kinds.at(-1), "status-update:completed");

      const submitted = events[0] as Task;
      assert.equal(submitted.status.state, "submitted");
      assert.equal(submitted.history?.[0]?.parts[0]?.kind, "text");
      for (const e of events.slice(1)) {
        const u = e as TaskStatusUpdateEvent | TaskArtifactUpdateEvent;
        assert.equal(u.taskId, submitted.id);
        assert.equal(u.contextId, submitted.contextId);
      }
      const updates = events.filter((e) => e.kind === "status-update") as TaskStatusUpdateEvent[];
      assert.ok(
        updates.some((u) => !u.final && statusText(u.status) === "echo: streamed"),
        `a working update carries the text so far: ${JSON.stringify(events)}`,
      );
      const last = updates.at(-1)!;
      assert.equal(last.final, true);
      assert.equal(statusText(last.status), "echo: streamed");
      assert.ok(updates.slice(0, -1).every((u) => !u.final));
      const artifact = (events.at(-2) as TaskArtifactUpdateEvent).artifact;
      assert.deepEqual(artifact.parts, [{ kind: "text", text: "echo: streamed" }]);

      // The streamed task is a task like any other.
      const got = await c.getTask({ id: submitted.id });
      assert.equal(got.status.state, "completed");
      assert.equal(artifactText(got), "echo: streamed");
    });

    test(
      "sendMessageStream of a streaming model: each working update carries the text so far",
      T,
      async () => {
        const c = await a2a("streamer");
        const events: Event[] = [];
        for await (const e of c.sendMessageStream({ message: userMessage("go") })) events.push(e as Event);
        const updates = events.filter((e) => e.kind === "status-update") as TaskStatusUpdateEvent[];
        const texts = updates.filter((u) => !u.final && u.status.message).map((u) => statusText(u.status)!);
        const reply = "streamed reply, chunk by chunk";
        assert.ok(texts.length > 5, `several partial updates: ${JSON.stringify(texts)}`);
        for (let i = 0; i < texts.length; i++) {
          assert.ok(reply.startsWith(texts[i]!), `"${texts[i]}" is a prefix of the reply`);
          if (i > 0)
            assert.ok(texts[i]!.length > texts[i - 1]!.length, "the text grows: accumulated, not deltas");
        }
        assert.equal(texts.at(-1), reply);
        const messageIds = new Set(updates.filter((u) => !u.final).map((u) => u.status.message?.messageId));
        messageIds.delete(undefined);
        assert.equal(messageIds.size, 1, "one agent message being written");
        assert.equal(statusText(updates.at(-1)!.status), reply);
        assert.equal(updates.at(-1)!.status.state, "completed");
      },
    );

    test(
      "getTask: status, results and history of an earlier task; unknown ids are TaskNotFound",
      T,
      async () => {
        const c = await a2a("agent");
        const sent = asTask(await c.sendMessage({ message: userMessage("remember me") }));
        const later = asTask(
          await c.sendMessage({ message: userMessage("later", { contextId: sent.contextId }) }),
        );

        const got = await c.getTask({ id: sent.id });
        assert.equal(got.kind, "task");
        assert.equal(got.id, sent.id);
        assert.equal(got.contextId, sent.contextId);
        assert.equal(got.status.state, "completed");
        assert.equal(
          artifactText(got),
          "echo: remember me",
          "the task's own result, not the thread's latest",
        );
        assert.equal(got.history?.length, 2);

        const short = await c.getTask({ id: later.id, historyLength: 1 });
        assert.deepEqual(
          short.history?.map((m) => m.parts[0]),
          [{ kind: "text", text: "echo: later" }],
        );
        // `<contextId>:<taskId>` (the official server's newest task id form) is accepted too.
        const composite = await c.getTask({ id: `${sent.contextId}:${sent.id}` });
        assert.equal(artifactText(composite), "echo: remember me");

        await assert.rejects(c.getTask({ id: randomUUID() }), TaskNotFoundError);
        await assert.rejects(c.getTask({ id: "not-a-task" }), TaskNotFoundError);
        await assert.rejects(c.getTask({ id: `${randomUUID()}:${sent.id}` }), TaskNotFoundError);
        // A task belongs to the assistant whose endpoint ran it.
        const other = await a2a("fail");
        await assert.rejects(other.getTask({ id: sent.id }), TaskNotFoundError);
      },
    );

    test("the legacy A2AClient answers with JSON-RPC envelopes", T, async () => {
      const legacy = await A2AClient.fromCardUrl(cardUrl("agent"));
      const env = await legacy.sendMessage({ message: userMessage("legacy") });
      assert.ok("result" in env, JSON.stringify(env));
      assert.equal(artifactText(asTask(env.result)), "echo: legacy");
    });
  });

  describe("the spec's request", () => {
    test(
      "exact body with params.messageId and params.thread.threadId, Accept: application/json",
      T,
      async () => {
        const threadId = randomUUID();
        const body = (text: string) => ({
          jsonrpc: "2.0",
          id: randomUUID(),
          method: "message/send",
          params: {
            message: { role: "user", parts: [{ kind: "text", text }] },
            messageId: randomUUID(),
            thread: { threadId },
          },
        });
        const first = body("hi there");
        const res = await rpc("agent", first, JSON_HEADERS);
        assert.equal(res.status, 200, res.text);
        assert.equal(res.headers.get("content-type")?.split(";")[0], "application/json");
        assert.equal(res.body.jsonrpc, "2.0");
        assert.equal(res.body.id, first.id);
        assert.equal(res.body.result.artifacts[0].parts[0].text, "echo: hi there");
        assert.equal(res.body.result.contextId, threadId);
        assert.equal(res.body.result.status.state, "completed");
        // The messageId given in params is the message's id.
        assert.equal(res.body.result.history[0].messageId, first.params.messageId);

        // The thread was created under that id and the conversation continues on it.
        const again = await rpc("agent", body("second"), JSON_HEADERS);
        assert.equal(again.body.result.artifacts[0].parts[0].text, "echo: second");
        const state = await lg.threads.getState(threadId);
        assert.deepEqual(contents(state.values), ["hi there", "echo: hi there", "second", "echo: second"]);
        const types = (state.values as { messages: { type: string }[] }).messages.map((m) => m.type);
        assert.deepEqual(types, ["human", "ai", "human", "ai"]);
      },
    );

    test(
      "message/stream over raw SSE: every frame is one JSON-RPC response echoing the request id",
      T,
      async () => {
        const res = await fetch(`${h.url}/a2a/agent`, {
          method: "POST",
          headers: { Accept: "text/event-stream", "Content-Type": "application/json" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: "stream-1",
            method: "message/stream",
            params: { message: userMessage("raw") },
          }),
        });
        assert.equal(res.status, 200);
        assert.ok(res.headers.get("content-type")?.startsWith("text/event-stream"));
        const frames = await readSSE(res);
        assert.ok(frames.length >= 4, JSON.stringify(frames));
        for (const f of frames) {
          assert.equal(f.event, "message");
          assert.equal(f.data.jsonrpc, "2.0");
          assert.equal(f.data.id, "stream-1");
          assert.ok("result" in f.data, JSON.stringify(f.data));
        }
        const final = frames.at(-1)!.data.result;
        assert.equal(final.kind, "status-update");
        assert.equal(final.final, true);
        assert.equal(final.status.state, "completed");
        assert.equal(final.status.message.parts[0].text, "echo: raw");
      },
    );
  });

  describe("parts and outcomes", () => {
    test(
      "data parts merge into the input; the reply of a state without messages is the state as JSON",
      T,
      async () => {
        const res = await call("custom_state", "message/send", {
          message: {
            kind: "message",
            role: "user",
            messageId: randomUUID(),
            parts: [{ kind: "data", data: { item: "apple" } }],
          },
        });
        const result = res.body.result;
        assert.equal(result.status.state, "completed", res.text);
        assert.deepEqual(JSON.parse(result.artifacts[0].parts[0].text), {
          item: "apple",
          count: 1,
          items: ["apple"],
        });
        // The same context again: the reducers add up.
        const again = await call("custom_state", "message/send", {
          message: {
            kind: "message",
            role: "user",
            messageId: randomUUID(),
            contextId: result.contextId,
            parts: [{ kind: "data", data: { item: "pear" } }],
          },
        });
        assert.deepEqual(JSON.parse(again.body.result.artifacts[0].parts[0].text), {
          item: "pear",
          count: 2,
          items: ["apple", "pear"],
        });
      },
    );

    test("text and data parts together: text becomes messages, data merges over the input", T, async () => {
      const res = await call("agent", "message/send", {
        message: {
          kind: "message",
          role: "user",
          messageId: randomUUID(),
          parts: [
            { kind: "text", text: "ignored" },
            { kind: "data", data: { messages: [{ role: "human", content: "from data" }] } },
          ],
        },
      });
      assert.equal(res.body.result.artifacts[0].parts[0].text, "echo: from data");
    });

    test("an assistant without a messages key refuses text parts, saying so", T, async () => {
      const res = await call("custom_state", "message/send", { message: userMessage("hello") });
      assert.equal(res.status, 200);
      assert.equal(res.body.error.code, -32602);
      assert.match(res.body.error.message, /messages/);
      assert.match(res.body.error.message, /item/, "it lists the fields the assistant does accept");
    });

    test("a failing graph gives a failed task with the error text and no artifacts", T, async () => {
      const c = await a2a("fail");
      const t = asTask(await c.sendMessage({ message: userMessage("x") }));
      assert.equal(t.status.state, "failed");
      assert.match(statusText(t.status) ?? "", /Boo!/);
      assert.equal(t.artifacts, undefined);
      const got = await c.getTask({ id: t.id });
      assert.equal(got.status.state, "failed");
      assert.match(statusText(got.status) ?? "", /Boo!/);

      const events: Event[] = [];
      for await (const e of c.sendMessageStream({ message: userMessage("y") })) events.push(e as Event);
      const last = events.at(-1) as TaskStatusUpdateEvent;
      assert.equal(last.final, true);
      assert.equal(last.status.state, "failed");
      assert.match(statusText(last.status) ?? "", /Boo!/);
    });

    test(
      "interrupt(): input-required with the question; the next message in the context resumes",
      T,
      async () => {
        const c = await a2a("interrupt");
        const asked = asTask(await c.sendMessage({ message: userMessage("deploy") }));
        assert.equal(asked.status.state, "input-required");
        const part = asked.artifacts?.[0]?.parts[0];
        assert.equal(asked.artifacts?.[0]?.name, "Interrupt");
        assert.equal(part?.kind, "data");
        assert.deepEqual((part as unknown as { data: { value: unknown } }).data.value, {
          question: "approve?",
        });
        assert.match(statusText(asked.status) ?? "", /approve\?/);

        const answered = asTask(
          await c.sendMessage({
            message: userMessage("yes", { contextId: asked.contextId, taskId: asked.id }),
          }),
        );
        assert.equal(answered.status.state, "completed");
        assert.equal(artifactText(answered), "approved: yes");
        // The first task stays as it ended: waiting for input.
        assert.equal((await c.getTask({ id: asked.id })).status.state, "input-required");
      },
    );

    test(
      "configuration.blocking=false answers at once; tasks/get follows; tasks/cancel stops it",
      T,
      async () => {
        const c = await a2a("slow");
        const slow = asTask(
          await c.sendMessage({
            message: userMessage("take your time"),
            configuration: { blocking: false, acceptedOutputModes: ["text/plain"] },
          }),
        );
        assert.equal(slow.status.state, "submitted");
        const seen = await c.getTask({ id: slow.id });
        assert.ok(["submitted", "working"].includes(seen.status.state), seen.status.state);
        const canceled = await c.cancelTask({ id: slow.id });
        assert.equal(canceled.status.state, "canceled");
        assert.equal((await c.getTask({ id: slow.id })).status.state, "canceled");
        const again = await call("slow", "tasks/cancel", { id: slow.id });
        assert.equal(again.body.error.code, -32002);

        const quick = asTask(
          await c.sendMessage({ message: userMessage("quick"), configuration: { blocking: false } }),
        );
        for (let i = 0; i < 100; i++) {
          const t = await c.getTask({ id: quick.id });
          if (t.status.state === "completed") {
            assert.equal(artifactText(t), "slow echo: quick");
            return;
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.fail("the non-blocking task did not complete");
      },
    );

    test(
      "resubscribeTask (tasks/resubscribe): the running task, then its updates to the final one",
      T,
      async () => {
        const c = await a2a("slow");
        const slow = asTask(
          await c.sendMessage({ message: userMessage("follow me"), configuration: { blocking: false } }),
        );
        const events: Event[] = [];
        for await (const e of c.resubscribeTask({ id: slow.id })) events.push(e as Event);
        assert.equal(events[0]?.kind, "task");
        assert.equal((events[0] as Task).id, slow.id);
        const last = events.at(-1) as TaskStatusUpdateEvent;
        assert.equal(last.kind, "status-update");
        assert.equal(last.final, true);
        assert.equal(last.status.state, "completed");
        assert.equal(statusText(last.status), "slow echo: follow me");
        // An ended task has no updates left: -32004.
        const res = await fetch(`${h.url}/a2a/slow`, {
          method: "POST",
          headers: { ...JSON_HEADERS, Accept: "text/event-stream" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 4,
            method: "tasks/resubscribe",
            params: { id: slow.id },
          }),
        });
        const frames = await readSSE(res);
        assert.equal(frames.length, 1);
        assert.equal(frames[0]!.data.error.code, -32004, JSON.stringify(frames));
      },
    );
  });

  describe("errors", () => {
    const code = async (
      res: Promise<{ status: number; body: any; text: string }>,
      expected: number,
      id: unknown = 1,
    ) => {
      const r = await res;
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body?.jsonrpc, "2.0", r.text);
      assert.equal(r.body?.id, id, r.text);
      assert.equal(r.body?.error?.code, expected, r.text);
      assert.equal(typeof r.body.error.message, "string");
      assert.ok(!("result" in r.body));
    };
    const msg = (over: Record<string, unknown> = {}) => ({
      kind: "message",
      role: "user",
      messageId: randomUUID(),
      parts: [{ kind: "text", text: "x" }],
      ...over,
    });

    test("envelope errors: malformed JSON, batches, version, id and method", T, async () => {
      await code(rpc("agent", "{not json"), -32700, null);
      await code(
        rpc("agent", [{ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "x" } }]),
        -32600,
        null,
      );
      await code(rpc("agent", "42"), -32600, null);
      await code(rpc("agent", { jsonrpc: "1.0", id: 7, method: "tasks/get" }), -32600, 7);
      await code(rpc("agent", { jsonrpc: "2.0", id: { nested: true }, method: "tasks/get" }), -32600, null);
      await code(rpc("agent", { jsonrpc: "2.0", id: 8 }), -32600, 8);
      await code(rpc("agent", { jsonrpc: "2.0", method: "message/send", params: {} }), -32600, null);
      await code(rpc("agent", { jsonrpc: "2.0", id: 9, method: 12 }), -32601, 9);
      await code(call("agent", "tasks/unknown", {}, "s-1"), -32601, "s-1");
      // A 1.0 method in a request that says it is 0.3 is not a method of that version.
      await code(
        rpc(
          "agent",
          { jsonrpc: "2.0", id: 3, method: "GetTask", params: {} },
          { ...JSON_HEADERS, "A2A-Version": "0.3" },
        ),
        -32601,
        3,
      );
    });

    test(
      "params errors (-32602): missing params, message, messageId, role, parts; bad ids; unknown assistant",
      T,
      async () => {
        await code(call("agent", "message/send", undefined), -32602);
        await code(call("agent", "message/send", "text"), -32602);
        await code(call("agent", "message/send", {}), -32602);
        await code(call("agent", "message/send", { message: "hi" }), -32602);
        await code(call("agent", "message/send", { message: msg({ messageId: undefined }) }), -32602);
        await code(call("agent", "message/send", { message: msg({ role: undefined }) }), -32602);
        await code(call("agent", "message/send", { message: msg({ role: "system" }) }), -32602);
        await code(call("agent", "message/send", { message: msg({ parts: "x" }) }), -32602);
        await code(call("agent", "message/send", { message: msg({ parts: [] }) }), -32602);
        await code(call("agent", "message/send", { message: msg({ parts: [{ kind: "text" }] }) }), -32602);
        await code(call("agent", "message/send", { message: msg({ contextId: "not-a-uuid" }) }), -32602);
        await code(call("agent", "message/send", { message: msg(), thread: { threadId: "nope" } }), -32602);
        await code(call("no-such-assistant", "message/send", { message: msg() }), -32602);
        await code(
          call("agent", "message/send", { message: msg(), configuration: { historyLength: -1 } }),
          -32602,
        );
        await code(call("agent", "tasks/get", {}), -32602);
        await code(call("agent", "tasks/get", undefined), -32602);
        await code(call("agent", "tasks/get", { id: randomUUID(), historyLength: 11 }), -32602);
        await code(call("agent", "tasks/get", { id: randomUUID(), historyLength: -1 }), -32602);
        await code(call("agent", "tasks/get", { id: randomUUID(), historyLength: 1.5 }), -32602);
        await code(call("agent", "tasks/get", { id: randomUUID() }), -32001);
        await code(call("agent", "tasks/cancel", { id: randomUUID() }), -32001);
      },
    );

    test(
      "unsupported part kinds (-32005): file parts, data that is not an object, unknown kinds",
      T,
      async () => {
        const file = { kind: "file", file: { uri: "https://example.com/a.png", mimeType: "image/png" } };
        await code(call("agent", "message/send", { message: msg({ parts: [file] }) }), -32005);
        await code(
          call("agent", "message/send", { message: msg({ parts: [{ kind: "data", data: [1, 2] }] }) }),
          -32005,
        );
        await code(
          call("agent", "message/send", { message: msg({ parts: [{ kind: "data", data: "x" }] }) }),
          -32005,
        );
        await code(call("agent", "message/send", { message: msg({ parts: [{ kind: "image" }] }) }), -32005);
        await code(call("agent", "message/send", { message: msg({ parts: [{ text: "no kind" }] }) }), -32005);
      },
    );

    test("an Accept header that rules out the reply is a 400; none at all is fine", T, async () => {
      const send = { jsonrpc: "2.0", id: 1, method: "message/send", params: { message: msg() } };
      const html = await rpc("agent", send, { Accept: "text/html", "Content-Type": "application/json" });
      assert.equal(html.status, 400);
      assert.deepEqual(html.body, { error: "Accept header must include application/json" });
      const stream = { ...send, method: "message/stream" };
      const json = await rpc("agent", stream, JSON_HEADERS);
      assert.equal(json.status, 400);
      assert.deepEqual(json.body, { error: "Accept header must include text/event-stream for streaming" });
      const any = await rpc("agent", send, { Accept: "*/*", "Content-Type": "application/json" });
      assert.equal(any.body.result.status.state, "completed");
    });

    test("message/stream reports a refused message as one error frame with the request id", T, async () => {
      const res = await fetch(`${h.url}/a2a/custom_state`, {
        method: "POST",
        headers: { Accept: "text/event-stream", "Content-Type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 77,
          method: "message/stream",
          params: { message: msg() },
        }),
      });
      assert.ok(res.headers.get("content-type")?.startsWith("text/event-stream"));
      const frames: unknown[] = [];
      for await (const f of iterSSE(res)) frames.push(f.data);
      assert.equal(frames.length, 1, JSON.stringify(frames));
      const frame = frames[0] as { id: number; error: { code: number; message: string } };
      assert.equal(frame.id, 77);
      assert.equal(frame.error.code, -32602);
      assert.match(frame.error.message, /messages/);

      const c = await a2a("custom_state");
      await assert.rejects(async () => {
        for await (const _ of c.sendMessageStream({ message: userMessage("no") })) {
          // nothing: the first frame is the error
        }
      }, /messages/);
    });

    test("a JSON-RPC response object is acknowledged with 202; other HTTP methods are 405", T, async () => {
      const ack = await rpc("agent", { jsonrpc: "2.0", id: 3, result: {} });
      assert.equal(ack.status, 202);
      assert.equal(ack.text, "");
      const put = await http(h.url, "PUT", "/a2a/agent", {});
      assert.equal(put.status, 405);
      assert.equal(put.headers.get("allow"), "GET, POST");
    });
  });
});

describe("A2A settings", () => {
  test("HANGAR_PUBLIC_URL is the base of the card's url", T, async () => {
    const h = await startHangar({ env: { HANGAR_PUBLIC_URL: "https://agents.example.com/hangar/" } });
    try {
      const res = await http(h.url, "GET", "/.well-known/agent-card.json?assistant_id=agent");
      assert.equal(res.body.url, `https://agents.example.com/hangar/a2a/${AGENT}`);
    } finally {
      await h.stop();
    }
  });

  test(
    "API keys: the card and the endpoint need one; tasks belong to the key's organization",
    T,
    async () => {
      const h = await startHangar({ env: { HANGAR_API_KEYS: "a2a-key-a:org-a,a2a-key-b:org-b" } });
      try {
        const cardUrl = `${h.url}/.well-known/agent-card.json?assistant_id=agent`;
        assert.equal(
          (await http(h.url, "GET", "/.well-known/agent-card.json?assistant_id=agent")).status,
          401,
        );
        const anonymous = await http(
          h.url,
          "POST",
          "/a2a/agent",
          { jsonrpc: "2.0", id: 1, method: "message/send", params: { message: userMessage("x") } },
          JSON_HEADERS,
        );
        assert.equal(anonymous.status, 401);

        // The official client with a key on every request, the card fetch included.
        const withKey = (key: string) => {
          const fetchImpl: typeof fetch = (url, init) => {
            const headers = new Headers(init?.headers);
            headers.set("X-Api-Key", key);
            return fetch(url, { ...init, headers });
          };
          const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
            cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
            transports: [new JsonRpcTransportFactory({ fetchImpl })],
          });
          return new ClientFactory(options).createFromUrl(cardUrl, "");
        };
        const a = await withKey("a2a-key-a");
        const sent = asTask(await a.sendMessage({ message: userMessage("mine") }));
        assert.equal(artifactText(sent), "echo: mine");
        assert.equal((await a.getTask({ id: sent.id })).status.state, "completed");
        const b = await withKey("a2a-key-b");
        await assert.rejects(b.getTask({ id: sent.id }), TaskNotFoundError, "another organization's task");
        // A context id is a thread id, the organization's own: another organization's is like a fresh
        // one (no existence oracle), and its thread is neither read nor continued.
        const theirs = asTask(
          await b.sendMessage({ message: userMessage("in", { contextId: sent.contextId }) }),
        );
        assert.equal(artifactText(theirs), "echo: in");
        const stateOf = async (key: string) =>
          (await http(h.url, "GET", `/threads/${sent.contextId}/state`, undefined, { "x-api-key": key }))
            .text;
        assert.doesNotMatch(
          await stateOf("a2a-key-a"),
          /echo: in/,
          "another organization's thread is not continued",
        );
        assert.doesNotMatch(await stateOf("a2a-key-b"), /mine/, "nor read");
      } finally {
        await h.stop();
      }
    },
  );

  test("http.disable_a2a removes the A2A endpoint and the card (404); MCP stays", T, async () => {
    const h = await startHangar({ config: join(REPO_ROOT, "test", "e2e", "fixtures", "a2a-disabled.json") });
    try {
      const card = await http(h.url, "GET", "/.well-known/agent-card.json?assistant_id=agent");
      assert.equal(card.status, 404);
      const send = await http(
        h.url,
        "POST",
        "/a2a/agent",
        { jsonrpc: "2.0", id: 1, method: "message/send", params: { message: userMessage("x") } },
        JSON_HEADERS,
      );
      assert.equal(send.status, 404);
      const mcp = await http(
        h.url,
        "POST",
        "/mcp",
        { jsonrpc: "2.0", id: 1, method: "ping" },
        { Accept: "application/json, text/event-stream" },
      );
      assert.equal(mcp.status, 200);
      assert.deepEqual(mcp.body.result, {});
    } finally {
      await h.stop();
    }
  });
});
