/**
 * What one organization may hold: crons (how many, how often they fire) and sandboxes (each one's CPU,
 * memory and storage; how many, and their CPU and memory together). Read from `HANGAR_*` variables with
 * defaults derived from the machine; README "Configuration" and docs/sandboxes.md "Limits" list them.
 */
import { availableParallelism, totalmem } from "node:os";
import { QUANTITY_HINT, QuantityError, toBytes, toMillicores } from "../sandboxes/quantity.js";
import { ConfigError } from "./errors.js";

export interface TenantLimits {
  crons: {
    /** A schedule that fires more often than this is refused (422 naming `schedule`). */
    minIntervalSeconds: number;
    /** Crons one organization may have (429 past it). */
    perOrg: number;
  };
  sandboxes: {
    /** One sandbox's `resources` (a template asking for more is refused, 422 naming the field). */
    cpuMillis: number;
    memoryBytes: number;
    storageBytes: number;
    /** One organization's sandboxes, warm pool replicas included, and their CPU and memory together (429). */
    perOrg: number;
    orgCpuMillis: number;
    orgMemoryBytes: number;
  };
}

const GI = 1024 ** 3;

/** The defaults, from this machine: one sandbox at most the host; an organization at most 4 hosts' worth. */
export function defaultLimits(): TenantLimits {
  const cores = availableParallelism();
  return {
    crons: { minIntervalSeconds: 60, perOrg: 100 },
    sandboxes: {
      cpuMillis: cores * 1000,
      memoryBytes: totalmem(),
      storageBytes: 100 * GI,
      perOrg: 100,
      orgCpuMillis: 4 * cores * 1000,
      orgMemoryBytes: 4 * totalmem(),
    },
  };
}

type Env = Record<string, string | undefined>;

function count(env: Env, name: string, dflt: number, min = 0): number {
  const raw = env[name]?.trim();
  if (!raw) return dflt;
  if (!/^\d+$/.test(raw) || Number(raw) < min)
    throw new ConfigError(`${name}: must be an integer ≥ ${min}, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

function quantity(env: Env, name: string, dflt: number, parse: (s: string) => number): number {
  const raw = env[name]?.trim();
  if (!raw) return dflt;
  try {
    return parse(raw);
  } catch (err) {
    if (err instanceof QuantityError)
      throw new ConfigError(`${name}=${raw}: ${err.message}; expected ${QUANTITY_HINT}`);
    throw err;
  }
}

export function resolveLimits(env: Env): TenantLimits {
  const d = defaultLimits();
  return {
    crons: {
      minIntervalSeconds: count(env, "HANGAR_CRON_MIN_INTERVAL_SECONDS", d.crons.minIntervalSeconds),
      perOrg: count(env, "HANGAR_CRONS_PER_ORG", d.crons.perOrg),
    },
    sandboxes: {
      cpuMillis: quantity(env, "HANGAR_SANDBOX_MAX_CPU", d.sandboxes.cpuMillis, toMillicores),
      memoryBytes: quantity(env, "HANGAR_SANDBOX_MAX_MEMORY", d.sandboxes.memoryBytes, toBytes),
      storageBytes: quantity(env, "HANGAR_SANDBOX_MAX_STORAGE", d.sandboxes.storageBytes, toBytes),
      perOrg: count(env, "HANGAR_SANDBOXES_PER_ORG", d.sandboxes.perOrg),
      orgCpuMillis: quantity(env, "HANGAR_SANDBOX_ORG_CPU", d.sandboxes.orgCpuMillis, toMillicores),
      orgMemoryBytes: quantity(env, "HANGAR_SANDBOX_ORG_MEMORY", d.sandboxes.orgMemoryBytes, toBytes),
    },
  };
}
