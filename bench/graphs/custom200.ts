/**
 * `custom200`: one node that emits 200 custom stream events (`config.writer`), then replies
 * `done: <last message>`. Clients see them with `stream_mode: "custom"`.
 */
import { AIMessage } from "@langchain/core/messages";
import {
  END,
  type LangGraphRunnableConfig,
  MessagesAnnotation,
  START,
  StateGraph,
} from "@langchain/langgraph";

export const EVENTS = 200;

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("emit", (state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) => {
    for (let i = 0; i < EVENTS; i++) config.writer?.({ i, text: `event ${i}` });
    const last = state.messages.at(-1)?.content;
    return { messages: [new AIMessage(`done: ${typeof last === "string" ? last : ""}`)] };
  })
  .addEdge(START, "emit")
  .addEdge("emit", END)
  .compile();
