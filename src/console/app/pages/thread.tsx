/**
 * One thread: its conversation live (`useStream`), the composer that starts runs, the interrupt
 * waiting for an answer, the checkpoint history (inspect, edit, fork) and the thread's runs.
 *
 * The stream is keyed by the chosen stream modes: `useStream` asks for the modes whose callbacks it
 * was created with, so changing them creates it again (the thread's state is read back).
 */
import type { Assistant, Checkpoint, StreamMode } from "@langchain/langgraph-sdk";
import { useStream } from "@langchain/langgraph-sdk/react";
import {
  isRemoveUIMessage,
  isUIMessage,
  type UIMessage,
  uiMessageReducer,
} from "@langchain/langgraph-sdk/react-ui";
import { useCallback, useEffect, useRef, useState } from "react";
import { useConsole } from "../context.js";
import { href, navigate } from "../router.js";
import { Empty, ErrorNote, Json, Section, Status, useAction, useInterval, useLoad } from "../util.js";
import { Composer, type Draft, EMPTY_DRAFT, InterruptForm } from "./composer.js";
import { UiMessageView, uiMessagesOf, withCspSafeUi } from "./generative-ui.js";
import { HistoryTimeline } from "./history.js";
import { Conversation } from "./messages.js";
import { ThreadRuns } from "./runs.js";

type Tab = "chat" | "history" | "runs" | "state";

/**
 * How the console's own runs are started: closing or reloading the page must not stop them (the SDK's
 * default for a stream nobody reads any more is to cancel its run). Reopened, the busy thread's run
 * is joined again; Stop cancels it explicitly.
 */
const KEEP_RUNNING = { onDisconnect: "continue", streamResumable: true } as const;

/** What the page's own submits set beyond the stream modes and KEEP_RUNNING. */
type StartOptions = Omit<
  NonNullable<Parameters<ReturnType<typeof useStream<Record<string, unknown>>>["submit"]>[1]>,
  "streamMode" | keyof typeof KEEP_RUNNING
>;

export function ThreadPage({ threadId }: { threadId: string }) {
  const { client } = useConsole();
  // A new thread gets its id from its first run; the page stays mounted (the stream with it).
  const [tid, setTid] = useState<string | null>(threadId === "new" ? null : threadId);
  const [modes, setModes] = useState<StreamMode[]>([]);
  const thread = useLoad(() => (tid ? client.threads.get(tid) : Promise.resolve(null)), [client, tid]);
  const notFound = (thread.error as { status?: number } | undefined)?.status === 404;
  useInterval(thread.reload, notFound ? null : 3000);
  const deletion = useAction();
  // The composer's draft and assistant live here, above the stream (restarted when its modes change).
  const [draft, setDraft] = useState<Draft>(EMPTY_DRAFT);
  const onDraft = useCallback((change: Partial<Draft>) => setDraft((d) => ({ ...d, ...change })), []);
  const [assistantId, setAssistantId] = useState("");

  // Loaded here, not in the stream's view: that one starts again when the stream modes change.
  const assistants = useLoad(() => client.assistants.search({ limit: 100 }), [client]);

  // The conversation is shown once the thread is known to be readable (made here, or read back), and
  // stays mounted from then on.
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
        <span className="grow" />
        {tid && (
          <button type="button" className="secondary" onClick={() => navigate("threads", "new")}>
            New thread
          </button>
        )}
        {tid && !notFound && (
          <button
            type="button"
            className="danger"
            disabled={deletion.busy}
            onClick={() => {
              if (!confirm("Delete this thread, its runs and checkpoints?")) return;
              void deletion.run(async () => {
                await client.threads.delete(tid);
                navigate("threads");
              });
            }}
          >
            Delete
          </button>
        )}
      </div>
      <ErrorNote error={thread.error ?? deletion.error} />
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
          interrupted={thread.data?.status === "interrupted"}
          modes={modes}
          setModes={setModes}
          onChange={thread.reload}
          draft={draft}
          onDraft={onDraft}
          assistantId={assistantId}
          setAssistantId={setAssistantId}
          assistants={assistants.data ?? []}
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
  /**
   * The thread waits on an interrupt or a breakpoint (as last read). A cancelled run leaves tasks to
   * do as well, which the SDK shows as a breakpoint; its thread is idle, and nothing waits for an answer.
   */
  interrupted: boolean;
  modes: StreamMode[];
  setModes: (modes: StreamMode[]) => void;
  onChange: () => void;
  draft: Draft;
  onDraft: (change: Partial<Draft>) => void;
  assistantId: string;
  setAssistantId: (id: string) => void;
  assistants: Assistant[];
}) {
  const { client } = useConsole();
  const { threadId, modes, assistantId, setAssistantId } = props;
  // The thread's own assistant (its metadata names it, or its graph), else the first one listed.
  const list = props.assistants;
  const fallback =
    list.find((a) => a.assistant_id === props.defaultAssistant) ??
    list.find((a) => a.graph_id === props.defaultAssistant && a.metadata?.created_by === "system") ??
    list[0];
  const chosen = assistantId || fallback?.assistant_id || props.defaultAssistant;
  // The agent whose UI components render the thread's UI messages: the chosen assistant's graph.
  const graphId = list.find((a) => a.assistant_id === chosen)?.graph_id ?? chosen;
  const [tab, setTab] = useState<Tab>("chat");
  const [events, setEvents] = useState<StreamEventLine[]>([]);
  const [historyVersion, setHistoryVersion] = useState(0);

  const log = (mode: string) => (data: unknown) => setEvents((prev) => [...prev.slice(-199), { mode, data }]);
  const on = (mode: StreamMode) => modes.includes(mode);
  /** Runs this page streams already: its own, and those it joined. */
  const joined = useRef(new Set<string>());
  /** The run the page streams now (started here, once created, or joined): what Stop cancels. */
  const [streamingRun, setStreamingRun] = useState<string | null>(null);
  const stream = useStream<Record<string, unknown>>({
    client: withCspSafeUi(client),
    assistantId: chosen,
    threadId,
    onThreadId: props.onThreadId,
    fetchStateHistory: false,
    onUpdateEvent: on("updates") ? log("updates") : undefined,
    // Always: generative UI messages arrive as custom events (and are in the values' `ui` at the end).
    onCustomEvent: (event, options) => {
      if (on("custom")) log("custom")(event);
      if (isUIMessage(event) || isRemoveUIMessage(event))
        options.mutate((prev) => ({
          ...prev,
          ui: uiMessageReducer(uiMessagesOf(prev), event as UIMessage),
        }));
    },
    onTaskEvent: on("tasks") ? log("tasks") : undefined,
    onCheckpointEvent: on("checkpoints") ? log("checkpoints") : undefined,
    onDebugEvent: on("debug") ? log("debug") : undefined,
    onLangChainEvent: on("events") ? log("events") : undefined,
    onMetadataEvent: log("metadata"),
    onCreated: (run) => {
      joined.current.add(run.run_id);
      setStreamingRun(run.run_id);
    },
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
        setStreamingRun(run.run_id);
        joinStream.current(run.run_id).catch(() => {}); // its errors show as stream.error
      },
      () => {},
    );
  }, [client, threadId, props.busy, streaming]);

  /**
   * Starts a run here. Not awaited: submit resolves when the run's stream ends; its errors show as
   * stream.error. Until the new run is created, Stop has nothing to cancel.
   */
  const start = (input: unknown, options: StartOptions) => {
    setStreamingRun(null);
    void stream.submit(input as Record<string, unknown> | null, {
      ...options,
      streamMode: modes,
      ...KEEP_RUNNING,
    });
  };

  // A copy of the checkpoint: the SDK deletes thread_id from the object it is given.
  const fork = async (checkpoint: Checkpoint, input: unknown) => {
    setTab("chat");
    start(input, { checkpoint: { ...checkpoint } });
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
            <Conversation
              messages={stream.messages}
              ui={uiMessagesOf(stream.values)}
              renderUi={(message) => <UiMessageView message={message} stream={stream} namespace={graphId} />}
            />
            {stream.isLoading && (
              <p className="live" data-testid="streaming">
                streaming…
              </p>
            )}
            <ErrorNote error={stream.error} />
            {stream.interrupts.length > 0 && !stream.isLoading && props.interrupted && (
              <InterruptForm
                interrupts={stream.interrupts}
                onResume={async (resume) => {
                  start(null, { command: { resume } });
                }}
              />
            )}
            <Composer
              assistants={list}
              assistantId={chosen}
              setAssistantId={setAssistantId}
              modes={modes}
              setModes={props.setModes}
              busy={stream.isLoading}
              canStop={streamingRun !== null}
              draft={props.draft}
              onDraft={props.onDraft}
              onStop={async () => {
                if (!threadId || !streamingRun) return;
                // Cancelled first, and waited for: the stream then ends with the run's final state,
                // which is what stop() reads back (before, it read a state with the run mid-way).
                await client.runs.cancel(threadId, streamingRun, true);
                await stream.stop();
              }}
              onSend={async (input, options) => {
                if (stream.isLoading && options.multitaskStrategy === "reject" && threadId) {
                  // useStream queues a double text itself; ask the server, so its 409 shows.
                  await client.runs.create(threadId, chosen, {
                    input: input as Record<string, unknown> | null,
                    multitaskStrategy: "reject",
                  });
                  return;
                }
                // The composer stays free for a double text.
                start(input, options);
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
