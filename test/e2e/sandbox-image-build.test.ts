/**
 * `hangar images build`: an image made from Debian packages (mmdebstrap, then umoci), booted by a real
 * `hangar` process on the machine's default engine and driven through the official `langsmith` client.
 * mmdebstrap downloads the packages from the Debian mirror, as `apt-get` does (this machine's one
 * permitted remote); scripts/install-test-deps.sh installs mmdebstrap.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SandboxClient } from "langsmith-sbx/experimental/sandbox";
import { images } from "../helpers/images-cli.js";
import { type Hangar, startHangar } from "../helpers/server.js";

const T = { timeout: 120_000 };

describe("images built from Debian packages", () => {
  let h: Hangar;

  before(async () => {
    h = await startHangar();
  });

  after(async () => {
    await h?.stop();
  });

  test("build makes an image a template runs: the variant and the packages asked for", T, async () => {
    const built = await images(
      h,
      "build",
      "debian-tools:1",
      "--suite",
      "bookworm",
      "--variant",
      "essential",
      "--packages",
      "busybox",
    );
    assert.equal(built.code, 0, built.stderr);
    assert.match(
      built.stdout,
      /^Built debian-tools:1 \(sha256:[0-9a-f]{64}\) from debian bookworm \(essential\) \+ busybox\.$/m,
    );
    const listed = JSON.parse((await images(h, "list", "--json")).stdout);
    assert.deepEqual(
      listed.map((r: { name: string; source: string }) => [r.name, r.source]),
      [["debian-tools:1", "debian bookworm (essential) + busybox"]],
    );

    const c = new SandboxClient({ apiEndpoint: `${h.url}/v2/sandboxes`, apiKey: "k", maxRetries: 0 });
    await c.createTemplate("debian-tools", { image: "debian-tools:1" });
    const box = await c.createSandbox("debian-tools", { name: "deb", timeout: 60 });
    try {
      // bash is essential in Debian, so the client's default shell works; busybox is the package asked for.
      const r = await box.run(
        ". /etc/os-release && echo $VERSION_CODENAME && busybox --help | head -1 | cut -d' ' -f1 && id -u",
      );
      assert.deepEqual(r, { stdout: "bookworm\nBusyBox\n0\n", stderr: "", exit_code: 0 });
    } finally {
      await c.deleteSandbox("deb");
    }
  });
});
