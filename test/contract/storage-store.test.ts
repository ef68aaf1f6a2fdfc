/**
 * The storage port contract (test/helpers/storage-contract.ts), storeRepo: the long-term memory store.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Storage } from "../../src/storage/ports.js";
import { storageContract } from "../helpers/storage-contract.js";
import { ORG } from "../helpers/storage-records.js";

storageContract((withStorage) => {
  describe("store", () => {
    test(
      "write, get, search (namespace, filters, vectors), namespaces, TTL expiry and refresh",
      withStorage(async (s) => {
        const now = Date.parse("2026-01-01T00:00:00Z");
        await s.store.write(
          ORG,
          [
            {
              namespace: ["u1", "notes"],
              key: "a",
              value: { text: "cats", n: 1, tags: ["x"], o: { p: 1, q: 2 } },
              ttlMinutes: null,
              vectors: [{ field: "text", vector: [1, 0, 0] }],
            },
            {
              namespace: ["u1", "notes"],
              key: "b",
              value: { text: "dogs", n: 5, s: "m" },
              ttlMinutes: 1,
              vectors: [{ field: "text", vector: [0, 1, 0] }],
            },
            {
              namespace: ["u1", "prefs"],
              key: "c",
              value: { n: 3, s: "z" },
              ttlMinutes: null,
              vectors: [],
            },
            { namespace: ["u10"], key: "d", value: { n: 9 }, ttlMinutes: null, vectors: [] },
          ],
          now,
        );
        await s.store.write(
          "org-b",
          [{ namespace: ["u1"], key: "z", value: {}, ttlMinutes: null, vectors: [] }],
          now,
        );
        const got = await s.store.get(ORG, ["u1", "notes"], "a", { refreshTtl: false, now });
        assert.deepEqual(got?.value, { text: "cats", n: 1, tags: ["x"], o: { p: 1, q: 2 } });
        assert.deepEqual(got?.namespace, ["u1", "notes"]);
        const search = async (q: Partial<Parameters<Storage["store"]["search"]>[1]>, at = now) =>
          (
            await s.store.search(
              ORG,
              { namespacePrefix: [], filter: [], limit: 10, offset: 0, refreshTtl: false, ...q },
              at,
            )
          ).map((h) => h.key);
        assert.deepEqual((await search({ namespacePrefix: ["u1"] })).sort(), ["a", "b", "c"]);
        assert.deepEqual(
          await search({ filter: [{ field: "n", op: "gt", value: 2 }] }).then((k) => k.sort()),
          ["b", "c", "d"],
        );
        assert.deepEqual(await search({ filter: [{ field: "s", op: "lt", value: "n" }] }), ["b"]);
        assert.deepEqual((await search({ filter: [{ field: "n", op: "ne", value: 1 }] })).sort(), [
          "b",
          "c",
          "d",
        ]);
        assert.deepEqual((await search({ filter: [{ field: "n", op: "in", value: [1, 9] }] })).sort(), [
          "a",
          "d",
        ]);
        assert.deepEqual((await search({ filter: [{ field: "n", op: "nin", value: [1, 9] }] })).sort(), [
          "b",
          "c",
        ]);
        assert.deepEqual(await search({ filter: [{ field: "o", op: "eq", value: { p: 1 } }] }), ["a"]);
        assert.deepEqual(await search({ filter: [{ field: "tags", op: "eq", value: ["x"] }] }), ["a"]);
        const ranked = await s.store.search(
          ORG,
          {
            namespacePrefix: ["u1"],
            filter: [],
            limit: 10,
            offset: 0,
            refreshTtl: false,
            queryVector: [0.1, 1, 0],
          },
          now,
        );
        assert.deepEqual(
          ranked.map((h) => h.key),
          ["b", "a", "c"],
        );
        assert.ok(
          Math.abs((ranked[0].score as number) - 1 / Math.sqrt(1.01)) < 1e-6,
          String(ranked[0].score),
        );
        assert.equal(ranked[2].score, null);

        assert.deepEqual(await s.store.listNamespaces(ORG, { limit: 10, offset: 0 }, now), [
          ["u1", "notes"],
          ["u1", "prefs"],
          ["u10"],
        ]);
        assert.deepEqual(
          await s.store.listNamespaces(ORG, { prefix: ["u1"], maxDepth: 1, limit: 10, offset: 0 }, now),
          [["u1"]],
        );
        assert.deepEqual(
          await s.store.listNamespaces(ORG, { suffix: ["prefs"], limit: 10, offset: 0 }, now),
          [["u1", "prefs"]],
        );

        assert.equal(await s.store.nextExpiry(), now + 60_000);
        assert.ok(await s.store.get(ORG, ["u1", "notes"], "b", { refreshTtl: true, now: now + 30_000 }));
        assert.equal(await s.store.nextExpiry(), now + 90_000);
        assert.equal(
          await s.store.get(ORG, ["u1", "notes"], "b", { refreshTtl: false, now: now + 90_000 }),
          null,
        );
        assert.equal(await s.store.sweepExpired(now + 90_000), 1);
        assert.equal(await s.store.nextExpiry(), null);
        await s.store.write(
          ORG,
          [{ namespace: ["u1", "notes"], key: "a", value: null, ttlMinutes: null, vectors: [] }],
          now,
        );
        assert.equal(await s.store.get(ORG, ["u1", "notes"], "a", { refreshTtl: false, now }), null);
      }),
    );
  });
});
