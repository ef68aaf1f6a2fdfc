/** `fail`: every run ends in `CustomError: Boo!`. Export: a `(config) => graph` factory. */
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";

export class CustomError extends Error {
  override name = "CustomError";
}

export const graph = (_config: LangGraphRunnableConfig) =>
  new StateGraph(MessagesAnnotation)
    .addNode("fail", (): typeof MessagesAnnotation.Update => {
      throw new CustomError("Boo!");
    })
    .addEdge(START, "fail")
    .addEdge("fail", END)
    .compile();
