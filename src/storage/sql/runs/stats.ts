/** The queue's figures (`GET /metrics`). */
import type * as Port from "../../ports.js";
import { SqlRepo } from "../database.js";
import { sql } from "../kysely.js";
import { PENDING, RUNNING } from "../threads.js";
import { threadNotRunning } from "./steps.js";

export class RunStats extends SqlRepo {
  /**
   * One statement, one snapshot. Due times are this process's clock, as `claimNext` compares them.
   * Partial indexes answer each part: runs_pending_due (pending by due time), runs_one_running. The
   * median is the middle due run (or the mean of the middle two) by row number in due order.
   */
  async stats(): Promise<Port.QueueStats> {
    const now = Date.now();
    const row = await this.database.db
      .selectNoFrom((eb) => {
        const pendingDue = () =>
          eb.selectFrom("runs as r").where("r.status", "=", PENDING).where("r.not_before", "<=", now);
        const oldestDue = () => pendingDue().select((s) => s.fn.min("r.not_before").as("t"));
        const count = (status: typeof PENDING) =>
          eb
            .selectFrom("runs")
            .select((s) => s.fn.countAll<number>().as("n"))
            .where("status", "=", status);
        return [
          count(PENDING).as("pending"),
          count(RUNNING).as("running"),
          oldestDue().as("oldest"),
          eb
            .selectFrom(
              pendingDue()
                .select([
                  "r.not_before",
                  sql<number>`row_number() over (order by ${sql.ref("r.not_before")})`.as("rn"),
                  sql<number>`count(*) over ()`.as("n"),
                ])
                .as("d"),
            )
            .select((s) => s.fn.avg<number>("d.not_before").as("m"))
            .where(sql.ref("d.rn"), "in", [sql<number>`(d.n + 1) / 2`, sql<number>`(d.n + 2) / 2`])
            .as("median"),
          oldestDue().where(threadNotRunning).as("unblocked"),
        ];
      })
      .executeTakeFirstOrThrow();
    const wait = (since: number | string | null) =>
      since === null ? null : Math.max(0, now - Number(since)) / 1000;
    return {
      n_pending: Number(row.pending),
      n_running: Number(row.running),
      pending_runs_wait_time_max_secs: wait(row.oldest),
      pending_runs_wait_time_med_secs: wait(row.median),
      pending_unblocked_runs_wait_time_max_secs: wait(row.unblocked),
    };
  }
}
