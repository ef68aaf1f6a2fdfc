/**
 * Custom auth (langgraph.json `auth`, issue 16): a real server with the fixture's `Auth` (a JWT verified
 * with jose, owner stamped on create, owner-only visibility, deletes gated by a permission, one store
 * namespace per user), driven by the official SDK as three users and by raw HTTP for exact statuses.
 * The whole suite runs on SQLite and, when HANGAR_TEST_POSTGRES_URI is set, on a fresh Postgres database.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { Message, Task } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { Client } from "@langchain/langgraph-sdk";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { toolName } from "../../src/agents/mcp/tools.js";
import { AUTH_CONFIG, token } from "../helpers/auth-tokens.js";
import { type FreshDatabase, freshDatabase, PG_SKIP } from "../helpers/postgres.js";
import { assertDetail, type Hangar, http, rejection, startHangar, waitFor } from "../helpers/server.js";

const CONFIG = AUTH_CONFIG;
const T = { timeout: 60_000 };

/** One adapter's server: SQLite by default, Postgres on a database of its own. */
interface Target {
  name: string;
  skip?: string;
  env(): Promise<Record<string, string>>;
  cleanup(): Promise<void>;
}

const sqlite: Target = { name: "sqlite", env: async () => ({}), cleanup: async () => {} };
const postgres: Target = (() => {
  let db: FreshDatabase | undefined;
  return {
    name: "postgres",
    skip: PG_SKIP,
    async env() {
      db = await freshDatabase("hangar_auth");
      return { POSTGRES_URI: db.uri };
    },
    cleanup: async () => db?.drop(),
  };
})();

for (const target of [sqlite, postgres]) {
  describe(`custom auth (${target.name})`, { skip: target.skip }, () => {
    let h: Hangar;
    let tokens: Record<"alice" | "aliceReadOnly" | "bob" | "carol" | "mallory" | "crash", string>;
    /** SDK clients acting as each user. */
    const as = (who: keyof typeof tokens) =>
      new Client({
        apiUrl: h.url,
        defaultHeaders: { Authorization: `Bearer ${tokens[who]}` },
        callerOptions: { maxRetries: 0 },
      });
    /** Raw HTTP as a user (or with no token). */
    const req = (who: keyof typeof tokens | null, method: string, path: string, body?: unknown) =>
      http(h.url, method, path, body, who ? { authorization: `Bearer ${tokens[who]}` } : {});

    before(async () => {
      tokens = {
        alice: await token("alice", ["delete"]),
        aliceReadOnly: await token("alice", ["read-only"]),
        bob: await token("bob"),
        carol: await token("carol", ["delete"]),
        mallory: await token("mallory"),
        crash: await token("crash-authz"),
      };
      // A cron below fires every second: allowed here (the default minimum interval is 60 s).
      h = await startHangar({
        config: CONFIG,
        env: { ...(await target.env()), HANGAR_CRON_MIN_INTERVAL_SECONDS: "1" },
      });
    });
    after(async () => {
      await h?.stop();
      await target.cleanup();
    });

    test(
      "authentication: 401 without or with a bad token, the handler's message and headers; public routes stay open",
      T,
      async () => {
        const none = await req(null, "POST", "/threads/search", {});
        assertDetail(none, 401, "no token");
        assert.equal(none.body.detail, "Missing bearer token");
        assert.equal(none.headers.get("www-authenticate"), "Bearer");
        const bad = await http(h.url, "GET", "/assistants/whoami", undefined, {
          authorization: "Bearer nope",
        });
        assertDetail(bad, 401, "bad token");
        assert.equal(bad.body.detail, "Invalid token");
        // A handler that fails with anything but an HTTPException is a 401, never a 500.
        const crash = await http(h.url, "POST", "/threads", {}, { authorization: "Bearer crash" });
        assertDetail(crash, 401, "handler error");
        for (const path of ["/ok", "/info", "/openapi.json", "/docs"])
          assert.equal((await req(null, "GET", path)).status, 200, path);
        // Every route group needs the user: runs, crons, store, A2A, MCP, sandboxes.
        for (const [method, path, body] of [
          ["POST", "/runs/wait", { assistant_id: "whoami" }],
          ["POST", "/runs/crons/search", {}],
          ["POST", "/store/items/search", {}],
          ["POST", "/a2a/whoami", { jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "x" } }],
          ["POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" }],
          ["GET", "/v2/sandboxes/volumes", undefined],
          ["GET", "/.well-known/agent-card.json?assistant_id=whoami", undefined],
        ] as const) {
          assertDetail(await req(null, method, path, body), 401, `${method} ${path}`);
        }
        // The API reference shows the scheme in force beside the API key.
        const spec = (await req(null, "GET", "/openapi.json")).body;
        assert.equal(spec.components.securitySchemes.CustomAuth.scheme, "bearer");
        assert.deepEqual(spec.paths["/threads"].post.security, [{ ApiKeyAuth: [], CustomAuth: [] }]);
        assert.deepEqual(spec.paths["/ok"].get.security, []);
        // The SDK as a user.
        assert.ok(Array.isArray(await as("alice").threads.search()));
      },
    );

    test(
      "threads: the owner is stamped on create; another user cannot see, list, count, update, copy or delete them",
      T,
      async () => {
        const alice = as("alice");
        const thread = await alice.threads.create({ metadata: { topic: "secret" } });
        assert.equal(thread.metadata?.owner, "alice");
        const id = thread.thread_id;
        const tag = randomUUID();
        await alice.threads.update(id, { metadata: { tag } });
        assert.equal((await alice.threads.get(id)).metadata?.owner, "alice");
        assert.equal((await alice.threads.search({ metadata: { tag } })).length, 1);

        const bob = as("bob");
        assert.equal((await rejection(bob.threads.get(id))).status, 404);
        assert.deepEqual(await bob.threads.search({ metadata: { tag } }), []);
        assert.equal((await bob.threads.search({ limit: 1000 })).filter((t) => t.thread_id === id).length, 0);
        assert.equal(await bob.threads.count({ metadata: { tag } }), 0);
        assert.equal(await alice.threads.count({ metadata: { tag } }), 1);
        for (const [method, path, body, status] of [
          ["GET", `/threads/${id}`, undefined, 404],
          ["PATCH", `/threads/${id}`, { metadata: { owner: "bob" } }, 404],
          ["GET", `/threads/${id}/state`, undefined, 404],
          ["POST", `/threads/${id}/state`, { values: {} }, 404],
          ["PATCH", `/threads/${id}/state`, { metadata: { x: 1 } }, 404],
          ["POST", `/threads/${id}/state/checkpoint`, { checkpoint: {} }, 404],
          ["GET", `/threads/${id}/history`, undefined, 404],
          ["POST", `/threads/${id}/history`, {}, 404],
          ["POST", `/threads/${id}/copy`, {}, 409],
          // bob has no delete permission: forbidden before anything is looked up.
          ["DELETE", `/threads/${id}`, undefined, 403],
        ] as const) {
          assertDetail(await req("bob", method, path, body), status, `bob ${method} ${path}`);
        }
        // carol may delete, but not alice's thread: as if absent.
        assertDetail(await req("carol", "DELETE", `/threads/${id}`), 404, "carol deletes alice's thread");
        // Creating over an existing thread of another user: a conflict, even with if_exists do_nothing.
        assertDetail(
          await req("bob", "POST", "/threads", { thread_id: id, if_exists: "do_nothing" }),
          409,
          "bob re-creates",
        );
        assert.equal((await alice.threads.get(id)).metadata?.tag, tag, "nothing of bob's reached it");
        await alice.threads.delete(id);
        assert.equal((await rejection(alice.threads.get(id))).status, 404);
      },
    );

    test(
      "runs: another user cannot create, list, get, join, stream, cancel or delete runs of a thread",
      T,
      async () => {
        const alice = as("alice");
        const thread = await alice.threads.create();
        const id = thread.thread_id;
        const run = await alice.runs.create(id, "whoami", {
          input: { input: "x" },
          metadata: { mine: true },
        });
        assert.equal(run.metadata?.owner, "alice", "create_run stamps the run");
        await alice.runs.join(id, run.run_id);
        for (const [method, path, body] of [
          ["POST", `/threads/${id}/runs`, { assistant_id: "whoami" }],
          ["POST", `/threads/${id}/runs/wait`, { assistant_id: "whoami" }],
          ["POST", `/threads/${id}/runs/stream`, { assistant_id: "whoami" }],
          ["POST", `/threads/${id}/runs/wait`, { assistant_id: "whoami", if_not_exists: "create" }],
          ["GET", `/threads/${id}/runs`, undefined],
          ["GET", `/threads/${id}/runs/${run.run_id}`, undefined],
          ["GET", `/threads/${id}/runs/${run.run_id}/join`, undefined],
          ["GET", `/threads/${id}/runs/${run.run_id}/stream`, undefined],
          ["POST", `/threads/${id}/runs/${run.run_id}/cancel`, undefined],
          ["POST", `/threads/${id}/runs/crons`, { assistant_id: "whoami", schedule: "0 0 * * *" }],
        ] as const) {
          assertDetail(await req("bob", method, path, body), 404, `bob ${method} ${path}`);
        }
        assertDetail(
          await req("carol", "DELETE", `/threads/${id}/runs/${run.run_id}`),
          404,
          "carol deletes a run",
        );
        assertDetail(
          await req("bob", "DELETE", `/threads/${id}/runs/${run.run_id}`),
          403,
          "bob deletes a run",
        );
        // Bulk cancel by thread: not found for bob; by run id: nothing happens to alice's run.
        assertDetail(
          await req("bob", "POST", "/runs/cancel", { thread_id: id }),
          404,
          "bulk cancel by thread",
        );
        assert.equal((await req("bob", "POST", "/runs/cancel", { run_ids: [run.run_id] })).status, 204);
        assert.equal((await alice.runs.get(id, run.run_id)).status, "success");
        // A stateless run kept on its thread: its stream is alice's only.
        const kept = await req("alice", "POST", "/runs", {
          assistant_id: "whoami",
          input: { input: "s" },
          on_completion: "keep",
        });
        assert.equal(kept.status, 200);
        assertDetail(
          await req("bob", "GET", `/runs/${kept.body.run_id}/stream`),
          404,
          "bob joins a stateless run",
        );
        assert.equal((await req("alice", "GET", `/runs/${kept.body.run_id}/stream`)).status, 200);
        // A2A: alice's run is a task bob cannot get or cancel; her thread is a context he cannot write to.
        for (const method of ["tasks/get", "tasks/cancel"]) {
          const params = { id: run.run_id };
          const rpc = await req("bob", "POST", "/a2a/whoami", { jsonrpc: "2.0", id: 1, method, params });
          assert.equal(rpc.body.error?.code, -32001, `${method}: ${rpc.text}`);
        }
        const params = { id: run.run_id };
        const mine = await req("alice", "POST", "/a2a/whoami", {
          jsonrpc: "2.0",
          id: 1,
          method: "tasks/get",
          params,
        });
        assert.equal(mine.body.result?.id, run.run_id, mine.text);
        const message = {
          role: "user",
          messageId: randomUUID(),
          contextId: id,
          parts: [{ kind: "data", data: { input: "hijack" } }],
        };
        const send = await req("bob", "POST", "/a2a/whoami", {
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: { message },
        });
        assert.match(send.body.error?.message ?? "", /not found/, send.text);
        // A2A 1.0 (its method names): the same answers, and ListTasks lists only what the caller may see.
        for (const method of ["GetTask", "CancelTask"]) {
          const rpc = await req("bob", "POST", "/a2a/whoami", {
            jsonrpc: "2.0",
            id: 1,
            method,
            params: { id: run.run_id },
          });
          assert.equal(rpc.body.error?.code, -32001, `${method}: ${rpc.text}`);
        }
        const list = (who: "alice" | "bob", params: unknown) =>
          req(who, "POST", "/a2a/whoami", { jsonrpc: "2.0", id: 1, method: "ListTasks", params });
        const hers = await list("alice", { contextId: id });
        assert.deepEqual(
          hers.body.result?.tasks.map((t: { id: string }) => t.id),
          [run.run_id],
          hers.text,
        );
        assert.equal(hers.body.result.tasks[0].status.state, "TASK_STATE_COMPLETED");
        const his = await list("bob", { contextId: id });
        assert.deepEqual(his.body.result?.tasks, [], his.text);
        const hisAll = await list("bob", {});
        assert.ok(
          !hisAll.body.result?.tasks.some((t: { contextId: string }) => t.contextId === id),
          `bob lists none of alice's tasks: ${hisAll.text}`,
        );
        const hijack = await req("bob", "POST", "/a2a/whoami", {
          jsonrpc: "2.0",
          id: 1,
          method: "SendMessage",
          params: {
            message: {
              messageId: randomUUID(),
              role: "ROLE_USER",
              contextId: id,
              parts: [{ data: { input: "hijack" } }],
            },
          },
        });
        assert.match(hijack.body.error?.message ?? "", /not found/, hijack.text);
        await alice.runs.delete(id, run.run_id);
      },
    );

    test(
      "the graph sees the user (configurable.langgraph_auth_*), and a request cannot forge it",
      T,
      async () => {
        const alice = as("alice");
        const thread = await alice.threads.create();
        const out = (await alice.runs.wait(thread.thread_id, "whoami", {
          input: { input: "who" },
          config: {
            configurable: { langgraph_auth_user_id: "bob", langgraph_auth_user: { identity: "bob" } },
          },
        })) as any;
        assert.equal(out.user_id, "alice");
        assert.deepEqual(out.permissions, ["delete"]);
        assert.equal(out.user.identity, "alice");
        assert.equal(out.user.display_name, "alice (display)");
        assert.equal(out.user.org, "example", "custom fields of the handler's user");
        assert.equal(out.user.is_authenticated, true);
        const stateless = (await as("bob").runs.wait(null, "whoami", { input: { input: "s" } })) as any;
        assert.equal(stateless.user_id, "bob");
        // `configurable.user_id` as the official servers set it: the user's, unless the request names one.
        assert.equal(out.run_user_id, "alice");
        assert.equal(stateless.run_user_id, "bob");
        const named = (await alice.runs.wait(null, "whoami", {
          input: { input: "n" },
          config: { configurable: { user_id: "named-by-the-request" } },
        })) as any;
        assert.equal(named.run_user_id, "named-by-the-request");
      },
    );

    test("assistants: stamped, hidden from other users everywhere", T, async () => {
      const alice = as("alice");
      const assistant = await alice.assistants.create({
        graphId: "whoami",
        name: "alice's",
        metadata: { k: 1 },
      });
      assert.equal(assistant.metadata?.owner, "alice");
      const id = assistant.assistant_id;
      const updated = await alice.assistants.update(id, { metadata: { k: 2 } });
      assert.equal(updated.metadata?.owner, "alice");
      assert.ok((await alice.assistants.search({ limit: 100 })).some((a) => a.assistant_id === id));
      const bob = as("bob");
      assert.ok(!(await bob.assistants.search({ limit: 100 })).some((a) => a.assistant_id === id));
      assert.equal(await bob.assistants.count({ metadata: { k: 2 } }), 0);
      assert.equal(await alice.assistants.count({ metadata: { k: 2 } }), 1);
      for (const [method, path, body] of [
        ["GET", `/assistants/${id}`, undefined],
        ["GET", `/assistants/${id}/schemas`, undefined],
        ["GET", `/assistants/${id}/graph`, undefined],
        ["PATCH", `/assistants/${id}`, { name: "bob's now" }],
        ["POST", `/assistants/${id}/versions`, {}],
        ["POST", `/assistants/${id}/latest`, { version: 1 }],
      ] as const) {
        assertDetail(await req("bob", method, path, body), 404, `bob ${method} ${path}`);
      }
      assertDetail(await req("carol", "DELETE", `/assistants/${id}`), 404, "carol deletes it");
      assertDetail(
        await req("bob", "POST", "/assistants", {
          graph_id: "whoami",
          assistant_id: id,
          if_exists: "do_nothing",
        }),
        409,
        "bob re-creates it",
      );
      // MCP lists the assistants a user may see.
      const tools = await req("bob", "POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" });
      assert.ok(!JSON.stringify(tools.body).includes(id));
      await alice.assistants.delete(id);
    });

    test("crons: owned by their creator, whose user their runs act as", T, async () => {
      const alice = as("alice");
      const thread = await alice.threads.create();
      const cron = await alice.crons.createForThread(thread.thread_id, "whoami", {
        schedule: "* * * * * *",
        input: { input: "tick" },
        metadata: { purpose: "test" },
      });
      assert.equal(cron.metadata?.owner, "alice");
      assert.equal(cron.user_id, "alice");
      const runs = await waitFor(
        async () => {
          const list = await alice.runs.list(thread.thread_id);
          return list.find((r) => r.status === "success");
        },
        { timeoutMs: 10_000, what: "a cron run" },
      );
      const state = await alice.threads.getState(thread.thread_id);
      assert.equal((state.values as any).user_id, "alice", "the cron's run acts as its creator");
      assert.ok(runs);
      const bob = as("bob");
      assert.deepEqual(await bob.crons.search({ threadId: thread.thread_id }), []);
      assert.equal(await bob.crons.count({ threadId: thread.thread_id }), 0);
      assert.equal((await alice.crons.search({ threadId: thread.thread_id })).length, 1);
      assertDetail(
        await req("bob", "PATCH", `/runs/crons/${cron.cron_id}`, { enabled: false }),
        404,
        "bob patches",
      );
      // The update handler sees the patch: alice cannot hand the cron to bob, nor strip its user.
      const patched = await req("alice", "PATCH", `/runs/crons/${cron.cron_id}`, {
        metadata: { owner: "bob" },
        config: null,
        enabled: false,
      });
      assert.equal(patched.status, 200, patched.text);
      assert.equal(patched.body.metadata.owner, "alice");
      assert.equal(patched.body.payload.config.configurable.langgraph_auth_user_id, "alice");
      assert.deepEqual(await bob.crons.search({ threadId: thread.thread_id }), []);
      assertDetail(await req("carol", "DELETE", `/runs/crons/${cron.cron_id}`), 404, "carol deletes");
      assert.equal((await req("alice", "DELETE", `/runs/crons/${cron.cron_id}`)).status, 204);
    });

    test("store: one namespace per user; a refused user gets 403", T, async () => {
      const alice = as("alice");
      await alice.store.putItem(["notes"], "n1", { text: "alice's" });
      assert.equal((await alice.store.getItem(["notes"], "n1"))?.value.text, "alice's");
      const bob = as("bob");
      assert.equal(await bob.store.getItem(["notes"], "n1"), null);
      assert.deepEqual((await bob.store.searchItems(["notes"])).items, []);
      await bob.store.deleteItem(["notes"], "n1"); // bob's own namespace: alice's item stays
      assert.equal((await alice.store.searchItems(["notes"])).items.length, 1);
      const spaces = await bob.store.listNamespaces();
      assert.ok(!JSON.stringify(spaces).includes("alice"));
      assertDetail(
        await req("mallory", "PUT", "/store/items", { namespace: ["x"], key: "k", value: {} }),
        403,
        "mallory",
      );
    });

    test(
      "copying a thread needs read on the source and threads:create, which stamps the copy",
      T,
      async () => {
        const alice = as("alice");
        const source = await alice.threads.create({ metadata: { topic: "copied" } });
        const copy = await alice.threads.copy(source.thread_id);
        assert.notEqual(copy.thread_id, source.thread_id);
        assert.equal(copy.metadata?.owner, "alice");
        assert.equal(copy.metadata?.topic, "copied");
        // alice with a read-only token reads her thread but may create none: no copy (the reference: 403).
        assert.equal((await req("aliceReadOnly", "GET", `/threads/${source.thread_id}`)).status, 200);
        const before = await alice.threads.count({ metadata: { topic: "copied" } });
        assertDetail(
          await req("aliceReadOnly", "POST", `/threads/${source.thread_id}/copy`),
          403,
          "read-only copy",
        );
        assert.equal(
          await alice.threads.count({ metadata: { topic: "copied" } }),
          before,
          "no copy was made",
        );
        assertDetail(
          await req("bob", "POST", `/threads/${source.thread_id}/copy`),
          409,
          "bob copies alice's",
        );
      },
    );

    test(
      "A2A and agent cards: another user's assistant is not found; MCP does not list or call it",
      T,
      async () => {
        const assistant = await as("alice").assistants.create({ graphId: "whoami", name: "alices_agent" });
        const id = assistant.assistant_id;
        const cardUrl = (assistantId: string) =>
          `${h.url}/.well-known/agent-card.json?assistant_id=${encodeURIComponent(assistantId)}`;
        /** The official A2A client as a user (its card resolved and its messages sent with the token). */
        const a2aAs = (who: keyof typeof tokens, assistantId: string) => {
          const fetchImpl: typeof fetch = (url, init) => {
            const headers = new Headers(init?.headers);
            headers.set("Authorization", `Bearer ${tokens[who]}`);
            return fetch(url, { ...init, headers });
          };
          const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
            cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
            transports: [new JsonRpcTransportFactory({ fetchImpl })],
          });
          return new ClientFactory(options).createFromUrl(cardUrl(assistantId), "");
        };
        const message = (): Message => ({
          kind: "message",
          role: "user",
          messageId: randomUUID(),
          parts: [{ kind: "data", data: { input: "a2a" } }],
        });
        // alice: her card, her assistant over A2A (the run acts as her).
        const mine = await a2aAs("alice", id);
        assert.equal((await mine.getAgentCard()).name, "alices_agent");
        const task = (await mine.sendMessage({ message: message() })) as Task;
        assert.equal(task.status.state, "completed", JSON.stringify(task));
        // bob: every card URL of it and every A2A method on it answer "not found", as REST does (404).
        for (const path of [
          `/.well-known/agent-card.json?assistant_id=${id}`,
          `/a2a/${id}`,
          `/a2a/${id}/.well-known/agent-card.json`,
          `/a2a/${id}/.well-known/agent.json`,
        ]) {
          const card = await req("bob", "GET", path);
          assert.equal(card.status, 400, `${path}: ${card.text}`);
          assert.equal(card.body.error.message, `Assistant '${id}' not found`);
        }
        await assert.rejects(a2aAs("bob", id), /400|not found/i);
        const rpc = (method: string, params: unknown, accept = "application/json") =>
          http(
            h.url,
            "POST",
            `/a2a/${id}`,
            { jsonrpc: "2.0", id: 1, method, params },
            {
              authorization: `Bearer ${tokens.bob}`,
              accept,
            },
          );
        const send = await rpc("message/send", { message: message() });
        assert.equal(send.body.error?.message, `Assistant '${id}' not found`, send.text);
        const stream = await rpc("message/stream", { message: message() }, "text/event-stream");
        assert.match(stream.text, new RegExp(`Assistant '${id}' not found`), stream.text);
        assert.doesNotMatch(stream.text, /"result"/, "no task was started");
        const get = await rpc("tasks/get", { id: task.id });
        assert.equal(get.body.error?.message, `Assistant '${id}' not found`, get.text);
        assert.equal((await as("alice").runs.list(task.contextId)).length, 1, "bob started no run");
        // A graph's default assistant is everyone's: bob runs it over A2A.
        const whoami = await a2aAs("bob", "whoami");
        assert.equal(((await whoami.sendMessage({ message: message() })) as Task).status.state, "completed");
        // MCP: bob's tools are his assistants; alice's is unknown to tools/call.
        const mcp = new McpClient({ name: "hangar-e2e", version: "0.0.1" });
        await mcp.connect(
          new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
            requestInit: { headers: { Authorization: `Bearer ${tokens.bob}` } },
          }),
        );
        try {
          assert.ok(!(await mcp.listTools()).tools.some((t) => t.name === "alices_agent"));
          const call = await mcp
            .callTool({ name: "alices_agent", arguments: { input: "x" } })
            .catch((err: Error) => err);
          assert.match(String((call as Error).message ?? JSON.stringify(call)), /Unknown tool: alices_agent/);
        } finally {
          await mcp.close();
        }
        await as("alice").assistants.delete(id);
      },
    );

    test(
      "MCP tools/list shows each user what REST /assistants/search shows, default assistants included",
      T,
      async () => {
        const alice = as("alice");
        const mine = await alice.assistants.create({ graphId: "whoami", name: "alice tool" });
        /** The official MCP client as a user. */
        const mcpTools = async (who: keyof typeof tokens) => {
          const mcp = new McpClient({ name: "hangar-e2e", version: "0.0.1" });
          await mcp.connect(
            new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
              requestInit: { headers: { Authorization: `Bearer ${tokens[who]}` } },
            }),
          );
          try {
            return (await mcp.listTools()).tools.map((t) => t.name).sort();
          } finally {
            await mcp.close();
          }
        };
        // A tool per assistant name (mcp/tools.ts), from what the same user's REST search returns.
        const restTools = async (who: keyof typeof tokens) => {
          const found = await as(who).assistants.search({ limit: 1000 });
          return [...new Set(found.map((a) => toolName(a.name) || a.assistant_id))].sort();
        };
        for (const who of ["alice", "bob"] as const) {
          assert.deepEqual(await mcpTools(who), await restTools(who), who);
        }
        // The handlers' owner filter ({owner: user}) hides the graph's default assistant (its metadata is
        // `created_by: system`) from both; alice's own is hers alone.
        const [aliceTools, bobTools] = [await mcpTools("alice"), await mcpTools("bob")];
        assert.ok(aliceTools.includes("alice_tool") && !bobTools.includes("alice_tool"));
        assert.ok(!aliceTools.includes("whoami") && !bobTools.includes("whoami"));
        await alice.assistants.delete(mine.assistant_id);
      },
    );

    test("an authorization handler that throws is a 403, never a 500", T, async () => {
      for (const [method, path, body] of [
        ["POST", "/threads", {}],
        ["POST", "/threads/search", {}],
        ["POST", "/assistants/search", {}],
        ["POST", "/runs/wait", { assistant_id: "whoami" }],
      ] as const) {
        const res = await req("crash", method, path, body);
        assertDetail(res, 403, `${method} ${path}`);
      }
      const mcp = await req("crash", "POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" });
      assert.notEqual(mcp.status, 500);
    });
  });
}
