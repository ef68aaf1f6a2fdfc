/**
 * The storage port contract (test/helpers/storage-contract.ts), assistantsRepo: versions, search, deletion with its threads and runs.
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
  describe("assistants", () => {
    test(
      "versions, setLatest, search and count with metadata containment",
      withStorage(async (s) => {
        const a = await makeAssistant(s, {
          team: "x",
          tags: ["a", "b"],
          nested: { k: 1, deep: { z: true } },
        });
        const b = await makeAssistant(s, { team: "y", tags: ["a"] });
        await assert.rejects(s.assistants.create(ORG, { ...a, metadata: {} }, "raise"), isKind("conflict"));
        assert.equal((await s.assistants.create(ORG, { ...a, metadata: {} }, "do_nothing")).version, 1);

        const v2 = await s.assistants.update(ORG, a.assistant_id, {
          name: "renamed",
          metadata: { extra: 1 },
        });
        assert.equal(v2?.version, 2);
        assert.equal(v2?.name, "renamed");
        assert.deepEqual(v2?.metadata, {
          team: "x",
          tags: ["a", "b"],
          nested: { k: 1, deep: { z: true } },
          extra: 1,
        });
        const versions = await s.assistants.versions(ORG, a.assistant_id, { limit: 10, offset: 0 });
        assert.deepEqual(
          versions.map((v) => v.version),
          [2, 1],
        );
        assert.deepEqual(
          (
            await s.assistants.versions(ORG, a.assistant_id, {
              metadata: { extra: 1 },
              limit: 10,
              offset: 0,
            })
          ).map((v) => v.version),
          [2],
        );
        const back = await s.assistants.setLatest(ORG, a.assistant_id, 1);
        assert.equal(back?.version, 1);
        assert.equal(back?.name, "agent");
        assert.equal((await s.assistants.get(ORG, a.assistant_id))?.name, "agent");
        assert.equal(await s.assistants.setLatest(ORG, a.assistant_id, 9), null);

        const ids = async (metadata: Record<string, unknown>) =>
          (
            await s.assistants.search(ORG, {
              metadata,
              limit: 10,
              offset: 0,
              sort_by: "created_at",
              sort_order: "asc",
            })
          ).items.map((x) => x.assistant_id);
        assert.deepEqual(await ids({ team: "x" }), [a.assistant_id]);
        assert.deepEqual(await ids({ nested: { k: 1 } }), [a.assistant_id]);
        assert.deepEqual(await ids({ nested: { deep: { z: true } } }), [a.assistant_id]);
        assert.deepEqual(await ids({ nested: {} }), [a.assistant_id]);
        assert.deepEqual(await ids({ tags: ["a"] }), [b.assistant_id], "arrays match only when equal");
        assert.equal((await ids({ tags: ["a", "b"] })).length, 1);
        assert.deepEqual(await ids({ team: null }), []);
        assert.equal(await s.assistants.count(ORG, { metadata: { tags: ["a"] } }), 1);
        assert.equal(await s.assistants.count(ORG, {}), 2);
        assert.equal(await s.assistants.count(ORG, { name: "AGE" }), 2);
        assert.equal(await s.assistants.count("org-b", {}), 0);

        const system = await s.assistants.ensureSystem({ ...a, assistant_id: randomUUID(), metadata: {} });
        assert.ok(
          await s.assistants.get("org-b", system.assistant_id),
          "system assistants are visible to all",
        );
        await assert.rejects(
          s.assistants.update("org-b", system.assistant_id, { name: "mine" }),
          isKind("conflict"),
        );
        await assert.rejects(s.assistants.setLatest("org-b", system.assistant_id, 1), isKind("conflict"));
        assert.equal((await s.assistants.update(ORG, system.assistant_id, { name: "ops" }))?.version, 2);
        assert.equal(
          (await s.assistants.delete("org-b", system.assistant_id, { deleteThreads: false })).deleted,
          false,
        );
        assert.equal(
          (await s.assistants.delete(ORG, a.assistant_id, { deleteThreads: false })).deleted,
          true,
        );
        assert.equal(await s.assistants.get(ORG, a.assistant_id), null);
      }),
    );

    test(
      "delete: with its threads (their runs and checkpoints), its queued runs elsewhere; running runs stay",
      withStorage(async (s) => {
        const [a, b, c] = [await makeAssistant(s), await makeAssistant(s), await makeAssistant(s)];
        const [t1, t2, t3] = [randomUUID(), randomUUID(), randomUUID()];
        const r1 = (await s.runs.admit(ORG, admission(a, t1))).run;
        assert.equal((await s.runs.claimNext()).run?.run_id, r1.run_id);
        await putCheckpoint(s, t1, r1.run_id, "1");
        const rB1 = (await s.runs.admit(ORG, admission(b, t2))).run;
        assert.equal((await s.runs.claimNext()).run?.run_id, rB1.run_id);
        const rA = (await s.runs.admit(ORG, admission(a, t2))).run; // queued behind rB1
        const rB2 = (await s.runs.admit(ORG, admission(b, t2))).run; // t2 is b's again
        const rC = (await s.runs.admit(ORG, admission(c, t3))).run;
        const elsewhere = randomUUID(); // another organization's thread naming the same assistant
        await s.threads.create(
          "org-b",
          { thread_id: elsewhere, metadata: { assistant_id: a.assistant_id } },
          "raise",
        );

        assert.deepEqual(await s.assistants.delete(ORG, a.assistant_id, { deleteThreads: true }), {
          deleted: true,
          runningRunIds: [r1.run_id],
          pendingRunIds: [rA.run_id],
        });
        assert.equal(await s.threads.get(ORG, t1), null, "its thread goes");
        assert.equal(await s.runs.get(ORG, null, r1.run_id), null, "with its runs");
        assert.deepEqual(await checkpointIds(s, t1), [], "and checkpoints");
        assert.ok(await s.threads.get("org-b", elsewhere), "other organizations' threads stay");
        assert.deepEqual(await statuses(s, t2), ["pending", "running"], "its queued run elsewhere goes");
        assert.equal((await s.threads.get(ORG, t2))?.status, "busy");

        assert.deepEqual(await s.assistants.delete(ORG, c.assistant_id, { deleteThreads: false }), {
          deleted: true,
          runningRunIds: [],
          pendingRunIds: [rC.run_id],
        });
        assert.equal((await s.threads.get(ORG, t3))?.status, "idle", "a thread left with nothing settles");

        assert.deepEqual(await s.assistants.delete(ORG, b.assistant_id, { deleteThreads: false }), {
          deleted: true,
          runningRunIds: [rB1.run_id],
          pendingRunIds: [rB2.run_id],
        });
        assert.deepEqual(await statuses(s, t2), ["running"], "an executing run keeps its row");
        assert.equal((await s.threads.get(ORG, t2))?.status, "busy");
        assert.equal(
          (await s.assistants.delete(ORG, b.assistant_id, { deleteThreads: true })).deleted,
          false,
        );
      }),
    );

    test(
      "search: names match as literal substrings; ties keep creation order both ways across pages",
      withStorage(async (s) => {
        const named = async (name: string) =>
          (
            await s.assistants.create(
              ORG,
              {
                assistant_id: randomUUID(),
                graph_id: "agent",
                name,
                description: null,
                config: {},
                context: {},
                metadata: {},
              },
              "raise",
            )
          ).assistant_id;
        const ids = [await named("Same"), await named("same"), await named("SAME")];
        const odd = [await named("50%_off\\x"), await named("500 off")];
        assert.equal(await s.assistants.count(ORG, { name: "0%_" }), 1, "% and _ are literal");
        assert.equal(await s.assistants.count(ORG, { name: "_" }), 1);
        assert.equal(await s.assistants.count(ORG, { name: "f\\" }), 1);
        assert.equal(await s.assistants.count(ORG, { name: "SAm" }), 3, "case-insensitive");
        assert.equal(await s.assistants.count(ORG, { name: "" }), 5);
        const page = async (sort_order: "asc" | "desc", offset: number) =>
          await s.assistants.search(ORG, {
            name: "same",
            sort_by: "graph_id",
            sort_order,
            limit: 2,
            offset,
          });
        for (const order of ["asc", "desc"] as const) {
          const all = [...(await page(order, 0)).items, ...(await page(order, 2)).items];
          assert.deepEqual(
            all.map((x) => x.assistant_id),
            order === "asc" ? ids : [...ids].reverse(),
          );
          assert.equal((await page(order, 2)).total, 3);
        }
        assert.equal(odd.length, 2);
      }),
    );
  });
});
