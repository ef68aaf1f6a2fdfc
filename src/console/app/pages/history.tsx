/**
 * Time travel: a thread's checkpoints as a timeline; one checkpoint's state inspected, edited
 * (`update_state`, written as a new checkpoint from it) or forked (a run started from it).
 */
import type { Checkpoint, ThreadState } from "@langchain/langgraph-sdk";
import { useState } from "react";
import { useConsole } from "../context.js";
import { Empty, ErrorNote, Json, parseJson, Section, shortId, useAction, useLoad, when } from "../util.js";

/**
 * A checkpoint in one line: its step and source, the nodes it wrote (metadata `writes`, which older
 * LangGraph versions record) or the next ones, and for a messages state the last message.
 */
function describeCheckpoint(state: ThreadState) {
  const meta = (state.metadata ?? {}) as { step?: number; source?: string; writes?: Record<string, unknown> };
  const writes = meta.writes ? Object.keys(meta.writes).join(", ") : "";
  const messages = (state.values as { messages?: { type?: string; content?: unknown }[] } | null)?.messages;
  const last = Array.isArray(messages) ? messages.at(-1) : undefined;
  const text = typeof last?.content === "string" ? last.content : last ? JSON.stringify(last.content) : "";
  const preview = last
    ? `${last.type ?? "message"}: ${text.length > 60 ? `${text.slice(0, 57)}…` : text}`
    : "";
  return { step: meta.step, source: meta.source, writes, preview };
}

export function HistoryTimeline(props: {
  threadId: string;
  version: number;
  onFork: (checkpoint: Checkpoint, input: unknown) => Promise<void>;
}) {
  const { client } = useConsole();
  const history = useLoad(
    () => client.threads.getHistory(props.threadId, { limit: 100 }),
    [client, props.threadId, props.version],
  );
  const [selected, setSelected] = useState<string | null>(null);
  const states = history.data ?? [];
  const current = states.find((s) => s.checkpoint.checkpoint_id === selected) ?? states[0];

  return (
    <div className="split">
      <Section
        title="Checkpoints"
        actions={
          <button type="button" onClick={history.reload}>
            Reload
          </button>
        }
      >
        <ErrorNote error={history.error} />
        {states.length === 0 && !history.loading && <Empty>No checkpoints yet.</Empty>}
        <ol className="timeline" data-testid="timeline">
          {states.map((s) => {
            const d = describeCheckpoint(s);
            const id = s.checkpoint.checkpoint_id!;
            return (
              <li key={id} className={current === s ? "selected" : ""}>
                <button
                  type="button"
                  className="link"
                  data-testid="checkpoint"
                  onClick={() => setSelected(id)}
                >
                  <span className="step">step {d.step ?? "?"}</span> <span className="muted">{d.source}</span>{" "}
                  {d.writes && <span>wrote {d.writes}</span>}
                  {s.next.length > 0 && <span className="muted"> → {s.next.join(", ")}</span>}
                  {d.preview && <span className="preview"> {d.preview}</span>}
                  <span className="muted small">
                    {" "}
                    {when(s.created_at)} · {shortId(id, true)}
                  </span>
                </button>
              </li>
            );
          })}
        </ol>
      </Section>
      {current && (
        <CheckpointDetail
          key={current.checkpoint.checkpoint_id}
          threadId={props.threadId}
          state={current}
          onForked={history.reload}
          onFork={props.onFork}
        />
      )}
    </div>
  );
}

function CheckpointDetail(props: {
  threadId: string;
  state: ThreadState;
  onForked: () => void;
  onFork: (checkpoint: Checkpoint, input: unknown) => Promise<void>;
}) {
  const { client } = useConsole();
  const { state } = props;
  const [editing, setEditing] = useState(false);
  const [valuesText, setValuesText] = useState(() => JSON.stringify(state.values, null, 2));
  const [asNode, setAsNode] = useState("");
  const [forkText, setForkText] = useState("");
  const [saved, setSaved] = useState<string | null>(null);
  const action = useAction();
  const isMessages = Array.isArray((state.values as Record<string, unknown> | null)?.messages);

  const save = () =>
    action.run(async () => {
      const values = parseJson(valuesText, "Values");
      const result = await client.threads.updateState(props.threadId, {
        values,
        checkpoint: state.checkpoint,
        asNode: asNode || undefined,
      });
      // The servers answer {checkpoint: {...}}; the SDK's type says {configurable: {...}}.
      const written =
        (result as { checkpoint?: { checkpoint_id?: string } }).checkpoint ?? result.configurable;
      setSaved(String(written?.checkpoint_id ?? "?"));
      setEditing(false);
      props.onForked();
    });

  const fork = () =>
    action.run(async () => {
      let input: unknown = null;
      if (forkText.trim())
        input = isMessages
          ? { messages: [{ type: "human", content: forkText }] }
          : parseJson(forkText, "Input");
      await props.onFork(state.checkpoint, input);
    });

  return (
    <Section title={`Checkpoint ${shortId(state.checkpoint.checkpoint_id, true)}`}>
      <dl className="facts">
        <dt>Checkpoint</dt>
        <dd className="mono">{state.checkpoint.checkpoint_id}</dd>
        <dt>Parent</dt>
        <dd className="mono">{state.parent_checkpoint?.checkpoint_id ?? "—"}</dd>
        <dt>Next</dt>
        <dd>{state.next.join(", ") || "— (done)"}</dd>
        <dt>Created</dt>
        <dd>{when(state.created_at)}</dd>
      </dl>
      {editing ? (
        <div className="stack">
          <label>
            Values (JSON): written with update_state from this checkpoint, as a new one
            <textarea
              aria-label="State values"
              rows={12}
              className="mono"
              value={valuesText}
              onChange={(e) => setValuesText(e.target.value)}
            />
          </label>
          <label>
            As node (optional)
            <input aria-label="As node" value={asNode} onChange={(e) => setAsNode(e.target.value)} />
          </label>
          <div className="row">
            <button type="button" onClick={save} disabled={action.busy}>
              Save as new checkpoint
            </button>
            <button type="button" className="secondary" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </div>
      ) : (
        <>
          <h3>Values</h3>
          <Json value={state.values} />
          <button type="button" onClick={() => setEditing(true)}>
            Edit state
          </button>
        </>
      )}
      {saved && <p className="ok">Saved as checkpoint {saved}.</p>}
      <h3>Fork a run from here</h3>
      <div className="stack">
        <label>
          {isMessages ? "Message (empty: run the next nodes again)" : "Input (JSON; empty: none)"}
          <textarea
            aria-label="Fork input"
            rows={2}
            value={forkText}
            onChange={(e) => setForkText(e.target.value)}
          />
        </label>
        <button type="button" onClick={fork} disabled={action.busy}>
          Fork from this checkpoint
        </button>
      </div>
      <ErrorNote error={action.error} />
      {state.tasks.length > 0 && (
        <>
          <h3>Tasks</h3>
          <Json value={state.tasks} />
        </>
      )}
      <details>
        <summary>Metadata</summary>
        <Json value={state.metadata} />
      </details>
    </Section>
  );
}
