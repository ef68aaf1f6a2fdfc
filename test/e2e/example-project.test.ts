/**
 * examples/project: a LangGraph.js project written the way LangGraph's docs and templates write
 * them, served by `hangar dev` unchanged — every feature it uses driven through the official SDK.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { client, type Hangar, http, REPO_ROOT, startHangar } from "../helpers/server.js";

const CONFIG = join(REPO_ROOT, "examples", "project", "langgraph.json");
const ask = (content: string) => ({ messages: [{ role: "human", content }] });

describe("examples/project under hangar dev", () => {
  let h: Hangar;
  before(async () => {
    h = await startHangar({ config: CONFIG });
  });
  after(() => h?.stop());

  test("the graph's import-time getLogger() writes to Hangar's log", () => {
    assert.match(h.logs(), /info agent graph loaded source=graph greeting="Hello from the example project"/);
  });

  test("custom routes: its own, its middleware on the built-ins, a route asking the agent with new Client()", async () => {
    const hello = await http(h.url, "GET", "/hello");
    assert.deepEqual(hello.body, { hello: "world" });
    const info = await http(h.url, "GET", "/info");
    assert.equal(info.status, 200);
    assert.equal(info.headers.get("x-served-by"), "example-project");
    const answer = await http(h.url, "POST", "/ask", { question: "where am I?" });
    assert.deepEqual(answer.body, { answer: "You said: where am I?" });
  });

  test("the chat model streams its tokens; the UI component is pushed; typed config applies", async () => {
    const c = client(h.url);
    const assistant = await c.assistants.create({
      graphId: "agent",
      config: { configurable: { tone: "cheerful", model_name: "fake-large" } },
    });
    const thread = await c.threads.create();
    const tokens: string[] = [];
    const custom: any[] = [];
    for await (const chunk of c.runs.stream(thread.thread_id, assistant.assistant_id, {
      input: ask("hi"),
      streamMode: ["messages-tuple", "custom"],
    })) {
      if (chunk.event === "messages") tokens.push(String((chunk.data as any)[0].content));
      if (chunk.event === "custom") custom.push(chunk.data);
    }
    const expected = "Great question! You said: hi";
    assert.ok(tokens.length > 5, `streamed in tokens, got ${tokens.length}`);
    assert.equal(tokens.join(""), expected);
    assert.equal(custom.length, 1);
    assert.equal(custom[0].type, "ui");
    assert.equal(custom[0].name, "answer-card");
    assert.deepEqual(custom[0].props, { model: "fake-large", text: expected });
    const state = await c.threads.getState<any>(thread.thread_id);
    assert.equal(state.values.messages.at(-1).content, expected);
    assert.equal(state.values.ui[0].name, "answer-card");
  });

  test("generative UI: the component's bundle is served as LoadExternalComponent loads it", async () => {
    const snippet = await http(h.url, "POST", "/ui/agent", { name: "answer-card" });
    assert.equal(snippet.status, 200);
    const host = new URL(h.url).host;
    assert.match(
      snippet.text,
      new RegExp(`<link rel="stylesheet" href="http://${host}/ui/agent/entrypoint.css" />`),
    );
    assert.match(snippet.text, /onload='__LGUI_agent.render\("answer-card", "\{\{shadowRootId\}\}"\)'/);
    const js = await http(h.url, "GET", "/ui/agent/entrypoint.js");
    assert.equal(js.status, 200);
    assert.match(js.headers.get("content-type") ?? "", /javascript/);
    assert.match(js.text, /answer-card/);
    const css = await http(h.url, "GET", "/ui/agent/entrypoint.css");
    assert.match(css.text, /\.answer-card/);
  });

  test("a zod state with withLangGraph reducers keeps adding notes across runs", async () => {
    const c = client(h.url);
    const thread = await c.threads.create();
    await c.runs.wait(thread.thread_id, "notes", { input: ask("buy milk") });
    const out = (await c.runs.wait(thread.thread_id, "notes", { input: ask("call mum") })) as any;
    assert.deepEqual(out.notes, ["buy milk", "call mum"]);
    assert.equal(out.messages.at(-1).content, "Noted (2): call mum");
    assert.equal(out.messages.length, 4);
  });

  test("a graph factory keyed on configurable: runs and state updates build the same graph", async () => {
    const c = client(h.url);
    const thread = await c.threads.create();
    const config = { configurable: { route: "express" } };
    const out = (await c.runs.wait(thread.thread_id, "routing", { input: {}, config })) as any;
    assert.deepEqual(out.visited, ["express"]);
    await c.threads.updateState(thread.thread_id, { values: { visited: ["by hand"] }, asNode: "express" });
    const state = await c.threads.getState<any>(thread.thread_id);
    assert.deepEqual(state.values.visited, ["express", "by hand"]);
  });
});
