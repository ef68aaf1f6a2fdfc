import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { guardNetworkExposure } from "./cli/exposure.js";
import type { Logger } from "./cli/logger.js";
import type { Config } from "./config/index.js";
import { createApp } from "./http/app.js";
import { CronScheduler } from "./runtime/cron-scheduler.js";
import { CronService } from "./runtime/crons.js";
import { Dispatcher } from "./runtime/dispatcher.js";
import { defaultAssistantId, GraphRegistry } from "./runtime/graphs.js";
import { RunService } from "./runtime/runs.js";
import { HangarStore } from "./runtime/store.js";
import { loadStoreSettings } from "./runtime/store-config.js";
import { StoreSweeper } from "./runtime/store-sweeper.js";
import { upgradeHandler } from "./sandboxes/dataplane.js";
import { createSandboxRuntime } from "./sandboxes/runtime/index.js";
import { DEFAULT_ORG, type Storage } from "./storage/ports.js";
import { openPostgresStorage } from "./storage/postgres/index.js";
import { openSqliteStorage } from "./storage/sqlite/index.js";
import { RunLogs } from "./streams/run-log.js";

/** How long a shutdown lets runs in flight finish before handing them back. */
const SHUTDOWN_GRACE_MS = 5_000;

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

/**
 * Wires the server together: storage → graphs → default assistants → dispatcher → HTTP.
 * Throws GraphLoadError for a graph that does not load and the listen error (EADDRINUSE) as is.
 */
export async function startServer(config: Config, log: Logger): Promise<RunningServer> {
  // Graph code reads its settings from process.env; langgraph.json `env` never overrides the real environment.
  for (const [key, value] of Object.entries(config.env)) process.env[key] ??= value;

  const storage = config.postgresUri
    ? await openPostgresStorage({ uri: config.postgresUri })
    : openSqliteStorage({ dataDir: config.dataDir, synchronous: config.sqliteSynchronous });
  try {
    const keysConfigured =
      Object.keys(config.apiKeys).length > 0 || (await storage.auth.countActiveKeys()) > 0;
    guardNetworkExposure(config, keysConfigured, log);
    // The long-term memory store (langgraph.json `store`), shared by the /store routes and the graphs.
    const { settings: storeSettings, sweepIntervalMs } = await loadStoreSettings(config);
    const store = new HangarStore(storage.store, DEFAULT_ORG, storeSettings);
    const sweeper = new StoreSweeper({ repo: storage.store, log, maxIntervalMs: sweepIntervalMs });
    store.onExpiry = (at) => sweeper.expiresAt(at);
    const graphs = await GraphRegistry.load(config.graphs, storage.checkpointer, store);
    await ensureDefaultAssistants(config, storage);

    const logs = new RunLogs({ retentionSeconds: config.streamRetentionSeconds });
    const localFetch = (request: Request) => Promise.resolve(app.fetch(request));
    const dispatcher = new Dispatcher(
      { graphs, storage, logs, log, localFetch, store },
      { concurrency: config.workers },
    );
    const runs = new RunService(storage, graphs, dispatcher, logs);
    const scheduler = new CronScheduler({ crons: storage.crons, runs, log });
    const crons = new CronService(storage, runs, () => scheduler.nudge());
    const sandboxRuntime = createSandboxRuntime({ dataDir: config.dataDir, storage, log });
    const app = createApp({ config, storage, graphs, runs, store, crons, sandboxRuntime }, log);

    await dispatcher.recover();
    const server = serve({ fetch: app.fetch, hostname: config.host, port: config.port });
    // Sandbox data-plane WebSockets (`/execute/ws`): the upgrade goes through the app like any request.
    server.on(
      "upgrade",
      upgradeHandler((request, env) => app.fetch(request, env)),
    );
    await new Promise<void>((resolve, reject) => {
      server.once("listening", resolve);
      server.once("error", reject);
    });
    dispatcher.start();
    scheduler.start(); // fires crons that came due while no process ran (once each), then follows them
    sweeper.start();
    await sandboxRuntime.start(); // boots again the sandboxes that ran before a restart, fills pools

    const { port } = server.address() as AddressInfo;
    const host = config.host.includes(":") ? `[${config.host}]` : config.host;
    return {
      url: `http://${host}:${port}`,
      async close() {
        server.close();
        await scheduler.close();
        await sweeper.close();
        await dispatcher.close(SHUTDOWN_GRACE_MS);
        await sandboxRuntime.close(); // every sandbox process is gone before the process exits
        logs.close();
        if ("closeAllConnections" in server) server.closeAllConnections();
        await storage.close();
      },
    };
  } catch (err) {
    await storage.close();
    throw err;
  }
}

/** One system assistant per graph (id = uuid5(graph id)), configured from LANGGRAPH_CONFIG if set. */
async function ensureDefaultAssistants(config: Config, storage: Storage) {
  for (const spec of config.graphs) {
    const { context, ...graphConfig } = (config.defaultAssistantConfigs[spec.id] ?? {}) as Record<
      string,
      unknown
    >;
    await storage.assistants.ensureSystem({
      assistant_id: defaultAssistantId(spec.id),
      graph_id: spec.id,
      name: spec.id,
      description: spec.description ?? null,
      config: graphConfig,
      context: (context as Record<string, unknown>) ?? {},
      metadata: { created_by: "system" },
    });
  }
}
