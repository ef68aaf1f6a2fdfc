import type { CustomAuth } from "../auth/custom.js";
import type { Config } from "../config/index.js";
import type { CronService } from "../runtime/crons/service.js";
import type { GraphRegistry } from "../runtime/graphs/graphs.js";
import type { RunService } from "../runtime/runs/service.js";
import type { WorkerStatsTable } from "../runtime/runs/worker-stats.js";
import type { HangarStore } from "../runtime/store/store.js";
import type { BoxService } from "../sandboxes/boxes.js";
import type { Storage } from "../storage/ports.js";
import type { UiBundles } from "../ui/bundle.js";

/** What the agent-server routes need, passed in when the app is built (no module singletons). */
export interface AgentDeps {
  config: Config;
  storage: Storage;
  graphs: GraphRegistry;
  runs: RunService;
  /**
   * The long-term memory store graphs also get (server.ts builds it from langgraph.json `store`).
   * Without it the store routes use a store with default settings (no semantic index).
   */
  store?: HangarStore;
  /** Running sandboxes and pools (server.ts starts and closes it); without it the routes make their own. */
  sandboxRuntime?: BoxService;
  /** Cron management wired to the scheduler; without it cron changes do not wake a scheduler. */
  crons?: CronService;
  /** The project's custom auth (langgraph.json `auth`), when it has one. */
  auth?: CustomAuth;
  /** What this process's workers do (`GET /metrics`); without it the process reports no workers. */
  workers?: WorkerStatsTable;
  /** The bundled generative UI components (langgraph.json `ui`), when it has any. */
  ui?: UiBundles;
}

/** Keeps only the requested fields of each item (`select` in search bodies). */
export function pick<T extends object>(items: T[], fields: string[] | null | undefined): Partial<T>[] {
  if (!fields?.length) return items;
  return items.map(
    (item) =>
      Object.fromEntries(fields.filter((f) => f in item).map((f) => [f, (item as any)[f]])) as Partial<T>,
  );
}
