// Packages imported before tsx's loader is registered (bin/hangar.js, bin/executor-thread.js), each
// entry naming only what its thread loads anyway. They are plain JavaScript, which needs no loader:
// imported first, their hundreds of modules skip its hooks thread (a message round trip each) and the
// source maps tsx turns on (every package's maps and sources kept in memory). Measured: the server is
// up 0.5 s sooner with 15 MB less RSS at start and 12 MB less at rest, and an executor thread loads
// 0.3-0.5 s sooner. A project whose graphs resolve these packages to the same files shares them; its
// own copies load through the loader as before.

/** What every thread that executes runs loads: LangGraph, the checkpoint base, zod. */
export const RUN_PACKAGES = [
  "@langchain/langgraph",
  "@langchain/core/callbacks/base",
  "@langchain/langgraph-checkpoint",
  "zod",
];

/** What the API thread loads beside them: the HTTP framework and its Node adapter. */
export const HTTP_PACKAGES = ["hono", "@hono/node-server"];

/**
 * What each administration command (src/cli/admin.ts' ADMIN_COMMANDS; test/unit/preload.test.ts keeps
 * the names equal) loads of those: they start no server, so not LangGraph or Hono; zod (the config),
 * and the checkpoint base where they open the storage. Measured, CPU per command: `images list`
 * 1.8 -> 1.2 s, `keys list` 3.2 (nothing preloaded) -> 2.3 s.
 */
export const ADMIN_PACKAGES = {
  keys: ["@langchain/langgraph-checkpoint", "zod"],
  orgs: ["@langchain/langgraph-checkpoint", "zod"],
  migrate: ["@langchain/langgraph-checkpoint", "zod"],
  images: ["zod"],
};

export async function preload(packages) {
  await Promise.all(packages.map((name) => import(name)));
}
