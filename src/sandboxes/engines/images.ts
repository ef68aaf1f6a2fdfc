/**
 * The image store of the local sandbox driver: how a template's `image` becomes a root filesystem.
 *
 * - Imported images (`hangar images import <name> <source>`): OCI images from a `docker save` archive,
 *   an OCI archive or an OCI layout directory — what `docker save`, `podman save` or `skopeo copy` give
 *   on a machine that can pull. skopeo copies the source into an OCI layout, umoci unpacks it into a
 *   root filesystem once per image content (its manifest digest), and every sandbox on it shares it
 *   read-only. A name is a reference to a digest, normalized as Docker does (`python:3.12-slim` =
 *   `docker.io/library/python:3.12-slim`; no tag = `:latest`):
 *     <imagesDir>/.oci/sha256/<digest>/rootfs, config.json   the unpacked image (umoci's runtime bundle)
 *     <imagesDir>/.refs/<name, URI-encoded>.json             {name, digest, imported_at, source}
 *   Commands in a sandbox get the image's environment (its `Env`).
 * - Built images (`hangar images build <name> --packages …`): a Debian root filesystem made by
 *   mmdebstrap with those packages, packed as an OCI image by umoci, then imported as above.
 * - A directory `<imagesDir>/<image>/` laid there by hand (`python:3.12-slim` is the directory
 *   `python:3.12-slim`): a complete root filesystem, for example the output of `docker export`.
 * - The built-in image `BUILTIN_IMAGE`: the host's own `/usr` and `/etc` (so `/bin/sh`, `bash`,
 *   coreutils and whatever the host has installed work), with the host's secrets in `/etc`
 *   (`shadow`, `gshadow`, `ssh/`, `ssl/private`, `sudoers*`) hidden, and an empty skeleton for the rest.
 *
 * Every image needs `/bin/sh`, and `cat` for file downloads. An image is a list of read-only layers,
 * each grafted at a path; the driver puts a private writable overlay over each, so a sandbox may change
 * any file and no change reaches the image or another box.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { PRIVATE_DIR_MODE } from "../../storage/private-dir.js";

export const BUILTIN_IMAGE = "hangar/host";
const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export interface ImageLayer {
  /** Read-only directories, uppermost first (overlayfs `lowerdir` order). */
  lower: string[];
  /** Where the layer appears in the sandbox: `/` first, then grafts such as `/usr`. */
  at: string;
}

/** What a sandbox is booted from: its layers, and the environment its commands start with. */
export interface ResolvedImage {
  layers: ImageLayer[];
  env: Record<string, string>;
  /** An imported image's manifest digest (the driver records it, so the store knows who uses it). */
  digest?: string;
}

/** An imported image's name, as the store records it. */
export interface ImageRef {
  name: string;
  /** The manifest digest, `sha256:<hex>`: what the unpacked image is stored under. */
  digest: string;
  imported_at: string;
  /** The file or directory it was imported from, or what it was built from. */
  source: string;
}

/** What `hangar images build` makes an image from. */
export interface DebianBuild {
  /** Debian packages installed over the variant. */
  packages: string[];
  /** The Debian release (`bookworm`, `trixie`, `stable`, …). */
  suite: string;
  /** mmdebstrap's package set under the packages: `essential`, `minbase` (as debian:*-slim), `apt`, … */
  variant: string;
  /** Where packages come from (default: mmdebstrap's, deb.debian.org for Debian). */
  mirror?: string;
}

const BUILD_VARIANTS = ["essential", "required", "minbase", "apt", "important", "standard"];
/** Debian's package-name grammar (policy 5.6.1). */
const PACKAGE_NAME = /^[a-z0-9][a-z0-9+.-]+$/;

export class ImageNotFound extends Error {}
/** An import or removal that cannot be done as asked; the message says why. */
export class ImageStoreError extends Error {}

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
  #lockQueue: Promise<unknown> = Promise.resolve();

  /** `imagesDir` holds one root filesystem per image name; `stateDir` is where the built-in image's skeleton is made. */
  constructor(
    readonly imagesDir: string,
    readonly stateDir: string,
  ) {}

  /**
   * `pinned`: the digest a sandbox booted from before. While the store has that content, the sandbox
   * keeps it (its own layer was written over it), even if its image's name now refers to another.
   */
  async resolve(image: string, pinned?: string): Promise<ResolvedImage> {
    if (image === BUILTIN_IMAGE) {
      this.#builtin ??= this.#makeBuiltin();
      return { layers: await this.#builtin, env: {} };
    }
    const digest =
      pinned && DIGEST.test(pinned) && this.#content(pinned) ? pinned : (await this.ref(image))?.digest;
    if (digest) {
      const unpacked = this.#content(digest);
      if (!unpacked) {
        throw new ImageNotFound(`Image '${image}' has lost its content (${digest}): import it again`);
      }
      const layers = [{ lower: [path.join(unpacked, "rootfs")], at: "/" }];
      return { layers, env: await imageEnv(unpacked), digest };
    }
    const dir = await this.#handLaid(image);
    if (dir) return { layers: [{ lower: [dir], at: "/" }], env: {} };
    throw new ImageNotFound((await this.problem(image)) ?? `Image '${image}' not found`);
  }

  /** Why no sandbox can boot from `image` here (the store has no such image), or null when one can. */
  async problem(image: string): Promise<string | null> {
    if (image === BUILTIN_IMAGE || (await this.ref(image)) || (await this.#handLaid(image))) return null;
    if (!normalizeImageName(image)) return `'${image}' is not an image name (such as python:3.12-slim)`;
    return (
      `Image '${image}' is not in the image store (${this.imagesDir}): import it with ` +
      `'hangar images import ${image} <docker save or OCI archive, or OCI layout directory>', ` +
      `or use the built-in image '${BUILTIN_IMAGE}'`
    );
  }

  /** The root filesystem directory laid into the store by hand under `image`'s name, if there is one. */
  async #handLaid(image: string): Promise<string | null> {
    const dir = path.resolve(this.imagesDir, image);
    // The name is the user's: it must stay inside the store, clear of the store's own dot-directories.
    const inside = dir.startsWith(path.resolve(this.imagesDir) + path.sep) && !image.startsWith(".");
    if (!inside || image.includes(",")) return null;
    const isDir = await stat(dir).then(
      (s) => s.isDirectory(),
      () => false,
    );
    return isDir ? dir : null;
  }

  // ---- imported images ---------------------------------------------------------------------------

  #refFile(name: string): string {
    return path.join(this.imagesDir, ".refs", `${encodeURIComponent(name)}.json`);
  }

  #unpacked(digest: string): string {
    if (!DIGEST.test(digest)) throw new ImageStoreError(`Not an image digest: ${digest}`);
    return path.join(this.imagesDir, ".oci", ...digest.split(":"));
  }

  /** The unpacked content of `digest`, when the store has it whole. */
  #content(digest: string): string | null {
    const unpacked = this.#unpacked(digest);
    return existsSync(path.join(unpacked, "rootfs")) && existsSync(path.join(unpacked, "config.json"))
      ? unpacked
      : null;
  }

  /** The imported image a name refers to (in any of its spellings), or null. */
  async ref(image: string): Promise<ImageRef | null> {
    const name = normalizeImageName(image);
    if (!name) return null;
    return readFile(this.#refFile(name), "utf8").then(
      (text) => JSON.parse(text) as ImageRef,
      () => null,
    );
  }

  async list(): Promise<ImageRef[]> {
    const files = await readdir(path.join(this.imagesDir, ".refs")).catch(() => [] as string[]);
    const refs = await Promise.all(
      files
        .filter((f) => f.endsWith(".json"))
        .map((f) =>
          readFile(path.join(this.imagesDir, ".refs", f), "utf8").then((t) => JSON.parse(t) as ImageRef),
        ),
    );
    return refs.sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Imports `source` (a `docker save` archive, an OCI archive or an OCI layout directory) under `image`.
   * An image whose content is already unpacked (the same manifest digest) is not unpacked again.
   */
  async import(image: string, source: string, builtFrom?: string): Promise<ImageRef & { unpacked: boolean }> {
    const name = importableName(image);
    const from = await skopeoSource(path.resolve(source));
    await this.#sweepAbandonedImports();
    const work = path.join(this.imagesDir, ".tmp", randomUUID());
    await mkdir(work, { recursive: true });
    try {
      await tool("skopeo", ["copy", "--quiet", from, `oci:${work}/layout:image`]);
      const index = JSON.parse(await readFile(path.join(work, "layout", "index.json"), "utf8"));
      const digest: string = index.manifests[0].digest;
      const unpacked = this.#unpacked(digest);
      const bundle = `${work}/bundle`;
      const unpack = () => tool("umoci", ["unpack", "--image", `${work}/layout:image`, bundle]);
      const ref: ImageRef = {
        name,
        digest,
        imported_at: new Date().toISOString(),
        source: builtFrom ?? path.resolve(source),
      };
      await writeFile(`${work}/ref.json`, JSON.stringify(ref));
      // Unpacked outside the lock (it is the long part), moved in under it; again if a removal took the
      // content between the look and the lock.
      for (let fresh = false; ; ) {
        if (!this.#content(digest) && !existsSync(bundle)) await unpack();
        const committed = await this.withLock(async () => {
          if (!this.#content(digest)) {
            if (!existsSync(bundle)) return false;
            await this.#moveAway(unpacked); // what a removal or an unpack cut short left of it
            await mkdir(path.dirname(unpacked), { recursive: true });
            await rename(bundle, unpacked);
            fresh = true;
          }
          await mkdir(path.dirname(this.#refFile(name)), { recursive: true });
          await rename(`${work}/ref.json`, this.#refFile(name));
          return true;
        });
        if (committed) return { ...ref, unpacked: fresh };
      }
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * Builds an image from Debian packages and imports it under `image`: mmdebstrap makes the root
   * filesystem (downloading the packages from the mirror), umoci packs it as an OCI image.
   */
  async build(image: string, debian: DebianBuild): Promise<ImageRef & { unpacked: boolean }> {
    importableName(image);
    const bad = debian.packages.filter((p) => !PACKAGE_NAME.test(p));
    if (bad.length) throw new ImageStoreError(`not Debian package names: ${bad.join(", ")}`);
    if (!BUILD_VARIANTS.includes(debian.variant)) {
      throw new ImageStoreError(
        `--variant must be one of ${BUILD_VARIANTS.join(", ")}, got '${debian.variant}'`,
      );
    }
    if (!/^[a-z][a-z0-9-]*$/.test(debian.suite))
      throw new ImageStoreError(`'${debian.suite}' is not a Debian suite`);
    // mmdebstrap takes it as a positional argument: an option's text must not pass for one.
    if (debian.mirror !== undefined && !/^(https?|file):\/\/\S+$/.test(debian.mirror)) {
      throw new ImageStoreError(`--mirror must be an http(s):// or file:// URL, got '${debian.mirror}'`);
    }
    const work = path.join(this.imagesDir, ".tmp", randomUUID());
    const layout = `${work}/layout`;
    const bundle = `${work}/bundle`;
    await mkdir(work, { recursive: true });
    try {
      await tool("umoci", ["init", "--layout", layout]);
      await tool("umoci", ["new", "--image", `${layout}:image`]);
      await tool("umoci", ["unpack", "--image", `${layout}:image`, bundle]);
      const include = debian.packages.length ? [`--include=${debian.packages.join(",")}`] : [];
      const mirror = debian.mirror ? [debian.mirror] : [];
      await tool("mmdebstrap", [
        "--quiet",
        `--variant=${debian.variant}`,
        ...include,
        debian.suite,
        `${bundle}/rootfs`,
        ...mirror,
      ]);
      await tool("umoci", ["repack", "--image", `${layout}:image`, bundle]);
      await tool("umoci", ["config", "--image", `${layout}:image`, "--config.env", `PATH=${DEFAULT_PATH}`]);
      const from = `debian ${debian.suite} (${debian.variant})${include.length ? ` + ${debian.packages.join(", ")}` : ""}`;
      return await this.import(image, layout, from);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * Removes an imported image's name; then every unpacked content that no name refers to and no
   * sandbox uses goes. `sandboxesByDigest` tells which sandboxes' files come from which content (they
   * booted from it): they keep it, so a removal never breaks a sandbox, and the content goes with the
   * last of them (at a later removal). Returns the removed name and the sandboxes that keep its content.
   */
  async remove(
    image: string,
    sandboxesByDigest: () => Promise<Map<string, string[]>>,
  ): Promise<{ ref: ImageRef; keptFor: string[] }> {
    const { ref, keptFor, discarded } = await this.withLock(async () => {
      const ref = await this.ref(image);
      if (!ref) throw new ImageNotFound(`Image '${image}' is not an imported image of ${this.imagesDir}`);
      await rm(this.#refFile(ref.name));
      // The content no name refers to and no sandbox uses (this one's, and any a re-import left) goes.
      const named = new Set((await this.list()).map((r) => r.digest));
      const used = await sandboxesByDigest();
      const stored = await readdir(path.join(this.imagesDir, ".oci", "sha256")).catch(() => [] as string[]);
      const discarded: string[] = [];
      for (const digest of stored.map((hex) => `sha256:${hex}`).filter((d) => DIGEST.test(d))) {
        if (named.has(digest) || used.has(digest)) continue;
        const away = await this.#moveAway(this.#unpacked(digest));
        if (away) discarded.push(away);
      }
      return { ref, keptFor: named.has(ref.digest) ? [] : (used.get(ref.digest) ?? []), discarded };
    });
    // Deleted outside the lock: a large image takes a while, and nothing reads it any more.
    for (const away of discarded) await rm(away, { recursive: true, force: true });
    return { ref, keptFor };
  }

  /**
   * Runs `fn` holding the store's lock (a directory, so other processes see it too): imports, removals
   * and a sandbox's boot (which records the content it uses) do not interleave. A lock older than a
   * minute was left by a crash (every holder is brief) and is taken over.
   */
  withLock<T>(fn: () => Promise<T>): Promise<T> {
    // Holders in this process queue here instead of polling the directory.
    const turn = this.#lockQueue.then(() => this.#withDirLock(fn));
    this.#lockQueue = turn.catch(() => {});
    return turn;
  }

  async #withDirLock<T>(fn: () => Promise<T>): Promise<T> {
    const lock = path.join(this.imagesDir, ".lock");
    await mkdir(this.imagesDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    for (let waited = 0; ; waited += LOCK_POLL_MS) {
      try {
        await mkdir(lock);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        const { mtimeMs } = await stat(lock).catch(() => ({ mtimeMs: Date.now() }));
        if (Date.now() - mtimeMs > 60_000) await rm(lock, { recursive: true, force: true });
        else if (waited > 30_000)
          throw new ImageStoreError(`The image store is locked (${lock}) by another process`);
        else await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
      }
    }
    try {
      return await fn();
    } finally {
      await rm(lock, { recursive: true, force: true });
    }
  }

  /** Moves a directory of the store out of sight in one step (to be deleted later); its new path. */
  async #moveAway(dir: string): Promise<string | null> {
    if (!existsSync(dir)) return null;
    const away = path.join(this.imagesDir, ".tmp", `discard-${randomUUID()}`);
    await mkdir(path.dirname(away), { recursive: true });
    await rename(dir, away);
    return away;
  }

  /** Imports cut short (a crash, Ctrl-C) leave their work directory: gone after an hour. */
  async #sweepAbandonedImports(): Promise<void> {
    const tmp = path.join(this.imagesDir, ".tmp");
    for (const entry of await readdir(tmp).catch(() => [] as string[])) {
      const at = path.join(tmp, entry);
      const { mtimeMs } = await stat(at).catch(() => ({ mtimeMs: Date.now() }));
      if (Date.now() - mtimeMs > 3600_000) await rm(at, { recursive: true, force: true });
    }
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

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const LOCK_POLL_MS = 50;
/** Docker's reference grammar: a path component, a tag, a registry host (with a port). */
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const HOST =
  /^(?:localhost|[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+|[a-zA-Z0-9-]+:[0-9]+|[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+:[0-9]+)$/;
/** A ref file's name is the encoded name: it must fit a file name (255 bytes). */
const MAX_ENCODED_NAME = 240;

/**
 * The name an image is stored under, as Docker reads it: `python` = `python:latest` =
 * `library/python:latest` = `docker.io/library/python:latest`. Null when it is not an image reference
 * (Docker's grammar: lowercase path components, an optional registry host, tag and digest).
 */
export function normalizeImageName(image: string): string | null {
  const match = /^([^@]+?)(?::([^:/@]+))?(@sha256:[0-9a-f]{64})?$/.exec(image.trim());
  if (!match) return null;
  const [, repository, tag, digest] = match;
  const parts = repository!.split("/");
  if (parts.length > 1 && HOST.test(parts[0]!)) parts.shift();
  else if (parts.length > 1 && !COMPONENT.test(parts[0]!)) return null;
  const host = repository!.split("/").length > parts.length ? repository!.split("/")[0]! : null;
  if (!parts.length || !parts.every((p) => COMPONENT.test(p)) || (tag !== undefined && !TAG.test(tag)))
    return null;
  const official = host === null || host === "docker.io" || host === "index.docker.io";
  if (official && parts.length === 2 && parts[0] === "library") parts.shift();
  const name = `${official ? "" : `${host}/`}${parts.join("/")}${tag !== undefined ? `:${tag}` : digest ? "" : ":latest"}${digest ?? ""}`;
  return encodeURIComponent(name).length <= MAX_ENCODED_NAME ? name : null;
}

/** skopeo's name for an image source: an OCI layout directory, an OCI archive or a `docker save` archive. */
async function skopeoSource(source: string): Promise<string> {
  const info = await stat(source).catch(() => null);
  if (!info) throw new ImageStoreError(`No such file or directory: ${source}`);
  if (info.isDirectory()) {
    if (existsSync(path.join(source, "oci-layout"))) return `oci:${source}`;
    throw new ImageStoreError(`${source} is not an OCI layout directory (it has no oci-layout file)`);
  }
  const { stdout } = await tool("tar", ["-tf", source]).catch(() => {
    throw new ImageStoreError(`${source} is not a tar archive (docker save or OCI archive)`);
  });
  const entries = new Set(stdout.split("\n").map((e) => e.replace(/^\.\//, "")));
  // A `docker save` of Docker 25 and later is both; its manifest.json names the image.
  if (entries.has("manifest.json")) return `docker-archive:${source}`;
  if (entries.has("oci-layout")) return `oci-archive:${source}`;
  throw new ImageStoreError(
    `${source} is neither a docker save archive (manifest.json) nor an OCI archive (oci-layout)`,
  );
}

/** The environment an unpacked image declares (umoci's runtime spec carries the image's `Env`). */
async function imageEnv(unpacked: string): Promise<Record<string, string>> {
  const spec = JSON.parse(await readFile(path.join(unpacked, "config.json"), "utf8").catch(() => "{}"));
  const env: string[] = spec.process?.env ?? [];
  return Object.fromEntries(
    env
      .filter((e) => e.indexOf("=") > 0)
      .map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]),
  );
}

/** An image name one may import or build under (normalized), or why not. */
function importableName(image: string): string {
  const name = normalizeImageName(image);
  if (!name) throw new ImageStoreError(`'${image}' is not an image name (such as python:3.12-slim)`);
  if (name === normalizeImageName(BUILTIN_IMAGE)) {
    throw new ImageStoreError(`'${BUILTIN_IMAGE}' is the built-in image's name: use another`);
  }
  return name;
}

/** Runs one of the image tools; its stderr is the error's message. */
async function tool(command: string, args: string[]): Promise<{ stdout: string }> {
  try {
    return await run(command, args, { maxBuffer: 64 * 2 ** 20 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === "ENOENT") {
      throw new ImageStoreError(`${command} is not installed (Debian: apt-get install ${command})`);
    }
    throw new ImageStoreError(`${command} failed: ${(e.stderr || e.message).trim()}`);
  }
}
