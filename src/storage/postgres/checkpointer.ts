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
import { prepareCheckpoint, RunFence, runIdOf, toBuffer } from "../checkpoint-common.js";
import type { CheckpointStore } from "../ports.js";
import type { PgDatabase, Queryable } from "./database.js";
import { Params } from "./json-filter.js";

/**
 * LangGraph checkpoint saver on Postgres (tables `checkpoints`, `checkpoint_writes` of migration 1),
 * the twin of sqlite/checkpointer.ts: same columns (`run_id` on checkpoints and writes, `task_path`),
 * same metadata folding, same fence. `deleteRunIn` / `copyThreadIn` take the caller's transaction so
 * run deletion and thread copies commit together with the rows they belong to.
 *
 * The fence is in process memory, as in SQLite: it stops a graph still executing in THIS process from
 * writing back checkpoints of a run that was rolled back. With workers in several processes the
 * rollback signal must reach the executing worker (issue 7 part 2, Redis), which fences there.
 */

const LIST_PAGE = 100;
const CHECKPOINT_COLUMNS =
  "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata";
const WRITE_COLUMNS =
  "thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path, run_id";

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

export interface PgCheckpointerOptions {
  serde?: SerializerProtocol;
  fenceCapacity?: number;
}

export class PgCheckpointer extends BaseCheckpointSaver implements CheckpointStore {
  readonly #db: PgDatabase;
  readonly #fence: RunFence;

  constructor(db: PgDatabase, options: PgCheckpointerOptions = {}) {
    super(options.serde);
    this.#db = db;
    this.#fence = new RunFence(options.fenceCapacity);
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id;
    if (threadId === undefined || threadId === null) return undefined;
    const ns = String(config.configurable?.checkpoint_ns ?? "");
    const checkpointId = getCheckpointId(config);
    const { rows } = checkpointId
      ? await this.#db.query<CheckpointRow>(
          `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints
           WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3`,
          [String(threadId), ns, String(checkpointId)],
        )
      : await this.#db.query<CheckpointRow>(
          `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints
           WHERE thread_id = $1 AND checkpoint_ns = $2 ORDER BY checkpoint_id DESC LIMIT 1`,
          [String(threadId), ns],
        );
    return rows[0] ? this.#toTuple(rows[0]) : undefined;
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { before, filter } = options;
    let remaining = options.limit ?? Number.POSITIVE_INFINITY;
    if (remaining <= 0) return;

    const where: string[] = [];
    const params = new Params();
    const c = config.configurable ?? {};
    if (c.thread_id !== undefined && c.thread_id !== null)
      where.push(`thread_id = ${params.add(String(c.thread_id))}`);
    if (c.checkpoint_ns !== undefined && c.checkpoint_ns !== null)
      where.push(`checkpoint_ns = ${params.add(String(c.checkpoint_ns))}`);
    const exactId = getCheckpointId(config);
    if (exactId) where.push(`checkpoint_id = ${params.add(String(exactId))}`);
    const beforeId = before ? getCheckpointId(before) : "";
    if (beforeId) where.push(`checkpoint_id < ${params.add(String(beforeId))}`);
    for (const [key, value] of Object.entries(filter ?? {})) {
      if (value === undefined) continue;
      where.push(
        `(convert_from(metadata, 'UTF8')::jsonb -> ${params.add(key)}) = ${params.add(JSON.stringify(value))}::jsonb`,
      );
    }

    // Keyset pagination, as in SQLite: bounded pages, no cursor held open across `yield`.
    let cursor: CheckpointRow | undefined;
    while (remaining > 0) {
      const pageSize = Math.min(LIST_PAGE, remaining);
      const page = new Params(params.values);
      const clauses = [...where];
      if (cursor) {
        clauses.push(
          `(checkpoint_id, thread_id, checkpoint_ns) < (${page.add(cursor.checkpoint_id)}, ${page.add(cursor.thread_id)}, ${page.add(cursor.checkpoint_ns)})`,
        );
      }
      const { rows } = await this.#db.query<CheckpointRow>(
        `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints ${clauses.length ? `WHERE ${clauses.join(" AND ")}` : ""}
         ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC LIMIT ${page.add(pageSize)}`,
        page.values,
      );
      for (const row of rows) {
        remaining -= 1;
        yield await this.#toTuple(row);
      }
      if (rows.length < pageSize) return;
      cursor = rows[rows.length - 1];
    }
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    _newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const { result, row } = await prepareCheckpoint(this.serde, this.#fence, config, checkpoint, metadata);
    if (row) {
      await this.#db.query(
        `INSERT INTO checkpoints
         (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type, checkpoint, metadata)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
         parent_checkpoint_id = excluded.parent_checkpoint_id, run_id = excluded.run_id,
         type = excluded.type, checkpoint = excluded.checkpoint, metadata = excluded.metadata`,
        [
          row.threadId,
          row.ns,
          row.checkpointId,
          row.parentId,
          row.runId,
          row.type,
          row.checkpoint,
          row.metadata,
        ],
      );
    }
    return result;
  }

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
    await this.#db.tx(async (c) => {
      for (const [i, [channel]] of writes.entries()) {
        const idx = Object.hasOwn(WRITES_IDX_MAP, channel) ? WRITES_IDX_MAP[channel] : i;
        // Special channels (negative index) replace an earlier value; regular writes never overwrite.
        await c.query(
          `INSERT INTO checkpoint_writes (${WRITE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
           ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) ${
             idx < 0
               ? `DO UPDATE SET channel = excluded.channel, type = excluded.type, value = excluded.value,
                  task_path = excluded.task_path, run_id = excluded.run_id`
               : "DO NOTHING"
           }`,
          [
            String(threadId),
            ns,
            String(checkpointId),
            taskId,
            idx,
            channel,
            serialized[i][0],
            toBuffer(serialized[i][1]),
            taskPath,
            runId,
          ],
        );
      }
    });
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.#db.tx(async (c) => {
      await c.query("DELETE FROM checkpoint_writes WHERE thread_id = $1", [threadId]);
      await c.query("DELETE FROM checkpoints WHERE thread_id = $1", [threadId]);
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Server operations

  /** See sqlite/checkpointer.ts `deleteRun`; fences the run, then deletes in its own transaction. */
  async deleteRun(threadId: string, runId: string): Promise<void> {
    await this.#db.tx((c) => this.deleteRunIn(c, threadId, runId));
  }

  /** `deleteRun` inside the caller's transaction. */
  async deleteRunIn(c: Queryable, threadId: string, runId: string): Promise<void> {
    this.fenceRun(runId);
    await c.query(
      `DELETE FROM checkpoint_writes WHERE thread_id = $1 AND (
         run_id = $2 OR (checkpoint_ns, checkpoint_id) IN
           (SELECT checkpoint_ns, checkpoint_id FROM checkpoints WHERE thread_id = $1 AND run_id = $2))`,
      [threadId, runId],
    );
    await c.query("DELETE FROM checkpoints WHERE thread_id = $1 AND run_id = $2", [threadId, runId]);
  }

  async copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    await this.#db.tx((c) => this.copyThreadIn(c, sourceThreadId, targetThreadId));
  }

  /** `copyThread` inside the caller's transaction; `metadata.thread_id` is rewritten where present. */
  async copyThreadIn(c: Queryable, source: string, target: string): Promise<void> {
    if (source === target) return;
    await c.query("DELETE FROM checkpoint_writes WHERE thread_id = $1", [target]);
    await c.query("DELETE FROM checkpoints WHERE thread_id = $1", [target]);
    await c.query(
      `INSERT INTO checkpoints
         (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type, checkpoint, metadata)
       SELECT $2, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type, checkpoint,
         CASE WHEN NOT (convert_from(metadata, 'UTF8')::jsonb ? 'thread_id') THEN metadata
              ELSE convert_to(jsonb_set(convert_from(metadata, 'UTF8')::jsonb, '{thread_id}', to_jsonb($2::text))::text,
                              'UTF8') END
       FROM checkpoints WHERE thread_id = $1`,
      [source, target],
    );
    await c.query(
      `INSERT INTO checkpoint_writes (${WRITE_COLUMNS})
       SELECT $2, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path, run_id
       FROM checkpoint_writes WHERE thread_id = $1`,
      [source, target],
    );
  }

  async hasCheckpoints(threadId: string): Promise<boolean> {
    const { rows } = await this.#db.query("SELECT 1 FROM checkpoints WHERE thread_id = $1 LIMIT 1", [
      threadId,
    ]);
    return rows.length > 0;
  }

  fenceRun(runId: string): void {
    this.#fence.add(runId);
  }

  isFenced(runId: string): boolean {
    return this.#fence.has(runId);
  }

  // ---------------------------------------------------------------------------------------------

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

  async #writes(threadId: string, ns: string, checkpointId: string, channel?: string): Promise<WriteRow[]> {
    // COLLATE "C" columns: byte order = code point order, what `compareWritesSortKeys` defines.
    const { rows } = await this.#db.query<WriteRow>(
      `SELECT task_id, channel, type, value FROM checkpoint_writes
       WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3 ${channel !== undefined ? "AND channel = $4" : ""}
       ORDER BY task_path, task_id, idx`,
      channel !== undefined ? [threadId, ns, checkpointId, channel] : [threadId, ns, checkpointId],
    );
    return rows;
  }

  async #toTuple(row: CheckpointRow): Promise<CheckpointTuple> {
    const { thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id } = row;
    const [checkpoint, metadata, pendingWrites] = await Promise.all([
      this.serde.loadsTyped(row.type ?? "json", row.checkpoint) as Promise<Checkpoint>,
      this.serde.loadsTyped("json", row.metadata) as Promise<CheckpointMetadata>,
      this.#writes(thread_id, checkpoint_ns, checkpoint_id).then((w) => this.#loadWrites(w)),
    ]);
    if (checkpoint.v < 4 && parent_checkpoint_id) {
      const sends = await this.#loadWrites(
        await this.#writes(thread_id, checkpoint_ns, parent_checkpoint_id, TASKS),
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
