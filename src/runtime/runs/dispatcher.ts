import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "../../logger.js";
import {
  DEFAULT_ORG,
  type JsonObject,
  type Lease,
  type OrgId,
  type Run,
  type StopAction,
  type Storage,
} from "../../storage/ports.js";
import { type ExecutorDeps, executeRun, type StopReason } from "./executor.js";
import type { RunEnd, WorkerStats } from "./worker-stats.js";

/** A run that a dead process left `running` is retried this many times in all, then failed. */
export const MAX_ATTEMPTS = 3;

/**
 * Signals between the places runs are admitted and executed: wake-ups for idle workers and stop requests
 * for a running run. `ClusterBus` (Redis) carries them between processes, `ExecutorThreads` between the
 * API thread and its executor threads.
 */
export interface WorkerBus {
  wakeWorkers(): void;
  onWake(handler: () => void): Promise<() => void>;
  stopRun(runId: string, action: StopAction): void;
  onStop(handler: (runId: string, action: StopAction) => void): Promise<() => void>;
  /** Calls `handler` when signals may have been lost (a reconnect); returns its unsubscribe. */
  onReconnect(handler: () => void): () => void;
}

export interface DispatcherOptions {
  /** Runs executed at once by this process; 0 = an API-only process that executes nothing. */
  concurrency: number;
  /** How long a claimed run stays this worker's without a heartbeat (renewed every third of it). */
  leaseMs: number;
  /** Signals to and from other workers (processes or threads); absent when this one executes everything. */
  bus?: WorkerBus;
  /** Where this worker counts its slots, runs executing and runs ended (`GET /metrics`). */
  stats?: WorkerStats;
}

/**
 * The worker pool: claims due runs from storage and executes up to `concurrency` at a time.
 * Dispatch is push-based: admission calls `nudge()`, a finishing run nudges again, other processes
 * wake it over the bus, and the only timers are the one for the next delayed (`after_seconds`) run,
 * the lease heartbeat while runs execute, and the sweeper of expired leases.
 */
export class Dispatcher {
  readonly #deps: ExecutorDeps;
  readonly #storage: Storage;
  readonly #log: Logger;
  readonly #concurrency: number;
  readonly #lease: Lease;
  readonly #bus?: WorkerBus;
  readonly #stats?: WorkerStats;
  readonly #active = new Map<string, { controller: AbortController; done: Promise<void> }>();
  readonly #unsubscribe: (() => void)[] = [];
  #pumping = false;
  /** A run may be claimable: set by every nudge and by a claim that says so; a claim clears it first. */
  #maybeDue = true;
  /** The last claim saw due runs behind executing threads: claim again when a run ends here. */
  #waiting = true;
  #renewing = false;
  #again = false;
  #stopped = false;
  #timer?: NodeJS.Timeout;
  #heartbeat?: NodeJS.Timeout;
  #sweeper?: NodeJS.Timeout;

  constructor(deps: ExecutorDeps, opts: DispatcherOptions) {
    this.#deps = deps;
    this.#storage = deps.storage;
    this.#log = deps.log;
    this.#concurrency = opts.concurrency;
    // Says where a run executes (operators read it on the run row): host, process, and this start.
    const workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.#lease = { workerId, ms: opts.leaseMs };
    this.#bus = opts.bus;
    this.#stats = opts.stats;
    this.#stats?.setSlots(opts.concurrency);
  }

  /**
   * Recovers runs a previous process left executing, when this process owns the storage (embedded
   * SQLite). Called before the server listens, so no request sees a dead process's run as running.
   * Shared storage has no such moment: there, runs of dead workers are found by their expired lease.
   */
  async recover(): Promise<void> {
    if (!this.#storage.exclusive) return;
    this.#settleRecovered(await this.#storage.runs.recoverInterrupted(MAX_ATTEMPTS));
  }

  /** Starts dispatching (after `recover`, once the server listens), following the bus if there is one. */
  async start(): Promise<void> {
    if (this.#bus) {
      if (this.#concurrency > 0) {
        this.#unsubscribe.push(await this.#bus.onWake(() => this.nudge()));
        this.#unsubscribe.push(this.#bus.onReconnect(() => this.nudge())); // wake-ups may have been lost
        this.#unsubscribe.push(
          await this.#bus.onStop((runId, action) => {
            void this.stop(runId, action);
          }),
        );
      }
    }
    // Storage this process owns was recovered at start (`recover`) and has no other workers to outlive.
    if (!this.#storage.exclusive) {
      const sweepEvery = Math.max(250, Math.floor(this.#lease.ms / 2));
      this.#sweeper = setInterval(() => void this.#sweep(), sweepEvery);
      this.#sweeper.unref();
      await this.#sweep();
    }
    this.nudge();
  }

  /** Runs were admitted or requeued: claim them here if there is room, else wake the other workers. */
  runsDue(): void {
    if (this.#active.size < this.#concurrency) {
      this.nudge();
      return;
    }
    // Full: the first slot that frees claims it (alone, with no bus, nothing else would).
    this.#maybeDue = true;
    this.#bus?.wakeWorkers();
  }

  /** Something may be due: claim and start runs while there are free slots. */
  nudge(): void {
    this.#maybeDue = true;
    if (this.#stopped || this.#concurrency === 0) return;
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    void this.#pump().finally(() => {
      this.#pumping = false;
      if (this.#again) {
        this.#again = false;
        this.nudge();
      }
    });
  }

  async #pump(): Promise<void> {
    // No claim that would find nothing: each one says whether another could take a run (claimable),
    // and a wake-up meanwhile (`nudge`) says so too.
    while (!this.#stopped && this.#active.size < this.#concurrency && this.#maybeDue) {
      this.#maybeDue = false;
      let claimed: Awaited<ReturnType<Storage["runs"]["claimNext"]>>;
      try {
        claimed = await this.#storage.runs.claimNext(this.#lease);
      } catch (err) {
        this.#log.error("claiming a run failed", { error: (err as Error).message });
        this.#wakeAt(new Date(Date.now() + 1000));
        return;
      }
      this.#waiting = claimed.waiting;
      if (claimed.claimable) this.#maybeDue = true;
      if (!claimed.run) {
        if (claimed.nextDueAt) this.#wakeAt(claimed.nextDueAt);
        return;
      }
      this.#launch(
        claimed.run,
        claimed.org ?? DEFAULT_ORG,
        claimed.threadMetadata ?? {},
        claimed.stopRequested,
      );
    }
  }

  #launch(run: Run, org: OrgId, threadMetadata: JsonObject, stopRequested?: StopAction): void {
    const controller = new AbortController();
    // Asked to stop while it waited (e.g. handed back by a shutdown just as a cancel came): it settles
    // as asked without running the graph.
    if (stopRequested) controller.abort(stopRequested);
    // This worker stalled past its lease and now claimed the run again: the stale execution stops.
    this.#active.get(run.run_id)?.controller.abort("lease_lost" satisfies StopReason);
    this.#stats?.started();
    const done = Promise.resolve(this.#deps.logs.open(run.run_id))
      .catch(() => undefined) // the log opens with the run's first event anyway
      .then(() => executeRun(this.#deps, run, org, threadMetadata, controller.signal))
      .catch((err): RunEnd => {
        this.#log.error("run executor crashed", { run_id: run.run_id, error: String(err) });
        return "error";
      })
      .then((end) => this.#stats?.ended(end))
      .finally(() => {
        if (this.#active.get(run.run_id) === entry) this.#active.delete(run.run_id);
        if (controller.signal.reason === "shutdown" || controller.signal.reason === "lease_lost") {
          this.#bus?.wakeWorkers(); // handed back: another worker may take it now
          this.#maybeDue = true;
        }
        if (this.#active.size === 0) this.#stopHeartbeat();
        // A slot is free: claim if a run may be due (a wake-up came while all slots were taken), or one
        // waited behind an executing run (this one, maybe).
        if (this.#maybeDue || this.#waiting) this.nudge();
      });
    const entry = { controller, done };
    this.#active.set(run.run_id, entry);
    this.#startHeartbeat();
  }

  #wakeAt(due: Date): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.nudge(), Math.max(0, due.getTime() - Date.now()) + 5);
    this.#timer.unref();
  }

  #startHeartbeat(): void {
    // With storage this process owns, nobody else could take its runs: leases need no renewal.
    if (this.#heartbeat || this.#storage.exclusive) return;
    this.#heartbeat = setInterval(
      () => void this.#renewLeases(),
      Math.max(100, Math.floor(this.#lease.ms / 3)),
    );
    this.#heartbeat.unref();
  }

  #stopHeartbeat(): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  /** The heartbeat: keeps this worker's leases, and acts on what it learns (lost runs, stop requests). */
  async #renewLeases(): Promise<void> {
    const runIds = [...this.#active.keys()];
    if (!runIds.length || this.#renewing) return;
    this.#renewing = true;
    try {
      const { lost, recovered, stopRequested } = await this.#storage.runs.renewLeases(this.#lease, runIds);
      // A run that has ended (usually: its executor recorded the end and is releasing its readers) is
      // not news; one in flight again elsewhere means this worker stalled past its lease.
      for (const runId of recovered)
        this.#log.warn("lost the lease of a run; another worker recovers it", { run_id: runId });
      for (const runId of lost) this.#active.get(runId)?.controller.abort("lease_lost" satisfies StopReason);
      for (const { run_id, action } of stopRequested) void this.stop(run_id, action);
    } catch (err) {
      this.#log.error("renewing run leases failed", { error: (err as Error).message });
    } finally {
      this.#renewing = false;
    }
  }

  /** Recovers runs whose worker died (expired lease), in any process: the database decides who does each. */
  async #sweep(): Promise<void> {
    if (this.#stopped) return;
    try {
      // Our own leases first: after a long stall (a CPU-bound node blocking the event loop) this timer
      // may fire before the heartbeat, and must not take this process's runs for a dead worker's.
      await this.#renewLeases();
      this.#settleRecovered(await this.#storage.runs.sweepExpiredLeases(MAX_ATTEMPTS));
    } catch (err) {
      this.#log.error("sweeping expired run leases failed", { error: (err as Error).message });
    }
    // Also the safety net for wake-ups lost on the bus (pub/sub is at most once): a cheap claim attempt.
    this.nudge();
  }

  #settleRecovered(r: Awaited<ReturnType<Storage["runs"]["sweepExpiredLeases"]>>): void {
    const count = r.requeued.length + r.failed.length + r.interrupted.length + r.rolledBack.length;
    if (!count) return;
    this.#log.warn("recovered runs whose worker died", {
      requeued: r.requeued.length,
      failed: r.failed.length,
      interrupted: r.interrupted.length,
      rolled_back: r.rolledBack.length,
    });
    // Readers of a requeued run keep following its log: the next attempt publishes into it.
    for (const runId of r.requeued) void Promise.resolve(this.#deps.logs.open(runId)).catch(() => undefined);
    for (const runId of [...r.failed, ...r.interrupted]) this.#deps.logs.end(runId, undefined);
    for (const runId of r.rolledBack) this.#deps.logs.drop(runId);
    if (r.requeued.length) this.runsDue();
  }

  /** Stops a run executing here; resolves once it has settled. False if it is not executing here. */
  async stop(runId: string, reason: StopReason): Promise<boolean> {
    const entry = this.#active.get(runId);
    if (!entry) return false;
    if (entry.controller.signal.aborted) {
      await entry.done;
      return true;
    }
    // Fence first: an aborted graph may still flush a checkpoint after its run was rolled back.
    if (reason === "rollback") this.#deps.storage.checkpointer.fenceRun(runId);
    entry.controller.abort(reason);
    await entry.done;
    return true;
  }

  /**
   * Stops a running run wherever it executes. `record` writes the request on the run row first, so it
   * holds even if the signal is lost or the worker dies (not possible for a run whose row is being
   * deleted). With `waitMs`, resolves once the run has settled or that time has passed. False when a
   * recorded request found the run no longer running (it was settled or requeued meanwhile).
   */
  async stopAnywhere(
    runId: string,
    action: StopAction,
    opts: { record: boolean; waitMs: number },
  ): Promise<boolean> {
    if (await this.stop(runId, action)) return true;
    if (!this.#bus) return true; // one process: not executing here means not executing at all
    if (opts.record && !(await this.#storage.runs.requestStop(runId, action))) return false;
    if (opts.waitMs <= 0) {
      this.#bus.stopRun(runId, action);
      return true;
    }
    const settled = new AbortController();
    const timer = setTimeout(() => settled.abort(), opts.waitMs);
    const outcome = this.#deps.logs.outcome(runId, settled.signal).catch(() => null);
    this.#bus.stopRun(runId, action);
    await outcome.finally(() => clearTimeout(timer));
    return true;
  }

  /**
   * Graceful shutdown: stop claiming, let runs in flight finish for up to `graceMs`, then hand the
   * rest back (pending again, resumed from their last checkpoint by the next worker).
   */
  async close(graceMs: number): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#sweeper);
    // Stop signals stay subscribed (and leases renewed) until the runs in flight are done.
    const all = () => Promise.all([...this.#active.values()].map((a) => a.done));
    const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), graceMs).unref());
    if ((await Promise.race([all(), timeout])) === "timeout") {
      this.#log.info("handing back runs still executing", { runs: this.#active.size });
      for (const { controller } of this.#active.values()) controller.abort("shutdown" satisfies StopReason);
      await all();
    }
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    this.#stopHeartbeat();
  }
}
