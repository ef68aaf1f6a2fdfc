import { type Context, Hono } from "hono";
import type { AuthAction } from "../auth/custom.js";
import { notFound } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import { lastEventId, sseResponse } from "../http/sse.js";
import { body, params, query, queryWithLists } from "../http/validation.js";
import type { RunRequest } from "../runtime/runs/service.js";
import { eventsOfModes } from "../runtime/runs/stream-modes.js";
import { matchesFilter } from "../storage/filter.js";
import type { JsonObject, Run, RunWithError } from "../storage/ports.js";
import type { RunStatus } from "../storage/statuses.js";
import { accessOf, assertUsableAssistant, authorize, visibleThread } from "./authz.js";
import { type AgentDeps, pick } from "./context.js";
import * as S from "./schemas.js";

type C = Context<AppEnv>;

/**
 * A searched run as its caller may see it: a failure's stack trace goes to API-key callers (the people
 * who operate the organization's graphs), never to the users of a custom auth handler (a project's end
 * users), who get its type and message as the official API shows them.
 */
const withErrorFor = (deps: Pick<AgentDeps, "auth">, run: RunWithError): RunWithError => {
  if (!deps.auth || !run.error?.stack) return run;
  const { stack: _, ...error } = run.error;
  return { ...run, error };
};

const runPath = (run: Run, stateless: boolean) =>
  stateless ? `/runs/${run.run_id}` : `/threads/${run.thread_id}/runs/${run.run_id}`;

/**
 * Admits a run as this user may (`threads:create_run`): the thread, when it exists, must be visible
 * to them, the handler may stamp the run's metadata (a thread the run creates gets it too), and the
 * user goes into the run's config for the graph. `kwargs`: more of the run's kwargs (the protocol's).
 */
export async function admitRun(
  deps: Pick<AgentDeps, "auth" | "runs" | "storage">,
  c: C,
  threadId: string | null,
  b: RunRequest,
  kwargs?: JsonObject,
): Promise<Run> {
  await assertUsableAssistant(deps, orgOf(c), accessOf(deps, c), b.assistant_id);
  const { filter, value } = await authorize(deps, c, "threads", "create_run", {
    thread_id: threadId,
    assistant_id: b.assistant_id,
    status: "pending",
    metadata: b.metadata ?? {},
    kwargs: { input: b.input, command: b.command, config: b.config, context: b.context },
    multitask_strategy: b.multitask_strategy ?? null,
    if_not_exists: b.if_not_exists ?? null,
    after_seconds: b.after_seconds ?? null,
  });
  if (threadId !== null && filter) {
    const thread = await deps.storage.threads.get(orgOf(c), threadId);
    if (thread && !matchesFilter(thread.metadata, filter)) throw notFound(`Thread ${threadId} not found`);
  }
  return deps.runs.create(
    orgOf(c),
    threadId,
    { ...b, metadata: value.metadata },
    c.req.raw.headers,
    c.get("auth"),
    kwargs,
  );
}

export function runRoutes(deps: AgentDeps) {
  const { runs, storage } = deps;

  const admit = (c: C, threadId: string | null, b: RunRequest) => admitRun(deps, c, threadId, b);

  /** Creates a run from the request body; `threadId` null = stateless. */
  const create = async (c: C, threadId: string | null) => {
    const b = (await body(c, S.RunCreate)) as RunRequest & { on_disconnect?: string | null };
    const run = await admit(c, threadId, b);
    c.header("Content-Location", runPath(run, threadId === null));
    return { run, cancelOnDisconnect: b.on_disconnect === "cancel" };
  };

  /** The thread of a thread-scoped run route, if this user may `action` it (404 otherwise). */
  const thread = (c: C, threadId: string, action: AuthAction, value: Record<string, unknown> = {}) =>
    visibleThread(deps, c, threadId, action, value);

  /** A run found by its id alone (stateless routes): its thread must be readable by this user. */
  const runById = async (c: C, runId: string, action: AuthAction) => {
    const run = await runs.get(orgOf(c), null, runId);
    if (deps.auth) {
      const { filter } = await authorize(deps, c, "threads", action, {
        thread_id: run.thread_id,
        run_id: runId,
      });
      const t = filter ? await storage.threads.get(orgOf(c), run.thread_id) : null;
      if (filter && (!t || !matchesFilter(t.metadata, filter))) throw notFound(`Run ${runId} not found`);
    }
    return run;
  };

  /** SSE of a run's events from `after`; a stream that can be resumed carries ids and a Location. */
  const stream = (
    c: C,
    run: Run,
    stateless: boolean,
    after: number,
    cancelOnDisconnect: boolean,
    wanted: (event: string) => boolean = () => true,
  ) => {
    const org = orgOf(c);
    const joinPath = `/threads/${run.thread_id}/runs/${run.run_id}/stream`;
    return sseResponse(
      (signal) => ({
        async *[Symbol.asyncIterator]() {
          for await (const e of await runs.streamRun(org, run, after, signal)) if (wanted(e.event)) yield e;
        },
      }),
      {
        withIds: !stateless,
        headers: {
          ...(stateless ? {} : { Location: joinPath }),
          "Content-Location": runPath(run, stateless),
        },
        onDisconnect: cancelOnDisconnect
          ? () => void runs.cancel(org, null, run.run_id, "interrupt").catch(() => {})
          : undefined,
      },
    );
  };

  /** Waits for the run; the client going away cancels it when asked to. */
  const wait = async (c: C, run: Run, cancelOnDisconnect: boolean) => {
    const signal = c.req.raw.signal;
    const org = orgOf(c);
    if (cancelOnDisconnect) {
      signal.addEventListener(
        "abort",
        () => void runs.cancel(org, null, run.run_id, "interrupt").catch(() => {}),
        {
          once: true,
        },
      );
    }
    return c.json((await runs.joinRun(org, run, signal)) as any);
  };

  return (
    new Hono<AppEnv>()
      // ---- runs on a thread ------------------------------------------------------------------
      .post("/threads/:thread_id/runs", async (c) => {
        const { thread_id } = params(c, S.ThreadPath);
        return c.json((await create(c, thread_id)).run);
      })
      .post("/threads/:thread_id/runs/stream", async (c) => {
        const { thread_id } = params(c, S.ThreadPath);
        const { run, cancelOnDisconnect } = await create(c, thread_id);
        return stream(c, run, false, -1, cancelOnDisconnect);
      })
      .post("/threads/:thread_id/runs/wait", async (c) => {
        const { thread_id } = params(c, S.ThreadPath);
        const { run, cancelOnDisconnect } = await create(c, thread_id);
        return wait(c, run, cancelOnDisconnect);
      })
      .get("/threads/:thread_id/runs", async (c) => {
        const { thread_id } = params(c, S.ThreadPath);
        const { select, ...q } = queryWithLists(c, S.RunListQuery);
        await thread(c, thread_id, "read");
        return c.json(pick(await storage.runs.list(orgOf(c), thread_id, q), select));
      })
      .get("/threads/:thread_id/runs/:run_id", async (c) => {
        const { thread_id, run_id } = params(c, S.RunPath);
        await thread(c, thread_id, "read", { run_id });
        return c.json(await runs.get(orgOf(c), thread_id, run_id));
      })
      .delete("/threads/:thread_id/runs/:run_id", async (c) => {
        const { thread_id, run_id } = params(c, S.RunPath);
        await thread(c, thread_id, "delete", { run_id });
        await runs.deleteRun(orgOf(c), thread_id, run_id);
        return c.body(null, 204);
      })
      .get("/threads/:thread_id/runs/:run_id/join", async (c) => {
        const { thread_id, run_id } = params(c, S.RunPath);
        await thread(c, thread_id, "read", { run_id });
        return c.json((await runs.join(orgOf(c), thread_id, run_id, c.req.raw.signal)) as any);
      })
      .get("/threads/:thread_id/runs/:run_id/stream", async (c) => {
        const { thread_id, run_id } = params(c, S.RunPath);
        const { cancel_on_disconnect, stream_mode } = queryWithLists(c, S.JoinStreamQuery);
        // Leaving may cancel the run: that takes what cancelling takes.
        await thread(c, thread_id, cancel_on_disconnect ? "update" : "read", { run_id });
        const run = await runs.get(orgOf(c), thread_id, run_id);
        const after = lastEventId(c.req.header("last-event-id"));
        return stream(c, run, false, after, cancel_on_disconnect, eventsOfModes(stream_mode));
      })
      .post("/threads/:thread_id/runs/:run_id/cancel", async (c) => {
        const { thread_id, run_id } = params(c, S.RunPath);
        const { wait: shouldWait, action } = query(c, S.CancelQuery);
        await thread(c, thread_id, "update", { run_id, action });
        const org = orgOf(c);
        await runs.cancel(org, thread_id, run_id, action);
        if (!shouldWait) return c.body(null, 202);
        await runs.join(org, thread_id, run_id, c.req.raw.signal).catch(() => undefined);
        return c.body(null, 204);
      })
      // ---- stateless runs --------------------------------------------------------------------
      .post("/runs", async (c) => c.json((await create(c, null)).run))
      .post("/runs/stream", async (c) => {
        const { run, cancelOnDisconnect } = await create(c, null);
        return stream(c, run, true, -1, cancelOnDisconnect);
      })
      .post("/runs/wait", async (c) => {
        const { run, cancelOnDisconnect } = await create(c, null);
        return wait(c, run, cancelOnDisconnect);
      })
      .post("/runs/batch", async (c) => {
        const items = await body(c, S.RunBatch);
        const created: Run[] = [];
        for (const item of items) created.push(await admit(c, null, item as RunRequest));
        return c.json(created);
      })
      // A Hangar extension: the official API lists runs thread by thread only.
      .post("/runs/search", async (c) => {
        const b = await body(c, S.RunSearch);
        const { filter } = await authorize(deps, c, "threads", "search", {
          metadata: b.metadata ?? {},
          status: b.status ?? null,
          thread_id: b.thread_id ?? null,
          assistant_id: b.assistant_id ?? null,
          limit: b.limit,
          offset: b.offset,
        });
        const { items, total } = await storage.runs.search(orgOf(c), {
          status: b.status == null ? undefined : ([] as RunStatus[]).concat(b.status),
          assistant_id: b.assistant_id ?? undefined,
          thread_id: b.thread_id ?? undefined,
          metadata: b.metadata ?? undefined,
          auth: filter,
          limit: b.limit,
          offset: b.offset,
        });
        c.header("X-Pagination-Total", String(total));
        if (b.offset + items.length < total) c.header("X-Pagination-Next", String(b.offset + items.length));
        return c.json(items.map((run) => withErrorFor(deps, run)));
      })
      .post("/runs/cancel", async (c) => {
        const b = await body(c, S.BulkCancel);
        const { action } = query(c, S.BulkCancelQuery);
        const org = orgOf(c);
        const ids = new Set(b.run_ids ?? []);
        if (b.thread_id) await thread(c, b.thread_id, "update", { action });
        if (b.thread_id) {
          const wanted = b.status && b.status !== "all" ? [b.status] : (["pending", "running"] as const);
          for (const status of wanted) {
            for (const run of await storage.runs.list(org, b.thread_id, { limit: 1000, offset: 0, status }))
              ids.add(run.run_id);
          }
        }
        const cancel = async (id: string) => {
          await runById(c, id, "update");
          await runs.cancel(org, null, id, action);
        };
        await Promise.all([...ids].map((id) => cancel(id).catch(() => undefined)));
        return c.body(null, 204);
      })
      .get("/runs/:run_id/stream", async (c) => {
        const { run_id } = params(c, S.StatelessRunPath);
        const run = await runById(c, run_id, "read");
        return stream(c, run, true, lastEventId(c.req.header("last-event-id")), false);
      })
  );
}
