/**
 * The `checkpointer` and `webhooks` sections of langgraph.json (shape validated by project-file.ts),
 * resolved into what the runtime uses: the thread TTL policy, and the webhook URL policy with header
 * templates rendered from the environment (as the official server does at start-up).
 */

import type { ThreadTtl } from "../storage/ports.js";
import { ConfigError } from "./errors.js";
import type { CheckpointerSection, WebhooksSection } from "./project-file.js";

/** `checkpointer.ttl`: how threads expire and how often expired ones are swept (defaults filled in). */
export interface ThreadTtlConfig {
  /**
   * The TTL of a thread created without one of its own (`default_ttl` minutes after its last update,
   * then `strategy`: deleted, or pruned to its latest checkpoints); absent: none.
   */
  default?: ThreadTtl;
  /** Every process sweeps this often, with or without `checkpointer.ttl` (a thread may have its own TTL). */
  sweepIntervalMinutes: number;
  /** At most this many threads per sweep (a sweep that reaches it continues at once). */
  sweepLimit: number;
}

/** `webhooks.url`, with the official defaults filled in. */
export interface WebhookUrlPolicy {
  requireHttps: boolean;
  /** Exact host names and `*.domain` wildcards (subdomains only); empty: any host. */
  allowedDomains: string[];
  /** Empty: any port. A URL without a port uses 443 (https) or 80 (http). */
  allowedPorts: number[];
  maxUrlLength: number;
  /** Refuses relative URLs (this server's own routes), `localhost` and loopback addresses. */
  disableLoopback: boolean;
  /** Refuses private (RFC 1918, CGN, unique-local) addresses. */
  disablePrivateIps: boolean;
}

export interface WebhooksConfig {
  /** Added to every delivery, templates already rendered. */
  headers: Record<string, string>;
  /** Absent: no URL policy (any URL the run schema accepts). */
  url?: WebhookUrlPolicy;
  /** Absent: the whole payload is sent. */
  allowedFields?: string[];
}

const DEFAULT_ENV_PREFIX = "LG_WEBHOOK_";

export function resolveThreadTtl(section: CheckpointerSection | undefined): ThreadTtlConfig {
  const ttl = section?.ttl;
  return {
    ...(ttl?.default_ttl != null && {
      default: { strategy: ttl.strategy ?? "delete", minutes: ttl.default_ttl },
    }),
    sweepIntervalMinutes: ttl?.sweep_interval_minutes ?? 5,
    sweepLimit: ttl?.sweep_limit ?? 1000,
  };
}

/** `${{ env.VAR }}` in a header value. */
const TEMPLATE = /\$\{\{\s*([^}]+?)\s*\}\}/g;

/**
 * Resolves `webhooks`. Header templates name variables that must start with `env_prefix` (default
 * `LG_WEBHOOK_`; `""` allows any) and must be set, in the process environment or langgraph.json `env`.
 */
export function resolveWebhooks(
  configPath: string,
  section: WebhooksSection | undefined,
  env: Record<string, string | undefined>,
): WebhooksConfig | undefined {
  if (!section) return undefined;
  const prefix = section.env_prefix ?? DEFAULT_ENV_PREFIX;
  const headers: Record<string, string> = {};
  for (const [name, template] of Object.entries(section.headers ?? {})) {
    const at = `${configPath}: webhooks.headers${/^[A-Za-z_]\w*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`}`;
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name))
      throw new ConfigError(`${at}: not a valid HTTP header name`);
    const value = template.replace(TEMPLATE, (_, expr: string) => {
      if (!expr.startsWith("env."))
        throw new ConfigError(`${at}: only \${{ env.VAR }} references are allowed, got "${expr}"`);
      const variable = expr.slice("env.".length);
      if (!/^[A-Za-z_]\w*$/.test(variable))
        throw new ConfigError(`${at}: "${variable}" is not an environment variable name`);
      if (!variable.startsWith(prefix))
        throw new ConfigError(
          `${at}: environment variable ${variable} must start with webhooks.env_prefix "${prefix}"`,
        );
      const found = env[variable];
      if (found === undefined) throw new ConfigError(`${at}: environment variable ${variable} is not set`);
      return found;
    });
    if (/[\r\n\0]/.test(value)) throw new ConfigError(`${at}: the value must not contain line breaks`);
    headers[name] = value;
  }
  const url = section.url;
  return {
    headers,
    ...(url && {
      // The official server's defaults for a `url` policy.
      url: {
        requireHttps: url.require_https ?? true,
        allowedDomains: (url.allowed_domains ?? []).map((d) => d.trim().toLowerCase()),
        allowedPorts: url.allowed_ports ?? [],
        maxUrlLength: url.max_url_length ?? 2048,
        disableLoopback: url.disable_loopback ?? false,
        disablePrivateIps: url.disable_private_ips ?? false,
      },
    }),
    ...(section.allowed_fields && { allowedFields: [...section.allowed_fields] }),
  };
}
