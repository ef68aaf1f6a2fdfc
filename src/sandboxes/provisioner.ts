/**
 * The provisioner port: where a volume's backing storage comes from. The control plane records a
 * volume first (name, size, quota: atomic in storage) and then asks the provisioner for the storage;
 * the provisioner never decides names, sizes or quotas.
 *
 * Backing storage is keyed by the volume's `id`, which never changes, so a rename never touches it.
 *
 * Drivers:
 * - `LocalProvisioner` (here): one directory per volume under `<dataDir>/volumes/<id>`. Sizes are
 *   accounting only (a directory has no capacity); the quota still applies to the recorded sizes.
 * - A Kubernetes driver would create a PersistentVolumeClaim per volume (`storageClassName` from
 *   `storage_class`, `resources.requests.storage` from the size), patch the request on resize (PVC
 *   expansion only grows, which matches the API's grow-only rule) and delete the claim on release.
 */

import { mkdir, rm } from "node:fs/promises";
import path from "node:path";

export interface ProvisionedVolume {
  id: string;
  org_id: string;
  name: string;
  size_bytes: number;
  storage_class: string;
}

export interface VolumeProvisioner {
  /** Storage classes a volume may ask for; anything else is refused with a 422. */
  readonly storageClasses: readonly string[];
  /** Used when a create request names none. */
  readonly defaultStorageClass: string;
  /** Creates the backing storage of a newly recorded volume. Idempotent. */
  provision(volume: ProvisionedVolume): Promise<void>;
  /** Grows the backing storage to `volume.size_bytes` (called only when the size grew). */
  resize(volume: ProvisionedVolume): Promise<void>;
  /** Removes the backing storage of a deleted volume, data included. Idempotent. */
  release(volume: ProvisionedVolume): Promise<void>;
}

/** One directory per volume: created on create, kept on rename (keyed by id), removed on delete. */
export class LocalProvisioner implements VolumeProvisioner {
  readonly storageClasses = ["standard"] as const;
  readonly defaultStorageClass = "standard";

  /** `root` is `<dataDir>/volumes`; it is created on the first provision. */
  constructor(readonly root: string) {}

  /** The directory that backs the volume with this id. */
  pathOf(id: string): string {
    // Ids are server-generated UUIDs; refuse anything that could step outside the root anyway.
    if (!/^[0-9a-f-]{36}$/i.test(id)) throw new Error(`not a volume id: ${id}`);
    return path.join(this.root, id);
  }

  async provision(volume: ProvisionedVolume): Promise<void> {
    await mkdir(this.pathOf(volume.id), { recursive: true });
  }

  async resize(_volume: ProvisionedVolume): Promise<void> {
    // A directory has no capacity to grow; the new size is recorded (and counted) by the control plane.
  }

  async release(volume: ProvisionedVolume): Promise<void> {
    await rm(this.pathOf(volume.id), { recursive: true, force: true });
  }
}
