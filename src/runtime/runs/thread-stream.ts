/**
 * A thread's runs as one stream (`GET /threads/{id}/stream`, the SDKs' `threads.joinStream`): each run
 * of the thread in turn, as it comes, followed until the reader leaves. It reads what every reader
 * reads — storage for the thread's runs, each run's log (`RunService.streamRun`) — so it works wherever
 * runs execute (this process, executor threads, workers behind Redis).
 *
 * Modes, as the official server documents them: `run_modes` (default) every event of every run plus a
 * `run_done` after each; `lifecycle` only each run's start (its `metadata` event) and `run_done`;
 * `state_update` a `state_update` event whenever the thread's state changes (a run ends, a state update).
 *
 * Event ids are `<run_id>:<event id>` (`<run_id>:done` for `run_done`): a reader that reconnects with
 * `Last-Event-ID` resumes after it — the rest of that run, then the runs admitted after it. Without
 * one, the stream starts with the runs in flight; `-` replays every run the thread still lists (events
 * as long as the run logs keep them). `state_update` events carry no id, so they never move the resume
 * point.
 */
import type { OrgId, Run, Storage } from "../../storage/ports.js";
import type { RunService } from "./service.js";

export type ThreadStreamMode = "run_modes" | "lifecycle" | "state_update";

export interface ThreadStreamEvent {
  id?: string;
  event: string;
  data: string;
}

/** Where a reader resumes: new runs only, every run listed, or after an event of one run. */
export type ThreadStreamStart =
  | { from: "now" }
  | { from: "start" }
  | { from: "event"; runId: string; after: number | "done" };

const RESUME_ID = /^([0-9a-f-]{36}):(\d{1,15}|done)$/i;

/** A Last-Event-ID header as a start: `-` is the beginning; an id this stream did not give, now. */
export function threadStreamStart(header: string | undefined): ThreadStreamStart {
  const value = header?.trim();
  if (value === "-") return { from: "start" };
  const match = value ? RESUME_ID.exec(value) : null;
  if (!match) return { from: "now" };
  return {
    from: "event",
    runId: match[1]!.toLowerCase(),
    after: match[2] === "done" ? "done" : Number(match[2]),
  };
}

/** The most recent runs of a thread a stream considers (runs older than these are history). */
const RECENT_RUNS = 100;
const POLL_MS = 500;

const inFlight = (run: Run) => run.status === "pending" || run.status === "running";

export class ThreadStreams {
  constructor(
    private readonly runs: Pick<RunService, "streamRun">,
    private readonly storage: Pick<Storage, "runs" | "threads">,
    private readonly pollMs = POLL_MS,
  ) {}

  /** The thread's stream for `modes` from `start`, until `signal` aborts or the thread is deleted. */
  async *follow(
    org: OrgId,
    threadId: string,
    modes: ReadonlySet<ThreadStreamMode>,
    start: ThreadStreamStart,
    signal: AbortSignal,
  ): AsyncGenerator<ThreadStreamEvent> {
    const followRuns = modes.has("run_modes") || modes.has("lifecycle");
    const everyEvent = modes.has("run_modes");
    const recent = () => this.storage.runs.list(org, threadId, { limit: RECENT_RUNS, offset: 0 });
    /** Runs streamed already, or before the reader's start. */
    const done = new Set<string>();
    let resume: { runId: string; after: number } | undefined;
    const listed = await recent();
    if (start.from === "now") for (const run of listed) if (!inFlight(run)) done.add(run.run_id);
    if (start.from === "event") {
      const at = listed.findIndex((r) => r.run_id === start.runId);
      // Newest first: what follows the run in the list came before it.
      for (const run of at < 0 ? listed.filter((r) => !inFlight(r)) : listed.slice(at + 1))
        done.add(run.run_id);
      if (at >= 0 && start.after === "done") done.add(start.runId);
      else if (at >= 0) resume = { runId: start.runId, after: start.after as number };
    }
    let stateSeen = (await this.storage.threads.get(org, threadId))?.state_updated_at;

    while (!signal.aborted) {
      let streamed = false;
      if (followRuns) {
        const runs = (await recent()).reverse();
        const next = runs.find((r) => !done.has(r.run_id));
        // Forget runs that left the window: the set stays as small as the window.
        for (const id of done) if (!runs.some((r) => r.run_id === id)) done.delete(id);
        if (next) {
          const after = resume?.runId === next.run_id ? resume.after : -1;
          for await (const e of await this.runs.streamRun(org, next, after, signal)) {
            if (everyEvent || e.event === "metadata")
              yield { id: `${next.run_id}:${e.id}`, event: e.event, data: e.data };
          }
          if (signal.aborted) return;
          const settled = await this.storage.runs.get(org, threadId, next.run_id);
          done.add(next.run_id);
          streamed = true;
          yield {
            id: `${next.run_id}:done`,
            event: "run_done",
            data: JSON.stringify({
              run_id: next.run_id,
              thread_id: threadId,
              status: settled?.status ?? null,
            }),
          };
        }
      }
      const thread = await this.storage.threads.get(org, threadId);
      if (!thread) return; // deleted: nothing more will come
      if (modes.has("state_update") && thread.state_updated_at !== stateSeen) {
        stateSeen = thread.state_updated_at;
        yield {
          event: "state_update",
          data: JSON.stringify({
            thread_id: threadId,
            status: thread.status,
            state_updated_at: thread.state_updated_at,
            values: thread.values ?? null,
            interrupts: thread.interrupts,
          }),
        };
      }
      if (!streamed) await sleep(this.pollMs, signal);
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
