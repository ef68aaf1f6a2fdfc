/**
 * One thread: its conversation live (`useStream`), the composer that starts runs, the interrupt
 * waiting for an answer, the checkpoint history (inspect, edit, fork) and the thread's runs.
 *
 * The stream is keyed by the chosen stream modes: `useStream` asks for the modes whose callbacks it
 * was created with, so changing them creates it again (the thread's state is read back).
 */
import type { Checkpoint, StreamMode, ThreadState } from "@langchain/langgraph-sdk";
import { useStream } from "@langchain/langgraph-sdk/react";
import { useEffect, useRef, useState } from "react";
import { useConsole } from "../context.js";
import { href, navigate } from "../router.js";
import {
  Empty,
  ErrorNote,
  Json,
  parseJson,
  Section,
  Status,
  shortId,
  useAction,
  useInterval,
  useLoad,
  when,
} from "../util.js";
import { Conversation } from "./messages.js";
import { ThreadRuns } from "./runs.js";

/** Modes the composer offers beyond `values` and `messages-tuple`, which every run streams. */
const EXTRA_MODES: StreamMode[] = ["updates", "custom", "tasks", "checkpoints", "debug", "events"];
/** What the server does with a run for a thread that has one already (double texting). */
type MultitaskStrategy = "enqueue" | "reject" | "interrupt" | "rollback";
const STRATEGIES: MultitaskStrategy[] = ["enqueue", "reject", "interrupt", "rollback"];

type Tab = "chat" | "history" | "runs" | "state";

export function ThreadPage({ threadId }: { threadId: string }) {
  const { client } = useConsole();
  // A new thread gets its id from its first run; the page stays mounted (the stream with it).
  const [tid, setTid] = useState<string | null>(threadId === "new" ? null : threadId);
  const [modes, setModes] = useState<StreamMode[]>([]);
  const thread = useLoad(() => (tid ? client.threads.get(tid) : Promise.resolve(null)), [client, tid]);
  useInterval(thread.reload, 3000);

  // The conversation is shown once the thread is known to be readable (made here, or read back), and
  // stays mounted from then on: unmounting it would cancel the run it streams.
  const [readable, setReadable] = useState(threadId === "new");
  if (!readable && thread.data) setReadable(true);

  const onThreadId = (id: string) => {
    setReadable(true);
    setTid(id);
    // replaceState fires no hashchange: the route stays, a reload opens this thread.
    history.replaceState(null, "", href("threads", id));
  };

  return (
    <>
      <div className="page-head">
        <h1>
          <a href={href("threads")}>Threads</a> / <span className="mono">{tid ?? "new thread"}</span>
        </h1>
        {thread.data && <Status value={thread.data.status} />}
        {tid && (
          <button
            type="button"
            className="danger"
            onClick={async () => {
              if (!confirm("Delete this thread, its runs and checkpoints?")) return;
              await client.threads.delete(tid);
              navigate("threads");
            }}
          >
            Delete
          </button>
        )}
      </div>
      <ErrorNote error={thread.error} />
      {thread.data && Object.keys(thread.data.metadata ?? {}).length > 0 && (
        <p className="muted mono small">metadata {JSON.stringify(thread.data.metadata)}</p>
      )}
      {/* Not a thread this key cannot read: useStream's own read of it would reject unhandled. */}
      {readable && (
        <ThreadView
          key={modes.join(",")}
          threadId={tid}
          onThreadId={onThreadId}
          defaultAssistant={String(
            thread.data?.metadata?.assistant_id ?? thread.data?.metadata?.graph_id ?? "",
          )}
          busy={thread.data?.status === "busy"}
          modes={modes}
          setModes={setModes}
          onChange={thread.reload}
        />
      )}
    </>
  );
}

interface StreamEventLine {
  mode: string;
  data: unknown;
}

function ThreadView(props: {
  threadId: string | null;
  onThreadId: (id: string) => void;
  defaultAssistant: string;
  /** The thread has a run in flight (as last read): one started elsewhere is joined, to show it live. */
  busy: boolean;
  modes: StreamMode[];
  setModes: (modes: StreamMode[]) => void;
  onChange: () => void;
}) {
  const { client } = useConsole();
  const { threadId, modes } = props;
  const assistants = useLoad(() => client.assistants.search({ limit: 100 }), [client]);
  const [assistantId, setAssistantId] = useState("");
  // The thread's own assistant (its metadata names it, or its graph), else the first one listed.
  const list = assistants.data ?? [];
  const fallback =
    list.find((a) => a.assistant_id === props.defaultAssistant) ??
    list.find((a) => a.graph_id === props.defaultAssistant && a.metadata?.created_by === "system") ??
    list[0];
  const chosen = assistantId || fallback?.assistant_id || props.defaultAssistant;
  const [tab, setTab] = useState<Tab>("chat");
  const [events, setEvents] = useState<StreamEventLine[]>([]);
  const [historyVersion, setHistoryVersion] = useState(0);

  const log = (mode: string) => (data: unknown) => setEvents((prev) => [...prev.slice(-199), { mode, data }]);
  const on = (mode: StreamMode) => modes.includes(mode);
  /** Runs this page streams already: its own, and those it joined. */
  const joined = useRef(new Set<string>());
  const stream = useStream<Record<string, unknown>>({
    client,
    assistantId: chosen,
    threadId,
    onThreadId: props.onThreadId,
    fetchStateHistory: false,
    onUpdateEvent: on("updates") ? log("updates") : undefined,
    onCustomEvent: on("custom") ? log("custom") : undefined,
    onTaskEvent: on("tasks") ? log("tasks") : undefined,
    onCheckpointEvent: on("checkpoints") ? log("checkpoints") : undefined,
    onDebugEvent: on("debug") ? log("debug") : undefined,
    onLangChainEvent: on("events") ? log("events") : undefined,
    onMetadataEvent: log("metadata"),
    onCreated: (run) => joined.current.add(run.run_id),
  });

  // When a run ends, the thread's status, history and runs changed.
  const wasLoading = useRef(false);
  useEffect(() => {
    if (wasLoading.current && !stream.isLoading) {
      setHistoryVersion((v) => v + 1);
      props.onChange();
    }
    wasLoading.current = stream.isLoading;
  });

  // A run started elsewhere (the API, a cron, another tab) streams here too: join it, once (the
  // hook's functions change identity as it renders).
  const streaming = stream.isLoading;
  const joinStream = useRef(stream.joinStream);
  joinStream.current = stream.joinStream;
  useEffect(() => {
    if (!threadId || !props.busy || streaming) return;
    client.runs.list(threadId, { limit: 20 }).then(
      (runs) => {
        // The one executing, else the next to (a run's stream can be joined before it starts).
        const active = runs.filter((r) => r.status === "running" || r.status === "pending");
        const run = active.find((r) => r.status === "running") ?? active.at(-1);
        if (!run || joined.current.has(run.run_id)) return;
        joined.current.add(run.run_id);
        joinStream.current(run.run_id).catch(() => {}); // its errors show as stream.error
      },
      () => {},
    );
  }, [client, threadId, props.busy, streaming]);

  const fork = async (checkpoint: Checkpoint, input: unknown) => {
    setTab("chat");
    // Not awaited: submit resolves when the run's stream ends; its errors show as stream.error.
    void stream.submit(input as Record<string, unknown> | null, {
      // A copy: the SDK deletes thread_id from the object it is given.
      checkpoint: { ...checkpoint },
      streamMode: modes,
    });
  };

  return (
    <>
      <div className="tabs" role="tablist">
        {(["chat", "history", "runs", "state"] as Tab[]).map((t) => (
          <button
            key={t}
            type="button"
            role="tab"
            aria-selected={tab === t}
            className={tab === t ? "tab active" : "tab"}
            disabled={!threadId && t !== "chat"}
            onClick={() => setTab(t)}
          >
            {t === "chat" ? "Chat" : t === "history" ? "History" : t === "runs" ? "Runs" : "State"}
          </button>
        ))}
      </div>
      {tab === "chat" && (
        <div className="chat-layout">
          <div className="chat-main">
            <Conversation messages={stream.messages} />
            {stream.isLoading && (
              <p className="live" data-testid="streaming">
                streaming…
              </p>
            )}
            <ErrorNote error={stream.error} />
            {stream.interrupts.length > 0 && !stream.isLoading && (
              <InterruptForm
                interrupts={stream.interrupts}
                onResume={async (resume) => {
                  void stream.submit(null, { command: { resume }, streamMode: modes });
                }}
              />
            )}
            <Composer
              assistants={assistants.data ?? []}
              assistantId={chosen}
              setAssistantId={setAssistantId}
              modes={modes}
              setModes={props.setModes}
              busy={stream.isLoading}
              onStop={() => stream.stop()}
              onSend={async (input, options) => {
                if (stream.isLoading && options.multitaskStrategy === "reject" && threadId) {
                  // useStream queues a double text itself; ask the server, so its 409 shows.
                  await client.runs.create(threadId, chosen, {
                    input: input as Record<string, unknown> | null,
                    multitaskStrategy: "reject",
                  });
                  return;
                }
                // Not awaited (it resolves when the run ends): the composer stays free for a double text.
                void stream.submit(input as Record<string, unknown>, { ...options, streamMode: modes });
              }}
            />
          </div>
          {(events.length > 0 || modes.length > 0) && (
            <aside className="events">
              <h3>Stream events</h3>
              {events.length === 0 && <Empty>Events of the chosen modes show here.</Empty>}
              {events.map((e, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: an append-only log
                <details key={i}>
                  <summary>{e.mode}</summary>
                  <Json value={e.data} />
                </details>
              ))}
            </aside>
          )}
        </div>
      )}
      {tab === "history" && threadId && (
        <HistoryTimeline threadId={threadId} version={historyVersion} onFork={fork} />
      )}
      {tab === "runs" && threadId && <ThreadRuns threadId={threadId} />}
      {tab === "state" && threadId && <CurrentState threadId={threadId} version={historyVersion} />}
    </>
  );
}

function InterruptForm(props: {
  interrupts: { id?: string; value?: unknown }[];
  onResume: (value: unknown) => Promise<void>;
}) {
  const [text, setText] = useState("");
  const action = useAction();
  return (
    <form
      className="card interrupt"
      data-testid="interrupt"
      onSubmit={(e) => {
        e.preventDefault();
        action.run(async () => {
          // JSON when it parses (true, 42, {"a": 1}), else the text as a string.
          let value: unknown = text;
          try {
            value = JSON.parse(text);
          } catch {}
          await props.onResume(value);
          setText("");
        });
      }}
    >
      <h3>Waiting for you</h3>
      {props.interrupts.map((i, n) => (
        <Json key={i.id ?? n} value={i.value} />
      ))}
      <label>
        Resume value (JSON, or plain text)
        <textarea aria-label="Resume value" rows={2} value={text} onChange={(e) => setText(e.target.value)} />
      </label>
      <ErrorNote error={action.error} />
      <button type="submit" disabled={action.busy}>
        Resume
      </button>
    </form>
  );
}

function Composer(props: {
  assistants: { assistant_id: string; name: string; graph_id: string }[];
  assistantId: string;
  setAssistantId: (id: string) => void;
  modes: StreamMode[];
  setModes: (modes: StreamMode[]) => void;
  busy: boolean;
  onStop: () => void;
  onSend: (
    input: unknown,
    options: { multitaskStrategy: MultitaskStrategy; config?: any; context?: any },
  ) => Promise<void>;
}) {
  const [text, setText] = useState("");
  const [asJson, setAsJson] = useState(false);
  const [strategy, setStrategy] = useState<MultitaskStrategy>("enqueue");
  const [configText, setConfigText] = useState("");
  const [contextText, setContextText] = useState("");
  const action = useAction();

  const send = (e: React.FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      const input = asJson
        ? (parseJson(text, "Input") ?? null)
        : { messages: [{ type: "human", content: text }] };
      const config = parseJson(configText, "Config");
      const context = parseJson(contextText, "Context");
      await props.onSend(input, { multitaskStrategy: strategy, config, context });
      setText("");
    });
  };

  return (
    <form className="composer card" onSubmit={send}>
      <textarea
        aria-label="Message"
        rows={3}
        placeholder={asJson ? '{"messages": [{"type": "human", "content": "hi"}]}' : "Message"}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) send(e);
        }}
      />
      <div className="row">
        <label>
          Assistant
          <select
            aria-label="Assistant"
            value={props.assistantId}
            onChange={(e) => props.setAssistantId(e.target.value)}
          >
            {props.assistants.map((a) => (
              <option key={a.assistant_id} value={a.assistant_id}>
                {a.name === a.graph_id ? a.name : `${a.name} (${a.graph_id})`}
              </option>
            ))}
          </select>
        </label>
        <label title="What the server does when this thread already has a run (double texting)">
          If busy
          <select
            aria-label="Multitask strategy"
            value={strategy}
            onChange={(e) => setStrategy(e.target.value as MultitaskStrategy)}
          >
            {STRATEGIES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label className="check">
          <input type="checkbox" checked={asJson} onChange={(e) => setAsJson(e.target.checked)} /> JSON input
        </label>
        <span className="grow" />
        {props.busy && (
          <button type="button" className="secondary" onClick={props.onStop}>
            Stop
          </button>
        )}
        <button type="submit" disabled={action.busy}>
          Send
        </button>
      </div>
      <details>
        <summary>Stream modes, config, context</summary>
        <fieldset className="row">
          <legend>Stream modes (values and messages always)</legend>
          {EXTRA_MODES.map((mode) => (
            <label key={mode} className="check">
              <input
                type="checkbox"
                checked={props.modes.includes(mode)}
                onChange={(e) =>
                  props.setModes(
                    e.target.checked ? [...props.modes, mode] : props.modes.filter((m) => m !== mode),
                  )
                }
              />{" "}
              {mode}
            </label>
          ))}
        </fieldset>
        <div className="row">
          <label className="grow">
            Config (JSON)
            <textarea
              aria-label="Config"
              rows={2}
              placeholder='{"configurable": {"sleep_ms": 2000}}'
              value={configText}
              onChange={(e) => setConfigText(e.target.value)}
            />
          </label>
          <label className="grow">
            Context (JSON)
            <textarea
              aria-label="Context"
              rows={2}
              value={contextText}
              onChange={(e) => setContextText(e.target.value)}
            />
          </label>
        </div>
      </details>
      <ErrorNote error={action.error} />
    </form>
  );
}

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

function HistoryTimeline(props: {
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

function CurrentState({ threadId, version }: { threadId: string; version: number }) {
  const { client } = useConsole();
  const state = useLoad(() => client.threads.getState(threadId), [client, threadId, version]);
  return (
    <Section title="Current state">
      <ErrorNote error={state.error} />
      {state.data && <Json value={state.data} />}
    </Section>
  );
}
