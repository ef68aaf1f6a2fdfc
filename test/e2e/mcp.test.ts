/**
 * MCP end to end: the real server, driven by the official MCP client (`@modelcontextprotocol/sdk`
 * `Client` over `StreamableHTTPClientTransport`) and by raw HTTP for the transport's edges and errors.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client as LangGraphClient } from "@langchain/langgraph-sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { client, type Hangar, http, REPO_ROOT, startHangar } from "../helpers/server.js";

const T = { timeout: 60_000 };
const MCP_HEADERS = { Accept: "application/json, text/event-stream", "Content-Type": "application/json" };

describe("MCP", () => {
  let h: Hangar;
  let lg: LangGraphClient;
  let mcp: Client;
  const transportErrors: Error[] = [];
  const post = (body: unknown, headers: Record<string, string> = MCP_HEADERS) =>
    http(h.url, "POST", "/mcp", body, headers);
  const request = (method: string, params?: unknown, id: string | number = 1) =>
    post({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });

  before(async () => {
    h = await startHangar();
    lg = client(h.url);
    mcp = new Client({ name: "hangar-e2e", version: "0.0.1" });
    const transport = new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`));
    mcp.onerror = (e) => transportErrors.push(e);
    // initialize → notifications/initialized (202) → GET for a server stream (405: none, as expected).
    await mcp.connect(transport);
  });
  after(async () => {
    await mcp?.close();
    await h?.stop();
  });

  describe("official client", () => {
    test("connects statelessly: server info, tools capability, no session id", T, async () => {
      assert.equal(mcp.getServerVersion()?.name, "hangar");
      assert.deepEqual(mcp.getServerCapabilities()?.tools, { listChanged: false });
      await mcp.ping();
      assert.deepEqual(transportErrors, []);
    });

    test("tools/list: one tool per assistant, its description, message lists as one string", T, async () => {
      const { tools, nextCursor } = await mcp.listTools();
      assert.equal(nextCursor, undefined);
      const byName = new Map(tools.map((t) => [t.name, t]));
      for (const graph of ["agent", "slow", "interrupt", "fail", "subgraph", "custom_state"]) {
        assert.ok(byName.has(graph), `tool ${graph} in ${[...byName.keys()]}`);
      }
      const agent = byName.get("agent")!;
      assert.equal(agent.description, "Chat agent that echoes the last human message");
      assert.equal(agent.title, "agent");
      assert.deepEqual(agent.inputSchema, {
        type: "object",
        properties: { messages: { type: "string", description: "The user message to send to the agent." } },
      });
      const custom = byName.get("custom_state")!;
      assert.deepEqual(custom.inputSchema, {
        type: "object",
        properties: { item: { type: "string", description: "The item to add" } },
      });
      assert.equal(agent.annotations?.readOnlyHint, false);
    });

    test("tools/call runs the assistant and returns its output as text", T, async () => {
      const res = await mcp.callTool({ name: "agent", arguments: { messages: "hi" } });
      assert.notEqual(res.isError, true);
      const content = res.content as { type: string; text: string }[];
      assert.equal(content.length, 1);
      assert.equal(content[0]!.type, "text");
      const output = JSON.parse(content[0]!.text);
      assert.deepEqual(
        output.messages.map((m: { type: string; content: string }) => [m.type, m.content]),
        [
          ["human", "hi"],
          ["ai", "echo: hi"],
        ],
      );

      const custom = await mcp.callTool({ name: "custom_state", arguments: { item: "apple" } });
      const text = (custom.content as { text: string }[])[0]!.text;
      assert.deepEqual(JSON.parse(text), { item: "apple", count: 1, items: ["apple"] });
    });

    test(
      "a tool whose graph calls interrupt() answers its state with __interrupt__ (issue 15)",
      T,
      async () => {
        const res = await mcp.callTool({ name: "interrupt", arguments: { messages: "approve?" } });
        assert.notEqual(res.isError, true, JSON.stringify(res));
        const output = JSON.parse((res.content as { text: string }[])[0]!.text);
        assert.deepEqual(output.__interrupt__[0].value, { question: "approve?" });
      },
    );

    test("a tool call is a stateless run: it leaves no thread behind", T, async () => {
      const before = (await lg.threads.search({ limit: 1000 })).length;
      await mcp.callTool({ name: "agent", arguments: { messages: "no trace" } });
      const after = (await lg.threads.search({ limit: 1000 })).length;
      assert.equal(after, before);
    });

    test("a failing run is a tool error (isError) with the error text, not a protocol error", T, async () => {
      const res = await mcp.callTool({ name: "fail", arguments: { messages: "x" } });
      assert.equal(res.isError, true);
      assert.match((res.content as { text: string }[])[0]!.text, /Boo!/);
    });

    test("an unknown tool is an McpError -32602", T, async () => {
      const err = await mcp.callTool({ name: "no_such_tool", arguments: {} }).then(
        () => assert.fail("expected an error"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof McpError, String(err));
      assert.equal(err.code, -32602);
      assert.match(err.message, /Unknown tool: no_such_tool/);
    });

    test("user-created assistants are tools with clean names; the oldest of a name wins", T, async () => {
      const a = await lg.assistants.create({
        graphId: "agent",
        name: "  My Helper\tBot! (v2) ",
        description: "Helps",
      });
      await new Promise((r) => setTimeout(r, 10)); // a later creation time
      await lg.assistants.create({ graphId: "custom_state", name: "My Helper Bot (v2)" });
      const { tools } = await mcp.listTools();
      const matching = tools.filter((t) => t.name === "My_Helper_Bot_v2");
      assert.equal(matching.length, 1, JSON.stringify(tools.map((t) => t.name)));
      assert.equal(matching[0]!.title, "  My Helper\tBot! (v2) ");
      assert.equal(matching[0]!.description, "Helps");
      const res = await mcp.callTool({ name: "My_Helper_Bot_v2", arguments: { messages: "yo" } });
      assert.match((res.content as { text: string }[])[0]!.text, /echo: yo/);
      await lg.assistants.delete(a.assistant_id);
    });
  });

  describe("transport and errors (raw HTTP)", () => {
    test("initialize echoes a supported protocol version and offers the newest otherwise", T, async () => {
      const init = (protocolVersion: string) =>
        request("initialize", {
          protocolVersion,
          capabilities: {},
          clientInfo: { name: "raw", version: "1" },
        });
      const older = await init("2025-03-26");
      assert.equal(older.status, 200);
      assert.equal(older.headers.get("content-type")?.split(";")[0], "application/json");
      assert.equal(older.headers.get("mcp-session-id"), null, "stateless: no session");
      assert.equal(older.body.result.protocolVersion, "2025-03-26");
      assert.deepEqual(older.body.result.capabilities, { tools: { listChanged: false } });
      assert.equal((await init("1999-01-01")).body.result.protocolVersion, "2025-11-25");
    });

    test("notifications and responses are accepted with 202 and no body", T, async () => {
      const note = await post({ jsonrpc: "2.0", method: "notifications/initialized" });
      assert.equal(note.status, 202);
      assert.equal(note.text, "");
      const response = await post({ jsonrpc: "2.0", id: 5, result: {} });
      assert.equal(response.status, 202);
    });

    test("malformed messages are 400s with a JSON-RPC error body", T, async () => {
      const check = async (body: unknown, code: number, headers = MCP_HEADERS) => {
        const res = await post(body, headers);
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body?.jsonrpc, "2.0", res.text);
        assert.equal(res.body?.error?.code, code, res.text);
      };
      await check("{oops", -32700);
      await check([{ jsonrpc: "2.0", id: 1, method: "ping" }], -32600);
      await check({ jsonrpc: "1.0", id: 1, method: "ping" }, -32600);
      await check({ jsonrpc: "2.0", id: 1 }, -32600);
      await check({ jsonrpc: "2.0", id: 1, method: "ping" }, -32600, {
        Accept: "text/html",
        "Content-Type": "application/json",
      });
    });

    test("method and params errors are JSON-RPC errors with HTTP 200", T, async () => {
      const check = async (method: string, params: unknown, code: number) => {
        const res = await request(method, params, "req-1");
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.id, "req-1");
        assert.equal(res.body.error?.code, code, res.text);
      };
      await check("resources/list", undefined, -32601);
      await check("tools/call", undefined, -32602);
      await check("tools/call", { arguments: {} }, -32602);
      await check("tools/call", { name: "agent", arguments: "hi" }, -32602);
      await check("tools/call", { name: "missing" }, -32602);
      await check("tools/list", { cursor: "abc" }, -32602);
    });

    test("GET and DELETE are 405: no server stream, no sessions to end", T, async () => {
      for (const method of ["GET", "DELETE"]) {
        const res = await http(h.url, method, "/mcp", undefined, { Accept: "text/event-stream" });
        assert.equal(res.status, 405, `${method}: ${res.text}`);
        assert.equal(res.headers.get("allow"), "POST");
      }
    });

    test("tools/list pages by 100 with a string cursor", T, async () => {
      const created: string[] = [];
      for (let i = 0; i < 100; i++) {
        created.push((await lg.assistants.create({ graphId: "agent", name: `page-${i}` })).assistant_id);
      }
      try {
        const first = await request("tools/list", {});
        assert.equal(first.body.result.tools.length, 100);
        assert.equal(typeof first.body.result.nextCursor, "string");
        const second = await request("tools/list", { cursor: first.body.result.nextCursor });
        assert.ok(second.body.result.tools.length > 0);
        assert.equal(second.body.result.nextCursor, undefined);
        const names = [...first.body.result.tools, ...second.body.result.tools].map(
          (t: { name: string }) => t.name,
        );
        for (let i = 0; i < 100; i++) assert.ok(names.includes(`page-${i}`), `page-${i}`);
        // The official client follows the cursor too.
        const viaClient = await mcp.listTools({ cursor: first.body.result.nextCursor });
        assert.deepEqual(
          viaClient.tools.map((t) => t.name),
          second.body.result.tools.map((t: { name: string }) => t.name),
        );
      } finally {
        for (const id of created) await lg.assistants.delete(id);
      }
    });
  });
});

describe("MCP settings", () => {
  test("API keys: /mcp needs one; tools are the key's organization's assistants", T, async () => {
    const h = await startHangar({ env: { HANGAR_API_KEYS: "mcp-key-a:org-a,mcp-key-b:org-b" } });
    const connect = async (key: string) => {
      const c = new Client({ name: "hangar-e2e", version: "0.0.1" });
      await c.connect(
        new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
          requestInit: { headers: { "X-Api-Key": key } },
        }),
      );
      return c;
    };
    try {
      const anonymous = await http(
        h.url,
        "POST",
        "/mcp",
        { jsonrpc: "2.0", id: 1, method: "ping" },
        MCP_HEADERS,
      );
      assert.equal(anonymous.status, 401);
      const a = new LangGraphClient({
        apiUrl: h.url,
        apiKey: "mcp-key-a",
        callerOptions: { maxRetries: 0 },
      });
      await a.assistants.create({ graphId: "agent", name: "only-in-org-a" });
      const [mcpA, mcpB] = [await connect("mcp-key-a"), await connect("mcp-key-b")];
      try {
        const namesA = (await mcpA.listTools()).tools.map((t) => t.name);
        const namesB = (await mcpB.listTools()).tools.map((t) => t.name);
        assert.ok(namesA.includes("only-in-org-a"), JSON.stringify(namesA));
        assert.ok(!namesB.includes("only-in-org-a"), JSON.stringify(namesB));
        assert.ok(namesB.includes("agent"), "the graphs' default assistants belong to every organization");
        const res = await mcpA.callTool({ name: "only-in-org-a", arguments: { messages: "hi" } });
        assert.match((res.content as { text: string }[])[0]!.text, /echo: hi/);
        await assert.rejects(mcpB.callTool({ name: "only-in-org-a", arguments: {} }), /Unknown tool/);
      } finally {
        await mcpA.close();
        await mcpB.close();
      }
    } finally {
      await h.stop();
    }
  });

  test("http.disable_mcp removes /mcp (404); A2A stays", T, async () => {
    const h = await startHangar({ config: join(REPO_ROOT, "test", "e2e", "fixtures", "mcp-disabled.json") });
    try {
      const res = await http(h.url, "POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "ping" }, MCP_HEADERS);
      assert.equal(res.status, 404);
      const card = await http(h.url, "GET", "/.well-known/agent-card.json?assistant_id=agent");
      assert.equal(card.status, 200);
    } finally {
      await h.stop();
    }
  });
});
