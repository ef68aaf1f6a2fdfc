/**
 * `agent`: a chat agent as LangGraph's templates write one — a chat model that streams its tokens,
 * a configuration typed with `Annotation`, the SDK's logger from the platform, and a generative UI
 * component pushed beside its answer. The model is a fake one, so the example needs no API key.
 */
import { FakeListChatModel } from "@langchain/core/utils/testing";
import {
  Annotation,
  END,
  type LangGraphRunnableConfig,
  MessagesAnnotation,
  START,
  StateGraph,
} from "@langchain/langgraph";
import { getLogger } from "@langchain/langgraph-sdk/logging";
import { typedUi, uiMessageReducer } from "@langchain/langgraph-sdk/react-ui/server";
import type ComponentMap from "./ui.js";

// The platform's logger, asked for at import time as many projects do.
const logger = getLogger();
logger.info("agent graph loaded", { greeting: process.env.AGENT_GREETING });

/** What a client may configure per run or per assistant (`config.configurable`). */
export const ConfigurationAnnotation = Annotation.Root({
  /** Which model answers. */
  model_name: Annotation<string>,
  /** How the answer is worded. */
  tone: Annotation<"plain" | "cheerful">,
});

const AgentState = Annotation.Root({
  ...MessagesAnnotation.spec,
  /** Generative UI messages: `typedUi` writes them here and streams them to `useStream`. */
  ui: Annotation({ reducer: uiMessageReducer, default: () => [] }),
});

async function callModel(state: typeof AgentState.State, config: LangGraphRunnableConfig) {
  const { model_name = "fake-model", tone = "plain" } = (config.configurable ?? {}) as Partial<
    typeof ConfigurationAnnotation.State
  >;
  const said = String(state.messages.at(-1)?.content ?? "");
  const answer = tone === "cheerful" ? `Great question! You said: ${said}` : `You said: ${said}`;
  // Streams its answer token by token, as a real chat model does.
  const model = new FakeListChatModel({ responses: [answer] });
  const message = await model.invoke(state.messages, config);
  logger.info("model answered", { model_name, tone });
  const ui = typedUi<typeof ComponentMap>(config);
  ui.push({ name: "answer-card", props: { model: model_name, text: String(message.content) } }, { message });
  return { messages: [message] };
}

export const graph = new StateGraph(AgentState, ConfigurationAnnotation)
  .addNode("callModel", callModel)
  .addEdge(START, "callModel")
  .addEdge("callModel", END)
  .compile();
