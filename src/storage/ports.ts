/**
 * The storage port: everything the HTTP layer and the runtime may ask of durable storage, implemented
 * once for SQLite and Postgres (sql/); nothing outside src/storage knows SQL.
 *
 * Operations are domain-sized on purpose: `runs.admit` is the whole multitask admission and
 * `runs.claimNext` the whole dequeue, so each is one transaction.
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { CronsRepo } from "./cron-ports.js";
import type { AuthFilter } from "./filter.js";
import type { SandboxBoxesRepo, SandboxesRepo } from "./sandbox-ports.js";
import type { MultitaskStrategy, RunStatus, ThreadStatus } from "./statuses.js";
import type { StoreRepo } from "./store-ports.js";
import type { ThreadEventsRepo } from "./thread-event-ports.js";

export type * from "./cron-ports.js";
export type * from "./sandbox-ports.js";
export type * from "./store-ports.js";
export type * from "./thread-event-ports.js";

export type JsonObject = Record<string, unknown>;
export type SortOrder = "asc" | "desc";

/** A search's page and order, and the auth handler's filter (src/storage/filter.ts): other rows do not exist. */
export type SearchQuery = { auth?: AuthFilter; limit: number; offset: number; sort_order: SortOrder };

/** Every row belongs to an organization (DESIGN.md decision 6); system assistants belong to all. */
export type OrgId = string;
export const DEFAULT_ORG: OrgId = "default";

export interface Assistant {
  assistant_id: string;
  graph_id: string;
  version: number;
  name: string;
  description: string | null;
  config: JsonObject;
  context: JsonObject;
  metadata: JsonObject;
  created_at: string;
  updated_at: string;
}

export type AssistantVersion = Omit<Assistant, "updated_at">;

export type AssistantInput = Omit<Assistant, "version" | "created_at" | "updated_at">;

/** The fields to change; `metadata` is shallow-merged into the current metadata. */
export type AssistantPatch = Partial<Omit<AssistantInput, "assistant_id">>;

export interface AssistantQuery extends SearchQuery {
  graph_id?: string;
  name?: string;
  metadata?: JsonObject;
  sort_by: "assistant_id" | "graph_id" | "name" | "created_at" | "updated_at";
}

export type AssistantFilter = Pick<AssistantQuery, "graph_id" | "name" | "metadata" | "auth">;

export type VersionQuery = { metadata?: JsonObject; limit: number; offset: number };

export interface Interrupt {
  id?: string;
  value: unknown;
  [k: string]: unknown;
}

export interface Thread {
  thread_id: string;
  created_at: string;
  updated_at: string;
  state_updated_at: string;
  metadata: JsonObject;
  status: ThreadStatus;
  config: JsonObject;
  /** The state after the last run or update (serialised JSON form), absent until then. */
  values?: unknown;
  /** task id → interrupts of the last checkpoint. */
  interrupts: Record<string, Interrupt[]>;
  error?: unknown;
}

/**
 * A thread's time-to-live (langgraph.json `checkpointer.ttl`, or the `ttl` of a thread create/update):
 * `minutes` after its last update (`updated_at`), with no run in flight, the sweeper applies `strategy`:
 * `delete` removes the thread with its runs, crons and checkpoints, `keep_latest` removes all but the
 * latest checkpoint of each namespace (once per update of the thread) and keeps the thread.
 */
export interface ThreadTtl {
  strategy: "delete" | "keep_latest";
  minutes: number;
}

export type ThreadInput = Pick<Thread, "thread_id" | "metadata"> & { ttl?: ThreadTtl };

export type ThreadState = { values: unknown; interrupts: Record<string, Interrupt[]>; hasNext: boolean };

/** Rows and bytes of one part of a thread's checkpoint storage. */
export interface StorageSection {
  count: number;
  bytes: number;
}

/**
 * What a thread's checkpoints occupy, as stored: checkpoint rows (less their channel values), the
 * channel values (in all, and per channel), and pending writes.
 */
export interface CheckpointStorage {
  checkpoints: StorageSection;
  channel_values: StorageSection & { channels: Record<string, StorageSection> };
  pending_writes: StorageSection;
}

/** What one sweep did: the threads deleted, and those whose older checkpoints were pruned. */
export interface ThreadSweep {
  deleted: { org: OrgId; thread_id: string }[];
  pruned: { org: OrgId; thread_id: string }[];
}

export interface ThreadDeletion {
  deleted: boolean;
  runningRunIds: string[];
  pendingRunIds: string[];
}

export interface ThreadQuery extends SearchQuery {
  ids?: string[];
  metadata?: JsonObject;
  values?: JsonObject;
  status?: ThreadStatus;
  sort_by: "thread_id" | "status" | "created_at" | "updated_at" | "state_updated_at";
}

/** What the run needs to execute, stored with it (`kwargs` on the wire). */
export interface RunKwargs {
  input?: unknown;
  command?: unknown;
  config: JsonObject & { configurable?: JsonObject };
  context: JsonObject;
  stream_mode: string[];
  stream_subgraphs: boolean;
  stream_resumable: boolean;
  interrupt_before?: string[] | "*";
  interrupt_after?: string[] | "*";
  webhook?: string;
  feedback_keys?: string[];
  /** When the run's checkpoints are written (LangGraph's `durability`); absent: LangGraph's default, `async`. */
  durability?: "sync" | "async" | "exit";
  temporary: boolean;
  [k: string]: unknown;
}

export type RunListQuery = { limit: number; offset: number; status?: RunStatus; metadata?: JsonObject };

/**
 * A search over every thread's runs (`POST /runs/search`, a Hangar extension), newest first. `auth`
 * filters the runs' threads' metadata: runs are authorized through their thread.
 */
export interface RunSearchQuery {
  /** One status, or any of several. */
  status?: RunStatus[];
  assistant_id?: string;
  thread_id?: string;
  /** Contained in the run's own metadata (the request's `metadata`). */
  metadata?: JsonObject;
  auth?: AuthFilter;
  limit: number;
  offset: number;
}

/**
 * How a failed run failed, as storage keeps it: the type and message every client sees (the `error` SSE
 * event, `__error__` of join/wait, the thread's `error`) and the stack trace, which only the run search
 * returns, to the callers allowed to see it.
 */
export interface RunError {
  error: string;
  message: string;
  stack?: string;
}

/** A run found by `runs.search`: with how it failed, when it did (null otherwise). */
export type RunWithError = Run & { error: RunError | null };

export interface Run {
  run_id: string;
  thread_id: string;
  assistant_id: string;
  created_at: string;
  updated_at: string;
  status: RunStatus;
  metadata: JsonObject;
  kwargs: RunKwargs;
  multitask_strategy: MultitaskStrategy;
  /** How many times a worker has started this run (1 on the first execution). */
  attempt: number;
}

/** A run to admit; its `metadata` is stored on the run (the request's `metadata`). */
export interface RunAdmission
  extends Pick<Run, "run_id" | "thread_id" | "metadata" | "kwargs" | "multitask_strategy"> {
  assistant: Assistant;
  if_not_exists: "create" | "reject";
  /** When the run may start; later than now for `after_seconds`. */
  not_before: Date;
  /** Stateless run: its thread is created here and deleted after the run. */
  stateless: boolean;
  /**
   * The thread's config from now on: the run's, without what belongs to the run alone. State reads and
   * updates build a graph factory with it. Absent: the thread's config is left as it is.
   */
  thread_config?: JsonObject;
  /** The TTL of a thread this admission creates (`if_not_exists: "create"`); absent: none. */
  thread_ttl?: ThreadTtl;
}

export interface AdmissionResult {
  run: Run;
  /** Prior runs that were executing and must be stopped by the runtime (interrupt or rollback). */
  runningToStop: Run[];
  /** Prior pending runs settled by the admission itself: interrupted, or deleted by rollback. */
  pendingSettled: Run[];
}

export interface RunCompletion {
  run_id: string;
  /** The attempt that executed it: a worker whose lease was taken over cannot settle the new attempt. */
  attempt?: number;
  status: Extract<RunStatus, "success" | "error" | "interrupted">;
  /** Thread state after the run, when it could be read (`undefined` leaves values unchanged). */
  values?: unknown;
  interrupts?: Record<string, Interrupt[]>;
  /** True when the last checkpoint has pending nodes (interrupt() or a breakpoint). */
  hasNext: boolean;
  /** How the run failed (`status: "error"`); the thread keeps its type and message, the run the stack too. */
  error?: { error: string; message: string };
  /** The failure's stack trace, kept with the run only. */
  stack?: string;
}

/** How a running run is asked to stop, by a cancel or an interrupt/rollback double text. */
export type StopAction = "interrupt" | "rollback";

/**
 * A worker's hold on the runs it claimed: it lasts `ms` past the claim or the last renewal. A run whose
 * lease expired (its worker died or lost the database) is recovered by `sweepExpiredLeases`.
 */
export interface Lease {
  workerId: string;
  ms: number;
}

/** The lease of a run claimed without one (tests, tools): dispatchers always pass their own. */
export const DEFAULT_LEASE: Lease = Object.freeze({ workerId: "local", ms: 30_000 });

export interface ClaimResult {
  run: Run | null;
  org?: OrgId;
  /** The run's thread's metadata (read by the claim's own thread update): the graph's run metadata has it. */
  threadMetadata?: JsonObject;
  nextDueAt: Date | null;
  /** The run was asked to stop before this worker got it: settle it without executing the graph. */
  stopRequested?: StopAction;
  /**
   * Another run may be claimable now (after a claim that took one; false only when certainly none is),
   * so a worker with room claims again, and not otherwise.
   */
  claimable: boolean;
  /**
   * Due runs wait behind their thread's executing run: a worker claims again when a run of its own
   * ends, and need not otherwise. Exact as of the claim; a run admitted after it wakes the workers.
   */
  waiting: boolean;
}

export interface LeaseRenewal {
  /** Runs this worker no longer holds (swept as expired, or settled elsewhere): stop executing them. */
  lost: string[];
  /**
   * Those of `lost` that are in flight again without this worker (requeued by a sweep, or claimed by
   * another worker): the others have ended (often just now, by this worker) or are gone.
   */
  recovered: string[];
  /** Runs asked to stop (recorded by `requestStop`), in case the signal did not reach this worker. */
  stopRequested: { run_id: string; action: StopAction }[];
}

/** The runs a sweep recovered: requeued, failed, or settled as their recorded stop request asked. */
export type SweepResult = Record<"requeued" | "failed" | "interrupted" | "rolledBack", string[]>;

/**
 * The run queue at one moment, for `GET /metrics` (the official server's `queue` figures). Waits are
 * counted from when a run became due (its `after_seconds` passed; otherwise its creation), so a
 * delayed run is not "waiting" before its time; runs not due yet count in `n_pending` only.
 */
export interface QueueStats {
  n_pending: number;
  n_running: number;
  /** How long the longest-waiting due pending run has waited, in seconds; null when none is due. */
  pending_runs_wait_time_max_secs: number | null;
  /** The median wait of the due pending runs, in seconds; null when none is due. */
  pending_runs_wait_time_med_secs: number | null;
  /**
   * The longest wait among due pending runs whose thread is not executing another run (so a worker
   * could take them now): a high value with idle workers means something is wrong.
   */
  pending_unblocked_runs_wait_time_max_secs: number | null;
}

export type AssistantDeletion = ThreadDeletion;

export interface AssistantsRepo {
  create(org: OrgId, input: AssistantInput, ifExists: "raise" | "do_nothing"): Promise<Assistant>;
  /** Creates or leaves alone a system assistant (visible to every organization). */
  ensureSystem(input: AssistantInput): Promise<Assistant>;
  get(org: OrgId, assistantId: string): Promise<Assistant | null>;
  /** Writes a new version (max + 1) and makes it current; null if absent. */
  update(org: OrgId, assistantId: string, patch: AssistantPatch): Promise<Assistant | null>;
  /**
   * Deletes the assistant, its versions and its runs (and, with `deleteThreads`, the threads it ran on).
   * Runs still executing keep their rows: the runtime stops them with a rollback. Returns the in-flight
   * runs so the runtime can release their readers; `deleted: false` if the assistant is absent.
   */
  delete(org: OrgId, assistantId: string, opts: { deleteThreads: boolean }): Promise<AssistantDeletion>;
  search(org: OrgId, query: AssistantQuery): Promise<{ items: Assistant[]; total: number }>;
  count(org: OrgId, query: AssistantFilter): Promise<number>;
  versions(org: OrgId, assistantId: string, query: VersionQuery): Promise<AssistantVersion[]>;
  setLatest(org: OrgId, assistantId: string, version: number): Promise<Assistant | null>;
}

export interface ThreadsRepo {
  create(org: OrgId, input: ThreadInput, ifExists: "raise" | "do_nothing"): Promise<Thread>;
  get(org: OrgId, threadId: string): Promise<Thread | null>;
  /** Shallow-merges metadata and, when given, replaces the thread's TTL; null if absent. */
  patch(org: OrgId, threadId: string, metadata: JsonObject, ttl?: ThreadTtl): Promise<Thread | null>;
  /** Deletes the thread, its runs and checkpoints; tells which of its runs were in flight when it went. */
  delete(org: OrgId, threadId: string): Promise<ThreadDeletion>;
  search(org: OrgId, query: ThreadQuery): Promise<{ items: Thread[]; total: number }>;
  count(org: OrgId, query: Pick<ThreadQuery, "metadata" | "values" | "status" | "auth">): Promise<number>;
  /**
   * Copies the thread with all its checkpoints under a new id; null if the source is absent. The copy's
   * metadata is the source's with `metadata` (an authorization handler's stamp) merged over it.
   */
  copy(org: OrgId, threadId: string, newThreadId: string, metadata?: JsonObject): Promise<Thread | null>;
  /** Records the state after a direct state update (values, interrupts); status follows `hasNext`. */
  recordState(org: OrgId, threadId: string, state: ThreadState): Promise<void>;
  /** Sets graph_id/assistant_id metadata and config on a thread before its first state update. */
  bindGraph(org: OrgId, threadId: string, graphId: string, assistantId: string): Promise<void>;
  /**
   * Prunes the thread's checkpoints to the latest of each namespace, and what a delta channel needs to
   * rebuild its value from (`keep_latest`); false, and nothing done, when the thread is absent or has a
   * run pending or running (its checkpoints are being written).
   */
  keepLatest(org: OrgId, threadId: string): Promise<boolean>;
  /** The thread's own TTL (null when it has none, or is absent). */
  ttl(org: OrgId, threadId: string): Promise<ThreadTtl | null>;
  /** What the thread's checkpoints occupy in the database (`GET /threads/{id}/storage`). */
  checkpointStorage(org: OrgId, threadId: string): Promise<CheckpointStorage>;
  /**
   * Applies the TTLs that ran out by `now` (epoch ms), every organization's, to at most `limit` threads,
   * oldest first. Each thread is swept by one caller only, however many sweep at once.
   */
  sweepExpired(now: number, limit: number): Promise<ThreadSweep>;
}

export interface RunsRepo {
  /**
   * Multitask admission, atomic per thread: applies `if_not_exists`, rejects (`conflict`) when the
   * strategy is `reject` and the thread has a pending or running run, inserts the run as pending,
   * marks the thread busy, and for `interrupt`/`rollback` settles prior runs: pending ones are
   * interrupted or deleted here, running ones are returned so the runtime can stop them.
   */
  admit(org: OrgId, admission: RunAdmission): Promise<AdmissionResult>;
  get(org: OrgId, threadId: string | null, runId: string): Promise<Run | null>;
  list(org: OrgId, threadId: string, query: RunListQuery): Promise<Run[]>;
  /** Runs of every thread of `org` (stateless runs' included), newest first; `total`: all matches. */
  search(org: OrgId, query: RunSearchQuery): Promise<{ items: RunWithError[]; total: number }>;
  /** Deletes a run that is not executing, and its checkpoints. */
  delete(org: OrgId, threadId: string, runId: string): Promise<"deleted" | "absent" | "running">;
  /** Cancels a pending run (interrupt → status interrupted; rollback → deleted). Null if not pending. */
  cancelPending(runId: string, action: "interrupt" | "rollback"): Promise<Run | null>;
  /**
   * Claims the oldest due pending run whose thread has no running run, marks it running and
   * bumps its attempt. Null when nothing is due; `nextDueAt` tells when a delayed run becomes due.
   */
  claimNext(lease?: Lease): Promise<ClaimResult>;
  /** Extends the leases `lease.workerId` holds on `runIds` (its heartbeat). */
  renewLeases(lease: Lease, runIds: string[]): Promise<LeaseRenewal>;
  /**
   * Records that a running run must stop, so the request survives a lost signal or a dead worker
   * (the sweeper settles it as asked). False if the run is not running.
   */
  requestStop(runId: string, action: StopAction): Promise<boolean>;
  /**
   * Recovers runs whose lease expired (their worker died): settled as their stop request asked, else
   * requeued, or failed once they have used `maxAttempts`. Safe with any number of processes.
   */
  sweepExpiredLeases(maxAttempts: number): Promise<SweepResult>;
  /**
   * Final status of an executed run, and the thread status/values that follow from it. Every operation
   * that ends a run (this, `completeRolledBack`, `cancelPending`, the sweeps) deletes a temporary
   * thread (`kwargs.temporary`: a stateless run's) with its run, in the same transaction.
   */
  complete(completion: RunCompletion): Promise<Run | null>;
  /** A running run stopped by `rollback`: delete it and its checkpoints, settle the thread. */
  completeRolledBack(runId: string): Promise<void>;
  /** A running run handed back (shutdown, crash recovery): pending again, keeps its checkpoints. */
  requeue(runId: string, attempt?: number): Promise<void>;
  /**
   * Startup recovery for storage one process owns (`Storage.exclusive`): every run left `running` is
   * a dead process's, recovered at once as `sweepExpiredLeases` would once its lease ran out.
   */
  recoverInterrupted(maxAttempts: number): Promise<SweepResult>;
  /** The queue's figures now, over every organization (`GET /metrics`). Reads only. */
  stats(): Promise<QueueStats>;
}

/**
 * The `configurable` key that tells the checkpointer whose thread a config names: a thread id is unique
 * within its organization only. Every config the server hands LangGraph carries it (`checkpointConfig`
 * in agents/state.ts, the executor's run config), LangGraph passes it on to subgraphs and to the saver,
 * and the saver refuses a config without it. `__`-prefixed, like LangGraph's own internals, it is kept
 * out of checkpoint metadata and of the configs clients see.
 */
export const CHECKPOINT_ORG_KEY = "__hangar_org";

/** The checkpointer plus the few extra operations the server needs on checkpoints. */
export interface CheckpointStore extends BaseCheckpointSaver {
  deleteRun(org: OrgId, threadId: string, runId: string): void | Promise<void>;
  copyThread(org: OrgId, sourceThreadId: string, targetThreadId: string): void | Promise<void>;
  fenceRun(runId: string): void;
}

/** An API key, of one organization. Only its hash is stored: the database never holds a usable key. */
export interface ApiKeyRecord {
  id: string;
  org_id: OrgId;
  /** The first characters of the key, shown in listings so a person can tell keys apart. */
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

export interface OrganizationRecord {
  org_id: OrgId;
  active_keys: number;
  sandbox_storage_quota_bytes: number | null;
}

export interface AuthRepo {
  createKey(org: OrgId, keyHash: string, prefix: string): Promise<ApiKeyRecord>;
  /** The organization of an unrevoked key with this hash, or null. Runs on every authenticated request. */
  findActiveKey(keyHash: string): Promise<{ id: string; org_id: OrgId } | null>;
  countActiveKeys(): Promise<number>;
  listKeys(): Promise<ApiKeyRecord[]>;
  /** Revokes by id or by unique prefix; returns the revoked key, or null if nothing matched. */
  revokeKey(idOrPrefix: string): Promise<ApiKeyRecord | null>;
  /** Organizations known from keys or from billing settings. */
  listOrgs(): Promise<OrganizationRecord[]>;
}

export interface Storage {
  /**
   * True when one process owns this storage (embedded SQLite): runs it finds `running` at start are
   * orphans. Shared storage (Postgres) relies on leases instead.
   */
  readonly exclusive: boolean;
  readonly assistants: AssistantsRepo;
  readonly threads: ThreadsRepo;
  readonly runs: RunsRepo;
  readonly checkpointer: CheckpointStore;
  readonly sandboxes: SandboxesRepo;
  readonly sandboxBoxes: SandboxBoxesRepo;
  readonly auth: AuthRepo;
  readonly crons: CronsRepo;
  readonly store: StoreRepo;
  /** Protocol-v2 thread events (thread-event-ports.ts). */
  readonly threadEvents: ThreadEventsRepo;
  close(): Promise<void>;
}
