/**
 * `routing`: a graph factory. The platform calls it with each run's config, and the graph it builds
 * depends on `configurable.route` — its node is named after it — so state reads and updates must
 * build the graph with the thread's own config too.
 */
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";

const RoutingState = Annotation.Root({
  visited: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});

export function graph(config: LangGraphRunnableConfig) {
  const route = String(config.configurable?.route ?? "default");
  return new StateGraph(RoutingState)
    .addNode(route, () => ({ visited: [route] }))
    .addEdge(START, route)
    .addEdge(route, END)
    .compile();
}
