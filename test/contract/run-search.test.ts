/**
 * `runs.search` (`POST /runs/search`, a Hangar extension) and the errors stored with failed runs, against
 * every adapter (test/helpers/adapters.ts).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import type { Run, RunSearchQuery, Storage } from "../../src/storage/ports.js";
import { ADAPTERS } from "../helpers/adapters.js";
import { admission, makeAssistant, ORG } from "../helpers/storage-records.js";

const page = { limit: 100, offset: 0 };
const ids = (runs: { run_id: string }[]) => runs.map((r) => r.run_id);

async function search(s: Storage, q: Partial<RunSearchQuery>, org = ORG) {
  return s.runs.search(org, { ...page, ...q });
}

/** Claims runs until `runId` is the one claimed (the others are left running). */
async function claim(s: Storage, runId: string): Promise<Run> {
  for (;;) {
    const { run } = await s.runs.claimNext();
    assert.ok(run, `${runId} was claimed`);
    if (run.run_id === runId) return run;
  }
}

for (const adapter of ADAPTERS) {
  describe(`run search: ${adapter.name}`, { skip: adapter.skip }, () => {
    test("every thread's runs, newest first, filtered by status, assistant, thread and metadata", async () => {
      const fx = await adapter.open();
      try {
        const s = fx.storage;
        const [a, b] = [await makeAssistant(s), await makeAssistant(s)];
        const [t1, t2] = [randomUUID(), randomUUID()];
        const r1 = (await s.runs.admit(ORG, admission(a, t1, { metadata: { tag: "x", n: 1 } }))).run;
        const r2 = (await s.runs.admit(ORG, admission(b, t2, { metadata: { tag: "y" } }))).run;
        const r3 = (await s.runs.admit(ORG, admission(a, t1, { metadata: { tag: "x", n: 3 } }))).run;
        // A stateless run: its temporary thread is no search's, its run is.
        const r4 = (
          await s.runs.admit(
            ORG,
            admission(a, randomUUID(), {
              stateless: true,
              kwargs: { ...admission(a, t1).kwargs, temporary: true },
            }),
          )
        ).run;
        // Another organization's run on its own thread never shows.
        await s.runs.admit("other-org", admission(a, randomUUID()));

        const all = await search(s, {});
        assert.deepEqual(ids(all.items), ids([r4, r3, r2, r1]));
        assert.equal(all.total, 4);
        assert.equal(all.items[0].thread_id, r4.thread_id);
        assert.deepEqual(
          all.items.map((r) => r.error),
          [null, null, null, null],
        );
        // The record is the run's, as a thread's run list returns it, plus `error`.
        const { error: _, ...record } = all.items[1];
        assert.deepEqual(record, (await s.runs.get(ORG, t1, r3.run_id))!);

        assert.deepEqual(ids((await search(s, { assistant_id: b.assistant_id })).items), [r2.run_id]);
        assert.deepEqual(ids((await search(s, { thread_id: t1 })).items), ids([r3, r1]));
        assert.deepEqual(ids((await search(s, { metadata: { tag: "x" } })).items), ids([r3, r1]));
        assert.deepEqual(ids((await search(s, { metadata: { tag: "x", n: 1 } })).items), [r1.run_id]);
        assert.deepEqual(ids((await search(s, { thread_id: t2, metadata: { tag: "x" } })).items), []);
        assert.deepEqual((await search(s, { assistant_id: randomUUID() })).total, 0);

        // Status: one, or any of several. t1's first run and r2 (t2) get claimed: running.
        await claim(s, r1.run_id);
        await claim(s, r2.run_id);
        assert.deepEqual(ids((await search(s, { status: ["running"] })).items), ids([r2, r1]));
        assert.deepEqual(ids((await search(s, { status: ["pending"] })).items), ids([r4, r3]));
        assert.deepEqual(
          ids((await search(s, { status: ["pending", "running"], assistant_id: a.assistant_id })).items),
          ids([r4, r3, r1]),
        );
        assert.equal((await search(s, { status: ["success", "error"] })).total, 0);

        // Pages: limit and offset, the total of all matches.
        const p1 = await search(s, { limit: 3, offset: 0 });
        const p2 = await search(s, { limit: 3, offset: 3 });
        assert.deepEqual([...ids(p1.items), ...ids(p2.items)], ids([r4, r3, r2, r1]));
        assert.deepEqual([p1.total, p2.total], [4, 4]);
        assert.deepEqual((await search(s, { offset: 10 })).items, []);

        // The other organization sees its run only.
        const other = await search(s, {}, "other-org");
        assert.equal(other.total, 1);
        assert.ok(!ids(all.items).includes(other.items[0].run_id));
        assert.equal((await search(s, {}, "nobody")).total, 0);
      } finally {
        await fx.close();
      }
    });

    test("a custom auth filter applies to the runs' threads' metadata", async () => {
      const fx = await adapter.open();
      try {
        const s = fx.storage;
        const a = await makeAssistant(s);
        const threadOf = async (metadata: Record<string, unknown>) => {
          const t = await s.threads.create(ORG, { thread_id: randomUUID(), metadata }, "raise");
          return (await s.runs.admit(ORG, admission(a, t.thread_id, { if_not_exists: "reject" }))).run;
        };
        const alice = await threadOf({ owner: "alice", teams: ["red", "blue"] });
        const bob = await threadOf({ owner: "bob", teams: ["red"] });
        const nobody = await threadOf({});
        // The run's own metadata is not its thread's: a run claiming an owner on a thread without one does
        // not pass the filter. (A thread the admission creates takes the run's metadata: that one would.)
        const forged = (
          await s.runs.admit(
            ORG,
            admission(a, nobody.thread_id, { if_not_exists: "reject", metadata: { owner: "alice" } }),
          )
        ).run;

        const as = async (auth: RunSearchQuery["auth"]) => ids((await search(s, { auth })).items);
        assert.deepEqual(await as({ owner: "alice" }), [alice.run_id]);
        assert.deepEqual(await as({ owner: { $eq: "bob" } }), [bob.run_id]);
        assert.deepEqual(await as({ teams: { $contains: "red" } }), ids([bob, alice]));
        assert.deepEqual(await as({ teams: { $contains: ["red", "blue"] } }), [alice.run_id]);
        assert.deepEqual(await as({ owner: "carol" }), []);
        const counted = await search(s, { auth: { owner: "alice" }, limit: 1 });
        assert.equal(counted.total, 1);
        // The run-metadata filter and the auth filter together.
        assert.deepEqual(
          ids((await search(s, { auth: { owner: "alice" }, metadata: { owner: "alice" } })).items),
          [],
        );
        assert.deepEqual(ids((await search(s, { metadata: { owner: "alice" } })).items), [forged.run_id]);
      } finally {
        await fx.close();
      }
    });

    test("a failed run keeps its error with the stack trace; the thread keeps type and message", async () => {
      const fx = await adapter.open();
      try {
        const s = fx.storage;
        const a = await makeAssistant(s);
        const threadId = randomUUID();
        const { run } = await s.runs.admit(ORG, admission(a, threadId));
        const claimed = await claim(s, run.run_id);
        const stack = `ValueError: boom\n    at node (/srv/graph.ts:1:1)\n${"    at frame\n".repeat(3000)}`;
        const done = await s.runs.complete({
          run_id: run.run_id,
          attempt: claimed.attempt,
          status: "error",
          error: { error: "ValueError", message: "boom" },
          stack,
          hasNext: false,
        });
        assert.equal(done?.status, "error");
        assert.ok(!("error" in done!), "the run record has no error field");
        assert.ok(!("error" in (await s.runs.get(ORG, threadId, run.run_id))!));

        const [found] = (await search(s, { status: ["error"] })).items;
        assert.equal(found.run_id, run.run_id);
        assert.equal(found.error?.error, "ValueError");
        assert.equal(found.error?.message, "boom");
        assert.equal(found.error?.stack, stack.slice(0, 16_384), "kept, up to 16 KiB");
        assert.deepEqual((await s.threads.get(ORG, threadId))?.error, {
          error: "ValueError",
          message: "boom",
        });

        // A success stores no error; a failure without a stack stores none either.
        const ok = (await s.runs.admit(ORG, admission(a, threadId))).run;
        await s.runs.complete({
          run_id: ok.run_id,
          attempt: (await claim(s, ok.run_id)).attempt,
          status: "success",
          hasNext: false,
        });
        const bare = (await s.runs.admit(ORG, admission(a, threadId))).run;
        await s.runs.complete({
          run_id: bare.run_id,
          attempt: (await claim(s, bare.run_id)).attempt,
          status: "error",
          error: { error: "Error", message: "no trace" },
          hasNext: false,
        });
        const [bareFound, okFound] = (await search(s, { thread_id: threadId, limit: 2 })).items;
        assert.deepEqual(bareFound.error, { error: "Error", message: "no trace" });
        assert.equal(okFound.error, null);

        // A run abandoned after its attempts (recovery) is failed with a stored error too.
        const lost = (await s.runs.admit(ORG, admission(a, randomUUID()))).run;
        await claim(s, lost.run_id);
        const swept = await s.runs.recoverInterrupted(1);
        assert.deepEqual(swept.failed, [lost.run_id]);
        const [abandoned] = (await search(s, { thread_id: lost.thread_id })).items;
        assert.deepEqual(abandoned.error, { error: "RunAbandoned", message: "Run failed after 1 attempts" });
      } finally {
        await fx.close();
      }
    });
  });
}
