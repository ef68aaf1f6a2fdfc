/**
 * Executor threads: runs execute in worker threads beside the HTTP API's (the default wherever there is
 * more than one core). The other e2e suites run on the default; this one pins the thread count and
 * checks what only threads can get wrong: the runs spread over them and share `--workers`, a run on a
 * thread is stopped and streamed from the API thread, webhooks to this server come back to it, and a
 * graceful stop hands a thread's run back.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import Database from "better-sqlite3";
import { client, contents, type Hangar, human, startHangar, waitFor } from "../helpers/server.js";

const T = { timeout: 60_000 };
const slow = (text: string, sleepMs: number) => ({
  input: human(text),
  config: { configurable: { sleep_ms: sleepMs } },
});

/** Who executed each run: the `worker_id` on its row (one id per executor thread). */
function workerIds(h: Hangar, runIds: string[]): string[] {
  const db = new Database(join(h.dataDir, "hangar.sqlite"), { readonly: true, fileMustExist: true });
  try {
    const stmt = db.prepare("SELECT worker_id FROM runs WHERE run_id = ?");
    return runIds.map((id) => (stmt.get(id) as { worker_id: string }).worker_id);
  } finally {
    db.close();
  }
}

/**
 * How many runs are `running` at one instant: one read of the database (eight GETs one after another
 * could see a run end and the next one start in the same poll).
 */
function runningNow(h: Hangar): number {
  const db = new Database(join(h.dataDir, "hangar.sqlite"), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare("SELECT COUNT(*) AS n FROM runs WHERE status = 'running'").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe("executor threads (--executor-threads 2 --workers 4)", () => {
  let h: Hangar;
  let c: Client;
  before(async () => {
    h = await startHangar({ command: "serve", args: ["--executor-threads", "2", "--workers", "4"] });
    c = client(h.url);
  });
  after(() => h?.stop());

  test("runs spread over both threads, at most --workers at once, all complete", T, async () => {
    const threads = await Promise.all(Array.from({ length: 8 }, () => c.threads.create()));
    const runs = await Promise.all(
      threads.map((t, i) => c.runs.create(t.thread_id, "slow", slow(`m${i}`, 700))),
    );
    let mostRunning = 0;
    await waitFor(
      async () => {
        mostRunning = Math.max(mostRunning, runningNow(h));
        const statuses = await Promise.all(runs.map((r) => c.runs.get(r.thread_id, r.run_id)));
        return statuses.every((r) => r.status === "success");
      },
      { timeoutMs: 30_000, what: "all runs done" },
    );
    assert.ok(mostRunning <= 4, `${mostRunning} runs executed at once with --workers 4`);
    assert.ok(mostRunning >= 2, `runs executed concurrently (${mostRunning} at most)`);
    for (const [i, run] of runs.entries()) {
      assert.deepEqual(contents((await c.threads.getState(run.thread_id)).values), [
        `m${i}`,
        `slow echo: m${i}`,
      ]);
    }
    const executors = new Set(
      workerIds(
        h,
        runs.map((r) => r.run_id),
      ),
    );
    assert.equal(executors.size, 2, `executed by ${[...executors].join(", ")}`);
  });

  test("a run on a thread streams to the API thread and stops when cancelled there", T, async () => {
    const t = (await c.threads.create()).thread_id;
    const run = await c.runs.create(t, "slow", { ...slow("long", 30_000), streamMode: ["custom"] });
    const events: string[] = [];
    const stream = (async () => {
      for await (const chunk of c.runs.joinStream(t, run.run_id)) events.push(chunk.event);
    })();
    await waitFor(() => events.filter((e) => e === "custom").length >= 2, { what: "progress events" });
    const started = Date.now();
    await c.runs.cancel(t, run.run_id, true);
    await stream;
    assert.ok(Date.now() - started < 5_000, "the stop reached the thread at once");
    assert.equal((await c.runs.get(t, run.run_id)).status, "interrupted");
    assert.equal((await c.threads.get(t)).status, "idle");
  });

  test("a webhook to a path of this server is answered by the API thread", T, async () => {
    const t = (await c.threads.create()).thread_id;
    // POST /threads with the run as body: the thread exists, so the server answers 409, and the
    // executor thread logs the status it got back.
    await c.runs.wait(t, "agent", { input: human("hook"), webhook: "/threads" });
    await waitFor(() => /webhook answered an error .*url=\/threads status=409/.test(h.logs()), {
      what: "the webhook's answer in the log",
    });
  });

  test("a graceful stop hands a thread's run back; the next start finishes it", T, async () => {
    const t = (await c.threads.create()).thread_id;
    const run = await c.runs.create(t, "slow", slow("handed back", 8_000));
    await waitFor(async () => (await c.runs.get(t, run.run_id)).status === "running", { what: "running" });
    assert.equal(await h.stop(), 0, "SIGTERM: a clean exit after the 5 s grace");
    h = await startHangar({ command: "serve", dataDir: h.dataDir, args: ["--executor-threads", "2"] });
    c = client(h.url);
    assert.deepEqual(contents(await c.runs.join(t, run.run_id)), ["handed back", "slow echo: handed back"]);
    assert.equal((await c.runs.get(t, run.run_id)).status, "success");
  });
});
