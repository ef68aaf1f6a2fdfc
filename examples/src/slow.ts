/**
 * `slow`: an echo that takes `configurable.sleep_ms` (default 1000) and streams `{progress: i}` custom
 * events every 100 ms while it waits. Cancelling the run aborts `config.signal`, which ends the wait at
 * once. Export: an uncompiled StateGraph (the server compiles it).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { AIMessage } from "@langchain/core/messages";
import {
  END,
  type LangGraphRunnableConfig,
  MessagesAnnotation,
  START,
  StateGraph,
} from "@langchain/langgraph";
import { lastHumanText } from "./last-human.js";

const TICK_MS = 100;

async function slowEcho(state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) {
  const sleepMs = Number(config.configurable?.sleep_ms ?? 1000);
  const deadline = Date.now() + (Number.isFinite(sleepMs) ? Math.max(0, sleepMs) : 1000);
  for (let i = 0; ; i++) {
    config.signal?.throwIfAborted();
    config.writer?.({ progress: i });
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(TICK_MS, left), undefined, { signal: config.signal });
  }
  return { messages: [new AIMessage(`slow echo: ${lastHumanText(state.messages)}`)] };
}

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("slow_echo", slowEcho)
  .addEdge(START, "slow_echo")
  .addEdge("slow_echo", END);
