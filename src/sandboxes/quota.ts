/**
 * The default organization's sandbox storage quota, from `HANGAR_SANDBOX_STORAGE_QUOTA`.
 *
 * The quota caps the sum of an organization's volume sizes. The default, 500Gi, is the figure the
 * sandbox API's own examples use: far above what a development machine creates by hand (so nobody
 * meets it by accident), yet it stops a runaway script from recording petabytes of volumes. With the
 * local provisioner sizes are accounting only, so the quota is the one limit on what clients claim.
 *
 * Read from `process.env` here, in one place, until `Config` grows a field for it; `startServer`
 * applies langgraph.json `env` to `process.env` before the routes are built, so both sources work.
 */
import { ConfigError } from "../config/errors.js";
import { formatGi, QUANTITY_HINT, QuantityError, toBytesOrZero } from "./quantity.js";

export const SANDBOX_STORAGE_QUOTA_ENV = "HANGAR_SANDBOX_STORAGE_QUOTA";
export const DEFAULT_SANDBOX_STORAGE_QUOTA = "500Gi";

/** The quota in bytes (0 allowed: no volume may be created). Throws ConfigError on a bad value. */
export function sandboxStorageQuotaFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[SANDBOX_STORAGE_QUOTA_ENV]?.trim();
  const text = raw ? raw : DEFAULT_SANDBOX_STORAGE_QUOTA;
  try {
    return toBytesOrZero(text);
  } catch (err) {
    if (err instanceof QuantityError) {
      throw new ConfigError(`${SANDBOX_STORAGE_QUOTA_ENV}=${raw}: ${err.message}; expected ${QUANTITY_HINT}`);
    }
    throw err;
  }
}

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
