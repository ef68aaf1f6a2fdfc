/** `slow1s`: one node that awaits 1000 ms, then replies `slow echo: <last message>`. */
import { AIMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";

const SLEEP_MS = 1000;

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("slow_echo", async (state) => {
    await new Promise((resolve) => setTimeout(resolve, SLEEP_MS));
    const last = state.messages.at(-1)?.content;
    return { messages: [new AIMessage(`slow echo: ${typeof last === "string" ? last : ""}`)] };
  })
  .addEdge(START, "slow_echo")
  .addEdge("slow_echo", END)
  .compile();
