import type { CustomAuth } from "../auth/custom.js";
import type { Config } from "../config/index.js";
import type { CronService } from "../runtime/crons/service.js";
import type { GraphRegistry } from "../runtime/graphs/graphs.js";
import type { RunService } from "../runtime/runs/service.js";
import type { ThreadStreams } from "../runtime/runs/thread-stream.js";
import type { WorkerStatsTable } from "../runtime/runs/worker-stats.js";
import type { HangarStore } from "../runtime/store/store.js";
import type { Storage } from "../storage/ports.js";
import type { UiBundles } from "../ui/bundle.js";
import type { ThreadStateService } from "./state.js";

/** What the agent-server routes need, built by the server (src/server/) and passed in (no module singletons). */
export interface AgentDeps {
  config: Config;
  storage: Storage;
  graphs: GraphRegistry;
  runs: RunService;
  /** A thread's runs as one stream (`GET /threads/{id}/stream`). */
  threadStreams: ThreadStreams;
  /** The long-term memory store graphs also get (built from langgraph.json `store`). */
  store: HangarStore;
  /** Cron management, wired to the scheduler. */
  crons: CronService;
  /** Threads' state and history, read and written through their graphs. */
  state: ThreadStateService;
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
