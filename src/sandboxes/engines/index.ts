/**
 * The sandbox driver of one server process: the engine that isolates sandboxes, over its image store.
 * Settings (Config `sandboxes`, config/settings.ts):
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
import type { SandboxEngineName, SandboxSettings } from "../../config/settings.js";
import type { SandboxDriver } from "../provisioner.js";
import { BwrapDriver } from "./bwrap.js";
import { GvisorDriver } from "./gvisor.js";
import { onPath } from "./host-driver.js";
import { ImageStore } from "./images.js";
import { RuncDriver } from "./runc.js";

const ENGINES: Record<SandboxEngineName, typeof GvisorDriver | typeof RuncDriver | typeof BwrapDriver> = {
  runsc: GvisorDriver,
  runc: RuncDriver,
  bwrap: BwrapDriver,
};

/** The engine the settings name, or the best one this machine has. */
export function sandboxEngine(named: SandboxEngineName | undefined): SandboxEngineName {
  return named ?? (onPath("runsc") ? "runsc" : onPath("runc") ? "runc" : "bwrap");
}

/** Where a data dir's sandboxes keep their own files, and the image store they boot from. */
export function sandboxDirs(dataDir: string, imagesDir?: string) {
  return {
    stateDir: path.join(dataDir, "sandboxes"),
    imagesDir: path.resolve(imagesDir ?? path.join(dataDir, "images")),
  };
}

export function createSandboxDriver(opts: {
  dataDir: string;
  settings: SandboxSettings;
  /** Where the volumes are: the host directory of each, and the one they are all in. */
  volumes: { root: string; pathOf(id: string): string };
  /** Told when a running sandbox's init exits without `stop` (BoxService.onSandboxExit). */
  onExit: (id: string, reason: string) => void;
}): SandboxDriver {
  const { stateDir, imagesDir } = sandboxDirs(opts.dataDir, opts.settings.imagesDir);
  return new ENGINES[sandboxEngine(opts.settings.engine)]({
    stateDir,
    images: new ImageStore(imagesDir, stateDir),
    volumePath: (id) => opts.volumes.pathOf(id),
    volumesDir: opts.volumes.root,
    pidsMax: opts.settings.pidsMax,
    onExit: opts.onExit,
  });
}
