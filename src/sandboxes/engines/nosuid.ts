/**
 * What a sandbox writes lands on the host (its own layer under `<dataDir>/sandboxes`, its volumes under
 * `<dataDir>/volumes`). On bwrap and gVisor root inside writes as host root: a `chmod 4755` there
 * would leave a setuid-root program on the host. So those directories are mounts of their own with
 * `nosuid,nodev` (each bound over itself, then remounted), and the kernel ignores set-id bits, file
 * capabilities and device nodes there whatever a sandbox did. Sandboxes see their volumes through the
 * same mounts (a bind keeps its source's flags); inside, their own layer is an overlay of its own, so
 * set-id programs of an image work there as before (and bwrap's `no_new_privs` ignores them anyway).
 *
 * A directory already on a mount with both flags (a `/tmp` mounted so, an operator's own mount) is
 * left alone. The server unmounts what it mounted when it closes; one killed leaves its mounts, which
 * the next server on the data dir finds and keeps.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** The flags every directory sandboxes write to must be mounted with. */
const REQUIRED = ["nosuid", "nodev"];

/**
 * Per-mount flags `mount -o remount,bind` takes: a classic mount(2) remount sets exactly the flags it is
 * given, so those the mount has (`noexec`, `ro`, …) are passed again or it would lose them.
 */
const PER_MOUNT_FLAGS = new Set([
  "ro",
  "rw",
  "noexec",
  "nosymfollow",
  "noatime",
  "nodiratime",
  "relatime",
  "strictatime",
]);

/** The mount `dir` is on: its mount point and its per-mount options. */
async function mountOf(dir: string): Promise<{ target: string; options: string[] }> {
  const { stdout } = await execFileAsync("findmnt", [
    "-J",
    "-o",
    "TARGET,VFS-OPTIONS",
    "--target",
    dir,
  ]).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "ENOENT") throw err;
    throw new Error(
      "findmnt was not found: install util-linux (it finds the mount a sandbox directory is on, to make it nosuid,nodev)",
    );
  });
  const found = (JSON.parse(stdout) as { filesystems: { target: string; "vfs-options": string }[] })
    .filesystems;
  // The last is the mount on top when several are stacked at one point.
  const mount = found.at(-1)!;
  return { target: mount.target, options: mount["vfs-options"].split(",") };
}

/**
 * Makes `dir` (an existing directory, given as an absolute path without symlinks) a `nosuid,nodev`
 * mount unless it is on one; returns whether it mounted it (then `release` unmounts it).
 */
export async function ensureNosuid(dir: string): Promise<boolean> {
  const mount = await mountOf(dir);
  if (REQUIRED.every((flag) => mount.options.includes(flag))) return false;
  const bound = mount.target !== dir;
  try {
    if (bound) await execFileAsync("mount", ["--bind", dir, dir]);
    const kept = mount.options.filter((o) => PER_MOUNT_FLAGS.has(o));
    await execFileAsync("mount", ["-o", ["remount", "bind", ...kept, ...REQUIRED].join(","), dir]);
  } catch (err) {
    if (bound) await releaseNosuid(dir);
    const { stderr, message } = err as { stderr?: string; message: string };
    throw new Error(
      `could not mount ${dir} nosuid,nodev (what sandboxes write must not be runnable set-id on the host): ${(stderr || message).trim()}`,
    );
  }
  return bound;
}

/** Unmounts what `ensureNosuid` mounted (lazily when something still holds it). */
export async function releaseNosuid(dir: string): Promise<void> {
  await execFileAsync("umount", [dir]).catch(() => execFileAsync("umount", ["-l", dir]).catch(() => {}));
}
