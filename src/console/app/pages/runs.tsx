/** Runs: a table with their outcome (joined on demand: output or the error and its trace) and cancel. */
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

/** Assistants' names by id, to show which one a run used (the 100 most recently updated). */
export function useAssistantNames(): Map<string, string> {
  const { client } = useConsole();
  const assistants = useLoad(() => client.assistants.search({ limit: 100, sortBy: "updated_at" }), [client]);
  return new Map((assistants.data ?? []).map((a) => [a.assistant_id, a.name]));
}

export function RunsTable(props: { runs: Run[]; names: Map<string, string>; onChanged: () => void }) {
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

function RunRow({ run, assistant, onChanged }: { run: Run; assistant?: string; onChanged: () => void }) {
  const { client } = useConsole();
  const [outcome, setOutcome] = useState<unknown>(undefined);
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
      {(outcome !== undefined || action.error != null) && (
        <tr className="detail">
          <td colSpan={8}>
            <ErrorNote error={action.error} />
            {outcome !== undefined && <Json value={outcome} />}
          </td>
        </tr>
      )}
    </>
  );
}

export function ThreadRuns({ threadId }: { threadId: string }) {
  const { client } = useConsole();
  const runs = useLoad(() => client.runs.list(threadId, { limit: 100 }), [client, threadId]);
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
