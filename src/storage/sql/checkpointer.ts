/**
 * LangGraph's checkpoint saver over the SQL database, either engine. Beyond the minimal LangGraph shape:
 * - `checkpoints.run_id` is copied from the stored metadata, so one run's checkpoints can be deleted;
 * - `checkpoint_writes.task_path`: `putWrites` receives it and the base contract wants pending writes
 *   returned in `(task_path, task_id, idx)` order (`writesSortKey`);
 * - `checkpoint_writes.run_id`: the run that wrote the row. A resumed run writes its RESUME value and
 *   task writes onto the previous run's last checkpoint; rolling the resumed run back removes them too.
 *
 * The fence (`fenceRun`) is in process memory: it stops a graph still executing in THIS process from
 * writing back checkpoints of a run that was rolled back (with workers in several processes, the
 * rollback signal must reach the executing worker, which fences there).
 *
 * Hot path: every LangGraph step calls `put` (one statement) and `putWrites` (one for the whole batch),
 * committed with the other writes of the same event-loop turn (`SqlDatabase.write`); `getTuple` (two) and
 * `list` run at a run's start and for state reads.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  copyCheckpoint,
  getCheckpointId,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
} from "@langchain/langgraph-checkpoint";
import { CHECKPOINT_ORG_KEY, type CheckpointStore, type OrgId } from "../ports.js";
import {
  copyThreadCheckpoints,
  deleteRunCheckpoints,
  WRITE_COLUMNS,
  WRITE_KEY,
  WRITE_VALUES,
} from "./checkpoint-rows.js";
import type { Executor, SqlDatabase } from "./database.js";
import { fromExcluded, sql } from "./kysely.js";
import { Prepared, slot, slots } from "./prepared.js";
import type { Row } from "./tables.js";

/** Rows fetched per query while `list` pages through history. */
const LIST_PAGE = 100;

/**
 * Writes per INSERT statement: 10 parameters a row, well under both engines' limits (SQLite 32,766,
 * Postgres 65,535). A batch larger than this (a fan-out of thousands of sends) is one transaction.
 */
const WRITES_PER_STATEMENT = 500;

const KEY = ["org_id", "thread_id", "checkpoint_ns", "checkpoint_id"] as const;
const CHECKPOINT_COLUMNS = [...KEY, "parent_checkpoint_id", "type", "checkpoint", "metadata"] as const;

type CheckpointRow = Pick<Row<"checkpoints">, (typeof CHECKPOINT_COLUMNS)[number]>;
type WriteRow = Pick<Row<"checkpoint_writes">, "task_id" | "channel" | "type" | "value">;

/** Config keys that describe the call site, not the run: never copied into checkpoint metadata. */
const NON_METADATA_KEYS = new Set([
  "checkpoint_id",
  "checkpoint_ns",
  "checkpoint_map",
  "task_id",
  "langgraph_step",
  "langgraph_node",
  "langgraph_triggers",
  "langgraph_path",
  "langgraph_checkpoint_ns",
]);

function toBuffer(bytes: Uint8Array | string): Buffer {
  if (typeof bytes === "string") return Buffer.from(bytes, "utf8");
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * A config's organization (`CHECKPOINT_ORG_KEY`). Required: without it a thread id could name another
 * organization's thread, so a config that lacks it is a bug of the caller, refused.
 */
function orgOf(config: RunnableConfig): string {
  const org = config.configurable?.[CHECKPOINT_ORG_KEY];
  if (typeof org !== "string") throw new Error(`The checkpointer needs configurable.${CHECKPOINT_ORG_KEY}`);
  return org;
}

/**
 * A config's thread: its organization, id (`configurable.thread_id`, as text) and namespace (default "");
 * undefined without a thread id.
 */
function threadOf(
  config: RunnableConfig,
): { org_id: string; thread_id: string; checkpoint_ns: string } | undefined {
  const c = config.configurable;
  if (c?.thread_id === undefined || c.thread_id === null) return undefined;
  return {
    org_id: orgOf(config),
    thread_id: String(c.thread_id),
    checkpoint_ns: String(c.checkpoint_ns ?? ""),
  };
}

const runIdOf = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);

/**
 * LangGraph JS hands `put` only `{source, step, parents}`; the run's identity (`run_id`, `thread_id`,
 * `graph_id`, `assistant_id`, user metadata) lives in `config.metadata` / `config.configurable`. Like the
 * Python savers' `get_checkpoint_metadata`, fold scalar values from both into the stored metadata:
 * the checkpoint's own keys win, then `config.metadata`, then `configurable`.
 */
function checkpointMetadata(config: RunnableConfig, metadata: CheckpointMetadata): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...metadata };
  for (const source of [config.metadata, config.configurable]) {
    for (const [key, value] of Object.entries(source ?? {})) {
      if (Object.hasOwn(merged, key) || key.startsWith("__") || NON_METADATA_KEYS.has(key)) continue;
      if (["string", "number", "boolean"].includes(typeof value)) merged[key] = value;
    }
  }
  return merged;
}

type Thread = "org_id" | "thread_id" | "checkpoint_ns";
type Key = Thread | "checkpoint_id";
const UPSERTED = ["parent_checkpoint_id", "run_id", "type", "checkpoint", "metadata"] as const;

function compileQueries(db: Executor) {
  const checkpoints = db
    .selectFrom("checkpoints")
    .select(CHECKPOINT_COLUMNS)
    .where("org_id", "=", slot("org_id"))
    .where("thread_id", "=", slot("thread_id"))
    .where("checkpoint_ns", "=", slot("checkpoint_ns"));
  const writes = db
    .selectFrom("checkpoint_writes")
    .select(["task_id", "channel", "type", "value"])
    .where("org_id", "=", slot("org_id"))
    .where("thread_id", "=", slot("thread_id"))
    .where("checkpoint_ns", "=", slot("checkpoint_ns"))
    .where("checkpoint_id", "=", slot("checkpoint_id"));
  // Identifier columns compare bytes (SQLite's BINARY collation, Postgres' COLLATE "C"), i.e. code
  // points: the order `compareWritesSortKeys` defines.
  const inWritesOrder = (q: typeof writes) => q.orderBy("task_path").orderBy("task_id").orderBy("idx");
  return {
    getById: new Prepared<CheckpointRow, Key>(checkpoints.where("checkpoint_id", "=", slot("checkpoint_id"))),
    getLatest: new Prepared<CheckpointRow, Thread>(
      checkpoints.orderBy("checkpoint_id", "desc").limit(sql.lit(1)),
    ),
    getWrites: new Prepared<WriteRow, Key>(inWritesOrder(writes)),
    getSends: new Prepared<WriteRow, Key | "channel">(
      inWritesOrder(writes.where("channel", "=", slot("channel"))),
    ),
    upsertCheckpoint: new Prepared<never, Key | (typeof UPSERTED)[number]>(
      db
        .insertInto("checkpoints")
        .values(slots([...KEY, ...UPSERTED]))
        .onConflict((oc) => oc.columns(KEY).doUpdateSet(fromExcluded(UPSERTED))),
    ),
    hasCheckpoints: new Prepared<unknown, "org_id" | "thread_id">(
      db
        .selectFrom("checkpoints")
        .select(sql.lit(1).as("one"))
        .where("org_id", "=", slot("org_id"))
        .where("thread_id", "=", slot("thread_id"))
        .limit(sql.lit(1)),
    ),
  };
}

/** `rows` writes in one INSERT, whose WHERE leaves a conflicting regular write (idx ≥ 0) as it was. */
function writesInsert(db: Executor, rows: number) {
  const values = Array.from({ length: rows }, (_, i) => slots(WRITE_COLUMNS, `${i}.`));
  const insert = db
    .insertInto("checkpoint_writes")
    .values(values)
    .onConflict((oc) =>
      oc.columns(WRITE_KEY).doUpdateSet(fromExcluded(WRITE_VALUES)).where("excluded.idx", "<", sql.lit(0)),
    );
  // `putWrites` binds the rows flattened: row by row, each in WRITE_COLUMNS order.
  const expected = values.flatMap((_, i) => WRITE_COLUMNS.map((c) => slot(`${i}.${c}`)));
  if (insert.compile().parameters.join() !== expected.join())
    throw new Error("Unexpected parameter order in the writes INSERT");
  return insert;
}

export class SqlCheckpointer extends BaseCheckpointSaver implements CheckpointStore {
  readonly #database: SqlDatabase;
  readonly #fenced = new Set<string>();
  readonly #fenceCapacity: number;
  readonly #q: ReturnType<typeof compileQueries>;

  constructor(database: SqlDatabase, options: { serde?: SerializerProtocol; fenceCapacity?: number } = {}) {
    super(options.serde);
    this.#database = database;
    this.#fenceCapacity = Math.max(1, options.fenceCapacity ?? 10_000);
    this.#q = compileQueries(database.db);
  }

  /**
   * With `checkpoint_id` (or legacy `thread_ts`) in `config.configurable`: that exact checkpoint, or
   * undefined. Without it: the newest checkpoint of the thread in `checkpoint_ns` (default "").
   */
  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const thread = threadOf(config);
    if (!thread) return undefined;
    const checkpointId = getCheckpointId(config);
    const db = this.#database;
    const [row] = checkpointId
      ? await this.#q.getById.execute(db, { ...thread, checkpoint_id: String(checkpointId) })
      : await this.#q.getLatest.execute(db, thread);
    return row ? this.#toTuple(row) : undefined;
  }

  /**
   * Newest first (by checkpoint id). `config.configurable`: the organization (required), `thread_id`
   * (all the organization's threads if absent),
   * `checkpoint_ns` (all namespaces if absent), `checkpoint_id` (only that one if present).
   * `filter`: every key must equal the metadata value as JSON (`dialect.jsonBytesKeyEquals`).
   */
  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { before, filter } = options;
    let remaining = options.limit ?? Number.POSITIVE_INFINITY;
    if (remaining <= 0) return;

    const { db, dialect } = this.#database;
    const c = config.configurable ?? {};
    const org = orgOf(config);
    const exactId = getCheckpointId(config);
    const beforeId = before ? getCheckpointId(before) : "";
    const filters = Object.entries(filter ?? {}).filter(([, value]) => value !== undefined);
    const query = db
      .selectFrom("checkpoints")
      .select(CHECKPOINT_COLUMNS)
      .where("org_id", "=", org)
      .$if(c.thread_id != null, (q) => q.where("thread_id", "=", String(c.thread_id)))
      .$if(c.checkpoint_ns != null, (q) => q.where("checkpoint_ns", "=", String(c.checkpoint_ns)))
      .$if(Boolean(exactId), (q) => q.where("checkpoint_id", "=", String(exactId)))
      .$if(Boolean(beforeId), (q) => q.where("checkpoint_id", "<", String(beforeId)))
      .$if(filters.length > 0, (q) =>
        q.where((eb) => eb.and(filters.map(([k, v]) => dialect.jsonBytesKeyEquals("metadata", k, v)))),
      )
      .orderBy("checkpoint_id", "desc")
      .orderBy("thread_id", "desc")
      .orderBy("checkpoint_ns", "desc");

    // Keyset pagination: bounded pages, no cursor (or SQLite's connection) held across `yield`, and no
    // unbounded read of a long history. `checkpoint_id <=` lets the primary key narrow the range.
    let page = query;
    while (remaining > 0) {
      const pageSize = Math.min(LIST_PAGE, remaining);
      const rows = await page.limit(pageSize).execute();
      for (const row of rows) yield await this.#toTuple(row);
      remaining -= rows.length;
      if (rows.length < pageSize) return;
      const { checkpoint_id: id, thread_id, checkpoint_ns } = rows[rows.length - 1];
      page = query
        .where("checkpoint_id", "<=", id)
        .where((eb) =>
          eb(
            eb.refTuple("checkpoint_id", "thread_id", "checkpoint_ns"),
            "<",
            eb.tuple(id, thread_id, checkpoint_ns),
          ),
        );
    }
  }

  /**
   * Stores the checkpoint under `config.configurable.checkpoint_ns`, with `configurable.checkpoint_id`
   * as its parent. Metadata is merged with the run's scalar config metadata (see `checkpointMetadata`).
   * A checkpoint of a fenced run is dropped silently; the returned config is the same either way.
   */
  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    _newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const thread = threadOf(config);
    if (!thread) throw new Error('Failed to put checkpoint: config.configurable is missing "thread_id".');
    const { thread_id, checkpoint_id: parentId } = config.configurable!;
    const result = { configurable: { ...this.#configOf(thread), thread_id, checkpoint_id: checkpoint.id } };
    const merged = checkpointMetadata(config, metadata);
    const runId = runIdOf(merged.run_id);
    if (this.isFenced(runId)) return result;
    const [[type, serialized], [metadataType, serializedMetadata]] = await Promise.all([
      this.serde.dumpsTyped(copyCheckpoint(checkpoint)),
      this.serde.dumpsTyped(merged),
    ]);
    if (metadataType !== "json") {
      throw new Error(`Checkpoint metadata must serialize as JSON, got "${metadataType}"`);
    }
    // A rollback may land while serialization (or the write lock) is awaited: checked until it is written.
    const fenced = () => this.isFenced(runId);
    await this.#q.upsertCheckpoint.write(
      this.#database,
      {
        ...thread,
        checkpoint_id: checkpoint.id,
        parent_checkpoint_id: parentId ? String(parentId) : null,
        run_id: runId,
        type,
        checkpoint: toBuffer(serialized),
        metadata: toBuffer(serializedMetadata),
      },
      fenced,
    );
    return result;
  }

  /**
   * Stores a task's writes against `config.configurable.checkpoint_id`. Special channels
   * (`WRITES_IDX_MAP`: error, scheduled, interrupt, resume) take their fixed negative index and replace
   * an earlier value; regular writes take their position and never overwrite. Writes of a fenced run
   * (`config.metadata.run_id`) are dropped. The batch is one statement: all of it is stored or none.
   */
  async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath = "",
  ): Promise<void> {
    const thread = threadOf(config);
    const checkpointId = config.configurable?.checkpoint_id;
    if (!thread) throw new Error('Failed to put writes: config.configurable is missing "thread_id".');
    if (!checkpointId)
      throw new Error('Failed to put writes: config.configurable is missing "checkpoint_id".');
    const runId = runIdOf(config.metadata?.run_id);
    if (writes.length === 0 || this.isFenced(runId)) return;
    const serialized = await Promise.all(writes.map(([, value]) => this.serde.dumpsTyped(value)));
    if (this.isFenced(runId)) return;
    // One row per key: a special channel written twice in one batch keeps its last value (as the
    // upserts one after the other did); one statement may not touch a row twice on Postgres.
    const rows = new Map<number, unknown[]>();
    const key = [thread.org_id, thread.thread_id, thread.checkpoint_ns, String(checkpointId), taskId];
    for (const [i, [channel]] of writes.entries()) {
      const idx = Object.hasOwn(WRITES_IDX_MAP, channel) ? WRITES_IDX_MAP[channel] : i;
      const [type, value] = serialized[i];
      rows.delete(idx);
      rows.set(idx, [...key, idx, channel, type, toBuffer(value), taskPath, runId]); // WRITE_COLUMNS
    }
    const all = [...rows.values()];
    const fenced = () => this.isFenced(runId); // checked until written, as in put
    if (all.length <= WRITES_PER_STATEMENT)
      await this.#writesInsert(all.length).write(this.#database, all.flat(), fenced);
    else {
      const insert = (n: number) => this.#writesInsert(n);
      await this.#database.transaction(function* () {
        if (fenced()) return;
        for (let i = 0; i < all.length; i += WRITES_PER_STATEMENT) {
          const batch = all.slice(i, i + WRITES_PER_STATEMENT);
          yield* insert(batch.length).changed(batch.flat());
        }
      });
    }
  }

  /**
   * LangGraph's `deleteThread(threadId)` names no organization, and a thread id alone may be several
   * organizations' threads: refused. The server deletes a thread's checkpoints with the thread.
   */
  async deleteThread(_threadId: string): Promise<void> {
    throw new Error(
      "deleteThread needs the thread's organization: delete the thread through storage.threads",
    );
  }

  // Server operations, in transactions of their own (other repositories run checkpoint-rows.ts' in theirs).

  /** `deleteRunCheckpoints`, the run fenced first so that a still-running graph cannot write it back. */
  async deleteRun(org: OrgId, threadId: string, runId: string): Promise<void> {
    this.fenceRun(runId);
    await this.#database.transaction((tx) => deleteRunCheckpoints(tx, org, threadId, runId));
  }

  async copyThread(org: OrgId, sourceThreadId: string, targetThreadId: string): Promise<void> {
    await this.#database.transaction((tx) => copyThreadCheckpoints(tx, org, sourceThreadId, targetThreadId));
  }

  async hasCheckpoints(org: OrgId, threadId: string): Promise<boolean> {
    const found = await this.#q.hasCheckpoints.execute(this.#database, { org_id: org, thread_id: threadId });
    return found.length > 0;
  }

  /** A config's configurable naming a thread of this organization (what LangGraph hands back to the saver). */
  #configOf(thread: { org_id: string; thread_id: string; checkpoint_ns: string }) {
    return {
      [CHECKPOINT_ORG_KEY]: thread.org_id,
      thread_id: thread.thread_id,
      checkpoint_ns: thread.checkpoint_ns,
    };
  }

  /**
   * From now on, checkpoints (`put`) and writes (`putWrites`) whose run metadata carries `runId` are
   * dropped. Remembers the most recent `fenceCapacity` ids (default 10,000), oldest forgotten first.
   */
  fenceRun(runId: string): void {
    this.#fenced.delete(runId);
    this.#fenced.add(runId);
    while (this.#fenced.size > this.#fenceCapacity)
      this.#fenced.delete(this.#fenced.values().next().value as string);
  }

  isFenced(runId: string | null): boolean {
    return runId !== null && this.#fenced.has(runId);
  }

  /** The INSERT of n writes, compiled once per n (1..WRITES_PER_STATEMENT; tasks write a handful). */
  #writesInsert(n: number) {
    return this.#database.prepared(`checkpoints.writes:${n}`, (db) => writesInsert(db, n));
  }

  async #loadWrites(rows: WriteRow[]): Promise<CheckpointPendingWrite[]> {
    return Promise.all(
      rows.map(
        async (w): Promise<CheckpointPendingWrite> => [
          w.task_id,
          w.channel,
          w.value === null ? undefined : await this.serde.loadsTyped(w.type ?? "json", w.value),
        ],
      ),
    );
  }

  async #toTuple(row: CheckpointRow): Promise<CheckpointTuple> {
    const { org_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id } = row;
    const db = this.#database;
    const [checkpoint, metadata, pendingWrites] = await Promise.all([
      this.serde.loadsTyped(row.type ?? "json", row.checkpoint) as Promise<Checkpoint>,
      this.serde.loadsTyped("json", row.metadata) as Promise<CheckpointMetadata>,
      this.#q.getWrites.execute(db, row).then((w) => this.#loadWrites(w)),
    ]);
    // Checkpoint format < 4 kept pending sends as TASKS writes on the parent; v4 keeps them in the
    // TASKS channel. Rebuild that channel for old checkpoints, as MemorySaver does.
    const parent = { org_id, thread_id, checkpoint_ns, checkpoint_id: parent_checkpoint_id };
    if (checkpoint.v < 4 && parent_checkpoint_id) {
      const sends = await this.#loadWrites(await this.#q.getSends.execute(db, { ...parent, channel: TASKS }));
      checkpoint.channel_values ??= {};
      checkpoint.channel_values[TASKS] = sends.map((w) => w[2]);
      checkpoint.channel_versions ??= {};
      const versions = Object.values(checkpoint.channel_versions);
      checkpoint.channel_versions[TASKS] =
        versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
    }
    return {
      config: { configurable: { ...this.#configOf(row), checkpoint_id } },
      checkpoint,
      metadata,
      pendingWrites,
      ...(parent_checkpoint_id
        ? { parentConfig: { configurable: { ...this.#configOf(row), checkpoint_id: parent_checkpoint_id } } }
        : {}),
    };
  }
}
