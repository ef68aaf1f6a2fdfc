import type { Logger } from "../../logger.js";
import type { CronsRepo, DueCron, OrgId, Run } from "../../storage/ports.js";
import type { RunRequest } from "../runs/service.js";
import { nextRunAt } from "./expression.js";
import { runRequestOf } from "./service.js";

/** What the scheduler needs of RunService: creating a run (stateful on a thread, or stateless). */
export interface CronRunner {
  create(org: OrgId, threadId: string | null, body: RunRequest, headers: Headers): Promise<Run>;
}

export interface CronSchedulerOptions {
  crons: CronsRepo;
  runs: CronRunner;
  log: Logger;
  /** Epoch ms; injectable so tests can move time. */
  clock?: () => number;
  /** The longest the timer sleeps before looking again (wall-clock jumps, crons written by other processes). */
  maxSleepMs?: number;
}

/** Due crons read per query; a cycle reads again until fewer come back. */
const BATCH = 100;

/**
 * Fires crons. Like the dispatcher it never polls: it keeps one timer, set for the earliest
 * `next_run_at` in the database, and cron changes `nudge()` it to look again.
 *
 * Each due tick is claimed with a compare-and-set on `next_run_at` (`CronsRepo.claimTick`) before its
 * run is created, so a tick fires once even when several processes share the database. The next
 * firing time is computed from *now*: ticks missed while no process was running (or while the cron
 * was overdue for any reason) collapse into the one firing that happens now, never a burst. Claim and
 * run creation are two steps, so a process dying between them loses that one tick (at most once).
 */
export class CronScheduler {
  readonly #crons: CronsRepo;
  readonly #runs: CronRunner;
  readonly #log: Logger;
  readonly #clock: () => number;
  readonly #maxSleepMs: number;
  #timer?: NodeJS.Timeout;
  #busy = false;
  #again = false;
  #stopped = false;
  #cycle: Promise<void> = Promise.resolve();

  constructor(opts: CronSchedulerOptions) {
    this.#crons = opts.crons;
    this.#runs = opts.runs;
    this.#log = opts.log;
    this.#clock = opts.clock ?? Date.now;
    this.#maxSleepMs = opts.maxSleepMs ?? 60 * 60_000;
  }

  /** Fires what came due while no process was running (once per cron), then follows the schedule. */
  start(): void {
    this.nudge();
  }

  /** Crons changed or may be due: fire what is due and re-arm the timer. */
  nudge(): void {
    if (this.#stopped) return;
    if (this.#busy) {
      this.#again = true;
      return;
    }
    this.#busy = true;
    this.#cycle = this.#runCycle().finally(() => {
      this.#busy = false;
      if (this.#again) {
        this.#again = false;
        this.nudge();
      }
    });
  }

  async #runCycle(): Promise<void> {
    try {
      await this.runDue();
      await this.#arm();
    } catch (err) {
      this.#log.error("cron scheduling failed", { error: (err as Error).message });
      this.#wakeIn(1000);
    }
  }

  /** Fires every cron due now, each once; returns how many this process fired. */
  async runDue(): Promise<number> {
    let fired = 0;
    for (let round = 0; round < 1000 && !this.#stopped; round++) {
      const now = this.#clock();
      const due = await this.#crons.listDue(now, BATCH);
      for (const d of due) {
        if (this.#stopped) break;
        if (await this.#fire(d, now)) fired++;
      }
      if (due.length < BATCH) break;
    }
    return fired;
  }

  async #fire(due: DueCron, now: number): Promise<boolean> {
    const { cron, org } = due;
    const end = cron.end_time ? Date.parse(cron.end_time) : null;
    const next = nextRunAt(cron.schedule, cron.timezone, now, end);
    if (!(await this.#crons.claimTick(cron.cron_id, due.next_run_at, next))) return false;
    try {
      const run = await this.#runs.create(org, cron.thread_id, runRequestOf(cron), new Headers());
      this.#log.info("cron fired", { cron_id: cron.cron_id, run_id: run.run_id, thread_id: run.thread_id });
    } catch (err) {
      // The tick is spent either way: a cron whose run cannot be created (its thread rejects it, its
      // assistant is gone) tries again at its next tick, not in a loop.
      this.#log.warn("cron firing failed", { cron_id: cron.cron_id, error: (err as Error).message });
    }
    return true;
  }

  async #arm(): Promise<void> {
    if (this.#stopped) return;
    const next = await this.#crons.nextDueAt();
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (next === null) return;
    this.#wakeIn(Math.min(Math.max(0, next - this.#clock()) + 5, this.#maxSleepMs));
  }

  #wakeIn(ms: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.nudge(), ms);
    this.#timer.unref();
  }

  /** Stops firing; resolves once a cycle in progress has finished. */
  async close(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#cycle;
  }
}
