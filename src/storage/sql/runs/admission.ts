/** Admission: a run enters the queue, its thread created or taken, its thread's runs in flight settled as its multitask strategy says. */
import { conflict, notFound } from "../../../errors.js";
import type * as Port from "../../ports.js";
import { THREAD_BUSY_MESSAGE } from "../../statuses.js";
import { all, type TxSteps } from "../database.js";
import { sql } from "../kysely.js";
import { slot, slots } from "../prepared.js";
import { insertThread, newThreadRow, runsInFlight } from "../threads.js";
import { QUEUED, RunSteps, toRun } from "./steps.js";

export class RunAdmission extends RunSteps {
  /**
   * Statements: the thread (locked), [its insert], [reject: whether a run is in flight | interrupt,
   * rollback: the runs in flight, and what settles them], the run's insert, [the thread's update].
   */
  async admit(org: Port.OrgId, a: Port.RunAdmission): Promise<Port.AdmissionResult> {
    const graphMetadata = { graph_id: a.assistant.graph_id, assistant_id: a.assistant.assistant_id };
    const runMetadata = JSON.stringify(a.metadata);
    const kwargs = JSON.stringify(a.kwargs);
    const threadConfig = a.thread_config ? JSON.stringify(a.thread_config) : undefined;
    // enqueue needs nothing of the runs ahead of it and reject only whether there are any; only
    // interrupt and rollback read them (a long queue would otherwise be loaded on every admission).
    const settlesPriors = a.multitask_strategy === "interrupt" || a.multitask_strategy === "rollback";
    return this.transaction(function* (tx): TxSteps<Port.AdmissionResult> {
      let thread = yield* this.lockThread(org, a.thread_id);
      // Timestamps are taken under the lock, so the queue order of one thread's runs (not_before, then
      // seq) is their admission order: concurrent admissions may have computed `not_before` in another
      // order than they got the lock. A delayed run keeps its time.
      const lockedAt = Date.now();
      const nowIso = new Date(lockedAt).toISOString();
      let created = false;
      if (!thread) {
        if (!a.stateless && a.if_not_exists === "reject")
          throw notFound(`Thread with ID ${a.thread_id} not found`);
        // Created as the admission leaves it (busy, bound to the graph), so it needs no update below.
        const row = newThreadRow(org, a.thread_id, nowIso, a.stateless ? undefined : a.thread_ttl, {
          status: "busy",
          metadata: JSON.stringify({ ...graphMetadata, ...a.metadata, ...graphMetadata }),
          config: threadConfig ?? "{}",
          temporary: Boolean(a.kwargs.temporary),
        });
        // Two admissions creating the same thread at once (Postgres): the second one's insert waits on
        // the first's unique key, does nothing, and the lock below then waits for and sees its row.
        created = yield* insertThread(this.database, row);
        thread = created ? row : yield* this.lockThread(org, a.thread_id);
        if (!thread) throw notFound(`Thread with ID ${a.thread_id} not found`); // deleted in between
      }

      // A thread this admission created has no runs yet.
      if (!created && a.multitask_strategy === "reject") {
        const busy = yield* this.database
          .prepared("runs.anyInFlight", (db) =>
            runsInFlight(db, slot("org_id"), slot("thread_id")).select("run_id").limit(sql.lit(1)),
          )
          .first({ org_id: org, thread_id: a.thread_id });
        if (busy) throw conflict(THREAD_BUSY_MESSAGE);
      }
      const runningToStop: Port.Run[] = [];
      const pendingSettled: Port.Run[] = [];
      if (!created && settlesPriors) {
        const inFlight = yield* all(runsInFlight(tx, org, a.thread_id).selectAll().orderBy("seq"));
        for (const prior of inFlight) {
          if (prior.status === "running") {
            // Recorded, so the stop happens even if the signal to its worker is lost or the worker dies.
            yield* this.updateRun(tx, prior.run_id, {
              stop_requested: a.multitask_strategy as Port.StopAction,
            });
            runningToStop.push(toRun(prior));
            continue;
          }
          if (a.multitask_strategy === "rollback") yield* this.deleteRun(tx, prior, prior.run_id);
          else yield* this.updateRun(tx, prior.run_id, { status: "interrupted", updated_at: nowIso });
          pendingSettled.push(toRun(prior));
        }
      }

      const run = {
        run_id: a.run_id,
        thread_id: a.thread_id,
        org_id: org,
        assistant_id: a.assistant.assistant_id,
        metadata: runMetadata,
        kwargs,
        multitask_strategy: a.multitask_strategy,
        attempt: 0,
        not_before: Math.max(a.not_before.getTime(), lockedAt),
        created_at: nowIso,
        updated_at: nowIso,
        ...QUEUED,
        stop_requested: null,
      };
      yield* this.database
        .prepared("runs.insert", (db) => db.insertInto("runs").values(slots(Object.keys(run))))
        .changed(run);
      if (!created) {
        const config = threadConfig !== undefined;
        const update = this.database.prepared(`runs.admitted:${config}`, (db) =>
          db
            .updateTable("threads")
            .set({
              status: sql.lit("busy"),
              metadata: slot("metadata"),
              updated_at: slot("now"),
              ...(config && { config: slot("config") }),
            })
            .where("org_id", "=", slot("org_id"))
            .where("thread_id", "=", slot("thread_id")),
        );
        yield* update.changed({
          org_id: org,
          thread_id: a.thread_id,
          metadata: JSON.stringify({ ...JSON.parse(thread.metadata), ...graphMetadata }),
          now: nowIso,
          config: threadConfig,
        });
      }
      return { run: toRun({ ...run, seq: 0, error: null }), runningToStop, pendingSettled };
    });
  }
}
