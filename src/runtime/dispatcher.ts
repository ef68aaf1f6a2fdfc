import type { Logger } from "../cli/logger.js";
import { DEFAULT_ORG, type OrgId, type Run, type Storage } from "../storage/ports.js";
import { type ExecutorDeps, executeRun, type StopReason } from "./executor.js";

/** A run that a dead process left `running` is retried this many times in all, then failed. */
export const MAX_ATTEMPTS = 3;

/**
 * The worker pool: claims due runs from storage and executes up to `concurrency` at a time.
 * Dispatch is push-based: admission calls `nudge()`, a finishing run nudges again, and the only
 * timer is the one set for the next delayed (`after_seconds`) run. There is no polling loop.
 */
export class Dispatcher {
  readonly #deps: ExecutorDeps;
  readonly #storage: Storage;
  readonly #log: Logger;
  readonly #concurrency: number;
  readonly #active = new Map<string, { controller: AbortController; done: Promise<void> }>();
  #pumping = false;
  #again = false;
  #stopped = false;
  #timer?: NodeJS.Timeout;

  constructor(deps: ExecutorDeps, opts: { concurrency: number }) {
    this.#deps = deps;
    this.#storage = deps.storage;
    this.#log = deps.log;
    this.#concurrency = opts.concurrency;
  }

  /**
   * Recovers runs a previous process left executing. Called before the server listens, so no request
   * (a cancel, a double text) sees a dead process's run as still `running`.
   */
  async recover(): Promise<void> {
    const { requeued, failed } = await this.#storage.runs.recoverInterrupted(MAX_ATTEMPTS);
    if (requeued.length || failed.length) {
      this.#log.warn("recovered runs left executing by a previous process", {
        requeued: requeued.length,
        failed: failed.length,
      });
    }
    for (const runId of requeued) this.#deps.logs.open(runId);
  }

  /** Starts dispatching (after `recover`, once the server listens). */
  start(): void {
    this.nudge();
  }

  /** Something may be due: claim and start runs while there are free slots. */
  nudge(): void {
    if (this.#stopped) return;
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
    while (!this.#stopped && this.#active.size < this.#concurrency) {
      let claimed: Awaited<ReturnType<Storage["runs"]["claimNext"]>>;
      try {
        claimed = await this.#storage.runs.claimNext();
      } catch (err) {
        this.#log.error("claiming a run failed", { error: (err as Error).message });
        this.#wakeAt(new Date(Date.now() + 1000));
        return;
      }
      if (!claimed.run) {
        if (claimed.nextDueAt) this.#wakeAt(claimed.nextDueAt);
        return;
      }
      this.#launch(claimed.run, claimed.org ?? DEFAULT_ORG);
    }
  }

  #launch(run: Run, org: OrgId): void {
    const controller = new AbortController();
    this.#deps.logs.open(run.run_id);
    const done = executeRun(this.#deps, run, org, controller.signal)
      .catch((err) => this.#log.error("run executor crashed", { run_id: run.run_id, error: String(err) }))
      .finally(() => {
        this.#active.delete(run.run_id);
        this.nudge();
      });
    this.#active.set(run.run_id, { controller, done });
  }

  #wakeAt(due: Date): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.nudge(), Math.max(0, due.getTime() - Date.now()) + 5);
    this.#timer.unref();
  }

  /** Stops a run executing here; resolves once it has settled. False if it is not executing here. */
  async stop(runId: string, reason: StopReason): Promise<boolean> {
    const entry = this.#active.get(runId);
    if (!entry) return false;
    // Fence first: an aborted graph may still flush a checkpoint after its run was rolled back.
    if (reason === "rollback") this.#deps.storage.checkpointer.fenceRun(runId);
    entry.controller.abort(reason);
    await entry.done;
    return true;
  }

  /**
   * Graceful shutdown: stop claiming, let runs in flight finish for up to `graceMs`, then hand the
   * rest back (pending again, resumed from their last checkpoint by the next process).
   */
  async close(graceMs: number): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    const all = () => Promise.all([...this.#active.values()].map((a) => a.done));
    const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), graceMs).unref());
    if ((await Promise.race([all(), timeout])) === "timeout") {
      this.#log.info("handing back runs still executing", { runs: this.#active.size });
      for (const { controller } of this.#active.values()) controller.abort("shutdown" satisfies StopReason);
      await all();
    }
  }
}
