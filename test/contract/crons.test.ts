/**
 * Crons against every storage adapter (test/helpers/adapters.ts): CronService (create/update), the
 * repository's tick claims, and the CronScheduler with a clock the tests move and a fake run service
 * that records what it is asked.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { silentLogger } from "../../src/logger.js";
import { type CronRunner, CronScheduler } from "../../src/runtime/crons/scheduler.js";
import { type CronCreateRequest, CronService } from "../../src/runtime/crons/service.js";
import type { RunRequest } from "../../src/runtime/runs/service.js";
import type { Assistant, Run, Storage } from "../../src/storage/ports.js";
import { ADAPTERS, type Fixture, useFixtures } from "../helpers/adapters.js";

const ORG = "default";
const T0 = Date.parse("2026-01-01T00:00:30Z");

interface Fired {
  org: string;
  threadId: string | null;
  body: RunRequest;
}

/** Records run creations; `fail` makes them throw. */
function fakeRuns(): CronRunner & { fired: Fired[]; fail: boolean } {
  const runner = {
    fired: [] as Fired[],
    fail: false,
    async create(org: string, threadId: string | null, body: RunRequest): Promise<Run> {
      if (runner.fail) throw new Error("thread is busy");
      runner.fired.push({ org, threadId, body });
      return { run_id: randomUUID(), thread_id: threadId ?? randomUUID() } as Run;
    },
  };
  return runner;
}

async function setup(fx: Fixture) {
  const storage = fx.storage;
  const assistant: Assistant = await storage.assistants.ensureSystem({
    assistant_id: randomUUID(),
    graph_id: "agent",
    name: "agent",
    description: null,
    config: {},
    context: {},
    metadata: {},
  });
  const clock = { now: T0 };
  const runs = fakeRuns();
  const scheduler = new CronScheduler({
    crons: storage.crons,
    runs,
    log: silentLogger,
    clock: () => clock.now,
  });
  const service = new CronService(
    storage,
    { assistant: async () => assistant },
    () => {},
    () => clock.now,
  );
  const create = (req: Partial<CronCreateRequest>, threadId: string | null = null) =>
    service.create(ORG, threadId, { assistant_id: assistant.assistant_id, schedule: "* * * * *", ...req });
  return { storage, assistant, clock, runs, scheduler, service, create };
}

const at = (iso: string) => Date.parse(iso);

/**
 * `first` and a second process's storage (`second`) on one database: both see a due cron, one claim of
 * the tick wins, and scheduler cycles run at once fire the next tick once in all.
 */
async function claimedOnceAcross(first: Awaited<ReturnType<typeof setup>>, second: Storage) {
  const cron = await first.create({});
  const secondRuns = fakeRuns();
  const secondScheduler = new CronScheduler({
    crons: second.crons,
    runs: secondRuns,
    log: silentLogger,
    clock: () => first.clock.now,
  });

  first.clock.now = at("2026-01-01T00:01:00Z");
  // Both see the cron due before either claims it: only one claim wins.
  const [seenA] = await first.storage.crons.listDue(first.clock.now, 10);
  const [seenB] = await second.crons.listDue(first.clock.now, 10);
  assert.equal(seenA.cron.cron_id, cron.cron_id);
  assert.equal(seenB.cron.cron_id, cron.cron_id);
  const next = at("2026-01-01T00:02:00Z");
  assert.equal(await first.storage.crons.claimTick(cron.cron_id, seenA.next_run_at, next), true);
  assert.equal(await second.crons.claimTick(cron.cron_id, seenB.next_run_at, next), false);

  // And whole cycles run at once fire the next tick once in all.
  first.clock.now = at("2026-01-01T00:02:00Z");
  const [a, b] = await Promise.all([first.scheduler.runDue(), secondScheduler.runDue()]);
  assert.equal(a + b, 1);
  assert.equal(first.runs.fired.length + secondRuns.fired.length, 1);
}

for (const adapter of ADAPTERS) {
  describe(`crons: ${adapter.name}`, { skip: adapter.skip }, () => {
    const open = useFixtures(adapter);

    describe("creating and updating", () => {
      test("next_run_date from the schedule; disabled or past the end: none", async () => {
        const { create } = await setup(await open());
        const cron = await create({ input: { x: 1 }, metadata: { team: "a" }, stream_mode: ["values"] });
        assert.equal(cron.next_run_date, "2026-01-01T00:01:00.000Z");
        assert.equal(cron.enabled, true);
        assert.equal(cron.on_run_completed, "delete");
        assert.deepEqual(cron.payload, { input: { x: 1 }, stream_mode: ["values"] });
        assert.deepEqual(cron.metadata, { team: "a" });
        // Disabled, it does not fire, but says when it would (issue 15).
        assert.equal((await create({ enabled: false })).next_run_date, "2026-01-01T00:01:00.000Z");
        assert.equal((await create({ end_time: "2026-01-01T00:00:59Z" })).next_run_date, null);
        const zoned = await create({ schedule: "0 9 * * *", timezone: "Asia/Tokyo" });
        assert.equal(zoned.next_run_date, "2026-01-02T00:00:00.000Z"); // 09:00 JST
      });

      test("a thread cron needs its thread; it goes when the thread or the assistant goes", async () => {
        const { storage, create, assistant } = await setup(await open());
        await assert.rejects(create({}, randomUUID()), /Thread with ID .* not found/);
        const thread = await storage.threads.create(ORG, { thread_id: randomUUID(), metadata: {} }, "raise");
        const onThread = await create({ on_run_completed: "keep" }, thread.thread_id);
        assert.equal(onThread.thread_id, thread.thread_id);
        assert.equal(onThread.on_run_completed, null, "on_run_completed is for stateless crons");
        const stateless = await create({});
        await storage.threads.delete(ORG, thread.thread_id);
        assert.equal(await storage.crons.get(ORG, onThread.cron_id), null);
        assert.ok(await storage.crons.get(ORG, stateless.cron_id));
        await storage.assistants.delete("", assistant.assistant_id, { deleteThreads: false }); // system org ''
        assert.equal(await storage.crons.get(ORG, stateless.cron_id), null);
      });

      test("update: payload fields replace, metadata merges, timing changes recompute from now", async () => {
        const { create, service, clock } = await setup(await open());
        const cron = await create({
          input: { v: 1 },
          webhook: "http://example.invalid/hook",
          metadata: { a: 1 },
        });
        clock.now = at("2026-01-01T05:00:10Z");
        const payloadOnly = await service.update(ORG, cron.cron_id, {
          input: { v: 2 },
          webhook: null,
          metadata: { b: 2 },
        });
        assert.deepEqual(payloadOnly.payload, { input: { v: 2 } });
        assert.deepEqual(payloadOnly.metadata, { a: 1, b: 2 });
        assert.equal(payloadOnly.next_run_date, cron.next_run_date, "no timing change: next run kept");
        const rescheduled = await service.update(ORG, cron.cron_id, { schedule: "*/15 * * * *" });
        assert.equal(rescheduled.next_run_date, "2026-01-01T05:15:00.000Z");
        assert.equal(
          (await service.update(ORG, cron.cron_id, { enabled: false })).next_run_date,
          rescheduled.next_run_date,
          "disabled: the tick it would fire at",
        );
        const ended = await service.update(ORG, cron.cron_id, {
          enabled: true,
          end_time: "2026-01-01T05:10:00Z",
        });
        assert.equal(ended.next_run_date, null);
        const reopened = await service.update(ORG, cron.cron_id, {
          end_time: null,
          timezone: "Asia/Kolkata",
        });
        assert.equal(reopened.end_time, null);
        assert.equal(reopened.timezone, "Asia/Kolkata");
        assert.equal(reopened.next_run_date, "2026-01-01T05:15:00.000Z"); // :45 IST is :15 UTC
        await assert.rejects(service.update(ORG, randomUUID(), {}), /not found/);
      });

      test("search and count: filters, sorts, pagination; organizations are separate", async () => {
        const { storage, create, assistant, clock } = await setup(await open());
        const thread = await storage.threads.create(ORG, { thread_id: randomUUID(), metadata: {} }, "raise");
        const a = await create({ schedule: "0 * * * *", metadata: { k: "x" } });
        const b = await create({ schedule: "*/5 * * * *", enabled: false }, thread.thread_id);
        clock.now += 1;
        const c = await create({ schedule: "* * * * *", metadata: { k: "y" } });
        const base = { limit: 10, offset: 0, sort_by: "created_at", sort_order: "asc" } as const;
        const ids = (r: { items: { cron_id: string }[] }) => r.items.map((i) => i.cron_id);
        assert.deepEqual(ids(await storage.crons.search(ORG, base)), [a.cron_id, b.cron_id, c.cron_id]);
        assert.deepEqual(ids(await storage.crons.search(ORG, { ...base, sort_by: "next_run_date" })), [
          c.cron_id, // 00:01
          b.cron_id, // 00:05: disabled, sorted by the tick it would fire at
          a.cron_id, // 01:00
        ]);
        assert.deepEqual(ids(await storage.crons.search(ORG, { ...base, thread_id: thread.thread_id })), [
          b.cron_id,
        ]);
        assert.deepEqual(
          ids(await storage.crons.search(ORG, { ...base, enabled: true, sort_order: "desc" })),
          [c.cron_id, a.cron_id],
        );
        assert.deepEqual(ids(await storage.crons.search(ORG, { ...base, metadata: { k: "y" } })), [
          c.cron_id,
        ]);
        const page = await storage.crons.search(ORG, { ...base, limit: 1, offset: 1 });
        assert.deepEqual(ids(page), [b.cron_id]);
        assert.equal(page.total, 3);
        assert.equal(await storage.crons.count(ORG, { assistant_id: assistant.assistant_id }), 3);
        assert.equal(await storage.crons.count(ORG, { enabled: false }), 1);
        assert.equal(await storage.crons.count("acme", {}), 0);
        assert.equal(await storage.crons.get("acme", a.cron_id), null);
        assert.equal(await storage.crons.delete("acme", a.cron_id), false);
      });
    });

    describe("the scheduler", () => {
      test("fires a due cron once, with its payload, and moves to the next tick", async () => {
        const { create, scheduler, runs, clock, storage } = await setup(await open());
        const cron = await create({ input: { msg: "tick" }, metadata: { m: 1 }, on_run_completed: "keep" });
        clock.now = at("2026-01-01T00:00:59Z");
        assert.equal(await scheduler.runDue(), 0, "not due yet");
        clock.now = at("2026-01-01T00:01:00Z");
        assert.equal(await scheduler.runDue(), 1);
        assert.equal(await scheduler.runDue(), 0, "the same tick never fires twice");
        assert.equal(runs.fired.length, 1);
        const [fired] = runs.fired;
        assert.equal(fired.org, ORG);
        assert.equal(fired.threadId, null);
        assert.deepEqual(fired.body.input, { msg: "tick" });
        assert.deepEqual(fired.body.metadata, { m: 1, cron_id: cron.cron_id });
        assert.equal(fired.body.on_completion, "keep");
        assert.equal((await storage.crons.get(ORG, cron.cron_id))?.next_run_date, "2026-01-01T00:02:00.000Z");
      });

      test("ticks missed while no process ran collapse into one firing", async () => {
        const { create, scheduler, runs, clock, storage } = await setup(await open());
        const cron = await create({});
        clock.now = at("2026-01-01T03:17:20Z"); // 197 ticks late
        assert.equal(await scheduler.runDue(), 1);
        assert.equal(runs.fired.length, 1);
        assert.equal((await storage.crons.get(ORG, cron.cron_id))?.next_run_date, "2026-01-01T03:18:00.000Z");
      });

      test("thread crons run on their thread", async () => {
        const { storage, create, scheduler, runs, clock } = await setup(await open());
        const thread = await storage.threads.create(ORG, { thread_id: randomUUID(), metadata: {} }, "raise");
        await create({ multitask_strategy: "interrupt" }, thread.thread_id);
        clock.now = at("2026-01-01T00:01:00Z");
        await scheduler.runDue();
        assert.equal(runs.fired[0].threadId, thread.thread_id);
        assert.equal(runs.fired[0].body.multitask_strategy, "interrupt");
        assert.equal(runs.fired[0].body.on_completion, null);
      });

      test("disabled crons do not fire; re-enabled ones do not catch up", async () => {
        const { create, scheduler, runs, clock, service } = await setup(await open());
        const cron = await create({});
        await service.update(ORG, cron.cron_id, { enabled: false });
        clock.now = at("2026-01-01T00:05:00Z");
        assert.equal(await scheduler.runDue(), 0);
        const enabled = await service.update(ORG, cron.cron_id, { enabled: true });
        assert.equal(enabled.next_run_date, "2026-01-01T00:06:00.000Z");
        assert.equal(await scheduler.runDue(), 0);
        assert.equal(runs.fired.length, 0);
      });

      test("no firing after end_time", async () => {
        const { create, scheduler, runs, clock, storage } = await setup(await open());
        const cron = await create({ end_time: "2026-01-01T00:02:30Z" });
        clock.now = at("2026-01-01T00:01:00Z");
        await scheduler.runDue();
        clock.now = at("2026-01-01T00:02:00Z");
        await scheduler.runDue();
        assert.equal((await storage.crons.get(ORG, cron.cron_id))?.next_run_date, null);
        clock.now = at("2026-01-01T00:03:00Z");
        assert.equal(await scheduler.runDue(), 0);
        assert.equal(runs.fired.length, 2);
      });

      test("a firing whose run cannot be created spends its tick (no retry loop)", async () => {
        const { create, scheduler, runs, clock, storage } = await setup(await open());
        const cron = await create({});
        runs.fail = true;
        clock.now = at("2026-01-01T00:01:00Z");
        assert.equal(await scheduler.runDue(), 1);
        assert.equal(await scheduler.runDue(), 0);
        assert.equal((await storage.crons.get(ORG, cron.cron_id))?.next_run_date, "2026-01-01T00:02:00.000Z");
      });

      test("two processes sharing the database: each tick is claimed once", async () => {
        const fx = await open();
        await claimedOnceAcross(await setup(fx), await fx.another());
      });

      if (adapter.name === "sqlite") {
        test("sqlite only: two connections to one file: each tick is claimed once", async () => {
          // One process owns an SQLite file, but a second connection to it must not double-fire either.
          const fx = await open();
          await claimedOnceAcross(await setup(fx), await fx.reopen());
        });
      }

      test("with the real clock: one timer fires a seconds schedule; nudge picks up new crons; close stops it", async () => {
        const { storage } = await open();
        const assistant = await storage.assistants.ensureSystem({
          assistant_id: randomUUID(),
          graph_id: "agent",
          name: "agent",
          description: null,
          config: {},
          context: {},
          metadata: {},
        });
        const runs = fakeRuns();
        const scheduler = new CronScheduler({ crons: storage.crons, runs, log: silentLogger });
        const service = new CronService(storage, { assistant: async () => assistant }, () =>
          scheduler.nudge(),
        );
        scheduler.start(); // nothing to do: no timer armed
        await service.create(ORG, null, { assistant_id: assistant.assistant_id, schedule: "* * * * * *" });
        const started = Date.now();
        while (runs.fired.length < 2) {
          assert.ok(Date.now() - started < 20_000, `two firings within 20 s, got ${runs.fired.length}`);
          await new Promise((r) => setTimeout(r, 20));
        }
        await scheduler.close();
        const firedAtClose = runs.fired.length;
        await new Promise((r) => setTimeout(r, 1200));
        assert.equal(runs.fired.length, firedAtClose, "nothing fires after close");
      });
    });
  });
}
