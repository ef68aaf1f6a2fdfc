import { notFound } from "../../errors.js";
import type { Cron, CronInput, CronPatch, CronQuery, CronsRepo, DueCron, OrgId } from "../ports.js";
import { type Db, statementCache } from "./database.js";
import { authClause, jsonContains, type SqlFragment } from "./json-filter.js";

interface CronRow {
  cron_id: string;
  org_id: string;
  assistant_id: string;
  thread_id: string | null;
  user_id: string | null;
  schedule: string;
  timezone: string | null;
  end_time: string | null;
  enabled: number;
  on_run_completed: "delete" | "keep" | null;
  payload: string;
  metadata: string;
  next_run_at: number | null;
  created_at: string;
  updated_at: string;
}

const toCron = (r: CronRow): Cron => ({
  cron_id: r.cron_id,
  assistant_id: r.assistant_id,
  thread_id: r.thread_id,
  user_id: r.user_id,
  schedule: r.schedule,
  timezone: r.timezone,
  end_time: r.end_time,
  enabled: r.enabled === 1,
  on_run_completed: r.on_run_completed,
  payload: JSON.parse(r.payload),
  metadata: JSON.parse(r.metadata),
  next_run_date: r.next_run_at === null ? null : new Date(r.next_run_at).toISOString(),
  created_at: r.created_at,
  updated_at: r.updated_at,
});

/** Sort keys of the API → columns (`next_run_date` is stored as epoch ms). */
const SORT_COLUMN: Record<CronQuery["sort_by"], string> = {
  cron_id: "cron_id",
  assistant_id: "assistant_id",
  thread_id: "thread_id",
  next_run_date: "next_run_at",
  end_time: "end_time",
  created_at: "created_at",
  updated_at: "updated_at",
};

/**
 * Crons in SQLite (table `crons`). A thread cron's row references its thread and every cron its
 * assistant, both ON DELETE CASCADE: deleting the thread or the assistant deletes its crons.
 */
export class SqliteCrons implements CronsRepo {
  readonly #db: Db;
  readonly #q: ReturnType<typeof statementCache>;

  constructor(db: Db) {
    this.#db = db;
    this.#q = statementCache(db);
  }

  #get(org: OrgId, cronId: string): CronRow | undefined {
    return this.#q("SELECT * FROM crons WHERE cron_id = ? AND org_id = ?").get(cronId, org);
  }

  async create(org: OrgId, input: CronInput): Promise<Cron> {
    return this.#db.transaction(() => {
      if (input.thread_id !== null) {
        const thread = this.#q("SELECT 1 FROM threads WHERE thread_id = ? AND org_id = ?").get(
          input.thread_id,
          org,
        );
        if (!thread) throw notFound(`Thread with ID ${input.thread_id} not found`);
      }
      const now = new Date().toISOString();
      const row: CronRow = {
        ...input,
        org_id: org,
        enabled: input.enabled ? 1 : 0,
        payload: JSON.stringify(input.payload),
        metadata: JSON.stringify(input.metadata),
        created_at: now,
        updated_at: now,
      };
      this.#q(
        `INSERT INTO crons (cron_id, org_id, assistant_id, thread_id, user_id, schedule, timezone, end_time, enabled,
           on_run_completed, payload, metadata, next_run_at, created_at, updated_at)
         VALUES (@cron_id, @org_id, @assistant_id, @thread_id, @user_id, @schedule, @timezone, @end_time, @enabled,
           @on_run_completed, @payload, @metadata, @next_run_at, @created_at, @updated_at)`,
      ).run(row);
      return toCron(row);
    })();
  }

  async get(org: OrgId, cronId: string): Promise<Cron | null> {
    const row = this.#get(org, cronId);
    return row ? toCron(row) : null;
  }

  async update(org: OrgId, cronId: string, patch: CronPatch): Promise<Cron | null> {
    return this.#db.transaction(() => {
      const row = this.#get(org, cronId);
      if (!row) return null;
      const next: CronRow = {
        ...row,
        ...(patch.schedule !== undefined && { schedule: patch.schedule }),
        ...(patch.timezone !== undefined && { timezone: patch.timezone }),
        ...(patch.end_time !== undefined && { end_time: patch.end_time }),
        ...(patch.enabled !== undefined && { enabled: patch.enabled ? 1 : 0 }),
        ...(patch.on_run_completed !== undefined && { on_run_completed: patch.on_run_completed }),
        ...(patch.payload !== undefined && { payload: JSON.stringify(patch.payload) }),
        ...(patch.metadata !== undefined && { metadata: JSON.stringify(patch.metadata) }),
        ...(patch.next_run_at !== undefined && { next_run_at: patch.next_run_at }),
        updated_at: new Date().toISOString(),
      };
      this.#q(
        `UPDATE crons SET schedule = @schedule, timezone = @timezone, end_time = @end_time, enabled = @enabled,
           on_run_completed = @on_run_completed, payload = @payload, metadata = @metadata, next_run_at = @next_run_at,
           updated_at = @updated_at
         WHERE cron_id = @cron_id`,
      ).run(next);
      return toCron(next);
    })();
  }

  async delete(org: OrgId, cronId: string): Promise<boolean> {
    return this.#q("DELETE FROM crons WHERE cron_id = ? AND org_id = ?").run(cronId, org).changes > 0;
  }

  #where(org: OrgId, q: Partial<CronQuery>): SqlFragment {
    const clauses = ["org_id = ?"];
    const params: unknown[] = [org];
    if (q.assistant_id !== undefined) {
      clauses.push("assistant_id = ?");
      params.push(q.assistant_id);
    }
    if (q.thread_id !== undefined) {
      clauses.push("thread_id = ?");
      params.push(q.thread_id);
    }
    if (q.enabled !== undefined) {
      clauses.push("enabled = ?");
      params.push(q.enabled ? 1 : 0);
    }
    if (q.metadata && Object.keys(q.metadata).length) {
      const f = jsonContains("metadata", q.metadata);
      clauses.push(f.sql);
      params.push(...f.params);
    }
    if (q.auth) {
      const f = authClause("metadata", q.auth);
      clauses.push(f.sql);
      params.push(...f.params);
    }
    return { sql: clauses.join(" AND "), params };
  }

  async search(org: OrgId, q: CronQuery): Promise<{ items: Cron[]; total: number }> {
    const where = this.#where(org, q);
    const column = SORT_COLUMN[q.sort_by];
    const order = q.sort_order === "asc" ? "ASC" : "DESC";
    // NULLs (no thread, no end, not firing) sort last either way; rowid keeps ties in creation order.
    const rows = this.#db
      .prepare(
        `SELECT * FROM crons WHERE ${where.sql}
         ORDER BY ${column} IS NULL, ${column} ${order}, rowid ${order} LIMIT ? OFFSET ?`,
      )
      .all(...where.params, q.limit, q.offset) as CronRow[];
    return { items: rows.map(toCron), total: await this.count(org, q) };
  }

  async count(
    org: OrgId,
    q: Pick<CronQuery, "assistant_id" | "thread_id" | "enabled" | "metadata" | "auth">,
  ): Promise<number> {
    const where = this.#where(org, q);
    return (
      this.#db.prepare(`SELECT COUNT(*) AS n FROM crons WHERE ${where.sql}`).get(...where.params) as {
        n: number;
      }
    ).n;
  }

  async listDue(now: number, limit: number): Promise<DueCron[]> {
    const rows: CronRow[] = this.#q(
      `SELECT * FROM crons WHERE next_run_at IS NOT NULL AND next_run_at <= ? AND enabled = 1
       ORDER BY next_run_at, rowid LIMIT ?`,
    ).all(now, limit);
    return rows.map((r) => ({ org: r.org_id, cron: toCron(r), next_run_at: r.next_run_at! }));
  }

  async claimTick(cronId: string, dueAt: number, nextAt: number | null): Promise<boolean> {
    return (
      this.#q("UPDATE crons SET next_run_at = ? WHERE cron_id = ? AND enabled = 1 AND next_run_at = ?").run(
        nextAt,
        cronId,
        dueAt,
      ).changes === 1
    );
  }

  async nextDueAt(): Promise<number | null> {
    const row = this.#q(
      "SELECT MIN(next_run_at) AS t FROM crons WHERE next_run_at IS NOT NULL AND enabled = 1",
    ).get() as { t: number | null };
    return row.t;
  }
}
