/**
 * The thread-centric protocol as the reference server speaks it: fixtures/protocol-clients/scenario.ts (a run
 * with a streamed tool call, a tool, a subgraph, a custom event and an interrupt, then its resume, over
 * SDK 1.15.0's `client.threads.stream()`) runs on Hangar, and every event, command answer, replay and
 * error answer is compared with what `@langchain/langgraph-api` 1.5.1 sent for the same requests,
 * recorded once in fixtures/protocol-clients/reference-events.json by scripts/protocol-reference/record.ts.
 * The recording was made over SSE; Hangar is driven over SSE and over the WebSocket, and both must
 * match it: the transports carry the same events and answers.
 *
 * Compared after `normalize` (ids by first appearance, timestamps) and after `DIFFERENCES`: each is a
 * place where Hangar follows the spec rather than the reference, as README's list of differences says.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { type Hangar, REPO_ROOT, startHangar } from "../helpers/server.js";
import {
  normalize,
  type Recording,
  runScenario,
  type WireEvent,
} from "./fixtures/protocol-clients/scenario.js";

const FIXTURE = join(REPO_ROOT, "test", "e2e", "fixtures", "protocol-clients");
const reference = JSON.parse(readFileSync(join(FIXTURE, "reference-events.json"), "utf8")) as Recording;

/**
 * Where Hangar differs (README's list of differences says why). Each maps Hangar's event (`ours`;
 * null: an event the reference does not send) or the reference's (`theirs`) to a common shape, so that
 * everything else is still compared.
 */
const DIFFERENCES: {
  why: string;
  ours?: (e: WireEvent) => WireEvent | null;
  theirs?: (e: WireEvent) => WireEvent;
}[] = [
  {
    why: "`message-start` carries the spec's `role`",
    ours: (e) => {
      if (e.method !== "messages" || e.params.data?.event !== "message-start") return e;
      const { role: _, ...data } = e.params.data;
      return withData(e, data);
    },
  },
  {
    why: "`updates` carry the spec's `{node, values}`",
    ours: (e) => {
      const data = e.params.data;
      if (e.method !== "updates" || !data || typeof data.node !== "string" || !("values" in data)) return e;
      return withData(e, data.values);
    },
  },
  {
    why: "`input.answered` is sent when a run resumes interrupts (the reference never sends it)",
    ours: (e) => (e.method === "input.answered" ? null : e),
  },
  {
    why: "message events carry no `run_id` (the LangChain run of the model call; not in the spec's types)",
    theirs: (e) => {
      if (e.method !== "messages" || !e.params.data || !("run_id" in e.params.data)) return e;
      const { run_id: _, ...data } = e.params.data;
      return withData(e, data);
    },
  },
  {
    why: "every `message-finish` has `reason`; the reference's for a message a node returned whole has `responseMetadata` instead",
    theirs: (e) => {
      const data = e.params.data;
      if (e.method !== "messages" || data?.event !== "message-finish" || "reason" in data) return e;
      const { responseMetadata: _, ...rest } = data;
      return withData(e, { ...rest, reason: "stop" });
    },
  },
  {
    why:
      "messages in state (values, updates, tasks, a tool's output) are as the graph's `stream` gives them; " +
      "the reference runs graphs through `streamEvents` v3, whose chat models store v1 content blocks and " +
      "whose ToolMessages keep their own ids, and trims `updates` messages: compared as type, id, text and tool calls",
    ours: (e) => (STATE_METHODS.has(e.method) ? withData(e, digestMessages(e.params.data)) : e),
    theirs: (e) => (STATE_METHODS.has(e.method) ? withData(e, digestMessages(e.params.data)) : e),
  },
  {
    why: "run metadata (in `tasks`) also names `langgraph_api_url`, as Hangar's REST runs' does",
    ours: (e) => {
      const metadata = e.params.data?.metadata;
      if (e.method !== "tasks" || !metadata) return e;
      const { langgraph_api_url: _, ...rest } = metadata;
      return withData(e, { ...e.params.data, metadata: sortedKeys(rest) });
    },
    // (Keys in one order on both sides: `normalize` numbers ids in the order it meets them.)
    theirs: (e) => {
      const metadata = e.params.data?.metadata;
      if (e.method !== "tasks" || !metadata) return e;
      return withData(e, { ...e.params.data, metadata: sortedKeys(metadata) });
    },
  },
];

const sortedKeys = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));

const withData = (e: WireEvent, data: unknown): WireEvent => ({ ...e, params: { ...e.params, data } });
const STATE_METHODS = new Set(["values", "updates", "tasks", "tools"]);

/**
 * LangChain messages (dicts with `type` and `content`, or the reference's `contentBlocks`) anywhere in a value, as what a client shows of
 * them: type, id (a ToolMessage's: its call's), text and tool calls.
 */
function digestMessages(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(digestMessages);
  if (value === null || typeof value !== "object") return value;
  const v = value as Record<string, any>;
  const content = v.content ?? v.contentBlocks;
  if (
    typeof v.type === "string" &&
    content !== undefined &&
    ["human", "ai", "tool", "system"].includes(v.type)
  ) {
    const text =
      typeof content === "string"
        ? content
        : (content as any[])
            .filter((b) => b?.type === "text")
            .map((b) => b.text)
            .join("");
    return {
      type: v.type,
      id: v.type === "tool" ? v.tool_call_id : v.id,
      text,
      tool_calls: (v.tool_calls ?? []).map((c: any) => ({ id: c.id, name: c.name, args: c.args })),
    };
  }
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, digestMessages(x)]));
}

const mapOurs = (event: WireEvent) =>
  DIFFERENCES.reduce<WireEvent | null>((e, d) => (e && d.ours ? d.ours(e) : e), event);

/** Hangar's seq → the reference's, from the whole subscription (Hangar-only events have none). */
function renumbering(events: WireEvent[]): Map<number, number> {
  const map = new Map<number, number>();
  for (const e of events) if (mapOurs(e)) map.set(e.seq, map.size + 1);
  return map;
}

/** Hangar's events as the reference's: mapped by DIFFERENCES, Hangar-only ones left out, renumbered. */
function asReference(events: WireEvent[], renumber: Map<number, number>): WireEvent[] {
  return events.flatMap((event) => {
    const e = mapOurs(event);
    return e && renumber.has(e.seq) ? [{ ...e, seq: renumber.get(e.seq)! }] : [];
  });
}

const referenceShape = (events: WireEvent[]) =>
  events.map((event) => DIFFERENCES.reduce((e, d) => (d.theirs ? d.theirs(e) : e), event));

/** Events as compared: method, namespace, node and data, in order (seq and event_id are compared apart). */
const shape = (events: WireEvent[]) =>
  events.map((e) => ({
    method: e.method,
    namespace: e.params.namespace,
    node: e.params.node,
    data: e.params.data,
  }));

let hangar: Hangar;
const recordings: Record<string, Recording> = {};

before(async () => {
  hangar = await startHangar({ config: join(FIXTURE, "langgraph.json") });
  recordings.sse = await runScenario(hangar.url);
  recordings.websocket = await runScenario(hangar.url, { transport: "websocket" });
});
after(async () => {
  await hangar?.stop();
});

for (const transport of ["sse", "websocket"]) {
  test(`${transport}: the events of a subscription to every channel equal the reference's, one by one`, () => {
    const recording = recordings[transport]!;
    const ours = normalize(shape(asReference(recording.events, renumbering(recording.events))));
    const theirs = normalize(shape(referenceShape(reference.events)));
    assert.equal(ours.length, theirs.length, "as many events as the reference");
    for (let i = 0; i < theirs.length; i++) {
      assert.deepEqual(ours[i], theirs[i], `event ${i + 1} (${theirs[i]!.method})`);
    }
  });

  test(`${transport}: events are numbered from 1 with no gap, and event_id is the seq`, () => {
    const recording = recordings[transport]!;
    assert.deepEqual(
      recording.events.map((e) => e.seq),
      recording.events.map((_, i) => i + 1),
    );
    for (const e of recording.events) assert.equal(e.event_id, String(e.seq));
  });

  test(`${transport}: the commands' answers equal the reference's`, () => {
    const recording = recordings[transport]!;
    assert.equal(recording.commands.length, reference.commands.length);
    const renumber = renumbering(recording.events);
    for (const [i, theirs] of reference.commands.entries()) {
      type Answer = { meta?: { applied_through_seq?: number }; result?: { values?: unknown } };
      const ours = structuredClone(recording.commands[i]!);
      const answer = ours.response as Answer;
      const expected = structuredClone(theirs.response) as Answer;
      // A run starts on a worker after run.start / input.respond are answered: Hangar's answer may be
      // applied through the event before the run's `running`, the reference's (which starts the run's
      // session first) is applied through that `running`.
      const applied = answer.meta?.applied_through_seq;
      const theirsApplied = expected.meta?.applied_through_seq;
      if (applied !== undefined && theirsApplied !== undefined) {
        const mapped = applied === 0 ? 0 : renumber.get(applied);
        assert.ok(
          mapped === theirsApplied || mapped === theirsApplied - 1,
          `${JSON.stringify(theirs.request)}: applied through ${mapped}, the reference ${theirsApplied}`,
        );
        answer.meta!.applied_through_seq = theirsApplied;
      }
      // The SDK numbers commands per connection (on a WebSocket its subscriptions take ids too): the
      // answer must carry the command's id, whichever it is.
      const request = ours.request as { id: number };
      assert.equal((answer as { id?: number }).id, request.id, "the answer carries the command's id");
      const theirsId = (theirs.request as { id: number }).id;
      request.id = theirsId;
      (answer as { id?: number }).id = theirsId;
      // state.get's messages: as in the events (DIFFERENCES).
      if (answer.result?.values) answer.result.values = digestMessages(answer.result.values);
      if (expected.result?.values) expected.result.values = digestMessages(expected.result.values);
      assert.deepEqual(
        normalize({ request: ours.request, status: ours.status, response: answer }),
        normalize({ request: theirs.request, status: theirs.status, response: expected }),
        `command ${i + 1}`,
      );
    }
  });

  test(`${transport}: a late reader's replays (whole, by namespace and depth, from since) equal the reference's`, () => {
    const recording = recordings[transport]!;
    const renumber = renumbering(recording.events);
    assert.equal(recording.replays.length, reference.replays.length);
    for (const [i, replay] of reference.replays.entries()) {
      const request = recording.replays[i]!.request as { since?: number };
      assert.deepEqual(
        request.since === undefined ? request : { ...request, since: renumber.get(request.since) },
        replay.request,
      );
      const ours = asReference(recording.replays[i]!.events, renumber);
      const theirs = referenceShape(replay.events);
      assert.deepEqual(
        ours.map((e) => e.seq),
        theirs.map((e) => e.seq),
        `replay of ${JSON.stringify(replay.request)}`,
      );
      assert.deepEqual(normalize(shape(ours)), normalize(shape(theirs)));
    }
  });

  test(`${transport}: bad commands are answered with the protocol's error shape, as the reference does`, () => {
    const recording = recordings[transport]!;
    for (const [i, theirs] of reference.errors.entries()) {
      const ours = recording.errors[i]!;
      assert.equal(ours.status, 200, `${JSON.stringify(theirs.request)}: HTTP 200`);
      const o = ours.response as { type: string; id: number; error: string };
      const t = theirs.response as { type: string; id: number; error: string };
      assert.deepEqual(
        { type: o.type, id: o.id, error: o.error },
        { type: t.type, id: t.id, error: t.error },
      );
    }
  });
}
