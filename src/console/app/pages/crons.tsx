/** Crons: schedule, next run, enabled (toggled here), and what they run. */
import type { Cron } from "@langchain/langgraph-sdk";
import { useEffect, useState } from "react";
import { useConsole } from "../context.js";
import { href } from "../router.js";
import {
  Empty,
  ErrorNote,
  Json,
  parseJson,
  Section,
  shortId,
  useAction,
  useInterval,
  useLoad,
  when,
} from "../util.js";

export function CronsPage() {
  const { client, api } = useConsole();
  const crons = useLoad(
    () => client.crons.search({ limit: 100, sortBy: "next_run_date", sortOrder: "asc" }),
    [client],
  );
  // Next run dates move as crons fire.
  useInterval(crons.reload, 5000);
  const assistants = useLoad(() => client.assistants.search({ limit: 100 }), [client]);
  const names = new Map(assistants.data?.map((a) => [a.assistant_id, a.name]));
  const action = useAction();
  const setEnabled = (cron: Cron, enabled: boolean) =>
    action.run(async () => {
      await api("PATCH", `/runs/crons/${cron.cron_id}`, { enabled });
      crons.reload();
    });

  return (
    <>
      <h1>Crons</h1>
      <ErrorNote error={crons.error ?? action.error} />
      <Section title="Crons">
        {crons.data?.length === 0 ? (
          <Empty>No crons.</Empty>
        ) : (
          <table className="table" data-testid="crons">
            <thead>
              <tr>
                <th>Cron</th>
                <th>Schedule</th>
                <th>Next run</th>
                <th>Assistant</th>
                <th>Thread</th>
                <th>Enabled</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {crons.data?.map((cron) => (
                <CronRow
                  key={cron.cron_id}
                  cron={cron}
                  assistantName={names.get(cron.assistant_id)}
                  onToggle={setEnabled}
                  onDeleted={crons.reload}
                />
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <CreateCron onCreated={crons.reload} />
    </>
  );
}

function CronRow(props: {
  cron: Cron;
  assistantName: string | undefined;
  onToggle: (cron: Cron, enabled: boolean) => void;
  onDeleted: () => void;
}) {
  const { client } = useConsole();
  const { cron } = props;
  const [open, setOpen] = useState(false);
  const deletion = useAction();
  const enabled = (cron as Cron & { enabled?: boolean }).enabled !== false;
  // What the checkbox shows: the click at once, the server's answer when the list is read again.
  const [shown, setShown] = useState(enabled);
  useEffect(() => setShown(enabled), [enabled]);
  return (
    <>
      <tr>
        <td className="mono">
          <button type="button" className="link" onClick={() => setOpen(!open)}>
            {shortId(cron.cron_id)}
          </button>
        </td>
        <td className="mono">{cron.schedule}</td>
        <td>{shown ? when(cron.next_run_date) : "— (disabled)"}</td>
        <td className={props.assistantName ? "" : "mono"} title={cron.assistant_id}>
          {props.assistantName ?? shortId(cron.assistant_id)}
        </td>
        <td>
          {cron.thread_id ? (
            <a href={href("threads", cron.thread_id)}>{shortId(cron.thread_id)}</a>
          ) : (
            "new each run"
          )}
        </td>
        <td>
          <label className="check">
            <input
              type="checkbox"
              aria-label="Enabled"
              checked={shown}
              onChange={(e) => {
                setShown(e.target.checked);
                props.onToggle(cron, e.target.checked);
              }}
            />
          </label>
        </td>
        <td className="actions">
          <button
            type="button"
            className="danger"
            disabled={deletion.busy}
            onClick={() => {
              if (!confirm("Delete this cron?")) return;
              void deletion.run(async () => {
                await client.crons.delete(cron.cron_id);
                props.onDeleted();
              });
            }}
          >
            Delete
          </button>
          <ErrorNote error={deletion.error} />
        </td>
      </tr>
      {open && (
        <tr className="detail">
          <td colSpan={7}>
            <Json value={cron} />
          </td>
        </tr>
      )}
    </>
  );
}

function CreateCron({ onCreated }: { onCreated: () => void }) {
  const { client } = useConsole();
  const [assistantId, setAssistantId] = useState("");
  const [schedule, setSchedule] = useState("*/5 * * * *");
  const [inputText, setInputText] = useState("");
  const action = useAction();
  return (
    <Section title="New cron">
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          action.run(async () => {
            await client.crons.create(assistantId, {
              schedule,
              input: parseJson(inputText, "Input") as Record<string, unknown> | undefined,
            });
            onCreated();
          });
        }}
      >
        <label>
          Assistant or graph
          <input
            aria-label="Cron assistant"
            value={assistantId}
            onChange={(e) => setAssistantId(e.target.value)}
            required
          />
        </label>
        <label>
          Schedule
          <input
            aria-label="Schedule"
            className="mono"
            value={schedule}
            onChange={(e) => setSchedule(e.target.value)}
          />
        </label>
        <label className="grow">
          Input (JSON)
          <input aria-label="Cron input" value={inputText} onChange={(e) => setInputText(e.target.value)} />
        </label>
        <button type="submit" disabled={action.busy}>
          Create
        </button>
      </form>
      <ErrorNote error={action.error} />
    </Section>
  );
}
