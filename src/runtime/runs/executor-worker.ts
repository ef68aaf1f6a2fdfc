/**
 * One executor thread (see executor-pool.ts, the API thread's side): a worker of its own, with its
 * own storage connection, graphs, store view and dispatcher, that claims and executes runs. Run-log
 * operations, wake-ups of the other threads and webhooks to this server go to the API thread.
 */

import { type MessagePort, parentPort, workerData } from "node:worker_threads";
import { createLogger } from "../../logger.js";
import { ThreadEventBuffer } from "../../protocol/buffer.js";
import { DEFAULT_ORG, type StopAction, type Storage } from "../../storage/ports.js";
import { openStorage } from "../../storage/sql/index.js";
import type { RunEvent, RunLogs } from "../../streams/run-log.js";
import { GraphRegistry } from "../graphs/graphs.js";
import { provideGraphHost } from "../graphs/host.js";
import { loadStoreSettings } from "../store/config.js";
import { HangarStore } from "../store/store.js";
import { Dispatcher, type WorkerBus } from "./dispatcher.js";
import type { LogOp, ParentMessage, ThreadData, ThreadMessage } from "./executor-pool.js";
import { WorkerStats } from "./worker-stats.js";

const port = parentPort as MessagePort;
const send = (message: ThreadMessage) => port.postMessage(message);

/**
 * The thread's run logs: every operation goes to the API thread, which keeps the logs and their readers.
 * Operations are batched per event-loop turn (a graph step often publishes several events) and keep
 * their order. Nothing is read here, so `read` and `outcome` find no log.
 */
class ForwardedRunLogs implements RunLogs {
  #ops: LogOp[] = [];
  #scheduled = false;

  #push(op: LogOp): void {
    this.#ops.push(op);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.flush();
    });
  }

  flush(): void {
    if (!this.#ops.length) return;
    send({ type: "logs", ops: this.#ops });
    this.#ops = [];
  }

  open(runId: string): void {
    this.#push({ op: "open", runId });
  }
  publish(runId: string, event: string, data: string): void {
    this.#push({ op: "publish", runId, event, data });
  }
  end(runId: string, result: unknown): void {
    this.#push({ op: "end", runId, result });
    this.flush(); // joiners wait on it: it must not wait for this turn's other work (the next claim)
  }
  drop(runId: string): void {
    this.#push({ op: "drop", runId });
  }
  async *read(): AsyncIterable<RunEvent> {}
  async outcome(): Promise<null> {
    return null;
  }
  close(): void {
    this.flush();
  }
}

/** Signals from and to the API thread (which forwards wake-ups to every thread). */
class ParentBus implements WorkerBus {
  readonly wake = new Set<() => void>();
  readonly stop = new Set<(runId: string, action: StopAction) => void>();

  wakeWorkers(): void {
    send({ type: "wake" });
  }
  async onWake(handler: () => void): Promise<() => void> {
    this.wake.add(handler);
    return () => this.wake.delete(handler);
  }
  stopRun(): void {
    // Stops are asked on the API thread, never here.
  }
  async onStop(handler: (runId: string, action: StopAction) => void): Promise<() => void> {
    this.stop.add(handler);
    return () => this.stop.delete(handler);
  }
  onReconnect(): () => void {
    return () => undefined;
  }
}

/** Webhooks whose URL is a path of this server are answered by the API thread's app. */
class LocalFetch {
  readonly #pending = new Map<number, (status: number) => void>();
  #nextId = 0;

  readonly fetch = async (request: Request): Promise<Response> => {
    const id = this.#nextId++;
    const body = request.body ? await request.text() : null;
    const status = await new Promise<number>((resolve) => {
      this.#pending.set(id, resolve);
      send({
        type: "fetch",
        request: { id, method: request.method, url: request.url, headers: [...request.headers], body },
      });
    });
    return new Response(null, { status });
  };

  answered(id: number, status: number): void {
    this.#pending.get(id)?.(status);
    this.#pending.delete(id);
  }
}

async function main(): Promise<void> {
  const { config, slots, stats, statsRow } = workerData as ThreadData;
  const log = createLogger(config.logLevel);
  let storage: Storage | undefined;
  let dispatcher: Dispatcher;
  const logs = new ForwardedRunLogs();
  const bus = new ParentBus();
  const local = new LocalFetch();
  let listening: (url: string | null) => void = () => {};
  const apiUrl = provideGraphHost(log, new Promise((resolve) => (listening = resolve)), config.apiUrl);
  try {
    storage = await openStorage(config, { secondary: true });
    const { settings } = await loadStoreSettings(config);
    const store = new HangarStore(storage.store, DEFAULT_ORG, settings);
    store.onExpiry = (at) => send({ type: "store-expiry", at });
    const graphs = await GraphRegistry.load(config.graphs, storage.checkpointer, store, {
      schemaTimeoutMs: config.schemaResolveTimeoutMs,
    });
    // Protocol events are written here; the API thread's followers are told (they read storage).
    const threadEvents = new ThreadEventBuffer(
      storage.threadEvents,
      { maxEvents: config.threadEventsMax, maxBytes: config.threadEventsMaxBytes },
      (org, threadId) => send({ type: "thread-events", org, threadId }),
      log,
    );
    dispatcher = new Dispatcher(
      {
        graphs,
        storage,
        logs,
        log,
        localFetch: local.fetch,
        store,
        webhooks: config.webhooks,
        apiUrl,
        threadEvents,
      },
      {
        concurrency: slots,
        leaseMs: config.leaseSeconds * 1000,
        bus,
        stats: new WorkerStats(stats, statsRow),
      },
    );
  } catch (err) {
    await storage?.close().catch(() => undefined);
    send({ type: "failed", message: (err as Error).message });
    port.close();
    return;
  }

  port.on("message", (message: ParentMessage) => {
    switch (message.type) {
      case "start":
        listening(message.serverUrl);
        // The API thread recovered what a previous process left running before it sent this.
        return void dispatcher.start();
      case "wake":
        for (const handler of bus.wake) handler();
        return;
      case "stop":
        for (const handler of bus.stop) handler(message.runId, message.action);
        return;
      case "fetched":
        return local.answered(message.id, message.status);
      case "close":
        return void close(message.graceMs);
    }
  });

  async function close(graceMs: number): Promise<void> {
    await dispatcher.close(graceMs);
    logs.flush();
    await storage?.close().catch((err) => log.error("closing storage failed", { error: String(err) }));
    send({ type: "closed" });
    port.close();
  }

  send({ type: "ready" });
}

await main();
