/**
 * The storage port contract (test/helpers/storage-contract.ts), the checkpointer's contract in storage (CheckpointStore).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CHECKPOINT_ORG_KEY } from "../../src/storage/ports.js";
import { checkpoint, storageContract } from "../helpers/storage-contract.js";

/** The organization whose threads these checkpoints are. */
const ORG = "default";

storageContract((withStorage) => {
  describe("checkpointer", () => {
    test(
      "pending writes in (task_path, task_id, idx) order, special channels replace, list filter/before/limit",
      withStorage(async (s) => {
        const cp = s.checkpointer;
        const cfg = (id?: string) => ({
          configurable: {
            [CHECKPOINT_ORG_KEY]: ORG,
            thread_id: "t",
            checkpoint_ns: "",
            ...(id ? { checkpoint_id: id } : {}),
          },
          metadata: { run_id: "r1", user: "u" },
        });
        await cp.put(cfg(), checkpoint("cp-0001"), { source: "input", step: -1, parents: {} }, {});
        await cp.put(
          cfg("cp-0001"),
          checkpoint("cp-0002", { v: 2 }),
          { source: "loop", step: 0, parents: {} },
          {},
        );
        await cp.put(
          cfg("cp-0002"),
          checkpoint("cp-0003", { v: 3 }),
          { source: "loop", step: 1, parents: {} },
          {},
        );
        await cp.putWrites(
          cfg("cp-0003"),
          [
            ["b", 2],
            ["a", 1],
          ],
          "task-2",
          "~1",
        );
        await cp.putWrites(cfg("cp-0003"), [["c", 3]], "task-1", "~0");
        await cp.putWrites(cfg("cp-0003"), [["b", "again"]], "task-2", "~1"); // regular writes never overwrite
        await cp.putWrites(cfg("cp-0003"), [["__error__", "first"]], "task-3", "~2");
        await cp.putWrites(cfg("cp-0003"), [["__error__", "second"]], "task-3", "~2"); // special ones do

        const latest = await cp.getTuple({ configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "t" } });
        assert.equal(latest?.checkpoint.id, "cp-0003");
        assert.deepEqual(latest?.checkpoint.channel_values, { v: 3 });
        assert.deepEqual(latest?.parentConfig?.configurable?.checkpoint_id, "cp-0002");
        assert.deepEqual(latest?.pendingWrites, [
          ["task-1", "c", 3],
          ["task-2", "b", 2],
          ["task-2", "a", 1],
          ["task-3", "__error__", "second"],
        ]);
        const metadata = (latest?.metadata ?? {}) as Record<string, unknown>;
        assert.equal(metadata.run_id, "r1");
        assert.equal(metadata.user, "u");

        const ids = async (opts: Parameters<typeof cp.list>[1]) => {
          const out: string[] = [];
          for await (const t of cp.list(
            { configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "t" } },
            opts,
          ))
            out.push(t.checkpoint.id);
          return out;
        };
        assert.deepEqual(await ids({ filter: { source: "loop" } }), ["cp-0003", "cp-0002"]);
        assert.deepEqual(await ids({ filter: { step: 0, user: "u" } }), ["cp-0002"]);
        assert.deepEqual(await ids({ before: { configurable: { checkpoint_id: "cp-0003" } } }), [
          "cp-0002",
          "cp-0001",
        ]);
        assert.deepEqual(await ids({ limit: 1 }), ["cp-0003"]);
        assert.equal(
          await cp.getTuple({
            configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "t", checkpoint_id: "cp-9999" },
          }),
          undefined,
        );

        // A fenced run's checkpoints and writes are dropped.
        cp.fenceRun("r2");
        const fenced = {
          configurable: {
            [CHECKPOINT_ORG_KEY]: ORG,
            thread_id: "t",
            checkpoint_ns: "",
            checkpoint_id: "cp-0003",
          },
          metadata: { run_id: "r2" },
        };
        await cp.put(fenced, checkpoint("cp-0004"), { source: "loop", step: 2, parents: {} }, {});
        await cp.putWrites(fenced, [["z", 1]], "task-9");
        assert.equal(
          (await cp.getTuple({ configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "t" } }))?.checkpoint.id,
          "cp-0003",
        );
        assert.equal(
          (await cp.getTuple({ configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "t" } }))?.pendingWrites
            ?.length,
          4,
        );
        // LangGraph's deleteThread names no organization: refused (threads.delete deletes checkpoints).
        await assert.rejects(cp.deleteThread("t"), /organization/);
        assert.ok(await cp.getTuple({ configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "t" } }));
      }),
    );
  });
});
