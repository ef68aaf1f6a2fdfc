/**
 * The storage port contract (test/helpers/storage-contract.ts), admission to the run queue (RunsRepo.admit): multitask strategies, threads created on the way.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import {
  checkpointIds,
  isKind,
  putCheckpoint,
  statuses,
  storageContract,
} from "../helpers/storage-contract.js";
import { admission, makeAssistant, ORG } from "../helpers/storage-records.js";

storageContract((withStorage) => {
  describe("admission", () => {
    test(
      "enqueue: creates the thread, queues runs in order, thread busy",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const t = randomUUID();
        const r1 = await s.runs.admit(ORG, admission(a, t, { metadata: { k: 1 } }));
        const r2 = await s.runs.admit(ORG, admission(a, t));
        assert.equal(r1.run.status, "pending");
        assert.deepEqual(r1.run.metadata, { k: 1 });
        assert.deepEqual(r2.runningToStop, []);
        const thread = await s.threads.get(ORG, t);
        assert.equal(thread?.status, "busy");
        assert.equal(thread?.metadata.graph_id, "agent");
        assert.equal(thread?.metadata.assistant_id, a.assistant_id);
        const runs = await s.runs.list(ORG, t, { limit: 10, offset: 0 });
        assert.deepEqual(
          runs.map((r) => r.run_id),
          [r2.run.run_id, r1.run.run_id],
        );
        assert.deepEqual(await s.runs.get(ORG, t, r1.run.run_id), r1.run);
        assert.equal(await s.runs.get("other-org", null, r1.run.run_id), null);
      }),
    );

    test(
      "if_not_exists=reject on a missing thread, and on another organization's: not found; create makes the organization's own",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        await assert.rejects(
          s.runs.admit(ORG, admission(a, randomUUID(), { if_not_exists: "reject" })),
          isKind("not_found"),
        );
        const t = randomUUID();
        await s.threads.create("org-b", { thread_id: t, metadata: { owner: "b" } }, "raise");
        await assert.rejects(
          s.runs.admit(ORG, admission(a, t, { if_not_exists: "reject" })),
          isKind("not_found"),
        );
        // Another organization's thread of this id does not exist here: the run makes ORG's own.
        const { run } = await s.runs.admit(ORG, admission(a, t));
        assert.equal((await s.threads.get(ORG, t))?.status, "busy");
        assert.deepEqual(
          await s.runs.list(ORG, t, { limit: 10, offset: 0 }).then((r) => r.map((x) => x.run_id)),
          [run.run_id],
        );
        const theirs = await s.threads.get("org-b", t);
        assert.deepEqual([theirs?.status, theirs?.metadata], ["idle", { owner: "b" }]);
        assert.deepEqual(await s.runs.list("org-b", t, { limit: 10, offset: 0 }), []);
      }),
    );

    test(
      "reject: conflict while a run is pending or running, accepted once the thread is idle",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const t = randomUUID();
        await s.runs.admit(ORG, admission(a, t));
        await assert.rejects(
          s.runs.admit(ORG, admission(a, t, { multitask_strategy: "reject" })),
          isKind("conflict"),
        );
        const { run } = await s.runs.claimNext();
        await assert.rejects(
          s.runs.admit(ORG, admission(a, t, { multitask_strategy: "reject" })),
          isKind("conflict"),
        );
        await s.runs.complete({ run_id: run!.run_id, status: "success", values: { x: 1 }, hasNext: false });
        const ok = await s.runs.admit(ORG, admission(a, t, { multitask_strategy: "reject" }));
        assert.equal(ok.run.status, "pending");
      }),
    );

    test(
      "interrupt: pending priors interrupted, the running one returned to stop",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const t = randomUUID();
        const first = await s.runs.admit(ORG, admission(a, t));
        await s.runs.claimNext();
        const second = await s.runs.admit(ORG, admission(a, t));
        const third = await s.runs.admit(ORG, admission(a, t, { multitask_strategy: "interrupt" }));
        assert.deepEqual(
          third.runningToStop.map((r) => r.run_id),
          [first.run.run_id],
        );
        assert.deepEqual(
          third.pendingSettled.map((r) => r.run_id),
          [second.run.run_id],
        );
        assert.equal((await s.runs.get(ORG, t, second.run.run_id))?.status, "interrupted");
        assert.equal((await s.runs.get(ORG, t, third.run.run_id))?.status, "pending");
      }),
    );

    test(
      "rollback: pending priors deleted with their checkpoints, the running one returned to stop",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const t = randomUUID();
        const first = await s.runs.admit(ORG, admission(a, t));
        await s.runs.claimNext();
        const second = await s.runs.admit(ORG, admission(a, t));
        await putCheckpoint(s, t, second.run.run_id, "cp-0002");
        await putCheckpoint(s, t, first.run.run_id, "cp-0001");
        const third = await s.runs.admit(ORG, admission(a, t, { multitask_strategy: "rollback" }));
        assert.deepEqual(
          third.runningToStop.map((r) => r.run_id),
          [first.run.run_id],
        );
        assert.deepEqual(
          third.pendingSettled.map((r) => r.run_id),
          [second.run.run_id],
        );
        assert.equal(await s.runs.get(ORG, t, second.run.run_id), null);
        assert.deepEqual(await checkpointIds(s, t), ["cp-0001"]);
      }),
    );

    for (const [strategy, expected] of [
      ["reject", { admitted: 1, statuses: ["pending"] }],
      ["enqueue", { admitted: 10, statuses: Array(10).fill("pending") }],
      ["interrupt", { admitted: 10, statuses: [...Array(9).fill("interrupted"), "pending"] }],
      ["rollback", { admitted: 10, statuses: ["pending"] }],
    ] as const)
      for (const existing of [false, true])
        test(
          `10 concurrent admissions on one ${existing ? "existing" : "new"} thread, ${strategy}: exactly the right outcome`,
          withStorage(async (s, fx) => {
            const a = await makeAssistant(s);
            const t = randomUUID();
            if (existing) await s.threads.create(ORG, { thread_id: t, metadata: {} }, "raise");
            const views = [s, await fx.another(), await fx.another()];
            const results = await Promise.allSettled(
              Array.from({ length: 10 }, (_, i) =>
                views[i % views.length].runs.admit(ORG, admission(a, t, { multitask_strategy: strategy })),
              ),
            );
            const admitted = results.filter((r) => r.status === "fulfilled");
            assert.equal(
              admitted.length,
              expected.admitted,
              JSON.stringify(results.filter((r) => r.status === "rejected")),
            );
            for (const r of results)
              if (r.status === "rejected") assert.ok(isKind("conflict")(r.reason), String(r.reason));
            assert.deepEqual(await statuses(s, t), [...expected.statuses]);
            assert.equal((await s.threads.get(ORG, t))?.status, "busy");
          }),
        );
  });
});
