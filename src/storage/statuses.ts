/**
 * Run and thread statuses, and the predicates call sites use instead of spelling out status lists.
 *
 * Run lifecycle:  pending ──claim──▶ running ──▶ success | error | interrupted
 *                    │                  │
 *                    │ cancel/interrupt └─ rollback ──▶ (deleted)
 *                    ▼                  └─ shutdown / crash ──▶ pending (attempt + 1)
 *               interrupted | (deleted on rollback)
 */
export const RUN_STATUSES = ["pending", "running", "success", "error", "timeout", "interrupted"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const THREAD_STATUSES = ["idle", "busy", "interrupted", "error"] as const;
export type ThreadStatus = (typeof THREAD_STATUSES)[number];

export const MULTITASK_STRATEGIES = ["reject", "rollback", "interrupt", "enqueue"] as const;
export type MultitaskStrategy = (typeof MULTITASK_STRATEGIES)[number];

export const isFinal = (s: RunStatus) => s !== "pending" && s !== "running";

/** The conflict a `reject` double text meets (the official servers' wording). */
export const THREAD_BUSY_MESSAGE =
  "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.";
