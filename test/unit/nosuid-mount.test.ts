/**
 * `ensureNosuid` (src/sandboxes/engines/nosuid.ts) on real mounts (root: it mounts): a directory on a
 * `noexec` tmpfs becomes a `nosuid,nodev` mount that is still `noexec` (the remount passes the mount's
 * flags again: a plain mount(2) remount sets exactly those it is given); and without `findmnt` the error names util-linux.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { ensureNosuid, releaseNosuid } from "../../src/sandboxes/engines/nosuid.js";

const skip = process.getuid?.() !== 0 ? "mounting needs root" : undefined;
const optionsOf = (dir: string) =>
  execFileSync("findmnt", ["-n", "-o", "VFS-OPTIONS", "--target", dir], { encoding: "utf8" })
    .trim()
    .split(",");

test("a directory on a noexec mount stays noexec once made nosuid,nodev", { skip }, async () => {
  const top = mkdtempSync(path.join(tmpdir(), "hangar-nosuid-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", "noexec,size=1m", "tmpfs", top]);
  const dir = path.join(top, "volumes");
  mkdirSync(dir);
  try {
    assert.equal(await ensureNosuid(dir), true, "mounted over itself");
    const options = optionsOf(dir);
    for (const flag of ["nosuid", "nodev", "noexec"])
      assert.ok(options.includes(flag), `${flag}: ${options}`);
  } finally {
    await releaseNosuid(dir);
    execFileSync("umount", [top]);
    rmSync(top, { recursive: true, force: true });
  }
});

test("without findmnt the error names util-linux", async () => {
  const empty = mkdtempSync(path.join(tmpdir(), "hangar-nopath-"));
  const saved = process.env.PATH;
  process.env.PATH = empty;
  try {
    await assert.rejects(ensureNosuid(empty), /findmnt was not found: install util-linux/);
  } finally {
    process.env.PATH = saved;
    rmSync(empty, { recursive: true, force: true });
  }
});
