/**
 * `notes`: a state declared with zod, its messages and reducers described with `withLangGraph`
 * (LangGraph's zod integration), so clients and schemas know the `messages` field for what it is.
 */
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesZodMeta, START, StateGraph } from "@langchain/langgraph";
import { withLangGraph } from "@langchain/langgraph/zod";
import { z } from "zod";

const NotesState = z.object({
  messages: withLangGraph(z.custom<BaseMessage[]>(), MessagesZodMeta),
  notes: withLangGraph(z.array(z.string()), {
    reducer: { fn: (a: string[], b: string[]) => [...a, ...b], schema: z.array(z.string()) },
    default: () => [],
  }),
});

export const graph = new StateGraph(NotesState)
  .addNode("takeNote", (state) => {
    const text = String(state.messages.at(-1)?.content ?? "");
    return { notes: [text], messages: [new AIMessage(`Noted (${state.notes.length + 1}): ${text}`)] };
  })
  .addEdge(START, "takeNote")
  .addEdge("takeNote", END)
  .compile();
