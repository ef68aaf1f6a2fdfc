/**
 * What LangGraph's platform provides to graph code, provided by Hangar in every thread that loads graphs
 * (before they load: graphs may use these at import time):
 *
 * - the SDK logger: `getLogger()` from `@langchain/langgraph-sdk/logging`, wired to Hangar's log;
 * - the loopback client: `new Client()` with no `apiUrl` in graph code reaches this server (the SDK reads
 *   `Symbol.for("langgraph_api:fetch")` and `…:url`); requests go over loopback HTTP to the listening
 *   server, so they stream and pass through authentication like any other;
 * - `LANGGRAPH_API_URL`, once the server listens (unless the environment sets it).
 */
import type { Logger } from "../../logger.js";

const SDK_LOGGER = Symbol.for("langgraph.api.sdk-logger");
const LOOPBACK_FETCH = Symbol.for("langgraph_api:fetch");
const LOOPBACK_URL = Symbol.for("langgraph_api:url");
/** The base URL clients built at import time get; the loopback fetch sends their requests to the real one. */
const PLACEHOLDER_URL = "http://hangar.loopback";

type Level = "error" | "warn" | "info" | "debug";
/** The SDK's (winston's) level names, onto Hangar's four. */
const LEVELS: Record<string, Level> = {
  error: "error",
  warn: "warn",
  help: "info",
  data: "info",
  info: "info",
  prompt: "info",
  http: "info",
  input: "info",
  debug: "debug",
  verbose: "debug",
  silly: "debug",
};

/** A logger with the SDK's interface (`logger.info("msg", {k: v})`, `logger.info({message, …})`). */
export function sdkLogger(log: Logger): Record<string, (...args: unknown[]) => unknown> {
  const logger: Record<string, (...args: unknown[]) => unknown> = {};
  for (const [name, level] of Object.entries(LEVELS)) {
    logger[name] = (first: unknown, ...rest: unknown[]) => {
      let message: string;
      let fields: Record<string, unknown> = {};
      if (typeof first === "object" && first !== null && !(first instanceof Error)) {
        const { message: m, ...others } = first as Record<string, unknown>;
        message = String(m ?? "");
        fields = others;
      } else message = first instanceof Error ? first.message : String(first);
      for (const extra of rest) {
        if (typeof extra === "object" && extra !== null && !Array.isArray(extra))
          Object.assign(fields, extra);
        else message += ` ${String(extra)}`;
      }
      log[level](message, { source: "graph", ...fields });
      return logger;
    };
  }
  return logger;
}

/**
 * Installs the host's globals in this thread. `serverUrl` resolves once the server listens (null: this
 * process serves no HTTP and knows no URL — a loopback request then goes to `configuredUrl`,
 * LANGGRAPH_API_URL, or fails with a message saying so). Returns the API URL runs tell graph code
 * (`langgraph_api_url`): the configured one, else this server's once it listens.
 */
export function provideGraphHost(
  log: Logger,
  serverUrl: Promise<string | null>,
  configuredUrl: string | undefined,
): () => string | undefined {
  let apiUrl = configuredUrl;
  const host = globalThis as Record<symbol, unknown>;
  host[SDK_LOGGER] = sdkLogger(log);
  host[LOOPBACK_URL] = PLACEHOLDER_URL;
  host[LOOPBACK_FETCH] = async (input: string | URL | Request, init?: RequestInit) => {
    const base = (await serverUrl) ?? configuredUrl;
    if (!base)
      throw new Error("This process serves no HTTP API: set LANGGRAPH_API_URL for graph code's Client");
    const url = new URL(input instanceof Request ? input.url : input);
    // Appended, not resolved: the base may carry a path (`http.mount_prefix`).
    const target = new URL(base.replace(/\/$/, "") + url.pathname + url.search);
    if (!(input instanceof Request)) return fetch(target, init);
    const body = input.body ? await input.arrayBuffer() : undefined;
    return fetch(target, {
      method: input.method,
      headers: input.headers,
      body,
      signal: input.signal,
      ...init,
    });
  };
  void serverUrl.then((url) => {
    if (!url) return;
    apiUrl ??= url;
    // Graph code's own environment: a Client built with no URL in a child process finds the server.
    process.env.LANGGRAPH_API_URL ??= url;
  });
  return () => apiUrl;
}
