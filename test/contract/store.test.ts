/**
 * The long-term memory store against every storage adapter (test/helpers/adapters.ts): `HangarStore`
 * (LangGraph's BaseStore) over the adapter's `StoreRepo`, with a clock the tests move, so TTL is tested
 * without sleeping.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  Annotation,
  END,
  getStore,
  type LangGraphRunnableConfig,
  START,
  StateGraph,
} from "@langchain/langgraph";
import { HangarError } from "../../src/errors.js";
import { silentLogger } from "../../src/logger.js";
import { type Embedder, HangarStore, parseStoreFilter, textsAt } from "../../src/runtime/store/store.js";
import { StoreSweeper } from "../../src/runtime/store/sweeper.js";
import { DIMS, embed, vectorOf } from "../e2e/fixtures/memory/embed.js";
import { ADAPTERS, type Fixture, useFixtures } from "../helpers/adapters.js";

interface FreshOptions {
  index?: boolean;
  defaultTtl?: number | null;
  refreshOnRead?: boolean;
}

/** A `HangarStore` for organization `default` over a fresh database, on a clock the test moves. */
function storeOn(fx: Fixture, opts: FreshOptions = {}) {
  const storage = fx.storage;
  const clock = { now: Date.parse("2026-01-01T00:00:00Z") };
  const index: Embedder | null = opts.index
    ? { dims: DIMS, fields: ["text"], embedDocuments: embed, embedQuery: async (t) => vectorOf(t) }
    : null;
  const store = new HangarStore(
    storage.store,
    "default",
    { index, defaultTtlMinutes: opts.defaultTtl ?? null, refreshOnRead: opts.refreshOnRead ?? true },
    () => clock.now,
  );
  return { storage, store, clock };
}

const keys = (items: { key: string }[]) => items.map((i) => i.key);

async function rejectsWith(promise: Promise<unknown>, pattern: RegExp) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof HangarError, String(err));
    assert.equal(err.kind, "validation");
    assert.match(err.message, pattern);
    return true;
  });
}

describe("store: pure helpers", () => {
  test("filter problems are reported per field", () => {
    const { problems } = parseStoreFilter({ a: { $in: 3 }, b: { $gt: {} }, c: { $x: 1 }, d: { $eq: 1 } });
    assert.deepEqual(
      problems.map((p) => p.path),
      [
        ["a", "$in"],
        ["b", "$gt"],
        ["c", "$x"],
      ],
    );
  });

  test("text extraction paths", () => {
    const value = { a: { b: "x" }, list: [{ t: "one" }, { t: "two" }], n: 3, tags: ["p", "q"], e: "" };
    assert.deepEqual(textsAt(value, "a.b"), ["x"]);
    assert.deepEqual(textsAt(value, "list[*].t"), ["one", "two"]);
    assert.deepEqual(textsAt(value, "list[-1].t"), ["two"]);
    assert.deepEqual(textsAt(value, "tags[0]"), ["p"]);
    assert.deepEqual(textsAt(value, "n"), ["3"]);
    assert.deepEqual(textsAt(value, "{n,a.b}"), ["3", "x"]);
    assert.deepEqual(textsAt(value, "a"), ['{"b":"x"}']);
    assert.deepEqual(textsAt(value, "missing"), []);
    assert.deepEqual(textsAt(value, "e"), [], "empty texts are not embedded");
    assert.deepEqual(textsAt({ t: 1 }, "$"), ['{"t":1}']);
  });
});

for (const adapter of ADAPTERS) {
  describe(`store: ${adapter.name}`, { skip: adapter.skip }, () => {
    const open = useFixtures(adapter);
    const fresh = async (opts: FreshOptions = {}) => storeOn(await open(), opts);

    describe("items", () => {
      test("put, get, overwrite (created_at kept), delete", async () => {
        const { store, clock } = await fresh();
        await store.putItem(["users", "u1"], "prefs", { theme: "dark" });
        const first = await store.getItem(["users", "u1"], "prefs");
        assert.deepEqual(first?.value, { theme: "dark" });
        assert.deepEqual(first?.namespace, ["users", "u1"]);
        assert.equal(first?.created_at, "2026-01-01T00:00:00.000Z");
        clock.now += 1000;
        await store.putItem(["users", "u1"], "prefs", { theme: "light" });
        const second = await store.getItem(["users", "u1"], "prefs");
        assert.deepEqual(second?.value, { theme: "light" });
        assert.equal(second?.created_at, first?.created_at);
        assert.equal(second?.updated_at, "2026-01-01T00:00:01.000Z");
        await store.deleteItem(["users", "u1"], "prefs");
        assert.equal(await store.getItem(["users", "u1"], "prefs"), null);
        await store.deleteItem(["users", "u1"], "never-there"); // deleting nothing is fine
      });

      test("organizations do not see each other's items", async () => {
        const { store } = await fresh();
        await store.putItem(["shared"], "k", { org: "default" });
        const other = store.withOrg("acme");
        assert.equal(await other.getItem(["shared"], "k"), null);
        assert.deepEqual(await other.searchItems([]), []);
        assert.deepEqual(await other.namespaces({}), []);
        await other.putItem(["shared"], "k", { org: "acme" });
        assert.deepEqual((await store.getItem(["shared"], "k"))?.value, { org: "default" });
        assert.deepEqual((await other.getItem(["shared"], "k"))?.value, { org: "acme" });
      });

      test("namespaces and values are validated", async () => {
        const { store } = await fresh();
        await rejectsWith(store.putItem([], "k", {}), /Namespace is required/);
        await rejectsWith(
          store.putItem(["a.b"], "k", {}),
          /cannot be empty or contain periods. Received: a.b/,
        );
        await rejectsWith(store.putItem(["a", ""], "k", {}), /cannot be empty/);
        await rejectsWith(store.putItem(["a"], "k", [] as any), /must be an object/);
        await rejectsWith(store.putItem(["a"], "k", {}, { ttl: -1 }), /positive/);
        await rejectsWith(store.searchItems(["a.b"]), /periods/);
        await rejectsWith(store.searchItems([], { filter: { n: { $near: 1 } } }), /unknown operator \$near/);
      });
    });

    describe("search", () => {
      async function seeded() {
        const ctx = await fresh();
        const { store, clock } = ctx;
        const put = async (ns: string[], key: string, value: Record<string, unknown>) => {
          clock.now += 1000; // distinct updated_at: newest first is a defined order
          await store.putItem(ns, key, value);
        };
        await put(["docs"], "root", { kind: "index", n: 0 });
        await put(["docs", "a"], "a1", { kind: "note", n: 1, tags: ["x"], meta: { lang: "en", v: 1 } });
        await put(["docs", "a"], "a2", { kind: "note", n: 2, done: true, meta: { lang: "fr", v: 1 } });
        await put(["docs", "b", "c"], "c1", { kind: "todo", n: 3, name: "zed", done: false });
        await put(["docsx"], "x1", { kind: "note", n: 4 });
        return ctx;
      }

      test("namespace prefix is label by label, newest first", async () => {
        const { store } = await seeded();
        assert.deepEqual(keys(await store.searchItems(["docs"])), ["c1", "a2", "a1", "root"]);
        assert.deepEqual(keys(await store.searchItems(["docs", "a"])), ["a2", "a1"]);
        assert.deepEqual(keys(await store.searchItems(["doc"])), []);
        assert.deepEqual(keys(await store.searchItems([])), ["x1", "c1", "a2", "a1", "root"]);
      });

      test("limit and offset", async () => {
        const { store } = await seeded();
        assert.deepEqual(keys(await store.searchItems([], { limit: 2 })), ["x1", "c1"]);
        assert.deepEqual(keys(await store.searchItems([], { limit: 2, offset: 2 })), ["a2", "a1"]);
        assert.deepEqual(keys(await store.searchItems([], { limit: 2, offset: 4 })), ["root"]);
      });

      test("filter: equality, containment and operators", async () => {
        const { store } = await seeded();
        const f = async (filter: Record<string, unknown>) =>
          keys(await store.searchItems([], { filter })).sort();
        assert.deepEqual(await f({ kind: "note" }), ["a1", "a2", "x1"]);
        assert.deepEqual(await f({ kind: "note", n: 2 }), ["a2"]);
        assert.deepEqual(await f({ done: true }), ["a2"]);
        assert.deepEqual(await f({ done: false }), ["c1"]);
        assert.deepEqual(await f({ meta: { lang: "fr" } }), ["a2"]);
        assert.deepEqual(await f({ meta: { v: 1 } }), ["a1", "a2"]);
        assert.deepEqual(await f({ tags: ["x"] }), ["a1"]);
        assert.deepEqual(await f({ n: { $gt: 2 } }), ["c1", "x1"]);
        assert.deepEqual(await f({ n: { $gte: 1, $lt: 3 } }), ["a1", "a2"]);
        assert.deepEqual(await f({ n: { $lte: 0 } }), ["root"]);
        assert.deepEqual(await f({ name: { $gt: "a" } }), ["c1"]);
        assert.deepEqual(await f({ n: { $gt: "a" } }), [], "numbers never compare with strings");
        assert.deepEqual(await f({ kind: { $ne: "note" } }), ["c1", "root"]);
        assert.deepEqual(
          await f({ done: { $ne: true } }),
          ["a1", "c1", "root", "x1"],
          "missing fields are ne",
        );
        assert.deepEqual(await f({ kind: { $in: ["todo", "index"] } }), ["c1", "root"]);
        assert.deepEqual(await f({ kind: { $nin: ["note"] } }), ["c1", "root"]);
        assert.deepEqual(await f({ kind: { $eq: "todo" } }), ["c1"]);
        assert.deepEqual(await f({ missing: "x" }), []);
      });

      test("namespaces: prefix, suffix, wildcards, max_depth, pagination", async () => {
        const { store } = await seeded();
        await store.putItem(["users", "u1", "memories"], "m", {});
        await store.putItem(["users", "u2", "memories"], "m", {});
        await store.putItem(["users", "u2", "profile"], "p", {});
        assert.deepEqual(await store.namespaces({}), [
          ["docs"],
          ["docs", "a"],
          ["docs", "b", "c"],
          ["docsx"],
          ["users", "u1", "memories"],
          ["users", "u2", "memories"],
          ["users", "u2", "profile"],
        ]);
        assert.deepEqual(await store.namespaces({ prefix: ["docs"] }), [
          ["docs"],
          ["docs", "a"],
          ["docs", "b", "c"],
        ]);
        assert.deepEqual(await store.namespaces({ suffix: ["memories"] }), [
          ["users", "u1", "memories"],
          ["users", "u2", "memories"],
        ]);
        assert.deepEqual(await store.namespaces({ prefix: ["users", "*", "profile"] }), [
          ["users", "u2", "profile"],
        ]);
        assert.deepEqual(await store.namespaces({ prefix: ["users"], maxDepth: 2 }), [
          ["users", "u1"],
          ["users", "u2"],
        ]);
        assert.deepEqual(await store.namespaces({ maxDepth: 1, limit: 2, offset: 1 }), [
          ["docsx"],
          ["users"],
        ]);
      });
    });

    describe("semantic search", () => {
      async function indexed() {
        const ctx = await fresh({ index: true });
        const { store } = ctx;
        await store.putItem(["pets"], "cat", { text: "my cat is a lazy feline", kind: "pet" });
        await store.putItem(["pets"], "dog", { text: "the dog likes to bark at the puppy", kind: "pet" });
        await store.putItem(["pets"], "both", { text: "a cat and a dog", kind: "pet" });
        await store.putItem(["things"], "car", { text: "a red car with a big engine", kind: "thing" });
        await store.putItem(["things"], "plain", { text: "kitten kitten" }, { index: false });
        return ctx;
      }

      test("ranks by cosine similarity; unindexed items last with score null", async () => {
        const { store } = await indexed();
        const hits = await store.searchItems([], { query: "kitten" });
        // cat 0.45, both 0.30, then dog and car (0: no shared topic), then the unindexed item.
        assert.deepEqual(keys(hits), ["cat", "both", "dog", "car", "plain"]);
        assert.equal(hits.at(-1)?.score, null);
        const scores = hits.slice(0, -1).map((h) => h.score as number);
        assert.deepEqual(
          [...scores].sort((a, b) => b - a),
          scores,
          "scores descend",
        );
        assert.ok(scores[0] > scores[1]);
      });

      test("query with namespace prefix, filter and pagination", async () => {
        const { store } = await indexed();
        assert.deepEqual(keys(await store.searchItems(["pets"], { query: "puppy" })), ["dog", "both", "cat"]);
        assert.deepEqual(keys(await store.searchItems([], { query: "truck", filter: { kind: "thing" } })), [
          "car",
        ]);
        assert.deepEqual(keys(await store.searchItems(["pets"], { query: "puppy", limit: 1, offset: 1 })), [
          "both",
        ]);
      });

      test("per-item index paths override store.index.fields; without a query there is no score", async () => {
        const { store } = await indexed();
        await store.putItem(["other"], "titled", { text: "car", title: "kitten" }, { index: ["title"] });
        const [best] = await store.searchItems(["other"], { query: "feline" });
        assert.equal(best.key, "titled");
        assert.ok((best.score ?? 0) > 0.99);
        const [plain] = await store.searchItems(["other"]);
        assert.equal("score" in plain, false);
      });

      test("re-putting an item replaces its vectors", async () => {
        const { store } = await indexed();
        await store.putItem(["pets"], "cat", { text: "now about trains and rail" });
        assert.equal((await store.searchItems(["pets"], { query: "railway" }))[0].key, "cat");
        assert.equal((await store.searchItems(["pets"], { query: "feline" }))[0].key, "both");
      });

      test("the port: a field given twice keeps its last vector; an item's best vector is its score", async () => {
        const { storage } = await fresh();
        const now = Date.parse("2026-01-01T00:00:00Z");
        await storage.store.write(
          "default",
          [
            {
              namespace: ["v"],
              key: "k",
              value: { a: 1 },
              ttlMinutes: null,
              vectors: [
                { field: "text", vector: [1, 0, 0] },
                { field: "text", vector: [0, 1, 0] },
                { field: "title", vector: [0, 0.6, 0.8] },
              ],
            },
          ],
          now,
        );
        const search = (queryVector: number[]) =>
          storage.store.search(
            "default",
            { namespacePrefix: ["v"], filter: [], limit: 10, offset: 0, queryVector, refreshTtl: false },
            now,
          );
        assert.equal((await search([1, 0, 0]))[0].score, 0, "the first vector of `text` was replaced");
        assert.ok(Math.abs(((await search([0, 1, 0]))[0].score as number) - 1) < 1e-6);
        assert.ok(Math.abs(((await search([0, 0, 1]))[0].score as number) - 0.8) < 1e-6);
      });

      test("a wrong embedding size is an error, not silent garbage", async () => {
        const { storage } = await fresh();
        const bad = new HangarStore(storage.store, "default", {
          index: { dims: 3, fields: ["$"], embedDocuments: embed, embedQuery: async (t) => vectorOf(t) },
          defaultTtlMinutes: null,
          refreshOnRead: true,
        });
        await assert.rejects(bad.putItem(["a"], "k", { text: "cat" }), /3 finite numbers/);
      });
    });

    describe("TTL", () => {
      test("expired items are invisible at once, refreshed by reads, swept later", async () => {
        const { store, storage, clock } = await fresh();
        await store.putItem(["s"], "short", { v: 1 }, { ttl: 1 });
        await store.putItem(["s"], "forever", { v: 2 });
        clock.now += 50_000;
        assert.ok(await store.getItem(["s"], "short", { refreshTtl: false }));
        clock.now += 20_000; // 70 s after the write: expired
        assert.equal(await store.getItem(["s"], "short"), null);
        assert.deepEqual(keys(await store.searchItems(["s"])), ["forever"]);
        assert.deepEqual(await store.namespaces({}), [["s"]]);
        assert.equal(await storage.store.nextExpiry(), Date.parse("2026-01-01T00:01:00Z"));
        assert.equal(await storage.store.sweepExpired(clock.now), 1);
        assert.equal(await storage.store.nextExpiry(), null);
        // Re-putting the key starts a new item.
        await store.putItem(["s"], "short", { v: 3 }, { ttl: 1 });
        assert.equal((await store.getItem(["s"], "short"))?.created_at, new Date(clock.now).toISOString());
      });

      test("reads refresh the TTL (get and search), unless told not to", async () => {
        const { store, clock } = await fresh();
        await store.putItem(["s"], "k", { v: 1 }, { ttl: 1 });
        clock.now += 50_000;
        await store.getItem(["s"], "k"); // refresh: expires 60 s from now
        clock.now += 50_000;
        assert.ok(await store.getItem(["s"], "k", { refreshTtl: false }), "kept alive by the first read");
        await store.searchItems(["s"]); // refresh again
        clock.now += 50_000;
        assert.ok(await store.getItem(["s"], "k", { refreshTtl: false }), "kept alive by the search");
        clock.now += 20_000;
        assert.equal(await store.getItem(["s"], "k"), null);
      });

      test("default TTL and refresh_on_read from the settings", async () => {
        const { store, clock } = await fresh({ defaultTtl: 1, refreshOnRead: false });
        await store.putItem(["s"], "k", { v: 1 });
        await store.putItem(["s"], "kept", { v: 1 }, { ttl: null });
        clock.now += 50_000;
        await store.getItem(["s"], "k"); // does not refresh
        clock.now += 20_000;
        assert.equal(await store.getItem(["s"], "k"), null);
        assert.ok(await store.getItem(["s"], "kept"));
      });

      test("the sweeper deletes expired rows when they expire", async () => {
        const { storage } = await fresh();
        const store = new HangarStore(storage.store, "default");
        const sweeper = new StoreSweeper({ repo: storage.store, log: silentLogger, minGapMs: 50 });
        store.onExpiry = (at) => sweeper.expiresAt(at);
        sweeper.start();
        try {
          await store.putItem(["s"], "k", { v: 1 }, { ttl: 0.005 }); // 300 ms
          const started = Date.now();
          while ((await storage.store.nextExpiry()) !== null) {
            assert.ok(Date.now() - started < 20_000, "swept within 20 s");
            await new Promise((r) => setTimeout(r, 50));
          }
          assert.ok(Date.now() - started >= 250, "not before it expired");
        } finally {
          await sweeper.close();
        }
      });
    });

    describe("graphs", () => {
      test("a graph node reads and writes the store through config.store and getStore()", async () => {
        const { store } = await fresh({ index: true });
        await store.putItem(["profiles"], "ann", { name: "Ann" });
        const State = Annotation.Root({ out: Annotation<unknown>() });
        const graph = new StateGraph(State)
          .addNode("node", async (_s: typeof State.State, config: LangGraphRunnableConfig) => {
            await config.store!.put(["memories", "ann"], "m1", { text: "likes cats" });
            const profile = await getStore()!.get(["profiles"], "ann");
            const hits = await config.store!.search(["memories"], { query: "kitten" });
            return { out: { profile: profile?.value, hits: hits.map((h) => [h.key, h.score]) } };
          })
          .addEdge(START, "node")
          .addEdge("node", END)
          .compile({ store });
        const result = await graph.invoke({});
        const out = result.out as any;
        assert.deepEqual(out.profile, { name: "Ann" });
        assert.equal(out.hits[0][0], "m1");
        assert.ok(out.hits[0][1] > 0);
        assert.deepEqual((await store.getItem(["memories", "ann"], "m1"))?.value, { text: "likes cats" });
      });
    });
  });
}
