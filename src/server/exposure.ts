/**
 * The one place that decides whether the configured bind address may be opened. With no API key
 * configured the API is open to whoever reaches the port: fine on loopback, refused for `hangar serve`
 * on any other address unless the operator says it is meant to be open (`--allow-unauthenticated`),
 * and loudly allowed for `hangar dev`.
 */
import { type Config, ConfigError } from "../config/index.js";
import type { Logger } from "../logger.js";

/** `authenticated`: API keys are configured, or the project's auth handler authenticates requests. */
export function guardNetworkExposure(config: Config, authenticated: boolean, log: Logger): void {
  if (authenticated || isLoopback(config.host)) return;
  if (config.mode === "serve" && !config.allowUnauthenticated) {
    throw new ConfigError(
      `Refusing to serve on ${config.host} without API keys: anyone who can reach this port could use every ` +
        "assistant, thread and sandbox. Create a key (hangar keys create --org <name>), set HANGAR_API_KEYS, " +
        "or pass --allow-unauthenticated (HANGAR_ALLOW_UNAUTHENTICATED=1) if the network is meant to be trusted.",
    );
  }
  log.warn(
    "listening on a non-loopback address without authentication: anyone who can reach this port can use " +
      "every assistant, thread and the store",
    { host: config.host },
  );
}

export function isLoopback(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, "$1");
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h) || h === "::ffff:127.0.0.1";
}
