import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  getCheckpointId,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
} from "@langchain/langgraph-checkpoint";
import type Database from "better-sqlite3";
import { prepareCheckpoint, RunFence, runIdOf, toBuffer } from "../checkpoint-common.js";

type Db = Database.Database;

/**
 * Schema. `checkpoints.run_id` is copied from the stored metadata so one run's checkpoints can be deleted.
 * `checkpoint_writes` has two columns beyond the minimal LangGraph shape:
 * - `task_path`: `putWrites` receives it and the base contract wants pending writes returned in
 *   `(task_path, task_id, idx)` order (`writesSortKey`);
 * - `run_id`: the run that wrote the row. A resumed run writes its RESUME value and task writes onto the
 *   previous run's last checkpoint; rolling the resumed run back must remove those rows too.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS checkpoints (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  parent_checkpoint_id TEXT,
  run_id TEXT,
  type TEXT,
  checkpoint BLOB NOT NULL,
  metadata BLOB NOT NULL,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE INDEX IF NOT EXISTS checkpoints_thread_run ON checkpoints (thread_id, run_id);
CREATE TABLE IF NOT EXISTS checkpoint_writes (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  channel TEXT NOT NULL,
  type TEXT,
  value BLOB,
  task_path TEXT NOT NULL DEFAULT '',
  run_id TEXT,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
`;

/** Rows fetched per query while `list` pages through history. */
const LIST_PAGE = 100;

const CHECKPOINT_COLUMNS =
  "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata";

interface CheckpointRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  type: string | null;
  checkpoint: Buffer;
  metadata: Buffer;
}

interface WriteRow {
  task_id: string;
  channel: string;
  type: string | null;
  value: Buffer | null;
}

/** thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path, run_id */
type WriteParams = [string, string, string, string, number, string, string, Buffer, string, string | null];

type Stmt<P extends unknown[] = unknown[], R = unknown> = Database.Statement<P, R>;

export interface SqliteCheckpointerOptions {
  serde?: SerializerProtocol;
  /** How many fenced run ids are remembered (oldest forgotten first). Default 10,000. */
  fenceCapacity?: number;
}

/**
 * LangGraph checkpoint saver over a better-sqlite3 handle shared with the rest of the server.
 * All SQL is synchronous; the async methods only await (de)serialization.
 */
export class SqliteCheckpointer extends BaseCheckpointSaver {
  readonly #db: Db;
  readonly #fence: RunFence;
  readonly #listStatements = new Map<string, Stmt>();

  readonly #getById: Stmt<[string, string, string], CheckpointRow>;
  readonly #getLatest: Stmt<[string, string], CheckpointRow>;
  readonly #getWrites: Stmt<[string, string, string], WriteRow>;
  readonly #getSends: Stmt<[string, string, string, string], WriteRow>;
  readonly #upsertCheckpoint: Stmt<
    [string, string, string, string | null, string | null, string, Buffer, Buffer]
  >;
  readonly #insertWrite: Stmt<WriteParams>;
  readonly #upsertWrite: Stmt<WriteParams>;
  readonly #hasCheckpoints: Stmt<[string], unknown>;
  readonly #deleteThreadTx: (threadId: string) => void;
  readonly #deleteRunTx: (threadId: string, runId: string) => void;
  readonly #copyThreadTx: (source: string, target: string) => void;
  readonly #putWritesTx: (rows: WriteParams[]) => void;

  /** Creates the checkpoint tables and index if missing; safe to run on every start. */
  static migrate(db: Db): void {
    db.exec(SCHEMA);
    // Tables created by an earlier, narrower version of this schema get the extra write columns.
    const columns = new Set(
      (db.prepare("PRAGMA table_info(checkpoint_writes)").all() as { name: string }[]).map((c) => c.name),
    );
    if (!columns.has("task_path"))
      db.exec("ALTER TABLE checkpoint_writes ADD COLUMN task_path TEXT NOT NULL DEFAULT ''");
    if (!columns.has("run_id")) db.exec("ALTER TABLE checkpoint_writes ADD COLUMN run_id TEXT");
  }

  constructor(db: Db, options: SqliteCheckpointerOptions = {}) {
    super(options.serde);
    this.#db = db;
    this.#fence = new RunFence(options.fenceCapacity);
    SqliteCheckpointer.migrate(db);

    this.#getById = db.prepare(
      `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints
       WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?`,
    );
    this.#getLatest = db.prepare(
      `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints
       WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1`,
    );
    // BINARY collation compares UTF-8 bytes, i.e. code points: the order `compareWritesSortKeys` defines.
    this.#getWrites = db.prepare(
      `SELECT task_id, channel, type, value FROM checkpoint_writes
       WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?
       ORDER BY task_path, task_id, idx`,
    );
    this.#getSends = db.prepare(
      `SELECT task_id, channel, type, value FROM checkpoint_writes
       WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND channel = ?
       ORDER BY task_path, task_id, idx`,
    );
    this.#upsertCheckpoint = db.prepare(
      `INSERT INTO checkpoints
         (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type, checkpoint, metadata)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
         parent_checkpoint_id = excluded.parent_checkpoint_id, run_id = excluded.run_id,
         type = excluded.type, checkpoint = excluded.checkpoint, metadata = excluded.metadata`,
    );
    const writeInsert = `INSERT INTO checkpoint_writes
         (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path, run_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
    this.#insertWrite = db.prepare(
      `${writeInsert} ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING`,
    );
    this.#upsertWrite = db.prepare(
      `${writeInsert} ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
         channel = excluded.channel, type = excluded.type, value = excluded.value,
         task_path = excluded.task_path, run_id = excluded.run_id`,
    );
    this.#hasCheckpoints = db.prepare("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1");

    const deleteThreadWrites = db.prepare("DELETE FROM checkpoint_writes WHERE thread_id = ?");
    const deleteThreadCheckpoints = db.prepare("DELETE FROM checkpoints WHERE thread_id = ?");
    this.#deleteThreadTx = db.transaction((threadId: string) => {
      deleteThreadWrites.run(threadId);
      deleteThreadCheckpoints.run(threadId);
    });

    const deleteRunWrites = db.prepare(
      `DELETE FROM checkpoint_writes WHERE thread_id = @threadId AND (
         run_id = @runId OR (checkpoint_ns, checkpoint_id) IN
           (SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE thread_id = @threadId AND run_id = @runId))`,
    );
    const deleteRunCheckpoints = db.prepare("DELETE FROM checkpoints WHERE thread_id = ? AND run_id = ?");
    this.#deleteRunTx = db.transaction((threadId: string, runId: string) => {
      deleteRunWrites.run({ threadId, runId });
      deleteRunCheckpoints.run(threadId, runId);
    });

    // Metadata blobs are JSON (enforced in `put`); rewrite `thread_id` only where the key is present.
    const copyCheckpoints = db.prepare(
      `INSERT INTO checkpoints
         (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type, checkpoint, metadata)
       SELECT @target, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type, checkpoint,
         CASE WHEN json_type(CAST(metadata AS TEXT), '$.thread_id') IS NULL THEN metadata
              ELSE CAST(json_set(CAST(metadata AS TEXT), '$.thread_id', @target) AS BLOB) END
       FROM checkpoints WHERE thread_id = @source`,
    );
    const copyWrites = db.prepare(
      `INSERT INTO checkpoint_writes
         (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path, run_id)
       SELECT @target, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path, run_id
       FROM checkpoint_writes WHERE thread_id = @source`,
    );
    this.#copyThreadTx = db.transaction((source: string, target: string) => {
      if (source === target) return;
      deleteThreadWrites.run(target);
      deleteThreadCheckpoints.run(target);
      copyCheckpoints.run({ source, target });
      copyWrites.run({ source, target });
    });

    this.#putWritesTx = db.transaction((rows: WriteParams[]) => {
      for (const row of rows) (row[4] < 0 ? this.#upsertWrite : this.#insertWrite).run(...row);
    });
  }

  // ---------------------------------------------------------------------------------------------
  // BaseCheckpointSaver

  /**
   * With `checkpoint_id` (or legacy `thread_ts`) in `config.configurable`: that exact checkpoint, or
   * undefined. Without it: the newest checkpoint of the thread in `checkpoint_ns` (default "").
   */
  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id;
    if (threadId === undefined || threadId === null) return undefined;
    const ns = String(config.configurable?.checkpoint_ns ?? "");
    const checkpointId = getCheckpointId(config);
    const row = checkpointId
      ? this.#getById.get(String(threadId), ns, String(checkpointId))
      : this.#getLatest.get(String(threadId), ns);
    return row ? this.#toTuple(row) : undefined;
  }

  /**
   * Newest first (by checkpoint id). `config.configurable`: `thread_id` (all threads if absent),
   * `checkpoint_ns` (all namespaces if absent), `checkpoint_id` (only that one if present).
   * `filter`: every key must equal the metadata value as JSON (objects compare by their JSON text).
   */
  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { before, filter } = options;
    let remaining = options.limit ?? Number.POSITIVE_INFINITY;
    if (remaining <= 0) return;

    const where: string[] = [];
    const params: unknown[] = [];
    const c = config.configurable ?? {};
    if (c.thread_id !== undefined && c.thread_id !== null) {
      where.push("thread_id = ?");
      params.push(String(c.thread_id));
    }
    if (c.checkpoint_ns !== undefined && c.checkpoint_ns !== null) {
      where.push("checkpoint_ns = ?");
      params.push(String(c.checkpoint_ns));
    }
    const exactId = getCheckpointId(config);
    if (exactId) {
      where.push("checkpoint_id = ?");
      params.push(String(exactId));
    }
    const beforeId = before ? getCheckpointId(before) : "";
    if (beforeId) {
      where.push("checkpoint_id < ?");
      params.push(String(beforeId));
    }
    for (const [key, value] of Object.entries(filter ?? {})) {
      if (value === undefined) continue;
      where.push("(CAST(metadata AS TEXT) -> ?) = json(?)");
      params.push(`$.${JSON.stringify(key)}`, JSON.stringify(value));
    }

    // Keyset pagination: a better-sqlite3 iterator would hold the shared connection busy across
    // `yield`, and `all()` without a bound could load a whole long history at once.
    const base = where.length > 0 ? `WHERE ${where.join(" AND ")}` : "";
    const order = "ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC LIMIT ?";
    const first = this.#listStatement(`SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints ${base} ${order}`);
    const next = this.#listStatement(
      `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints ${base} ${where.length > 0 ? "AND" : "WHERE"}
       checkpoint_id <= ? AND (checkpoint_id, thread_id, checkpoint_ns) < (?, ?, ?) ${order}`,
    );

    let cursor: CheckpointRow | undefined;
    while (remaining > 0) {
      const pageSize = Math.min(LIST_PAGE, remaining);
      const rows = (
        cursor
          ? next.all(
              ...params,
              cursor.checkpoint_id,
              cursor.checkpoint_id,
              cursor.thread_id,
              cursor.checkpoint_ns,
              pageSize,
            )
          : first.all(...params, pageSize)
      ) as CheckpointRow[];
      for (const row of rows) {
        remaining -= 1;
        yield await this.#toTuple(row);
      }
      if (rows.length < pageSize) return;
      cursor = rows[rows.length - 1];
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
    const { result, row } = await prepareCheckpoint(this.serde, this.#fence, config, checkpoint, metadata);
    if (row) {
      this.#upsertCheckpoint.run(
        row.threadId,
        row.ns,
        row.checkpointId,
        row.parentId,
        row.runId,
        row.type,
        row.checkpoint,
        row.metadata,
      );
    }
    return result;
  }

  /**
   * Stores a task's writes against `config.configurable.checkpoint_id`. Special channels
   * (`WRITES_IDX_MAP`: error, scheduled, interrupt, resume) take their fixed negative index and replace
   * an earlier value; regular writes take their position and never overwrite. Writes of a fenced run
   * (`config.metadata.run_id`) are dropped.
   */
  async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath = "",
  ): Promise<void> {
    const threadId = config.configurable?.thread_id;
    const checkpointId = config.configurable?.checkpoint_id;
    if (threadId === undefined || threadId === null) {
      throw new Error('Failed to put writes: config.configurable is missing "thread_id".');
    }
    if (!checkpointId)
      throw new Error('Failed to put writes: config.configurable is missing "checkpoint_id".');
    if (writes.length === 0) return;
    const runId = runIdOf(config.metadata?.run_id);
    if (this.#fence.has(runId)) return;
    const ns = String(config.configurable?.checkpoint_ns ?? "");

    const serialized = await Promise.all(writes.map(([, value]) => this.serde.dumpsTyped(value)));
    if (this.#fence.has(runId)) return;
    const rows = writes.map(
      ([channel], i) =>
        [
          String(threadId),
          ns,
          String(checkpointId),
          taskId,
          Object.hasOwn(WRITES_IDX_MAP, channel) ? WRITES_IDX_MAP[channel] : i,
          channel,
          serialized[i][0],
          toBuffer(serialized[i][1]),
          taskPath,
          runId,
        ] as WriteParams,
    );
    this.#putWritesTx(rows);
  }

  async deleteThread(threadId: string): Promise<void> {
    this.deleteThreadSync(threadId);
  }

  // ---------------------------------------------------------------------------------------------
  // Server operations (synchronous; each runs in one transaction, nested as a savepoint when the
  // caller already holds one)

  /** `deleteThread` for callers inside their own better-sqlite3 transaction. */
  deleteThreadSync(threadId: string): void {
    this.#deleteThreadTx(threadId);
  }

  /**
   * Deletes the thread's checkpoints whose metadata `run_id` is `runId`, their writes, and the writes
   * that run made on other checkpoints (a resumed run writes onto its predecessor's last checkpoint).
   * Also fences the run, so a still-running graph cannot write it back.
   */
  deleteRun(threadId: string, runId: string): void {
    this.fenceRun(runId);
    this.#deleteRunTx(threadId, runId);
  }

  /**
   * Makes `targetThreadId` an exact copy of `sourceThreadId` (whatever the target held is replaced).
   * `metadata.thread_id` is rewritten to the target where present.
   */
  copyThread(sourceThreadId: string, targetThreadId: string): void {
    this.#copyThreadTx(sourceThreadId, targetThreadId);
  }

  hasCheckpoints(threadId: string): boolean {
    return this.#hasCheckpoints.get(threadId) !== undefined;
  }

  /**
   * From now on, checkpoints (`put`) and writes (`putWrites`) whose run metadata carries `runId` are
   * dropped. Remembers the most recent `fenceCapacity` ids.
   */
  fenceRun(runId: string): void {
    this.#fence.add(runId);
  }

  isFenced(runId: string): boolean {
    return this.#fence.has(runId);
  }

  // ---------------------------------------------------------------------------------------------

  #listStatement(sql: string): Stmt {
    let stmt = this.#listStatements.get(sql);
    if (!stmt) {
      stmt = this.#db.prepare(sql);
      this.#listStatements.set(sql, stmt);
    }
    return stmt;
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
    const { thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id } = row;
    const [checkpoint, metadata, pendingWrites] = await Promise.all([
      this.serde.loadsTyped(row.type ?? "json", row.checkpoint) as Promise<Checkpoint>,
      this.serde.loadsTyped("json", row.metadata) as Promise<CheckpointMetadata>,
      this.#loadWrites(this.#getWrites.all(thread_id, checkpoint_ns, checkpoint_id)),
    ]);
    // Checkpoint format < 4 kept pending sends as TASKS writes on the parent; v4 keeps them in the
    // TASKS channel. Rebuild that channel for old checkpoints, as MemorySaver does.
    if (checkpoint.v < 4 && parent_checkpoint_id) {
      const sends = await this.#loadWrites(
        this.#getSends.all(thread_id, checkpoint_ns, parent_checkpoint_id, TASKS),
      );
      checkpoint.channel_values ??= {};
      checkpoint.channel_values[TASKS] = sends.map((w) => w[2]);
      checkpoint.channel_versions ??= {};
      const versions = Object.values(checkpoint.channel_versions);
      checkpoint.channel_versions[TASKS] =
        versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
    }
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id, checkpoint_ns, checkpoint_id } },
      checkpoint,
      metadata,
      pendingWrites,
    };
    if (parent_checkpoint_id) {
      tuple.parentConfig = {
        configurable: { thread_id, checkpoint_ns, checkpoint_id: parent_checkpoint_id },
      };
    }
    return tuple;
  }
}
