/**
 * Protocol v2 scaled out: 2 API processes (`serve --no-workers`) + 2 workers on Postgres and Redis
 * (test/helpers/cluster.ts). A reader on one API process follows a run a worker executes; a reader
 * that moves to the other API process with `since` loses and repeats nothing.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Cluster, SKIP } from "../helpers/cluster.js";
import { ALL_CHANNELS, command, PROTOCOL_CONFIG, readEvents, rootEnd } from "../helpers/protocol.js";

describe("protocol v2: 2 API + 2 worker processes on Postgres and Redis", { skip: SKIP }, () => {
  const cluster = new Cluster({ config: PROTOCOL_CONFIG });
  before(async () => {
    await (await cluster.create()).up();
  });
  after(() => cluster.destroy());

  test("a reader on one API process sees a worker's run; a reconnect to the other resumes from since", async () => {
    const [api1, api2] = cluster.apis as [(typeof cluster.apis)[0], (typeof cluster.apis)[0]];
    const threadId = randomUUID();
    // The reader is attached before the run exists (the thread is created by run.start, on the other process).
    // How long after it was produced each event arrived: Redis wakes the reader, where the fallback
    // poll alone (every 2 s) would make the median about 1 s.
    const delays: number[] = [];
    const firstPart = readEvents(
      api1,
      threadId,
      { channels: ALL_CHANNELS },
      (e) => {
        delays.push(Date.now() - e.params.timestamp);
        return e.method === "custom" && e.params.data.payload.i === 20;
      },
      60_000,
    );
    await new Promise((r) => setTimeout(r, 300));
    const started = await command(api2, threadId, "run.start", {
      assistant_id: "chatter",
      input: { messages: [] },
      config: { configurable: { count: 60, delay_ms: 20 } },
    });
    assert.equal(started.body.type, "success", JSON.stringify(started.body));
    const first = await firstPart;
    assert.ok(first.length > 20, `live events on api1: ${first.length}`);
    const median = delays.sort((x, y) => x - y)[Math.floor(delays.length / 2)]!;
    assert.ok(median < 900, `events reached the reader ${median} ms after they were produced (median)`);
    const [row] = await cluster.query<{ worker_id: string }>("SELECT worker_id FROM runs WHERE run_id = $1", [
      started.body.result.run_id,
    ]);
    const pid = Number(row!.worker_id.split(":")[1]);
    assert.ok(
      cluster.workers.some((w) => w.process.pid === pid),
      "a worker process executed the run",
    );
    assert.ok(!cluster.apis.some((a) => a.process.pid === pid), "not an API process");

    const since = first.at(-1).seq;
    const rest = await readEvents(api2, threadId, { channels: ALL_CHANNELS, since }, rootEnd, 60_000);
    const seqs = [...first, ...rest].map((e) => e.seq);
    assert.deepEqual(
      seqs,
      Array.from({ length: seqs.length }, (_, i) => i + 1),
      "nothing lost, nothing repeated",
    );
    assert.equal(rest.at(-1).params.data.event, "completed");
    const whole = await readEvents(
      api1,
      threadId,
      { channels: ALL_CHANNELS },
      (e) => e.seq === seqs.length,
      30_000,
    );
    assert.deepEqual([...first, ...rest], whole);
  });
});
