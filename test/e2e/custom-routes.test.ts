/**
 * langgraph.json `http`: the project's Hono app (`http.app`) in front of the built-in routes, with
 * authentication in either order, `mount_prefix` and `configurable_headers` — a real `hangar dev`
 * on test/e2e/fixtures/custom-routes, driven by the official SDK and raw HTTP. What the reference
 * server answers for the same app was compared by hand (same statuses, bodies and headers) except
 * where noted: the app's `notFound` applies here (the reference answers Hono's text 404).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client } from "@langchain/langgraph-sdk";
import {
  client,
  type Hangar,
  http,
  REPO_ROOT,
  startHangar,
  waitFor,
  writeProject,
} from "../helpers/server.js";

const FIXTURE = join(REPO_ROOT, "test", "e2e", "fixtures", "custom-routes");
const TOKEN = { authorization: "Bearer let-me-in" };

/** A langgraph.json for the fixture project with other `http` (and `auth`) settings. */
function projectConfig(extra: Record<string, unknown>): Promise<string> {
  const http = { app: join(FIXTURE, "app.ts:app"), ...((extra.http as object) ?? {}) };
  return writeProject({ graphs: { echo: join(FIXTURE, "graph.ts:graph") }, ...extra, http });
}

describe("custom routes (http.app)", () => {
  let h: Hangar;
  before(async () => {
    h = await startHangar({ config: join(FIXTURE, "langgraph.json") });
  });
  after(() => h?.stop());

  test("the app's routes, middleware, errors and not-found answer in front of the built-ins", async () => {
    const hello = await http(h.url, "GET", "/custom/hello", undefined, { "x-name": "bob" });
    assert.equal(hello.status, 200);
    assert.deepEqual(hello.body, { hello: "bob" });
    assert.equal(hello.headers.get("x-project-middleware"), "seen");
    // A route the project defines shadows the built-in one.
    const info = await http(h.url, "GET", "/info");
    assert.deepEqual(info.body, { served_by: "project" });
    // Its middleware wraps built-in routes too, and may answer in their place.
    const search = await http(h.url, "POST", "/assistants/search", {});
    assert.equal(search.status, 200);
    assert.equal(search.body[0].graph_id, "echo");
    assert.equal(search.headers.get("x-project-middleware"), "seen");
    const short = await http(h.url, "GET", "/ok?short-circuit");
    assert.deepEqual(short.body, { answered: "by the middleware" });
    assert.equal(short.headers.get("x-project-middleware"), null);
    // Its HTTPException keeps its status; its notFound answers what no route does.
    const teapot = await http(h.url, "GET", "/custom/error");
    assert.equal(teapot.status, 418);
    assert.equal(teapot.text, "I am a teapot");
    const missing = await http(h.url, "GET", "/nowhere/at/all");
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { project: "not found", path: "/nowhere/at/all" });
    // A built-in route's own 404 (an unknown thread) is still the API's JSON error.
    const thread = await http(h.url, "GET", "/threads/00000000-0000-4000-8000-000000000000");
    assert.equal(thread.status, 404);
    assert.match(thread.body.detail, /not found/i);
    // Streaming responses stream.
    const streamed = await http(h.url, "GET", "/custom/stream");
    assert.equal(streamed.text, "line 0\nline 1\nline 2\n");
    // Every answer carries the CORS headers: the routes', errors', streams', redirects'.
    const redirect = await fetch(`${h.url}/custom/redirect`, { redirect: "manual" });
    assert.equal(redirect.status, 302);
    assert.equal(redirect.headers.get("location"), "http://127.0.0.1/elsewhere");
    for (const res of [hello, teapot, missing, thread, streamed, redirect]) {
      assert.equal(res.headers.get("access-control-allow-origin"), "*");
      assert.match(res.headers.get("access-control-expose-headers") ?? "", /content-location/);
    }
  });

  test("middleware rewrites a run request on its way to the built-in route (SDK)", async () => {
    const sdk = new Client({ apiUrl: h.url, defaultHeaders: { "x-inject": "abc" } });
    const out = (await sdk.runs.wait(null, "echo", { input: { text: "hi" } })) as any;
    assert.equal(out.text, "echo: hi");
    assert.equal(out.header, "rewritten:abc");
    const thread = await sdk.threads.create();
    const chunks = [];
    for await (const chunk of sdk.runs.stream(thread.thread_id, "echo", { input: { text: "s" } }))
      chunks.push(chunk);
    const last = chunks.at(-1)?.data as { header?: string } | undefined;
    assert.equal(last?.header, "rewritten:abc");
  });

  test("a route's new Client() reaches this server; webhooks to a path reach the app", async () => {
    const loop = await http(h.url, "GET", "/custom/loopback");
    assert.equal(loop.status, 200);
    assert.equal(loop.body.result.text, "echo: from a route");
    const c = client(h.url);
    const run = await c.runs.create(null, "echo", { input: { text: "hook" }, webhook: "/custom/webhook" });
    const delivered = await waitFor(async () => {
      const got = await http(h.url, "GET", "/custom/webhook");
      return got.body?.run_id === run.run_id ? got.body : undefined;
    });
    assert.equal(delivered.status, "success");
    assert.equal(delivered.values.text, "echo: hook");
  });
});

describe("custom routes and authentication", () => {
  test("by default authentication guards the app's routes too (auth_first)", {
    timeout: 60_000,
  }, async () => {
    const config = await projectConfig({ auth: { path: join(FIXTURE, "auth.ts:auth") } });
    const h = await startHangar({ config });
    try {
      const anonymous = await http(h.url, "GET", "/custom/hello");
      assert.equal(anonymous.status, 401);
      assert.equal((await http(h.url, "GET", "/custom/hello", undefined, TOKEN)).status, 200);
      // Authentication ran before the app: it never saw the request, and its middleware never ran.
      assert.equal(anonymous.headers.get("x-project-middleware"), null);
      assert.equal((await http(h.url, "POST", "/threads", {})).status, 401);
      const sdk = new Client({ apiUrl: h.url, defaultHeaders: TOKEN });
      const thread = await sdk.threads.create();
      assert.equal((await sdk.threads.get(thread.thread_id)).thread_id, thread.thread_id);
    } finally {
      await h.stop();
    }
  });

  test("enable_custom_route_auth: false leaves the app's routes open, built-ins guarded", {
    timeout: 60_000,
  }, async () => {
    const config = await projectConfig({
      auth: { path: join(FIXTURE, "auth.ts:auth") },
      http: { enable_custom_route_auth: false },
    });
    const h = await startHangar({ config, env: { HANGAR_API_KEYS: "k1:acme" } });
    try {
      // Open: no token, no API key.
      const hello = await http(h.url, "GET", "/custom/hello");
      assert.equal(hello.status, 200);
      // Guarded: the API key first, then the handler; the app's middleware wraps the refusal too.
      const refused = await http(h.url, "POST", "/threads", {}, TOKEN);
      assert.equal(refused.status, 401);
      assert.equal(refused.headers.get("x-project-middleware"), "seen");
      assert.equal((await http(h.url, "POST", "/threads", {}, { "x-api-key": "k1" })).status, 401);
      const made = await http(h.url, "POST", "/threads", {}, { "x-api-key": "k1", ...TOKEN });
      assert.equal(made.status, 200);
      // The organization and user authentication found reach the built-in route.
      const sdk = new Client({ apiUrl: h.url, defaultHeaders: { "x-api-key": "k1", ...TOKEN } });
      assert.equal((await sdk.threads.get(made.body.thread_id)).thread_id, made.body.thread_id);
    } finally {
      await h.stop();
    }
  });
});

describe("http.mount_prefix and http.configurable_headers", () => {
  test("everything is served under the prefix; the SDK works with it in its base URL", {
    timeout: 60_000,
  }, async () => {
    const config = await projectConfig({
      http: {
        mount_prefix: "/agents/api",
        configurable_headers: { includes: ["x-team-*", "user-agent"], excludes: ["x-team-secret"] },
      },
    });
    const h = await startHangar({ config });
    try {
      const base = `${h.url}/agents/api`;
      assert.equal((await http(h.url, "GET", "/ok")).status, 404);
      assert.deepEqual((await http(base, "GET", "/ok")).body, { ok: true });
      assert.deepEqual((await http(base, "GET", "/custom/hello")).body, { hello: "world" });
      const sdk = new Client({
        apiUrl: base,
        defaultHeaders: { "x-team-name": "blue", "x-team-secret": "s3", "x-other": "o" },
      });
      const thread = await sdk.threads.create();
      const chunks = [];
      for await (const chunk of sdk.runs.stream(thread.thread_id, "echo", { input: { text: "p" } }))
        chunks.push(chunk);
      assert.equal(chunks.at(-1)?.event, "values");
      const state = await sdk.threads.getState(thread.thread_id);
      // Only the headers the rules include, less those they exclude, reach the run.
      assert.deepEqual((state.values as any).headers, ["user-agent", "x-team-name"]);
      // Graph and route code's new Client() reaches the server under its prefix; the banner says it.
      const loop = await http(base, "GET", "/custom/loopback");
      assert.equal(loop.body?.result?.text, "echo: from a route");
      assert.ok(h.logs().includes(`studio?baseUrl=${base}\n`), "the Studio link names the prefix");
      // A webhook to a path goes to the app itself; URLs the server hands out carry the prefix.
      const run = await sdk.runs.create(null, "echo", {
        input: { text: "hook" },
        webhook: "/custom/webhook",
      });
      await waitFor(async () => (await http(base, "GET", "/custom/webhook")).body?.run_id === run.run_id);
      const card = await http(base, "GET", `/.well-known/agent-card.json?assistant_id=echo`);
      assert.equal(card.status, 200);
      assert.ok(card.body.url.startsWith(`${base}/a2a/`), card.body.url);
    } finally {
      await h.stop();
    }
  });
});

describe("http settings that cannot work stop start-up, naming the setting", () => {
  const startFails = (config: string) =>
    spawnSync(
      process.execPath,
      [join(REPO_ROOT, "bin", "hangar.js"), "dev", "--config", config, "--port", "0"],
      {
        encoding: "utf8",
        timeout: 60_000,
      },
    );

  test("an export that is not a Hono app; contradictory auth order; a bad prefix", async () => {
    const wrongExport = await projectConfig({ http: { app: join(FIXTURE, "graph.ts:graph") } });
    let r = startFails(wrongExport);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /http\.app .*graph\.ts:graph.*not a Hono app/);
    const contradiction = await projectConfig({
      http: { middleware_order: "middleware_first", enable_custom_route_auth: true },
    });
    r = startFails(contradiction);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /http\.middleware_order: "middleware_first"/);
    const prefix = await projectConfig({ http: { mount_prefix: "api/" } });
    r = startFails(prefix);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /http\.mount_prefix: must start with "\/"/);
  });
});
