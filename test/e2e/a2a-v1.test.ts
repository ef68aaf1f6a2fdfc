/**
 * A2A 1.0 end to end, beside 0.3 on the same endpoint: the real server driven by `@a2a-js/sdk` 1.3.0
 * (what `npm install @a2a-js/sdk` gives today, installed here as `@a2a-js/sdk-v1`): its default client
 * (factory, card resolution, send, stream, get, cancel, list, subscribe), its 0.3 compatibility
 * transport, and raw JSON-RPC for the wire and the errors. 0.3 with `@a2a-js/sdk` 0.3.14: a2a.test.ts.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  AgentCard,
  ListTasksRequest,
  Message,
  Role,
  type StreamResponse,
  type Task,
  TaskState,
} from "@a2a-js/sdk-v1";
import {
  Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk-v1/client";
import { isLegacyAgentCard, LegacyJsonRpcTransport } from "@a2a-js/sdk-v1/compat/v0_3/client";
import { TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk-v1/errors";
import type { Client as LangGraphClient } from "@langchain/langgraph-sdk";
import {
  client,
  contents,
  defaultAssistantId,
  type Hangar,
  http,
  REPO_ROOT,
  readSSE,
  startHangar,
  UUID_RE,
} from "../helpers/server.js";

const T = { timeout: 30_000 };
const AGENT = defaultAssistantId("agent");
const A2A_CONFIG = join(REPO_ROOT, "test", "e2e", "fixtures", "a2a.json");
const JSON_HEADERS = { Accept: "application/json", "Content-Type": "application/json" };

/** A user message in the SDK's own (proto) shape. */
const userMessage = (text: string, extra: { contextId?: string; taskId?: string } = {}): Message =>
  Message.fromJSON({ messageId: randomUUID(), role: "ROLE_USER", parts: [{ text }], ...extra });

/** A ListTasks request as the SDK builds it from JSON (every field at its proto default). */
const listRequest = (fields: Record<string, unknown>) =>
  ListTasksRequest.fromJSON({
    ...fields,
    ...(typeof fields.status === "number" ? { status: TaskState[fields.status as TaskState] } : {}),
  });

const asTask = (x: Message | Task): Task => {
  assert.ok("status" in x && "id" in x, `expected a Task, got ${JSON.stringify(x)}`);
  return x as Task;
};
const partText = (part: { content?: { $case: string; value: unknown } } | undefined) =>
  part?.content?.$case === "text" ? (part.content.value as string) : undefined;
const artifactText = (t: Task) => partText(t.artifacts[0]?.parts[0]);
const statusText = (t: { status?: { message?: Message } }) => partText(t.status?.message?.parts[0]);

/** What a recording fetch saw: the JSON-RPC method and the A2A-Version header of each POST. */
interface Seen {
  method: string;
  version: string | null;
  result?: unknown;
}

describe("A2A 1.0", () => {
  let h: Hangar;
  let lg: LangGraphClient;
  const cardUrl = (assistantId: string) =>
    `${h.url}/.well-known/agent-card.json?assistant_id=${encodeURIComponent(assistantId)}`;
  /** `@a2a-js/sdk` 1.3.0's default client, discovered from the card URL (query string kept). */
  const a2a = (assistantId: string): Promise<Client> =>
    new ClientFactory().createFromUrl(cardUrl(assistantId), "");
  /** The same client with a fetch that records the wire. */
  const recorded = async (assistantId: string) => {
    const seen: Seen[] = [];
    const fetchImpl: typeof fetch = async (url, init) => {
      const res = await fetch(url, init);
      if (init?.method === "POST") {
        const body = JSON.parse(String(init.body));
        const entry: Seen = { method: body.method, version: new Headers(init.headers).get("A2A-Version") };
        if (res.headers.get("content-type")?.startsWith("application/json"))
          entry.result = (await res.clone().json()).result;
        seen.push(entry);
      }
      return res;
    };
    const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
    });
    return { client: await new ClientFactory(options).createFromUrl(cardUrl(assistantId), ""), seen };
  };
  const rpc = (body: unknown, headers: Record<string, string> = {}, assistantId = "agent") =>
    http(h.url, "POST", `/a2a/${assistantId}`, body, { ...JSON_HEADERS, ...headers });
  const call = (
    method: string,
    params: unknown,
    headers: Record<string, string> = { "A2A-Version": "1.0" },
  ) => rpc({ jsonrpc: "2.0", id: 7, method, params }, headers);

  before(async () => {
    h = await startHangar({ config: A2A_CONFIG });
    lg = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  describe("agent card", () => {
    test(
      "a 1.0 client gets the 1.0 card: both versions declared, 1.0 first, at the one endpoint",
      T,
      async () => {
        const res = await http(h.url, "GET", "/.well-known/agent-card.json?assistant_id=agent", undefined, {
          "A2A-Version": "1.0",
        });
        assert.equal(res.status, 200, res.text);
        assert.match(res.headers.get("vary") ?? "", /A2A-Version/i);
        const card = res.body;
        const url = `${h.url}/a2a/${AGENT}`;
        assert.deepEqual(card.supportedInterfaces, [
          { url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
          { url, protocolBinding: "JSONRPC", protocolVersion: "0.3" },
        ]);
        assert.deepEqual(card.capabilities, {
          streaming: true,
          pushNotifications: false,
          extendedAgentCard: false,
        });
        for (const legacyField of [
          "url",
          "protocolVersion",
          "preferredTransport",
          "supportsAuthenticatedExtendedCard",
        ])
          assert.ok(!(legacyField in card), `no 0.3 field '${legacyField}' in the 1.0 card`);
        // The SDK reads it as a 1.0 card: not legacy, and its proto form keeps every field we sent.
        assert.equal(isLegacyAgentCard(card), false);
        const parsed = AgentCard.fromJSON(card);
        assert.equal(parsed.name, "agent");
        assert.equal(parsed.description, "Chat agent that echoes the last human message");
        assert.deepEqual(parsed.defaultInputModes, ["application/json", "text/plain"]);
        assert.equal(parsed.skills[0]?.id, `${AGENT}-main`);
        // (ProtoJSON leaves out empty lists: the skill's `examples: []`.)
        const { examples: _, ...skill } = card.skills[0];
        assert.deepEqual(AgentCard.toJSON(parsed), { ...card, skills: [skill] });
        // The same card where clients also look.
        const atEndpoint = await http(h.url, "GET", `/a2a/${AGENT}/.well-known/agent-card.json`, undefined, {
          "A2A-Version": "1.0",
        });
        assert.deepEqual(atEndpoint.body, card);
        const byQuery = await http(
          h.url,
          "GET",
          "/.well-known/agent-card.json?assistant_id=agent&A2A-Version=1.0",
        );
        assert.deepEqual(byQuery.body, card);
      },
    );

    test(
      "no A2A-Version: the 0.3 card, with the same interfaces embedded; other versions are -32009",
      T,
      async () => {
        const legacy = (await http(h.url, "GET", "/.well-known/agent-card.json?assistant_id=agent")).body;
        assert.equal(legacy.protocolVersion, "0.3.0");
        assert.equal(legacy.url, `${h.url}/a2a/${AGENT}`);
        assert.equal(legacy.preferredTransport, "JSONRPC");
        const v1 = (
          await http(h.url, "GET", "/.well-known/agent-card.json?assistant_id=agent", undefined, {
            "A2A-Version": "1.0",
          })
        ).body;
        assert.deepEqual(legacy.supportedInterfaces, v1.supportedInterfaces);
        const wrong = await http(h.url, "GET", "/.well-known/agent-card.json?assistant_id=agent", undefined, {
          "A2A-Version": "2.0",
        });
        assert.equal(wrong.status, 400, wrong.text);
        assert.equal(wrong.body.error.code, -32009);
        assert.match(wrong.body.error.message, /'2\.0' is not supported.*1\.0 and 0\.3/);
      },
    );

    test("the SDK's resolver and factory pick the 1.0 JSON-RPC interface", T, async () => {
      const card = await new DefaultAgentCardResolver().resolve(cardUrl("agent"), "");
      assert.equal(card.supportedInterfaces[0]?.protocolVersion, "1.0");
      const c = await a2a("agent");
      assert.equal(c.protocolVersion, "1.0");
      assert.equal((await c.getAgentCard()).name, "agent");
    });
  });

  describe("the default client", () => {
    test("sendMessage: SendMessage with A2A-Version 1.0, a completed task in 1.0 shapes", T, async () => {
      const { client: c, seen } = await recorded("agent");
      const first = asTask(await c.sendMessage({ message: userMessage("hello") } as never));
      assert.equal(first.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(artifactText(first), "echo: hello");
      assert.match(first.contextId, UUID_RE);
      assert.match(first.id, UUID_RE);
      assert.deepEqual(
        first.history.map((m) => [m.role, partText(m.parts[0])]),
        [
          [Role.ROLE_USER, "hello"],
          [Role.ROLE_AGENT, "echo: hello"],
        ],
      );
      // On the wire: the 1.0 method, header, wrapper and enum spellings; no `kind` anywhere.
      assert.equal(seen[0]?.method, "SendMessage");
      assert.equal(seen[0]?.version, "1.0");
      const wire = seen[0]?.result as Record<string, any>;
      assert.deepEqual(Object.keys(wire), ["task"]);
      assert.equal(wire.task.status.state, "TASK_STATE_COMPLETED");
      assert.equal(wire.task.history[0].role, "ROLE_USER");
      assert.deepEqual(wire.task.artifacts[0].parts, [{ text: "echo: hello" }]);
      assert.doesNotMatch(JSON.stringify(wire), /"kind"/);

      const second = asTask(
        await c.sendMessage({ message: userMessage("again", { contextId: first.contextId }) } as never),
      );
      assert.equal(second.contextId, first.contextId);
      assert.notEqual(second.id, first.id);
      assert.equal(artifactText(second), "echo: again");
      const state = await lg.threads.getState(first.contextId);
      assert.deepEqual(contents(state.values), ["hello", "echo: hello", "again", "echo: again"]);
    });

    test(
      "sendMessageStream: task, working, the text so far, the artifact, the final status; then the stream ends",
      T,
      async () => {
        const c = await a2a("streamer");
        const events: StreamResponse[] = [];
        for await (const e of c.sendMessageStream({ message: userMessage("go") } as never))
          events.push(e as StreamResponse);
        const cases = events.map((e) => e.payload?.$case);
        assert.equal(cases[0], "task");
        assert.equal(cases.at(-2), "artifactUpdate");
        assert.equal(cases.at(-1), "statusUpdate");
        const submitted = events[0]!.payload!.value as Task;
        assert.equal(submitted.status?.state, TaskState.TASK_STATE_SUBMITTED);
        assert.equal(partText(submitted.history[0]?.parts[0]), "go");
        const updates = events.flatMap((e) => (e.payload?.$case === "statusUpdate" ? [e.payload.value] : []));
        assert.equal(updates[0]?.status?.state, TaskState.TASK_STATE_WORKING);
        const texts = updates.slice(0, -1).flatMap((u) => (u.status?.message ? [statusText(u)!] : []));
        const reply = "streamed reply, chunk by chunk";
        assert.ok(texts.length > 5, `several partial updates: ${JSON.stringify(texts)}`);
        for (let i = 1; i < texts.length; i++)
          assert.ok(texts[i]!.startsWith(texts[i - 1]!), "the text grows");
        assert.equal(texts.at(-1), reply);
        for (const u of updates) assert.equal(u.taskId, submitted.id);
        const last = updates.at(-1)!;
        assert.equal(last.status?.state, TaskState.TASK_STATE_COMPLETED);
        assert.equal(statusText(last), reply);
        const artifact = events.at(-2)!.payload!.value as { artifact?: { parts: never[] } };
        assert.equal(partText(artifact.artifact?.parts[0]), reply);

        const got = await c.getTask({ id: submitted.id } as never);
        assert.equal(got.status?.state, TaskState.TASK_STATE_COMPLETED);
        assert.equal(artifactText(got), reply);
      },
    );

    test("getTask: the task's own result and history; unknown ids are TaskNotFoundError", T, async () => {
      const c = await a2a("agent");
      const sent = asTask(await c.sendMessage({ message: userMessage("remember me") } as never));
      const later = asTask(
        await c.sendMessage({ message: userMessage("later", { contextId: sent.contextId }) } as never),
      );
      const got = await c.getTask({ id: sent.id } as never);
      assert.equal(got.id, sent.id);
      assert.equal(got.contextId, sent.contextId);
      assert.equal(artifactText(got), "echo: remember me");
      assert.equal(got.history.length, 2);
      const short = await c.getTask({ id: later.id, historyLength: 1 } as never);
      assert.deepEqual(
        short.history.map((m) => partText(m.parts[0])),
        ["echo: later"],
      );
      await assert.rejects(c.getTask({ id: randomUUID() } as never), TaskNotFoundError);
      await assert.rejects((await a2a("fail")).getTask({ id: sent.id } as never), TaskNotFoundError);
    });

    test(
      "returnImmediately, getTask follows, cancelTask stops it; a second cancel is TaskNotCancelableError",
      T,
      async () => {
        const c = await a2a("slow");
        const slow = asTask(
          await c.sendMessage({
            message: userMessage("take your time"),
            configuration: { returnImmediately: true, acceptedOutputModes: ["text/plain"] },
          } as never),
        );
        assert.equal(slow.status?.state, TaskState.TASK_STATE_SUBMITTED);
        const seen = await c.getTask({ id: slow.id } as never);
        assert.ok(
          [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING].includes(seen.status!.state),
          String(seen.status?.state),
        );
        const canceled = await c.cancelTask({ id: slow.id } as never);
        assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
        assert.equal(
          (await c.getTask({ id: slow.id } as never)).status?.state,
          TaskState.TASK_STATE_CANCELED,
        );
        await assert.rejects(c.cancelTask({ id: slow.id } as never), TaskNotCancelableError);
      },
    );

    test(
      "resubscribeTask (SubscribeToTask): the task as it stands, then its updates to the end",
      T,
      async () => {
        const c = await a2a("slow");
        const slow = asTask(
          await c.sendMessage({
            message: userMessage("follow me"),
            configuration: { returnImmediately: true },
          } as never),
        );
        const events: StreamResponse[] = [];
        for await (const e of c.resubscribeTask({ id: slow.id } as never)) events.push(e as StreamResponse);
        assert.equal(events[0]?.payload?.$case, "task");
        assert.equal((events[0]!.payload!.value as Task).id, slow.id);
        const last = events.at(-1)!.payload!;
        assert.equal(last.$case, "statusUpdate");
        assert.equal(
          (last.value as { status?: { state: TaskState } }).status?.state,
          TaskState.TASK_STATE_COMPLETED,
        );
        assert.equal(statusText(last.value as never), "slow echo: follow me");
        // An ended task has nothing to follow.
        await assert.rejects(async () => {
          for await (const _ of c.resubscribeTask({ id: slow.id } as never)) {
            // drained
          }
        }, /-32004|ended/);
      },
    );

    test(
      "interrupt(): INPUT_REQUIRED; a message naming the task (taskId alone) answers it in its context",
      T,
      async () => {
        const c = await a2a("interrupt");
        const asked = asTask(await c.sendMessage({ message: userMessage("deploy") } as never));
        assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
        assert.equal(asked.artifacts[0]?.name, "Interrupt");
        const part = asked.artifacts[0]?.parts[0]?.content;
        assert.equal(part?.$case, "data");
        assert.deepEqual((part!.value as { value: unknown }).value, { question: "approve?" });

        const answered = asTask(
          await c.sendMessage({ message: userMessage("yes", { taskId: asked.id }) } as never),
        );
        assert.equal(answered.contextId, asked.contextId, "the context is the task's");
        assert.equal(answered.status?.state, TaskState.TASK_STATE_COMPLETED);
        assert.equal(artifactText(answered), "approved: yes");
        // A task that has ended takes no more messages; an unknown one is not found; a mismatch is refused.
        await assert.rejects(
          c.sendMessage({ message: userMessage("again", { taskId: answered.id }) } as never),
          UnsupportedOperationError,
        );
        await assert.rejects(
          c.sendMessage({ message: userMessage("who?", { taskId: randomUUID() }) } as never),
          TaskNotFoundError,
        );
        const mismatch = await rpc(
          {
            jsonrpc: "2.0",
            id: 7,
            method: "SendMessage",
            params: {
              message: {
                messageId: randomUUID(),
                role: "ROLE_USER",
                parts: [{ text: "x" }],
                taskId: asked.id,
                contextId: randomUUID(),
              },
            },
          },
          { "A2A-Version": "1.0" },
          "interrupt",
        );
        assert.equal(mismatch.body.error?.code, -32602, mismatch.text);
        assert.match(mismatch.body.error.message, /does not match the context of task/);
      },
    );

    test("listTasks: a context's tasks, newest first, a page at a time, filtered by state", T, async () => {
      const c = await a2a("agent");
      const first = asTask(await c.sendMessage({ message: userMessage("one") } as never));
      const contextId = first.contextId;
      const second = asTask(await c.sendMessage({ message: userMessage("two", { contextId }) } as never));
      const third = asTask(await c.sendMessage({ message: userMessage("three", { contextId }) } as never));

      const all = await c.listTasks(listRequest({ contextId }));
      assert.deepEqual(
        all.tasks.map((t) => t.id),
        [third.id, second.id, first.id],
      );
      assert.equal(all.totalSize, 3);
      assert.equal(all.nextPageToken, "");
      assert.deepEqual(all.tasks[0]?.artifacts, [], "no artifacts unless includeArtifacts");

      const page1 = await c.listTasks(listRequest({ contextId, pageSize: 2, includeArtifacts: true }));
      assert.deepEqual(
        page1.tasks.map((t) => t.id),
        [third.id, second.id],
      );
      assert.equal(artifactText(page1.tasks[0]!), "echo: three");
      assert.notEqual(page1.nextPageToken, "");
      const page2 = await c.listTasks(
        listRequest({ contextId, pageSize: 2, pageToken: page1.nextPageToken }),
      );
      assert.deepEqual(
        page2.tasks.map((t) => t.id),
        [first.id],
      );
      assert.equal(page2.nextPageToken, "");

      const completed = await c.listTasks(listRequest({ contextId, status: TaskState.TASK_STATE_COMPLETED }));
      assert.equal(completed.tasks.length, 3);
      const failed = await c.listTasks(listRequest({ contextId, status: TaskState.TASK_STATE_FAILED }));
      assert.equal(failed.tasks.length, 0);
      // Another assistant's endpoint does not list this one's tasks.
      assert.equal((await (await a2a("fail")).listTasks(listRequest({ contextId }))).tasks.length, 0);
    });
  });

  describe("the SDK's 0.3 compatibility transport, on the same endpoint", () => {
    test("message/send, message/stream, tasks/get and tasks/cancel with A2A-Version 0.3", T, async () => {
      const seen: Seen[] = [];
      const fetchImpl: typeof fetch = async (url, init) => {
        const body = JSON.parse(String(init?.body));
        seen.push({ method: body.method, version: new Headers(init?.headers).get("A2A-Version") });
        return fetch(url, init);
      };
      const card = await new DefaultAgentCardResolver().resolve(cardUrl("agent"), "");
      const endpoint = card.supportedInterfaces.find((i) => i.protocolVersion === "0.3")!.url;
      const c = new Client(new LegacyJsonRpcTransport({ endpoint, fetchImpl }), card);
      assert.equal(c.protocolVersion, "0.3");

      const sent = asTask(await c.sendMessage({ message: userMessage("legacy") } as never));
      assert.equal(sent.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(artifactText(sent), "echo: legacy");
      assert.equal(sent.history[0]?.role, Role.ROLE_USER);

      const events: StreamResponse[] = [];
      const next = userMessage("legacy stream", { contextId: sent.contextId });
      for await (const e of c.sendMessageStream({ message: next } as never)) events.push(e as StreamResponse);
      assert.equal(events[0]?.payload?.$case, "task");
      const last = events.at(-1)!.payload!;
      assert.equal(last.$case, "statusUpdate");
      assert.equal(statusText(last.value as never), "echo: legacy stream");

      const got = await c.getTask({ id: sent.id } as never);
      assert.equal(artifactText(got), "echo: legacy");
      await assert.rejects(c.cancelTask({ id: sent.id } as never), TaskNotCancelableError);
      await assert.rejects(c.getTask({ id: randomUUID() } as never), TaskNotFoundError);

      assert.deepEqual(
        seen.map((s) => `${s.method} ${s.version}`),
        ["message/send 0.3", "message/stream 0.3", "tasks/get 0.3", "tasks/cancel 0.3", "tasks/get 0.3"],
      );
      // Both versions wrote to the same thread.
      const state = await lg.threads.getState(sent.contextId);
      assert.deepEqual(contents(state.values), [
        "legacy",
        "echo: legacy",
        "legacy stream",
        "echo: legacy stream",
      ]);
    });
  });

  describe("the wire and its errors", () => {
    const message = (extra: Record<string, unknown> = {}) => ({
      messageId: randomUUID(),
      role: "ROLE_USER",
      parts: [{ text: "raw" }],
      ...extra,
    });

    test("the version is chosen per request: the header, else the method's name", T, async () => {
      // A bare SendMessage (no header) is 1.0, as the official server answers it.
      const bare = await call("SendMessage", { message: message() }, {});
      assert.equal(bare.body.result?.task?.status?.state, "TASK_STATE_COMPLETED", bare.text);
      // A bare message/send is 0.3, as always.
      const legacy = await call(
        "message/send",
        { message: { ...message(), role: "user", parts: [{ kind: "text", text: "x" }] } },
        {},
      );
      assert.equal(legacy.body.result?.kind, "task", legacy.text);
      assert.equal(legacy.body.result?.status?.state, "completed");
      // The header wins over the name: a 0.3 name in a 1.0 request is not a method, and says why.
      const mixed = await call("message/send", { message: message() }, { "A2A-Version": "1.0" });
      assert.equal(mixed.body.error?.code, -32601, mixed.text);
      assert.match(
        mixed.body.error.message,
        /'message\/send' is an A2A 0\.3 method; this request speaks A2A 1\.0/,
      );
      const mixed2 = await call("GetTask", { id: randomUUID() }, { "A2A-Version": "0.3" });
      assert.equal(mixed2.body.error?.code, -32601, mixed2.text);
      // A patch number is ignored; other versions are refused with -32009.
      const patch = await call("GetTask", { id: randomUUID() }, { "A2A-Version": "1.0.3" });
      assert.equal(patch.body.error?.code, -32001, patch.text);
      for (const v of ["2.0", "0.2", "latest"]) {
        const res = await call("SendMessage", { message: message() }, { "A2A-Version": v });
        assert.equal(res.status, 200);
        assert.equal(res.body.error?.code, -32009, res.text);
        assert.equal(res.body.id, 7);
      }
    });

    test("bad 1.0 messages get -32602 / -32005 naming the problem", T, async () => {
      const expect = async (params: unknown, code: number, pattern: RegExp) => {
        const res = await call("SendMessage", params);
        assert.equal(res.status, 200);
        assert.equal(res.body.error?.code, code, res.text);
        assert.match(res.body.error.message, pattern);
        assert.equal(res.body.id, 7);
      };
      await expect("x", -32602, /params: must be an object/);
      await expect({}, -32602, /'message'/);
      await expect({ message: message({ role: "user" }) }, -32602, /'message\.role'.*ROLE_USER/);
      await expect({ message: message({ parts: "hi" }) }, -32602, /'message\.parts'/);
      await expect({ message: message({ parts: [] }) }, -32602, /at least one part/);
      await expect({ message: message({ parts: [{}] }) }, -32602, /index 0.*exactly one of/);
      await expect({ message: message({ parts: [{ text: "a", data: {} }] }) }, -32602, /found text, data/);
      await expect(
        { message: message({ parts: [{ kind: "text", text: 1 }] }) },
        -32602,
        /'text' must be a string/,
      );
      await expect(
        { message: message({ parts: [{ url: "https://x/y.png" }] }) },
        -32005,
        /file parts \('url'\)/,
      );
      await expect({ message: message({ parts: [{ raw: "aGk=" }] }) }, -32005, /file parts \('raw'\)/);
      await expect({ message: message({ parts: [{ data: [1] }] }) }, -32005, /'data' must be a JSON object/);
      await expect({ message: message({ messageId: "" }) }, -32602, /messageId/);
      await expect({ message: message({ contextId: "ctx-1" }) }, -32602, /contextId.*UUID/);
      await expect(
        { message: message(), configuration: { returnImmediately: "yes" } },
        -32602,
        /returnImmediately/,
      );
      await expect(
        {
          message: message(),
          configuration: { taskPushNotificationConfig: { url: "http://127.0.0.1:9/x" } },
        },
        -32003,
        /Push notifications are not supported/,
      );
    });

    test("push notification configs, the extended card, and ListTasks' bad params", T, async () => {
      for (const method of [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
      ]) {
        const res = await call(method, { taskId: randomUUID() });
        assert.equal(res.body.error?.code, -32003, `${method}: ${res.text}`);
      }
      const extended = await call("GetExtendedAgentCard", {});
      assert.equal(extended.body.error?.code, -32004, extended.text);
      const list = async (params: unknown, pattern: RegExp) => {
        const res = await call("ListTasks", params);
        assert.equal(res.body.error?.code, -32602, res.text);
        assert.match(res.body.error.message, pattern);
      };
      await list({ pageSize: 1000 }, /'pageSize'/);
      await list({ pageToken: "abc" }, /'pageToken'/);
      await list({ contextId: "nope" }, /'contextId'/);
      await list({ status: "DONE" }, /'status'/);
      await list({ historyLength: 11 }, /'historyLength'/);
    });

    test("SendStreamingMessage: 1.0 frames on SSE; a refused message is one error frame", T, async () => {
      const res = await fetch(`${h.url}/a2a/agent`, {
        method: "POST",
        headers: { ...JSON_HEADERS, Accept: "text/event-stream", "A2A-Version": "1.0" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: "s1",
          method: "SendStreamingMessage",
          params: { message: message() },
        }),
      });
      assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
      const frames = (await readSSE(res)).map((e) => e.data as any);
      assert.ok(frames.every((f) => f.jsonrpc === "2.0" && f.id === "s1"));
      const keys = frames.map((f) => Object.keys(f.result)[0]);
      assert.equal(keys[0], "task");
      assert.equal(keys.at(-1), "statusUpdate");
      assert.ok(
        frames.every((f) => !("final" in (f.result.statusUpdate ?? {}))),
        "1.0 has no `final`",
      );
      assert.equal(frames.at(-1).result.statusUpdate.status.state, "TASK_STATE_COMPLETED");

      const refused = await fetch(`${h.url}/a2a/agent`, {
        method: "POST",
        headers: { ...JSON_HEADERS, Accept: "text/event-stream", "A2A-Version": "1.0" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: "s2",
          method: "SendStreamingMessage",
          params: { message: message({ role: "nobody" }) },
        }),
      });
      const errs = (await readSSE(refused)).map((e) => e.data as any);
      assert.equal(errs.length, 1);
      assert.equal(errs[0].id, "s2");
      assert.equal(errs[0].error.code, -32602);
    });
  });
});
