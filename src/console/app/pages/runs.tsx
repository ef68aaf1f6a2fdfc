/**
 * Runs: a table with their outcome (joined on demand: the output; a failed run's error and its stack
 * trace come with the run from `POST /runs/search`) and cancel.
 */
import type { Run } from "@langchain/langgraph-sdk";
import { useState } from "react";
import { useConsole } from "../context.js";
import { href } from "../router.js";
import {
  Empty,
  ErrorNote,
  Json,
  Section,
  Status,
  shortId,
  useAction,
  useInterval,
  useLoad,
  when,
} from "../util.js";

const ACTIVE = new Set(["pending", "running"]);

/** How a run failed, as `POST /runs/search` gives it: the trace for API-key callers only. */
export interface RunError {
  error: string;
  message: string;
  stack?: string;
}

/** A run found by `POST /runs/search` (a Hangar extension): the run and how it failed (null: it did not). */
export type SearchedRun = Run & { error?: RunError | null };

type RunStatus = Run["status"];

export interface RunSearch {
  status?: RunStatus | RunStatus[];
  thread_id?: string;
  assistant_id?: string;
  metadata?: Record<string, unknown>;
  limit?: number;
  offset?: number;
}

/** `POST /runs/search`: the runs of every thread (or those `query` names), newest first. */
export function useRunSearch() {
  const { api } = useConsole();
  return (query: RunSearch) => api<SearchedRun[]>("POST", "/runs/search", query);
}

/** Assistants' names by id, to show which one a run used (the 100 most recently updated). */
export function useAssistantNames(): Map<string, string> {
  const { client } = useConsole();
  const assistants = useLoad(() => client.assistants.search({ limit: 100, sortBy: "updated_at" }), [client]);
  return new Map((assistants.data ?? []).map((a) => [a.assistant_id, a.name]));
}

export function RunsTable(props: { runs: SearchedRun[]; names: Map<string, string>; onChanged: () => void }) {
  const { runs, names, onChanged } = props;
  if (runs.length === 0) return <Empty>No runs.</Empty>;
  return (
    <table className="table" data-testid="runs">
      <thead>
        <tr>
          <th>Run</th>
          <th>Status</th>
          <th>Thread</th>
          <th>Assistant</th>
          <th>Strategy</th>
          <th>Created</th>
          <th>Updated</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {runs.map((run) => (
          <RunRow key={run.run_id} run={run} assistant={names.get(run.assistant_id)} onChanged={onChanged} />
        ))}
      </tbody>
    </table>
  );
}

function RunRow(props: { run: SearchedRun; assistant?: string; onChanged: () => void }) {
  const { run, assistant, onChanged } = props;
  const { client } = useConsole();
  const [outcome, setOutcome] = useState<unknown>(undefined);
  const [showError, setShowError] = useState(false);
  const action = useAction();
  return (
    <>
      <tr>
        <td className="mono" title={run.run_id}>
          {shortId(run.run_id, true)}
        </td>
        <td>
          <Status value={run.status} />
        </td>
        <td>
          <a className="mono" href={href("threads", run.thread_id)}>
            {shortId(run.thread_id)}
          </a>
        </td>
        <td title={run.assistant_id}>
          <a href={href("assistants", run.assistant_id)}>{assistant ?? shortId(run.assistant_id)}</a>
        </td>
        <td>{run.multitask_strategy ?? "—"}</td>
        <td>{when(run.created_at)}</td>
        <td>{when(run.updated_at)}</td>
        <td className="actions">
          {ACTIVE.has(run.status) ? (
            <button
              type="button"
              className="danger"
              disabled={action.busy}
              onClick={() =>
                action.run(async () => {
                  await client.runs.cancel(run.thread_id, run.run_id);
                  onChanged();
                })
              }
            >
              Cancel
            </button>
          ) : run.error ? (
            <button type="button" className="secondary" onClick={() => setShowError(!showError)}>
              {showError ? "Hide" : "Error"}
            </button>
          ) : (
            <button
              type="button"
              className="secondary"
              disabled={action.busy}
              onClick={() =>
                outcome === undefined
                  ? action.run(async () => setOutcome(await client.runs.join(run.thread_id, run.run_id)))
                  : setOutcome(undefined)
              }
            >
              {outcome === undefined ? "Outcome" : "Hide"}
            </button>
          )}
        </td>
      </tr>
      {(outcome !== undefined || action.error != null || (showError && run.error)) && (
        <tr className="detail">
          <td colSpan={8}>
            <ErrorNote error={action.error} />
            {outcome !== undefined && <Json value={outcome} />}
            {showError && run.error && <RunErrorView error={run.error} />}
          </td>
        </tr>
      )}
    </>
  );
}

/** A failed run's error: type and message, then the stack trace when the server gave one. */
export function RunErrorView({ error }: { error: RunError }) {
  return (
    <div data-testid="run-error">
      <div className="error" role="note">
        <strong>{error.error}</strong>: {error.message}
      </div>
      {error.stack ? (
        <pre className="json trace" data-testid="trace">
          {error.stack}
        </pre>
      ) : (
        <p className="empty">No stack trace (the server gives traces to API-key callers only).</p>
      )}
    </div>
  );
}

export function ThreadRuns({ threadId }: { threadId: string }) {
  const search = useRunSearch();
  const { api } = useConsole();
  // The run search rather than the thread's run list: it gives failed runs' errors with their traces.
  const runs = useLoad(() => search({ thread_id: threadId, limit: 100 }), [api, threadId]);
  const names = useAssistantNames();
  useInterval(runs.reload, 2000);
  return (
    <Section
      title="Runs of this thread"
      actions={
        <button type="button" onClick={runs.reload}>
          Reload
        </button>
      }
    >
      <ErrorNote error={runs.error} />
      {runs.data && <RunsTable runs={runs.data} names={names} onChanged={runs.reload} />}
    </Section>
  );
}
