/**
 * The storage port of crons (`/runs/crons`, `/threads/{id}/runs/crons`) and of the scheduler that
 * fires them. Re-exported by `ports.ts`.
 *
 * Cron expressions are parsed in the runtime (runtime/crons/expression.ts), never here: an adapter stores
 * the next firing time it is given (`next_run_at`, epoch ms) and moves it forward only through
 * `claimTick`, a compare-and-set. That is what makes a tick fire once when several Hangar processes
 * share the database: each may see the cron due, only one moves `next_run_at` on from the value it saw.
 */
import type { JsonObject, OrgId, SearchQuery } from "./ports.js";

/** A cron as the API shows it (the official server's Cron, plus `timezone` and `on_run_completed`). */
export interface Cron {
  cron_id: string;
  assistant_id: string;
  /** The thread each firing runs on; null for a stateless cron (a new thread per firing). */
  thread_id: string | null;
  user_id: string | null;
  schedule: string;
  /** IANA time zone the schedule is read in; null = UTC. */
  timezone: string | null;
  /** ISO time after which the cron fires no more; null = no end. */
  end_time: string | null;
  enabled: boolean;
  /** Stateless crons: keep or delete each firing's thread after its run. Null for thread crons. */
  on_run_completed: "delete" | "keep" | null;
  /** The run request each firing makes (input, config, context, stream_mode, …). */
  payload: JsonObject;
  metadata: JsonObject;
  /** When it fires next; null when disabled or past its end. */
  next_run_date: string | null;
  created_at: string;
  updated_at: string;
}

export type CronInput = Omit<Cron, "next_run_date" | "created_at" | "updated_at"> & {
  /** Epoch ms; null = it does not fire. */
  next_run_at: number | null;
};

/** Fields to replace (payload and metadata are whole new values, merged by the caller). */
export type CronPatch = Partial<Omit<CronInput, "cron_id" | "assistant_id" | "thread_id" | "user_id">>;

export interface CronQuery extends SearchQuery {
  assistant_id?: string;
  thread_id?: string;
  enabled?: boolean;
  metadata?: JsonObject;
  sort_by:
    | "cron_id"
    | "assistant_id"
    | "thread_id"
    | "next_run_date"
    | "end_time"
    | "created_at"
    | "updated_at";
}

export type CronFilter = Pick<CronQuery, "assistant_id" | "thread_id" | "enabled" | "metadata" | "auth">;

/** A cron whose next firing time has come, with what the scheduler needs to fire it. */
export interface DueCron {
  org: OrgId;
  cron: Cron;
  /** The stored next firing time (epoch ms) the claim must find unchanged. */
  next_run_at: number;
}

export interface CronsRepo {
  /**
   * Creates a cron; a thread cron's thread must exist in the organization (else `not_found`). With
   * `maxPerOrg`, refused (`quota`) when the organization already has that many: counted and written in
   * one transaction that concurrent creates of the organization wait for, so none overruns it.
   */
  create(org: OrgId, input: CronInput, maxPerOrg?: number): Promise<Cron>;
  get(org: OrgId, cronId: string): Promise<Cron | null>;
  /** Writes the given fields (and updated_at); null if absent. */
  update(org: OrgId, cronId: string, patch: CronPatch): Promise<Cron | null>;
  delete(org: OrgId, cronId: string): Promise<boolean>;
  search(org: OrgId, query: CronQuery): Promise<{ items: Cron[]; total: number }>;
  count(org: OrgId, query: CronFilter): Promise<number>;
  /** Enabled crons of every organization due at `now`, earliest first, at most `limit`. */
  listDue(now: number, limit: number): Promise<DueCron[]>;
  /**
   * Claims the tick due at `dueAt`: sets `next_run_at` to `nextAt` if the cron is still enabled and
   * its `next_run_at` is still `dueAt`. True when this caller won the tick and must fire it.
   */
  claimTick(cronId: string, dueAt: number, nextAt: number | null): Promise<boolean>;
  /** The earliest `next_run_at` of enabled crons (epoch ms), or null when none will fire. */
  nextDueAt(): Promise<number | null>;
}
