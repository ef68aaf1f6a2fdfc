import { type Context, Hono } from "hono";
import { z } from "zod";
import type { AuthAction } from "../auth/custom.js";
import { validationFailed } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import { body, params } from "../http/validation.js";
import { isTimeZone, scheduleError, shortestInterval } from "../runtime/crons/expression.js";
import {
  CRON_PAYLOAD_FIELDS,
  type CronCreateRequest,
  type CronUpdateRequest,
} from "../runtime/crons/service.js";
import { defaultAssistantId } from "../runtime/graphs/graphs.js";
import { authConfigurable } from "../runtime/runs/service.js";
import type { JsonObject } from "../storage/ports.js";
import { accessOf, assertUsableAssistant, authorize, visible, visibleThread } from "./authz.js";
import { type AgentDeps, pick } from "./context.js";
import { filterObj, queryText, RunCreate, ThreadPath } from "./schemas.js";

// ---- schemas (unknown fields accepted, wrong types 422; see schemas.ts) -----------------------

const schedule = z.string({ error: "must be a cron expression string" }).superRefine((s, ctx) => {
  const problem = scheduleError(s);
  if (problem) ctx.addIssue({ code: "custom", message: `Invalid cron schedule "${s}": ${problem}` });
});

const timezone = z.string({ error: "must be an IANA time zone name" }).refine(isTimeZone, {
  error: (iss) => `Unknown time zone "${iss.input}": use an IANA name like Europe/Paris`,
});

const dateTime = z
  .string({ error: "must be an ISO 8601 date-time" })
  .refine((s) => /^\d{4}-\d{2}-\d{2}/.test(s) && !Number.isNaN(Date.parse(s)), {
    error: "must be an ISO 8601 date-time",
  });

/** The run a firing makes: the fields of RunCreate a cron keeps in its payload, plus the cron's own. */
const cronFields = {
  schedule,
  timezone: timezone.nullish(),
  end_time: dateTime.nullish(),
  enabled: z.boolean({ error: "must be true or false" }).nullish(),
  on_run_completed: z.enum(["delete", "keep"]).nullish(),
};

export const CronCreate = RunCreate.pick({
  assistant_id: true,
  input: true,
  metadata: true,
  config: true,
  context: true,
  webhook: true,
  interrupt_before: true,
  interrupt_after: true,
  stream_mode: true,
  stream_subgraphs: true,
  stream_resumable: true,
  multitask_strategy: true,
  durability: true,
  checkpoint_during: true,
}).extend(cronFields);

export const CronPatch = CronCreate.omit({ assistant_id: true }).partial();

export const CronPath = z.object({ cron_id: z.uuid({ message: "must be a UUID" }) });

const CRON_SELECT = [
  "cron_id",
  "assistant_id",
  "thread_id",
  "end_time",
  "schedule",
  "created_at",
  "updated_at",
  "user_id",
  "payload",
  "next_run_date",
  "metadata",
  "now",
  "timezone",
  "enabled",
  "on_run_completed",
] as const;

const cronFilters = {
  assistant_id: queryText().nullish(),
  thread_id: z.uuid({ message: "must be a UUID" }).nullish(),
  enabled: z.boolean({ error: "must be true or false" }).nullish(),
  metadata: filterObj.nullish(),
};

export const CronSearch = z.object({
  ...cronFilters,
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  offset: z.coerce.number().int().min(0).default(0),
  sort_by: z
    .enum(["cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at", "updated_at"])
    .default("created_at"),
  sort_order: z.enum(["asc", "desc"]).default("desc"),
  select: z.array(z.enum(CRON_SELECT)).nullish(),
});

export const CronCount = z.object(cronFilters);

/** `/runs/crons` and `/threads/{id}/runs/crons`: periodic runs, fired by the runtime's CronScheduler. */
export function cronRoutes(deps: AgentDeps) {
  const { graphs } = deps;
  const { crons } = deps;
  const { minIntervalSeconds } = deps.config.limits.crons;
  /** A schedule firing more often than HANGAR_CRON_MIN_INTERVAL_SECONDS is a 422 naming `schedule`. */
  const checkInterval = (schedule: string | undefined) => {
    if (schedule === undefined) return;
    const every = shortestInterval(schedule) / 1000;
    if (every >= minIntervalSeconds) return;
    throw validationFailed([
      {
        loc: ["body", "schedule"],
        msg: `Cron schedule "${schedule}" fires every ${every} s; the shortest interval allowed is ${minIntervalSeconds} s (HANGAR_CRON_MIN_INTERVAL_SECONDS)`,
        type: "value_error",
      },
    ]);
  };
  /** The path's cron, if this user may `action` it (404 otherwise), and the request as the handler left it. */
  const load = async <V extends object>(c: Context<AppEnv>, action: AuthAction, value: V) => {
    const { cron_id } = params(c, CronPath);
    const cron = await crons.get(orgOf(c), cron_id).catch(() => null);
    const { row, value: changed } = await visible(deps, c, "crons", action, cron_id, cron, value);
    return { cron: row, value: changed };
  };
  /**
   * `crons:create`: the handler may stamp the metadata; the creating user is kept with the cron, and
   * its runs act as that user (`configurable.langgraph_auth_*`), as runs created by a request do.
   */
  const create = async (c: Context<AppEnv>, threadId: string | null, b: CronCreateRequest) => {
    checkInterval(b.schedule);
    await assertUsableAssistant(deps, orgOf(c), accessOf(deps, c), b.assistant_id);
    if (threadId !== null) await visibleThread(deps, c, threadId, "create_run");
    const { value } = await authorize(deps, c, "crons", "create", {
      thread_id: threadId,
      schedule: b.schedule,
      end_time: b.end_time ?? null,
      metadata: b.metadata ?? {},
      payload: Object.fromEntries(CRON_PAYLOAD_FIELDS.map((f) => [f, b[f]])),
    });
    const user = c.get("auth");
    const request = { ...b, metadata: value.metadata };
    if (user) {
      const config = (b.config as JsonObject | undefined) ?? {};
      const configurable = { ...((config.configurable as JsonObject) ?? {}), ...authConfigurable(user) };
      request.config = { ...config, configurable };
    }
    return crons.create(orgOf(c), threadId, request, user?.user.identity, deps.config.limits.crons.perOrg);
  };
  /** Filters as stored: a graph id stands for its default assistant, as everywhere else. */
  const filters = (b: z.output<typeof CronCount>) => ({
    assistant_id: b.assistant_id
      ? graphs.has(b.assistant_id)
        ? defaultAssistantId(b.assistant_id)
        : b.assistant_id
      : undefined,
    thread_id: b.thread_id ?? undefined,
    enabled: b.enabled ?? undefined,
    metadata: b.metadata ?? undefined,
  });

  return new Hono<AppEnv>()
    .post("/runs/crons", async (c) => {
      const b = await body(c, CronCreate);
      return c.json(await create(c, null, b as CronCreateRequest));
    })
    .post("/threads/:thread_id/runs/crons", async (c) => {
      const { thread_id } = params(c, ThreadPath);
      const b = await body(c, CronCreate);
      return c.json(await create(c, thread_id, b as CronCreateRequest));
    })
    .post("/runs/crons/search", async (c) => {
      const b = await body(c, CronSearch);
      const { filter } = await authorize(deps, c, "crons", "search", b);
      const { items, total } = await crons.search(orgOf(c), {
        ...filters(b),
        auth: filter,
        limit: b.limit,
        offset: b.offset,
        sort_by: b.sort_by,
        sort_order: b.sort_order,
      });
      c.header("X-Pagination-Total", String(total));
      if (b.offset + items.length < total) c.header("X-Pagination-Next", String(b.offset + items.length));
      return c.json(pick(items, b.select));
    })
    .post("/runs/crons/count", async (c) => {
      const b = await body(c, CronCount);
      const { filter } = await authorize(deps, c, "crons", "search", b);
      return c.json(await crons.count(orgOf(c), { ...filters(b), auth: filter }));
    })
    .patch("/runs/crons/:cron_id", async (c) => {
      const patch = (await body(c, CronPatch)) as CronUpdateRequest;
      checkInterval(patch.schedule ?? undefined);
      // The handler sees the patch and may change it (re-stamp its metadata, say).
      const { cron, value: b } = await load(c, "update", patch);
      const { cron_id } = cron;
      // A new config (null included) must not drop or forge the user the cron's runs act as: the updater's.
      const user = c.get("auth");
      if (user && b.config !== undefined) {
        const config = (b.config as JsonObject | null) ?? {};
        const configurable = { ...((config.configurable as JsonObject) ?? {}), ...authConfigurable(user) };
        b.config = { ...config, configurable };
      }
      return c.json(await crons.update(orgOf(c), cron_id, b));
    })
    .delete("/runs/crons/:cron_id", async (c) => {
      const { cron_id } = (await load(c, "delete", {})).cron;
      await crons.delete(orgOf(c), cron_id);
      return c.body(null, 204);
    });
}
