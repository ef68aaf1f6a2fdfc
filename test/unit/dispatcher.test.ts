/**
 * The dispatcher (src/runtime/runs/dispatcher.ts) in process, on real SQLite storage and the example
 * graphs: it runs what is due when nudged and no sooner, wakes itself for a delayed run, keeps to its
 * slots, stops a run it executes, and hands runs back at shutdown.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, test } from "node:test";
import { silentLogger } from "../../src/logger.js";
import { Dispatcher } from "../../src/runtime/runs/dispatcher.js";
import { RunService } from "../../src/runtime/runs/service.js";
import { DEFAULT_ORG, type Run } from "../../src/storage/ports.js";
import { buildRuntime, type Runtime } from "../helpers/runtime.js";
import { human, waitFor } from "../helpers/server.js";

const org = DEFAULT_ORG;
const open: Runtime[] = [];
after(async () => {
  for (const r of open) await r.close();
});

async function runtime(concurrency = 1) {
  const r = await buildRuntime({ concurrency });
  open.push(r);
  return r;
}

const slow = (sleepMs: number, extra: object = {}) => ({
  assistant_id: "slow",
  input: human("hi"),
  config: { configurable: { sleep_ms: sleepMs } },
  ...extra,
});

/** On a thread of its own (a stateless run's record is deleted when it ends). */
const create = (service: RunService, body: Parameters<RunService["create"]>[2]) =>
  service.create(org, randomUUID(), { if_not_exists: "create", ...body }, new Headers());

const status = async (r: Runtime, run: Run) =>
  (await r.storage.runs.get(org, run.thread_id, run.run_id))?.status;
const statusIs = (r: Runtime, run: Run, want: string) =>
  waitFor(async () => (await status(r, run)) === want, { timeoutMs: 15_000, what: `run ${want}` });

test("a run admitted elsewhere waits until the dispatcher is nudged, then runs to success", async () => {
  const r = await runtime();
  // Admission through an API-only dispatcher (concurrency 0), as an API thread admits for its executors.
  const apiOnly = new Dispatcher(
    { graphs: r.graphs, storage: r.storage, logs: r.logs, log: silentLogger, localFetch: fetch },
    { concurrency: 0, leaseMs: 30_000 },
  );
  const api = new RunService(r.storage, r.graphs, apiOnly, r.logs);
  const run = await create(api, { assistant_id: "agent", input: human("ping") });
  await new Promise((res) => setTimeout(res, 300));
  assert.equal(await status(r, run), "pending", "nothing claims without a nudge (no polling)");
  r.dispatcher.nudge();
  await statusIs(r, run, "success");
});

test("a delayed run is claimed when it falls due, without another nudge", async () => {
  const r = await runtime();
  const started = Date.now();
  const run = await create(r.runs, { assistant_id: "agent", input: human("later"), after_seconds: 1 });
  assert.equal(await status(r, run), "pending");
  await statusIs(r, run, "success");
  assert.ok(Date.now() - started >= 1_000, "not before its time");
});

test("it executes at most `concurrency` runs at once", async () => {
  for (const concurrency of [1, 2]) {
    const r = await runtime(concurrency);
    const a = await create(r.runs, slow(1_500));
    const b = await create(r.runs, slow(1_500));
    await statusIs(r, a, "running");
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(await status(r, b), concurrency === 1 ? "pending" : "running", `concurrency ${concurrency}`);
    await statusIs(r, a, "success");
    if (concurrency === 2) await statusIs(r, b, "success");
  }
});

// Found by this test: with no bus (one process, no executor threads), `runsDue()` on a full
// dispatcher neither nudged nor marked a run as maybe due, so the run waited for the next admission.
test("a run admitted while every slot was busy starts when a slot frees", async () => {
  const r = await runtime(1);
  const a = await create(r.runs, slow(500));
  await statusIs(r, a, "running");
  const b = await create(r.runs, slow(100)); // another thread: not waiting behind `a`
  await statusIs(r, a, "success");
  await statusIs(r, b, "success");
});

test("stop() stops a run it executes and resolves once it settled; false for one it does not", async () => {
  const r = await runtime();
  const run = await create(r.runs, slow(30_000));
  await statusIs(r, run, "running");
  const started = Date.now();
  assert.equal(await r.dispatcher.stop(run.run_id, "interrupt"), true);
  assert.ok(Date.now() - started < 10_000, "the graph's wait was aborted, not waited out");
  assert.equal(await status(r, run), "interrupted");
  assert.equal(await r.dispatcher.stop(run.run_id, "interrupt"), false);
  assert.equal(await r.dispatcher.stop("00000000-0000-4000-8000-000000000000", "interrupt"), false);
});

test("close() lets runs finish within the grace, then hands the rest back as pending", async () => {
  const r = await buildRuntime();
  const quick = await create(r.runs, slow(200));
  await statusIs(r, quick, "running");
  await r.dispatcher.close(10_000);
  assert.equal(await status(r, quick), "success", "finished within the grace");

  const r2 = await runtime();
  const long = await create(r2.runs, slow(30_000));
  await statusIs(r2, long, "running");
  await r2.dispatcher.close(100);
  assert.equal(await status(r2, long), "pending", "handed back for the next worker");
  await r.close();
});
