/**
 * Thread TTLs in storage (`threads.sweepExpired` and the TTL a thread gets at create, patch, admission,
 * copy), against every adapter: SQLite, and Postgres when `HANGAR_TEST_POSTGRES_URI` is set.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import type { Storage, ThreadTtl } from "../../src/storage/ports.js";
import { CHECKPOINT_ORG_KEY } from "../../src/storage/ports.js";
import { ADAPTERS, type Fixture } from "../helpers/adapters.js";
import { admission, makeAssistant, ORG } from "../helpers/storage-records.js";

/** A sweep's result as thread ids, each checked to be of the organization the tests write (`ORG`). */
async function sweepIds(s: Storage, now: number, limit: number) {
  const swept = await s.threads.sweepExpired(now, limit);
  for (const key of [...swept.deleted, ...swept.pruned]) assert.equal(key.org, ORG);
  return { deleted: swept.deleted.map((k) => k.thread_id), pruned: swept.pruned.map((k) => k.thread_id) };
}

const MINUTE = 60_000;
const DELETE: ThreadTtl = { strategy: "delete", minutes: 1 };

async function putCheckpoint(s: Storage, threadId: string, id: string, ns = "") {
  const cp = emptyCheckpoint();
  cp.id = id;
  cp.channel_values = { n: id };
  const config = await s.checkpointer.put(
    { configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: threadId, checkpoint_ns: ns } },
    cp,
    { source: "loop", step: 0, parents: {} },
    {},
  );
  await s.checkpointer.putWrites(config, [["n", id]], `task-${id}`);
}

async function checkpointIds(fx: Fixture, threadId: string): Promise<string[]> {
  const rows = await fx.sql<{ checkpoint_ns: string; checkpoint_id: string }>(
    "SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE thread_id = $1 ORDER BY checkpoint_ns, checkpoint_id",
    [threadId],
  );
  return rows.map((r) => `${r.checkpoint_ns}/${r.checkpoint_id}`);
}

async function writeIds(fx: Fixture, threadId: string): Promise<string[]> {
  const rows = await fx.sql<{ checkpoint_id: string }>(
    "SELECT checkpoint_id FROM checkpoint_writes WHERE thread_id = $1 ORDER BY checkpoint_ns, checkpoint_id",
    [threadId],
  );
  return rows.map((r) => r.checkpoint_id);
}

const sorted = (ids: string[]) => [...ids].sort();

for (const adapter of ADAPTERS) {
  describe(`thread TTL storage: ${adapter.name}`, { skip: adapter.skip }, () => {
    const withStorage = (fn: (s: Storage, fx: Fixture) => Promise<void>) => async () => {
      const fx = await adapter.open();
      try {
        await fn(fx.storage, fx);
      } finally {
        await fx.close();
      }
    };

    test(
      "delete: an expired idle thread goes with its runs, checkpoints and crons; others stay",
      withStorage(async (s, fx) => {
        const a = await makeAssistant(s);
        const expiring = randomUUID();
        await s.threads.create(ORG, { thread_id: expiring, metadata: {}, ttl: DELETE }, "raise");
        const noTtl = (await s.threads.create(ORG, { thread_id: randomUUID(), metadata: {} }, "raise"))
          .thread_id;
        const longTtl = randomUUID();
        await s.threads.create(
          ORG,
          { thread_id: longTtl, metadata: {}, ttl: { strategy: "delete", minutes: 10 } },
          "raise",
        );
        // A finished run, a checkpoint and a cron on the expiring thread.
        await s.runs.admit(ORG, admission(a, expiring));
        const { run } = await s.runs.claimNext();
        await s.runs.complete({ run_id: run!.run_id, status: "success", values: {}, hasNext: false });
        await putCheckpoint(s, expiring, "cp-1");
        await s.crons.create(ORG, {
          cron_id: randomUUID(),
          assistant_id: a.assistant_id,
          thread_id: expiring,
          user_id: null,
          schedule: "* * * * *",
          timezone: null,
          end_time: null,
          enabled: true,
          on_run_completed: null,
          payload: {},
          metadata: {},
          next_run_at: null,
        });

        // Not yet: a TTL runs from the last update.
        assert.deepEqual(await sweepIds(s, Date.now() + MINUTE / 2, 100), {
          deleted: [],
          pruned: [],
        });
        const swept = await sweepIds(s, Date.now() + 2 * MINUTE, 100);
        assert.deepEqual(swept, { deleted: [expiring], pruned: [] });
        assert.equal(await s.threads.get(ORG, expiring), null);
        assert.deepEqual(await fx.sql("SELECT run_id FROM runs WHERE thread_id = $1", [expiring]), []);
        assert.deepEqual(await checkpointIds(fx, expiring), []);
        assert.deepEqual(await writeIds(fx, expiring), []);
        assert.deepEqual(await fx.sql("SELECT cron_id FROM crons WHERE thread_id = $1", [expiring]), []);
        assert.ok(await s.threads.get(ORG, noTtl));
        assert.ok(await s.threads.get(ORG, longTtl));
        // The longer TTL runs out later; a thread without one never does.
        assert.deepEqual((await sweepIds(s, Date.now() + 11 * MINUTE, 100)).deleted, [longTtl]);
        assert.deepEqual((await sweepIds(s, Date.now() + 10_000 * MINUTE, 100)).deleted, []);
        assert.ok(await s.threads.get(ORG, noTtl));
      }),
    );

    test(
      "a thread with a pending or running run is kept; its completion counts as an update",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const t = randomUUID();
        // The admission creates the thread with the TTL it is given.
        await s.runs.admit(ORG, admission(a, t, { thread_ttl: DELETE }));
        const later = () => Date.now() + 2 * MINUTE;
        assert.deepEqual((await sweepIds(s, later(), 100)).deleted, [], "pending");
        const { run } = await s.runs.claimNext();
        assert.deepEqual((await sweepIds(s, later(), 100)).deleted, [], "running");
        // Even if the thread's status were not busy, an in-flight run keeps it.
        await s.runs.complete({ run_id: run!.run_id, status: "success", values: {}, hasNext: false });
        const completedAt = Date.now();
        assert.deepEqual((await sweepIds(s, completedAt + MINUTE / 2, 100)).deleted, []);
        assert.deepEqual((await sweepIds(s, later(), 100)).deleted, [t]);
      }),
    );

    test(
      "stateless runs' temporary threads get no TTL; admission without thread_ttl gives none",
      withStorage(async (s, fx) => {
        const a = await makeAssistant(s);
        const plain = randomUUID();
        await s.runs.admit(ORG, admission(a, plain));
        const temp = randomUUID();
        await s.runs.admit(
          ORG,
          admission(a, temp, {
            stateless: true,
            thread_ttl: DELETE,
            kwargs: { ...admission(a, temp).kwargs, temporary: true },
          }),
        );
        const rows = await fx.sql<{ thread_id: string; ttl_minutes: number | null }>(
          "SELECT thread_id, ttl_minutes FROM threads WHERE thread_id IN ($1, $2)",
          [plain, temp],
        );
        assert.deepEqual(
          rows.map((r) => r.ttl_minutes),
          [null, null],
        );
      }),
    );

    test(
      "patch: a new TTL replaces the old one, and any patch is an update that restarts it",
      withStorage(async (s) => {
        const t = randomUUID();
        await s.threads.create(ORG, { thread_id: t, metadata: {} }, "raise");
        assert.deepEqual((await sweepIds(s, Date.now() + 100 * MINUTE, 100)).deleted, []);
        const patched = await s.threads.patch(ORG, t, { k: 1 }, { strategy: "delete", minutes: 5 });
        assert.deepEqual(patched?.metadata, { k: 1 });
        assert.deepEqual((await sweepIds(s, Date.now() + 4 * MINUTE, 100)).deleted, []);
        // A patch without a TTL keeps the thread's.
        await s.threads.patch(ORG, t, { k: 2 });
        assert.deepEqual((await sweepIds(s, Date.now() + 6 * MINUTE, 100)).deleted, [t]);
        assert.equal(await s.threads.patch(ORG, t, {}, DELETE), null);
      }),
    );

    test(
      "copy keeps the source's TTL",
      withStorage(async (s) => {
        const t = randomUUID();
        await s.threads.create(ORG, { thread_id: t, metadata: {}, ttl: DELETE }, "raise");
        const copy = await s.threads.copy(ORG, t, randomUUID());
        assert.deepEqual(
          sorted((await sweepIds(s, Date.now() + 2 * MINUTE, 100)).deleted),
          sorted([t, copy!.thread_id]),
        );
      }),
    );

    test(
      "keep_latest: all but each namespace's latest checkpoint go, the thread stays, once per update",
      withStorage(async (s, fx) => {
        const t = randomUUID();
        const keep: ThreadTtl = { strategy: "keep_latest", minutes: 1 };
        await s.threads.create(ORG, { thread_id: t, metadata: {}, ttl: keep }, "raise");
        for (const id of ["cp-1", "cp-2", "cp-3"]) await putCheckpoint(s, t, id);
        for (const id of ["cp-1", "cp-2"]) await putCheckpoint(s, t, id, "sub:1");
        const later = () => Date.now() + 2 * MINUTE;
        assert.deepEqual(await sweepIds(s, later(), 100), { deleted: [], pruned: [t] });
        assert.ok(await s.threads.get(ORG, t));
        assert.deepEqual(await checkpointIds(fx, t), ["/cp-3", "sub:1/cp-2"]);
        assert.deepEqual(sorted(await writeIds(fx, t)), ["cp-2", "cp-3"]);
        // The latest state is still readable.
        const latest = await s.checkpointer.getTuple({
          configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: t, checkpoint_ns: "" },
        });
        assert.equal(latest?.checkpoint.id, "cp-3");
        // Nothing more until the thread is updated again.
        assert.deepEqual(await sweepIds(s, later(), 100), { deleted: [], pruned: [] });
        await putCheckpoint(s, t, "cp-4");
        await s.threads.patch(ORG, t, { touched: true });
        assert.deepEqual(await sweepIds(s, Date.now() + MINUTE / 2, 100), {
          deleted: [],
          pruned: [],
        });
        assert.deepEqual(await sweepIds(s, later(), 100), { deleted: [], pruned: [t] });
        assert.deepEqual(await checkpointIds(fx, t), ["/cp-4", "sub:1/cp-2"]);
      }),
    );

    test(
      "limit, oldest first; concurrent sweepers sweep each thread once",
      withStorage(async (s, fx) => {
        const ids: string[] = [];
        for (let i = 0; i < 12; i++) {
          const t = randomUUID();
          ids.push(t);
          await s.threads.create(ORG, { thread_id: t, metadata: {}, ttl: DELETE }, "raise");
        }
        const later = Date.now() + 2 * MINUTE;
        assert.deepEqual((await sweepIds(s, later, 2)).deleted, ids.slice(0, 2));
        const other = await fx.another();
        const results = await Promise.all([
          sweepIds(s, later, 3),
          sweepIds(other, later, 3),
          sweepIds(s, later, 3),
          sweepIds(other, later, 3),
        ]);
        const all = results.flatMap((r) => r.deleted);
        assert.equal(new Set(all).size, all.length, "no thread swept twice");
        assert.equal(all.length, 10);
        assert.deepEqual(sorted(all), sorted(ids.slice(2)));
      }),
    );
  });
}
