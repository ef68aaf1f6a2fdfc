/**
 * The protocol's commands (`{id, method, params}`), one handler per method in `COMMANDS`, the same
 * for `POST /threads/{id}/commands` and the WebSocket. A handler returns the result object or throws
 * a `CommandError` (the protocol's ErrorResponse code); another transport's or file's commands are
 * added with one line: `COMMANDS["state.fork"] = stateFork;`.
 *
 * Authorization is the REST routes': `run.start` and `input.respond` are `threads:create_run` (as
 * `POST /threads/{id}/runs`), `state.get` reads the thread (as `GET /threads/{id}/state`).
 */
import type { ErrorCode } from "@langchain/protocol";
import type { Context } from "hono";
import { visibleThread } from "../agents/authz.js";
import type { AgentDeps } from "../agents/context.js";
import { admitRun } from "../agents/runs.js";
import { type AppEnv, orgOf } from "../http/context.js";
import type { RunRequest } from "../runtime/runs/service.js";
import type { JsonObject, Thread } from "../storage/ports.js";
import { MULTITASK_STRATEGIES, type MultitaskStrategy } from "../storage/statuses.js";
import { isChannel } from "./filter.js";
import { STATE_COMMANDS } from "./state-commands.js";
import { ANSWERED_INTERRUPTS_KWARG, THREAD_EVENTS_KWARG, type ThreadEventFeed } from "./thread-events.js";

export interface ProtocolDeps extends AgentDeps {
  threadEvents: ThreadEventFeed;
}

/** What a handler gets besides its params: the request it came with (organization, user, headers). */
export interface CommandContext {
  deps: ProtocolDeps;
  c: Context<AppEnv>;
  threadId: string;
}

export type CommandHandler = (params: Record<string, unknown>, ctx: CommandContext) => Promise<object>;

/** A command refused: answered as `{type:"error", id, error: code, message}` (HTTP 200). */
export class CommandError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

const invalid = (message: string) => new CommandError("invalid_argument", message);

/** The commands; unknown methods are `unknown_command`. */
export const COMMANDS: Record<string, CommandHandler> = {
  "run.start": runStart,
  "input.respond": inputRespond,
  "state.get": stateGet,
  "subscription.subscribe": subscribeOverHttp,
  "subscription.unsubscribe": unsubscribeOverHttp,
  ...STATE_COMMANDS,
};

/** The thread's pending interrupts (the last run's, as stored): interrupt id → where it waits. */
function pendingInterrupts(thread: Thread | null): Map<string, unknown> {
  const pending = new Map<string, unknown>();
  for (const list of Object.values(thread?.interrupts ?? {}))
    for (const interrupt of list as { id?: unknown; interrupt_id?: unknown }[]) {
      const id = interrupt.id ?? interrupt.interrupt_id;
      if (typeof id === "string") pending.set(id, interrupt);
    }
  return pending;
}

const objectOrUndefined = (value: unknown, name: string): JsonObject | undefined => {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || Array.isArray(value)) throw invalid(`${name} must be an object`);
  return value as JsonObject;
};

/**
 * `run.start`: a run of `assistant_id` on the thread (created if it does not exist). On a thread with
 * pending interrupts, input resumes them (spec §4a, as the reference 1.5.1 does). `forkFrom` arrives as
 * `config.configurable.checkpoint_id`. The multitask strategy (`multitask_strategy`, or the camelCase the
 * SDK also sends) applies as on REST runs; default `enqueue`.
 */
async function runStart(params: Record<string, unknown>, { deps, c, threadId }: CommandContext) {
  const assistantId = params.assistant_id;
  if (typeof assistantId !== "string" || assistantId === "")
    throw invalid("run.start needs assistant_id (a graph id or an assistant id)");
  const strategy = params.multitask_strategy ?? params.multitaskStrategy ?? "enqueue";
  if (typeof strategy !== "string" || !(MULTITASK_STRATEGIES as readonly string[]).includes(strategy))
    throw invalid(`multitask_strategy must be one of ${MULTITASK_STRATEGIES.join(", ")}`);
  const config = objectOrUndefined(params.config, "config");
  const metadata = objectOrUndefined(params.metadata, "metadata");
  const input = params.input;
  const thread = await deps.storage.threads.get(orgOf(c), threadId);
  const pending = input != null ? pendingInterrupts(thread) : new Map();
  const resumes = pending.size > 0;
  const request: RunRequest = {
    assistant_id: assistantId,
    ...(resumes ? { command: { resume: input } } : { input: input ?? null }),
    config: config ?? null,
    metadata: metadata ?? null,
    multitask_strategy: strategy as MultitaskStrategy,
    if_not_exists: "create",
    stream_mode: ["values"],
  };
  const run = await admitRun(deps, c, threadId, request, {
    [THREAD_EVENTS_KWARG]: true,
    ...(resumes && { [ANSWERED_INTERRUPTS_KWARG]: [...pending.keys()] }),
  });
  return { run_id: run.run_id };
}

interface Answer {
  interrupt_id: string;
  response: unknown;
}

/** `input.respond`: one answer or several (`responses`), resumed in one run; ids must be pending. */
async function inputRespond(params: Record<string, unknown>, { deps, c, threadId }: CommandContext) {
  const answers: Answer[] = [];
  const read = (entry: unknown, where: string) => {
    const e = entry as Record<string, unknown> | null;
    if (e === null || typeof e !== "object" || Array.isArray(e)) throw invalid(`${where} must be an object`);
    if (typeof e.interrupt_id !== "string" || e.interrupt_id === "")
      throw invalid(`${where}.interrupt_id must be a non-empty string`);
    answers.push({ interrupt_id: e.interrupt_id, response: e.response });
  };
  if (params.responses !== undefined) {
    if (!Array.isArray(params.responses) || params.responses.length === 0)
      throw invalid("responses must be a non-empty list");
    params.responses.forEach((r, i) => {
      read(r, `responses[${i}]`);
    });
  } else read(params, "params");
  const org = orgOf(c);
  // Read as the caller may (a thread it cannot see answers as absent) before telling what is pending.
  const thread = await deps.storage.threads.get(org, threadId);
  if (thread) await visibleThread(deps, c, threadId, "read");
  const pending = pendingInterrupts(thread);
  for (const { interrupt_id } of answers)
    if (!pending.has(interrupt_id))
      throw new CommandError(
        "no_such_interrupt",
        `Interrupt ${interrupt_id} is not pending on thread ${threadId}`,
      );
  // Pending interrupts mean the thread exists and was run: the run before names the assistant.
  const [last] = await deps.storage.runs.list(org, threadId, { limit: 1, offset: 0 });
  const assistantId = (thread!.metadata.assistant_id as string | undefined) ?? last?.assistant_id;
  if (!assistantId) throw new CommandError("no_such_run", `Thread ${threadId} has no run to resume`);
  const request: RunRequest = {
    assistant_id: assistantId,
    command: {
      resume: Object.fromEntries(answers.map((a) => [a.interrupt_id, a.response])),
      ...(params.update !== undefined && { update: params.update }),
      ...(params.goto !== undefined && { goto: params.goto }),
    },
    config: objectOrUndefined(params.config, "config") ?? null,
    metadata: objectOrUndefined(params.metadata, "metadata") ?? null,
    multitask_strategy: "enqueue",
    stream_mode: ["values"],
  };
  await admitRun(deps, c, threadId, request, {
    [THREAD_EVENTS_KWARG]: true,
    [ANSWERED_INTERRUPTS_KWARG]: answers.map((a) => a.interrupt_id),
  });
  return {};
}

/** `state.get`: the thread's current values (only `keys`, if given) and checkpoint. */
async function stateGet(params: Record<string, unknown>, { deps, c, threadId }: CommandContext) {
  const keys = params.keys;
  if (keys !== undefined && (!Array.isArray(keys) || keys.some((k) => typeof k !== "string")))
    throw invalid("keys must be a list of strings");
  const thread = await visibleThread(deps, c, threadId, "read");
  const state = (await deps.state.get(orgOf(c), thread, {}, false)) as {
    values: unknown;
    checkpoint: { checkpoint_id?: string; checkpoint_ns?: string } | null;
  };
  let values = (state.values ?? {}) as Record<string, unknown>;
  if (Array.isArray(keys))
    values = Object.fromEntries(Object.entries(values).filter(([k]) => keys.includes(k)));
  return {
    values,
    ...(state.checkpoint?.checkpoint_id && {
      checkpoint: { id: state.checkpoint.checkpoint_id, ns: state.checkpoint.checkpoint_ns ?? "" },
    }),
  };
}

/**
 * Over HTTP a subscription is the `POST …/stream/events` connection itself (spec §6: connection-scoped,
 * no server state), so `subscription.subscribe` checks its filter and says so; the WebSocket replaces
 * these two entries with its own.
 */
async function subscribeOverHttp(params: Record<string, unknown>): Promise<object> {
  const channels = params.channels;
  if (!Array.isArray(channels) || channels.length === 0) throw invalid("channels must be a non-empty list");
  for (const ch of channels)
    if (typeof ch !== "string" || !isChannel(ch)) throw invalid(`unsupported channel ${JSON.stringify(ch)}`);
  throw new CommandError(
    "not_supported",
    "Over HTTP a subscription is a POST /threads/{thread_id}/stream/events request with this filter (closing it unsubscribes); subscription commands are the WebSocket's",
  );
}

async function unsubscribeOverHttp(params: Record<string, unknown>): Promise<object> {
  if (typeof params.subscription_id !== "string") throw invalid("subscription_id must be a string");
  throw new CommandError("no_such_subscription", `No subscription ${params.subscription_id} over HTTP`);
}
