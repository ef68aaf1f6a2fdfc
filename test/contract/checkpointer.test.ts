import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  Annotation,
  Command,
  END,
  INTERRUPT,
  interrupt,
  MessagesAnnotation,
  START,
  StateGraph,
} from "@langchain/langgraph";
import {
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointTuple,
  emptyCheckpoint,
  TASKS,
} from "@langchain/langgraph-checkpoint";
import type { CheckpointStore } from "../../src/storage/ports.js";
import { CHECKPOINT_ORG_KEY } from "../../src/storage/ports.js";
import { copyThreadCheckpoints, deleteThreadCheckpoints } from "../../src/storage/sql/checkpoint-rows.js";
import { SqlCheckpointer } from "../../src/storage/sql/checkpointer.js";
import { openPostgres, openSqlite, type SqlDatabase } from "../../src/storage/sql/database.js";
import { MIGRATIONS } from "../../src/storage/sql/migrations.js";
import { ADAPTERS, type Fixture, PG_URI, useFixtures } from "../helpers/adapters.js";

/** The organization whose threads these checkpoints are. */
const ORG = "default";

/** What the checkpointer offers beyond the port. */
type Saver = CheckpointStore & {
  hasCheckpoints(org: string, threadId: string): Promise<boolean>;
  isFenced(runId: string): boolean;
};

/** A connection of its own to the fixture's database. */
function ownDatabase(fx: Fixture): Promise<SqlDatabase> {
  return fx.adapter === "sqlite"
    ? openSqlite({ dataDir: fx.dataDir as string, synchronous: "normal" })
    : openPostgres({ uri: PG_URI as string, schema: fx.schema });
}

/** A checkpointer built here, with its own options and connection, on the fixture's database. */
async function ownSaver(fx: Fixture, options: { fenceCapacity?: number } = {}) {
  const database = await ownDatabase(fx);
  return { saver: new SqlCheckpointer(database, options) as Saver, database, close: () => database.close() };
}

/** Fixed-width ids so lexical order = numeric order. */
const cid = (n: number) => `cp-${String(n).padStart(4, "0")}`;

function makeCheckpoint(id: string, values: Record<string, unknown> = {}, v = 4): Checkpoint {
  const cp = emptyCheckpoint();
  cp.id = id;
  cp.v = v;
  cp.channel_values = values;
  cp.channel_versions = Object.fromEntries(Object.keys(values).map((k, i) => [k, i + 1]));
  return cp;
}

function meta(step: number, extra: Record<string, unknown> = {}): CheckpointMetadata {
  return { source: step < 0 ? "input" : "loop", step, parents: {}, ...extra } as CheckpointMetadata;
}

function cfg(threadId: string, opts: { ns?: string; id?: string; runId?: string } = {}): RunnableConfig {
  return {
    configurable: {
      [CHECKPOINT_ORG_KEY]: ORG,
      thread_id: threadId,
      ...(opts.ns !== undefined ? { checkpoint_ns: opts.ns } : {}),
      ...(opts.id !== undefined ? { checkpoint_id: opts.id } : {}),
    },
    ...(opts.runId !== undefined ? { metadata: { run_id: opts.runId } } : {}),
  };
}

/** Puts checkpoints 1..n on a thread as a parent chain; step i-1; run id from runOf. */
async function putChain(
  saver: CheckpointStore,
  threadId: string,
  n: number,
  runOf: (i: number) => string = () => "run-a",
  start = 1,
) {
  for (let i = start; i < start + n; i++) {
    await saver.put(
      cfg(threadId, { id: i > 1 ? cid(i - 1) : undefined, runId: runOf(i) }),
      makeCheckpoint(cid(i), { count: i }),
      meta(i - 2, { tag: i % 2 === 0 ? "even" : "odd" }),
      {},
    );
  }
}

async function collect<T = CheckpointTuple>(iter: AsyncIterable<T>) {
  const out: T[] = [];
  for await (const t of iter) out.push(t);
  return out;
}

const ids = (tuples: CheckpointTuple[]) => tuples.map((t) => t.checkpoint.id);

/** Stored metadata carries the run's keys (run_id, thread_id, ...) beyond the CheckpointMetadata type. */
const md = (t: { metadata?: unknown } | undefined) => t?.metadata as Record<string, unknown> | undefined;

for (const adapter of ADAPTERS) {
  describe(`checkpointer: ${adapter.name}`, { skip: adapter.skip }, () => {
    const open = useFixtures(adapter);
    /** A fresh database; `saver` is its storage's checkpointer. */
    const fresh = async () => {
      const fx = await open();
      return { fx, saver: fx.storage.checkpointer as Saver };
    };

    if (adapter.name === "postgres") {
      test("postgres only: migrations create both tables and the run index; opening again changes nothing", async () => {
        const { fx } = await fresh();
        const columns = async (table: string) =>
          (
            await fx.sql<{ column_name: string }>(
              "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
              [fx.schema, table],
            )
          ).map((r) => r.column_name);
        assert.deepEqual(await columns("checkpoints"), [
          "thread_id",
          "checkpoint_ns",
          "checkpoint_id",
          "parent_checkpoint_id",
          "run_id",
          "type",
          "checkpoint",
          "metadata",
          "org_id", // added by 0006_org_scoped_ids (Postgres appends a column)
        ]);
        const writeColumns = await columns("checkpoint_writes");
        for (const c of ["task_path", "run_id"]) assert.ok(writeColumns.includes(c), writeColumns.join());
        const [index] = await fx.sql<{ indexdef: string }>(
          "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'checkpoints_thread_run'",
          [fx.schema],
        );
        assert.match(index?.indexdef ?? "", /\(org_id, thread_id, run_id\)$/);
        // A second process opening the schema finds nothing left to migrate.
        await fx.another();
        const applied = await fx.sql<{ name: string }>("SELECT name FROM hangar_migration ORDER BY name");
        assert.deepEqual(
          applied.map((r) => r.name),
          MIGRATIONS.map((m) => m.name),
        );
      });
    } else {
      test("sqlite only: migrations create both tables and the run index; opening again changes nothing", async () => {
        const { fx } = await fresh();
        const names = (
          await fx.sql<{ name: string }>("SELECT name FROM sqlite_master WHERE type IN ('table','index')")
        ).map((r) => r.name);
        for (const name of ["checkpoints", "checkpoint_writes", "checkpoints_thread_run"])
          assert.ok(names.includes(name), name);
        // A run's writes are found within its thread's primary-key range: no index of writes by run.
        assert.ok(!names.includes("checkpoint_writes_run"));
        const indexColumns = async (index: string) =>
          (await fx.sql<{ name: string }>(`PRAGMA index_info(${index})`)).map((r) => r.name);
        assert.deepEqual(await indexColumns("checkpoints_thread_run"), ["org_id", "thread_id", "run_id"]);
        const writeColumns = (await fx.sql<{ name: string }>("PRAGMA table_info(checkpoint_writes)")).map(
          (r) => r.name,
        );
        for (const c of ["task_path", "run_id"]) assert.ok(writeColumns.includes(c), writeColumns.join());
        const reopened = await fx.reopen();
        assert.equal(await (reopened.checkpointer as Saver).hasCheckpoints(ORG, "none"), false);
        const applied = await fx.sql<{ name: string }>("SELECT name FROM hangar_migration ORDER BY name");
        assert.deepEqual(
          applied.map((r) => r.name),
          MIGRATIONS.map((m) => m.name),
        );
      });
    }

    describe("put / getTuple", () => {
      test("round trip: latest without checkpoint_id, exact with it, undefined when absent", async () => {
        const { saver } = await fresh();
        const values = {
          messages: [
            new HumanMessage({ content: "hi", id: "m1" }),
            new AIMessage({ content: "yo", id: "m2" }),
          ],
          tags: new Set(["a", "b"]),
          nested: { n: 1, list: [1, "two", null] },
        };
        const returned = await saver.put(cfg("t1"), makeCheckpoint(cid(1), values), meta(-1), {});
        assert.deepEqual(returned, {
          configurable: {
            [CHECKPOINT_ORG_KEY]: ORG,
            thread_id: "t1",
            checkpoint_ns: "",
            checkpoint_id: cid(1),
          },
        });
        await saver.put(cfg("t1", { id: cid(1) }), makeCheckpoint(cid(2), { count: 2 }), meta(0), {});

        const latest = await saver.getTuple(cfg("t1"));
        assert.equal(latest?.checkpoint.id, cid(2));
        assert.deepEqual(latest?.checkpoint.channel_values, { count: 2 });
        assert.deepEqual(latest?.config, {
          configurable: {
            [CHECKPOINT_ORG_KEY]: ORG,
            thread_id: "t1",
            checkpoint_ns: "",
            checkpoint_id: cid(2),
          },
        });
        assert.deepEqual(latest?.parentConfig, {
          configurable: {
            [CHECKPOINT_ORG_KEY]: ORG,
            thread_id: "t1",
            checkpoint_ns: "",
            checkpoint_id: cid(1),
          },
        });
        assert.deepEqual(latest?.pendingWrites, []);

        const first = await saver.getTuple(cfg("t1", { id: cid(1) }));
        assert.equal(first?.checkpoint.id, cid(1));
        assert.equal(first?.parentConfig, undefined);
        const cv = first!.checkpoint.channel_values as typeof values;
        assert.ok(cv.messages[0] instanceof HumanMessage);
        assert.ok(cv.messages[1] instanceof AIMessage);
        assert.equal(cv.messages[1].content, "yo");
        assert.deepEqual(cv.tags, new Set(["a", "b"]));
        assert.deepEqual(cv.nested, { n: 1, list: [1, "two", null] });
        assert.equal(first?.checkpoint.v, 4);

        // legacy alias thread_ts is honoured like checkpoint_id
        const legacy = await saver.getTuple({
          configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "t1", thread_ts: cid(1) },
        });
        assert.equal(legacy?.checkpoint.id, cid(1));

        assert.equal(await saver.getTuple(cfg("t1", { id: cid(99) })), undefined);
        assert.equal(await saver.getTuple(cfg("nope")), undefined);
        assert.equal(await saver.getTuple({ configurable: {} }), undefined);
      });

      test("checkpoint_ns isolates namespaces", async () => {
        const { saver } = await fresh();
        await saver.put(cfg("t"), makeCheckpoint(cid(1), { root: true }), meta(-1), {});
        await saver.put(cfg("t", { ns: "child:abc" }), makeCheckpoint(cid(2), { child: true }), meta(-1), {});
        assert.equal((await saver.getTuple(cfg("t")))?.checkpoint.id, cid(1));
        const child = await saver.getTuple(cfg("t", { ns: "child:abc" }));
        assert.equal(child?.checkpoint.id, cid(2));
        assert.equal(child?.config.configurable?.checkpoint_ns, "child:abc");
        assert.equal(await saver.getTuple(cfg("t", { ns: "child:abc", id: cid(1) })), undefined);
      });

      test("metadata: run identity from config is merged in, checkpoint keys win, non-scalars dropped", async () => {
        const { saver, fx } = await fresh();
        await saver.put(
          {
            configurable: {
              [CHECKPOINT_ORG_KEY]: ORG,
              thread_id: "t",
              checkpoint_ns: "",
              assistant_id: "asst",
              user_setting: 7,
              __pregel_internal: "x",
              some_object: { a: 1 },
            },
            metadata: {
              run_id: "r1",
              thread_id: "t",
              graph_id: "g",
              source: "should-not-win",
              checkpoint_id: "not-metadata",
              langgraph_node: "n",
              blob: { nested: true },
            },
          },
          makeCheckpoint(cid(1)),
          meta(-1, { custom: "own" }),
          {},
        );
        const t = await saver.getTuple(cfg("t"));
        assert.deepEqual(t?.metadata, {
          source: "input",
          step: -1,
          parents: {},
          custom: "own",
          run_id: "r1",
          thread_id: "t",
          graph_id: "g",
          assistant_id: "asst",
          user_setting: 7,
        });
        const rows = await fx.sql("SELECT run_id, type FROM checkpoints");
        assert.deepEqual(rows, [{ run_id: "r1", type: "json" }]);
      });

      test("put without thread_id throws; a re-put of the same id replaces it", async () => {
        const { saver } = await fresh();
        await assert.rejects(
          saver.put({ configurable: {} }, makeCheckpoint(cid(1)), meta(-1), {}),
          /thread_id/,
        );
        await saver.put(cfg("t"), makeCheckpoint(cid(1), { v: "old" }), meta(-1), {});
        await saver.put(cfg("t"), makeCheckpoint(cid(1), { v: "new" }), meta(0), {});
        const t = await saver.getTuple(cfg("t"));
        assert.deepEqual(t?.checkpoint.channel_values, { v: "new" });
        assert.equal(t?.metadata?.step, 0);
      });
    });

    describe("list", () => {
      test("newest first, with before / limit / filter / checkpoint_ns", async () => {
        const { saver } = await fresh();
        await putChain(saver, "t", 5);
        await putChain(saver, "other", 2);
        await saver.put(cfg("t", { ns: "sub:1" }), makeCheckpoint(cid(9)), meta(0), {});

        const root = { configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "t", checkpoint_ns: "" } };
        assert.deepEqual(ids(await collect(saver.list(root))), [cid(5), cid(4), cid(3), cid(2), cid(1)]);
        assert.deepEqual(ids(await collect(saver.list(root, { limit: 2 }))), [cid(5), cid(4)]);
        assert.deepEqual(ids(await collect(saver.list(root, { limit: 0 }))), []);
        assert.deepEqual(ids(await collect(saver.list(root, { before: cfg("t", { id: cid(4) }) }))), [
          cid(3),
          cid(2),
          cid(1),
        ]);
        assert.deepEqual(
          ids(await collect(saver.list(root, { before: cfg("t", { id: cid(4) }), limit: 1 }))),
          [cid(3)],
        );
        assert.deepEqual(ids(await collect(saver.list(root, { filter: { tag: "even" } }))), [cid(4), cid(2)]);
        assert.deepEqual(ids(await collect(saver.list(root, { filter: { step: 1 } }))), [cid(3)]);
        assert.deepEqual(ids(await collect(saver.list(root, { filter: { step: "1" } }))), []);
        assert.deepEqual(ids(await collect(saver.list(root, { filter: { source: "input", tag: "odd" } }))), [
          cid(1),
        ]);
        assert.deepEqual(ids(await collect(saver.list(root, { filter: { parents: {} } }))).length, 5);
        assert.deepEqual(ids(await collect(saver.list(root, { filter: { run_id: "run-a", tag: "x" } }))), []);
        assert.deepEqual(ids(await collect(saver.list(root, { filter: { missing: null } }))), []);
        // checkpoint_id in the config selects that one checkpoint
        assert.deepEqual(ids(await collect(saver.list(cfg("t", { ns: "", id: cid(2) })))), [cid(2)]);
        // no checkpoint_ns: every namespace of the thread
        assert.deepEqual(ids(await collect(saver.list(cfg("t")))), [
          cid(9),
          cid(5),
          cid(4),
          cid(3),
          cid(2),
          cid(1),
        ]);
        assert.deepEqual(ids(await collect(saver.list(cfg("t", { ns: "sub:1" })))), [cid(9)]);
        // no thread: every thread
        assert.equal((await collect(saver.list({ configurable: { [CHECKPOINT_ORG_KEY]: ORG } }))).length, 8);

        const [top] = await collect(saver.list(root, { limit: 1 }));
        assert.deepEqual(top.parentConfig, {
          configurable: {
            [CHECKPOINT_ORG_KEY]: ORG,
            thread_id: "t",
            checkpoint_ns: "",
            checkpoint_id: cid(4),
          },
        });
        assert.equal(md(top)?.run_id, "run-a");
      });

      test("pages through long histories in order, across threads too", async () => {
        const { saver } = await fresh();
        await putChain(saver, "long", 230);
        await putChain(saver, "long2", 30, undefined, 231);
        const all = ids(await collect(saver.list(cfg("long", { ns: "" }))));
        assert.equal(all.length, 230);
        assert.equal(all[0], cid(230));
        assert.equal(all[229], cid(1));
        assert.deepEqual(all, [...all].sort().reverse());
        assert.equal((await collect(saver.list(cfg("long"), { limit: 150 }))).length, 150);
        const odd = ids(await collect(saver.list(cfg("long"), { filter: { tag: "odd" }, limit: 120 })));
        assert.equal(odd.length, 115);
        const everything = ids(await collect(saver.list({ configurable: { [CHECKPOINT_ORG_KEY]: ORG } })));
        assert.equal(everything.length, 260);
        assert.equal(new Set(everything).size, 260);
        assert.equal(everything[0], cid(260));
      });
    });

    describe("putWrites / pendingWrites", () => {
      test("regular writes insert-or-ignore, special channels upsert, ordered by (task_path, task_id, idx)", async () => {
        const { saver } = await fresh();
        await saver.put(cfg("t"), makeCheckpoint(cid(1)), meta(-1), {});
        const at = cfg("t", { id: cid(1), ns: "" });
        await saver.putWrites(
          at,
          [
            ["a", 1],
            ["b", { x: [1, 2] }],
          ],
          "task-2",
          "~p, node2",
        );
        await saver.putWrites(at, [["a", "ignored"]], "task-2", "~p, node2");
        await saver.putWrites(at, [["c", "first"]], "task-1", "~p, node1");
        await saver.putWrites(at, [[INTERRUPT, [{ value: "q1" }]]], "task-1", "~p, node1");
        await saver.putWrites(at, [[INTERRUPT, [{ value: "q2" }]]], "task-1", "~p, node1");
        await saver.putWrites(at, [["input", "no path"]], "task-0");
        // task_path sorts before task_id
        await saver.putWrites(at, [["late", 1]], "task-0b", "~p, node3");

        const t = await saver.getTuple(cfg("t"));
        assert.deepEqual(t?.pendingWrites, [
          ["task-0", "input", "no path"],
          ["task-1", INTERRUPT, [{ value: "q2" }]],
          ["task-1", "c", "first"],
          ["task-2", "a", 1],
          ["task-2", "b", { x: [1, 2] }],
          ["task-0b", "late", 1],
        ]);
        const listed = await collect(saver.list(cfg("t")));
        assert.deepEqual(listed[0].pendingWrites, t?.pendingWrites);
      });

      test("one batch: a special channel written twice keeps its last value; large batches store whole", async () => {
        const { saver, fx } = await fresh();
        await saver.put(cfg("t"), makeCheckpoint(cid(1)), meta(-1), {});
        const at = cfg("t", { id: cid(1), runId: "r1" });
        await saver.putWrites(
          at,
          [
            [INTERRUPT, "first"],
            ["a", 1],
            [INTERRUPT, "second"],
          ],
          "task-1",
        );
        assert.deepEqual((await saver.getTuple(cfg("t")))?.pendingWrites, [
          ["task-1", INTERRUPT, "second"],
          ["task-1", "a", 1],
        ]);
        // more writes than one statement takes (a fan-out): all stored, in order, in one transaction
        const many = Array.from({ length: 1234 }, (_, i): [string, unknown] => [`c${i}`, i]);
        await saver.putWrites(at, many, "task-2");
        const writes = (await saver.getTuple(cfg("t")))?.pendingWrites ?? [];
        assert.equal(writes.length, 2 + many.length);
        assert.deepEqual(
          writes.slice(2),
          many.map(([channel, value]) => ["task-2", channel, value]),
        );
        const [row] = await fx.sql<{ n: number }>(
          "SELECT CAST(count(*) AS INTEGER) AS n FROM checkpoint_writes WHERE run_id = 'r1' AND task_path = ''",
        );
        assert.equal(row.n, 2 + many.length);
        // a batch repeated: regular writes keep their first value, special ones take the new one
        await saver.putWrites(
          at,
          [
            [INTERRUPT, "third"],
            ["a", 2],
          ],
          "task-1",
        );
        assert.deepEqual((await saver.getTuple(cfg("t")))?.pendingWrites?.slice(0, 2), [
          ["task-1", INTERRUPT, "third"],
          ["task-1", "a", 1],
        ]);
      });

      test("putWrites needs thread_id and checkpoint_id; writes on a missing checkpoint are harmless", async () => {
        const { saver } = await fresh();
        await assert.rejects(saver.putWrites(cfg("t"), [["a", 1]], "task"), /checkpoint_id/);
        await assert.rejects(
          saver.putWrites({ configurable: { checkpoint_id: "x" } }, [["a", 1]], "task"),
          /thread_id/,
        );
        await saver.putWrites(cfg("t", { id: cid(7) }), [["a", 1]], "task");
        assert.equal(await saver.getTuple(cfg("t")), undefined);
      });

      test("checkpoint format < 4 gets the parent's pending sends in the TASKS channel", async () => {
        const { saver } = await fresh();
        await saver.put(cfg("t"), makeCheckpoint(cid(1), { x: 1 }), meta(-1), {});
        await saver.putWrites(
          cfg("t", { id: cid(1) }),
          [
            [TASKS, { node: "worker", args: { n: 1 } }],
            [TASKS, { node: "worker", args: { n: 2 } }],
            ["x", 2],
          ],
          "task-a",
        );
        const old = makeCheckpoint(cid(2), { x: 2 }, 3);
        old.channel_versions = { x: 5, y: 3 };
        await saver.put(cfg("t", { id: cid(1) }), old, meta(0), {});
        const t = await saver.getTuple(cfg("t"));
        assert.deepEqual(t?.checkpoint.channel_values[TASKS], [
          { node: "worker", args: { n: 1 } },
          { node: "worker", args: { n: 2 } },
        ]);
        assert.equal(t?.checkpoint.channel_versions[TASKS], 5);

        // v4 checkpoints are returned as stored
        await saver.put(cfg("t", { id: cid(2) }), makeCheckpoint(cid(3), { x: 3 }), meta(1), {});
        const v4 = await saver.getTuple(cfg("t"));
        assert.equal(TASKS in v4!.checkpoint.channel_values, false);
      });
    });

    describe("server operations", () => {
      test("deleteThreadCheckpoints removes one thread's checkpoints and writes only; deleteThread is refused", async () => {
        const { saver, fx } = await fresh();
        await putChain(saver, "a", 3);
        await putChain(saver, "b", 2);
        await saver.putWrites(cfg("a", { id: cid(3) }), [["x", 1]], "task");
        await saver.putWrites(cfg("b", { id: cid(2) }), [["x", 1]], "task");
        assert.equal(await saver.hasCheckpoints(ORG, "a"), true);
        await assert.rejects(saver.deleteThread("a"), /organization/);
        const own = await ownSaver(fx);
        await own.database.transaction((tx) => deleteThreadCheckpoints(tx, ORG, ["a"]));
        await own.close();
        assert.equal(await saver.hasCheckpoints(ORG, "a"), false);
        assert.equal(await saver.getTuple(cfg("a")), undefined);
        const [writes] = await fx.sql<{ n: number }>(
          "SELECT CAST(count(*) AS INTEGER) AS n FROM checkpoint_writes WHERE thread_id = 'a'",
        );
        assert.equal(writes.n, 0);
        assert.equal(await saver.hasCheckpoints(ORG, "b"), true);
        assert.deepEqual((await saver.getTuple(cfg("b")))?.pendingWrites, [["task", "x", 1]]);
        assert.equal(await saver.hasCheckpoints(ORG, "never"), false);
      });

      test("deleteRun removes that run's checkpoints, their writes and its writes elsewhere, then fences it", async () => {
        const { saver, fx } = await fresh();
        await putChain(saver, "t", 5, (i) => (i <= 3 ? "r1" : "r2"));
        await putChain(saver, "other", 5, (i) => (i <= 3 ? "r1" : "r2"));
        // r1's writes on its own checkpoint, r2's writes on r1's last checkpoint (a resumed run does this)
        await saver.putWrites(cfg("t", { id: cid(3), runId: "r1" }), [[INTERRUPT, "q"]], "task-1");
        await saver.putWrites(cfg("t", { id: cid(3), runId: "r2" }), [["answer", 42]], "task-2");
        await saver.putWrites(cfg("t", { id: cid(5), runId: "r2" }), [["y", 1]], "task-3");

        await saver.deleteRun(ORG, "t", "r2");
        assert.deepEqual(ids(await collect(saver.list(cfg("t")))), [cid(3), cid(2), cid(1)]);
        const head = await saver.getTuple(cfg("t"));
        assert.deepEqual(head?.pendingWrites, [["task-1", INTERRUPT, "q"]]);
        const [writes] = await fx.sql<{ n: number }>(
          "SELECT CAST(count(*) AS INTEGER) AS n FROM checkpoint_writes WHERE thread_id = 't' AND checkpoint_id = $1",
          [cid(5)],
        );
        assert.equal(writes.n, 0);
        // other threads keep their r2 checkpoints
        assert.equal((await collect(saver.list(cfg("other")))).length, 5);
        // the run is fenced: a late checkpoint from it is dropped
        assert.equal(saver.isFenced("r2"), true);
        await saver.put(cfg("t", { id: cid(3), runId: "r2" }), makeCheckpoint(cid(6)), meta(3), {});
        assert.equal((await saver.getTuple(cfg("t")))?.checkpoint.id, cid(3));
      });

      test("copyThread copies checkpoints and writes, rewriting metadata.thread_id", async () => {
        const { saver, fx } = await fresh();
        await saver.put(
          {
            configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "src" },
            metadata: { run_id: "r1", thread_id: "src" },
          },
          makeCheckpoint(cid(1), { v: 1 }),
          meta(-1),
          {},
        );
        await saver.put(
          cfg("src", { id: cid(1), runId: "r1" }),
          makeCheckpoint(cid(2), { v: 2 }),
          meta(0),
          {},
        );
        await saver.put(cfg("src", { ns: "child:1" }), makeCheckpoint(cid(3), { c: 1 }), meta(0), {});
        await saver.putWrites(cfg("src", { id: cid(2), runId: "r1" }), [["w", "x"]], "task", "~p");
        // the target's previous contents are replaced
        await putChain(saver, "dst", 4);

        await saver.copyThread(ORG, "src", "dst");
        const copied = await collect(saver.list(cfg("dst")));
        assert.deepEqual(ids(copied), [cid(3), cid(2), cid(1)]);
        const first = copied.find((t) => t.checkpoint.id === cid(1))!;
        assert.equal(md(first)?.thread_id, "dst");
        assert.equal(md(first)?.run_id, "r1");
        assert.equal(first.metadata?.step, -1);
        const second = copied.find((t) => t.checkpoint.id === cid(2))!;
        assert.equal(md(second)?.thread_id, "dst", "configurable.thread_id is folded into metadata too");
        assert.deepEqual(second.checkpoint.channel_values, { v: 2 });
        assert.deepEqual(second.pendingWrites, [["task", "w", "x"]]);
        assert.deepEqual(second.parentConfig, {
          configurable: {
            [CHECKPOINT_ORG_KEY]: ORG,
            thread_id: "dst",
            checkpoint_ns: "",
            checkpoint_id: cid(1),
          },
        });
        assert.equal((await saver.getTuple(cfg("dst", { ns: "child:1" })))?.checkpoint.id, cid(3));
        // source untouched
        const src = await saver.getTuple(cfg("src", { id: cid(1) }));
        assert.equal(md(src)?.thread_id, "src");
        // metadata without thread_id (rows not written by put) is copied unchanged
        await fx.sql(
          "INSERT INTO checkpoints (org_id, thread_id, checkpoint_ns, checkpoint_id, type, checkpoint, metadata) SELECT org_id, 'raw', checkpoint_ns, checkpoint_id, type, checkpoint, $1 FROM checkpoints WHERE thread_id = 'src' AND checkpoint_id = $2",
          [Buffer.from(JSON.stringify({ source: "loop", step: 5, parents: {} })), cid(2)],
        );
        await saver.copyThread(ORG, "raw", "raw-copy");
        assert.deepEqual((await saver.getTuple(cfg("raw-copy")))?.metadata, {
          source: "loop",
          step: 5,
          parents: {},
        });
        // run ids travel with the copy: deleting a run on the copy leaves the source alone
        await saver.deleteRun(ORG, "dst", "r1");
        assert.deepEqual(ids(await collect(saver.list(cfg("dst")))), [cid(3)]);
        assert.equal((await collect(saver.list(cfg("src")))).length, 3);
      });

      test("copyThreadCheckpoints runs inside a caller's transaction and rolls back with it", async () => {
        const { fx } = await fresh();
        const { saver, database, close } = await ownSaver(fx);
        try {
          await putChain(saver, "src", 2);
          await assert.rejects(
            database.transaction(function* (tx) {
              yield* copyThreadCheckpoints(tx, ORG, "src", "dst");
              throw new Error("abort");
            }),
            /abort/,
          );
          assert.equal(await saver.hasCheckpoints(ORG, "dst"), false);
          await database.transaction((tx) => copyThreadCheckpoints(tx, ORG, "src", "dst"));
          assert.equal(await saver.hasCheckpoints(ORG, "dst"), true);
          assert.deepEqual(ids(await collect(saver.list(cfg("dst")))), [cid(2), cid(1)]);
        } finally {
          await close();
        }
      });

      test("fenceRun drops later put/putWrites of that run only, and is bounded", async () => {
        const { fx } = await fresh();
        const own = await ownSaver(fx, { fenceCapacity: 3 });
        const saver = own.saver;
        await saver.put(cfg("t", { runId: "ok" }), makeCheckpoint(cid(1)), meta(-1), {});
        saver.fenceRun("dead");
        const returned = await saver.put(
          cfg("t", { id: cid(1), runId: "dead" }),
          makeCheckpoint(cid(2)),
          meta(0),
          {},
        );
        assert.deepEqual(returned, {
          configurable: {
            [CHECKPOINT_ORG_KEY]: ORG,
            thread_id: "t",
            checkpoint_ns: "",
            checkpoint_id: cid(2),
          },
        });
        await saver.putWrites(cfg("t", { id: cid(1), runId: "dead" }), [["x", 1]], "task");
        const t = await saver.getTuple(cfg("t"));
        assert.equal(t?.checkpoint.id, cid(1));
        assert.deepEqual(t?.pendingWrites, []);

        // fenced before serialization finished: still dropped
        const pending = saver.put(
          cfg("t", { id: cid(1), runId: "late" }),
          makeCheckpoint(cid(3)),
          meta(0),
          {},
        );
        saver.fenceRun("late");
        await pending;
        assert.equal((await saver.getTuple(cfg("t")))?.checkpoint.id, cid(1));

        saver.fenceRun("f2");
        saver.fenceRun("f3");
        assert.equal(saver.isFenced("dead"), false, "oldest fence forgotten past capacity");
        assert.equal(saver.isFenced("f3"), true);
        await saver.put(cfg("t", { id: cid(1), runId: "dead" }), makeCheckpoint(cid(4)), meta(0), {});
        assert.equal((await saver.getTuple(cfg("t")))?.checkpoint.id, cid(4));

        // the fence is in memory only; the data is durable in the database
        await own.close();
        const reopened = (await fx.reopen()).checkpointer;
        assert.equal((await reopened.getTuple(cfg("t")))?.checkpoint.id, cid(4));
      });
    });

    describe("with a real StateGraph", () => {
      test("two runs on one thread: getState and getStateHistory reflect both, durably", async () => {
        const { saver, fx } = await fresh();
        const builder = new StateGraph(MessagesAnnotation)
          .addNode("bot", (state) => ({ messages: [new AIMessage(`echo ${state.messages.length}`)] }))
          .addEdge(START, "bot")
          .addEdge("bot", END);
        const graph = builder.compile({ checkpointer: saver });
        const thread = { configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "chat" } };

        await graph.invoke(
          { messages: [new HumanMessage("one")] },
          { ...thread, metadata: { run_id: "run-1" } },
        );
        const out = await graph.invoke(
          { messages: [new HumanMessage("two")] },
          { ...thread, metadata: { run_id: "run-2" } },
        );
        assert.deepEqual(
          out.messages.map((m) => m.content),
          ["one", "echo 1", "two", "echo 3"],
        );

        const state = await graph.getState(thread);
        assert.deepEqual(
          state.values.messages.map((m: HumanMessage) => m.content),
          ["one", "echo 1", "two", "echo 3"],
        );
        assert.deepEqual(state.next, []);
        assert.equal(md(state)?.run_id, "run-2");
        assert.equal(md(state)?.thread_id, "chat");

        const history = await collect<any>(graph.getStateHistory(thread));
        // per run: input (-1), loop after __start__ (0), loop after bot (1); steps continue across runs
        assert.deepEqual(
          history.map((s: any) => [s.metadata.run_id, s.metadata.source, s.metadata.step]),
          [
            ["run-2", "loop", 4],
            ["run-2", "loop", 3],
            ["run-2", "input", 2],
            ["run-1", "loop", 1],
            ["run-1", "loop", 0],
            ["run-1", "input", -1],
          ],
        );
        assert.deepEqual(
          history[3].values.messages.map((m: HumanMessage) => m.content),
          ["one", "echo 1"],
        );

        // time travel: the state at the end of run 1
        const atRun1 = await graph.getState({
          configurable: {
            [CHECKPOINT_ORG_KEY]: ORG,
            thread_id: "chat",
            checkpoint_id: history[3].config.configurable.checkpoint_id,
          },
        });
        assert.equal(atRun1.values.messages.length, 2);

        // durable: a fresh connection and saver see the same state
        const again = builder.compile({ checkpointer: (await fx.reopen()).checkpointer });
        const reread = await again.getState(thread);
        assert.equal(reread.values.messages.length, 4);
        assert.ok(reread.values.messages[3] instanceof AIMessage);

        // rolling back run 2 restores the thread to the end of run 1
        await saver.deleteRun(ORG, "chat", "run-2");
        const rolledBack = await graph.getState(thread);
        assert.deepEqual(
          rolledBack.values.messages.map((m: HumanMessage) => m.content),
          ["one", "echo 1"],
        );
      });

      test("interrupt() + Command({resume}) persists interrupts and pending writes; rollback of the resume restores the interrupt", async () => {
        const { saver } = await fresh();
        const State = Annotation.Root({
          log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
        });
        let asked = 0;
        const graph = new StateGraph(State)
          .addNode("prepare", () => ({ log: ["prepared"] }))
          .addNode("ask", () => {
            asked += 1;
            const answer = interrupt({ question: "approve?" });
            return { log: [`answer:${answer}`] };
          })
          .addEdge(START, "prepare")
          .addEdge("prepare", "ask")
          .addEdge("ask", END)
          .compile({ checkpointer: saver });
        const thread = { configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "hitl" } };

        const first = await graph.invoke({ log: ["start"] }, { ...thread, metadata: { run_id: "r1" } });
        assert.deepEqual(first.log, ["start", "prepared"]);
        let state = await graph.getState(thread);
        assert.deepEqual(state.next, ["ask"]);
        assert.equal(state.tasks.length, 1);
        assert.deepEqual(
          state.tasks[0].interrupts.map((i) => i.value),
          [{ question: "approve?" }],
        );
        const head = await saver.getTuple(thread);
        assert.deepEqual(
          head?.pendingWrites?.map(([, channel, value]) => [channel, value]),
          [[INTERRUPT, [{ id: state.tasks[0].interrupts[0].id, value: { question: "approve?" } }]]],
        );

        const resumed = await graph.invoke(new Command({ resume: "yes" }), {
          ...thread,
          metadata: { run_id: "r2" },
        });
        assert.deepEqual(resumed.log, ["start", "prepared", "answer:yes"]);
        state = await graph.getState(thread);
        assert.deepEqual(state.next, []);
        assert.equal(asked, 2);

        // roll back the resume run: the interrupt is pending again and can be answered differently
        await saver.deleteRun(ORG, "hitl", "r2");
        state = await graph.getState(thread);
        assert.deepEqual(state.next, ["ask"]);
        assert.deepEqual(state.values.log, ["start", "prepared"]);
        assert.deepEqual(
          state.tasks[0].interrupts.map((i) => i.value),
          [{ question: "approve?" }],
        );
        const again = await graph.invoke(new Command({ resume: "no" }), {
          ...thread,
          metadata: { run_id: "r3" },
        });
        assert.deepEqual(again.log, ["start", "prepared", "answer:no"]);
      });

      test("a requeued run (same run_id) resumes from its own checkpoints instead of starting over", async () => {
        const { saver } = await fresh();
        const State = Annotation.Root({
          log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
        });
        let stepA = 0;
        let stepB = 0;
        const graph = new StateGraph(State)
          .addNode("a", () => {
            stepA += 1;
            return { log: ["a"] };
          })
          .addNode("b", () => {
            stepB += 1;
            if (stepB === 1) throw new Error("worker died");
            return { log: ["b"] };
          })
          .addEdge(START, "a")
          .addEdge("a", "b")
          .addEdge("b", END)
          .compile({ checkpointer: saver });
        const runConfig = {
          configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "retry" },
          metadata: { run_id: "r1" },
        };
        await assert.rejects(graph.invoke({ log: ["in"] }, runConfig), /worker died/);
        const out = await graph.invoke({ log: ["in"] }, runConfig);
        assert.deepEqual(out.log, ["in", "a", "b"]);
        assert.equal(stepA, 1);
        assert.equal(stepB, 2);
      });

      test("subgraph checkpoints carry the run id and go with deleteRun; a fenced run writes nothing", async () => {
        const { saver } = await fresh();
        const State = Annotation.Root({
          log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
        });
        const child = new StateGraph(State)
          .addNode("inner", () => {
            const ok = interrupt("inner?");
            return { log: [`inner:${ok}`] };
          })
          .addEdge(START, "inner")
          .addEdge("inner", END)
          .compile();
        const graph = new StateGraph(State)
          .addNode("child", child)
          .addEdge(START, "child")
          .addEdge("child", END)
          .compile({ checkpointer: saver });
        const thread = { configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "nested" } };
        await graph.invoke({ log: ["x"] }, { ...thread, metadata: { run_id: "r1" } });
        const all = await collect(saver.list(thread));
        const namespaces = new Set(all.map((t) => t.config.configurable?.checkpoint_ns));
        assert.ok(
          [...namespaces].some((ns) => typeof ns === "string" && ns.startsWith("child:")),
          [...namespaces].join(),
        );
        assert.ok(all.every((t) => md(t)?.run_id === "r1"));
        const resumed = await graph.invoke(new Command({ resume: "y" }), {
          ...thread,
          metadata: { run_id: "r2" },
        });
        // the child returns its whole state, which the parent's reducer appends (as with MemorySaver)
        assert.deepEqual(resumed.log, ["x", "x", "inner:y"]);

        await saver.deleteRun(ORG, "nested", "r2");
        await saver.deleteRun(ORG, "nested", "r1");
        assert.equal(await saver.hasCheckpoints(ORG, "nested"), false);

        saver.fenceRun("ghost");
        await graph.invoke(
          { log: ["boo"] },
          {
            configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "ghosted" },
            metadata: { run_id: "ghost" },
          },
        );
        assert.equal(await saver.hasCheckpoints(ORG, "ghosted"), false);
      });
    });
  });
}
