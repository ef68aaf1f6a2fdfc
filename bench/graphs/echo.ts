/**
 * `echo`: one node that replies `echo: <last message>`. The trivial graph of the latency and
 * throughput scenarios. Imports only `@langchain/langgraph` and `@langchain/core/messages`, so the
 * same file loads in Hangar (the project's packages) and in the reference server (its pinned packages,
 * via bench/reference/hooks.mjs).
 */
import { AIMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";

export function lastText(messages: { content: unknown }[]): string {
  const last = messages.at(-1)?.content;
  return typeof last === "string" ? last : JSON.stringify(last ?? "");
}

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("echo", (state) => ({ messages: [new AIMessage(`echo: ${lastText(state.messages)}`)] }))
  .addEdge(START, "echo")
  .addEdge("echo", END)
  .compile();
