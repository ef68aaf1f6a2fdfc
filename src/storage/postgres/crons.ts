import { notFound } from "../../errors.js";
import type {
  Cron,
  CronInput,
  CronPatch,
  CronQuery,
  CronsRepo,
  DueCron,
  JsonObject,
  OrgId,
} from "../ports.js";
import type { PgDatabase, Queryable } from "./database.js";
import { authClause, jsonContains, Params } from "./json-filter.js";

interface CronRow {
  cron_id: string;
  org_id: string;
  assistant_id: string;
  thread_id: string | null;
  user_id: string | null;
  schedule: string;
  timezone: string | null;
  end_time: string | null;
  enabled: boolean;
  on_run_completed: "delete" | "keep" | null;
  payload: JsonObject;
  metadata: JsonObject;
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
  enabled: r.enabled,
  on_run_completed: r.on_run_completed,
  payload: r.payload,
  metadata: r.metadata,
  next_run_date: r.next_run_at === null ? null : new Date(r.next_run_at).toISOString(),
  created_at: r.created_at,
  updated_at: r.updated_at,
});

const SORT_COLUMN: Record<CronQuery["sort_by"], string> = {
  cron_id: "cron_id",
  assistant_id: "assistant_id",
  thread_id: "thread_id",
  next_run_date: "next_run_at",
  end_time: "end_time",
  created_at: "created_at",
  updated_at: "updated_at",
};

/** Crons on Postgres; the twin of sqlite/crons.ts (same cascades, same compare-and-set `claimTick`). */
export class PgCrons implements CronsRepo {
  readonly #db: PgDatabase;

  constructor(db: PgDatabase) {
    this.#db = db;
  }

  async #get(c: Queryable, org: OrgId, cronId: string, lock = false): Promise<CronRow | undefined> {
    const { rows } = await c.query<CronRow>(
      `SELECT * FROM crons WHERE cron_id = $1 AND org_id = $2${lock ? " FOR UPDATE" : ""}`,
      [cronId, org],
    );
    return rows[0];
  }

  async create(org: OrgId, input: CronInput): Promise<Cron> {
    return this.#db.tx(async (c) => {
      if (input.thread_id !== null) {
        // FOR SHARE: the thread cannot be deleted between this check and the insert.
        const thread = await c.query("SELECT 1 FROM threads WHERE thread_id = $1 AND org_id = $2 FOR SHARE", [
          input.thread_id,
          org,
        ]);
        if (!thread.rows.length) throw notFound(`Thread with ID ${input.thread_id} not found`);
      }
      // The assistant too (its row is locked against a concurrent delete, which would take the cron with it).
      const assistant = await c.query("SELECT 1 FROM assistants WHERE assistant_id = $1 FOR SHARE", [
        input.assistant_id,
      ]);
      if (!assistant.rows.length) throw notFound(`Assistant ${input.assistant_id} not found`);
      const now = new Date().toISOString();
      const { rows } = await c.query<CronRow>(
        `INSERT INTO crons (cron_id, org_id, assistant_id, thread_id, user_id, schedule, timezone, end_time, enabled,
           on_run_completed, payload, metadata, next_run_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14) RETURNING *`,
        [
          input.cron_id,
          org,
          input.assistant_id,
          input.thread_id,
          input.user_id,
          input.schedule,
          input.timezone,
          input.end_time,
          input.enabled,
          input.on_run_completed,
          JSON.stringify(input.payload),
          JSON.stringify(input.metadata),
          input.next_run_at,
          now,
        ],
      );
      return toCron(rows[0]);
    });
  }

  async get(org: OrgId, cronId: string): Promise<Cron | null> {
    const row = await this.#get(this.#db, org, cronId);
    return row ? toCron(row) : null;
  }

  async update(org: OrgId, cronId: string, patch: CronPatch): Promise<Cron | null> {
    return this.#db.tx(async (c) => {
      const row = await this.#get(c, org, cronId, true);
      if (!row) return null;
      const next: CronRow = {
        ...row,
        ...(patch.schedule !== undefined && { schedule: patch.schedule }),
        ...(patch.timezone !== undefined && { timezone: patch.timezone }),
        ...(patch.end_time !== undefined && { end_time: patch.end_time }),
        ...(patch.enabled !== undefined && { enabled: patch.enabled }),
        ...(patch.on_run_completed !== undefined && { on_run_completed: patch.on_run_completed }),
        ...(patch.payload !== undefined && { payload: patch.payload }),
        ...(patch.metadata !== undefined && { metadata: patch.metadata }),
        ...(patch.next_run_at !== undefined && { next_run_at: patch.next_run_at }),
        updated_at: new Date().toISOString(),
      };
      await c.query(
        `UPDATE crons SET schedule = $2, timezone = $3, end_time = $4, enabled = $5, on_run_completed = $6,
           payload = $7, metadata = $8, next_run_at = $9, updated_at = $10 WHERE cron_id = $1`,
        [
          cronId,
          next.schedule,
          next.timezone,
          next.end_time,
          next.enabled,
          next.on_run_completed,
          JSON.stringify(next.payload),
          JSON.stringify(next.metadata),
          next.next_run_at,
          next.updated_at,
        ],
      );
      return toCron(next);
    });
  }

  async delete(org: OrgId, cronId: string): Promise<boolean> {
    const { rowCount } = await this.#db.query("DELETE FROM crons WHERE cron_id = $1 AND org_id = $2", [
      cronId,
      org,
    ]);
    return (rowCount ?? 0) > 0;
  }

  #where(org: OrgId, q: Partial<CronQuery>, params: Params): string {
    const clauses = [`org_id = ${params.add(org)}`];
    if (q.assistant_id !== undefined) clauses.push(`assistant_id = ${params.add(q.assistant_id)}`);
    if (q.thread_id !== undefined) clauses.push(`thread_id = ${params.add(q.thread_id)}`);
    if (q.enabled !== undefined) clauses.push(`enabled = ${params.add(q.enabled)}`);
    if (q.metadata && Object.keys(q.metadata).length)
      clauses.push(jsonContains("metadata", q.metadata, params));
    if (q.auth) clauses.push(authClause("metadata", q.auth, params));
    return clauses.join(" AND ");
  }

  async search(org: OrgId, q: CronQuery): Promise<{ items: Cron[]; total: number }> {
    const params = new Params();
    const where = this.#where(org, q, params);
    const column = SORT_COLUMN[q.sort_by];
    const order = q.sort_order === "asc" ? "ASC" : "DESC";
    // NULLs (no thread, no end, not firing) sort last either way; seq keeps ties in creation order.
    const { rows } = await this.#db.query<CronRow>(
      `SELECT * FROM crons WHERE ${where} ORDER BY ${column} ${order} NULLS LAST, seq ${order}
       LIMIT ${params.add(q.limit)} OFFSET ${params.add(q.offset)}`,
      params.values,
    );
    return { items: rows.map(toCron), total: await this.count(org, q) };
  }

  async count(
    org: OrgId,
    q: Pick<CronQuery, "assistant_id" | "thread_id" | "enabled" | "metadata" | "auth">,
  ): Promise<number> {
    const params = new Params();
    const where = this.#where(org, q, params);
    const { rows } = await this.#db.query<{ n: number }>(
      `SELECT COUNT(*) AS n FROM crons WHERE ${where}`,
      params.values,
    );
    return rows[0].n;
  }

  async listDue(now: number, limit: number): Promise<DueCron[]> {
    const { rows } = await this.#db.query<CronRow>(
      `SELECT * FROM crons WHERE next_run_at IS NOT NULL AND next_run_at <= $1 AND enabled
       ORDER BY next_run_at, seq LIMIT $2`,
      [now, limit],
    );
    return rows.map((r) => ({ org: r.org_id, cron: toCron(r), next_run_at: r.next_run_at as number }));
  }

  async claimTick(cronId: string, dueAt: number, nextAt: number | null): Promise<boolean> {
    const { rowCount } = await this.#db.query(
      "UPDATE crons SET next_run_at = $2 WHERE cron_id = $1 AND enabled AND next_run_at = $3",
      [cronId, nextAt, dueAt],
    );
    return rowCount === 1;
  }

  async nextDueAt(): Promise<number | null> {
    const { rows } = await this.#db.query<{ t: number | null }>(
      "SELECT MIN(next_run_at) AS t FROM crons WHERE next_run_at IS NOT NULL AND enabled",
    );
    return rows[0].t;
  }
}
