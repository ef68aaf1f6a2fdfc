/**
 * Executor threads: runs execute in worker threads, so graphs (LangGraph's step machinery, checkpoint
 * serialization and writes) use other cores than the HTTP API. This module is the API thread's side;
 * `executor-worker.ts` is the thread's.
 *
 * Each thread is a worker of its own, as a `hangar worker` process is when scaled out: its own storage
 * connection, graphs, store view and dispatcher, claiming runs from the database queue. What the
 * processes send each other over Redis, the threads send over their message ports: wake-ups and stop
 * requests (this class is the API dispatcher's `WorkerBus`), and every run-log operation, applied to the
 * API thread's `RunLogs`, where the readers are. Webhooks to paths of this server come back here too.
 *
 * A thread that dies (an uncaught error thrown by graph code) takes the process down, as that error
 * would without threads; the next start recovers its runs.
 */
import { Worker } from "node:worker_threads";
import type { Config } from "../../config/index.js";
import type { Logger } from "../../logger.js";
import type { StopAction } from "../../storage/ports.js";
import type { RunLogs } from "../../streams/run-log.js";
import { GraphLoadError } from "../graphs/graphs.js";
import type { WorkerBus } from "./dispatcher.js";
import type { WorkerStatsTable } from "./worker-stats.js";

/** A run-log operation of a thread, applied to the API thread's logs in order. */
export type LogOp =
  | { op: "open"; runId: string }
  | { op: "publish"; runId: string; event: string; data: string }
  | { op: "end"; runId: string; result: unknown }
  | { op: "drop"; runId: string };

/** A request a thread's webhook sends to this server's own app. */
export interface LocalRequest {
  id: number;
  method: string;
  url: string;
  headers: [string, string][];
  body: string | null;
}

export type ThreadMessage =
  | { type: "ready" }
  | { type: "failed"; message: string }
  | { type: "logs"; ops: LogOp[] }
  | { type: "fetch"; request: LocalRequest }
  | { type: "wake" }
  | { type: "store-expiry"; at: number }
  /** A thread's protocol events were written: followers on the API thread look again. */
  | { type: "thread-events"; org: string; threadId: string }
  | { type: "closed" };

export type ParentMessage =
  | { type: "start"; serverUrl: string | null }
  | { type: "wake" }
  | { type: "stop"; runId: string; action: StopAction }
  | { type: "fetched"; id: number; status: number }
  | { type: "close"; graceMs: number };

export interface ThreadData {
  config: Config;
  /** Runs this thread executes at once. */
  slots: number;
  /** The process's worker figures (`WorkerStatsTable.buffer`), shared; this thread writes row `statsRow`. */
  stats: SharedArrayBuffer;
  statsRow: number;
}

export interface ThreadServices {
  /** Where graph code's loopback client reaches this server (null: no HTTP listener). */
  serverUrl: string | null;
  logs: RunLogs;
  localFetch: (request: Request) => Promise<Response>;
  /** A thread's store write set a TTL: the sweeper should look then. */
  onStoreExpiry: (at: number) => void;
  /** An executor thread wrote protocol events of a thread (src/protocol/buffer.ts). */
  onThreadEvents: (org: string, threadId: string) => void;
}

/** The thread's entry: registers the TypeScript loader (threads do not inherit it), then loads the thread. */
const ENTRY = new URL("../../../bin/executor-thread.js", import.meta.url);

interface Thread {
  worker: Worker;
  ready: Promise<void>;
  closed: Promise<void>;
}

export class ExecutorThreads implements WorkerBus {
  readonly #log: Logger;
  readonly #threads: Thread[] = [];
  readonly #data: ThreadData[];
  #services?: ThreadServices;
  #closing = false;

  /**
   * Threads for `config.executorThreads`, sharing `config.workers` slots. None is spawned until a run
   * needs one (`wakeWorkers`: a run was admitted, or the queue held runs at start): a server at rest
   * holds no graphs but the API thread's, and the first run waits for the threads to load theirs.
   * Thread i counts its work in row i + 1 of `stats` (row 0 is the API thread's).
   */
  constructor(config: Config, log: Logger, stats: WorkerStatsTable) {
    this.#log = log;
    const count = config.executorThreads;
    this.#data = Array.from({ length: count }, (_, i) => ({
      config,
      // The slots are shared out evenly, the first threads taking the remainder.
      slots: Math.floor(config.workers / count) + (i < config.workers % count ? 1 : 0),
      stats: stats.buffer,
      statsRow: i + 1,
    }));
    // A thread not spawned yet still counts its slots (`/metrics`: idle workers, all available).
    for (const data of this.#data) stats.row(data.statsRow).setSlots(data.slots);
  }

  /** Spawns the threads (once); each starts claiming as soon as it has loaded its graphs and `start` was called. */
  #spawnAll(): void {
    if (this.#threads.length > 0 || this.#closing) return;
    for (const data of this.#data) {
      const thread = this.#spawn(data);
      this.#threads.push(thread);
      thread.ready.then(
        () => this.#startThread(thread),
        // Its exit handler then stops the process; this says why.
        (err: Error) =>
          this.#log.error("an executor thread could not load its graphs", { error: err.message }),
      );
    }
  }

  #startThread(thread: Thread): void {
    if (!this.#services || this.#closing) return;
    thread.worker.postMessage({ type: "start", serverUrl: this.#services.serverUrl } satisfies ParentMessage);
  }

  #spawn(data: ThreadData): Thread {
    const worker = new Worker(ENTRY, { workerData: data });
    let markReady!: () => void;
    let fail!: (err: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      fail = reject;
    });
    ready.catch(() => undefined); // observed by `ready()`; a failure before then must not be unhandled
    let markClosed!: () => void;
    const closed = new Promise<void>((resolve) => {
      markClosed = resolve;
    });
    worker.on("message", (message: ThreadMessage) => {
      switch (message.type) {
        case "ready":
          return markReady();
        case "failed":
          return fail(new GraphLoadError(message.message));
        case "logs":
          return this.#applyLogs(message.ops);
        case "fetch":
          return void this.#fetch(worker, message.request);
        case "wake":
          return this.wakeWorkers();
        case "store-expiry":
          return this.#services?.onStoreExpiry(message.at);
        case "thread-events":
          return this.#services?.onThreadEvents(message.org, message.threadId);
        case "closed":
          markClosed();
          return void worker.terminate();
      }
    });
    worker.on("error", (err) => {
      this.#log.error("an executor thread failed", { error: err.message, stack: err.stack });
      fail(err);
    });
    worker.on("exit", (code) => {
      markClosed();
      fail(new Error(`an executor thread exited (code ${code}) while loading`));
      if (this.#closing) return;
      // Its runs are `running` in storage with nobody executing them: only a restart recovers them.
      this.#log.error("an executor thread died; stopping so that a restart recovers its runs", { code });
      process.exit(1);
    });
    return { worker, ready, closed };
  }

  /** Resolves once every spawned thread has loaded its graphs; rejects (GraphLoadError) if one could not. */
  async ready(): Promise<void> {
    await Promise.all(this.#threads.map((t) => t.ready));
  }

  /** Lets the threads claim runs (those spawned now, and later ones once loaded) through `services`. */
  start(services: ThreadServices): void {
    this.#services = services;
    for (const thread of this.#threads)
      void thread.ready.then(
        () => this.#startThread(thread),
        () => undefined,
      );
  }

  #applyLogs(ops: LogOp[]): void {
    const logs = this.#services?.logs;
    if (!logs) return;
    for (const op of ops) {
      if (op.op === "publish") logs.publish(op.runId, op.event, op.data);
      else if (op.op === "end") logs.end(op.runId, op.result);
      else if (op.op === "open") void Promise.resolve(logs.open(op.runId)).catch(() => undefined);
      else logs.drop(op.runId);
    }
  }

  async #fetch(worker: Worker, request: LocalRequest): Promise<void> {
    let status = 502;
    try {
      const { method, url, headers, body } = request;
      const response = await this.#services!.localFetch(new Request(url, { method, headers, body }));
      status = response.status;
      await response.body?.cancel();
    } catch (err) {
      this.#log.warn("a webhook to this server failed", { error: (err as Error).message });
    }
    worker.postMessage({ type: "fetched", id: request.id, status } satisfies ParentMessage);
  }

  #post(message: ParentMessage): void {
    for (const { worker } of this.#threads) worker.postMessage(message);
  }

  // WorkerBus, for the API thread's dispatcher: it executes nothing itself, so it only sends.

  wakeWorkers(): void {
    this.#spawnAll(); // a thread's first claim, once started, takes what is due: no wake needed
    this.#post({ type: "wake" });
  }

  stopRun(runId: string, action: StopAction): void {
    // Every thread hears it; the one executing the run stops it.
    this.#post({ type: "stop", runId, action });
  }

  async onWake(): Promise<() => void> {
    return () => undefined;
  }

  async onStop(): Promise<() => void> {
    return () => undefined;
  }

  onReconnect(): () => void {
    return () => undefined; // messages between threads are never lost
  }

  /**
   * Graceful shutdown of every thread: they stop claiming, let runs in flight finish for up to
   * `graceMs`, hand the rest back, and close their storage. Their last log operations are applied first.
   */
  async close(graceMs: number): Promise<void> {
    this.#closing = true;
    this.#post({ type: "close", graceMs });
    await Promise.all(this.#threads.map((t) => t.closed));
  }

  /** Stops the threads at once (start-up failed). */
  async terminate(): Promise<void> {
    this.#closing = true;
    await Promise.all(this.#threads.map((t) => t.worker.terminate()));
  }
}
