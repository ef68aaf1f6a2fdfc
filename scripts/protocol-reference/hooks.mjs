// Module resolve hook for the reference server (registered by record.ts --serve): the fixture graph
// (test/e2e/fixtures/protocol-clients) imports `@langchain/*` and `zod`; loaded normally they would resolve to
// Hangar's node_modules. For the reference they resolve from this folder's pinned copies, so the
// server and the graph share one LangGraph.
const PINNED = /^(@langchain\/(langgraph|langgraph-checkpoint|langgraph-sdk|core)|zod)(\/.*)?$/;

let fixtureURL = "";
let parentURL = "";

export async function initialize(data) {
  fixtureURL = data.fixtureURL;
  parentURL = data.parentURL;
}

export async function resolve(specifier, context, nextResolve) {
  if (PINNED.test(specifier) && context.parentURL?.startsWith(fixtureURL)) {
    return nextResolve(specifier, { ...context, parentURL });
  }
  return nextResolve(specifier, context);
}
