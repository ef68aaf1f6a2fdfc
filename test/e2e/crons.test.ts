import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import Database from "better-sqlite3";
import {
  assertDetail,
  assertValidation,
  checkAll,
  client,
  contents,
  defaultAssistantId,
  fixturesConfig,
  type Hangar,
  http,
  human,
  startHangar,
  UUID_RE,
  waitFor,
} from "../helpers/server.js";

const T = { timeout: 60_000 };
/**
 * Every second (six fields: a leading seconds field), so tests see firings without long waits; the
 * servers of these tests allow it (HANGAR_CRON_MIN_INTERVAL_SECONDS=1, the default being 60).
 */
const EVERY_SECOND = "* * * * * *";
const SHORT_CRONS = { HANGAR_CRON_MIN_INTERVAL_SECONDS: "1" };
/** Never fires during a test run. */
const YEARLY = "0 0 1 1 *";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs of a thread, oldest first. */
async function runsOf(c: Client, threadId: string) {
  return (await c.runs.list(threadId, { limit: 1000 })).reverse();
}

describe("crons", () => {
  let h: Hangar;
  let c: Client;
  before(async () => {
    h = await startHangar({ config: await fixturesConfig(), env: SHORT_CRONS });
    c = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  test("/info advertises crons", T, async () => {
    assert.equal((await http(h.url, "GET", "/info")).body.flags.crons, true);
  });

  test("a thread cron fires on its thread with its payload", T, async () => {
    const thread = await c.threads.create();
    const cron = await c.crons.createForThread(thread.thread_id, "agent", {
      schedule: EVERY_SECOND,
      input: human("tick"),
      metadata: { purpose: "e2e" },
      streamMode: ["values", "updates"],
    });
    try {
      assert.match(cron.cron_id, UUID_RE);
      assert.equal(cron.assistant_id, defaultAssistantId("agent"));
      assert.equal(cron.thread_id, thread.thread_id);
      assert.equal(cron.schedule, EVERY_SECOND);
      assert.deepEqual(cron.payload, { input: human("tick"), stream_mode: ["values", "updates"] });
      assert.deepEqual(cron.metadata, { purpose: "e2e" });
      assert.equal(cron.end_time, null);
      assert.equal(cron.user_id, null);
      const full = cron as unknown as Record<string, unknown>;
      assert.equal(full.enabled, true);
      assert.equal(full.timezone, null);
      assert.equal(full.on_run_completed, null);
      const next = Date.parse(cron.next_run_date);
      assert.ok(
        next > Date.parse(cron.created_at) && next <= Date.parse(cron.created_at) + 1000,
        cron.next_run_date,
      );

      const [run] = await waitFor(
        async () => {
          const runs = (await runsOf(c, thread.thread_id)).filter((r) => r.status === "success");
          return runs.length ? runs : null;
        },
        { timeoutMs: 15_000, what: "a successful run of the cron" },
      );
      const kwargs = (run as unknown as { kwargs: Record<string, unknown> }).kwargs;
      assert.deepEqual(kwargs.input, human("tick"));
      assert.deepEqual(kwargs.stream_mode, ["values", "updates"]);
      assert.deepEqual(run.metadata, { purpose: "e2e", cron_id: cron.cron_id });
      assert.equal(run.assistant_id, defaultAssistantId("agent"));
      const state = await c.threads.getState(thread.thread_id);
      assert.ok(contents(state.values).includes("echo: tick"), JSON.stringify(state.values));
    } finally {
      await c.crons.delete(cron.cron_id);
    }
  });

  test("disable, enable and delete", T, async () => {
    const thread = await c.threads.create();
    const cron = await c.crons.createForThread(thread.thread_id, "agent", {
      schedule: EVERY_SECOND,
      input: human("x"),
    });
    await waitFor(async () => (await runsOf(c, thread.thread_id)).length >= 1, {
      timeoutMs: 15_000,
      what: "first run",
    });

    // A disabled cron shows when it would fire (issue 15: it showed null, also after a schedule change).
    const disabled = await c.crons.update(cron.cron_id, { enabled: false });
    assert.equal((disabled as any).enabled, false);
    assert.ok(disabled.next_run_date, "a disabled cron still shows its next tick");
    const hourly = await c.crons.update(cron.cron_id, { schedule: "0 * * * *" });
    assert.equal(new Date(hourly.next_run_date!).getUTCMinutes(), 0, "the new schedule's next tick");
    assert.ok(Date.parse(hourly.next_run_date!) > Date.now());
    const searched = await c.crons.search({ threadId: thread.thread_id });
    assert.equal(searched[0]!.next_run_date, hourly.next_run_date);
    await c.crons.update(cron.cron_id, { schedule: EVERY_SECOND });
    const atDisable = (await runsOf(c, thread.thread_id)).length;
    await sleep(1500);
    assert.equal((await runsOf(c, thread.thread_id)).length, atDisable, "no runs while disabled");

    const enabled = await c.crons.update(cron.cron_id, { enabled: true });
    assert.ok(enabled.next_run_date);
    assert.ok(
      Date.parse(enabled.next_run_date!) - Date.now() <= 1500,
      "the next tick of the current schedule",
    );
    await waitFor(async () => (await runsOf(c, thread.thread_id)).length > atDisable, {
      timeoutMs: 15_000,
      what: "runs again once enabled",
    });

    const del = await http(h.url, "DELETE", `/runs/crons/${cron.cron_id}`);
    assert.equal(del.status, 204);
    assert.equal(del.text, "");
    const atDelete = (await runsOf(c, thread.thread_id)).length;
    await sleep(1500);
    assert.equal((await runsOf(c, thread.thread_id)).length, atDelete, "no runs once deleted");
    assertDetail(await http(h.url, "DELETE", `/runs/crons/${cron.cron_id}`), 404, "delete twice");
    assertDetail(
      await http(h.url, "PATCH", `/runs/crons/${cron.cron_id}`, { enabled: true }),
      404,
      "patch deleted",
    );
    assert.equal(await c.crons.count({ threadId: thread.thread_id }), 0);
  });

  test("patch: schedule, payload fields, metadata, end_time", T, async () => {
    const thread = await c.threads.create();
    const cron = await c.crons.createForThread(thread.thread_id, "steps", {
      schedule: YEARLY,
      input: { log: ["a"] },
      metadata: { a: 1 },
    });
    const patched = await c.crons.update(cron.cron_id, {
      schedule: "*/10 * * * *",
      input: { log: ["b"] },
      metadata: { b: 2 },
      endTime: "2099-01-01T00:00:00Z",
    });
    assert.equal(patched.schedule, "*/10 * * * *");
    assert.deepEqual(patched.payload, { input: { log: ["b"] } });
    assert.deepEqual(patched.metadata, { a: 1, b: 2 });
    assert.equal(patched.end_time, "2099-01-01T00:00:00.000Z");
    const next = Date.parse(patched.next_run_date ?? "");
    assert.equal(new Date(next).getUTCMinutes() % 10, 0);
    assert.ok(next - Date.now() <= 10 * 60_000);
    const cleared = await c.crons.update(cron.cron_id, { endTime: null });
    assert.equal(cleared.end_time, null);
    await c.crons.delete(cron.cron_id);
  });

  test("stateless crons: a new thread per firing, kept or deleted as on_run_completed says", T, async () => {
    const kept = await c.crons.create("agent", {
      schedule: EVERY_SECOND,
      input: human("kept"),
      onRunCompleted: "keep",
    });
    const dropped = await c.crons.create("agent", { schedule: EVERY_SECOND, input: human("dropped") });
    try {
      assert.equal(kept.thread_id, null);
      assert.equal((kept as any).on_run_completed, "keep");
      assert.equal((dropped as any).on_run_completed, "delete");
      const [thread] = await waitFor(
        async () => {
          const threads = await c.threads.search({ metadata: { cron_id: kept.cron_id }, status: "idle" });
          return threads.length ? threads : null;
        },
        { timeoutMs: 15_000, what: "a kept thread" },
      );
      assert.ok(contents(thread.values).includes("echo: kept"));
      await waitFor(() => h.logs().includes(`cron fired cron_id=${dropped.cron_id}`), {
        timeoutMs: 15_000,
        what: "the other cron fired",
      });
    } finally {
      await c.crons.delete(kept.cron_id);
      await c.crons.delete(dropped.cron_id);
    }
    // The dropped cron's threads and runs are deleted after each run.
    const db = new Database(join(h.dataDir, "hangar.sqlite"), { readonly: true, fileMustExist: true });
    try {
      const left = () =>
        (
          db
            .prepare("SELECT COUNT(*) AS n FROM runs WHERE json_extract(metadata, '$.cron_id') = ?")
            .get(dropped.cron_id) as { n: number }
        ).n;
      await waitFor(() => left() === 0, { timeoutMs: 15_000, what: "temporary threads deleted" });
    } finally {
      db.close();
    }
    assert.ok(
      (await c.threads.search({ metadata: { cron_id: kept.cron_id } })).length >= 1,
      "kept threads stay",
    );
  });

  test("search and count: filters, sorting, pagination, select", T, async () => {
    // The `probe` graph is used by no other cron test, so its crons are this test's alone.
    const threadA = await c.threads.create();
    const a = await c.crons.createForThread(threadA.thread_id, "probe", { schedule: "0 0 1 1 *" });
    const b = await c.crons.create("probe", { schedule: "0 0 1 6 *", enabled: false });
    const d = await c.crons.create("probe", { schedule: "0 * * * *", metadata: { team: "red" } });
    try {
      const ids = (crons: { cron_id?: string }[]) => crons.map((x) => x.cron_id);
      assert.deepEqual(
        ids(await c.crons.search({ assistantId: "probe", sortBy: "created_at", sortOrder: "asc" })),
        [a.cron_id, b.cron_id, d.cron_id],
      );
      assert.deepEqual(
        ids(
          await c.crons.search({
            assistantId: defaultAssistantId("probe"),
            sortBy: "next_run_date",
            sortOrder: "asc",
          }),
        ),
        [d.cron_id, a.cron_id, b.cron_id],
        "by next run; the disabled cron (none) last",
      );
      assert.deepEqual(ids(await c.crons.search({ threadId: threadA.thread_id })), [a.cron_id]);
      assert.deepEqual(ids(await c.crons.search({ assistantId: "probe", enabled: false })), [b.cron_id]);
      assert.deepEqual(ids(await c.crons.search({ assistantId: "probe", metadata: { team: "red" } })), [
        d.cron_id,
      ]);
      const page = await http(h.url, "POST", "/runs/crons/search", {
        assistant_id: "probe",
        limit: 1,
        offset: 1,
        sort_by: "created_at",
        sort_order: "asc",
      });
      assert.deepEqual(ids(page.body), [b.cron_id]);
      assert.equal(page.headers.get("x-pagination-total"), "3");
      assert.equal(page.headers.get("x-pagination-next"), "2");
      const selected = await c.crons.search({
        assistantId: "probe",
        select: ["cron_id", "schedule"],
        limit: 1,
      });
      assert.deepEqual(Object.keys(selected[0]).sort(), ["cron_id", "schedule"]);
      assert.equal(await c.crons.count({ assistantId: "probe" }), 3);
      assert.equal(await c.crons.count({ threadId: threadA.thread_id }), 1);
      assert.equal(await c.crons.count({ assistantId: "probe", metadata: { team: "red" } }), 1);
      const raw = await http(h.url, "POST", "/runs/crons/count", { assistant_id: "probe" });
      assert.equal(raw.status, 200);
      assert.equal(raw.text, "3");
    } finally {
      for (const x of [a, b, d]) await c.crons.delete(x.cron_id);
    }
  });

  test("time zone and end_time", T, async () => {
    const zoned = await c.crons.create("steps", { schedule: "0 9 * * *", timezone: "America/New_York" });
    const hour = new Intl.DateTimeFormat("en-US", {
      timeZone: "America/New_York",
      hour: "numeric",
      hourCycle: "h23",
    }).format(new Date(zoned.next_run_date));
    assert.equal(Number(hour), 9);
    assert.equal((zoned as any).timezone, "America/New_York");
    await c.crons.delete(zoned.cron_id);

    const thread = await c.threads.create();
    const ending = await c.crons.createForThread(thread.thread_id, "steps", {
      schedule: EVERY_SECOND,
      input: { log: ["tick"] },
      endTime: new Date(Date.now() + 1500).toISOString(),
    });
    try {
      await waitFor(
        async () => (await c.crons.search({ threadId: thread.thread_id }))[0]?.next_run_date === null,
        { timeoutMs: 15_000, what: "the cron reaches its end" },
      );
      const fired = (await runsOf(c, thread.thread_id)).length;
      assert.ok(fired >= 1 && fired <= 2, `fired ${fired} times in 1.5 s`);
      await sleep(1200);
      assert.equal((await runsOf(c, thread.thread_id)).length, fired, "nothing after end_time");
    } finally {
      await c.crons.delete(ending.cron_id);
    }
  });

  test("bad input is a 422 naming the field or a 404, never a 500", T, async () => {
    const thread = await c.threads.create();
    const ok = { assistant_id: "agent", schedule: YEARLY };
    const create = (body: unknown) => http(h.url, "POST", "/runs/crons", body);
    const missing = randomUUID();
    await checkAll([
      ["no schedule", async () => assertValidation(await create({ assistant_id: "agent" }), "schedule")],
      [
        "schedule out of range",
        async () => {
          const res = await create({ ...ok, schedule: "61 * * * *" });
          assertValidation(res, "schedule");
          assert.match(res.body.detail[0].msg, /61 \* \* \* \*/);
        },
      ],
      [
        "schedule with 3 fields",
        async () => assertValidation(await create({ ...ok, schedule: "* * *" }), "schedule"),
      ],
      [
        "schedule with 7 fields",
        async () => assertValidation(await create({ ...ok, schedule: "* * * * * * *" }), "schedule"),
      ],
      ["schedule empty", async () => assertValidation(await create({ ...ok, schedule: "" }), "schedule")],
      [
        "schedule words",
        async () => assertValidation(await create({ ...ok, schedule: "every day" }), "schedule"),
      ],
      ["schedule a number", async () => assertValidation(await create({ ...ok, schedule: 5 }), "schedule")],
      ["no assistant", async () => assertValidation(await create({ schedule: YEARLY }), "assistant_id")],
      [
        "unknown time zone",
        async () => assertValidation(await create({ ...ok, timezone: "Mars/Olympus" }), "timezone"),
      ],
      [
        "end_time not a date",
        async () => assertValidation(await create({ ...ok, end_time: "tomorrow" }), "end_time"),
      ],
      ["enabled a string", async () => assertValidation(await create({ ...ok, enabled: "yes" }), "enabled")],
      [
        "on_run_completed unknown",
        async () =>
          assertValidation(await create({ ...ok, on_run_completed: "archive" }), "on_run_completed"),
      ],
      ["metadata a list", async () => assertValidation(await create({ ...ok, metadata: [] }), "metadata")],
      [
        "stream_mode unknown",
        async () => assertValidation(await create({ ...ok, stream_mode: "everything" }), "stream_mode"),
      ],
      [
        "multitask_strategy unknown",
        async () =>
          assertValidation(await create({ ...ok, multitask_strategy: "queue" }), "multitask_strategy"),
      ],
      [
        "malformed JSON",
        async () =>
          assertValidation(
            await http(h.url, "POST", "/runs/crons", "{", { "content-type": "application/json" }),
          ),
      ],
      ["unknown assistant", async () => assertDetail(await create({ ...ok, assistant_id: "nope" }), 404)],
      [
        "missing thread",
        async () => assertDetail(await http(h.url, "POST", `/threads/${missing}/runs/crons`, ok), 404),
      ],
      [
        "thread id not a UUID",
        async () => assertValidation(await http(h.url, "POST", "/threads/nope/runs/crons", ok), "thread_id"),
      ],
      [
        "thread cron with a bad schedule",
        async () =>
          assertValidation(
            await http(h.url, "POST", `/threads/${thread.thread_id}/runs/crons`, { ...ok, schedule: "x" }),
            "schedule",
          ),
      ],
      [
        "patch unknown cron",
        async () => assertDetail(await http(h.url, "PATCH", `/runs/crons/${missing}`, {}), 404),
      ],
      [
        "patch cron id not a UUID",
        async () => assertValidation(await http(h.url, "PATCH", "/runs/crons/nope", {}), "cron_id"),
      ],
      [
        "delete unknown cron",
        async () => assertDetail(await http(h.url, "DELETE", `/runs/crons/${missing}`), 404),
      ],
      [
        "delete cron id not a UUID",
        async () => assertValidation(await http(h.url, "DELETE", "/runs/crons/nope"), "cron_id"),
      ],
      [
        "search limit 0",
        async () => assertValidation(await http(h.url, "POST", "/runs/crons/search", { limit: 0 }), "limit"),
      ],
      [
        "search sort_by unknown",
        async () =>
          assertValidation(
            await http(h.url, "POST", "/runs/crons/search", { sort_by: "schedule" }),
            "sort_by",
          ),
      ],
      [
        "search select unknown",
        async () =>
          assertValidation(await http(h.url, "POST", "/runs/crons/search", { select: ["secret"] }), "select"),
      ],
      [
        "search enabled a string",
        async () =>
          assertValidation(await http(h.url, "POST", "/runs/crons/search", { enabled: "no" }), "enabled"),
      ],
      [
        "count thread_id not a UUID",
        async () =>
          assertValidation(await http(h.url, "POST", "/runs/crons/count", { thread_id: "x" }), "thread_id"),
      ],
    ]);
    // A bad patch changes nothing.
    const cron = await c.crons.create("agent", { schedule: YEARLY });
    try {
      await checkAll([
        [
          "patch bad schedule",
          async () =>
            assertValidation(
              await http(h.url, "PATCH", `/runs/crons/${cron.cron_id}`, { schedule: "99 * * * *" }),
              "schedule",
            ),
        ],
        [
          "patch bad time zone",
          async () =>
            assertValidation(
              await http(h.url, "PATCH", `/runs/crons/${cron.cron_id}`, { timezone: "Nowhere" }),
              "timezone",
            ),
        ],
        [
          "patch enabled null",
          async () =>
            assertValidation(
              await http(h.url, "PATCH", `/runs/crons/${cron.cron_id}`, { enabled: 3 }),
              "enabled",
            ),
        ],
      ]);
      const [same] = await c.crons
        .search({ assistantId: "agent", select: ["cron_id", "schedule"], limit: 1000 })
        .then((all) => all.filter((x) => x.cron_id === cron.cron_id));
      assert.equal(same.schedule, YEARLY);
    } finally {
      await c.crons.delete(cron.cron_id);
    }
  });
});

describe("crons across a restart", () => {
  test("a cron is kept, and ticks missed while down fire once at start, not once each", {
    timeout: 90_000,
  }, async () => {
    const config = await fixturesConfig();
    const first = await startHangar({ config, env: SHORT_CRONS });
    let second: Hangar | undefined;
    try {
      const c1 = client(first.url);
      const yearly = await c1.crons.create("agent", { schedule: YEARLY });
      const thread = await c1.threads.create();
      const start = Date.now();
      // Fires every second until END_MS from now; the server is down for most of that time. The margin
      // is wide: on a loaded machine the first run and the stop take seconds.
      const END_MS = 15_000;
      const ending = await c1.crons.createForThread(thread.thread_id, "agent", {
        schedule: EVERY_SECOND,
        input: human("tick"),
        endTime: new Date(start + END_MS).toISOString(),
      });
      await waitFor(async () => (await runsOf(c1, thread.thread_id)).length >= 1, {
        timeoutMs: 10_000,
        what: "a first run",
      });
      await first.stop();
      const stopped = Date.now();
      assert.ok(stopped < start + END_MS - 1000, "stopped with ticks still to come before end_time");
      await sleep(start + END_MS + 1000 - Date.now()); // every remaining tick (up to end_time) is missed
      const restartedAt = Date.now();
      second = await startHangar({ config, dataDir: first.dataDir, env: SHORT_CRONS });
      const c2 = client(second.url);

      const afterRestart = async () =>
        (await runsOf(c2, thread.thread_id)).filter((r) => Date.parse(r.created_at) >= restartedAt);
      await waitFor(async () => (await afterRestart()).length >= 1, {
        timeoutMs: 15_000,
        what: "the catch-up firing",
      });
      await sleep(2000);
      const late = await afterRestart();
      assert.equal(
        late.length,
        1,
        `${late.length} runs after the restart: the missed ticks must fire once in all`,
      );
      const before = (await runsOf(c2, thread.thread_id)).filter((r) => Date.parse(r.created_at) < stopped);
      assert.ok(
        before.length >= 1 && before.length <= END_MS / 1000,
        `${before.length} runs before the stop`,
      );
      for (const r of [...before, ...late]) assert.deepEqual(r.metadata, { cron_id: ending.cron_id });

      const crons = await c2.crons.search({ assistantId: "agent", limit: 100 });
      const keptYearly = crons.find((x) => x.cron_id === yearly.cron_id);
      assert.ok(keptYearly, "the cron survived the restart");
      assert.equal(keptYearly.next_run_date, yearly.next_run_date);
      assert.equal(crons.find((x) => x.cron_id === ending.cron_id)?.next_run_date, null, "past its end");
    } finally {
      await second?.stop();
      await first.stop();
    }
  });
});
