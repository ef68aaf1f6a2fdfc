import { type Context, Hono } from "hono";
import { notFound } from "../errors.js";
import { lastEventId, sseResponse } from "../http/sse.js";
import { body, params, query } from "../http/validation.js";
import type { RunRequest } from "../runtime/runs.js";
import type { Run } from "../storage/ports.js";
import { type AgentDeps, type AppEnv, orgOf } from "./context.js";
import * as S from "./schemas.js";

type C = Context<AppEnv>;

const runPath = (run: Run, stateless: boolean) =>
  stateless ? `/runs/${run.run_id}` : `/threads/${run.thread_id}/runs/${run.run_id}`;

export function runRoutes({ runs, storage }: AgentDeps) {
  /** Creates a run from the request body; `threadId` null = stateless. */
  const create = async (c: C, threadId: string | null) => {
    const b = (await body(c, S.RunCreate)) as RunRequest & { on_disconnect?: string | null };
    const run = await runs.create(orgOf(c), threadId, b, c.req.raw.headers);
    c.header("Content-Location", runPath(run, threadId === null));
    return { run, cancelOnDisconnect: b.on_disconnect === "cancel" };
  };

  /** SSE of a run's events from `after`; a stream that can be resumed carries ids and a Location. */
  const stream = (c: C, run: Run, stateless: boolean, after: number, cancelOnDisconnect: boolean) => {
    const org = orgOf(c);
    const joinPath = `/threads/${run.thread_id}/runs/${run.run_id}/stream`;
    return sseResponse(
      (signal) => ({
        async *[Symbol.asyncIterator]() {
          yield* await runs.streamRun(org, run, after, signal);
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
        const q = query(c, S.RunListQuery);
        if (!(await storage.threads.get(orgOf(c), thread_id)))
          throw notFound(`Thread ${thread_id} not found`);
        return c.json(await storage.runs.list(orgOf(c), thread_id, q));
      })
      .get("/threads/:thread_id/runs/:run_id", async (c) => {
        const { thread_id, run_id } = params(c, S.RunPath);
        return c.json(await runs.get(orgOf(c), thread_id, run_id));
      })
      .delete("/threads/:thread_id/runs/:run_id", async (c) => {
        const { thread_id, run_id } = params(c, S.RunPath);
        await runs.deleteRun(orgOf(c), thread_id, run_id);
        return c.body(null, 204);
      })
      .get("/threads/:thread_id/runs/:run_id/join", async (c) => {
        const { thread_id, run_id } = params(c, S.RunPath);
        return c.json((await runs.join(orgOf(c), thread_id, run_id, c.req.raw.signal)) as any);
      })
      .get("/threads/:thread_id/runs/:run_id/stream", async (c) => {
        const { thread_id, run_id } = params(c, S.RunPath);
        const { cancel_on_disconnect } = query(c, S.JoinStreamQuery);
        const run = await runs.get(orgOf(c), thread_id, run_id);
        return stream(c, run, false, lastEventId(c.req.header("last-event-id")), cancel_on_disconnect);
      })
      .post("/threads/:thread_id/runs/:run_id/cancel", async (c) => {
        const { thread_id, run_id } = params(c, S.RunPath);
        const { wait: shouldWait, action } = query(c, S.CancelQuery);
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
        const org = orgOf(c);
        const created: Run[] = [];
        for (const item of items)
          created.push(await runs.create(org, null, item as RunRequest, c.req.raw.headers));
        return c.json(created);
      })
      .post("/runs/cancel", async (c) => {
        const b = await body(c, S.BulkCancel);
        const { action } = query(c, S.BulkCancelQuery);
        const org = orgOf(c);
        const ids = new Set(b.run_ids ?? []);
        if (b.thread_id) {
          const wanted = b.status && b.status !== "all" ? [b.status] : (["pending", "running"] as const);
          for (const status of wanted) {
            for (const run of await storage.runs.list(org, b.thread_id, { limit: 1000, offset: 0, status }))
              ids.add(run.run_id);
          }
        }
        await Promise.all([...ids].map((id) => runs.cancel(org, null, id, action).catch(() => undefined)));
        return c.body(null, 204);
      })
      .get("/runs/:run_id/stream", async (c) => {
        const { run_id } = params(c, S.StatelessRunPath);
        const run = await runs.get(orgOf(c), null, run_id);
        return stream(c, run, true, lastEventId(c.req.header("last-event-id")), false);
      })
  );
}
