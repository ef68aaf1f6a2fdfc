/**
 * A sandbox group's kill (src/sandboxes/engines/cgroups.ts) sends SIGKILL, as root, to pids it reads
 * from `cgroup.procs`: it must hold the group frozen from the read to the kill on every round, or a pid
 * that exited and was recycled meanwhile could be an unrelated host process. A real freeze needs root
 * and a kernel of each kind (v2 without `cgroup.kill`: 5.2 to 5.13), so the groups here are plain
 * directories laid out as the kernel's, and the signaller records what each freezer said at each kill.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { cgroupsOn } from "../../src/sandboxes/engines/cgroups.js";

const root = mkdtempSync(path.join(tmpdir(), "hangar-cgroups-"));
after(() => rmSync(root, { recursive: true, force: true }));

/**
 * A group holding `pids`; the first kill makes a pid fork (`forked` joins the group), so a second round
 * is needed; each kill removes its pid from the group, as the kernel would once it is dead.
 */
function scenario(version: 1 | 2) {
  const hierarchy = path.join(root, `v${version}`);
  const group = path.join(hierarchy, "hangar", "scope", "box");
  mkdirSync(group, { recursive: true });
  const freezeFile = path.join(group, version === 2 ? "cgroup.freeze" : "freezer.state");
  const procs = path.join(group, "cgroup.procs");
  writeFileSync(freezeFile, version === 2 ? "0" : "THAWED");
  if (version === 2) writeFileSync(path.join(group, "cgroup.events"), "populated 1\nfrozen 1\n");
  writeFileSync(procs, "101\n102\n");
  const kills: { pid: number; freezer: string }[] = [];
  let forked = false;
  const signal = (pid: number) => {
    kills.push({ pid, freezer: readFileSync(freezeFile, "utf8") });
    const left = readFileSync(procs, "utf8")
      .split("\n")
      .filter((p) => p && Number(p) !== pid);
    if (!forked) {
      forked = true;
      left.push("103");
    }
    writeFileSync(procs, left.map((p) => `${p}\n`).join(""));
  };
  const cgroups = cgroupsOn(
    version,
    path.join("hangar", "scope"),
    [{ dir: hierarchy, v2: version === 2 }],
    signal,
  );
  return { cgroups, kills, freezeFile };
}

describe("killing a sandbox's cgroup", () => {
  for (const version of [1, 2] as const) {
    test(`cgroup v${version}: every pid is killed while the group is frozen, on every round`, async () => {
      const { cgroups, kills, freezeFile } = scenario(version);
      assert.equal(await cgroups.kill("box"), true);
      assert.deepEqual(
        kills.map((k) => k.pid).sort(),
        [101, 102, 103],
        "the forked pid is found in a later round",
      );
      const frozen = version === 2 ? "1" : "FROZEN";
      for (const k of kills)
        assert.equal(k.freezer, frozen, `pid ${k.pid} was killed with the group running`);
      assert.equal(readFileSync(freezeFile, "utf8"), version === 2 ? "0" : "THAWED", "thawed after");
    });
  }
});
