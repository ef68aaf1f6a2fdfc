/**
 * RunService (src/runtime/runs/service.ts) in process, on real SQLite storage and the example graphs:
 * admission (assistants by id or graph, threads that must exist or are created, what goes into the run's
 * `configurable`) and the four multitask strategies on a thread whose run is still running.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import type { RunService } from "../../src/runtime/runs/service.js";
import { DEFAULT_ORG, type Run } from "../../src/storage/ports.js";
import { buildRuntime, type Runtime } from "../helpers/runtime.js";
import { contents, defaultAssistantId, human, waitFor } from "../helpers/server.js";

const org = DEFAULT_ORG;
let r: Runtime;
before(async () => {
  // Two slots: a second run on the same thread must wait for the thread, not for a slot.
  r = await buildRuntime({ concurrency: 2 });
});
after(() => r.close());

type Body = Parameters<RunService["create"]>[2];
const create = (threadId: string | null, body: Body, headers = new Headers()) =>
  r.runs.create(org, threadId, body, headers);
const slow = (sleepMs: number, text = "hi"): Body => ({
  assistant_id: "slow",
  input: human(text),
  config: { configurable: { sleep_ms: sleepMs } },
});
const get = (run: Run) => r.storage.runs.get(org, run.thread_id, run.run_id);
const statusIs = (run: Run, want: string) =>
  waitFor(async () => (await get(run))?.status === want, { timeoutMs: 15_000, what: `run ${want}` });

/** A thread whose first run is running now (a slow echo of 30 s, unless stopped). */
async function busyThread(): Promise<{ threadId: string; first: Run }> {
  const threadId = randomUUID();
  const first = await create(threadId, { ...slow(30_000, "first"), if_not_exists: "create" });
  await statusIs(first, "running");
  return { threadId, first };
}

test("admission: by graph id or assistant id; an unknown one is 404; the thread must exist unless created", async () => {
  const byGraph = await create(randomUUID(), {
    assistant_id: "agent",
    input: human("a"),
    if_not_exists: "create",
  });
  assert.equal(byGraph.assistant_id, defaultAssistantId("agent"));
  assert.equal(byGraph.status, "pending");
  assert.equal(byGraph.multitask_strategy, "enqueue");
  assert.equal(contents(await r.runs.joinRun(org, byGraph)).at(-1), "echo: a");

  const byId = await create(null, { assistant_id: defaultAssistantId("agent"), input: human("b") });
  assert.equal(byId.assistant_id, defaultAssistantId("agent"));

  await assert.rejects(create(null, { assistant_id: "nope", input: human("c") }), (e: { kind?: string }) => {
    assert.equal(e.kind, "not_found");
    return true;
  });
  const missing = randomUUID();
  await assert.rejects(
    create(missing, { assistant_id: "agent", input: human("d") }),
    /Thread with ID .* not found/,
  );
  assert.equal(await r.storage.threads.get(org, missing), null, "a refused admission creates no thread");
});

test("admission: configurable has the run's ids, the assistant's and request's values, and forwarded headers", async () => {
  const threadId = randomUUID();
  const run = await create(
    threadId,
    {
      assistant_id: "agent",
      input: human("cfg"),
      if_not_exists: "create",
      config: { configurable: { mine: 1 } },
    },
    new Headers({ "x-request-source": "sdk", "x-api-key": "secret", authorization: "Bearer secret" }),
  );
  const configurable = run.kwargs.config?.configurable as Record<string, unknown>;
  assert.equal(configurable.run_id, run.run_id);
  assert.equal(configurable.thread_id, threadId);
  assert.equal(configurable.graph_id, "agent");
  assert.equal(configurable.assistant_id, defaultAssistantId("agent"));
  assert.equal(configurable.mine, 1);
  // The default header rules: x-* and user-agent, less the credentials among them.
  assert.equal(configurable["x-request-source"], "sdk");
  assert.equal(configurable["x-api-key"], undefined);
  assert.equal(configurable.authorization, undefined);
  await statusIs(run, "success");
});

test("multitask reject: a second run on a busy thread is refused 409, the first runs on", async () => {
  const { threadId, first } = await busyThread();
  await assert.rejects(
    create(threadId, { ...slow(10), multitask_strategy: "reject" }),
    (e: { kind?: string }) => {
      assert.equal(e.kind, "conflict");
      return true;
    },
  );
  assert.equal((await get(first))?.status, "running");
  await r.runs.cancel(org, threadId, first.run_id, "interrupt");
  await statusIs(first, "interrupted");
});

test("multitask enqueue: the second run waits for the first, then runs", async () => {
  const threadId = randomUUID();
  const first = await create(threadId, { ...slow(1_500, "first"), if_not_exists: "create" });
  await statusIs(first, "running");
  const second = await create(threadId, { ...slow(10, "second"), multitask_strategy: "enqueue" });
  await new Promise((res) => setTimeout(res, 300));
  assert.equal((await get(second))?.status, "pending", "behind the thread's running run, with a slot free");
  await statusIs(first, "success");
  await statusIs(second, "success");
  assert.deepEqual(contents(await r.runs.joinRun(org, second)).slice(-2), ["second", "slow echo: second"]);
});

test("multitask interrupt: the running run is stopped (interrupted), the new one runs on the thread", async () => {
  const { threadId, first } = await busyThread();
  const second = await create(threadId, { ...slow(10, "second"), multitask_strategy: "interrupt" });
  await statusIs(first, "interrupted");
  await statusIs(second, "success");
});

test("multitask rollback: the running run is stopped and deleted, the new one runs", async () => {
  const { threadId, first } = await busyThread();
  const second = await create(threadId, { ...slow(10, "second"), multitask_strategy: "rollback" });
  await waitFor(async () => (await get(first)) === null, {
    timeoutMs: 15_000,
    what: "the first run deleted",
  });
  await statusIs(second, "success");
  const history = contents(await r.runs.joinRun(org, second));
  // The rolled-back run's checkpoints went with it: its input is not in the thread either.
  assert.deepEqual(history, ["second", "slow echo: second"]);
});
