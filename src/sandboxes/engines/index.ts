/**
 * Builds the sandbox runtime of one server process: a driver on this machine with its image store,
 * and the BoxService over it. Settings (environment):
 *
 * - `HANGAR_SANDBOX_ENGINE`: what isolates sandboxes: `runsc` (gVisor, gvisor.ts), `runc` (a user
 *   namespace on the host's kernel, runc.ts) or `bwrap` (bubblewrap, bwrap.ts). Default: the first of
 *   `runsc`, `runc` on PATH, else `bwrap`.
 * - `HANGAR_SANDBOX_IMAGES`: the image store (default `<dataDir>/images`).
 * - `HANGAR_SANDBOX_PIDS_MAX`: most processes per sandbox (default 1024).
 *
 * A sandbox's own files live in `<dataDir>/sandboxes/<id>/`; volumes in `<dataDir>/volumes/<id>/`.
 */

import path from "node:path";
import type { TenantLimits } from "../../config/limits.js";
import type { Logger } from "../../logger.js";
import type { Storage } from "../../storage/ports.js";
import { privateDir } from "../../storage/private-dir.js";
import { BoxService } from "../boxes.js";
import { LocalProvisioner } from "../provisioner.js";
import { orgSandboxAdmit } from "../quota.js";
import { BwrapDriver } from "./bwrap.js";
import { GvisorDriver } from "./gvisor.js";
import { onPath } from "./host-driver.js";
import { ImageStore } from "./images.js";
import { RuncDriver } from "./runc.js";

export const SANDBOX_ENGINE_ENV = "HANGAR_SANDBOX_ENGINE";
export const SANDBOX_IMAGES_ENV = "HANGAR_SANDBOX_IMAGES";
export const SANDBOX_PIDS_MAX_ENV = "HANGAR_SANDBOX_PIDS_MAX";

const ENGINES = { runsc: GvisorDriver, runc: RuncDriver, bwrap: BwrapDriver };
export type SandboxEngine = keyof typeof ENGINES;

/** The engine the settings name, or the best one this machine has. */
export function sandboxEngine(env: NodeJS.ProcessEnv = process.env): SandboxEngine {
  const named = env[SANDBOX_ENGINE_ENV];
  if (named === undefined || named === "")
    return onPath("runsc") ? "runsc" : onPath("runc") ? "runc" : "bwrap";
  if (!Object.hasOwn(ENGINES, named)) {
    throw new Error(
      `${SANDBOX_ENGINE_ENV} must be one of ${Object.keys(ENGINES).join(", ")}, got '${named}'`,
    );
  }
  return named as SandboxEngine;
}

/** Where a data dir's sandboxes keep their own files, and the image store they boot from. */
export function sandboxDirs(dataDir: string, env: NodeJS.ProcessEnv = process.env) {
  return {
    stateDir: path.join(dataDir, "sandboxes"),
    imagesDir: path.resolve(env[SANDBOX_IMAGES_ENV] ?? path.join(dataDir, "images")),
  };
}

export function createSandboxRuntime(opts: {
  dataDir: string;
  storage: Pick<Storage, "sandboxes" | "sandboxBoxes">;
  log: Logger;
  env?: NodeJS.ProcessEnv;
  /** HANGAR_SANDBOXES_PER_ORG, HANGAR_SANDBOX_ORG_CPU / _MEMORY: checked as sandboxes are added. */
  limits?: TenantLimits["sandboxes"];
}): BoxService {
  const env = opts.env ?? process.env;
  const { stateDir, imagesDir } = sandboxDirs(opts.dataDir, env);
  const volumes = new LocalProvisioner(path.join(opts.dataDir, "volumes"));
  // What sandboxes write lands in these: other local accounts may not enter them (data-dir.ts).
  for (const dir of [stateDir, volumes.root]) privateDir(dir);
  const pidsMax = Number(env[SANDBOX_PIDS_MAX_ENV] ?? 1024);
  if (!Number.isInteger(pidsMax) || pidsMax < 8) {
    throw new Error(
      `${SANDBOX_PIDS_MAX_ENV} must be an integer of at least 8, got '${env[SANDBOX_PIDS_MAX_ENV]}'`,
    );
  }
  let service: BoxService | null = null;
  const driver = new ENGINES[sandboxEngine(env)]({
    stateDir,
    images: new ImageStore(imagesDir, stateDir),
    volumePath: (id) => volumes.pathOf(id),
    volumesDir: volumes.root,
    pidsMax,
    onExit: (id, reason) => service?.onSandboxExit(id, reason),
  });
  service = new BoxService({
    boxes: opts.storage.sandboxBoxes,
    sandboxes: opts.storage.sandboxes,
    driver,
    log: opts.log,
    ...(opts.limits && { admit: orgSandboxAdmit(opts.limits) }),
  });
  return service;
}
