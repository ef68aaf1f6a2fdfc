/**
 * The SSE writer (src/http/sse.ts) in process: its framing with and without ids, the heartbeat comment
 * while idle, the end of the stream, a failing source, and a client that goes away.
 */
import assert from "node:assert/strict";
import { mock, test } from "node:test";
import { lastEventId, sseResponse } from "../../src/http/sse.js";
import type { RunEvent } from "../../src/streams/run-log.js";

const decoder = new TextDecoder();

async function* events(...list: RunEvent[]): AsyncGenerator<RunEvent> {
  yield* list;
}

/** A source that yields nothing until `release()`, then ends; `signal` is the one sseResponse gave it. */
function idleSource() {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const state: { signal?: AbortSignal; release: () => void } = { release: () => release() };
  const open = (signal: AbortSignal) => {
    state.signal = signal;
    return (async function* (): AsyncGenerator<RunEvent> {
      await Promise.race([released, new Promise((r) => signal.addEventListener("abort", r))]);
    })();
  };
  return { state, open };
}

test("frames each event as event/data lines, with ids only when asked, and ends the stream", async () => {
  const list: RunEvent[] = [
    { id: 0, event: "metadata", data: '{"run_id":"r"}' },
    { id: 1, event: "values", data: '{"a":1}' },
  ];
  const withIds = sseResponse(() => events(...list), {
    withIds: true,
    headers: { "content-location": "/x" },
  });
  assert.equal(withIds.headers.get("content-type"), "text/event-stream");
  assert.equal(withIds.headers.get("cache-control"), "no-cache");
  assert.equal(withIds.headers.get("content-location"), "/x");
  assert.equal(
    await withIds.text(),
    'event: metadata\ndata: {"run_id":"r"}\nid: 0\n\nevent: values\ndata: {"a":1}\nid: 1\n\n',
  );
  const stateless = sseResponse(() => events(...list), { withIds: false });
  assert.equal(
    await stateless.text(),
    'event: metadata\ndata: {"run_id":"r"}\n\nevent: values\ndata: {"a":1}\n\n',
  );
});

test("sends a heartbeat comment every 15 s while the source is idle, and none after the end", async () => {
  mock.timers.enable({ apis: ["setInterval"] });
  try {
    const { state, open } = idleSource();
    const reader = sseResponse(open, { withIds: true }).body!.getReader();
    await new Promise((r) => setImmediate(r)); // start() has run and armed the heartbeat
    mock.timers.tick(14_999);
    mock.timers.tick(1);
    assert.equal(decoder.decode((await reader.read()).value), ": heartbeat\n\n");
    mock.timers.tick(15_000);
    assert.equal(decoder.decode((await reader.read()).value), ": heartbeat\n\n");
    state.release();
    assert.equal((await reader.read()).done, true);
    mock.timers.tick(60_000); // the interval was cleared: enqueueing on a closed stream would throw
  } finally {
    mock.timers.reset();
  }
});

test("a client that goes away aborts the source and calls onDisconnect once; a finished stream does not", async () => {
  const { state, open } = idleSource();
  let disconnects = 0;
  const res = sseResponse(open, { withIds: false, onDisconnect: () => disconnects++ });
  const reader = res.body!.getReader();
  await new Promise((r) => setImmediate(r));
  assert.equal(state.signal?.aborted, false);
  await reader.cancel();
  assert.equal(state.signal?.aborted, true);
  assert.equal(disconnects, 1);

  let late = 0;
  const done = sseResponse(() => events({ id: 0, event: "end", data: "null" }), {
    withIds: false,
    onDisconnect: () => late++,
  });
  const doneReader = done.body!.getReader();
  while (!(await doneReader.read()).done);
  await doneReader.cancel();
  assert.equal(late, 0);
});

test("a source that fails errors the stream after what it sent", async () => {
  const failing = sseResponse(
    () =>
      (async function* (): AsyncGenerator<RunEvent> {
        yield { id: 0, event: "values", data: "1" };
        throw new Error("storage went away");
      })(),
    { withIds: false },
  );
  const reader = failing.body!.getReader();
  assert.equal(decoder.decode((await reader.read()).value), "event: values\ndata: 1\n\n");
  await assert.rejects(reader.read(), /storage went away/);
});

test("Last-Event-ID: an integer from -1 up, anything else means from the start", () => {
  assert.equal(lastEventId(undefined), -1);
  assert.equal(lastEventId(""), -1);
  assert.equal(lastEventId("  "), -1);
  assert.equal(lastEventId("7"), 7);
  assert.equal(lastEventId("-1"), -1);
  assert.equal(lastEventId("-2"), -1);
  assert.equal(lastEventId("1.5"), -1);
  assert.equal(lastEventId("abc"), -1);
});
