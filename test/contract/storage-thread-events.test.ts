/**
 * The storage port contract (test/helpers/storage-contract.ts), threadEvents: protocol-v2 thread
 * events, numbered per thread and organization, bounded by count and bytes, gone with their thread.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { ThreadEventWriter } from "../../src/protocol/buffer.js";
import type { ProducedEvent } from "../../src/protocol/events.js";
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

    test(
      "the run's writer: events produced while a write is in flight go in one next write, in order",
      withStorage(async (s) => {
        const t = randomUUID();
        await s.threads.create(ORG, { thread_id: t, metadata: {} }, "raise");
        const batches: number[] = [];
        let release!: () => void;
        const held = new Promise<void>((r) => {
          release = r;
        });
        // The real repository; its first write is held until ten more events were produced.
        const repo = {
          ...s.threadEvents,
          append: async (...args: Parameters<typeof s.threadEvents.append>) => {
            batches.push(args[2].length);
            if (batches.length === 1) await held;
            return s.threadEvents.append(...args);
          },
        };
        const quiet = { debug() {}, info() {}, warn() {}, error() {} };
        const writer = new ThreadEventWriter(repo, big, ORG, t, () => {}, quiet);
        const event = (n: number): ProducedEvent => ({
          method: "custom",
          namespace: [],
          timestamp: n,
          data: { n },
          run_id: "r",
        });
        writer.push(event(1));
        await new Promise((r) => setTimeout(r, 30)); // the first write starts, and is held
        // Further apart than the writer's wait for the ones after an event.
        for (let n = 2; n <= 11; n++) {
          writer.push(event(n));
          await new Promise((r) => setTimeout(r, 10));
        }
        release();
        await writer.close();
        assert.deepEqual(batches, [1, 10], "one write for what queued behind the first");
        const { events } = await s.threadEvents.read(ORG, t, 0, 100);
        assert.deepEqual(
          events.map((e) => JSON.parse(e.json).data.n),
          Array.from({ length: 11 }, (_, i) => i + 1),
        );
      }),
    );
  });
});
