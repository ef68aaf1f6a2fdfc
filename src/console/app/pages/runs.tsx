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

export function RunsTable({ runs, onChanged }: { runs: Run[]; onChanged: () => void }) {
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
          <RunRow key={run.run_id} run={run} onChanged={onChanged} />
        ))}
      </tbody>
    </table>
  );
}

function RunRow({ run, onChanged }: { run: Run; onChanged: () => void }) {
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
        <td className="mono">{shortId(run.assistant_id)}</td>
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
      {runs.data && <RunsTable runs={runs.data} onChanged={runs.reload} />}
    </Section>
  );
}
