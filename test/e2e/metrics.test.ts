/**
 * `GET /metrics` (issue 17, point 8) on a real `hangar` process: both formats, with figures that move
 * as runs of the slow example graph queue, execute and end; a bad format; API keys. With
 * HANGAR_TEST_POSTGRES_URI and HANGAR_TEST_REDIS_URI, also what each process of a scaled-out deployment
 * reports (its own workers; the queue from the shared database).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import { type FreshDatabase, freshDatabase } from "../helpers/postgres.js";
import {
  assertDetail,
  assertValidation,
  client,
  type Hangar,
  http,
  human,
  startHangar,
  waitFor,
} from "../helpers/server.js";

const T = { timeout: 60_000 };

const slow = (sleepMs: number) => ({ input: human("hi"), config: { configurable: { sleep_ms: sleepMs } } });

/** The samples of a Prometheus text body: `name{labels}` → value. Checks the format on the way. */
function parsePrometheus(text: string): Map<string, number> {
  assert.ok(text.endsWith("\n"), "the body ends with a newline");
  const samples = new Map<string, number>();
  const typed = new Set<string>();
  for (const line of text.trimEnd().split("\n")) {
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
    if (meta) {
      if (meta[1] === "TYPE") {
        assert.match(meta[3]!, /^(gauge|counter)$/, line);
        typed.add(meta[2]!);
      }
      continue;
    }
    const sample =
      /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-z_]+="[^"]*"(?:,[a-z_]+="[^"]*")*\})? (-?[0-9.e+]+)$/.exec(line);
    assert.ok(sample, `a sample line: ${JSON.stringify(line)}`);
    assert.ok(typed.has(sample[1]!), `${sample[1]} has a TYPE line before its samples`);
    samples.set(`${sample[1]}${sample[2] ?? ""}`, Number(sample[3]));
  }
  return samples;
}

async function prometheus(url: string, headers: Record<string, string> = {}): Promise<Map<string, number>> {
  const res = await http(url, "GET", "/metrics", undefined, headers);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  return parsePrometheus(res.text);
}

async function json(url: string): Promise<any> {
  const res = await http(url, "GET", "/metrics?format=json");
  assert.equal(res.status, 200, res.text);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  return res.body;
}

describe("GET /metrics", () => {
  let h: Hangar;
  let sdk: Client;
  before(async () => {
    // Two slots, so that four slow runs on four threads are two running and two pending.
    h = await startHangar({ args: ["--workers", "2"] });
    sdk = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  test("an idle server: the official figures, zero, and its workers all available", T, async () => {
    const m = await prometheus(h.url);
    for (const name of [
      "lg_api_num_pending_runs",
      "lg_api_num_running_runs",
      "lg_api_pending_runs_wait_time_max",
      "lg_api_pending_runs_wait_time_med",
      "lg_api_pending_unblocked_runs_wait_time_max",
      "lg_api_workers_active",
    ])
      assert.equal(m.get(name), 0, name);
    assert.equal(m.get("lg_api_workers_max"), 2);
    assert.equal(m.get("lg_api_workers_available"), 2);
    assert.ok((m.get("process_resident_memory_bytes") ?? 0) > 0);
    assert.ok(Math.abs((m.get("process_start_time_seconds") ?? 0) - Date.now() / 1000) < 600);

    const j = await json(h.url);
    assert.deepEqual(j.queue, {
      n_pending: 0,
      n_running: 0,
      pending_runs_wait_time_max_secs: null,
      pending_runs_wait_time_med_secs: null,
      pending_unblocked_runs_wait_time_max_secs: null,
    });
    assert.deepEqual(j.workers, { max: 2, active: 0, available: 2 });
  });

  test("queued runs: pending and running counts move, then the runs are counted by outcome", T, async () => {
    const before = await json(h.url);
    const threads = await Promise.all([1, 2, 3, 4].map(() => sdk.threads.create()));
    const runs = [];
    for (const t of threads) runs.push(await sdk.runs.create(t.thread_id, "slow", slow(2500)));
    // A fifth run behind the first on its thread: blocked while that one runs.
    runs.push(await sdk.runs.create(threads[0]!.thread_id, "slow", slow(100)));

    const busy = await waitFor(
      async () => {
        // The queue's figures come from the database, the workers' from the threads' counters, which
        // count a claim a moment after it commits (a thread spawned by these runs claims two at once).
        const m = await prometheus(h.url);
        return m.get("lg_api_num_running_runs") === 2 && m.get("lg_api_workers_active") === 2 ? m : null;
      },
      { what: "two runs running, on both workers", timeoutMs: 15_000 },
    );
    assert.equal(busy.get("lg_api_num_pending_runs"), 3);
    assert.equal(busy.get("lg_api_workers_active"), 2);
    assert.equal(busy.get("lg_api_workers_available"), 0);
    assert.ok((busy.get("lg_api_pending_runs_wait_time_max") ?? 0) > 0, "the oldest pending run waits");

    const j = await json(h.url);
    assert.equal(j.queue.n_running, 2);
    assert.equal(j.queue.n_pending, 3);
    assert.equal(typeof j.queue.pending_runs_wait_time_max_secs, "number");
    assert.equal(typeof j.queue.pending_runs_wait_time_med_secs, "number");
    assert.deepEqual(j.workers, { max: 2, active: 2, available: 0 });

    // A failing run too, then everything ends.
    const failing = await sdk.threads.create();
    runs.push(await sdk.runs.create(failing.thread_id, "fail", { input: human("x") }));
    for (const r of runs) await sdk.runs.join(r.thread_id, r.run_id).catch(() => undefined);

    const done = await waitFor(
      async () => {
        const m = await prometheus(h.url);
        return m.get("lg_api_num_pending_runs") === 0 && m.get("lg_api_num_running_runs") === 0 ? m : null;
      },
      { what: "the queue drained" },
    );
    assert.equal(done.get("lg_api_workers_active"), 0);
    assert.equal(done.get("lg_api_pending_runs_wait_time_max"), 0);
    const after = await json(h.url);
    assert.equal(after.runs.started - before.runs.started, 6);
    assert.equal(after.runs.ended.success - before.runs.ended.success, 5);
    assert.equal(after.runs.ended.error - before.runs.ended.error, 1);
    assert.equal(done.get('hangar_runs_ended_total{outcome="success"}'), after.runs.ended.success);
    assert.equal(done.get('hangar_runs_ended_total{outcome="error"}'), after.runs.ended.error);
    assert.equal(done.get("hangar_runs_started_total"), after.runs.started);
  });

  test("format: prometheus by default and by name; anything else is a 422 naming it", T, async () => {
    const named = await http(h.url, "GET", "/metrics?format=prometheus");
    assert.equal(named.status, 200);
    assert.match(named.text, /^# HELP lg_api_num_pending_runs /);
    for (const bad of ["xml", "", "JSON"]) {
      const res = await http(h.url, "GET", `/metrics?format=${bad}`);
      assertValidation(res, "format", `format=${bad}`);
    }
  });

  test("it is described in /openapi.json, in both forms", T, async () => {
    const doc = (await http(h.url, "GET", "/openapi.json")).body;
    const op = doc.paths["/metrics"]?.get;
    assert.ok(op, "GET /metrics is documented");
    assert.deepEqual(
      op.parameters.map((p: { name: string }) => p.name),
      ["format"],
    );
    assert.deepEqual(Object.keys(op.responses["200"].content).sort(), [
      "application/json",
      "text/plain; version=0.0.4",
    ]);
  });
});

describe("GET /metrics with API keys", () => {
  let h: Hangar;
  before(async () => {
    h = await startHangar({ env: { HANGAR_API_KEYS: "metrics-test-key:acme" } });
  });
  after(async () => {
    await h?.stop();
  });

  test("needs a key, as the API does; any organization's key reads the server's figures", T, async () => {
    assertDetail(await http(h.url, "GET", "/metrics"), 401, "no key");
    const m = await prometheus(h.url, { "x-api-key": "metrics-test-key" });
    assert.equal(m.get("lg_api_num_pending_runs"), 0);
  });
});

const PG_URI = process.env.HANGAR_TEST_POSTGRES_URI;
const REDIS_URI = process.env.HANGAR_TEST_REDIS_URI;

describe("GET /metrics scaled out: each process reports its own workers, the queue from the database", {
  skip: PG_URI && REDIS_URI ? undefined : "HANGAR_TEST_POSTGRES_URI and HANGAR_TEST_REDIS_URI not both set",
}, () => {
  let db: FreshDatabase;
  let api: Hangar;
  let executing: Hangar;
  before(async () => {
    db = await freshDatabase();
    const env = {
      POSTGRES_URI: db.uri,
      REDIS_URI: REDIS_URI as string,
      HANGAR_REDIS_PREFIX: `hangar-e2e-${randomBytes(5).toString("hex")}:`,
    };
    api = await startHangar({ command: "serve", args: ["--no-workers"], env });
    executing = await startHangar({ command: "serve", args: ["--workers", "3"], env });
  });
  after(async () => {
    await api?.stop();
    await executing?.stop();
    await db?.drop();
  });

  test("an API-only process has no worker figures; both see the same queue", T, async () => {
    const sdk = client(api.url);
    const runs = [];
    for (let i = 0; i < 4; i++) {
      const t = await sdk.threads.create();
      runs.push(await sdk.runs.create(t.thread_id, "slow", slow(2500)));
    }
    const [a, e] = await waitFor(
      async () => {
        const [a, e] = await Promise.all([prometheus(api.url), prometheus(executing.url)]);
        // Worker figures are this process's, queue figures the database's: read apart, they agree
        // once the claims have committed.
        const settled = [a, e].every(
          (m) => m.get("lg_api_num_running_runs") === 3 && m.get("lg_api_num_pending_runs") === 1,
        );
        return e.get("lg_api_workers_active") === 3 && settled ? [a, e] : null;
      },
      { what: "the executing process busy", timeoutMs: 15_000 },
    );
    assert.equal(a.has("lg_api_workers_max"), false, "the API-only process executes nothing");
    assert.equal((await json(api.url)).workers, undefined);
    assert.equal(e.get("lg_api_workers_max"), 3);
    for (const m of [a, e]) {
      assert.equal(m.get("lg_api_num_running_runs"), 3);
      assert.equal(m.get("lg_api_num_pending_runs"), 1);
    }
    for (const r of runs) await sdk.runs.join(r.thread_id, r.run_id);
    const ended = await json(executing.url);
    assert.equal(ended.runs.ended.success, 4);
    assert.equal((await json(api.url)).runs.started, 0);
  });
});
