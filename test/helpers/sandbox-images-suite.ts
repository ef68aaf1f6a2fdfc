/**
 * Sandboxes on imported OCI images: `hangar images import | list | rm` (the CLI, as a user runs it)
 * and templates that name those images as users write them, run by a real `hangar` process with the
 * driver on one isolation engine, through the official `langsmith` client. One test file per engine
 * (sandbox-images*.test.ts) calls `sandboxImagesSuite`.
 *
 * The image is built here, as a user's `docker save` would bring it: Debian's busybox-static packed
 * into an OCI layout by umoci, then as an OCI archive (tar of the layout) and as a `docker save`
 * archive (skopeo); once per test run, which the three engines' files share (test/helpers/run-cache.ts).
 * Needs root, the engine's tools, umoci, skopeo and busybox-static
 * (scripts/install-test-deps.sh installs them).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import { copyFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { LangSmithSandboxCreationError, SandboxClient } from "langsmith-sbx/experimental/sandbox";
import { images } from "./images-cli.js";
import { madeOncePerRun } from "./run-cache.js";
import { type Hangar, REPO_ROOT, startHangar } from "./server.js";

const T = { timeout: 120_000 };
const run = promisify(execFile);
const BUSYBOX_APPLETS = [
  "sh",
  "cat",
  "echo",
  "ls",
  "env",
  "head",
  "mkdir",
  "rm",
  "test",
  "[",
  "id",
  "printf",
];
/** The image has no bash (the client's default shell), as alpine or distroless images have none. */
const SH = { shell: "/bin/sh" };

/** `hangar images list --json`: the imported names and their digests. */
async function imported(h: Hangar): Promise<{ name: string; digest: string }[]> {
  return JSON.parse((await images(h, "list", "--json")).stdout);
}

/** Where a busybox image's three forms lie in `dir` (the three engines' files share one per run). */
const busyboxImageIn = (dir: string) => ({
  layout: join(dir, "layout"),
  ociArchive: join(dir, "busybox-oci.tar"),
  dockerArchive: join(dir, "busybox-docker.tar"),
});

/** A busybox image as an OCI layout, an OCI archive and a docker save archive, written into `dir`. */
async function buildBusyboxImage(dir: string): Promise<void> {
  const { layout, ociArchive, dockerArchive } = busyboxImageIn(dir);
  const bundle = join(dir, "bundle");
  await run("umoci", ["init", "--layout", layout]);
  await run("umoci", ["new", "--image", `${layout}:1`]);
  await run("umoci", ["unpack", "--image", `${layout}:1`, bundle]);
  mkdirSync(join(bundle, "rootfs", "bin"), { recursive: true });
  await copyFile("/bin/busybox", join(bundle, "rootfs", "bin", "busybox"));
  for (const applet of BUSYBOX_APPLETS) symlinkSync("busybox", join(bundle, "rootfs", "bin", applet));
  await run("umoci", ["repack", "--image", `${layout}:1`, bundle]);
  await run("umoci", [
    "config",
    "--image",
    `${layout}:1`,
    "--config.env",
    "PATH=/bin",
    "--config.env",
    "GREETING=from the image",
  ]);
  await run("tar", ["-C", layout, "-cf", ociArchive, "."]);
  await run("skopeo", ["copy", "--quiet", `oci:${layout}:1`, `docker-archive:${dockerArchive}:busybox:1.36`]);
  await rm(bundle, { recursive: true });
}

export function sandboxImagesSuite(engine: "bwrap" | "runsc" | "runc") {
  const onEngine = (opts: Parameters<typeof startHangar>[0] = {}) =>
    startHangar({ ...opts, env: { ...opts.env, HANGAR_SANDBOX_ENGINE: engine } });

  describe(`sandboxes on imported images (${engine})`, () => {
    let h: Hangar;
    let c: SandboxClient;
    let image: ReturnType<typeof busyboxImageIn>;

    before(async () => {
      image = busyboxImageIn(await madeOncePerRun("busybox-image", buildBusyboxImage));
      h = await onEngine();
      c = new SandboxClient({ apiEndpoint: `${h.url}/v2/sandboxes`, apiKey: "test-key", maxRetries: 0 });
    });

    after(async () => {
      await h?.stop();
    });

    test(
      "import takes an OCI archive, a docker save archive and an OCI layout; list shows them",
      T,
      async () => {
        const oci = await images(h, "import", "busybox:oci", image.ociArchive);
        assert.equal(oci.code, 0, oci.stderr);
        assert.match(oci.stdout, /^Imported busybox:oci \(sha256:[0-9a-f]{64}\)\.$/m);
        // Written as Docker users write it: docker.io/library/… and no tag are the same names as short ones.
        const docker = await images(h, "import", "docker.io/library/busybox:1.36", image.dockerArchive);
        assert.equal(docker.code, 0, docker.stderr);
        const layout = await images(h, "import", "busybox-layout", image.layout);
        assert.equal(layout.code, 0, layout.stderr);
        // The same content under another name is not unpacked again.
        const again = await images(h, "import", "busybox-again", image.ociArchive);
        assert.match(again.stdout, /content already in the store/);

        const listed = await imported(h);
        assert.deepEqual(
          listed.map((r) => r.name),
          ["busybox-again:latest", "busybox-layout:latest", "busybox:1.36", "busybox:oci"],
        );
        const digestOf = (name: string) => listed.find((r) => r.name === name)?.digest;
        assert.equal(digestOf("busybox-again:latest"), digestOf("busybox:oci"));
        assert.equal(
          digestOf("busybox-layout:latest"),
          digestOf("busybox:oci"),
          "the archive of a layout is that layout",
        );
      },
    );

    test(
      "a template on an imported image runs its commands in it, with the image's environment",
      T,
      async () => {
        await c.createTemplate("bb", { image: "busybox:oci" });
        const box = await c.createSandbox("bb", { name: "bb-1", timeout: 60 });
        try {
          const r = await box.run(
            'echo "$GREETING"; echo "$PATH"; [ -e /usr/bin/env ] && echo host-usr || echo image-only; pwd',
            SH,
          );
          assert.deepEqual(r, {
            stdout: "from the image\n/bin\nimage-only\n/root\n",
            stderr: "",
            exit_code: 0,
          });
          // Files through the data plane (sh and cat from the image).
          await box.write("/root/note.txt", "hello");
          assert.equal(new TextDecoder().decode(await box.read("/root/note.txt")), "hello");
        } finally {
          await c.deleteSandbox("bb-1");
        }
        // The docker save import, named as the template writes it.
        await c.createTemplate("bb-docker", { image: "busybox:1.36" });
        const fromDocker = await c.createSandbox("bb-docker", { name: "bb-docker-1", timeout: 60 });
        assert.deepEqual(await fromDocker.run("echo $GREETING", SH), {
          stdout: "from the image\n",
          stderr: "",
          exit_code: 0,
        });
        await c.deleteSandbox("bb-docker-1");
      },
    );

    test(
      "a sandbox's writes stay in its own layer: the image and other sandboxes do not see them",
      T,
      async () => {
        const one = await c.createSandbox("bb", { name: "writer", timeout: 60 });
        const two = await c.createSandbox("bb", { name: "reader", timeout: 60 });
        try {
          assert.equal(
            (await one.run("echo changed > /bin/marker && rm /bin/ls && echo ok", SH)).stdout,
            "ok\n",
          );
          assert.deepEqual(
            await two.run("[ -e /bin/marker ] && echo seen || echo unseen; [ -e /bin/ls ] && echo ls", SH),
            {
              stdout: "unseen\nls\n",
              stderr: "",
              exit_code: 0,
            },
          );
          const listed = await imported(h);
          const digest = listed.find((r) => r.name === "busybox:oci")!.digest.replace(":", "/");
          const rootfs = join(h.dataDir, "images", ".oci", digest, "rootfs");
          assert.ok(existsSync(join(rootfs, "bin", "ls")));
          assert.ok(!existsSync(join(rootfs, "bin", "marker")));
        } finally {
          await c.deleteSandbox("writer");
          await c.deleteSandbox("reader");
        }
      },
    );

    test(
      "concurrent imports and removals of one content leave it whole, once, under every name",
      T,
      async () => {
        const names = ["para-1", "para-2", "para-3"];
        const results = await Promise.all(names.map((n) => images(h, "import", n, image.dockerArchive)));
        for (const r of results) assert.equal(r.code, 0, r.stderr);
        const listed = await imported(h);
        const digests = new Set(listed.filter((r) => r.name.startsWith("para-")).map((r) => r.digest));
        assert.equal(digests.size, 1);
        const [digest] = [...digests];
        const store = join(h.dataDir, "images");
        assert.ok(existsSync(join(store, ".oci", ...digest!.split(":"), "rootfs", "bin", "busybox")));
        // Two of its names go at once while a third is imported again: the content stays for the rest.
        const mixed = await Promise.all([
          images(h, "rm", "para-1"),
          images(h, "rm", "para-2"),
          images(h, "import", "para-3", image.dockerArchive),
        ]);
        for (const r of mixed) assert.equal(r.code, 0, r.stderr);
        assert.ok(existsSync(join(store, ".oci", ...digest!.split(":"), "rootfs", "bin", "busybox")));
        assert.ok(!existsSync(join(store, ".lock")), "the store's lock was left behind");
        assert.equal((await images(h, "rm", "para-3")).code, 0);
      },
    );

    test(
      "a root filesystem directory laid into the store by hand, named with a tag, works too",
      T,
      async () => {
        const listed = await imported(h);
        const unpacked = join(h.dataDir, "images", ".oci", ...listed[0]!.digest.split(":"), "rootfs");
        await run("cp", ["-a", unpacked, join(h.dataDir, "images", "handmade:1")]);
        await c.createTemplate("handmade", { image: "handmade:1" });
        const box = await c.createSandbox("handmade", { name: "handmade-1", timeout: 60 });
        assert.deepEqual(await box.run('echo ok; [ -z "$GREETING" ] && echo no image env', SH), {
          stdout: "ok\nno image env\n",
          stderr: "",
          exit_code: 0,
        });
        await c.deleteSandbox("handmade-1");
      },
    );

    test(
      "bad inputs: a clear message and a non-zero exit; removing an image leaves its sandboxes their files",
      T,
      async () => {
        const cases: [string[], RegExp][] = [
          [["import", "x", "/no/such/archive.tar"], /No such file or directory: \/no\/such\/archive\.tar/],
          [["import", "x", join(REPO_ROOT, "package.json")], /is not a tar archive/],
          [["import", "Not An Image", image.ociArchive], /'Not An Image' is not an image name/],
          [["import", "Python:3", image.ociArchive], /'Python:3' is not an image name/],
          [["import", "hangar/host", image.ociArchive], /built-in image's name/],
          [["import", "x", REPO_ROOT], /is not an OCI layout directory/],
          [["import", "x"], /images import needs <name> <archive or OCI layout dir>/],
          [["rm", "never-imported"], /Image 'never-imported' is not an imported image/],
          [["frobnicate"], /unknown images action "frobnicate"/],
        ];
        const results = await Promise.all(cases.map(([args]) => images(h, ...args)));
        for (const [i, [args, message]] of cases.entries()) {
          assert.notEqual(results[i]!.code, 0, `images ${args.join(" ")} succeeded`);
          assert.match(results[i]!.stderr, message, `images ${args.join(" ")}`);
        }

        // Removing the name of an image a sandbox booted from leaves the sandbox its content.
        const box = await c.createSandbox("bb", { name: "user", timeout: 60 });
        const removed = await images(h, "rm", "busybox:oci");
        assert.equal(removed.code, 0, removed.stderr);
        assert.equal(removed.stdout, "Removed busybox:oci.\n", "busybox-again still names the content");
        await box.stop();
        await box.start({ timeout: 60 });
        assert.equal((await box.run("echo still here", SH)).stdout, "still here\n");
        await c.deleteSandbox("user");
        // Another name (busybox-again) still refers to the content.
        await c.createTemplate("again", { image: "busybox-again" });
        const still = await c.createSandbox("again", { name: "still", timeout: 60 });
        assert.equal((await still.run("echo ok", SH)).stdout, "ok\n");
        await c.deleteSandbox("still");

        // A template whose image was removed after it was made fails its new sandboxes, saying how to
        // import it again; a new template on that image is refused at once.
        const err = await c.createSandbox("bb", { name: "gone-1" }).then(
          () => null,
          (e: Error) => e,
        );
        assert.ok(err instanceof LangSmithSandboxCreationError, String(err));
        assert.match(err.message, /hangar images import busybox:oci/);
        await c.deleteSandbox("gone-1");
        const noTemplate = await c.createTemplate("gone", { image: "busybox:oci" }).then(
          () => null,
          (e: Error) => e,
        );
        assert.match(String(noTemplate), /Image 'busybox:oci' is not in the image store/);
      },
    );

    test(
      "a sandbox keeps the content it booted from when its image's name is imported again",
      T,
      async () => {
        const digests = async () => Object.fromEntries((await imported(h)).map((r) => [r.name, r.digest]));
        assert.equal((await images(h, "import", "moving", image.ociArchive)).code, 0);
        const first = (await digests())["moving:latest"]!;
        await c.createTemplate("moving", { image: "moving" });
        const box = await c.createSandbox("moving", { name: "pinned", timeout: 60 });
        await box.write("/root/mine.txt", "mine");
        // The name now refers to other content (the docker save import of the same files).
        assert.equal((await images(h, "import", "moving", image.dockerArchive)).code, 0);
        assert.notEqual((await digests())["moving:latest"], first);
        const unpacked = join(h.dataDir, "images", ".oci", ...first.split(":"));
        // busybox-layout and busybox-again still name the first content; once they go, the sandbox alone
        // keeps it.
        assert.equal((await images(h, "rm", "busybox-layout")).stdout, "Removed busybox-layout:latest.\n");
        const removed = await images(h, "rm", "busybox-again");
        assert.equal(
          removed.stdout,
          `Removed busybox-again:latest. Its content stays while sandboxes use it: ${box.id}.\n`,
        );
        assert.ok(existsSync(unpacked), "content a sandbox booted from was removed");
        await box.stop();
        await box.start({ timeout: 60 });
        assert.equal((await box.run("cat /root/mine.txt", SH)).stdout, "mine");
        await c.deleteSandbox("pinned");
        // With no name and no sandbox left, the next removal takes it.
        assert.equal((await images(h, "rm", "moving")).code, 0);
        assert.ok(!existsSync(unpacked), "unused content was kept");
      },
    );
  });
}
