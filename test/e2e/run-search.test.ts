/**
 * `POST /runs/search` (a Hangar extension: the official API lists runs thread by thread only) and the
 * stack traces of failed runs, over raw HTTP against a real server: two organizations' API keys, then a
 * custom auth handler's users. A failed run's `error` SSE event, join body and thread `error` keep the
 * official shape (type and message); the trace is the search's, for API-key callers only.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { SignJWT } from "jose";
import {
  type ApiResponse,
  assertDetail,
  assertValidation,
  checkAll,
  defaultAssistantId,
  EXAMPLES_CONFIG,
  exampleGraph,
  type Hangar,
  http,
  human,
  REPO_ROOT,
  readSSE,
  startHangar,
  waitFor,
  writeProject,
} from "../helpers/server.js";

const T = { timeout: 60_000 };
const KEY_A = "run-search-key-a";
const KEY_B = "run-search-key-b";
const FAIL = defaultAssistantId("fail");
const AGENT = defaultAssistantId("agent");
const ids = (res: ApiResponse) => (res.body as { run_id: string }[]).map((r) => r.run_id);

describe("POST /runs/search: organizations and errors", () => {
  let h: Hangar;
  const as =
    (key: string) =>
    (method: string, path: string, body?: unknown): Promise<ApiResponse> =>
      http(h.url, method, path, body, { "x-api-key": key });
  let a: ReturnType<typeof as>;
  let b: ReturnType<typeof as>;
  const search = (body: unknown, key = KEY_A) => as(key)("POST", "/runs/search", body);
  /**
   * Org A's runs: on thread `t1` a success then a failure (a stateless run that ended is gone with its
   * temporary thread); org B's one run.
   */
  const run: Record<"ok" | "failed" | "other", { run_id: string; thread_id: string }> = {} as any;
  let t1: string;
  let failedStream: { event: string; data: any }[];
  let failedJoin: ApiResponse;

  before(async () => {
    h = await startHangar({
      config: EXAMPLES_CONFIG,
      env: { HANGAR_API_KEYS: `${KEY_A}:org-a,${KEY_B}:org-b` },
    });
    a = as(KEY_A);
    b = as(KEY_B);
    t1 = (await a("POST", "/threads", { metadata: { team: "red" } })).body.thread_id;
    const ok = await a("POST", `/threads/${t1}/runs`, { assistant_id: "agent", input: human("hi") });
    run.ok = ok.body;
    await a("GET", `/threads/${t1}/runs/${run.ok.run_id}/join`);
    const stream = await fetch(`${h.url}/threads/${t1}/runs/stream`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": KEY_A },
      body: JSON.stringify({ assistant_id: "fail", input: human("boom"), metadata: { kind: "doomed" } }),
    });
    failedStream = await readSSE(stream);
    run.failed = { run_id: failedStream[0]!.data.run_id, thread_id: t1 };
    failedJoin = await a("GET", `/threads/${t1}/runs/${run.failed.run_id}/join`);
    const stateless = await a("POST", "/runs/wait", { assistant_id: "agent", input: human("once") });
    assert.equal(stateless.status, 200);
    const tb = (await b("POST", "/threads", {})).body.thread_id;
    run.other = (
      await b("POST", `/threads/${tb}/runs/wait`, { assistant_id: "fail", input: human("b") })
    ).body;
    run.other = (await b("GET", `/threads/${tb}/runs`)).body[0];
  });
  after(async () => {
    await h?.stop();
  });

  test("a failed run's error keeps the official shape everywhere but the search", T, async () => {
    const errors = failedStream.filter((e) => e.event === "error");
    assert.deepEqual(
      errors.map((e) => e.data),
      [{ error: "CustomError", message: "Boo!" }],
    );
    assert.equal(failedJoin.status, 200);
    assert.deepEqual(failedJoin.body, { __error__: { error: "CustomError", message: "Boo!" } });
    const thread = await a("GET", `/threads/${t1}`);
    assert.deepEqual(thread.body.error, { error: "CustomError", message: "Boo!" });
    const got = await a("GET", `/threads/${t1}/runs/${run.failed.run_id}`);
    assert.equal(got.body.status, "error");
    assert.ok(!("error" in got.body), "the run record is the official one");
    const listed = await a("GET", `/threads/${t1}/runs`);
    assert.ok(listed.body.every((r: object) => !("error" in r)));
  });

  test("every thread's runs of the organization, newest first, with the failure's trace", T, async () => {
    const res = await search({});
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    assert.deepEqual(ids(res), [run.failed.run_id, run.ok.run_id]);
    assert.equal(res.headers.get("x-pagination-total"), "2");
    assert.equal(res.headers.get("x-pagination-next"), null);
    const [failed, ok] = res.body;
    assert.deepEqual([failed.status, ok.status], ["error", "success"]);
    assert.equal(ok.error, null);
    assert.deepEqual(Object.keys(failed).sort(), [
      "assistant_id",
      "attempt",
      "created_at",
      "error",
      "kwargs",
      "metadata",
      "multitask_strategy",
      "run_id",
      "status",
      "thread_id",
      "updated_at",
    ]);
    assert.equal(failed.error.error, "CustomError");
    assert.equal(failed.error.message, "Boo!");
    assert.match(failed.error.stack, /^CustomError: Boo!\n\s+at /);
    assert.match(failed.error.stack, /examples\/src\/fail\.ts:\d+/);
    // The rest of the record is the one the official routes return.
    const { error: _, ...record } = failed;
    assert.deepEqual(record, (await a("GET", `/threads/${t1}/runs/${run.failed.run_id}`)).body);
  });

  test("filters: status (one or several), assistant, thread, run metadata; pages", T, async () => {
    await checkAll([
      [
        "status error",
        async () => assert.deepEqual(ids(await search({ status: "error" })), [run.failed.run_id]),
      ],
      [
        "status list",
        async () =>
          assert.deepEqual(ids(await search({ status: ["error", "pending"] })), [run.failed.run_id]),
      ],
      ["status running", async () => assert.deepEqual(ids(await search({ status: "running" })), [])],
      [
        "assistant",
        async () => assert.deepEqual(ids(await search({ assistant_id: FAIL })), [run.failed.run_id]),
      ],
      [
        "assistant agent",
        async () => assert.deepEqual(ids(await search({ assistant_id: AGENT })), [run.ok.run_id]),
      ],
      [
        "thread",
        async () =>
          assert.deepEqual(ids(await search({ thread_id: t1 })), [run.failed.run_id, run.ok.run_id]),
      ],
      [
        "metadata",
        async () =>
          assert.deepEqual(ids(await search({ metadata: { kind: "doomed" } })), [run.failed.run_id]),
      ],
      ["metadata none", async () => assert.deepEqual(ids(await search({ metadata: { kind: "other" } })), [])],
      [
        "nulls are no filter",
        async () =>
          assert.equal(
            (await search({ status: null, assistant_id: null, thread_id: null, metadata: null })).body.length,
            2,
          ),
      ],
    ]);
    const first = await search({ limit: 1 });
    assert.deepEqual(ids(first), [run.failed.run_id]);
    assert.equal(first.headers.get("x-pagination-total"), "2");
    assert.equal(first.headers.get("x-pagination-next"), "1");
    const second = await search({ limit: 1, offset: 1 });
    assert.deepEqual(ids(second), [run.ok.run_id]);
    assert.equal(second.headers.get("x-pagination-next"), null);
    const beyond = await search({ offset: 50 });
    assert.deepEqual([beyond.status, beyond.body], [200, []]);
  });

  test("another organization's runs are never visible", T, async () => {
    const other = await search({}, KEY_B);
    assert.deepEqual(ids(other), [run.other.run_id]);
    assert.equal(other.headers.get("x-pagination-total"), "1");
    assert.equal(other.body[0].error.message, "Boo!");
    for (const body of [{ thread_id: t1 }, { assistant_id: AGENT }, { metadata: { kind: "doomed" } }]) {
      const res = await search(body, KEY_B);
      assert.deepEqual([res.status, res.body], [200, []], JSON.stringify(body));
    }
    assert.ok(!ids(await search({ limit: 100 })).includes(run.other.run_id));
    // Without a key, or with a wrong one: 401 before anything is read.
    assertDetail(await http(h.url, "POST", "/runs/search", {}), 401, "no key");
    assertDetail(await search({}, "wrong-key"), 401, "wrong key");
  });

  test("pending and running runs, and cancel", T, async () => {
    const t = (await a("POST", "/threads", {})).body.thread_id;
    const body = { assistant_id: "slow", input: human("zz"), config: { configurable: { sleep_ms: 30_000 } } };
    const slow = (await a("POST", `/threads/${t}/runs`, body)).body;
    const queued = (await a("POST", `/threads/${t}/runs`, { ...body, multitask_strategy: "enqueue" })).body;
    // A stateless run shows while in flight, on its temporary thread.
    const stateless = (await a("POST", "/runs", body)).body;
    await waitFor(async () => ids(await search({ status: "running" })).length === 2);
    assert.deepEqual(ids(await search({ status: "running" })), [stateless.run_id, slow.run_id]);
    assert.deepEqual(ids(await search({ status: "pending" })), [queued.run_id]);
    assert.deepEqual(ids(await search({ status: ["pending", "running"] })), [
      stateless.run_id,
      queued.run_id,
      slow.run_id,
    ]);
    assert.deepEqual((await search({ status: ["pending", "running"] }, KEY_B)).body, []);
    for (const r of [queued, slow]) {
      const cancel = await a("POST", `/threads/${t}/runs/${r.run_id}/cancel?wait=true`);
      assert.equal(cancel.status, 204);
    }
    assert.equal((await a("POST", "/runs/cancel", { run_ids: [stateless.run_id] })).status, 204);
    await waitFor(async () => (await search({ status: ["pending", "running"] })).body.length === 0);
    assert.deepEqual(ids(await search({ thread_id: t, status: "interrupted" })), [
      queued.run_id,
      slow.run_id,
    ]);
  });

  test("bad input: 422 naming the field", T, async () => {
    const bad: [string, unknown, string | undefined][] = [
      ["unknown status", { status: "done" }, "status"],
      ["empty status list", { status: [] }, "status"],
      ["status of the wrong type", { status: 3 }, "status"],
      ["unknown status in a list", { status: ["error", "nope"] }, "status"],
      ["thread id not a UUID", { thread_id: "t1" }, "thread_id"],
      ["assistant id not a UUID", { assistant_id: "fail" }, "assistant_id"],
      ["metadata not an object", { metadata: "x" }, "metadata"],
      ["metadata a list", { metadata: [1] }, "metadata"],
      ["limit 0", { limit: 0 }, "limit"],
      ["limit above 1000", { limit: 1001 }, "limit"],
      ["limit not an integer", { limit: 1.5 }, "limit"],
      ["offset negative", { offset: -1 }, "offset"],
      ["a list body", [], undefined],
      ["malformed JSON", "{", undefined],
    ];
    await checkAll(
      bad.map(([name, body, field]) => [name, async () => assertValidation(await search(body), field, name)]),
    );
    const tooDeep = { metadata: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])) };
    assertValidation(await search(tooDeep), "metadata", "101 conditions");
  });

  test("listed in /openapi.json as a Hangar extension", T, async () => {
    const doc = (await a("GET", "/openapi.json")).body;
    const op = doc.paths["/runs/search"]?.post;
    assert.ok(op, "POST /runs/search is documented");
    assert.match(op.summary, /Hangar extension/);
  });
});

const SECRET = new TextEncoder().encode("test-secret-of-the-auth-suite");
const token = (sub: string) =>
  new SignJWT({ name: sub }).setProtectedHeader({ alg: "HS256" }).setSubject(sub).sign(SECRET);

describe("POST /runs/search under custom auth", () => {
  let h: Hangar;
  let tokens: Record<"alice" | "bob", string>;
  const as = (user: "alice" | "bob") => (method: string, path: string, body?: unknown) =>
    http(h.url, method, path, body, { authorization: `Bearer ${tokens[user]}` });
  const runsOf: Record<"alice" | "bob", string[]> = { alice: [], bob: [] };

  before(async () => {
    // The auth suite's handler (owner stamped on create, owner-only visibility) with the failing graph.
    const fixture = join(REPO_ROOT, "test", "e2e", "fixtures", "auth");
    const config = await writeProject({
      graphs: { whoami: join(fixture, "whoami.ts:graph"), fail: exampleGraph("fail.ts") },
      auth: { path: join(fixture, "auth.ts:auth") },
    });
    h = await startHangar({ config });
    tokens = { alice: await token("alice"), bob: await token("bob") };
    for (const user of ["alice", "bob"] as const) {
      const t = (await as(user)("POST", "/threads", {})).body.thread_id;
      for (const assistant_id of ["whoami", "fail"]) {
        const r = await as(user)("POST", `/threads/${t}/runs/wait`, { assistant_id, input: {} });
        assert.equal(r.status, 200, r.text);
      }
      const listed = await as(user)("GET", `/threads/${t}/runs`);
      runsOf[user] = listed.body.map((r: { run_id: string }) => r.run_id);
    }
  });
  after(async () => {
    await h?.stop();
  });

  test("a user finds only the runs of threads they may see, errors without traces", T, async () => {
    for (const [user, other] of [
      ["alice", "bob"],
      ["bob", "alice"],
    ] as const) {
      const res = await as(user)("POST", "/runs/search", {});
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(ids(res), runsOf[user]);
      assert.equal(res.headers.get("x-pagination-total"), "2");
      const failed = res.body.find((r: { status: string }) => r.status === "error");
      assert.deepEqual(failed.error, { error: "CustomError", message: "Boo!" }, "no stack under custom auth");
      const theirThread = (await as(other)("POST", "/runs/search", { limit: 1 })).body[0].thread_id;
      assert.deepEqual((await as(user)("POST", "/runs/search", { thread_id: theirThread })).body, []);
    }
    assertDetail(await http(h.url, "POST", "/runs/search", {}), 401, "no token");
  });
});
