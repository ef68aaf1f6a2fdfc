/** Reading runs: one, a thread's, and a search over an organization's. */
import type * as Port from "../../ports.js";
import { RunSteps, toRun } from "./steps.js";

export class RunSearch extends RunSteps {
  async get(org: Port.OrgId, threadId: string | null, runId: string): Promise<Port.Run | null> {
    const row = await this.selectRun(this.database.db, runId).executeTakeFirst();
    if (!row || row.org_id !== org || (threadId !== null && row.thread_id !== threadId)) return null;
    return toRun(row);
  }

  async list(org: Port.OrgId, threadId: string, q: Port.RunListQuery): Promise<Port.Run[]> {
    const rows = await this.database.db
      .selectFrom("runs")
      .selectAll()
      .where("thread_id", "=", threadId)
      .where("org_id", "=", org)
      .$if(Boolean(q.status), (qb) => qb.where("status", "=", q.status!))
      .$if(Boolean(q.metadata), (qb) => qb.where(this.dialect.jsonContains("metadata", q.metadata!)))
      .orderBy("seq", "desc")
      .limit(q.limit)
      .offset(q.offset)
      .execute();
    return rows.map(toRun);
  }

  /**
   * Newest first (`seq`). The custom auth filter applies to the runs' threads (a subquery on threads,
   * whose metadata it reads), as runs are authorized through their thread.
   */
  async search(
    org: Port.OrgId,
    q: Port.RunSearchQuery,
  ): Promise<{ items: Port.RunWithError[]; total: number }> {
    const d = this.dialect;
    const filtered = this.database.db
      .selectFrom("runs")
      .where("org_id", "=", org)
      .$if(Boolean(q.status?.length), (qb) => qb.where("status", "in", q.status!))
      .$if(q.assistant_id !== undefined, (qb) => qb.where("assistant_id", "=", q.assistant_id!))
      .$if(q.thread_id !== undefined, (qb) => qb.where("thread_id", "=", q.thread_id!))
      .$if(Boolean(q.metadata), (qb) => qb.where(d.jsonContains("runs.metadata", q.metadata!)))
      .$if(Boolean(q.auth), (qb) =>
        qb.where("runs.thread_id", "in", (eb) =>
          eb
            .selectFrom("threads")
            .select("threads.thread_id")
            .where("threads.org_id", "=", org)
            .where(d.authFilter("threads.metadata", q.auth!)),
        ),
      );
    const rows = await filtered.selectAll().orderBy("seq", "desc").limit(q.limit).offset(q.offset).execute();
    const items = rows.map((r) => ({ ...toRun(r), error: r.error === null ? null : JSON.parse(r.error) }));
    return { items, total: await this.countOf(filtered) };
  }
}
