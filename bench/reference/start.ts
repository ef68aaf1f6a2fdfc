/**
 * Starts the reference JS Agent Server (@langchain/langgraph-api 2.0.0) programmatically, serving the
 * graphs of bench/langgraph.json. Run from this folder: `node --import tsx start.ts` (`npm start`).
 *
 * Environment: PORT (required), STATE_DIR (its `.langgraph_api/` goes there; created if missing; use
 * a fresh one per start), N_WORKERS (default 10, the server's own default), HOST (default 127.0.0.1),
 * PROJECT_PACKAGES=1 (CONFIG's graphs import their own node_modules' LangGraph), CONFIG (another langgraph.json: its graphs, `auth`, `http` (custom app), `ui` and `ui_config`, e.g. the
 * auth e2e fixture for compare-auth.ts).
 * Prints `reference listening on http://<host>:<port>` once it serves; SIGTERM/SIGINT flush and exit.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { register } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const benchDir = path.resolve(here, "..");

const configFile = path.resolve(process.env.CONFIG ?? path.join(benchDir, "langgraph.json"));
const configDir = path.dirname(configFile);

// The project's files (bench/graphs, or CONFIG's folder) import @langchain/* from this folder's
// node_modules (see hooks.mjs), unless PROJECT_PACKAGES=1: then from the project's own (a project
// pinned to another LangGraph release, scripts/record-reference-releases.ts).
if (process.env.PROJECT_PACKAGES !== "1") {
  register("./hooks.mjs", import.meta.url, {
    data: {
      graphsURL: pathToFileURL(
        process.env.CONFIG ? configDir + path.sep : path.join(benchDir, "graphs") + path.sep,
      ).href,
      parentURL: import.meta.url,
    },
  });
}

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) throw new Error("PORT must be set to a port number");
const host = process.env.HOST ?? "127.0.0.1";
const nWorkers = Number(process.env.N_WORKERS ?? 10);
const stateDir = path.resolve(process.env.STATE_DIR ?? path.join(here, ".state"));
mkdirSync(stateDir, { recursive: true });

const config = JSON.parse(readFileSync(configFile, "utf8")) as {
  graphs: Record<string, string>;
  auth?: { path?: string; disable_studio_auth?: boolean };
  http?: { app?: string } & Record<string, unknown>;
  ui?: Record<string, string>;
  ui_config?: { shared?: string[] };
};
// startServer resolves paths against `cwd` (the state dir): hand it absolute ones.
const absolute = (spec: string) => {
  const [file, exportName] = spec.split(":");
  return `${path.resolve(configDir, file)}:${exportName ?? "default"}`;
};
const graphs = Object.fromEntries(Object.entries(config.graphs).map(([id, spec]) => [id, absolute(spec)]));
const auth = config.auth?.path ? { ...config.auth, path: absolute(config.auth.path) } : undefined;
const http = config.http && { ...config.http, ...(config.http.app && { app: absolute(config.http.app) }) };
// UI files are bundled relative to the project (cwd must be its folder for them).
const ui = config.ui;

const { startServer } = await import("@langchain/langgraph-api/server");
const { cleanup } = await startServer({
  port,
  host,
  nWorkers,
  cwd: ui ? configDir : stateDir,
  graphs,
  ...(auth && { auth }),
  ...(http && { http }),
  ...(ui && { ui, ui_config: config.ui_config }),
});
process.stdout.write(`reference listening on http://${host}:${port}\n`);

let stopping = false;
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    void cleanup().finally(() => process.exit(0));
  });
}
