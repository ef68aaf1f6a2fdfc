/**
 * `subgraph`: the parent's `child` node is a compiled child graph, so `stream_subgraphs` shows events
 * from the `child:<task id>` namespace and `/subgraphs` lists it. Replies `subgraph echo: <last>`.
 */
import { AIMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { lastHumanText } from "./last-human.js";

const child = new StateGraph(MessagesAnnotation)
  .addNode("child_echo", (state) => ({
    messages: [new AIMessage(`subgraph echo: ${lastHumanText(state.messages)}`)],
  }))
  .addEdge(START, "child_echo")
  .addEdge("child_echo", END)
  .compile();

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("child", child)
  .addEdge(START, "child")
  .addEdge("child", END)
  .compile();
