/**
 * Settings of single features, read from the environment (langgraph.json `env` under it, as the server
 * applies it to process.env): the public URL of A2A agent cards, the API URL graph code is told, how long
 * reading graph schemas may take, and the sandbox engine's settings. README "Configuration" lists them.
 */
import path from "node:path";
import { QUANTITY_HINT, QuantityError, toBytesOrZero } from "../sandboxes/quantity.js";
import { ConfigError } from "./errors.js";

type Env = Record<string, string | undefined>;

/** What can isolate sandboxes (sandboxes/engines/): gVisor, runc in a user namespace, bubblewrap. */
export const SANDBOX_ENGINES = ["runsc", "runc", "bwrap"] as const;
export type SandboxEngineName = (typeof SANDBOX_ENGINES)[number];

export interface SandboxSettings {
  /** `HANGAR_SANDBOX_ENGINE`; absent: the best one this machine has (sandboxes/engines/index.ts). */
  engine?: SandboxEngineName;
  /** `HANGAR_SANDBOX_IMAGES`, absolute; absent: `<dataDir>/images`. */
  imagesDir?: string;
  /** `HANGAR_SANDBOX_PIDS_MAX`: most processes per sandbox. */
  pidsMax: number;
  /** `HANGAR_SANDBOX_STORAGE_QUOTA`: the default organization's volume sizes together, in bytes. */
  storageQuotaBytes: number;
}

export const PUBLIC_URL_ENV = "HANGAR_PUBLIC_URL";
export const DEFAULT_SANDBOX_STORAGE_QUOTA = "500Gi";
const DEFAULT_PIDS_MAX = 1024;
export const DEFAULT_SCHEMA_RESOLVE_TIMEOUT_MS = 30_000;

/** A value, trimmed; empty counts as unset. */
const read = (env: Env, name: string) => env[name]?.trim() || undefined;

/**
 * The public base URL of this server as configured in `HANGAR_PUBLIC_URL` (e.g.
 * `https://agents.example.com` or `https://example.com/hangar`), without a trailing slash; null when
 * unset. Agent cards advertise `<base>/a2a/<assistant_id>`. Throws when the value is not an absolute
 * http(s) URL, so a typo fails at startup instead of producing cards nobody can reach.
 */
export function publicBaseUrl(env: Env): string | null {
  const raw = read(env, PUBLIC_URL_ENV);
  if (!raw) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${PUBLIC_URL_ENV} must be an absolute http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`${PUBLIC_URL_ENV} must be an absolute http(s) URL, got "${raw}"`);
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
}

/**
 * The default organization's sandbox storage quota, from `HANGAR_SANDBOX_STORAGE_QUOTA`.
 *
 * The quota caps the sum of an organization's volume sizes. The default, 500Gi, is the figure the
 * sandbox API's own examples use: far above what a development machine creates by hand (so nobody
 * meets it by accident), yet it stops a runaway script from recording petabytes of volumes. With the
 * local provisioner sizes are accounting only, so the quota is the one limit on what clients claim.
 * In bytes (0 allowed: no volume may be created). Throws ConfigError on a bad value.
 */
export function sandboxStorageQuotaFromEnv(env: Env): number {
  const raw = read(env, "HANGAR_SANDBOX_STORAGE_QUOTA");
  try {
    return toBytesOrZero(raw ?? DEFAULT_SANDBOX_STORAGE_QUOTA);
  } catch (err) {
    if (err instanceof QuantityError) {
      throw new ConfigError(`HANGAR_SANDBOX_STORAGE_QUOTA=${raw}: ${err.message}; expected ${QUANTITY_HINT}`);
    }
    throw err;
  }
}

/** The sandbox engine's settings; `HANGAR_SANDBOX_IMAGES` is relative to `cwd`. */
export function resolveSandboxSettings(env: Env, cwd: string): SandboxSettings {
  const engine = read(env, "HANGAR_SANDBOX_ENGINE");
  if (engine !== undefined && !(SANDBOX_ENGINES as readonly string[]).includes(engine)) {
    throw new ConfigError(
      `HANGAR_SANDBOX_ENGINE must be one of ${SANDBOX_ENGINES.join(", ")}, got '${engine}'`,
    );
  }
  const images = read(env, "HANGAR_SANDBOX_IMAGES");
  const pids = read(env, "HANGAR_SANDBOX_PIDS_MAX");
  const pidsMax = pids === undefined ? DEFAULT_PIDS_MAX : Number(pids);
  if (!Number.isInteger(pidsMax) || pidsMax < 8) {
    throw new ConfigError(`HANGAR_SANDBOX_PIDS_MAX must be an integer of at least 8, got '${pids}'`);
  }
  return {
    ...(engine && { engine: engine as SandboxEngineName }),
    ...(images && { imagesDir: path.resolve(cwd, images) }),
    pidsMax,
    storageQuotaBytes: sandboxStorageQuotaFromEnv(env),
  };
}

/**
 * `LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS`: how long one reading of graph schemas from source may take
 * (runtime/graphs/schemas.ts); a value that is not a positive integer means the default.
 */
export function schemaResolveTimeoutMs(env: Env): number {
  const value = Number.parseInt(env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS ?? "", 10);
  return Number.isFinite(value) && value > 0 ? value : DEFAULT_SCHEMA_RESOLVE_TIMEOUT_MS;
}
