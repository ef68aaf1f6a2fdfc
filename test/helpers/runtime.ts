/**
 * The run runtime built in process, wired as `src/server.ts` wires it (real SQLite storage, the graphs
 * of a langgraph.json, their default assistants, in-memory run logs, the dispatcher and the run service)
 * with no HTTP and no server process: for tests of the dispatcher and the run service themselves.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/index.js";
import { silentLogger } from "../../src/logger.js";
import { defaultAssistantId, GraphRegistry } from "../../src/runtime/graphs/graphs.js";
import { Dispatcher } from "../../src/runtime/runs/dispatcher.js";
import { RunService } from "../../src/runtime/runs/service.js";
import type { Storage } from "../../src/storage/ports.js";
import { openSqliteStorage } from "../../src/storage/sql/index.js";
import { MemoryRunLogs } from "../../src/streams/run-log.js";
import { EXAMPLES_CONFIG, REPO_ROOT } from "./server.js";

export interface Runtime {
  storage: Storage;
  graphs: GraphRegistry;
  logs: MemoryRunLogs;
  dispatcher: Dispatcher;
  runs: RunService;
  /** Closes the dispatcher (handing back what still runs after `graceMs`), the logs and the storage. */
  close(graceMs?: number): Promise<void>;
}

/** Builds the runtime on a fresh data dir and starts dispatching; default: the example graphs, one slot. */
export async function buildRuntime(opts: { config?: string; concurrency?: number } = {}): Promise<Runtime> {
  const dataDir = await mkdtemp(join(tmpdir(), "hangar-runtime-"));
  const config = loadConfig({
    mode: "dev",
    flags: { config: opts.config ?? EXAMPLES_CONFIG, dataDir },
    env: {},
    cwd: REPO_ROOT,
  });
  const storage = await openSqliteStorage({ dataDir, synchronous: config.sqliteSynchronous });
  const logs = new MemoryRunLogs({ retentionSeconds: config.streamRetentionSeconds });
  const graphs = await GraphRegistry.load(config.graphs, storage.checkpointer);
  for (const spec of config.graphs) {
    await storage.assistants.ensureSystem({
      assistant_id: defaultAssistantId(spec.id),
      graph_id: spec.id,
      name: spec.id,
      description: null,
      config: {},
      context: {},
      metadata: { created_by: "system" },
    });
  }
  const localFetch = () => Promise.reject(new Error("no HTTP in an in-process runtime"));
  const dispatcher = new Dispatcher(
    { graphs, storage, logs, log: silentLogger, localFetch },
    { concurrency: opts.concurrency ?? 1, leaseMs: config.leaseSeconds * 1000 },
  );
  const runs = new RunService(storage, graphs, dispatcher, logs);
  await dispatcher.recover();
  await dispatcher.start();
  return {
    storage,
    graphs,
    logs,
    dispatcher,
    runs,
    async close(graceMs = 0) {
      await dispatcher.close(graceMs);
      logs.close();
      await storage.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
