import { randomUUID } from "node:crypto";
import { notFound } from "../../errors.js";
import type { Cron, CronQuery, JsonObject, OrgId, Storage } from "../../storage/ports.js";
import type { RunRequest, RunService } from "../runs/service.js";
import { nextRunAt } from "./expression.js";

/** Fields of a cron request that make up the run each firing creates (the cron's `payload`). */
export const CRON_PAYLOAD_FIELDS = [
  "input",
  "config",
  "context",
  "webhook",
  "interrupt_before",
  "interrupt_after",
  "multitask_strategy",
  "stream_mode",
  "stream_subgraphs",
  "stream_resumable",
  "durability",
  "checkpoint_during",
] as const;

type PayloadField = (typeof CRON_PAYLOAD_FIELDS)[number];

/** A validated `POST /runs/crons` or `/threads/{id}/runs/crons` body (schedule and time zone checked). */
export type CronCreateRequest = {
  assistant_id: string;
  schedule: string;
  timezone?: string | null;
  end_time?: string | null;
  enabled?: boolean | null;
  on_run_completed?: "delete" | "keep" | null;
  metadata?: JsonObject | null;
} & { [K in PayloadField]?: unknown };

/** A validated `PATCH /runs/crons/{id}` body: absent = unchanged; null clears (end_time, time zone, payload fields). */
export type CronUpdateRequest = Partial<Omit<CronCreateRequest, "assistant_id">>;

const payloadOf = (req: Record<string, unknown>, base: JsonObject = {}): JsonObject => {
  const payload: JsonObject = { ...base };
  for (const field of CRON_PAYLOAD_FIELDS) {
    if (req[field] === null) delete payload[field];
    else if (req[field] !== undefined) payload[field] = req[field];
  }
  return payload;
};

const epoch = (iso: string | null | undefined) => (iso ? Date.parse(iso) : null);

/** The run a firing of `cron` creates: its payload, its metadata plus `cron_id`, on its thread or a new one. */
export function runRequestOf(cron: Cron): RunRequest {
  return {
    ...(cron.payload as Partial<RunRequest>),
    assistant_id: cron.assistant_id,
    metadata: { ...cron.metadata, cron_id: cron.cron_id },
    if_not_exists: "reject",
    on_completion: cron.thread_id === null ? (cron.on_run_completed ?? "delete") : null,
  };
}

/**
 * Cron management for the routes: resolves the assistant, stores the payload, computes the next
 * firing time, and tells the scheduler (`onChange`) so it re-arms its one timer.
 */
export class CronService {
  constructor(
    private readonly storage: Storage,
    private readonly runs: Pick<RunService, "assistant"> & Partial<Pick<RunService, "checkWebhook">>,
    private readonly onChange: () => void = () => {},
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * `userId`: the identity of the user who creates it (custom auth), shown as the cron's `user_id`.
   * `maxPerOrg`: the organization's cron limit (storage refuses past it, atomically).
   */
  async create(
    org: OrgId,
    threadId: string | null,
    req: CronCreateRequest,
    userId?: string,
    maxPerOrg?: number,
  ): Promise<Cron> {
    const assistant = await this.runs.assistant(org, req.assistant_id);
    await this.runs.checkWebhook?.(req.webhook as string | null | undefined);
    const schedule = req.schedule.trim();
    const timezone = req.timezone ?? null;
    const end_time = req.end_time ? new Date(req.end_time).toISOString() : null;
    const enabled = req.enabled ?? true;
    const cron = await this.storage.crons.create(
      org,
      {
        cron_id: randomUUID(),
        assistant_id: assistant.assistant_id,
        thread_id: threadId,
        user_id: userId ?? null,
        schedule,
        timezone,
        end_time,
        enabled,
        on_run_completed: threadId === null ? (req.on_run_completed ?? "delete") : null,
        payload: payloadOf(req),
        metadata: req.metadata ?? {},
        next_run_at: nextRunAt(schedule, timezone, this.clock(), epoch(end_time)),
      },
      maxPerOrg,
    );
    this.onChange();
    return this.#present(cron);
  }

  async get(org: OrgId, cronId: string): Promise<Cron> {
    return this.#present(await this.#stored(org, cronId));
  }

  async #stored(org: OrgId, cronId: string): Promise<Cron> {
    const cron = await this.storage.crons.get(org, cronId);
    if (!cron) throw notFound(`Cron ${cronId} not found`);
    return cron;
  }

  /**
   * A disabled cron never fires (the scheduler only claims enabled ones), but its `next_run_date` still
   * says when it would: the next tick of its current schedule from now, so it never shows a stale past
   * tick. Enabling it stores that tick again from then.
   */
  #present(cron: Cron): Cron {
    if (cron.enabled) return cron;
    const next = nextRunAt(cron.schedule, cron.timezone, this.clock(), epoch(cron.end_time));
    return { ...cron, next_run_date: next === null ? null : new Date(next).toISOString() };
  }

  /**
   * Applies a patch. Changing the schedule, time zone, end or enabled flag recomputes the next firing
   * from now (ticks missed while disabled are not fired); payload fields replace the stored ones and
   * metadata is merged, as for threads and assistants.
   */
  async update(org: OrgId, cronId: string, req: CronUpdateRequest): Promise<Cron> {
    const current = await this.#stored(org, cronId);
    await this.runs.checkWebhook?.(req.webhook as string | null | undefined);
    const schedule = req.schedule?.trim() ?? current.schedule;
    const timezone = req.timezone !== undefined ? req.timezone : current.timezone;
    const end_time =
      req.end_time !== undefined
        ? req.end_time
          ? new Date(req.end_time).toISOString()
          : null
        : current.end_time;
    const enabled = req.enabled ?? current.enabled;
    const timing = [req.schedule, req.timezone, req.end_time, req.enabled].some((v) => v !== undefined);
    const updated = await this.storage.crons.update(org, cronId, {
      schedule,
      timezone,
      end_time,
      enabled,
      ...(current.thread_id === null && req.on_run_completed && { on_run_completed: req.on_run_completed }),
      payload: payloadOf(req, current.payload),
      metadata: { ...current.metadata, ...(req.metadata ?? {}) },
      ...(timing && { next_run_at: nextRunAt(schedule, timezone, this.clock(), epoch(end_time)) }),
    });
    if (!updated) throw notFound(`Cron ${cronId} not found`);
    this.onChange();
    return this.#present(updated);
  }

  async delete(org: OrgId, cronId: string): Promise<void> {
    if (!(await this.storage.crons.delete(org, cronId))) throw notFound(`Cron ${cronId} not found`);
    this.onChange();
  }

  async search(org: OrgId, query: CronQuery): Promise<{ items: Cron[]; total: number }> {
    const { items, total } = await this.storage.crons.search(org, query);
    return { items: items.map((cron) => this.#present(cron)), total };
  }

  async count(
    org: OrgId,
    query: Pick<CronQuery, "assistant_id" | "thread_id" | "enabled" | "metadata" | "auth">,
  ) {
    return this.storage.crons.count(org, query);
  }
}
