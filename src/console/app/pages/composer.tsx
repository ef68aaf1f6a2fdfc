/**
 * What starts runs on a thread: the composer (message or JSON input, assistant, stream modes, config,
 * context, and the multitask strategy for a double text) and the form that answers an interrupt.
 */
import type { StreamMode } from "@langchain/langgraph-sdk";
import { useState } from "react";
import { ErrorNote, Json, parseJson, useAction } from "../util.js";

/** Modes the composer offers beyond `values` and `messages-tuple`, which every run streams. */
export const EXTRA_MODES: StreamMode[] = ["updates", "custom", "tasks", "checkpoints", "debug", "events"];
/** What the server does with a run for a thread that has one already (double texting). */
export type MultitaskStrategy = "enqueue" | "reject" | "interrupt" | "rollback";
const STRATEGIES: MultitaskStrategy[] = ["enqueue", "reject", "interrupt", "rollback"];

/**
 * What the composer holds while it is being written. Kept by the thread's page, above what restarts
 * when the stream modes change or a tab is switched, so neither loses it.
 */
export interface Draft {
  text: string;
  asJson: boolean;
  strategy: MultitaskStrategy;
  subgraphs: boolean;
  configText: string;
  contextText: string;
  /** The "stream modes, config, context" panel is open. */
  optionsOpen: boolean;
}

export const EMPTY_DRAFT: Draft = {
  text: "",
  asJson: false,
  strategy: "enqueue",
  subgraphs: false,
  configText: "",
  contextText: "",
  optionsOpen: false,
};

export function InterruptForm(props: {
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

export function Composer(props: {
  assistants: { assistant_id: string; name: string; graph_id: string }[];
  assistantId: string;
  setAssistantId: (id: string) => void;
  modes: StreamMode[];
  setModes: (modes: StreamMode[]) => void;
  busy: boolean;
  /** The run being streamed is known (created, or joined): Stop can cancel it. */
  canStop: boolean;
  draft: Draft;
  onDraft: (change: Partial<Draft>) => void;
  onStop: () => Promise<void>;
  onSend: (
    input: unknown,
    options: { multitaskStrategy: MultitaskStrategy; streamSubgraphs: boolean; config?: any; context?: any },
  ) => Promise<void>;
}) {
  const { draft, onDraft } = props;
  const { text, asJson, strategy, subgraphs, configText, contextText } = draft;
  const action = useAction();

  const send = (e: React.FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      // JSON input may be empty (a run with no input, e.g. to continue from a checkpoint); a message not.
      if (!asJson && text.trim() === "") throw new Error("Write a message first (or choose JSON input).");
      const input = asJson
        ? (parseJson(text, "Input") ?? null)
        : { messages: [{ type: "human", content: text }] };
      const config = parseJson(configText, "Config");
      const context = parseJson(contextText, "Context");
      await props.onSend(input, { multitaskStrategy: strategy, streamSubgraphs: subgraphs, config, context });
      onDraft({ text: "" });
    });
  };

  return (
    <form className="composer card" onSubmit={send}>
      <textarea
        aria-label="Message"
        rows={3}
        placeholder={asJson ? '{"messages": [{"type": "human", "content": "hi"}]}' : "Message"}
        value={text}
        onChange={(e) => onDraft({ text: e.target.value })}
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
            onChange={(e) => onDraft({ strategy: e.target.value as MultitaskStrategy })}
          >
            {STRATEGIES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label className="check">
          <input type="checkbox" checked={asJson} onChange={(e) => onDraft({ asJson: e.target.checked })} />{" "}
          JSON input
        </label>
        <span className="grow" />
        {props.busy && (
          <button
            type="button"
            className="secondary"
            title="Cancel the run this page streams"
            disabled={!props.canStop || action.busy}
            onClick={() => action.run(props.onStop)}
          >
            Stop
          </button>
        )}
        <button type="submit" disabled={action.busy}>
          Send
        </button>
      </div>
      <details open={draft.optionsOpen} onToggle={(e) => onDraft({ optionsOpen: e.currentTarget.open })}>
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
          <label className="check" title="Stream the events of subgraphs too (stream_subgraphs)">
            <input
              type="checkbox"
              checked={subgraphs}
              onChange={(e) => onDraft({ subgraphs: e.target.checked })}
            />{" "}
            subgraphs
          </label>
        </fieldset>
        <div className="row">
          <label className="grow">
            Config (JSON)
            <textarea
              aria-label="Config"
              rows={2}
              placeholder='{"configurable": {"sleep_ms": 2000}}'
              value={configText}
              onChange={(e) => onDraft({ configText: e.target.value })}
            />
          </label>
          <label className="grow">
            Context (JSON)
            <textarea
              aria-label="Context"
              rows={2}
              value={contextText}
              onChange={(e) => onDraft({ contextText: e.target.value })}
            />
          </label>
        </div>
      </details>
      <ErrorNote error={action.error} />
    </form>
  );
}
