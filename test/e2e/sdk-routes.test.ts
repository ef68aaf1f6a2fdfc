/**
 * The REST routes and options `@langchain/langgraph-sdk` 1.15 calls beyond the older API (issue 35,
 * item 3), through the SDK against a real server process: `threads.prune` (and `keep_latest` on a
 * graph whose history is a delta channel, also by the TTL sweep), `threads.joinStream`, `include` on
 * `threads.get`, `extract` on `threads.search`, `streamMode` on `runs.joinStream`, `select` on
 * `runs.list`, and `GET /threads/{id}/storage` (no SDK method yet: raw HTTP). On SQLite, and on Postgres
 * when HANGAR_TEST_POSTGRES_URI is set; custom auth and organizations on SQLite.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client } from "@langchain/langgraph-sdk";
import { SignJWT } from "jose";
import { freshDatabase, PG_SKIP } from "../helpers/postgres.js";
import {
  assertDetail,
  assertValidation,
  checkAll,
  client,
  type Hangar,
  http,
  REPO_ROOT,
  rejection,
  startHangar,
  waitFor,
  writeProject,
} from "../helpers/server.js";

const T = { timeout: 90_000 };
const FIXTURES = join(REPO_ROOT, "test", "e2e", "fixtures");
const graph = (name: string) => join(FIXTURES, "sdk-routes", `graphs.ts:${name}`);
/** The TTL sweep runs every ~100 ms here (its floor), so a `keep_latest` TTL applies at once. */
const project = (extra: Record<string, unknown> = {}) =>
  writeProject({
    graphs: { delta: graph("delta"), slow: graph("slow") },
    checkpointer: { ttl: { sweep_interval_minutes: 0.002 } },
    ...extra,
  });

type Events = { id?: string; event: string; data: any }[];

/** Reads `stream` in the background until `done(events)` holds; `stop()` ends it. */
function collect(open: (signal: AbortSignal) => AsyncIterable<{ id?: string; event: string; data: any }>) {
  const controller = new AbortController();
  const events: Events = [];
  const finished = (async () => {
    try {
      for await (const e of open(controller.signal)) events.push(e);
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
  })();
  return {
    events,
    async until(done: (events: Events) => boolean, timeoutMs = 30_000) {
      await waitFor(() => done(events), { timeoutMs });
    },
    async stop() {
      controller.abort();
      await finished;
    },
  };
}

const historyOf = async (c: Client, threadId: string) => (await c.threads.getState(threadId)).values as any;
const checkpointCount = async (c: Client, threadId: string) =>
  (await c.threads.getHistory(threadId, { limit: 1000 })).length;

async function deltaThread(c: Client, items: string[]) {
  const t = await c.threads.create({ graphId: "delta" });
  for (const item of items) await c.runs.wait(t.thread_id, "delta", { input: { item } });
  return t.thread_id;
}

/** The suite on one engine: `env` is what the server gets (a Postgres URI, or nothing for SQLite). */
function routesSuite(
  engine: string,
  env: () => Promise<{ env: Record<string, string>; drop?: () => Promise<void> }>,
  skip?: string,
) {
  describe(`SDK 1.15 routes (${engine})`, { skip }, () => {
    let h: Hangar;
    let c: Client;
    let drop: (() => Promise<void>) | undefined;
    before(async () => {
      const e = await env();
      drop = e.drop;
      h = await startHangar({ config: await project(), env: e.env });
      c = client(h.url);
    });
    after(async () => {
      await h?.stop();
      await drop?.();
    });

    test(
      "prune delete: the threads named go (runs and checkpoints), others stay; absent ids are not counted",
      T,
      async () => {
        const [a, b, kept] = await Promise.all([0, 1, 2].map(() => deltaThread(c, ["x"])));
        const res = await c.threads.prune([a!, b!, randomUUID()]);
        assert.deepEqual(res, { pruned_count: 2 });
        for (const gone of [a!, b!]) assert.equal((await rejection(c.threads.get(gone))).status, 404);
        assert.deepEqual((await historyOf(c, kept!)).history, ["x"]);
        // The SDK's default strategy is delete; an explicit one too.
        assert.deepEqual(await c.threads.prune([kept!], { strategy: "delete" }), { pruned_count: 1 });
      },
    );

    test(
      "prune keep_latest: a delta channel's value survives, history shrinks, the thread goes on",
      T,
      async () => {
        const items = ["i1", "i2", "i3", "i4", "i5", "i6"];
        const t = await deltaThread(c, items);
        assert.deepEqual((await historyOf(c, t)).history, items);
        const before = await checkpointCount(c, t);
        const storageBefore = (await http(h.url, "GET", `/threads/${t}/storage`)).body;

        assert.deepEqual(await c.threads.prune([t], { strategy: "keep_latest" }), { pruned_count: 1 });
        // Keeping only the latest checkpoint would rebuild the history from nothing: [].
        assert.deepEqual((await historyOf(c, t)).history, items);
        const afterPrune = await checkpointCount(c, t);
        assert.ok(afterPrune < before, `${afterPrune} checkpoints kept of ${before}`);
        assert.ok(afterPrune > 1, "the ancestors back to the last snapshot are kept");
        const storageAfter = (await http(h.url, "GET", `/threads/${t}/storage`)).body;
        assert.ok(storageAfter.total_bytes < storageBefore.total_bytes);
        assert.equal(storageAfter.checkpoints.count, afterPrune);

        await c.runs.wait(t, "delta", { input: { item: "i7" } });
        assert.deepEqual((await historyOf(c, t)).history, [...items, "i7"]);
        // Pruned again right away: the same state, and still usable.
        await c.threads.prune([t], { strategy: "keep_latest" });
        assert.deepEqual((await historyOf(c, t)).history, [...items, "i7"]);
      },
    );

    test("prune keep_latest of a graph without delta channels keeps one checkpoint", T, async () => {
      const t = await c.threads.create({ graphId: "slow" });
      for (let i = 0; i < 2; i++) await c.runs.wait(t.thread_id, "slow", { input: { ms: 0 } });
      const values = (await c.threads.getState(t.thread_id)).values;
      assert.ok((await checkpointCount(c, t.thread_id)) > 2);
      assert.deepEqual(await c.threads.prune([t.thread_id], { strategy: "keep_latest" }), {
        pruned_count: 1,
      });
      assert.equal(await checkpointCount(c, t.thread_id), 1);
      assert.deepEqual((await c.threads.getState(t.thread_id)).values, values);
    });

    test("a thread's keep_latest TTL prunes the same way: the delta history survives", T, async () => {
      const t = await c.threads.create({
        graphId: "delta",
        ttl: { ttl: 0.01, strategy: "keep_latest" as "delete" },
      });
      const items = ["a", "b", "c", "d", "e", "f"];
      for (const item of items) await c.runs.wait(t.thread_id, "delta", { input: { item } });
      const before = await checkpointCount(c, t.thread_id);
      // 0.01 minutes after its last update the sweeper (every ~100 ms here) prunes it.
      await waitFor(async () => (await checkpointCount(c, t.thread_id)) < before, { timeoutMs: 20_000 });
      assert.deepEqual((await historyOf(c, t.thread_id)).history, items);
    });

    test("storage: bytes of checkpoints, channel values per channel and pending writes", T, async () => {
      const t = await deltaThread(c, ["s1", "s2"]);
      const res = await http(h.url, "GET", `/threads/${t}/storage`);
      assert.equal(res.status, 200, res.text);
      const s = res.body;
      assert.equal(s.thread_id, t);
      assert.equal(s.total_bytes, s.checkpoints.bytes + s.channel_values.bytes + s.pending_writes.bytes);
      assert.equal(s.checkpoints.count, await checkpointCount(c, t));
      assert.ok(s.checkpoints.bytes > 0 && s.pending_writes.count > 0 && s.pending_writes.bytes > 0);
      assert.ok(s.channel_values.channels.item.count > 0, JSON.stringify(s.channel_values));
      const perChannel = Object.values<{ bytes: number }>(s.channel_values.channels);
      assert.equal(
        perChannel.reduce((n, x) => n + x.bytes, 0),
        s.channel_values.bytes,
      );
      // A new thread has none; an unknown one is 404, a malformed id 422.
      const empty = (await http(h.url, "GET", `/threads/${(await c.threads.create()).thread_id}/storage`))
        .body;
      assert.equal(empty.total_bytes, 0);
      assertDetail(await http(h.url, "GET", `/threads/${randomUUID()}/storage`), 404, "unknown thread");
      assertValidation(await http(h.url, "GET", "/threads/nope/storage"), "thread_id");
    });

    test("joinStream run_modes: each run's events in turn, a run_done after each", T, async () => {
      const t = (await c.threads.create({ graphId: "slow" })).thread_id;
      const s = collect((signal) => c.threads.joinStream(t, { signal }));
      await new Promise((r) => setTimeout(r, 300)); // the stream is open before the runs come
      const r1 = await c.runs.create(t, "slow", { input: { ms: 200 }, streamMode: ["values", "updates"] });
      const r2 = await c.runs.create(t, "slow", { input: { ms: 0 }, multitaskStrategy: "enqueue" });
      await s.until((ev) => ev.filter((e) => e.event === "run_done").length === 2);
      await s.stop();
      const names = s.events.map((e) => e.event);
      const done = s.events.filter((e) => e.event === "run_done").map((e) => e.data);
      assert.deepEqual(
        done.map((d) => [d.run_id, d.status]),
        [
          [r1.run_id, "success"],
          [r2.run_id, "success"],
        ],
      );
      const firstDone = names.indexOf("run_done");
      assert.equal(names[0], "metadata");
      assert.equal(s.events[0]!.data.run_id, r1.run_id);
      assert.ok(
        names.slice(0, firstDone).includes("updates") && names.slice(0, firstDone).includes("values"),
      );
      assert.equal(names[firstDone + 1], "metadata");
      assert.equal(s.events[firstDone + 1]!.data.run_id, r2.run_id);
      for (const e of s.events) assert.match(e.id ?? "", /^[0-9a-f-]{36}:(\d+|done)$/);

      // Resumed after run 1's first event: the rest of run 1, then run 2 (both ended: events are kept).
      const resumed = collect((signal) =>
        c.threads.joinStream(t, { signal, lastEventId: s.events[0]!.id, streamMode: "run_modes" }),
      );
      await resumed.until((ev) => ev.filter((e) => e.event === "run_done").length === 2);
      await resumed.stop();
      assert.deepEqual(
        resumed.events.map((e) => e.id),
        s.events.slice(1).map((e) => e.id),
      );
    });

    test("joinStream lifecycle and state_update", T, async () => {
      const t = (await c.threads.create({ graphId: "slow" })).thread_id;
      const life = collect((signal) => c.threads.joinStream(t, { signal, streamMode: "lifecycle" }));
      const state = collect((signal) => c.threads.joinStream(t, { signal, streamMode: ["state_update"] }));
      await new Promise((r) => setTimeout(r, 300));
      const run = await c.runs.create(t, "slow", { input: { ms: 100 } });
      await life.until((ev) => ev.some((e) => e.event === "run_done"));
      await state.until((ev) => ev.some((e) => e.event === "state_update"));
      await c.threads.updateState(t, { values: { done: ["by hand"] }, asNode: "second" });
      await state.until((ev) => ev.some((e) => e.data?.values?.done?.[0] === "by hand"));
      await life.stop();
      await state.stop();
      assert.deepEqual(
        life.events.map((e) => [e.event, e.data.run_id]),
        [
          ["metadata", run.run_id],
          ["run_done", run.run_id],
        ],
      );
      assert.ok(state.events.every((e) => e.event === "state_update"));
      assert.deepEqual(state.events[0]!.data.values.done, ["first", "second"]);
    });

    test("runs.joinStream streamMode: only those modes come back", T, async () => {
      const t = (await c.threads.create({ graphId: "slow" })).thread_id;
      const run = await c.runs.create(t, "slow", { input: { ms: 100 }, streamMode: ["values", "updates"] });
      const only = await collectAll(c.runs.joinStream(t, run.run_id, { streamMode: "updates" }));
      const all = await collectAll(c.runs.joinStream(t, run.run_id));
      assert.deepEqual([...new Set(only.map((e) => e.event))], ["metadata", "updates"]);
      assert.ok(all.some((e) => e.event === "values"));
      assert.deepEqual(
        only.filter((e) => e.event === "updates").map((e) => e.data),
        all.filter((e) => e.event === "updates").map((e) => e.data),
      );
      const both = await collectAll(c.runs.joinStream(t, run.run_id, { streamMode: ["updates", "values"] }));
      assert.equal(both.length, all.length);
    });

    test("include=ttl on threads.get; extract on threads.search; select on runs.list", T, async () => {
      const t = await c.threads.create({ graphId: "delta", ttl: { ttl: 60, strategy: "delete" } });
      for (const item of ["x", "y", "z"]) await c.runs.wait(t.thread_id, "delta", { input: { item } });
      const plain = await c.threads.get(t.thread_id);
      assert.equal("ttl" in plain, false);
      const withTtl = (await c.threads.get(t.thread_id, { include: ["ttl"] })) as any;
      assert.equal(withTtl.ttl.strategy, "delete");
      assert.equal(withTtl.ttl.ttl_minutes, 60);
      assert.equal(Date.parse(withTtl.ttl.expires_at), Date.parse(withTtl.updated_at) + 3_600_000);
      const noTtl = (await c.threads.get((await c.threads.create()).thread_id, { include: ["ttl"] })) as any;
      assert.equal(noTtl.ttl, null);

      const extract = {
        last: "values.history[-1]",
        first: "values.history[0]",
        who: "metadata.graph_id",
        none: "values.nope.x",
      };
      const [found] = await c.threads.search({ ids: [t.thread_id], extract });
      assert.deepEqual(found!.extracted, { last: "z", first: "x", who: "delta", none: null });
      const [selected] = await c.threads.search({ ids: [t.thread_id], extract, select: ["thread_id"] });
      assert.deepEqual(selected, { thread_id: t.thread_id, extracted: found!.extracted });

      const runs = await c.runs.list(t.thread_id, { select: ["run_id", "status"] });
      assert.equal(runs.length, 3);
      for (const r of runs) assert.deepEqual(Object.keys(r).sort(), ["run_id", "status"]);
    });

    test("select on getState and getHistory: only those fields, values.<key> one key", T, async () => {
      const t = await deltaThread(c, ["p", "q"]);
      const full = await c.threads.getState(t);
      assert.deepEqual(await c.threads.getState(t, undefined, { select: ["values.history"] }), {
        values: { history: ["p", "q"] },
      });
      const some = await c.threads.getState(t, undefined, { select: ["next", "checkpoint"] });
      assert.deepEqual(some, { next: full.next, checkpoint: full.checkpoint });
      const atCheckpoint = await c.threads.getState(t, full.checkpoint.checkpoint_id!, {
        select: ["values"],
      });
      assert.deepEqual(atCheckpoint, { values: full.values });
      const byConfig = await c.threads.getState(t, full.checkpoint, { select: ["metadata"] });
      assert.deepEqual(byConfig, { metadata: full.metadata });
      const history = await c.threads.getHistory(t, { limit: 3, select: ["values.item", "created_at"] });
      assert.equal(history.length, 3);
      for (const s of history) assert.deepEqual(Object.keys(s).sort(), ["created_at", "values"]);
      assert.deepEqual(history[0]!.values, { item: "q" });
      assertValidation(await http(h.url, "GET", `/threads/${t}/state?select=secrets`), "select");
      assertValidation(await http(h.url, "POST", `/threads/${t}/history`, { select: ["values."] }), "select");
    });

    test("bad input is a 4xx naming the problem", T, async () => {
      const t = (await c.threads.create()).thread_id;
      await checkAll([
        [
          "prune without thread_ids",
          async () => assertValidation(await http(h.url, "POST", "/threads/prune", {}), "thread_ids"),
        ],
        [
          "prune with an empty list",
          async () =>
            assertValidation(await http(h.url, "POST", "/threads/prune", { thread_ids: [] }), "thread_ids"),
        ],
        [
          "prune with a bad strategy",
          async () =>
            assertValidation(
              await http(h.url, "POST", "/threads/prune", { thread_ids: [t], strategy: "all" }),
              "strategy",
            ),
        ],
        [
          "prune with a bad id",
          async () =>
            assertValidation(
              await http(h.url, "POST", "/threads/prune", { thread_ids: ["x"] }),
              "thread_ids",
            ),
        ],
        [
          "prune with 1001 ids",
          async () =>
            assertValidation(
              await http(h.url, "POST", "/threads/prune", {
                thread_ids: Array.from({ length: 1001 }, () => randomUUID()),
              }),
              "thread_ids",
            ),
        ],
        [
          "stream with a bad mode",
          async () =>
            assertValidation(
              await http(h.url, "GET", `/threads/${t}/stream?stream_mode=values`),
              "stream_mode",
            ),
        ],
        [
          "stream of an unknown thread",
          async () => assertDetail(await http(h.url, "GET", `/threads/${randomUUID()}/stream`), 404),
        ],
        [
          "include of an unknown field",
          async () => assertValidation(await http(h.url, "GET", `/threads/${t}?include=secrets`), "include"),
        ],
        [
          "extract with a bad path",
          async () =>
            assertValidation(
              await http(h.url, "POST", "/threads/search", { extract: { a: "values..x" } }),
              "extract",
            ),
        ],
        [
          "extract not an object",
          async () =>
            assertValidation(
              await http(h.url, "POST", "/threads/search", { extract: ["values"] }),
              "extract",
            ),
        ],
        [
          "select of an unknown run field",
          async () =>
            assertValidation(await http(h.url, "GET", `/threads/${t}/runs?select=secret`), "select"),
        ],
        [
          "join stream with a bad mode",
          async () =>
            assertValidation(
              await http(h.url, "GET", `/threads/${t}/runs/${randomUUID()}/stream?stream_mode=nope`),
              "stream_mode",
            ),
        ],
      ]);
    });
  });
}

async function collectAll(stream: AsyncIterable<{ event: string; data: any }>) {
  const out: { event: string; data: any }[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

routesSuite("SQLite", async () => ({ env: {} }));
routesSuite(
  "Postgres",
  async () => {
    const db = await freshDatabase();
    return { env: { POSTGRES_URI: db.uri }, drop: db.drop };
  },
  PG_SKIP,
);

// ---- who may: custom auth and organizations -----------------------------------------------------

const SECRET = new TextEncoder().encode("test-secret-of-the-auth-suite");
const token = (sub: string, permissions: string[] = ["delete"]) =>
  new SignJWT({ name: sub, permissions }).setProtectedHeader({ alg: "HS256" }).setSubject(sub).sign(SECRET);

describe("SDK 1.15 routes under custom auth", () => {
  let h: Hangar;
  let alice: Client;
  let bob: Client;
  before(async () => {
    h = await startHangar({
      config: await project({ auth: { path: join(FIXTURES, "auth", "auth.ts:auth") } }),
    });
    const as = async (user: string) =>
      new Client({
        apiUrl: h.url,
        defaultHeaders: { authorization: `Bearer ${await token(user)}` },
        callerOptions: { maxRetries: 0 },
      });
    alice = await as("alice");
    bob = await as("bob");
  });
  after(async () => {
    await h?.stop();
  });

  test("another user's thread: not pruned, its stream and storage 404", T, async () => {
    const t = await deltaThread(alice, ["mine"]);
    assert.deepEqual(await bob.threads.prune([t], { strategy: "delete" }), { pruned_count: 0 });
    assert.deepEqual(await bob.threads.prune([t], { strategy: "keep_latest" }), { pruned_count: 0 });
    assert.equal((await rejection(collectAll(bob.threads.joinStream(t)))).status, 404);
    const bobToken = await token("bob");
    assertDetail(
      await http(h.url, "GET", `/threads/${t}/storage`, undefined, { authorization: `Bearer ${bobToken}` }),
      404,
    );
    assert.equal((await bob.threads.search({ ids: [t], extract: { h: "values.history" } })).length, 0);
    assert.equal((await rejection(bob.runs.list(t, { select: ["run_id"] }))).status, 404);
    // Alice's own: all of it works, and her prune counts.
    assert.deepEqual(
      (await alice.threads.search({ ids: [t], extract: { h: "values.history" } }))[0]!.extracted,
      { h: ["mine"] },
    );
    assert.deepEqual(await alice.threads.prune([t], { strategy: "keep_latest" }), { pruned_count: 1 });
    assert.deepEqual((await historyOf(alice, t)).history, ["mine"]);
  });

  test("pruning takes threads:delete: a user without the permission is refused", T, async () => {
    const t = await deltaThread(alice, ["x"]);
    const reader = new Client({
      apiUrl: h.url,
      defaultHeaders: { authorization: `Bearer ${await token("alice", [])}` },
      callerOptions: { maxRetries: 0 },
    });
    assert.equal((await rejection(reader.threads.prune([t]))).status, 403);
    assert.deepEqual((await historyOf(alice, t)).history, ["x"]);
  });
});

describe("SDK 1.15 routes across organizations (API keys)", () => {
  let h: Hangar;
  let a: Client;
  let b: Client;
  before(async () => {
    h = await startHangar({ config: await project(), env: { HANGAR_API_KEYS: "key-a:org-a,key-b:org-b" } });
    a = new Client({ apiUrl: h.url, apiKey: "key-a", callerOptions: { maxRetries: 0 } });
    b = new Client({ apiUrl: h.url, apiKey: "key-b", callerOptions: { maxRetries: 0 } });
  });
  after(async () => {
    await h?.stop();
  });

  test("another organization's thread is invisible to every new route", T, async () => {
    const t = await deltaThread(a, ["org-a"]);
    assert.deepEqual(await b.threads.prune([t]), { pruned_count: 0 });
    assert.equal((await rejection(b.threads.get(t, { include: ["ttl"] }))).status, 404);
    assert.equal((await rejection(collectAll(b.threads.joinStream(t)))).status, 404);
    assertDetail(await http(h.url, "GET", `/threads/${t}/storage`, undefined, { "x-api-key": "key-b" }), 404);
    assertDetail(await http(h.url, "GET", `/threads/${t}/storage`), 401);
    assert.deepEqual((await historyOf(a, t)).history, ["org-a"]);
  });
});
