/**
 * The image store of the local sandbox driver: how a template's `image` becomes a root filesystem.
 *
 * - `<imagesDir>/<image>/` (a directory per image name; `python:3.12-slim` is the directory
 *   `python:3.12-slim`, `org/img:tag` is `org/img:tag`): a complete root filesystem, for example the
 *   output of `docker export` unpacked there. It needs `/bin/sh`, and `cat` for file downloads.
 * - The built-in image `BUILTIN_IMAGE`: the host's own `/usr` and `/etc` (so `/bin/sh`, `bash`,
 *   coreutils and whatever the host has installed work), with the host's secrets in `/etc`
 *   (`shadow`, `gshadow`, `ssh/`, `ssl/private`, `sudoers*`) hidden, and an empty skeleton for the rest.
 *
 * An image is a list of read-only layers, each grafted at a path; the driver puts a private writable
 * overlay over each, so a sandbox may change any file and no change reaches the image or another box.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";

export const BUILTIN_IMAGE = "hangar/host";

export interface ImageLayer {
  /** Read-only directories, uppermost first (overlayfs `lowerdir` order). */
  lower: string[];
  /** Where the layer appears in the sandbox: `/` first, then grafts such as `/usr`. */
  at: string;
}

export class ImageNotFound extends Error {}

/** Host files in /etc that a sandbox must not read (it runs as uid 0, so mode bits alone do not hide them). */
const HIDDEN_ETC = ["shadow", "shadow-", "gshadow", "gshadow-", "ssh", "ssl/private", "sudoers", "sudoers.d"];
const SKELETON_DIRS = [
  "root",
  "home",
  "tmp",
  "var/tmp",
  "var/log",
  "opt",
  "srv",
  "mnt",
  "run",
  "usr",
  "etc",
  "proc",
  "dev",
];
const MERGED_USR_LINKS = ["bin", "lib", "lib64", "sbin"];

const run = promisify(execFile);

export class ImageStore {
  #builtin: Promise<ImageLayer[]> | null = null;

  /** `imagesDir` holds one root filesystem per image name; `stateDir` is where the built-in image's skeleton is made. */
  constructor(
    readonly imagesDir: string,
    readonly stateDir: string,
  ) {}

  async resolve(image: string): Promise<ImageLayer[]> {
    if (image === BUILTIN_IMAGE) {
      this.#builtin ??= this.#makeBuiltin();
      return this.#builtin;
    }
    const dir = path.resolve(this.imagesDir, image);
    // The name is the user's: it must stay inside the store.
    if (!dir.startsWith(path.resolve(this.imagesDir) + path.sep) || image.includes(",")) {
      throw new ImageNotFound(`Image '${image}' is not a valid image name for the local image store`);
    }
    const isDir = await stat(dir).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (!isDir) {
      throw new ImageNotFound(
        `Image '${image}' not found: the local image store has no directory ${dir} ` +
          `(put a root filesystem there, or use the built-in image '${BUILTIN_IMAGE}')`,
      );
    }
    return [{ lower: [dir], at: "/" }];
  }

  /** The skeleton root and a mask layer of overlayfs whiteouts that hides HIDDEN_ETC; made once per process. */
  async #makeBuiltin(): Promise<ImageLayer[]> {
    const base = path.join(this.stateDir, "builtin-image");
    const skeleton = path.join(base, "root");
    const etcMask = path.join(base, "etc-mask");
    for (const dir of SKELETON_DIRS) await mkdir(path.join(skeleton, dir), { recursive: true });
    await run("chmod", ["1777", path.join(skeleton, "tmp"), path.join(skeleton, "var/tmp")]);
    for (const link of MERGED_USR_LINKS) {
      const at = path.join(skeleton, link);
      if (!existsSync(at)) await symlink(`usr/${link}`, at).catch(() => {});
    }
    await writeFile(path.join(skeleton, "etc", ".hangar-builtin"), "");
    for (const hidden of HIDDEN_ETC) {
      const at = path.join(etcMask, hidden);
      if (existsSync(at)) continue;
      await mkdir(path.dirname(at), { recursive: true });
      // A character device 0:0 is overlayfs's whiteout: the lower file does not exist in the sandbox.
      await run("mknod", [at, "c", "0", "0"]);
    }
    return [
      { lower: [skeleton], at: "/" },
      { lower: ["/usr"], at: "/usr" },
      { lower: [etcMask, "/etc"], at: "/etc" },
    ];
  }
}
