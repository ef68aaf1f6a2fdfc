/**
 * The sandbox side of one server: the driver on this machine (sandboxes/engines/), BoxService over it
 * (sandboxes and pools), and the volumes and templates, all on the one local provisioner.
 */
import path from "node:path";
import type { Config } from "../config/index.js";
import type { Logger } from "../logger.js";
import { BoxService } from "../sandboxes/boxes.js";
import { createSandboxDriver, sandboxDirs } from "../sandboxes/engines/index.js";
import { LocalProvisioner } from "../sandboxes/provisioner.js";
import { orgSandboxAdmit } from "../sandboxes/quota.js";
import { VolumeTemplateService } from "../sandboxes/volumes-templates.js";
import type { Storage } from "../storage/ports.js";
import { privateDir } from "../storage/private-dir.js";

export interface Sandboxes {
  /** Sandboxes, pools and their driver; started after the server listens, closed before storage. */
  boxes: BoxService;
  volumes: VolumeTemplateService;
}

export function buildSandboxes(
  config: Pick<Config, "dataDir" | "sandboxes" | "limits">,
  storage: Pick<Storage, "sandboxes" | "sandboxBoxes">,
  log: Logger,
): Sandboxes {
  const provisioner = new LocalProvisioner(path.join(config.dataDir, "volumes"));
  // What sandboxes write lands in these: other local accounts may not enter them (data-dir.ts).
  for (const dir of [sandboxDirs(config.dataDir).stateDir, provisioner.root]) privateDir(dir);
  const boxes: BoxService = new BoxService({
    boxes: storage.sandboxBoxes,
    sandboxes: storage.sandboxes,
    driver: createSandboxDriver({
      dataDir: config.dataDir,
      settings: config.sandboxes,
      volumes: provisioner,
      onExit: (id, reason) => boxes.onSandboxExit(id, reason),
    }),
    log,
    admit: orgSandboxAdmit(config.limits.sandboxes),
  });
  const volumes = new VolumeTemplateService({
    repo: storage.sandboxes,
    provisioner,
    defaultQuotaBytes: config.sandboxes.storageQuotaBytes,
    imageProblem: (image) => boxes.imageProblem(image),
    limits: config.limits.sandboxes,
  });
  return { boxes, volumes };
}
