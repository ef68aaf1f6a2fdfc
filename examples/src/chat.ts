/** `agent`: a deterministic chat agent. Export: a compiled graph. */
import { AIMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { lastHumanText } from "./last-human.js";

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("echo", (state) => ({ messages: [new AIMessage(`echo: ${lastHumanText(state.messages)}`)] }))
  .addEdge(START, "echo")
  .addEdge("echo", END)
  .compile();
