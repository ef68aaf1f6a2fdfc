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

// ---- sandboxes ---------------------------------------------------------------------------------

/** What a driver needs to run a sandbox: resolved from the box, its template and its volumes. */
export interface SandboxSpec {
  id: string;
  /** The hostname inside (the box's name when it booted). */
  hostname: string;
  image: string;
  cpuMillicores: number;
  memoryBytes: number;
  /** The most the sandbox's own files (its writable layer) may take (the template's `storage`); null: no limit. */
  storageBytes: number | null;
  /** The template's volumes, by the volume's id (its backing storage) and where they appear. */
  mounts: { volumeId: string; mountPath: string }[];
}

export interface ExecRequest {
  /** Run as `[shell, "-c", command]`. */
  shell: string;
  command: string;
  env: Record<string, string>;
  cwd: string;
}

/** A command running in a sandbox. Its output and input are byte streams. */
export interface ExecProcess {
  readonly stdout: NodeJS.ReadableStream;
  readonly stderr: NodeJS.ReadableStream;
  readonly stdin: NodeJS.WritableStream;
  /** Kills the command and every process it started that did not leave its process group. */
  kill(): void;
  /** The exit code; 128 + n when killed by signal n. Output may still be draining. */
  readonly exited: Promise<number>;
}

/**
 * The sandbox driver port: runs sandboxes and commands in them. The control plane decides names,
 * lifecycles, TTLs and pools; a driver only boots, runs, stops and removes.
 *
 * - `HostSandboxDriver` (runtime/host-driver.ts) on this machine, with gVisor (`runsc`, gvisor.ts) or
 *   bubblewrap (bwrap.ts) isolating the processes.
 * - A Kubernetes driver (docs/sandboxes.md) would boot a pod per sandbox (gVisor runtime class, the
 *   volumes as PVCs) and exec through the pod's exec API.
 */
export interface SandboxDriver {
  /** What isolates the sandboxes (`runsc`, `bwrap`), as `/info` reports it. */
  readonly engine: string;
  /** Why this driver cannot run sandboxes here, or null when it can. */
  unavailable(): Promise<string | null>;
  /** Why no sandbox could boot from `image` (its image store has no such image), or null. */
  imageProblem(image: string): Promise<string | null>;
  /** Starts the sandbox (idempotent for a running one); resolves once commands can run. */
  boot(spec: SandboxSpec): Promise<void>;
  isRunning(id: string): boolean;
  exec(id: string, request: ExecRequest): ExecProcess;
  /** Stops every process of the sandbox; its files stay. Idempotent. */
  stop(id: string): Promise<void>;
  /** Stops the sandbox and deletes its files. Idempotent. */
  remove(id: string): Promise<void>;
  /** Stops every sandbox (the server is shutting down); files stay. */
  close(): Promise<void>;
  /** At start, before any boot: ends what a server killed on the same data dir left running. */
  recover?(): Promise<void>;
}
