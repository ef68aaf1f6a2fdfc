/**
 * The storage port contract (test/helpers/storage-contract.ts), threadEvents: protocol-v2 thread
 * events, numbered per thread and organization, bounded by count and bytes, gone with their thread.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { storageContract } from "../helpers/storage-contract.js";
import { ORG } from "../helpers/storage-records.js";

const big = { maxEvents: 1_000, maxBytes: 1 << 20 };
const texts = (n: number, from = 1) => Array.from({ length: n }, (_, i) => JSON.stringify({ n: from + i }));

storageContract((withStorage) => {
  describe("thread events", () => {
    test(
      "seq per thread from 1, across appends; reads after a seq, in pages; other organizations see none",
      withStorage(async (s) => {
        const t = randomUUID();
        for (const org of [ORG, "other-org"])
          await s.threads.create(org, { thread_id: t, metadata: {} }, "raise");
        assert.equal(await s.threadEvents.lastSeq(ORG, t), 0);
        assert.equal(await s.threadEvents.append(ORG, t, texts(3), big), 3);
        assert.equal(await s.threadEvents.append(ORG, t, texts(2, 4), big), 5);
        assert.equal(await s.threadEvents.append("other-org", t, texts(1), big), 1);
        const all = await s.threadEvents.read(ORG, t, 0, 100);
        assert.deepEqual(
          all.events.map((e) => [e.seq, JSON.parse(e.json).n]),
          [1, 2, 3, 4, 5].map((n) => [n, n]),
        );
        assert.deepEqual([all.firstKept, all.lastSeq], [1, 5]);
        const page = await s.threadEvents.read(ORG, t, 2, 2);
        assert.deepEqual(
          page.events.map((e) => e.seq),
          [3, 4],
        );
        const other = await s.threadEvents.read("other-org", t, 0, 100);
        assert.deepEqual(
          other.events.map((e) => e.seq),
          [1],
        );
      }),
    );

    test(
      "the oldest go beyond the count bound and the byte bound; the newest always stays",
      withStorage(async (s) => {
        const t = randomUUID();
        await s.threads.create(ORG, { thread_id: t, metadata: {} }, "raise");
        await s.threadEvents.append(ORG, t, texts(10), { maxEvents: 4, maxBytes: 1 << 20 });
        let kept = await s.threadEvents.read(ORG, t, 0, 100);
        assert.deepEqual(
          kept.events.map((e) => e.seq),
          [7, 8, 9, 10],
        );
        assert.equal(kept.firstKept, 7);
        const size = Buffer.byteLength(texts(1, 11)[0]!);
        await s.threadEvents.append(ORG, t, texts(3, 11), { maxEvents: 100, maxBytes: size * 2 });
        kept = await s.threadEvents.read(ORG, t, 0, 100);
        assert.deepEqual(
          kept.events.map((e) => e.seq),
          [12, 13],
        );
        const huge = JSON.stringify({ text: "x".repeat(5_000) });
        await s.threadEvents.append(ORG, t, [huge], { maxEvents: 100, maxBytes: 100 });
        kept = await s.threadEvents.read(ORG, t, 0, 100);
        assert.deepEqual(
          kept.events.map((e) => e.seq),
          [14],
        );
        assert.equal(kept.firstKept, 14);
      }),
    );

    test(
      "events go with their thread",
      withStorage(async (s) => {
        const thread = await s.threads.create(ORG, { thread_id: randomUUID(), metadata: {} }, "raise");
        await s.threadEvents.append(ORG, thread.thread_id, texts(3), big);
        await s.threads.delete(ORG, thread.thread_id);
        assert.equal(await s.threadEvents.lastSeq(ORG, thread.thread_id), 0);
        assert.deepEqual((await s.threadEvents.read(ORG, thread.thread_id, 0, 10)).events, []);
        // A run that still streamed when its thread went keeps nothing (0: nothing appended).
        assert.equal(await s.threadEvents.append(ORG, thread.thread_id, texts(2), big), 0);
        assert.equal(await s.threadEvents.lastSeq(ORG, thread.thread_id), 0);
      }),
    );
  });
});
