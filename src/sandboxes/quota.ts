/**
 * Sandbox quotas and limits as the API words them: the storage quota's 429 (the quota itself is
 * `HANGAR_SANDBOX_STORAGE_QUOTA`, config/settings.ts), one sandbox's resources, an organization's sandboxes.
 */
import type { TenantLimits } from "../config/limits.js";
import type { Admit, SandboxUnit, TemplateResources } from "../storage/sandbox-ports.js";
import { formatGi, toBytes, toMillicores } from "./quantity.js";

type SandboxLimits = TenantLimits["sandboxes"];

/** The 429 detail: states the limit, the current usage and the requested increase. */
export function quotaExceededMessage(
  org: string,
  q: { quota_bytes: number; usage_bytes: number; increase_bytes: number },
): string {
  // Worded so the official client classifies it as a `storage` quota (it looks for the word "storage",
  // and would read "volume"/"sandbox" + "limit" as a count quota).
  return (
    `Storage quota exceeded for organization '${org}': limit ${formatGi(q.quota_bytes)}, ` +
    `current usage ${formatGi(q.usage_bytes)}, requested increase ${formatGi(q.increase_bytes)}.`
  );
}

// ---- sandbox limits (HANGAR_SANDBOX_MAX_* per sandbox, HANGAR_SANDBOXES_PER_ORG / _ORG_* per organization)

/** Why a template's `resources` exceed one sandbox's limits: 422 issues naming each field. */
export function resourceProblems(
  resources: TemplateResources,
  limits: SandboxLimits,
): { loc: string[]; msg: string; type: string }[] {
  const over = (field: string, asked: number, max: number, shown: string, variable: string) =>
    asked > max
      ? [
          {
            loc: ["body", "resources", field],
            msg: `${field} ${resources[field as keyof TemplateResources]} is more than one sandbox may have: at most ${shown} (${variable})`,
            type: "value_error",
          },
        ]
      : [];
  const storage = resources.storage == null ? 0 : toBytes(resources.storage);
  return [
    ...over(
      "cpu",
      toMillicores(resources.cpu),
      limits.cpuMillis,
      cores(limits.cpuMillis),
      "HANGAR_SANDBOX_MAX_CPU",
    ),
    ...over(
      "memory",
      toBytes(resources.memory),
      limits.memoryBytes,
      formatGi(limits.memoryBytes),
      "HANGAR_SANDBOX_MAX_MEMORY",
    ),
    ...over(
      "storage",
      storage,
      limits.storageBytes,
      formatGi(limits.storageBytes),
      "HANGAR_SANDBOX_MAX_STORAGE",
    ),
  ];
}

const cores = (millis: number) => `${millis / 1000} CPU`;

/**
 * The organization check run inside the storage transaction that adds sandboxes (a create, a claim of a
 * warm one, a pool created or grown): the 429 message when `adding` would take the organization past a
 * limit, else null. Worded for the official clients, which read the quota type from the message: the
 * count as the reference server words it ("sandbox" + "limit"), CPU and memory without "sandbox".
 */
export function orgSandboxAdmit(limits: SandboxLimits): Admit {
  return (held, adding) => {
    if (held.length + adding.length > limits.perOrg)
      return `Limit of ${limits.perOrg} sandbox(es) per organization exceeded. Current usage: ${held.length} sandboxes, Requested: ${adding.length} additional.`;
    const sum = (units: SandboxUnit[], of: (u: SandboxUnit) => number) =>
      units.reduce((n, u) => n + of(u), 0);
    const cpu = (u: SandboxUnit) => toMillicores(u.cpu);
    const memory = (u: SandboxUnit) => toBytes(u.memory);
    if (sum(held, cpu) + sum(adding, cpu) > limits.orgCpuMillis)
      return `CPU limit per organization exceeded: limit ${cores(limits.orgCpuMillis)}, current usage ${cores(sum(held, cpu))}, requested ${cores(sum(adding, cpu))} additional.`;
    if (sum(held, memory) + sum(adding, memory) > limits.orgMemoryBytes)
      return `Memory limit per organization exceeded: limit ${formatGi(limits.orgMemoryBytes)}, current usage ${formatGi(sum(held, memory))}, requested ${formatGi(sum(adding, memory))} additional.`;
    return null;
  };
}
