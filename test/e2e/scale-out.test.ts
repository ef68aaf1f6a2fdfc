/**
 * Scale-out (issue 7): Hangar as 2 API processes (`serve --no-workers`) + 2 worker processes
 * (`hangar worker`) on one Postgres database and one Redis, driven with the official SDK and raw HTTP.
 *
 * Needs HANGAR_TEST_POSTGRES_URI and HANGAR_TEST_REDIS_URI (CI sets both; then an unreachable service
 * fails the test). Each suite gets a fresh deployment (test/helpers/cluster.ts). The double-texting
 * suite on such a deployment is scale-out-multitask.test.ts (a file of its own: each has the per-file
 * time budget to itself).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import { Cluster, SKIP } from "../helpers/cluster.js";
import {
  assertDetail,
  client,
  contents,
  type Hangar,
  http,
  human,
  startHangar,
  waitFor,
} from "../helpers/server.js";

const T = { timeout: 90_000 };

const slow = (text: string, sleepMs: number) => ({
  input: human(text),
  config: { configurable: { sleep_ms: sleepMs } },
});

describe("scale-out: 2 API + 2 worker processes on Postgres and Redis", { skip: SKIP }, () => {
  const cluster = new Cluster();
  let api1: Client;
  let api2: Client;

  before(async () => {
    await (await cluster.create()).up();
    api1 = client(cluster.apis[0]!.url);
    api2 = client(cluster.apis[1]!.url);
  });
  after(() => cluster.destroy());

  /** The worker process executing a run: its id on the run row is `host:pid:start`. */
  const workerOf = async (runId: string): Promise<Hangar> => {
    const [row] = await cluster.query<{ worker_id: string }>("SELECT worker_id FROM runs WHERE run_id = $1", [
      runId,
    ]);
    const pid = Number(row!.worker_id.split(":")[1]);
    const worker = cluster.workers.find((w) => w.process.pid === pid);
    assert.ok(worker, `the run's worker ${row!.worker_id} is one of ours`);
    return worker;
  };

  test("a run created on one API process is joined and streamed from the other", T, async () => {
    const t = (await api1.threads.create()).thread_id;
    const run = await api1.runs.create(t, "slow", { ...slow("hi", 600), streamMode: ["values", "custom"] });
    const events: { event: string; data: unknown }[] = [];
    for await (const chunk of api2.runs.joinStream(t, run.run_id)) events.push(chunk);
    assert.ok(
      events.some((e) => e.event === "custom"),
      JSON.stringify(events.map((e) => e.event)),
    );
    const last = events.filter((e) => e.event === "values").at(-1);
    assert.deepEqual(contents(last?.data), ["hi", "slow echo: hi"]);
    assert.deepEqual(contents(await api1.runs.join(t, run.run_id)), ["hi", "slow echo: hi"]);
    // A Last-Event-ID resume on the other process gets exactly the events after that id.
    const resumed = await fetch(`${cluster.apis[1]!.url}/threads/${t}/runs/${run.run_id}/stream`, {
      headers: { "Last-Event-ID": "1" },
    });
    const ids = [...(await resumed.text()).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    assert.equal(ids[0], 2, `resumed ids: ${ids.join(",")}`);
    assert.deepEqual(
      ids,
      ids.map((_, i) => i + 2),
    );
    // runs/wait on one process for a run another process admits and a worker executes.
    const waited = await http(cluster.apis[1]!.url, "POST", `/threads/${t}/runs/wait`, {
      assistant_id: "agent",
      input: human("again"),
    });
    assert.equal(waited.status, 200, waited.text);
    assert.deepEqual(contents(waited.body).slice(-2), ["again", "echo: again"]);
    assert.equal((await api2.threads.get(t)).status, "idle");
  });

  test("a cancel sent to the other API process stops the run on its worker", T, async () => {
    const t = (await api1.threads.create()).thread_id;
    const run = await api1.runs.create(t, "slow", slow("long", 30_000));
    await waitFor(async () => (await api2.runs.get(t, run.run_id)).status === "running", { what: "running" });
    const started = Date.now();
    await api2.runs.cancel(t, run.run_id, true);
    assert.ok(Date.now() - started < 10_000, "the signal reached the worker, not the lease timeout");
    assert.equal((await api1.runs.get(t, run.run_id)).status, "interrupted");
    assert.equal((await api1.threads.get(t)).status, "idle");
  });

  test("kill -9 of the worker executing a run: the run is recovered on the other worker", T, async () => {
    const t = (await api1.threads.create()).thread_id;
    const run = await api1.runs.create(t, "slow", slow("survive", 3_000));
    await waitFor(async () => (await api2.runs.get(t, run.run_id)).status === "running", { what: "running" });
    const [row] = await cluster.query<{ worker_id: string }>("SELECT worker_id FROM runs WHERE run_id = $1", [
      run.run_id,
    ]);
    const victim = await workerOf(run.run_id);
    await victim.kill9();
    cluster.workers.splice(cluster.workers.indexOf(victim), 1);
    // The lease (2 s) expires, a sweeper requeues the run, the surviving worker runs it again.
    const result = await api2.runs.join(t, run.run_id);
    assert.deepEqual(contents(result), ["survive", "slow echo: survive"]);
    const after = await api1.runs.get(t, run.run_id);
    assert.equal(after.status, "success");
    const [again] = await cluster.query<{ attempt: number; worker_id: string }>(
      "SELECT attempt, worker_id FROM runs WHERE run_id = $1",
      [run.run_id],
    );
    assert.equal(again!.attempt, 2);
    assert.notEqual(again!.worker_id, row!.worker_id);
    assert.equal((await api1.threads.get(t)).status, "idle", "the thread is not left busy");
    await cluster.up(); // replace the killed worker for the tests that follow
  });

  test("a worker shut down gracefully hands its run back and the other worker finishes it", T, async () => {
    const t = (await api1.threads.create()).thread_id;
    const run = await api1.runs.create(t, "slow", slow("handed", 8_000));
    await waitFor(async () => (await api2.runs.get(t, run.run_id)).status === "running", { what: "running" });
    const victim = await workerOf(run.run_id);
    assert.equal(await victim.stop(), 0, "SIGTERM: a clean exit after the 5 s grace");
    cluster.workers.splice(cluster.workers.indexOf(victim), 1);
    assert.deepEqual(contents(await api2.runs.join(t, run.run_id)), ["handed", "slow echo: handed"]);
    const [row] = await cluster.query<{ attempt: number }>("SELECT attempt FROM runs WHERE run_id = $1", [
      run.run_id,
    ]);
    assert.equal(row!.attempt, 2);
    assert.equal((await api1.threads.get(t)).status, "idle");
    await cluster.up();
  });

  test("no acknowledged run is lost when every process is killed and restarted", T, async () => {
    const threads = await Promise.all(Array.from({ length: 4 }, () => api1.threads.create()));
    const acknowledged: { thread: string; run: string }[] = [];
    for (const [i, thread] of threads.entries()) {
      for (let k = 0; k < 3; k++) {
        const via = (i + k) % 2 === 0 ? api1 : api2;
        const run = await via.runs.create(thread.thread_id, "slow", slow(`m${i}-${k}`, 400));
        acknowledged.push({ thread: thread.thread_id, run: run.run_id });
      }
    }
    await new Promise((r) => setTimeout(r, 300)); // some are running now, most are queued
    await cluster.stopAll("SIGKILL");
    await cluster.up();
    api1 = client(cluster.apis[0]!.url);
    api2 = client(cluster.apis[1]!.url);
    for (const { thread, run } of acknowledged) {
      await api2.runs.join(thread, run);
      assert.equal((await api1.runs.get(thread, run)).status, "success", `run ${run}`);
    }
    for (const [i, thread] of threads.entries()) {
      const messages = contents((await api1.threads.getState(thread.thread_id)).values);
      assert.deepEqual(
        messages.filter((m) => !m.startsWith("slow echo")),
        [`m${i}-0`, `m${i}-1`, `m${i}-2`],
        "each run's input applied once, in order",
      );
      assert.equal((await api2.threads.get(thread.thread_id)).status, "idle");
    }
  });

  test("bad deployments are refused with a clear message", T, async () => {
    const refused = await startHangar({ command: "worker", env: { REDIS_URI: "" } }).then(
      () => "started",
      (err: Error) => err.message,
    );
    assert.match(refused, /hangar worker: API and worker processes find each other through Redis/);
    assertDetail(await http(cluster.apis[0]!.url, "GET", `/threads/${crypto.randomUUID()}`), 404, "thread");
  });
});
