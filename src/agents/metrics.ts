/**
 * `GET /metrics`: the official server's system metrics, in the Prometheus text format (default) or JSON.
 *
 * - `queue`: the run queue in storage, over every organization and every process sharing the database
 *   (`runs.stats()`);
 * - `workers`: this process's own (its executor threads' or its dispatcher's slots), absent in a process
 *   that executes no runs (`--no-workers`), as the official API-only pods leave them out;
 * - Hangar's own figures beside them: runs started and ended by this process since it started, by how
 *   they ended, and the process's start time and memory.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../http/context.js";
import { query } from "../http/validation.js";
import { RUN_ENDS, type RunEnd } from "../runtime/runs/worker-stats.js";
import type { QueueStats } from "../storage/ports.js";
import type { AgentDeps } from "./context.js";

export const MetricsQuery = z.object({
  format: z
    .enum(["prometheus", "json"])
    .default("prometheus")
    .describe("`prometheus` (the text exposition format, version 0.0.4) or `json`."),
});

const seconds = z.number().nullable();

export const Metrics = z
  .object({
    queue: z
      .object({
        n_pending: z.number().int().describe("Runs waiting to execute (delayed ones included)."),
        n_running: z.number().int().describe("Runs executing now, in any process."),
        pending_runs_wait_time_max_secs: seconds.describe(
          "How long the longest-waiting due run has waited, in seconds (from when it became due).",
        ),
        pending_runs_wait_time_med_secs: seconds.describe("The median wait of the due runs, in seconds."),
        pending_unblocked_runs_wait_time_max_secs: seconds.describe(
          "The longest wait among due runs whose thread executes no other run, in seconds.",
        ),
      })
      .describe("The run queue, shared by every process on the same database."),
    workers: z
      .object({
        max: z.number().int().describe("Runs this process executes at once."),
        active: z.number().int().describe("Runs executing in this process now."),
        available: z.number().int().describe("Free slots of this process."),
      })
      .optional()
      .describe("This process's workers; absent when it executes no runs (`--no-workers`)."),
    runs: z
      .object({
        started: z.number().int().describe("Executions this process started (each attempt counts)."),
        ended: z
          .object(
            Object.fromEntries(RUN_ENDS.map((end) => [end, z.number().int()])) as Record<RunEnd, z.ZodNumber>,
          )
          .describe("Executions this process ended, by how (`handed_back`: requeued for another attempt)."),
      })
      .describe("Hangar's: runs executed by this process since it started."),
    process: z
      .object({
        start_time_seconds: z.number().describe("When this process started, in Unix seconds."),
        resident_memory_bytes: z.number().int(),
      })
      .describe("Hangar's: this process."),
  })
  .describe("System metrics (`format=json`).");

type MetricsBody = z.infer<typeof Metrics>;

export function metricsRoutes(deps: AgentDeps) {
  return new Hono<AppEnv>().get("/metrics", async (c) => {
    const { format } = query(c, MetricsQuery);
    const figures = await collect(deps);
    if (format === "json") return c.json(figures);
    return c.body(prometheusText(figures), 200, {
      "content-type": "text/plain; version=0.0.4; charset=utf-8",
    });
  });
}

async function collect(deps: AgentDeps): Promise<MetricsBody> {
  const queue: QueueStats = await deps.storage.runs.stats();
  const totals = deps.workers?.totals();
  const workers =
    totals && totals.max > 0
      ? { max: totals.max, active: totals.active, available: Math.max(0, totals.max - totals.active) }
      : undefined;
  const body: MetricsBody = {
    queue,
    ...(workers ? { workers } : {}),
    runs: {
      started: totals?.started ?? 0,
      ended: totals?.ended ?? (Object.fromEntries(RUN_ENDS.map((end) => [end, 0])) as Record<RunEnd, number>),
    },
    process: {
      start_time_seconds: Math.round(Date.now() / 1000 - process.uptime()),
      resident_memory_bytes: process.memoryUsage.rss(),
    },
  };
  return body;
}

/** The text exposition format (version 0.0.4): HELP and TYPE before each family, a final newline. */
function prometheusText(m: MetricsBody): string {
  const lines: string[] = [];
  const family = (name: string, type: "gauge" | "counter", help: string, samples: [string, number][]) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of samples) lines.push(`${name}${labels} ${value}`);
  };
  const gauge = (name: string, help: string, value: number | null) =>
    family(name, "gauge", help, [["", value ?? 0]]);

  const q = m.queue;
  gauge("lg_api_num_pending_runs", "The number of runs currently pending.", q.n_pending);
  gauge("lg_api_num_running_runs", "The number of runs currently running.", q.n_running);
  gauge(
    "lg_api_pending_runs_wait_time_max",
    "The maximum time a run has been pending, in seconds.",
    q.pending_runs_wait_time_max_secs,
  );
  gauge(
    "lg_api_pending_runs_wait_time_med",
    "The median pending wait time across runs, in seconds.",
    q.pending_runs_wait_time_med_secs,
  );
  gauge(
    "lg_api_pending_unblocked_runs_wait_time_max",
    "The maximum time a run has been pending excluding runs blocked by another run on the same thread, in seconds.",
    q.pending_unblocked_runs_wait_time_max_secs,
  );
  if (m.workers) {
    gauge("lg_api_workers_max", "The maximum number of workers available.", m.workers.max);
    gauge("lg_api_workers_active", "The number of currently active workers.", m.workers.active);
    gauge("lg_api_workers_available", "The number of available (idle) workers.", m.workers.available);
  }
  family("hangar_runs_started_total", "counter", "Run executions this process started.", [
    ["", m.runs.started],
  ]);
  family(
    "hangar_runs_ended_total",
    "counter",
    "Run executions this process ended, by outcome (handed_back: requeued for another attempt).",
    RUN_ENDS.map((end) => [`{outcome="${end}"}`, m.runs.ended[end]]),
  );
  gauge(
    "process_start_time_seconds",
    "Start time of the process since unix epoch in seconds.",
    m.process.start_time_seconds,
  );
  gauge("process_resident_memory_bytes", "Resident memory size in bytes.", m.process.resident_memory_bytes);
  return `${lines.join("\n")}\n`;
}
