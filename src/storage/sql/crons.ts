/** Crons (table `crons`): deleting a cron's thread deletes it (ON DELETE CASCADE), deleting its assistant too (assistants.ts). */
import { HangarError, notFound } from "../../errors.js";
import type { Cron, CronFilter, CronInput, CronPatch, CronQuery, CronsRepo, DueCron } from "../cron-ports.js";
import type { OrgId } from "../ports.js";
import { changed, type Executor, first, SqlRepo } from "./database.js";
import { CRON_JSON, type Row, recordOf } from "./tables.js";

type CronRow = Row<"crons">;

const toCron = (r: CronRow): Cron => ({
  ...recordOf(r, ["org_id", "enabled", "next_run_at"], CRON_JSON),
  enabled: Boolean(r.enabled),
  next_run_date: r.next_run_at === null ? null : new Date(r.next_run_at).toISOString(),
});

/** The advisory-lock space of the per-organization cron count (the sandbox area's is 726855). */
const CRON_COUNT_LOCK_SPACE = 726856;

const own = (ex: Executor, org: OrgId, cronId: string) =>
  ex.selectFrom("crons").selectAll().where("cron_id", "=", cronId).where("org_id", "=", org);

export class SqlCrons extends SqlRepo implements CronsRepo {
  create(org: OrgId, input: CronInput, maxPerOrg?: number): Promise<Cron> {
    const now = new Date().toISOString();
    const row: CronRow = {
      ...input,
      org_id: org,
      enabled: this.dialect.bool(input.enabled),
      payload: JSON.stringify(input.payload),
      metadata: JSON.stringify(input.metadata),
      created_at: now,
      updated_at: now,
    };
    return this.transaction(function* (tx) {
      if (maxPerOrg !== undefined) {
        // SQLite's IMMEDIATE transaction already serialises creates; Postgres takes the organization's lock.
        const lock = this.dialect.advisoryLock(CRON_COUNT_LOCK_SPACE, org);
        if (lock) yield lock.compile(tx);
        const counted = tx.selectFrom("crons").select((eb) => eb.fn.countAll<number>().as("n"));
        const n = Number((yield* first(counted.where("org_id", "=", org)))?.n ?? 0);
        if (n >= maxPerOrg)
          throw new HangarError(
            "quota",
            `Limit of ${maxPerOrg} crons per organization reached (HANGAR_CRONS_PER_ORG): delete one first`,
          );
      }
      const share = { share: true };
      if (input.thread_id !== null) {
        // FOR SHARE: the thread cannot be deleted between this check and the insert.
        const thread = tx.selectFrom("threads").select("thread_id").where("thread_id", "=", input.thread_id);
        if (!(yield* first(this.dialect.lock(thread.where("org_id", "=", org), share))))
          throw notFound(`Thread with ID ${input.thread_id} not found`);
      }
      // The assistant too (locked against a concurrent delete, which would take the cron with it); one
      // deleted since the caller resolved it is reported as absent, not as a foreign-key error.
      const assistant = yield* first(
        this.dialect.lock(
          tx
            .selectFrom("assistants")
            .select("assistant_id")
            .where("assistant_id", "=", input.assistant_id)
            .where("org_id", "in", [org, ""]), // its own or a system assistant
          share,
        ),
      );
      if (!assistant) throw notFound(`Assistant ${input.assistant_id} not found`);
      yield* changed(tx.insertInto("crons").values(row));
      return toCron(row);
    });
  }

  async get(org: OrgId, cronId: string): Promise<Cron | null> {
    return this.recordOrNull(own(this.database.db, org, cronId), toCron);
  }

  update(org: OrgId, cronId: string, patch: CronPatch): Promise<Cron | null> {
    const updatedAt = new Date().toISOString();
    const changes = {
      ...(patch.schedule !== undefined && { schedule: patch.schedule }),
      ...(patch.timezone !== undefined && { timezone: patch.timezone }),
      ...(patch.end_time !== undefined && { end_time: patch.end_time }),
      ...(patch.enabled !== undefined && { enabled: this.dialect.bool(patch.enabled) }),
      ...(patch.on_run_completed !== undefined && { on_run_completed: patch.on_run_completed }),
      ...(patch.payload !== undefined && { payload: JSON.stringify(patch.payload) }),
      ...(patch.metadata !== undefined && { metadata: JSON.stringify(patch.metadata) }),
      ...(patch.next_run_at !== undefined && { next_run_at: patch.next_run_at }),
      updated_at: updatedAt,
    };
    return this.transaction(function* (tx) {
      const row = yield* first(this.dialect.lock(own(tx, org, cronId)));
      if (!row) return null;
      yield* changed(tx.updateTable("crons").set(changes).where("cron_id", "=", cronId));
      return toCron({ ...row, ...changes });
    });
  }

  async delete(org: OrgId, cronId: string): Promise<boolean> {
    const { numDeletedRows } = await this.database.db
      .deleteFrom("crons")
      .where("cron_id", "=", cronId)
      .where("org_id", "=", org)
      .executeTakeFirstOrThrow();
    return numDeletedRows > 0n;
  }

  #filtered(org: OrgId, q: CronFilter) {
    const d = this.dialect;
    return this.database.db
      .selectFrom("crons")
      .where("org_id", "=", org)
      .$if(q.assistant_id !== undefined, (qb) => qb.where("assistant_id", "=", q.assistant_id!))
      .$if(q.thread_id !== undefined, (qb) => qb.where("thread_id", "=", q.thread_id!))
      .$if(q.enabled !== undefined, (qb) => qb.where("enabled", "=", d.bool(q.enabled!)))
      .$if(Boolean(q.metadata), (qb) => qb.where(d.jsonContains("metadata", q.metadata!)))
      .$if(Boolean(q.auth), (qb) => qb.where(d.authFilter("metadata", q.auth!)));
  }

  search(org: OrgId, q: CronQuery): Promise<{ items: Cron[]; total: number }> {
    const column = q.sort_by === "next_run_date" ? "next_run_at" : q.sort_by;
    // NULLs (no thread, no end, not firing) sort last either way.
    return this.searchPage(
      this.#filtered(org, q),
      (qb, order) => qb.selectAll().orderBy(column, (ob) => ob[order]().nullsLast()),
      toCron,
      q,
    );
  }

  count(org: OrgId, q: CronFilter): Promise<number> {
    return this.countOf(this.#filtered(org, q));
  }

  async listDue(now: number, limit: number): Promise<DueCron[]> {
    const rows = await this.database.db
      .selectFrom("crons")
      .selectAll()
      .where("next_run_at", "is not", null)
      .where("next_run_at", "<=", now)
      .where("enabled", "=", this.dialect.bool(true))
      .orderBy("next_run_at")
      .orderBy(this.dialect.insertionOrder())
      .limit(limit)
      .execute();
    return rows.map((r) => ({ org: r.org_id, cron: toCron(r), next_run_at: r.next_run_at as number }));
  }

  /**
   * One conditional UPDATE, so a tick is won once across processes: on Postgres a concurrent claimer
   * waits for the winner's row lock, then finds `next_run_at` moved on and updates nothing.
   */
  async claimTick(cronId: string, dueAt: number, nextAt: number | null): Promise<boolean> {
    const { numUpdatedRows } = await this.database.db
      .updateTable("crons")
      .set({ next_run_at: nextAt })
      .where("cron_id", "=", cronId)
      .where("enabled", "=", this.dialect.bool(true))
      .where("next_run_at", "=", dueAt)
      .executeTakeFirstOrThrow();
    return numUpdatedRows === 1n;
  }

  async nextDueAt(): Promise<number | null> {
    const { t } = await this.database.db
      .selectFrom("crons")
      .select((eb) => eb.fn.min("next_run_at").as("t"))
      .where("next_run_at", "is not", null)
      .where("enabled", "=", this.dialect.bool(true))
      .executeTakeFirstOrThrow();
    return t === null ? null : Number(t);
  }
}
