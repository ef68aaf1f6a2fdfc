/**
 * The data directory holds every organization's threads, runs and files (the SQLite file, volumes,
 * sandboxes' own layers, the image store): only the server's user may read it. It is made 0700 and
 * what Hangar keeps at its top (`HANGAR_ENTRIES`) 0700 (directories) or 0600 (files); one made looser
 * before (an older Hangar, a `mkdir` by hand) is tightened at start, saying what changed.
 *
 * Only Hangar's own: another file at the top keeps its mode, and a data dir others share (sticky or
 * world-writable, as `/tmp` is) is never changed itself — a warning says its top is readable. A chmod
 * the system refuses (EPERM: a path another user owns) is a warning, never a failed start.
 *
 * Below the top nothing is changed: a sandbox's and a volume's files keep the modes their owners gave
 * them (a sandbox's `/tmp` is 1777 inside), and a 0700 directory above them already keeps every other
 * local account out.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import type { Logger } from "./logger.js";
import { isSharedDir, PRIVATE_DIR_MODE, tighten } from "./storage/private-dir.js";

/** What Hangar itself keeps at the top of its data dir (storage, sandbox-runtime): the paths it tightens. */
export const HANGAR_ENTRIES = [
  "hangar.sqlite",
  "hangar.sqlite-wal",
  "hangar.sqlite-shm",
  "hangar.sqlite-journal",
  "sandboxes",
  "volumes",
  "images",
];

/**
 * Makes the data dir private (see above); logs each path it tightened with its mode before. The image
 * store, when it lives elsewhere (`HANGAR_SANDBOX_IMAGES`) and exists, gets the same at its top (all of
 * it is Hangar's).
 */
export function secureDataDir(dataDir: string, log: Logger, imagesDir?: string): void {
  const tightened: string[] = [];
  const refused: string[] = [];
  const secure = (p: string) => {
    try {
      const before = tighten(p).tightened;
      if (before !== null) tightened.push(`${p} (was ${before.toString(8).padStart(4, "0")})`);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "EPERM" && code !== "EACCES") throw err;
      refused.push(`${p} (${code})`);
    }
  };
  const outside = imagesDir && path.relative(dataDir, imagesDir).startsWith("..") ? [imagesDir] : [];
  for (const dir of [dataDir, ...outside.filter((d) => existsSync(d))]) {
    mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    if (isSharedDir(dir)) {
      log.warn(
        "data directory is shared with other users (sticky or world-writable): its mode is left as is",
        {
          path: dir,
          hint: "give Hangar a directory of its own (--data-dir) to keep other local accounts out",
        },
      );
    } else secure(dir);
    const names = dir === dataDir ? HANGAR_ENTRIES : readdirSync(dir);
    for (const name of names) {
      const p = path.join(dir, name);
      const st = lstatSync(p, { throwIfNoEntry: false });
      if (!st || st.isSymbolicLink()) continue; // a link's own mode means nothing; its target is not ours
      secure(p);
    }
  }
  if (tightened.length) {
    log.warn("data directory was readable by other local accounts: tightened", {
      paths: tightened.join(", "),
    });
  }
  if (refused.length) {
    log.warn("could not tighten paths in the data directory (not this user's)", {
      paths: refused.join(", "),
    });
  }
}
