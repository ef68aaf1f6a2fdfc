/**
 * The one place that decides whether the configured bind address may be opened. Today Hangar has no
 * authentication, so a non-loopback bind exposes every assistant, thread and the store to whoever can
 * reach the port: it is allowed, loudly. When auth lands, this is where an open non-loopback bind gets
 * refused (by throwing a ConfigError, which the CLI reports and exits 1 on).
 */
import type { Config } from "../config/index.js";
import type { Logger } from "./logger.js";

export function guardNetworkExposure(config: Config, log: Logger): void {
  if (isLoopback(config.host)) return;
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
