/**
 * The data directory's modes: only the server's user may read what Hangar keeps there (the SQLite
 * file, volumes, sandboxes, images), and a directory other users share is never Hangar's to change.
 * Here, at the floor, because storage makes the data dir and its database file first; data-dir.ts
 * tightens the rest of the data dir at start.
 */
import { chmodSync, lstatSync, mkdirSync } from "node:fs";

/** Directories of the data dir: the server's user alone may enter them. */
export const PRIVATE_DIR_MODE = 0o700;
/** Files of the data dir: the server's user alone may read them. */
export const PRIVATE_FILE_MODE = 0o600;

/** A directory other users share (sticky or world-writable, as `/tmp`): never Hangar's to chmod. */
export function isSharedDir(dir: string): boolean {
  const st = lstatSync(dir, { throwIfNoEntry: false });
  return !!st?.isDirectory() && (st.mode & 0o1002) !== 0;
}

/** Creates `dir` 0700 (missing parents too) or tightens it to 0700, unless it is a shared one. */
export function privateDir(dir: string): { tightened: number | null } {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (isSharedDir(dir)) return { tightened: null };
  return tighten(dir);
}

/** Clears the group and other bits (the owner's stay as they are); returns the mode before when it changed. */
export function tighten(p: string): { tightened: number | null } {
  const before = lstatSync(p).mode & 0o7777;
  if ((before & 0o077) === 0) return { tightened: null };
  chmodSync(p, before & ~0o077);
  return { tightened: before };
}
