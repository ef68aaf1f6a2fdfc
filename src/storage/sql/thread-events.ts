/**
 * Protocol-v2 thread events (thread-event-ports.ts): a head row per thread (its last seq, the first
 * seq still kept, the bytes kept) and the events keyed by (organization, thread, seq). An append is
 * one transaction: the head's upsert numbers the batch (on Postgres its row lock orders concurrent
 * appenders; SQLite's write lock does the same), the rows go in, and the oldest beyond the retention
 * bounds go out.
 */
import type * as Port from "../ports.js";
import { all, changed, type Executor, first, SqlRepo, type TxSteps } from "./database.js";
import { sql } from "./kysely.js";

/** Rows per INSERT (five parameters each: well under either engine's limit). */
const INSERT_BATCH = 500;
/** Rows read at a time when finding how many of the oldest to drop for the byte bound. */
const TRIM_SCAN = 1000;

export class SqlThreadEvents extends SqlRepo implements Port.ThreadEventsRepo {
  async append(
    org: Port.OrgId,
    threadId: string,
    events: string[],
    retention: Port.ThreadEventRetention,
  ): Promise<number> {
    if (events.length === 0) return this.lastSeq(org, threadId);
    const sizes = events.map((e) => Buffer.byteLength(e));
    const added = sizes.reduce((a, b) => a + b, 0);
    return this.transaction(function* (tx) {
      // A thread deleted while its run still streamed keeps no events: they would outlive it, and
      // greet a new thread of the same id. The share lock keeps the delete from slipping in between.
      const thread = this.dialect.lock(
        tx
          .selectFrom("threads")
          .select("thread_id")
          .where("org_id", "=", org)
          .where("thread_id", "=", threadId),
        { share: true },
      );
      if (!(yield* first(thread))) return 0;
      const head = (yield* first(
        tx
          .insertInto("thread_event_heads")
          .values({ org_id: org, thread_id: threadId, last_seq: events.length, first_seq: 1, bytes: added })
          .onConflict((oc) =>
            oc.columns(["org_id", "thread_id"]).doUpdateSet({
              last_seq: sql`thread_event_heads.last_seq + ${events.length}`,
              bytes: sql`thread_event_heads.bytes + ${added}`,
            }),
          )
          .returning(["last_seq", "first_seq", "bytes"]),
      ))!;
      const lastSeq = Number(head.last_seq);
      const firstSeq = lastSeq - events.length + 1;
      for (let i = 0; i < events.length; i += INSERT_BATCH) {
        yield* changed(
          tx.insertInto("thread_events").values(
            events.slice(i, i + INSERT_BATCH).map((json, j) => ({
              org_id: org,
              thread_id: threadId,
              seq: firstSeq + i + j,
              bytes: sizes[i + j]!,
              data: json,
            })),
          ),
        );
      }
      yield* trim(tx, org, threadId, lastSeq, Number(head.first_seq), Number(head.bytes), retention);
      return lastSeq;
    });
  }

  async read(org: Port.OrgId, threadId: string, after: number, limit: number) {
    // Rows before the head: a trim between the two reads shows as a first seq kept past the rows read,
    // never as rows silently missing.
    const rows = await this.database.db
      .selectFrom("thread_events")
      .select(["seq", "data"])
      .where("org_id", "=", org)
      .where("thread_id", "=", threadId)
      .where("seq", ">", after)
      .orderBy("seq")
      .limit(limit)
      .execute();
    const head = await this.database.db
      .selectFrom("thread_event_heads")
      .select(["first_seq", "last_seq"])
      .where("org_id", "=", org)
      .where("thread_id", "=", threadId)
      .executeTakeFirst();
    return {
      events: rows.map((r) => ({ seq: Number(r.seq), json: r.data })),
      firstKept: head ? Number(head.first_seq) : 1,
      lastSeq: head ? Number(head.last_seq) : 0,
    };
  }

  async lastSeq(org: Port.OrgId, threadId: string): Promise<number> {
    const head = await this.database.db
      .selectFrom("thread_event_heads")
      .select("last_seq")
      .where("org_id", "=", org)
      .where("thread_id", "=", threadId)
      .executeTakeFirst();
    return head ? Number(head.last_seq) : 0;
  }
}

/** Drops the oldest events beyond the count and byte bounds (never the newest) and records what is kept. */
function* trim(
  tx: Executor,
  org: Port.OrgId,
  threadId: string,
  lastSeq: number,
  firstSeq: number,
  bytes: number,
  retention: Port.ThreadEventRetention,
): TxSteps<void> {
  let keepFrom = Math.max(firstSeq, lastSeq - Math.max(1, retention.maxEvents) + 1);
  let kept = bytes;
  if (keepFrom > firstSeq) {
    const dropped = yield* first(
      tx
        .selectFrom("thread_events")
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("bytes"), sql<number>`0`).as("total"))
        .where("org_id", "=", org)
        .where("thread_id", "=", threadId)
        .where("seq", "<", keepFrom),
    );
    kept -= Number(dropped?.total ?? 0);
  }
  while (kept > retention.maxBytes && keepFrom < lastSeq) {
    const rows = yield* all(
      tx
        .selectFrom("thread_events")
        .select(["seq", "bytes"])
        .where("org_id", "=", org)
        .where("thread_id", "=", threadId)
        .where("seq", ">=", keepFrom)
        .where("seq", "<", lastSeq)
        .orderBy("seq")
        .limit(TRIM_SCAN),
    );
    if (rows.length === 0) break;
    for (const row of rows) {
      if (kept <= retention.maxBytes) break;
      kept -= Number(row.bytes);
      keepFrom = Number(row.seq) + 1;
    }
  }
  if (keepFrom === firstSeq) return;
  yield* changed(
    tx
      .deleteFrom("thread_events")
      .where("org_id", "=", org)
      .where("thread_id", "=", threadId)
      .where("seq", "<", keepFrom),
  );
  yield* changed(
    tx
      .updateTable("thread_event_heads")
      .set({ first_seq: keepFrom, bytes: kept })
      .where("org_id", "=", org)
      .where("thread_id", "=", threadId),
  );
}

/** Removes threads' events with them (a part of `deleteThreads`' transaction). */
export function* deleteThreadEvents(tx: Executor, org: Port.OrgId, threadIds: string[]): TxSteps<void> {
  for (const table of ["thread_events", "thread_event_heads"] as const)
    yield* changed(tx.deleteFrom(table).where("org_id", "=", org).where("thread_id", "in", threadIds));
}
