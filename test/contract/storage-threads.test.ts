/**
 * The storage port contract (test/helpers/storage-contract.ts), threadsRepo: search and its metadata and authorization filters, copies, deletion.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import fc from "fast-check";
import { type AuthFilter, matchesFilter } from "../../src/storage/filter.js";
import type { Thread } from "../../src/storage/ports.js";
import { CHECKPOINT_ORG_KEY } from "../../src/storage/ports.js";
import { checkpointIds, isKind, putCheckpoint, storageContract } from "../helpers/storage-contract.js";
import { admission, makeAssistant, ORG } from "../helpers/storage-records.js";

/** Postgres' jsonb equality: same kind, numbers by value, arrays in order, objects whatever their key order. */
function jsonbEqual(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b))
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonbEqual(x, b[i]))
    );
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a);
    return (
      ka.length === Object.keys(b).length &&
      ka.every((k) => k in b && jsonbEqual((a as any)[k], (b as any)[k]))
    );
  }
  return a === b;
}

/** The metadata filters' containment (the dialect's `jsonContains`): objects key by key, the rest equal. */
function jsonbContains(doc: unknown, filter: Record<string, unknown>): boolean {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return false;
  return Object.entries(filter).every(([k, f]) => {
    if (!(k in doc)) return false;
    const v = (doc as Record<string, unknown>)[k];
    return f !== null && typeof f === "object" && !Array.isArray(f)
      ? jsonbContains(v, f as Record<string, unknown>)
      : jsonbEqual(v, f);
  });
}

storageContract((withStorage) => {
  describe("threads", () => {
    test(
      "authorization filters ($eq, $contains, scalars) select in SQL exactly the rows matchesFilter accepts",
      withStorage(async (s) => {
        // Metadata and filters drawn from a small domain, so that matches and near misses both occur.
        const scalar = fc.oneof(fc.constantFrom("a", "b", "1", ""), fc.constantFrom(1, 2, 1.5), fc.boolean());
        const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.constant(null));
        const metadata = fc.dictionary(fc.constantFrom("owner", "team", "tags"), value, { maxKeys: 3 });
        const condition = fc.oneof(
          scalar,
          scalar.map(($eq) => ({ $eq })),
          fc
            .oneof(scalar, fc.array(scalar, { minLength: 1, maxLength: 2 }))
            .map(($contains) => ({ $contains })),
        );
        const filter = fc.dictionary(fc.constantFrom("owner", "team", "tags"), condition, {
          minKeys: 1,
          maxKeys: 2,
        });
        const rows = fc.sample(metadata, { numRuns: 40, seed: 15 });
        const threads: Thread[] = [];
        for (const m of rows)
          threads.push(await s.threads.create(ORG, { thread_id: randomUUID(), metadata: m }, "raise"));
        const query = { limit: 1000, offset: 0, sort_by: "created_at", sort_order: "asc" } as const;
        for (const f of fc.sample(filter, { numRuns: 60, seed: 16 })) {
          const auth = f as AuthFilter;
          const expected = threads.filter((t) => matchesFilter(t.metadata, auth)).map((t) => t.thread_id);
          const found = (await s.threads.search(ORG, { ...query, auth })).items.map((t) => t.thread_id);
          assert.deepEqual(found, expected, `filter ${JSON.stringify(f)}`);
          assert.equal(await s.threads.count(ORG, { auth }), expected.length);
        }
      }),
    );

    test(
      "metadata containment of any value shape selects exactly what jsonb's @> selects, never an error",
      withStorage(async (s) => {
        // Rows and filters hold scalars, arrays and objects at the same keys, so every filter meets
        // every kind of stored value (a scalar where it has an array was an SQLite error).
        const scalar = fc.oneof(fc.constantFrom("a", "1", ""), fc.constantFrom(1, 1.5), fc.boolean());
        const leaf = fc.oneof(scalar, fc.constant(null), fc.array(scalar, { maxLength: 2 }));
        const value = fc.oneof(
          leaf,
          fc.dictionary(fc.constantFrom("x", "y"), leaf, { maxKeys: 2 }),
          fc.array(fc.dictionary(fc.constantFrom("x"), scalar, { maxKeys: 1 }), { maxLength: 1 }),
        );
        const doc = fc.dictionary(fc.constantFrom("owner", "tags", "o.k"), value, { maxKeys: 3 });
        const threads: Thread[] = [];
        for (const m of fc.sample(doc, { numRuns: 40, seed: 25 }))
          threads.push(await s.threads.create(ORG, { thread_id: randomUUID(), metadata: m }, "raise"));
        // Each filter is also one of the rows' own metadata now and then: matches occur.
        const filters = [
          ...fc.sample(doc, { numRuns: 60, seed: 26 }),
          ...threads.slice(0, 10).map((t) => t.metadata),
        ];
        const query = { limit: 1000, offset: 0, sort_by: "created_at", sort_order: "asc" } as const;
        for (const metadata of filters) {
          const expected = threads.filter((t) => jsonbContains(t.metadata, metadata)).map((t) => t.thread_id);
          const found = (await s.threads.search(ORG, { ...query, metadata })).items.map((t) => t.thread_id);
          assert.deepEqual(found, expected, `filter ${JSON.stringify(metadata)}`);
          assert.equal(await s.threads.count(ORG, { metadata }), expected.length);
        }
      }),
    );

    test(
      "create, patch, search and count by metadata, values and status, copy with checkpoints, delete",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const t1 = await s.threads.create(
          ORG,
          { thread_id: randomUUID(), metadata: { user: "u1", n: 1 } },
          "raise",
        );
        const t2 = await s.threads.create(
          ORG,
          { thread_id: randomUUID(), metadata: { user: "u2" } },
          "raise",
        );
        await assert.rejects(
          s.threads.create(ORG, { thread_id: t1.thread_id, metadata: {} }, "raise"),
          isKind("conflict"),
        );
        // Another organization's id is a fresh one there (issue 32, item 14): its own thread.
        const other = await s.threads.create(
          "org-b",
          { thread_id: t1.thread_id, metadata: {} },
          "do_nothing",
        );
        assert.deepEqual([other.thread_id, other.metadata], [t1.thread_id, {}]);
        assert.equal(
          (await s.threads.create(ORG, { thread_id: t1.thread_id, metadata: {} }, "do_nothing")).metadata
            .user,
          "u1",
        );
        assert.equal(t1.status, "idle");
        assert.equal(t1.values, undefined);
        assert.deepEqual((await s.threads.patch(ORG, t1.thread_id, { n: 2, more: true }))?.metadata, {
          user: "u1",
          n: 2,
          more: true,
        });
        // org-b patches its own thread of that id, never ORG's.
        assert.deepEqual((await s.threads.patch("org-b", t1.thread_id, { n: 3 }))?.metadata, { n: 3 });
        assert.equal((await s.threads.get(ORG, t1.thread_id))?.metadata.n, 2);
        await s.threads.recordState(ORG, t2.thread_id, {
          values: { messages: [{ role: "user", content: "hi" }], topic: "x" },
          interrupts: {},
          hasNext: false,
        });

        const search = (q: Record<string, unknown>) =>
          s.threads.search(ORG, { limit: 10, offset: 0, sort_by: "created_at", sort_order: "desc", ...q });
        assert.deepEqual(
          (await search({ metadata: { user: "u1" } })).items.map((t) => t.thread_id),
          [t1.thread_id],
        );
        assert.deepEqual(
          (await search({ values: { topic: "x" } })).items.map((t) => t.thread_id),
          [t2.thread_id],
        );
        const all = await search({});
        assert.deepEqual(
          all.items.map((t) => t.thread_id),
          [t2.thread_id, t1.thread_id],
        );
        assert.equal(all.total, 2);
        assert.deepEqual(
          (await search({ ids: [t1.thread_id] })).items.map((t) => t.thread_id),
          [t1.thread_id],
        );
        assert.equal(await s.threads.count(ORG, { status: "idle" }), 2);
        assert.equal(await s.threads.count(ORG, { metadata: { user: "nobody" } }), 0);
        assert.equal(
          (await s.threads.search(ORG, { limit: 1, offset: 1, sort_by: "created_at", sort_order: "desc" }))
            .items[0].thread_id,
          t1.thread_id,
        );

        const r = await s.runs.admit(ORG, admission(a, t2.thread_id));
        await putCheckpoint(s, t2.thread_id, r.run.run_id, "cp-0001");
        await putCheckpoint(s, t2.thread_id, r.run.run_id, "cp-0002");
        const copyId = randomUUID();
        const copy = await s.threads.copy(ORG, t2.thread_id, copyId);
        assert.equal(copy?.status, "idle", "a busy thread's copy is idle");
        assert.equal(copy?.metadata.thread_id, copyId);
        assert.deepEqual(copy?.values, { messages: [{ role: "user", content: "hi" }], topic: "x" });
        assert.deepEqual(await checkpointIds(s, copyId), ["cp-0002", "cp-0001"]);
        const tuple = await s.checkpointer.getTuple({
          configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: copyId },
        });
        assert.equal(tuple?.checkpoint.id, "cp-0002");
        assert.equal(await s.threads.copy("org-b", t2.thread_id, randomUUID()), null);

        const deleted = await s.threads.delete(ORG, t2.thread_id);
        // The pending run it had is reported by the delete itself (its readers are released from that).
        assert.deepEqual(deleted, { deleted: true, runningRunIds: [], pendingRunIds: [r.run.run_id] });
        assert.deepEqual(await checkpointIds(s, t2.thread_id), []);
        assert.equal(await s.runs.get(ORG, null, r.run.run_id), null);
        assert.deepEqual(await checkpointIds(s, copyId), ["cp-0002", "cp-0001"], "the copy keeps its own");
        assert.deepEqual(await s.threads.delete(ORG, t2.thread_id), {
          deleted: false,
          runningRunIds: [],
          pendingRunIds: [],
        });
      }),
    );

    test(
      "admission's new thread, bindGraph, copy onto an existing id, concurrent patches, JSON null values",
      withStorage(async (s, fx) => {
        const a = await makeAssistant(s);
        // A thread the admission creates is bound to the assistant's graph over the request's metadata,
        // takes the run's thread config, and is busy: as an existing thread the admission updates.
        const t = randomUUID();
        await s.runs.admit(
          ORG,
          admission(a, t, {
            metadata: { graph_id: "other", k: 1 },
            thread_config: { configurable: { x: 1 } },
          }),
        );
        const created = await s.threads.get(ORG, t);
        assert.deepEqual(created?.metadata, { graph_id: "agent", assistant_id: a.assistant_id, k: 1 });
        assert.deepEqual(created?.config, { configurable: { x: 1 } });
        assert.equal(created?.status, "busy");
        await s.runs.admit(ORG, admission(a, t, { thread_config: { configurable: { x: 2 } } }));
        assert.deepEqual((await s.threads.get(ORG, t))?.config, { configurable: { x: 2 } });
        await s.runs.admit(ORG, admission(a, t));
        assert.deepEqual((await s.threads.get(ORG, t))?.config, { configurable: { x: 2 } }, "kept");

        const u = await s.threads.create(ORG, { thread_id: randomUUID(), metadata: { k: "v" } }, "raise");
        await s.threads.bindGraph(ORG, u.thread_id, "g2", "a2");
        await s.threads.bindGraph("org-b", u.thread_id, "g3", "a3");
        assert.deepEqual((await s.threads.get(ORG, u.thread_id))?.metadata, {
          k: "v",
          graph_id: "g2",
          assistant_id: "a2",
        });

        await assert.rejects(s.threads.copy(ORG, u.thread_id, t), isKind("conflict"));

        // Patches of one thread from several connections at once: every key lands.
        const views = [s, await fx.another(), await fx.another()];
        await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            views[i % views.length].threads.patch(ORG, u.thread_id, { [`p${i}`]: i }),
          ),
        );
        const patched = (await s.threads.get(ORG, u.thread_id))?.metadata ?? {};
        for (let i = 0; i < 12; i++) assert.equal(patched[`p${i}`], i);

        // A state of JSON null is a value (the thread has values), unlike no state at all.
        await s.threads.recordState(ORG, u.thread_id, { values: null, interrupts: {}, hasNext: false });
        const nulled = await s.threads.get(ORG, u.thread_id);
        assert.ok(nulled && "values" in nulled && nulled.values === null);
        assert.equal(
          "values" in (await s.threads.create(ORG, { thread_id: randomUUID(), metadata: {} }, "raise")),
          false,
        );
      }),
    );
  });
});
