import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import Database from "better-sqlite3";
import {
  assertValidation,
  checkAll,
  client,
  type Hangar,
  http,
  REPO_ROOT,
  startHangar,
  waitFor,
  writeProject,
} from "../helpers/server.js";

const T = { timeout: 30_000 };
/** Serves the `memory` graph with `store.index` (a deterministic embedding function, ./fixtures/memory). */
const MEMORY_CONFIG = join(REPO_ROOT, "test", "e2e", "fixtures", "memory", "langgraph.json");

/** A namespace no other test uses. */
const ns = (...labels: string[]) => [`t${randomUUID().slice(0, 8)}`, ...labels];

describe("store", () => {
  let h: Hangar;
  let c: Client;
  before(async () => {
    h = await startHangar({ config: MEMORY_CONFIG });
    c = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  test("put, get, overwrite, delete through the SDK", T, async () => {
    const namespace = ns("users", "u1");
    await c.store.putItem(namespace, "prefs", { theme: "dark", n: 1 });
    const item = await c.store.getItem(namespace, "prefs");
    assert.ok(item);
    assert.deepEqual(item.namespace, namespace);
    assert.equal(item.key, "prefs");
    assert.deepEqual(item.value, { theme: "dark", n: 1 });
    assert.ok(!Number.isNaN(Date.parse(item.createdAt)));
    await c.store.putItem(namespace, "prefs", { theme: "light" });
    const updated = await c.store.getItem(namespace, "prefs");
    assert.deepEqual(updated?.value, { theme: "light" });
    assert.equal(updated?.createdAt, item.createdAt);
    assert.ok(Date.parse(updated!.updatedAt) >= Date.parse(item.updatedAt));
    await c.store.deleteItem(namespace, "prefs");
    assert.equal(await c.store.getItem(namespace, "prefs"), null);
  });

  test("exact statuses and bodies: 204 on PUT/DELETE, 200 null for a missing item", T, async () => {
    const namespace = ns("raw");
    const put = await http(h.url, "PUT", "/store/items", { namespace, key: "k", value: { a: 1 } });
    assert.equal(put.status, 204);
    assert.equal(put.text, "");
    const got = await http(h.url, "GET", `/store/items?namespace=${namespace.join(".")}&key=k`);
    assert.equal(got.status, 200);
    assert.deepEqual(
      Object.keys(got.body).sort(),
      ["created_at", "key", "namespace", "updated_at", "value"],
      "no score outside search",
    );
    const missing = await http(h.url, "GET", `/store/items?namespace=${namespace.join(".")}&key=nope`);
    assert.equal(missing.status, 200);
    assert.equal(missing.text, "null");
    const del = await http(h.url, "DELETE", "/store/items", { namespace, key: "k" });
    assert.equal(del.status, 204);
    assert.equal(del.text, "");
    assert.equal((await http(h.url, "DELETE", "/store/items", { namespace, key: "k" })).status, 204);
  });

  test("bad input is a 422 naming the field, never a 500", T, async () => {
    const put = (body: unknown) => http(h.url, "PUT", "/store/items", body);
    const search = (body: unknown) => http(h.url, "POST", "/store/items/search", body);
    const namespaces = (body: unknown) => http(h.url, "POST", "/store/namespaces", body);
    const get = (query: string) => http(h.url, "GET", `/store/items?${query}`);
    const ok = { namespace: ["a"], key: "k", value: {} };
    await checkAll([
      [
        "empty namespace",
        async () => {
          const res = await put({ ...ok, namespace: [] });
          assertValidation(res, "namespace");
          assert.equal(res.body.detail[0].msg, "Namespace is required");
        },
      ],
      [
        "label with a period",
        async () => {
          const res = await put({ ...ok, namespace: ["a.b", "c"] });
          assertValidation(res, "namespace");
          assert.equal(
            res.body.detail[0].msg,
            "Namespace labels cannot be empty or contain periods. Received: a.b.c",
          );
        },
      ],
      ["empty label", async () => assertValidation(await put({ ...ok, namespace: ["a", ""] }), "namespace")],
      [
        "namespace not a list",
        async () => assertValidation(await put({ ...ok, namespace: "a" }), "namespace"),
      ],
      [
        "label not a string",
        async () => assertValidation(await put({ ...ok, namespace: ["a", 1] }), "namespace"),
      ],
      ["no key", async () => assertValidation(await put({ namespace: ["a"], value: {} }), "key")],
      ["empty key", async () => assertValidation(await put({ ...ok, key: "" }), "key")],
      ["value a list", async () => assertValidation(await put({ ...ok, value: [1] }), "value")],
      ["value a string", async () => assertValidation(await put({ ...ok, value: "v" }), "value")],
      ["value null", async () => assertValidation(await put({ ...ok, value: null }), "value")],
      ["ttl negative", async () => assertValidation(await put({ ...ok, ttl: -5 }), "ttl")],
      ["ttl zero", async () => assertValidation(await put({ ...ok, ttl: 0 }), "ttl")],
      ["ttl a string", async () => assertValidation(await put({ ...ok, ttl: "5" }), "ttl")],
      ["index a string", async () => assertValidation(await put({ ...ok, index: "text" }), "index")],
      ["index true", async () => assertValidation(await put({ ...ok, index: true }), "index")],
      [
        "malformed JSON",
        async () =>
          assertValidation(
            await http(h.url, "PUT", "/store/items", "{", { "content-type": "application/json" }),
          ),
      ],
      ["GET without namespace", async () => assertValidation(await get("key=k"), "namespace")],
      ["GET without key", async () => assertValidation(await get("namespace=a"), "key")],
      ["GET empty label", async () => assertValidation(await get("namespace=a..b&key=k"), "namespace")],
      [
        "GET refresh_ttl=maybe",
        async () => assertValidation(await get("namespace=a&key=k&refresh_ttl=maybe")),
      ],
      [
        "DELETE empty namespace",
        async () =>
          assertValidation(await http(h.url, "DELETE", "/store/items", { namespace: [], key: "k" })),
      ],
      [
        "DELETE without key",
        async () =>
          assertValidation(await http(h.url, "DELETE", "/store/items", { namespace: ["a"] }), "key"),
      ],
      ["search prefix not a list", async () => assertValidation(await search({ namespace_prefix: "a" }))],
      [
        "search prefix with a period",
        async () => assertValidation(await search({ namespace_prefix: ["a.b"] })),
      ],
      ["search filter a list", async () => assertValidation(await search({ filter: [] }), "filter")],
      [
        "search unknown operator",
        async () => {
          const res = await search({ filter: { n: { $near: 1 } } });
          assertValidation(res, "$near");
          assert.match(res.body.detail[0].msg, /unknown operator \$near/);
        },
      ],
      [
        "search $gt object",
        async () => assertValidation(await search({ filter: { n: { $gt: {} } } }), "$gt"),
      ],
      [
        "search $in not a list",
        async () => assertValidation(await search({ filter: { n: { $in: 1 } } }), "$in"),
      ],
      ["search limit 0", async () => assertValidation(await search({ limit: 0 }), "limit")],
      ["search limit 1001", async () => assertValidation(await search({ limit: 1001 }), "limit")],
      ["search limit a string", async () => assertValidation(await search({ limit: "ten" }), "limit")],
      ["search offset -1", async () => assertValidation(await search({ offset: -1 }), "offset")],
      ["search query a number", async () => assertValidation(await search({ query: 7 }), "query")],
      [
        "search refresh_ttl a string",
        async () => assertValidation(await search({ refresh_ttl: "y" }), "refresh_ttl"),
      ],
      [
        "namespaces max_depth 0",
        async () => assertValidation(await namespaces({ max_depth: 0 }), "max_depth"),
      ],
      [
        "namespaces max_depth 1.5",
        async () => assertValidation(await namespaces({ max_depth: 1.5 }), "max_depth"),
      ],
      [
        "namespaces prefix a string",
        async () => assertValidation(await namespaces({ prefix: "a" }), "prefix"),
      ],
      [
        "namespaces suffix with a period",
        async () => assertValidation(await namespaces({ suffix: ["a.b"] }), "suffix"),
      ],
      ["namespaces limit 0", async () => assertValidation(await namespaces({ limit: 0 }), "limit")],
      [
        "body not an object",
        async () =>
          assertValidation(
            await http(h.url, "POST", "/store/items/search", "[]", { "content-type": "application/json" }),
          ),
      ],
    ]);
  });

  test("search: namespace prefix, filter, limit/offset through the SDK", T, async () => {
    const root = ns();
    await c.store.putItem([...root], "r", { kind: "index", n: 0 });
    await c.store.putItem([...root, "a"], "a1", { kind: "note", n: 1 });
    await c.store.putItem([...root, "a"], "a2", { kind: "note", n: 2 });
    await c.store.putItem([...root, "b"], "b1", { kind: "todo", n: 3 });
    await c.store.putItem([`${root[0]}x`], "x", { kind: "note", n: 9 });
    const keys = async (prefix: string[], opts: Parameters<Client["store"]["searchItems"]>[1] = {}) =>
      (await c.store.searchItems(prefix, opts)).items.map((i) => i.key).sort();
    assert.deepEqual(await keys(root), ["a1", "a2", "b1", "r"]);
    assert.deepEqual(await keys([...root, "a"]), ["a1", "a2"]);
    assert.deepEqual(await keys(root, { filter: { kind: "note" } }), ["a1", "a2"]);
    assert.deepEqual(await keys(root, { filter: { n: { $gte: 2 } } }), ["a2", "b1"]);
    assert.deepEqual(await keys(root, { filter: { kind: { $in: ["todo", "index"] } } }), ["b1", "r"]);
    const page1 = (await c.store.searchItems(root, { limit: 2 })).items.map((i) => i.key);
    const page2 = (await c.store.searchItems(root, { limit: 2, offset: 2 })).items.map((i) => i.key);
    assert.equal(page1.length, 2);
    assert.deepEqual([...page1, ...page2].sort(), ["a1", "a2", "b1", "r"]);
    const [hit] = (await c.store.searchItems([...root, "b"])).items;
    assert.deepEqual(hit.value, { kind: "todo", n: 3 });
    assert.equal(hit.score, undefined, "no score without a query");
  });

  test("namespaces: prefix, suffix, max_depth, limit/offset", T, async () => {
    const root = ns();
    for (const path of [
      ["users", "u1", "memories"],
      ["users", "u2", "memories"],
      ["users", "u2", "profile"],
      ["docs"],
    ]) {
      await c.store.putItem([...root, ...path], "k", {});
    }
    const list = async (opts: Parameters<Client["store"]["listNamespaces"]>[0]) =>
      (await c.store.listNamespaces(opts)).namespaces;
    assert.deepEqual(await list({ prefix: root }), [
      [...root, "docs"],
      [...root, "users", "u1", "memories"],
      [...root, "users", "u2", "memories"],
      [...root, "users", "u2", "profile"],
    ]);
    assert.deepEqual(await list({ prefix: root, suffix: ["memories"] }), [
      [...root, "users", "u1", "memories"],
      [...root, "users", "u2", "memories"],
    ]);
    assert.deepEqual(await list({ prefix: [...root, "users"], maxDepth: 3 }), [
      [...root, "users", "u1"],
      [...root, "users", "u2"],
    ]);
    assert.deepEqual(await list({ prefix: [...root, "users", "*", "profile"] }), [
      [...root, "users", "u2", "profile"],
    ]);
    assert.deepEqual(await list({ prefix: root, limit: 1, offset: 1 }), [
      [...root, "users", "u1", "memories"],
    ]);
  });

  test("semantic search ranks by similarity, with a score", T, async () => {
    const root = ns("pets");
    await c.store.putItem(root, "cat", { text: "my cat is a lazy feline" });
    await c.store.putItem(root, "dog", { text: "the dog likes to bark at the puppy" });
    await c.store.putItem(root, "both", { text: "a cat and a dog" });
    await c.store.putItem(root, "car", { text: "a red car with a big engine" });
    await c.store.putItem(root, "unindexed", { text: "kitten kitten kitten" }, { index: false });
    const { items } = await c.store.searchItems(root, { query: "kitten", limit: 10 });
    assert.deepEqual(
      items.map((i) => i.key),
      ["cat", "both", ...items.slice(2, 4).map((i) => i.key), "unindexed"],
    );
    assert.deepEqual(
      items
        .slice(2, 4)
        .map((i) => i.key)
        .sort(),
      ["car", "dog"],
    );
    const scores = items.slice(0, 4).map((i) => i.score as number);
    assert.ok(scores[0] > scores[1] && scores[1] > scores[2], `descending scores: ${scores}`);
    assert.equal(items[4].score, null);
    const puppies = await c.store.searchItems(root, { query: "puppies", limit: 1 });
    assert.deepEqual(
      puppies.items.map((i) => i.key),
      ["dog"],
    );
    const filtered = await c.store.searchItems(root, {
      query: "engine",
      filter: { text: { $ne: "a cat and a dog" } },
    });
    assert.equal(filtered.items[0].key, "car");
    assert.ok(!filtered.items.some((i) => i.key === "both"));
  });

  test("what a graph writes is read through the API, and the other way round", T, async () => {
    const user = `u${randomUUID().slice(0, 8)}`;
    await c.store.putItem(["profiles"], user, { name: "Ann", likes: "cats" });
    const out = (await c.runs.wait(null, "memory", {
      input: { user, remember: "kittens are small cats", key: "m1", query: "feline" },
    })) as any;
    assert.deepEqual(out.profile, { name: "Ann", likes: "cats" }, "the graph read the API's item (getStore)");
    assert.deepEqual(out.recalled, ["kittens are small cats"]);
    assert.equal(out.ranked[0].key, "m1");
    assert.ok(out.ranked[0].score > 0);

    const written = await c.store.getItem(["memories", user], "m1");
    assert.deepEqual(written?.value, { text: "kittens are small cats" }, "the API reads the graph's item");
    const found = await c.store.searchItems(["memories", user], { query: "kitten" });
    assert.equal(found.items[0].key, "m1", "the graph's writes are indexed");

    await c.store.putItem(["memories", user], "m2", { text: "dinner was pizza" });
    const again = (await c.runs.wait(null, "memory", { input: { user, query: "food" } })) as any;
    assert.deepEqual(again.recalled.sort(), ["dinner was pizza", "kittens are small cats"]);
    assert.equal(again.ranked[0].key, "m2");
  });

  test("TTL: items expire, reads refresh them, expired rows are swept", { timeout: 60_000 }, async () => {
    const namespace = ns("ttl");
    const q = `namespace=${namespace.join(".")}`;
    // 0.05 minutes = 3 s.
    await c.store.putItem(namespace, "refreshed", { v: 1 }, { ttl: 0.05 });
    await c.store.putItem(namespace, "plain", { v: 2 }, { ttl: 0.05 });
    await c.store.putItem(namespace, "forever", { v: 3 });
    const written = Date.now();
    await new Promise((r) => setTimeout(r, 1500));
    assert.ok(await c.store.getItem(namespace, "refreshed", { refreshTtl: true }), "alive at 1.5 s");
    assert.ok(
      (await http(h.url, "GET", `/store/items?${q}&key=plain&refresh_ttl=false`)).body,
      "alive, not refreshed",
    );
    // "plain" expires 3 s after its write; "refreshed" 3 s after the read above.
    await waitFor(async () => (await c.store.getItem(namespace, "plain", { refreshTtl: false })) === null, {
      timeoutMs: 5000,
      what: "the unrefreshed item expires",
    });
    assert.ok(Date.now() - written >= 2900, "not before its TTL");
    const alive = await http(h.url, "GET", `/store/items?${q}&key=refreshed&refresh_ttl=false`);
    assert.ok(alive.body, `the refreshed item outlives the other (${Date.now() - written} ms)`);
    // Polled without refreshing (a refreshing read, the default, would keep it alive).
    await waitFor(
      async () => (await c.store.getItem(namespace, "refreshed", { refreshTtl: false })) === null,
      {
        timeoutMs: 5000,
        what: "the refreshed item expires in turn",
      },
    );
    const left = await c.store.searchItems(namespace);
    assert.deepEqual(
      left.items.map((i) => i.key),
      ["forever"],
      "search does not show expired items",
    );

    const db = new Database(join(h.dataDir, "hangar.sqlite"), { readonly: true, fileMustExist: true });
    try {
      await waitFor(
        () =>
          (
            db
              .prepare("SELECT COUNT(*) AS n FROM store_items WHERE namespace = ?")
              .get(namespace.join(".")) as {
              n: number;
            }
          ).n === 1,
        { timeoutMs: 5000, what: "expired rows swept from the database" },
      );
    } finally {
      db.close();
    }
  });
});

const MEMORY_GRAPHS = { memory: join(REPO_ROOT, "test/e2e/fixtures/memory/graphs.ts:memory") };

describe("store configuration", () => {
  test("http.disable_store removes the routes", T, async () => {
    const config = await writeProject({ graphs: MEMORY_GRAPHS, http: { disable_store: true } });
    const h = await startHangar({ config });
    try {
      const res = await http(h.url, "PUT", "/store/items", { namespace: ["a"], key: "k", value: {} });
      assert.equal(res.status, 404);
      // The graphs keep their store.
      const out = (await client(h.url).runs.wait(null, "memory", {
        input: { user: "u", remember: "x" },
      })) as any;
      assert.deepEqual(out.recalled, ["x"]);
    } finally {
      await h.stop();
    }
  });

  test("an embedding provider string is refused at start with a message naming the setting", T, async () => {
    const config = await writeProject({
      graphs: MEMORY_GRAPHS,
      store: { index: { dims: 1536, embed: "openai:text-embedding-3-small" } },
    });
    await assert.rejects(
      startHangar({ config, startTimeoutMs: 20_000 }),
      /store\.index\.embed.*embedding provider/s,
    );
  });
});
