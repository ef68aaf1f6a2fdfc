/**
 * The data directory is the server's user's alone (issue #32 item 12): a fresh one is made 0700 with
 * its SQLite file (and -wal, -shm) 0600 and `volumes/`, `sandboxes/` 0700; one made looser before is
 * tightened at start, saying what changed. Checked as another local account (nobody) would try to read.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { http, startHangar, tempDir } from "../helpers/server.js";

const T = { timeout: 60_000 };
const modeOf = (p: string) => (statSync(p).mode & 0o7777).toString(8).padStart(4, "0");

/** Whether nobody (uid 65534) can read `file` (setpriv: util-linux; needs root to change uid). */
function nobodyReads(file: string): boolean {
  const r = spawnSync("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "cat", file], {
    stdio: "ignore",
  });
  return r.status === 0;
}
const root = process.getuid?.() === 0;

/** Every path a server writes at the top of its data dir, and the mode each must have. */
const expected = (dataDir: string) => ({
  [dataDir]: "0700",
  [join(dataDir, "hangar.sqlite")]: "0600",
  [join(dataDir, "hangar.sqlite-wal")]: "0600",
  [join(dataDir, "hangar.sqlite-shm")]: "0600",
  [join(dataDir, "volumes")]: "0700",
  [join(dataDir, "sandboxes")]: "0700",
});

test("a fresh data dir is made 0700, its database 0600", T, async () => {
  const parent = await tempDir("hangar-perm-");
  const dataDir = join(parent, "nested", "data");
  const h = await startHangar({ dataDir });
  try {
    assert.equal((await http(h.url, "POST", "/threads", {})).status, 200); // writes: the WAL exists
    for (const [p, mode] of Object.entries(expected(dataDir))) {
      assert.ok(existsSync(p), `${p} exists`);
      assert.equal(modeOf(p), mode, p);
    }
    assert.doesNotMatch(h.logs(), /tightened/);
  } finally {
    await h.stop();
  }
});

test("a data dir made readable before is tightened at start, saying what changed", T, async () => {
  const first = await startHangar();
  const dataDir = first.dataDir;
  await http(first.url, "POST", "/threads", { metadata: { secret: "tenant data" } });
  await first.stop();
  // As an older Hangar (or `mkdir` and the default umask) left it.
  chmodSync(dataDir, 0o755);
  chmodSync(join(dataDir, "hangar.sqlite"), 0o644);
  chmodSync(join(dataDir, "volumes"), 0o755);
  writeFileSync(join(dataDir, "notes.txt"), "left by hand", { mode: 0o644 });
  chmodSync(join(dataDir, "notes.txt"), 0o644);
  if (root) assert.ok(nobodyReads(join(dataDir, "hangar.sqlite")), "the precondition: nobody reads it");

  const h = await startHangar({ dataDir });
  try {
    await http(h.url, "POST", "/threads", {});
    for (const [p, mode] of Object.entries(expected(dataDir))) assert.equal(modeOf(p), mode, p);
    assert.equal(modeOf(join(dataDir, "notes.txt")), "0644", "a file not Hangar's keeps its mode");
    const logged = /tightened.*$/m.exec(h.logs())?.[0] ?? "";
    for (const [p, was] of [
      [dataDir, "0755"],
      [join(dataDir, "hangar.sqlite"), "0644"],
      [join(dataDir, "volumes"), "0755"],
    ])
      assert.ok(logged.includes(`${p} (was ${was})`), `the log names ${p}: ${logged}`);
    if (root) {
      for (const p of ["hangar.sqlite", "hangar.sqlite-wal"]) {
        assert.equal(nobodyReads(join(dataDir, p)), false, `nobody reads ${p}`);
      }
    }
  } finally {
    await h.stop();
  }
});

test("a shared data dir (sticky, world-writable, as /tmp) is left as is, with a warning", T, async () => {
  const dataDir = await tempDir("hangar-shared-");
  chmodSync(dataDir, 0o1777);
  writeFileSync(join(dataDir, "someone-elses.txt"), "not Hangar's");
  chmodSync(join(dataDir, "someone-elses.txt"), 0o644);
  const h = await startHangar({ dataDir });
  try {
    assert.equal((await http(h.url, "POST", "/threads", {})).status, 200);
    assert.equal(modeOf(dataDir), "1777", "the shared directory keeps its mode");
    assert.equal(modeOf(join(dataDir, "someone-elses.txt")), "0644");
    for (const p of ["hangar.sqlite", "volumes", "sandboxes"]) {
      assert.equal(modeOf(join(dataDir, p)), p.includes(".") ? "0600" : "0700", `Hangar's own ${p}`);
    }
    assert.match(h.logs(), /data directory is shared with other users/);
  } finally {
    await h.stop();
  }
});
