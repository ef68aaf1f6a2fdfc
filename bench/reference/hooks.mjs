// Module resolve hook for the reference server (registered by start.ts).
//
// The bench graphs live in bench/graphs and are shared with Hangar. Loaded normally, their
// `@langchain/*` imports would resolve by walking up from bench/graphs to the project's
// node_modules (Hangar's LangGraph 1.7 / core 1.4). For the reference server they must use its
// own pinned copies (LangGraph 1.1.5, core 1.1.x, checkpoint 1.0.0) in bench/reference/node_modules:
// this hook re-resolves those specifiers, for importers under bench/graphs only, as if they were
// imported from bench/reference. `zod` too: LangGraph's zod helpers and the project's schemas must share
// one zod (bench/record-schemas.ts serves a zod state).
const LANGCHAIN = /^(@langchain\/(langgraph|langgraph-checkpoint|langgraph-sdk|core)|zod)(\/.*)?$/;

let graphsURL = "";
let parentURL = "";

export async function initialize(data) {
  graphsURL = data.graphsURL;
  parentURL = data.parentURL;
}

export async function resolve(specifier, context, nextResolve) {
  if (LANGCHAIN.test(specifier) && context.parentURL?.startsWith(graphsURL)) {
    return nextResolve(specifier, { ...context, parentURL });
  }
  return nextResolve(specifier, context);
}
