/**
 * langgraph.json keys that change behaviour, on a real `hangar dev` process: `checkpointer.ttl` (idle
 * threads swept, busy ones kept), `webhooks` (URL policy → 422, headers with `${{ env.VAR }}`, payload
 * fields), and keys of other LangGraph tools that load without a word. Bad values stop the start-up
 * with a message naming the field.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import { type FreshDatabase, freshDatabase, PG_URI } from "../helpers/postgres.js";
import {
  client,
  exampleGraph,
  type Hangar,
  http,
  human,
  rejection,
  startHangar,
  waitFor,
  writeProject,
} from "../helpers/server.js";

/** A langgraph.json header template: `${{ <expr> }}`. */
const ref = (expr: string) => `\${{ ${expr} }}`;

const T = { timeout: 60_000 };

/** Keys the official CLI reads to build images: nothing to do here, and nothing to say about them. */
const BUILD_KEYS = {
  $schema: "https://langgra.ph/schema.json",
  node_version: "20",
  python_version: "3.12",
  dependencies: ["."],
  dockerfile_lines: ["RUN echo hi"],
  image_distro: "wolfi",
  pip_config_file: "pip.conf",
  pip_installer: "uv",
  base_image: "langchain/langgraphjs-api",
  api_version: "0.4",
  keep_pkg_tools: true,
  _INTERNAL_docker_tag: "latest",
};

interface Delivery {
  url: string;
  headers: IncomingHttpHeaders;
  body: any;
}

describe("langgraph.json: checkpointer.ttl, webhooks, build keys", () => {
  let h: Hangar;
  let c: Client;
  let receiver: Server;
  let port = 0;
  const received: Delivery[] = [];

  before(async () => {
    receiver = createServer((req, res) => {
      let raw = "";
      req.setEncoding("utf8");
      req.on("data", (chunk) => (raw += chunk));
      req.on("end", () => {
        received.push({ url: req.url ?? "", headers: req.headers, body: JSON.parse(raw || "null") });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", () => r()));
    port = (receiver.address() as AddressInfo).port;
    const config = await writeProject({
      ...BUILD_KEYS,
      graphs: { agent: exampleGraph("chat.ts"), slow: exampleGraph("slow.ts") },
      checkpointer: {
        // 3 s of idleness, swept every 0.6 s (fractional minutes, as the official server reads them).
        ttl: { strategy: "delete", default_ttl: 0.05, sweep_interval_minutes: 0.01, sweep_limit: 100 },
        serde: { allowed_json_modules: true, pickle_fallback: false },
      },
      webhooks: {
        env_prefix: "HANGAR_E2E_HOOK_",
        headers: { Authorization: `Bearer ${ref("env.HANGAR_E2E_HOOK_TOKEN")}`, "X-Static": "static" },
        url: {
          require_https: false,
          allowed_domains: ["127.0.0.1", "*.example.com"],
          allowed_ports: [port, 443],
          max_url_length: 200,
          disable_loopback: false,
        },
        allowed_fields: ["run_id", "thread_id", "status", "values"],
      },
    });
    h = await startHangar({ config, env: { HANGAR_E2E_HOOK_TOKEN: "s3cret" } });
    c = client(h.url);
  });
  after(async () => {
    await h?.stop();
    await new Promise<void>((r) => receiver?.close(() => r()));
  });

  test("build keys, checkpointer.serde and webhooks load without a warning", () => {
    const logs = h.logs();
    for (const word of ["warn", "ignored", "not supported", "unknown setting"])
      assert.ok(!logs.toLowerCase().includes(word), `"${word}" in the logs:\n${logs}`);
  });

  test(
    "checkpointer.ttl: an idle thread is deleted after default_ttl; a busy one and a longer own TTL are kept",
    T,
    async () => {
      const idle = await c.threads.create();
      const own = await c.threads.create({ ttl: { ttl: 60 } });
      const busy = await c.threads.create();
      // A run that lasts longer than the TTL: its thread must survive it.
      const run = await c.runs.create(busy.thread_id, "slow", {
        input: human("long"),
        config: { configurable: { sleep_ms: 6_000 } },
      });
      await waitFor(async () => (await http(h.url, "GET", `/threads/${idle.thread_id}`)).status === 404, {
        timeoutMs: 15_000,
        what: "the idle thread swept",
      });
      const during = await http(h.url, "GET", `/threads/${busy.thread_id}`);
      assert.equal(during.status, 200, "a thread with a running run is kept");
      assert.equal(during.body.status, "busy");
      assert.equal(
        (await http(h.url, "GET", `/threads/${own.thread_id}`)).status,
        200,
        "its own TTL is longer",
      );
      // The run's end is an update: the thread lives another TTL from then, then goes with its runs.
      await c.runs.join(busy.thread_id, run.run_id);
      const ended = Date.now();
      assert.equal((await http(h.url, "GET", `/threads/${busy.thread_id}`)).status, 200);
      await waitFor(async () => (await http(h.url, "GET", `/threads/${busy.thread_id}`)).status === 404, {
        timeoutMs: 15_000,
        what: "the thread swept after its run",
      });
      assert.ok(Date.now() - ended >= 2_000, "not before its TTL from the run's end");
      assert.equal((await http(h.url, "GET", `/threads/${busy.thread_id}/runs/${run.run_id}`)).status, 404);
    },
  );

  test(
    "a thread's own ttl (thread update, bare minutes as the SDK sends them) replaces the default",
    T,
    async () => {
      const t = await c.threads.create({ ttl: 60 });
      const short = await c.threads.update(t.thread_id, { ttl: 0.02 });
      assert.equal(short.thread_id, t.thread_id);
      await waitFor(async () => (await http(h.url, "GET", `/threads/${t.thread_id}`)).status === 404, {
        timeoutMs: 15_000,
        what: "the thread swept after its new TTL",
      });
      const bad = await http(h.url, "POST", "/threads", { ttl: { strategy: "delete", ttl: -1 } });
      assert.equal(bad.status, 422);
    },
  );

  test("webhooks: headers rendered from the environment, only allowed_fields sent", T, async () => {
    const t = await c.threads.create();
    let runId = "";
    await c.runs.wait(t.thread_id, "agent", {
      input: human("hook"),
      webhook: `http://127.0.0.1:${port}/hook?n=1`,
      onRunCreated: (p) => (runId = p.run_id),
    });
    const hit = await waitFor(() => received.find((r) => r.body?.run_id === runId), {
      timeoutMs: 10_000,
      what: "the webhook delivery",
    });
    assert.equal(hit.url, "/hook?n=1");
    assert.equal(hit.headers.authorization, "Bearer s3cret");
    assert.equal(hit.headers["x-static"], "static");
    assert.equal(hit.headers["content-type"], "application/json");
    assert.deepEqual(Object.keys(hit.body).sort(), ["run_id", "status", "thread_id", "values"]);
    assert.equal(hit.body.status, "success");
  });

  test("webhooks.url: URLs the policy refuses are a 422 naming the rule, for runs and crons", T, async () => {
    const t = await c.threads.create();
    const refused = async (webhook: string, rule: RegExp) => {
      const res = await http(h.url, "POST", `/threads/${t.thread_id}/runs`, {
        assistant_id: "agent",
        input: human("x"),
        webhook,
      });
      assert.equal(res.status, 422, `${webhook}: ${JSON.stringify(res.body)}`);
      assert.match(String(res.body.detail), rule, webhook);
    };
    await refused(`http://evil.test:${port}/hook`, /domain not allowed.*evil\.test/);
    await refused(`http://example.com:${port}/hook`, /domain not allowed/); // a wildcard: subdomains only
    await refused("http://127.0.0.1:1/hook", /port 1 not allowed/);
    await refused(`http://127.0.0.1:${port}/${"x".repeat(200)}`, /too long/);
    await refused("ftp://127.0.0.1/hook", /422|http or https|must be a URL/);
    // Nothing was admitted for the refused requests.
    assert.deepEqual(await c.runs.list(t.thread_id), []);
    const cron = await http(h.url, "POST", `/threads/${t.thread_id}/runs/crons`, {
      assistant_id: "agent",
      schedule: "0 0 * * *",
      webhook: `http://evil.test:${port}/hook`,
    });
    assert.equal(cron.status, 422);
    assert.match(String(cron.body.detail), /domain not allowed/);
    // What the policy allows still goes: this server's own route (disable_loopback false).
    const ok = await http(h.url, "POST", `/threads/${t.thread_id}/runs/wait`, {
      assistant_id: "agent",
      input: human("loop"),
      webhook: "/ok",
    });
    assert.equal(ok.status, 200);
    const err = await rejection(
      c.runs.create(t.thread_id, "agent", { input: human("x"), webhook: `http://127.0.0.1:${port + 1}/h` }),
    );
    assert.equal(err.status, 422);
  });
});

describe("langgraph.json: bad checkpointer and webhooks values stop the start-up", () => {
  const fails = async (extra: Record<string, unknown>, field: RegExp, env: Record<string, string> = {}) => {
    const config = await writeProject({ graphs: { agent: exampleGraph("chat.ts") }, ...extra });
    const err = await rejection(startHangar({ config, env, startTimeoutMs: 20_000 }));
    assert.match(err.message, /exited \(code [1-9]/, err.message);
    assert.match(err.message, field, err.message);
  };

  test("each bad value is named by its field", T, async () => {
    await fails(
      { checkpointer: { ttl: { default_ttl: 0 } } },
      /checkpointer\.ttl\.default_ttl: must be more than 0 minutes/,
    );
    await fails(
      { checkpointer: { ttl: { strategy: "archive" } } },
      /checkpointer\.ttl\.strategy: must be "delete" or "keep_latest"/,
    );
    await fails(
      { checkpointer: { ttl: { sweep_limit: 1.5 } } },
      /checkpointer\.ttl\.sweep_limit: must be a whole number/,
    );
    await fails(
      { webhooks: { url: { allowed_ports: [70000] } } },
      /webhooks\.url\.allowed_ports\[0\]: must be a port from 1 to 65535/,
    );
    await fails(
      { webhooks: { url: { allowed_domains: ["hooks.*.com"] } } },
      /webhooks\.url\.allowed_domains\[0\]: a wildcard is only allowed as a prefix/,
    );
    await fails(
      { webhooks: { headers: { Authorization: `Bearer ${ref("env.HOME")}` } } },
      /webhooks\.headers\.Authorization: environment variable HOME must start with webhooks\.env_prefix "LG_WEBHOOK_"/,
    );
    await fails(
      { webhooks: { headers: { Authorization: `Bearer ${ref("env.LG_WEBHOOK_MISSING_E2E")}` } } },
      /webhooks\.headers\.Authorization: environment variable LG_WEBHOOK_MISSING_E2E is not set/,
    );
    await fails(
      { webhooks: { allowed_fields: ["secret"] } },
      /webhooks\.allowed_fields\[0\]: must be one of run_id/,
    );
  });
});

const REDIS_URI = process.env.HANGAR_TEST_REDIS_URI;

describe("checkpointer.ttl scaled out: two processes on one Postgres sweep each thread once", {
  skip:
    PG_URI && REDIS_URI ? undefined : "HANGAR_TEST_POSTGRES_URI and HANGAR_TEST_REDIS_URI are not both set",
}, () => {
  let db: FreshDatabase;
  const processes: Hangar[] = [];
  after(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await db?.drop();
  });

  test("20 idle threads, swept by both processes, 20 deletions in all", T, async (t) => {
    db = await freshDatabase();
    const config = await writeProject({
      graphs: { agent: exampleGraph("chat.ts") },
      checkpointer: { ttl: { default_ttl: 0.02, sweep_interval_minutes: 0.005, sweep_limit: 3 } },
    });
    const env = {
      POSTGRES_URI: db.uri,
      REDIS_URI: REDIS_URI as string,
      HANGAR_REDIS_PREFIX: `hangar-e2e-ttl-${Date.now()}:`,
    };
    processes.push(await startHangar({ command: "serve", config, env }));
    processes.push(await startHangar({ command: "serve", config, env }));
    const api = client(processes[0]!.url);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await api.threads.create()).thread_id);
    await waitFor(async () => (await api.threads.count()) === 0, { timeoutMs: 20_000, what: "all swept" });
    const deletedBy = () =>
      processes.map((p) =>
        [...p.logs().matchAll(/swept expired threads.* deleted=(\d+)/g)].reduce(
          (n, m) => n + Number(m[1]),
          0,
        ),
      );
    // A sweep logs once it has run its batches to a short one: the last deletions commit (the count
    // reaches 0) before their process logs them. Then a few more sweeps, for any deleted twice.
    await waitFor(() => deletedBy()[0]! + deletedBy()[1]! >= 20 || null, {
      timeoutMs: 10_000,
      what: "logged",
    });
    await new Promise((r) => setTimeout(r, 1000));
    t.diagnostic(`deleted per process: ${deletedBy().join(", ")}`);
    const [a, b] = deletedBy();
    assert.equal(a! + b!, 20, `deleted per process: ${a}, ${b}`);
  });
});
