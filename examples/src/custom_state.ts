/**
 * `custom_state`: non-message state declared with zod through `StateSchema`, so the server can extract
 * distinct JSON schemas at run time:
 *   input  {item: string}                    — what a run accepts
 *   output {count: number, items: string[]}  — what a run returns
 *   state  input ∪ output                    — what the checkpoint holds
 * Each run adds its `item`: `count` sums the increments, `items` appends.
 */
import { END, ReducedValue, START, StateGraph, StateSchema } from "@langchain/langgraph";
import { z } from "zod";

const Output = new StateSchema({
  count: new ReducedValue(z.number().default(0).describe("How many items were added"), {
    inputSchema: z.number(),
    reducer: (total, increment) => total + increment,
  }),
  items: new ReducedValue(
    z
      .array(z.string())
      .default(() => [])
      .describe("Every item added, in order"),
    {
      inputSchema: z.array(z.string()),
      reducer: (all, added) => [...all, ...added],
    },
  ),
});

const Input = new StateSchema({
  item: z.string().describe("The item to add"),
});

const State = new StateSchema({ ...Input.fields, ...Output.fields });

export const graph = new StateGraph({ state: State, input: Input, output: Output })
  .addNode("add", (state) => ({ count: 1, items: [state.item] }))
  .addEdge(START, "add")
  .addEdge("add", END)
  .compile();
