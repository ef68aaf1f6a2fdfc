/**
 * `hangar images build` refusing what it cannot build, each with a message that names the problem, and
 * leaving nothing behind. Apart from sandbox-image-build.test.ts because mmdebstrap takes its time (it
 * reads the mirror's package lists before it can say a package does not exist).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { images } from "../helpers/images-cli.js";
import { type Hangar, startHangar } from "../helpers/server.js";

const T = { timeout: 120_000 };
const run = promisify(execFile);

describe("images build: bad inputs", () => {
  let h: Hangar;

  before(async () => {
    h = await startHangar();
  });

  after(async () => {
    await h?.stop();
  });

  test("bad builds say what is wrong, and leave nothing behind", T, async () => {
    const cases: [string[], RegExp][] = [
      [["build", "Debian:1", "--packages", "busybox"], /'Debian:1' is not an image name/],
      [["build", "x:1", "--packages", "busybox;rm"], /not Debian package names: busybox;rm/],
      [
        ["build", "x:1", "--packages", "busybox", "--variant", "everything"],
        /--variant must be one of essential, /,
      ],
      [["build", "x:1", "--packages", "busybox", "--suite", "../etc"], /'\.\.\/etc' is not a Debian suite/],
      [["build", "x:1"], /images build needs <name> --packages/],
      [["build", "x:1", "--packages", "busybox", "--mirror=--include=evil"], /--mirror must be an http/],
      [["build", "hangar/host", "--packages", "busybox"], /built-in image's name/],
      [
        ["build", "x:1", "--variant", "essential", "--packages", "no-such-package-hangar"],
        /mmdebstrap failed: .*no-such-package-hangar/s,
      ],
    ];
    for (const [args, message] of cases) {
      const r = await images(h, ...args);
      assert.notEqual(r.code, 0, args.join(" "));
      assert.match(r.stderr, message, args.join(" "));
    }
    assert.deepEqual(JSON.parse((await images(h, "list", "--json")).stdout), []);
    const { stdout } = await run("ls", ["-A", join(h.dataDir, "images", ".tmp")]);
    assert.equal(stdout, "", "a failed build's work directory is removed");
  });
});
