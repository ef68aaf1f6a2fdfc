/**
 * The run event log contract, run against both adapters: in memory (embedded) and Redis Streams
 * (scale-out). For Redis the writer and the reader are two separate connections' worth of Hangar —
 * one process publishes, another follows — as an API replica follows a run executing on a worker.
 *
 * Redis runs when `HANGAR_TEST_REDIS_URI` is set, and then FAILS if the server is unreachable (CI sets
 * it). Unset: the Redis half is skipped with a visible reason. Each test uses its own key prefix.
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { RedisLink } from "../../src/cluster/redis.js";
import type { Logger } from "../../src/logger.js";
import { RedisRunLogs } from "../../src/streams/redis-run-logs.js";
import { MemoryRunLogs, type RunEvent, type RunLogs } from "../../src/streams/run-log.js";

const REDIS_URI = process.env.HANGAR_TEST_REDIS_URI;

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;

interface Fixture {
  writer: RunLogs;
  reader: RunLogs;
  close(): Promise<void>;
}

const ADAPTERS: { name: string; skip?: string; open(): Promise<Fixture> }[] = [
  {
    name: "memory",
    async open() {
      const logs = new MemoryRunLogs({ retentionSeconds: 60 });
      return { writer: logs, reader: logs, close: async () => logs.close() };
    },
  },
  {
    name: "redis",
    skip: REDIS_URI ? undefined : "HANGAR_TEST_REDIS_URI is not set (e.g. redis://127.0.0.1:6379)",
    async open() {
      const prefix = `hangar-test-${randomBytes(6).toString("hex")}:`;
      const a = await RedisLink.connect(REDIS_URI as string, prefix, quiet);
      const b = await RedisLink.connect(REDIS_URI as string, prefix, quiet);
      return {
        writer: new RedisRunLogs(a, { retentionSeconds: 60 }),
        reader: new RedisRunLogs(b, { retentionSeconds: 60 }),
        async close() {
          const keys = await a.commands.keys(`${prefix}*`);
          if (keys.length) await a.commands.del(...keys);
          await a.close();
          await b.close();
        },
      };
    },
  },
];

async function collect(
  events: AsyncIterable<RunEvent>,
  until?: (e: RunEvent) => boolean,
): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const e of events) {
    out.push(e);
    if (until?.(e)) break;
  }
  return out;
}

for (const adapter of ADAPTERS) {
  describe(`run logs contract: ${adapter.name}`, { skip: adapter.skip }, () => {
    const withLogs = (fn: (f: Fixture) => Promise<void>) => async () => {
      const f = await adapter.open();
      try {
        await fn(f);
      } finally {
        await f.close();
      }
    };

    test(
      "a reader gets what was published before it attached, then follows live events until the end",
      withLogs(async ({ writer, reader }) => {
        const run = randomUUID();
        await writer.open(run);
        writer.publish(run, "metadata", '{"run_id":1}');
        writer.publish(run, "values", '{"a":1}');
        const reading = collect(reader.read(run, -1));
        const outcome = reader.outcome(run);
        await new Promise((r) => setTimeout(r, 50));
        writer.publish(run, "values", '{"a":\n2}');
        writer.end(run, { a: 2 });
        const events = await reading;
        assert.deepEqual(events, [
          { id: 0, event: "metadata", data: '{"run_id":1}' },
          { id: 1, event: "values", data: '{"a":1}' },
          { id: 2, event: "values", data: '{"a":\n2}' },
        ]);
        assert.deepEqual(await outcome, { result: { a: 2 } });
        // After the end: a late publish is ignored; a new reader replays, a resume skips what it had.
        writer.publish(run, "values", "late");
        assert.deepEqual(
          (await collect(reader.read(run, 0))).map((e) => e.id),
          [1, 2],
        );
        assert.deepEqual(await reader.outcome(run), { result: { a: 2 } });
      }),
    );

    test(
      "a reader of an opened run that has published nothing waits; one reading past the end gets nothing",
      withLogs(async ({ writer, reader }) => {
        const run = randomUUID();
        await writer.open(run);
        const reading = collect(reader.read(run, -1));
        await new Promise((r) => setTimeout(r, 50));
        writer.publish(run, "custom", "1");
        writer.end(run, undefined);
        assert.deepEqual(
          (await reading).map((e) => e.data),
          ["1"],
        );
        assert.deepEqual(await collect(reader.read(run, 5)), []);
        assert.deepEqual(await reader.outcome(run), { result: undefined });
      }),
    );

    test(
      "a reader resuming past the last event of a live log returns when the log ends",
      withLogs(async ({ writer, reader }) => {
        const run = randomUUID();
        await writer.open(run);
        writer.publish(run, "values", "0");
        writer.publish(run, "values", "1");
        const reading = collect(reader.read(run, 10));
        await new Promise((r) => setTimeout(r, 50));
        writer.end(run, null);
        assert.deepEqual(await reading, []);
        assert.deepEqual(await collect(reader.read(run, 1e21)), []);
      }),
    );

    test(
      "an unknown run has no log; a dropped run releases its readers and is gone",
      withLogs(async ({ writer, reader }) => {
        assert.deepEqual(await collect(reader.read(randomUUID(), -1)), []);
        assert.equal(await reader.outcome(randomUUID()), null);
        const run = randomUUID();
        await writer.open(run);
        writer.publish(run, "values", "1");
        const reading = collect(reader.read(run, -1));
        const outcome = reader.outcome(run);
        await new Promise((r) => setTimeout(r, 50));
        writer.drop(run);
        assert.deepEqual(
          (await reading).map((e) => e.data),
          ["1"],
        );
        assert.equal(await outcome, null);
        assert.deepEqual(await collect(reader.read(run, -1)), []);
        // A reader that attaches (opens) just after the delete does not bring the log back to wait on.
        await reader.open(run);
        const late = await Promise.race([
          reader.outcome(run),
          new Promise((r) => setTimeout(() => r("still waiting"), 2000)),
        ]);
        assert.equal(late, null);
      }),
    );

    test(
      "a reader that aborts stops at once; ids stay dense over long logs (catch-up in pages)",
      withLogs(async ({ writer, reader }) => {
        const run = randomUUID();
        await writer.open(run);
        const stop = new AbortController();
        const waiting = collect(reader.read(run, -1, stop.signal));
        await new Promise((r) => setTimeout(r, 20));
        stop.abort();
        assert.deepEqual(await waiting, []);
        for (let i = 0; i < 1_200; i++) writer.publish(run, "custom", String(i));
        writer.end(run, "done");
        assert.deepEqual(await reader.outcome(run), { result: "done" });
        const all = await collect(reader.read(run, -1));
        assert.equal(all.length, 1_200);
        assert.ok(all.every((e, i) => e.id === i && e.data === String(i)));
      }),
    );
  });
}
