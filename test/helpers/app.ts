/**
 * The HTTP app built in-process, wired as `src/server/` wires it (storage, graphs, services,
 * `createServerApp`) but never listening and with the dispatcher not started: for tests that read the
 * router itself (`app.routes`), e.g. to check that /openapi.json lists every registered route.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hono } from "hono";
import { ThreadStateService } from "../../src/agents/state.js";
import { loadConfig } from "../../src/config/index.js";
import type { AppEnv } from "../../src/http/context.js";
import { silentLogger } from "../../src/logger.js";
import { CronService } from "../../src/runtime/crons/service.js";
import { GraphRegistry } from "../../src/runtime/graphs/graphs.js";
import { Dispatcher } from "../../src/runtime/runs/dispatcher.js";
import { RunService } from "../../src/runtime/runs/service.js";
import { ThreadStreams } from "../../src/runtime/runs/thread-stream.js";
import { HangarStore } from "../../src/runtime/store/store.js";
import { createServerApp } from "../../src/server/http.js";
import { buildSandboxes } from "../../src/server/sandboxes.js";
import { DEFAULT_ORG } from "../../src/storage/ports.js";
import { openSqliteStorage } from "../../src/storage/sql/index.js";
import { MemoryRunLogs } from "../../src/streams/run-log.js";
import { EXAMPLES_CONFIG, REPO_ROOT } from "./server.js";

export interface InProcessApp {
  app: Hono<AppEnv>;
  close(): Promise<void>;
}

/** Builds the app from a langgraph.json (default: the examples, as `startHangar()` serves them). */
export async function buildApp(
  opts: { config?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<InProcessApp> {
  const dataDir = await mkdtemp(join(tmpdir(), "hangar-app-"));
  const config = loadConfig({
    mode: "dev",
    flags: { config: opts.config ?? EXAMPLES_CONFIG, dataDir },
    env: opts.env ?? {},
    cwd: REPO_ROOT,
  });
  const storage = await openSqliteStorage({ dataDir, synchronous: config.sqliteSynchronous });
  const logs = new MemoryRunLogs({ retentionSeconds: config.streamRetentionSeconds });
  try {
    const graphs = await GraphRegistry.load(config.graphs, storage.checkpointer);
    const localFetch = (request: Request) => Promise.resolve(app.fetch(request));
    const dispatcher = new Dispatcher(
      { graphs, storage, logs, log: silentLogger, localFetch },
      { concurrency: 1, leaseMs: config.leaseSeconds * 1000 },
    );
    const runs = new RunService(storage, graphs, dispatcher, logs);
    const app = createServerApp(
      {
        config,
        storage,
        graphs,
        runs,
        threadStreams: new ThreadStreams(runs, storage),
        store: new HangarStore(storage.store, DEFAULT_ORG),
        crons: new CronService(storage, runs),
        state: new ThreadStateService(storage, graphs),
        sandboxes: buildSandboxes(config, storage, silentLogger),
      },
      silentLogger,
    );
    return {
      app,
      async close() {
        logs.close();
        await storage.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    logs.close();
    await storage.close();
    throw err;
  }
}
