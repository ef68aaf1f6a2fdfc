import { randomUUID } from "node:crypto";
import type { AuthContext } from "../../auth/custom.js";
import { DEFAULT_HEADER_RULES, type HeaderRules, type WebhookUrlPolicy } from "../../config/index.js";
import { conflict, notFound } from "../../errors.js";
import type {
  Assistant,
  JsonObject,
  OrgId,
  Run,
  RunKwargs,
  Storage,
  ThreadTtl,
} from "../../storage/ports.js";
import type { MultitaskStrategy } from "../../storage/statuses.js";
import type { RunEvent, RunLogs } from "../../streams/run-log.js";
import { defaultAssistantId, type GraphRegistry } from "../graphs/graphs.js";
import type { Dispatcher } from "./dispatcher.js";
import { checkWebhookUrl } from "./webhook-policy.js";

/** A run-creation request after validation (snake_case, as on the wire). */
export interface RunRequest {
  assistant_id: string;
  input?: unknown;
  command?: { resume?: unknown; update?: unknown; goto?: unknown } | null;
  metadata?: JsonObject | null;
  config?: JsonObject | null;
  context?: JsonObject | null;
  checkpoint_id?: string | null;
  checkpoint?: JsonObject | null;
  webhook?: string | null;
  interrupt_before?: "*" | string[] | null;
  interrupt_after?: "*" | string[] | null;
  stream_mode?: string | string[] | null;
  stream_subgraphs?: boolean | null;
  stream_resumable?: boolean | null;
  multitask_strategy?: MultitaskStrategy | null;
  if_not_exists?: "create" | "reject" | null;
  after_seconds?: number | null;
  on_completion?: "delete" | "keep" | null;
  feedback_keys?: string[] | null;
  durability?: "sync" | "async" | "exit" | null;
  /** Deprecated by the official API for `durability` (false means `exit`). */
  checkpoint_during?: boolean | null;
}

/** How often a reader of a log written elsewhere checks storage for a run that settled without ending it. */
const SETTLED_CHECK_MS = 5_000;

export interface RunServiceOptions {
  /** The TTL of a thread a run creates (langgraph.json `checkpointer.ttl.default_ttl`). */
  threadTtl?: ThreadTtl;
  /** langgraph.json `webhooks.url`: the webhook URLs runs and crons may name. */
  webhookPolicy?: WebhookUrlPolicy;
  /** langgraph.json `http.configurable_headers`: the request headers a run gets in `configurable`. */
  headerRules?: HeaderRules;
}

export class RunService {
  constructor(
    private readonly storage: Storage,
    private readonly graphs: GraphRegistry,
    private readonly dispatcher: Dispatcher,
    private readonly logs: RunLogs,
    private readonly options: RunServiceOptions = {},
  ) {
    this.#forwarded = headerFilter(options.headerRules ?? DEFAULT_HEADER_RULES);
  }

  /** Whether a request header goes into a run's `configurable` (langgraph.json `http.configurable_headers`). */
  readonly #forwarded: (name: string) => boolean;

  #forwardedHeaders(headers: Headers): JsonObject {
    const out: JsonObject = {};
    headers.forEach((value, key) => {
      if (this.#forwarded(key)) out[key] = value;
    });
    return out;
  }

  /** Refuses (422, naming the rule) a webhook URL the langgraph.json `webhooks.url` policy does not allow. */
  async checkWebhook(url: string | null | undefined): Promise<void> {
    if (url) await checkWebhookUrl(url, this.options.webhookPolicy);
  }

  /** An assistant by id, or the default assistant of a graph named by its id. */
  async assistant(org: OrgId, idOrGraph: string): Promise<Assistant> {
    const id = this.graphs.has(idOrGraph) ? defaultAssistantId(idOrGraph) : idOrGraph;
    const assistant = await this.storage.assistants.get(org, id);
    if (!assistant) throw this.unknownAssistant(idOrGraph);
    return assistant;
  }

  unknownAssistant(idOrGraph: string) {
    return notFound(
      `No assistant found for "${idOrGraph}". Make sure the assistant ID is for a valid assistant or a valid graph ID.`,
    );
  }

  /**
   * Admits a run (atomically, with its multitask strategy) and wakes the dispatcher. `user`: who asks
   * (custom auth), handed to the graph in `configurable`; internal callers (crons) pass none and keep
   * the user their payload was stamped with.
   */
  async create(
    org: OrgId,
    threadId: string | null,
    body: RunRequest,
    headers: Headers,
    user?: AuthContext,
    /** More kwargs for the executor (the protocol's `thread_events`). */
    extraKwargs?: JsonObject,
  ): Promise<Run> {
    const assistant = await this.assistant(org, body.assistant_id);
    await this.checkWebhook(body.webhook);
    const runId = randomUUID();
    const stateless = threadId === null;
    const thread_id = threadId ?? randomUUID();
    const strategy = body.multitask_strategy ?? "enqueue";

    const configurable: JsonObject = {
      ...((assistant.config.configurable as JsonObject) ?? {}),
      ...((body.config?.configurable as JsonObject) ?? {}),
      ...this.#forwardedHeaders(headers),
      ...(body.checkpoint ?? {}),
      ...(body.checkpoint_id ? { checkpoint_id: body.checkpoint_id } : {}),
      ...(user && authConfigurable(user)),
      run_id: runId,
      thread_id,
      graph_id: assistant.graph_id,
      assistant_id: assistant.assistant_id,
    };
    // As in the official servers, `user_id` names the run's user (graphs written for `langgraph dev` read
    // it): the request's or the assistant's own, else the authenticated user's (a cron's, as stamped).
    if (configurable.user_id == null && typeof configurable.langgraph_auth_user_id === "string")
      configurable.user_id = configurable.langgraph_auth_user_id;
    const config = { ...assistant.config, ...(body.config ?? {}), configurable };
    const kwargs: RunKwargs = {
      input: body.input ?? undefined,
      command: body.command ?? undefined,
      // The graph's run metadata starts from the assistant's metadata, as in the official servers (the
      // executor adds the thread's and the run's); the thread keeps the request's config only.
      config: {
        ...config,
        metadata: {
          ...((assistant.config.metadata as JsonObject) ?? {}),
          ...assistant.metadata,
          ...((body.config?.metadata as JsonObject) ?? {}),
        },
      },
      context: { ...assistant.context, ...(body.context ?? {}) },
      stream_mode: normalizeStreamMode(body.stream_mode),
      stream_subgraphs: body.stream_subgraphs ?? false,
      stream_resumable: body.stream_resumable ?? false,
      interrupt_before: body.interrupt_before ?? undefined,
      interrupt_after: body.interrupt_after ?? undefined,
      webhook: body.webhook ?? undefined,
      feedback_keys: body.feedback_keys ?? undefined,
      durability: durabilityOf(body),
      temporary: stateless && (body.on_completion ?? "delete") === "delete",
      ...extraKwargs,
    };
    const { run, runningToStop, pendingSettled } = await this.storage.runs.admit(org, {
      run_id: runId,
      thread_id,
      assistant,
      metadata: body.metadata ?? {},
      kwargs,
      multitask_strategy: strategy,
      if_not_exists: body.if_not_exists ?? "reject",
      not_before: new Date(Date.now() + (body.after_seconds ?? 0) * 1000),
      stateless,
      thread_config: threadConfig(config),
      ...(this.options.threadTtl && { thread_ttl: this.options.threadTtl }),
    });
    // The run is stored: a log that cannot be opened now (Redis unreachable) must not turn its
    // acknowledgement into an error. Its first event opens the log anyway.
    await Promise.resolve(this.logs.open(run.run_id)).catch(() => undefined);
    for (const prior of pendingSettled) {
      if (strategy === "rollback") this.logs.drop(prior.run_id);
      else this.logs.end(prior.run_id, undefined);
    }
    for (const prior of runningToStop) {
      // interrupt/rollback of a running prior run (admission recorded the request on it): stop it
      // wherever it executes; its end lets this run be claimed.
      const action = strategy === "rollback" ? "rollback" : "interrupt";
      void this.dispatcher
        .stopAnywhere(prior.run_id, action, { record: false, waitMs: 0 })
        .catch(() => undefined);
    }
    this.dispatcher.runsDue();
    return run;
  }

  async get(org: OrgId, threadId: string | null, runId: string): Promise<Run> {
    const run = await this.storage.runs.get(org, threadId, runId);
    if (!run) throw notFound(`Run ${runId} not found`);
    return run;
  }

  /** Waits for the run to end and returns its result (final values, or `{__error__}`). */
  async join(org: OrgId, threadId: string | null, runId: string, signal?: AbortSignal): Promise<unknown> {
    return this.joinRun(org, await this.get(org, threadId, runId), signal);
  }

  /**
   * `join` of a run the caller already holds — the one it just created. It must not be looked up
   * again: a stateless run may have finished and taken its temporary thread (and its row) with it.
   */
  async joinRun(org: OrgId, run: Run, signal?: AbortSignal): Promise<unknown> {
    const runId = run.run_id;
    await this.#attach(run);
    const watch = this.#watchSettled(org, runId, signal);
    const outcome = await this.logs.outcome(runId, watch.signal).finally(watch.stop);
    if (outcome && outcome.result !== undefined) return outcome.result;
    // A run stopped before it produced a result, or no log here any more (retention passed,
    // restart): answer from storage.
    const thread = await this.storage.threads.get(org, run.thread_id);
    const latest = await this.storage.runs.get(org, null, runId);
    if (latest?.status === "error" && thread?.error) return { __error__: thread.error };
    return thread?.values ?? null;
  }

  /** The run's events after `lastEventId` (-1: all), following it until it ends. */
  async stream(
    org: OrgId,
    threadId: string | null,
    runId: string,
    lastEventId: number,
    signal: AbortSignal,
  ): Promise<AsyncIterable<RunEvent>> {
    return this.streamRun(org, await this.get(org, threadId, runId), lastEventId, signal);
  }

  /** `stream` of a run the caller already holds (see `joinRun`). */
  async streamRun(
    org: OrgId,
    run: Run,
    lastEventId: number,
    signal: AbortSignal,
  ): Promise<AsyncIterable<RunEvent>> {
    const runId = run.run_id;
    await this.#attach(run);
    const watch = this.#watchSettled(org, runId, signal);
    const logs = this.logs;
    return (async function* () {
      try {
        yield* logs.read(runId, lastEventId, watch.signal);
      } finally {
        watch.stop();
      }
    })();
  }

  /**
   * For logs another process writes: a signal that also aborts once storage has shown the run settled
   * on two checks in a row while its log stayed open (its worker died between recording the outcome
   * and ending the log), so readers fall back to storage instead of waiting forever. The embedded log
   * is ended by this process, always: there it is just the reader's signal.
   */
  #watchSettled(org: OrgId, runId: string, signal?: AbortSignal): { signal?: AbortSignal; stop: () => void } {
    if (!this.logs.shared) return { signal, stop: () => {} };
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    let settledChecks = 0;
    const timer = setInterval(async () => {
      const run = await this.storage.runs.get(org, null, runId).catch(() => undefined);
      if (run === undefined) return; // storage unreachable: no news
      settledChecks =
        run === null || (run.status !== "pending" && run.status !== "running") ? settledChecks + 1 : 0;
      if (settledChecks >= 2) controller.abort();
    }, SETTLED_CHECK_MS);
    timer.unref();
    return {
      signal: controller.signal,
      stop: () => {
        clearInterval(timer);
        signal?.removeEventListener("abort", onAbort);
      },
    };
  }

  /**
   * A run still in flight always has a log to wait on, also when this process has not seen it yet
   * (queued before a restart): the executor publishes into it once the run is claimed.
   */
  async #attach(run: Run): Promise<void> {
    if (run.status !== "pending" && run.status !== "running") return;
    // A log dropped meanwhile (the run was deleted) is not opened again: see RunLogs.open.
    await this.logs.open(run.run_id);
  }

  /** Deletes a run that is not executing; whoever waits on it is released. */
  async deleteRun(org: OrgId, threadId: string, runId: string): Promise<void> {
    const result = await this.storage.runs.delete(org, threadId, runId);
    if (result === "absent") throw notFound(`Run ${runId} not found`);
    if (result === "running") throw conflict(`Run ${runId} is running; cancel it before deleting it`);
    this.logs.drop(runId);
  }

  /**
   * Deletes a thread with its runs and checkpoints. Its running runs are fenced first (so they write no
   * checkpoint after the delete) and then stopped; readers of its queued runs are released.
   */
  async deleteThread(org: OrgId, threadId: string): Promise<void> {
    // Fenced before the delete, so no late checkpoint of theirs outlives the thread.
    const running = await this.storage.runs.list(org, threadId, {
      limit: 10_000,
      offset: 0,
      status: "running",
    });
    for (const run of running) this.storage.checkpointer.fenceRun(run.run_id);
    // The in-flight runs the delete itself saw: one admitted a moment before it is among them.
    const { deleted, runningRunIds, pendingRunIds } = await this.storage.threads.delete(org, threadId);
    if (!deleted) throw notFound(`Thread ${threadId} not found`);
    for (const id of runningRunIds) this.storage.checkpointer.fenceRun(id);
    for (const id of pendingRunIds) this.logs.drop(id);
    await this.stopAll(runningRunIds);
  }

  /**
   * Cancels a pending or running run. A run stopped in this process has settled when this resolves;
   * one executing elsewhere is signalled (callers that want to wait join it).
   */
  async cancel(
    org: OrgId,
    threadId: string | null,
    runId: string,
    action: "interrupt" | "rollback",
  ): Promise<void> {
    // A run may move between pending and running while we act (claimed; handed back by a shutdown or
    // the sweeper): act on what it is now, a few times at most.
    for (let tries = 0; tries < 5; tries++) {
      const run = await this.get(org, threadId, runId);
      if (run.status === "pending") {
        if (!(await this.storage.runs.cancelPending(runId, action))) continue; // claimed meanwhile
        if (action === "rollback") this.logs.drop(runId);
        else this.logs.end(runId, undefined);
        this.dispatcher.nudge();
        return;
      }
      if (run.status !== "running") return; // already settled
      if (await this.dispatcher.stopAnywhere(runId, action, { record: true, waitMs: 0 })) return;
    }
  }

  /**
   * Deletes an assistant (and with `deleteThreads` the threads it ran on). Its queued runs go with it
   * and their readers are released; its executing runs are fenced and stopped with a rollback.
   */
  async deleteAssistant(org: OrgId, assistantId: string, deleteThreads: boolean): Promise<void> {
    const { deleted, runningRunIds, pendingRunIds } = await this.storage.assistants.delete(org, assistantId, {
      deleteThreads,
    });
    if (!deleted) throw notFound(`Assistant ${assistantId} not found`);
    for (const id of runningRunIds) this.storage.checkpointer.fenceRun(id);
    for (const id of pendingRunIds) this.logs.drop(id);
    await this.stopAll(runningRunIds);
  }

  /** Stops whatever runs a deleted thread had executing. */
  async stopAll(runIds: string[]): Promise<void> {
    // Their rows are gone, so nothing records the request: wait a little for their workers, not for a lease.
    await Promise.all(
      runIds.map((id) => this.dispatcher.stopAnywhere(id, "rollback", { record: false, waitMs: 5_000 })),
    );
  }
}

/** Keys of a run's `configurable` that are that run's alone, not the thread's. */
const RUN_ONLY_KEYS = ["run_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map"];

/**
 * A thread's config after a run was admitted on it: the run's config (its `configurable` included, as
 * a graph factory reads it) without what belongs to that run alone.
 */
/**
 * `durability`, or what the deprecated `checkpoint_during` means (false: `exit`), as the official server
 * reads them: `durability` wins when both are given.
 */
function durabilityOf(body: RunRequest): RunKwargs["durability"] {
  if (body.durability) return body.durability;
  if (body.checkpoint_during == null) return undefined;
  return body.checkpoint_during ? "async" : "exit";
}

function threadConfig(config: RunKwargs["config"]): JsonObject {
  const configurable = { ...(config.configurable ?? {}) };
  for (const key of RUN_ONLY_KEYS) delete configurable[key];
  return { ...config, configurable };
}

/**
 * The user as LangGraph hands it to graphs (`config.configurable`), as plain JSON: it is stored with
 * the run. A request's own `langgraph_auth_*` keys are overwritten, never trusted.
 */
export function authConfigurable(ctx: AuthContext): JsonObject {
  const { identity, display_name, is_authenticated, permissions } = ctx.user;
  let user: JsonObject = { identity, display_name, is_authenticated, permissions };
  try {
    user = JSON.parse(JSON.stringify(ctx.user)); // every JSON field the handler put on its user
  } catch {} // a field JSON cannot hold (a cycle, a BigInt): the standard ones
  return {
    langgraph_auth_user: user,
    langgraph_auth_user_id: ctx.user.identity,
    langgraph_auth_permissions: [...ctx.permissions],
  };
}

export function normalizeStreamMode(mode: string | string[] | null | undefined): string[] {
  if (mode === undefined || mode === null) return ["values"];
  return Array.isArray(mode) ? [...new Set(mode)] : [mode];
}

/** Header-name patterns (`x-*`, case-insensitive) → a test; exclusions win over inclusions. */
function headerFilter(rules: HeaderRules): (name: string) => boolean {
  const pattern = (globs: string[]) =>
    new RegExp(
      `^(?:${
        globs
          .map((g) =>
            g
              .toLowerCase()
              .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
              .replaceAll("*", ".*"),
          )
          .join("|") || "(?!)"
      })$`,
    );
  const include = pattern(rules.includes);
  const exclude = pattern(rules.excludes);
  return (name) => include.test(name) && !exclude.test(name);
}
