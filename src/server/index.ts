/**
 * The composition root: the one place a server process is built and its lifecycle kept (start in
 * order, close in reverse). The sandbox side is wired in sandboxes.ts, the HTTP app in http.ts; no
 * other module builds a service.
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { ThreadStateService } from "../agents/state.js";
import { CustomAuth } from "../auth/custom.js";
import type { ClusterBus, RedisLink } from "../cluster/redis.js";
import type { Config } from "../config/index.js";
import { webSocketProtocol } from "../console/routes.js";
import { secureDataDir } from "../data-dir.js";
import { loadCustomApp } from "../http/custom-app.js";
import { underPrefix } from "../http/mount-prefix.js";
import { upgradeHandler } from "../http/upgrade.js";
import { webSocketOriginAllowed } from "../http/ws-origin.js";
import type { Logger } from "../logger.js";
import { ThreadEventBuffer, ThreadEventHub } from "../protocol/buffer.js";
import { isProtocolSocketPath } from "../protocol/socket.js";
import { CronScheduler } from "../runtime/crons/scheduler.js";
import { CronService } from "../runtime/crons/service.js";
import { defaultAssistantId, GraphRegistry } from "../runtime/graphs/graphs.js";
import { provideGraphHost } from "../runtime/graphs/host.js";
import { importProjectExport } from "../runtime/graphs/project-module.js";
import { Dispatcher } from "../runtime/runs/dispatcher.js";
import { ExecutorThreads } from "../runtime/runs/executor-pool.js";
import { RunService } from "../runtime/runs/service.js";
import { ThreadStreams } from "../runtime/runs/thread-stream.js";
import { ThreadSweeper } from "../runtime/runs/thread-sweeper.js";
import { WorkerStatsTable } from "../runtime/runs/worker-stats.js";
import { loadStoreSettings } from "../runtime/store/config.js";
import { HangarStore } from "../runtime/store/store.js";
import { StoreSweeper } from "../runtime/store/sweeper.js";
import { sandboxDirs } from "../sandboxes/engines/index.js";
import { DEFAULT_ORG, type Storage } from "../storage/ports.js";
import { openStorage } from "../storage/sql/index.js";
import { RedisRunLogs } from "../streams/redis-run-logs.js";
import { MemoryRunLogs, type RunLogs } from "../streams/run-log.js";
import { UiBundles } from "../ui/bundle.js";
import { guardNetworkExposure } from "./exposure.js";
import { createServerApp } from "./http.js";
import { buildSandboxes } from "./sandboxes.js";

/** How long a shutdown lets runs in flight finish before handing them back. */
const SHUTDOWN_GRACE_MS = 5_000;

export interface RunningServer {
  /** The address it listens on; empty for a worker process, which serves no HTTP. */
  url: string;
  /** The API as a client on this machine reaches it: loopback for a wildcard address, under `http.mount_prefix`. */
  apiUrl: string;
  close(): Promise<void>;
}

/**
 * Wires the server together: storage (+ Redis when scaled out) → graphs → default assistants →
 * dispatcher → HTTP. A `worker` process is the same without the listening socket. Throws
 * GraphLoadError for a graph that does not load, AuthLoadError for an auth file that does not, and the
 * listen error (EADDRINUSE) as is.
 */
export async function startServer(config: Config, log: Logger): Promise<RunningServer> {
  // Graph code reads its settings from process.env; langgraph.json `env` never overrides the real environment.
  for (const [key, value] of Object.entries(config.env)) process.env[key] ??= value;

  let heard: (url: string | null) => void = () => {};
  const listening = new Promise<string | null>((resolve) => (heard = resolve));
  // Every organization's data is there: no other local account may read it.
  secureDataDir(config.dataDir, log, sandboxDirs(config.dataDir, config.sandboxes.imagesDir).imagesDir);
  const storage = await openStorage(config);
  let redis: RedisLink | undefined;
  let clusterBus: ClusterBus | undefined;
  let threads: ExecutorThreads | undefined;
  let bundling: Promise<UiBundles> | undefined;
  try {
    if (config.redisUri) {
      // Imported only when scaled out: an embedded server never needs the Redis client (6 MB of RSS).
      const cluster = await import("../cluster/redis.js");
      redis = await cluster.RedisLink.connect(config.redisUri, config.redisPrefix, log);
      clusterBus = new cluster.ClusterBus(redis);
    }
    // Graph code may use the SDK logger and the loopback client as it loads (here and in executor threads).
    const apiUrl = provideGraphHost(log, listening, config.apiUrl);
    // What this process's workers do (`GET /metrics`): row 0 this thread's dispatcher, then each thread's.
    const workerStats = new WorkerStatsTable(1 + config.executorThreads);
    if (config.executorThreads > 0) threads = new ExecutorThreads(config, log, workerStats);
    // The project's auth handlers (langgraph.json `auth`); a worker serves no requests.
    const auth = config.auth && config.mode !== "worker" ? await CustomAuth.load(config.auth) : undefined;
    // The project's Hono app (langgraph.json `http.app`), served in front of the built-in routes.
    const customApp =
      config.http.app && config.mode !== "worker"
        ? await loadCustomApp(config.http.app, importProjectExport)
        : undefined;
    // The handler authenticates every request, except Studio's header in `hangar dev` (unless disabled).
    const handlerGuards = auth?.authenticates === true && (config.mode !== "dev" || !auth.studioAuth);
    const authenticated =
      Object.keys(config.apiKeys).length > 0 || handlerGuards || (await storage.auth.countActiveKeys()) > 0;
    if (config.mode !== "worker") guardNetworkExposure(config, authenticated, log); // a worker does not listen
    // The long-term memory store (langgraph.json `store`), shared by the /store routes and the graphs.
    const { settings: storeSettings, sweepIntervalMs } = await loadStoreSettings(config);
    const store = new HangarStore(storage.store, DEFAULT_ORG, storeSettings);
    const sweeper = new StoreSweeper({ repo: storage.store, log, maxIntervalMs: sweepIntervalMs });
    store.onExpiry = (at) => sweeper.expiresAt(at);
    // Generative UI components, bundled while the graphs load; `hangar dev` rebuilds them on change.
    bundling =
      config.ui && config.mode !== "worker" && !config.http.disable_ui
        ? UiBundles.build(config.ui, { projectDir: config.projectDir, watch: config.mode === "dev", log })
        : undefined;
    bundling?.catch(() => {}); // awaited below; a graph error may come first
    const graphs = await GraphRegistry.load(config.graphs, storage.checkpointer, store, {
      warn: (msg, fields) => log.warn(msg, fields),
      schemaTimeoutMs: config.schemaResolveTimeoutMs,
    });
    const ui = await bundling;
    await ensureDefaultAssistants(config, storage);

    const retention = { retentionSeconds: config.streamRetentionSeconds };
    const logs: RunLogs = redis ? new RedisRunLogs(redis, retention) : new MemoryRunLogs(retention);
    const localFetch = (request: Request) => Promise.resolve(app.fetch(request));
    const leaseMs = config.leaseSeconds * 1000;
    // Protocol-v2 thread events: written by whichever process executes a run, followed from any.
    const threadEventFeed = new ThreadEventHub(storage.threadEvents, clusterBus);
    const threadEvents = new ThreadEventBuffer(
      storage.threadEvents,
      { maxEvents: config.threadEventsMax, maxBytes: config.threadEventsMaxBytes },
      threadEventFeed.notify,
      log,
    );
    // With executor threads, this thread's dispatcher executes nothing: it wakes and signals them.
    const dispatcher = new Dispatcher(
      { graphs, storage, logs, log, localFetch, store, webhooks: config.webhooks, apiUrl, threadEvents },
      {
        concurrency: threads ? 0 : config.workers,
        leaseMs,
        bus: clusterBus ?? threads,
        stats: workerStats.row(0),
      },
    );
    const runs = new RunService(storage, graphs, dispatcher, logs, {
      threadTtl: config.threadTtl.default,
      webhookPolicy: config.webhooks?.url,
      headerRules: config.http.configurable_headers,
    });
    // Thread TTLs (langgraph.json checkpointer.ttl, or a thread's own): swept in every process.
    const threadSweeper = new ThreadSweeper({
      repo: storage.threads,
      log,
      intervalMs: config.threadTtl.sweepIntervalMinutes * 60_000,
      limit: config.threadTtl.sweepLimit,
    });
    const scheduler = new CronScheduler({ crons: storage.crons, runs, log });
    const crons = new CronService(storage, runs, () => scheduler.nudge());
    const state = new ThreadStateService(storage, graphs);
    const threadStreams = new ThreadStreams(runs, storage);
    const sandboxes = buildSandboxes(config, storage, log);
    const app = createServerApp(
      {
        config,
        storage,
        graphs,
        runs,
        threadStreams,
        store,
        crons,
        state,
        sandboxes,
        auth,
        workers: workerStats,
        ui,
        threadEvents: threadEventFeed,
      },
      log,
      customApp,
    );

    await dispatcher.recover();
    await threads?.ready();
    const prefix = config.http.mount_prefix;
    const served = prefix ? underPrefix(prefix, app.fetch) : app.fetch;
    const server = config.mode === "worker" ? undefined : await listen(served, config);
    const serverUrl = server
      ? loopbackUrl(config.host, (server.address() as AddressInfo).port) + (prefix ?? "")
      : null;
    heard(serverUrl);
    threads?.start({
      serverUrl,
      logs,
      localFetch,
      onStoreExpiry: (at) => sweeper.expiresAt(at),
      onThreadEvents: (org, threadId) => threadEventFeed.wake(org, threadId),
    });
    // Executor threads spawn when a run needs them: now, if the queue holds runs from before.
    if (threads && (await storage.runs.stats()).n_pending > 0) threads.wakeWorkers();
    await dispatcher.start();
    scheduler.start(); // fires crons that came due while no process ran (once each), then follows them
    sweeper.start();
    threadSweeper.start();
    // Boots again the sandboxes that ran before a restart and fills pools; a worker serves no sandboxes.
    if (server) await sandboxes.boxes.start();

    let url = "";
    if (server) {
      const { port } = server.address() as AddressInfo;
      url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
    }
    return {
      url,
      apiUrl: serverUrl ?? "",
      async close() {
        server?.close();
        await scheduler.close();
        await sweeper.close();
        await threadSweeper.close();
        await dispatcher.close(SHUTDOWN_GRACE_MS);
        await threads?.close(SHUTDOWN_GRACE_MS);
        await sandboxes.boxes.close(); // every sandbox process is gone before the process exits
        await ui?.close();
        await logs.close();
        await threadEventFeed.close();
        if (server && "closeAllConnections" in server) server.closeAllConnections();
        await redis?.close();
        await storage.close();
      },
    };
  } catch (err) {
    heard(null);
    await bundling?.then(
      (ui) => ui.close(),
      () => {},
    );
    await threads?.terminate();
    await redis?.close();
    await storage.close();
    throw err;
  }
}

async function listen(
  fetch: (request: Request, env?: unknown) => Response | Promise<Response>,
  config: Config,
) {
  const server = serve({ fetch, hostname: config.host, port: config.port });
  // WebSockets (the sandbox data plane's `/execute/ws`, the protocol's stream): the upgrade goes
  // through the app like any request; the protocol's rejections are close codes.
  server.on(
    "upgrade",
    upgradeHandler(
      (request, env) => fetch(request, env),
      webSocketOriginAllowed(config.http.cors),
      isProtocolSocketPath,
      webSocketProtocol,
    ),
  );
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  return server;
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

/** This server as its own process reaches it: a wildcard listen address is reached on loopback. */
function loopbackUrl(host: string, port: number): string {
  const h = host === "0.0.0.0" ? "127.0.0.1" : host === "::" || host === "[::]" ? "::1" : host;
  return `http://${h.includes(":") ? `[${h.replace(/^\[|\]$/g, "")}]` : h}:${port}`;
}
