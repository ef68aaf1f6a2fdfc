/**
 * The storage port contract (test/helpers/storage-contract.ts) for ids clients choose: a thread or an
 * assistant id is unique within its organization only. Two organizations use the same ids at once and
 * each sees, changes and deletes only its own records, checkpoints included (issue 32, item 14).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { CHECKPOINT_ORG_KEY, type Storage } from "../../src/storage/ports.js";
import { checkpointIds, cronInput, putCheckpoint, storageContract } from "../helpers/storage-contract.js";
import { admission } from "../helpers/storage-records.js";

const A = "org-a";
const B = "org-b";

const assistantInput = (assistantId: string, name: string) => ({
  assistant_id: assistantId,
  graph_id: "agent",
  name,
  description: null,
  config: {},
  context: {},
  metadata: { name },
});

/** The same assistant id and thread id in A and B, each with a run that ran and left a checkpoint. */
async function twins(s: Storage) {
  const assistantId = randomUUID();
  const threadId = randomUUID();
  const runs: Record<string, string> = {};
  for (const org of [A, B]) {
    const assistant = await s.assistants.create(org, assistantInput(assistantId, org), "raise");
    await s.threads.create(org, { thread_id: threadId, metadata: { owner: org } }, "raise");
    const { run } = await s.runs.admit(org, admission(assistant, threadId));
    runs[org] = run.run_id;
  }
  return { assistantId, threadId, runs };
}

/** Claims and completes every due run, each with a checkpoint of its thread in its organization. */
async function executeAll(s: Storage) {
  for (;;) {
    const claim = await s.runs.claimNext();
    if (!claim.run) return;
    const { run, org } = claim;
    await putCheckpoint(s, run.thread_id, run.run_id, `cp-${org}`, org);
    await s.runs.complete({
      run_id: run.run_id,
      status: "success",
      values: { org },
      interrupts: {},
      hasNext: false,
    });
  }
}

storageContract((withStorage) => {
  describe("ids per organization", () => {
    test(
      "the same thread and assistant id in two organizations: created apart, each sees its own",
      withStorage(async (s) => {
        const { assistantId, threadId, runs } = await twins(s);
        for (const org of [A, B]) {
          assert.equal((await s.assistants.get(org, assistantId))?.name, org);
          assert.deepEqual((await s.threads.get(org, threadId))?.metadata.owner, org);
          const listed = await s.runs.list(org, threadId, { limit: 10, offset: 0 });
          assert.deepEqual(
            listed.map((r) => r.run_id),
            [runs[org]],
          );
          assert.equal(await s.runs.get(org, threadId, runs[org === A ? B : A]), null);
          const found = await s.threads.search(org, {
            ids: [threadId],
            limit: 10,
            offset: 0,
            sort_order: "asc",
            sort_by: "created_at",
          });
          assert.deepEqual(
            found.items.map((t) => t.metadata.owner),
            [org],
          );
          assert.equal(await s.threads.count(org, {}), 1);
        }
        // "Already exists" is the organization's own record only.
        await assert.rejects(
          s.threads.create(A, { thread_id: threadId, metadata: {} }, "raise"),
          /already exists/,
        );
        const kept = await s.threads.create(B, { thread_id: threadId, metadata: {} }, "do_nothing");
        assert.equal(kept.metadata.owner, B);
      }),
    );

    test(
      "runs execute and checkpoint per organization; state, updates and deletes stay in theirs",
      withStorage(async (s) => {
        const { assistantId, threadId } = await twins(s);
        await executeAll(s);
        for (const org of [A, B]) {
          assert.deepEqual((await s.threads.get(org, threadId))?.values, { org });
          assert.deepEqual(await checkpointIds(s, threadId, org), [`cp-${org}`]);
          const latest = await s.checkpointer.getTuple({
            configurable: { [CHECKPOINT_ORG_KEY]: org, thread_id: threadId },
          });
          assert.deepEqual(latest?.checkpoint.channel_values, { n: `cp-${org}` });
        }
        await s.threads.patch(B, threadId, { b: true });
        await s.assistants.update(B, assistantId, { name: "b renamed" });
        assert.equal((await s.threads.get(A, threadId))?.metadata.b, undefined);
        assert.equal((await s.assistants.get(A, assistantId))?.name, A);
        assert.equal((await s.assistants.versions(A, assistantId, { limit: 10, offset: 0 })).length, 1);

        const copyId = randomUUID();
        await s.threads.copy(B, threadId, copyId);
        assert.deepEqual(await checkpointIds(s, copyId, B), [`cp-${B}`]);
        assert.equal(await s.threads.get(A, copyId), null);
        assert.deepEqual(await checkpointIds(s, copyId, A), []);

        assert.equal((await s.threads.delete(B, threadId)).deleted, true);
        assert.equal(await s.threads.get(B, threadId), null);
        assert.deepEqual(await checkpointIds(s, threadId, B), []);
        assert.deepEqual((await s.threads.get(A, threadId))?.values, { org: A });
        assert.deepEqual(await checkpointIds(s, threadId, A), [`cp-${A}`]);
        assert.equal((await s.runs.list(A, threadId, { limit: 10, offset: 0 })).length, 1);

        assert.equal((await s.assistants.delete(B, assistantId, { deleteThreads: true })).deleted, true);
        assert.equal((await s.assistants.get(A, assistantId))?.name, A);
        assert.equal((await s.assistants.versions(A, assistantId, { limit: 10, offset: 0 })).length, 1);
      }),
    );

    test(
      "a rollback deletes the run's checkpoints in its organization only",
      withStorage(async (s) => {
        const threadId = randomUUID();
        const runIds: Record<string, string> = {};
        for (const org of [A, B]) {
          const assistant = await s.assistants.create(org, assistantInput(randomUUID(), org), "raise");
          const { run } = await s.runs.admit(org, admission(assistant, threadId));
          runIds[org] = run.run_id;
          await putCheckpoint(s, threadId, run.run_id, "cp-1", org);
        }
        // The same run id cannot be in two organizations; the checkpoint ids are the same.
        await s.checkpointer.deleteRun(A, threadId, runIds[A]);
        assert.deepEqual(await checkpointIds(s, threadId, A), []);
        assert.deepEqual(await checkpointIds(s, threadId, B), ["cp-1"]);
      }),
    );

    test(
      "a TTL sweep of one organization's thread leaves the other's of the same id",
      withStorage(async (s) => {
        const threadId = randomUUID();
        await s.threads.create(
          A,
          { thread_id: threadId, metadata: {}, ttl: { strategy: "delete", minutes: 1 } },
          "raise",
        );
        await s.threads.create(B, { thread_id: threadId, metadata: {} }, "raise");
        await putCheckpoint(s, threadId, "r", "cp-1", B);
        const swept = await s.threads.sweepExpired(Date.now() + 2 * 60_000, 100);
        assert.deepEqual(swept.deleted, [{ org: A, thread_id: threadId }]);
        assert.equal(await s.threads.get(A, threadId), null);
        assert.ok(await s.threads.get(B, threadId));
        assert.deepEqual(await checkpointIds(s, threadId, B), ["cp-1"]);
      }),
    );

    test(
      "crons: another organization's thread or assistant of the id is not found; deletes stay apart",
      withStorage(async (s) => {
        const assistantId = randomUUID();
        const threadId = randomUUID();
        await s.assistants.create(A, assistantInput(assistantId, A), "raise");
        await s.threads.create(A, { thread_id: threadId, metadata: {} }, "raise");
        await assert.rejects(s.crons.create(B, cronInput(assistantId)), /Assistant .* not found/);
        await assert.rejects(s.crons.create(B, cronInput(assistantId, { thread_id: threadId })), /not found/);
        const cronA = await s.crons.create(A, cronInput(assistantId, { thread_id: threadId }));
        await s.assistants.create(B, assistantInput(assistantId, B), "raise");
        await s.threads.create(B, { thread_id: threadId, metadata: {} }, "raise");
        const cronB = await s.crons.create(B, cronInput(assistantId, { thread_id: threadId }));
        await s.threads.delete(B, threadId);
        assert.equal(await s.crons.get(B, cronB.cron_id), null);
        assert.ok(await s.crons.get(A, cronA.cron_id));
        const statelessB = await s.crons.create(B, cronInput(assistantId));
        await s.assistants.delete(B, assistantId, { deleteThreads: false });
        assert.equal(await s.crons.get(B, statelessB.cron_id), null);
        assert.ok(await s.crons.get(A, cronA.cron_id));
      }),
    );
  });
});
