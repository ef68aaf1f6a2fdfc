/**
 * The data directory holds every organization's threads, runs and files (the SQLite file, volumes,
 * sandboxes' own layers, the image store): only the server's user may read it. It is made 0700 and
 * what it holds at its top 0700 (directories) or 0600 (files); one made looser before (an older
 * Hangar, a `mkdir` by hand) is tightened at start, saying what changed.
 *
 * Below the top nothing is changed: a sandbox's and a volume's files keep the modes their owners gave
 * them (a sandbox's `/tmp` is 1777 inside), and a 0700 directory above them already keeps every other
 * local account out.
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import type { Logger } from "./logger.js";

/** Directories of the data dir: the server's user alone may enter them. */
export const PRIVATE_DIR_MODE = 0o700;
/** Files of the data dir: the server's user alone may read them. */
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` 0700 (missing parents too) or tightens it to 0700. */
export function privateDir(dir: string): { tightened: number | null } {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  return tighten(dir);
}

/**
 * Makes the data dir private (see above); logs each path it tightened with its mode before. The image
 * store, when it lives elsewhere (`HANGAR_SANDBOX_IMAGES`) and exists, gets the same at its top.
 */
export function secureDataDir(dataDir: string, log: Logger, imagesDir?: string): void {
  const tightened: string[] = [];
  const note = (p: string, before: number | null) => {
    if (before !== null) tightened.push(`${p} (was ${before.toString(8).padStart(4, "0")})`);
  };
  const outside = imagesDir && path.relative(dataDir, imagesDir).startsWith("..") ? [imagesDir] : [];
  for (const dir of [dataDir, ...outside.filter((d) => existsSync(d))]) {
    note(dir, privateDir(dir).tightened);
    for (const name of readdirSync(dir)) {
      const p = path.join(dir, name);
      const st = lstatSync(p, { throwIfNoEntry: false });
      if (!st || st.isSymbolicLink()) continue; // a link's own mode means nothing; its target is not ours
      note(p, tighten(p).tightened);
    }
  }
  if (tightened.length) {
    log.warn("data directory was readable by other local accounts: tightened", {
      paths: tightened.join(", "),
    });
  }
}

/** Clears the group and other bits (the owner's stay as they are); returns the mode before when it changed. */
function tighten(p: string): { tightened: number | null } {
  const before = lstatSync(p).mode & 0o7777;
  if ((before & 0o077) === 0) return { tightened: null };
  chmodSync(p, before & ~0o077);
  return { tightened: before };
}
