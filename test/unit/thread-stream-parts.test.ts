/** The pure parts of the SDK 1.15 streams: which events a mode keeps, and where a thread stream resumes. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { eventsOfModes, modeOfEvent } from "../../src/runtime/runs/stream-modes.js";
import { threadStreamStart } from "../../src/runtime/runs/thread-stream.js";

test("an event's mode: the name before `/` and `|`", () => {
  assert.equal(modeOfEvent("values"), "values");
  assert.equal(modeOfEvent("messages/partial"), "messages");
  assert.equal(modeOfEvent("updates|child:1"), "updates");
  assert.equal(modeOfEvent("messages/complete|a:1|b:2"), "messages");
});

test("a join stream's modes keep their events, the run's start and its error", () => {
  const keep = eventsOfModes(["updates", "messages-tuple"]);
  for (const e of ["updates", "updates|sub:1", "messages", "messages|sub:1", "metadata", "error"])
    assert.equal(keep(e), true, e);
  for (const e of ["values", "custom", "debug", "events"]) assert.equal(keep(e), false, e);
  assert.equal(eventsOfModes([])("anything"), true);
});

test("a thread stream's Last-Event-ID: after an event of a run, from the start, or now", () => {
  const run = "0f3c6f7e-4d3b-4f4e-9a9a-2f2f2f2f2f2f";
  assert.deepEqual(threadStreamStart(`${run}:12`), { from: "event", runId: run, after: 12 });
  assert.deepEqual(threadStreamStart(`${run.toUpperCase()}:done`), {
    from: "event",
    runId: run,
    after: "done",
  });
  assert.deepEqual(threadStreamStart("-"), { from: "start" });
  for (const other of [undefined, "", "12", `${run}:`, `${run}:-1`, `${run}:1e3`, "x".repeat(5000)])
    assert.deepEqual(threadStreamStart(other), { from: "now" }, String(other).slice(0, 40));
});
