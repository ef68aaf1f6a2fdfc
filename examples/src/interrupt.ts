/**
 * `interrupt`: node `ask` pauses with `interrupt({question: "approve?"})`; resuming with
 * `Command({resume: value})` replies `approved: <value>`. Export: a promise of a compiled graph.
 */
import { AIMessage } from "@langchain/core/messages";
import { END, interrupt, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";

async function build() {
  return new StateGraph(MessagesAnnotation)
    .addNode("ask", () => {
      const answer = interrupt<{ question: string }, unknown>({ question: "approve?" });
      const text = typeof answer === "string" ? answer : JSON.stringify(answer);
      return { messages: [new AIMessage(`approved: ${text}`)] };
    })
    .addEdge(START, "ask")
    .addEdge("ask", END)
    .compile();
}

export const graph = build();
