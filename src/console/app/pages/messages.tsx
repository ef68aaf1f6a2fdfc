/** A conversation as chat: messages with their text and structured content, tool calls and results. */
import type { Message } from "@langchain/langgraph-sdk";
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

export function Conversation({ messages }: { messages: Message[] }) {
  if (messages.length === 0) return <p className="empty">No messages yet. Say something below.</p>;
  return (
    <div className="conversation" data-testid="conversation">
      {messages.map((m, i) => (
        <MessageView key={m.id ?? `i-${i}`} message={m} />
      ))}
    </div>
  );
}
