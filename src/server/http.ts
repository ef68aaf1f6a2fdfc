/**
 * The server's HTTP app: the HTTP kit's `createApp` (src/http/) with authentication and every route
 * group, less those langgraph.json `http.disable_*` turns off, and the API reference over all of them.
 */
import type { Hono } from "hono";
import { a2aRoutes } from "../agents/a2a/routes.js";
import { assistantRoutes } from "../agents/assistants.js";
import type { AgentDeps } from "../agents/context.js";
import { cronRoutes } from "../agents/crons.js";
import { mcpRoutes } from "../agents/mcp/routes.js";
import { metricsRoutes } from "../agents/metrics.js";
import { runRoutes } from "../agents/runs.js";
import { storeRoutes } from "../agents/store.js";
import { systemRoutes } from "../agents/system.js";
import { threadRoutes } from "../agents/threads.js";
import { customAuthentication } from "../auth/middleware.js";
import type { Config } from "../config/index.js";
import { consoleApiDocs, consoleRoutes, consoleWebSocketCredentials } from "../console/routes.js";
import { createApp } from "../http/app.js";
import { apiKeyAuth } from "../http/auth.js";
import type { AppEnv } from "../http/context.js";
import { docsRoutes } from "../http/docs-routes.js";
import type { ApiDocs } from "../http/openapi.js";
import type { Logger } from "../logger.js";
import { ThreadEventHub } from "../protocol/buffer.js";
import { protocolApiDocs, protocolRoutes } from "../protocol/routes.js";
import { protocolSocketRoutes } from "../protocol/socket.js";
import type { ThreadEventFeed } from "../protocol/thread-events.js";
import { sandboxRoutes } from "../sandboxes/routes.js";
import { uiApiDocs, uiRoutes } from "../ui/routes.js";
import type { Sandboxes } from "./sandboxes.js";

export interface ServerAppDeps extends AgentDeps {
  sandboxes: Sandboxes;
  /** Protocol-v2 thread events, followed from any process (src/protocol/buffer.ts); default: this storage's, unnotified. */
  threadEvents?: ThreadEventFeed;
}

const SANDBOXES_MOUNT = "/v2/sandboxes";
/** Uploads to a sandbox: files streaming in under HANGAR_SANDBOX_MAX_UPLOAD_MB, not HANGAR_MAX_BODY_MB. */
const SANDBOX_UPLOAD = /^\/v2\/sandboxes\/dataplane\/[^/]+\/upload$/;

/** `custom`: the project's Hono app (langgraph.json `http.app`), served in front of the routes. */
export function createServerApp(deps: ServerAppDeps, log: Logger, custom?: Hono<any>): Hono<AppEnv> {
  // Every row belongs to an organization: the API key's, or the default one when no keys are configured.
  const authentication = [apiKeyAuth({ envKeys: deps.config.apiKeys, repo: deps.storage.auth })];
  if (deps.auth) authentication.push(customAuthentication(deps.auth, { studio: deps.config.mode === "dev" }));
  return createApp({
    config: deps.config,
    log,
    unlimitedBodies: SANDBOX_UPLOAD,
    // The console's terminal sends its credentials as WebSocket subprotocols (a browser sets no headers).
    before: [consoleWebSocketCredentials],
    authentication,
    mountRoutes: (app) => mountRouteGroups(app, deps, log),
    ...(custom && { custom }),
  });
}

function mountRouteGroups(app: Hono<AppEnv>, deps: ServerAppDeps, log: Logger): void {
  const http = deps.config.http;
  const { boxes, volumes } = deps.sandboxes;
  if (!http.disable_meta) app.route("/", systemRoutes({ sandboxEngine: boxes.engine }));
  if (!http.disable_meta) app.route("/", metricsRoutes(deps));
  if (!http.disable_assistants) app.route("/", assistantRoutes(deps));
  if (!http.disable_threads) app.route("/", threadRoutes(deps));
  if (!http.disable_runs) app.route("/", runRoutes(deps));
  // The thread-centric streaming protocol: commands start runs, streams read threads.
  if (!http.disable_runs && !http.disable_threads) {
    const protocol = {
      ...deps,
      threadEvents: deps.threadEvents ?? new ThreadEventHub(deps.storage.threadEvents),
    };
    app.route("/", protocolRoutes(protocol));
    app.route("/", protocolSocketRoutes(protocol)); // the same over a WebSocket
  }
  if (!http.disable_runs) app.route("/", cronRoutes(deps)); // crons make runs: they go with the runs group
  if (!http.disable_store) app.route("/", storeRoutes(deps));
  if (!http.disable_a2a) app.route("/", a2aRoutes(deps, log));
  if (!http.disable_mcp) app.route("/", mcpRoutes(deps, log));
  const { config, auth, storage } = deps;
  app.route(SANDBOXES_MOUNT, sandboxRoutes({ config, auth, storage, boxes, volumes }));
  if (deps.ui) app.route("/", uiRoutes(deps.ui));
  app.route("/", consoleRoutes());
  // The API reference: /openapi.json is built from these routes at the first request.
  app.route("/", docsRoutes(app, { areas: apiDocAreas, customAuth: deps.auth && customAuthSchemes(config) }));
}

/**
 * Every area's metadata; a new area adds its `api-docs.ts` here. The two big ones (their response
 * schemas: 2.7 MB of heap) are imported when the document is first asked for, not at start-up.
 */
async function apiDocAreas(): Promise<ApiDocs[]> {
  const [{ agentApiDocs }, { sandboxApiDocs }] = await Promise.all([
    import("../agents/api-docs.js"),
    import("../sandboxes/api-docs.js"),
  ]);
  return [agentApiDocs, sandboxApiDocs, uiApiDocs, consoleApiDocs, protocolApiDocs];
}

/** What /openapi.json says the project's auth handler checks: its declared schemes, else a bearer token. */
function customAuthSchemes(config: Config): Record<string, Record<string, unknown>> {
  return (
    config.auth?.securitySchemes ?? {
      CustomAuth: {
        type: "http",
        scheme: "bearer",
        description:
          "Checked by the project's auth handler (langgraph.json `auth`). Declare what it really checks " +
          "with `auth.openapi.securitySchemes` in langgraph.json.",
      },
    }
  );
}
