/**
 * A conversation as chat: messages with their text and structured content, tool calls and results, and
 * generative UI messages (each under the message it belongs to, else at the end).
 */
import type { Message } from "@langchain/langgraph-sdk";
import type { UIMessage } from "@langchain/langgraph-sdk/react-ui";
import type { ReactNode } from "react";
import { Json } from "../util.js";

type Block = { type?: string; text?: string; [key: string]: unknown };

function Content({ content }: { content: unknown }) {
  if (typeof content === "string") return content ? <div className="text">{content}</div> : null;
  if (!Array.isArray(content)) return <Json value={content} />;
  return (
    <>
      {(content as Block[]).map((block, i) =>
        block?.type === "text" && typeof block.text === "string" ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: content blocks have no ids and never reorder
          <div key={i} className="text">
            {block.text}
          </div>
        ) : (
          // biome-ignore lint/suspicious/noArrayIndexKey: as above
          <Json key={i} value={block} className="block" />
        ),
      )}
    </>
  );
}

const ROLE: Record<string, string> = { human: "user", ai: "assistant", tool: "tool", system: "system" };

export function MessageView({ message }: { message: Message }) {
  const calls = message.type === "ai" ? (message.tool_calls ?? []) : [];
  return (
    <div className={`message message-${message.type}`} data-testid="message" data-role={message.type}>
      <div className="message-role">
        {ROLE[message.type] ?? message.type}
        {message.type === "tool" && message.name ? ` · ${message.name}` : ""}
        {message.name && message.type !== "tool" ? ` · ${message.name}` : ""}
      </div>
      <Content content={message.content} />
      {calls.map((call) => (
        <div key={call.id ?? call.name} className="tool-call" data-testid="tool-call">
          <span className="tool-name">{call.name}</span>
          <code>{JSON.stringify(call.args)}</code>
        </div>
      ))}
    </div>
  );
}

export function Conversation(props: {
  messages: Message[];
  ui?: UIMessage[];
  renderUi?: (message: UIMessage) => ReactNode;
}) {
  const { messages, ui = [], renderUi } = props;
  if (messages.length === 0 && ui.length === 0)
    return <p className="empty">No messages yet. Say something below.</p>;
  const ids = new Set(messages.map((m) => m.id));
  // The message a UI message belongs to: `metadata.id` (the SDK's typedUi), `message_id` in older SDKs.
  const owner = (u: UIMessage) => (u.metadata?.id ?? u.metadata?.message_id) as string | undefined;
  const of = (id: string | undefined) => ui.filter((u) => owner(u) === id);
  const show = (list: UIMessage[]) =>
    renderUi ? list.map((u) => <div key={u.id}>{renderUi(u)}</div>) : null;
  return (
    <div className="conversation" data-testid="conversation">
      {messages.map((m, i) => (
        <div key={m.id ?? `i-${i}`}>
          <MessageView message={m} />
          {m.id && show(of(m.id))}
        </div>
      ))}
      {show(ui.filter((u) => !ids.has(owner(u))))}
    </div>
  );
}
