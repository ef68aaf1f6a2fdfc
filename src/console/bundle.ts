/**
 * The console's browser bundle: `app/main.tsx` and everything it imports (React, the SDK, xterm.js,
 * React Flow), built with esbuild in memory, at run time: the package runs from its sources (tsx),
 * so there is no build step to hook, and a clean `npm install` is enough.
 *
 * A build takes about a second of CPU, so its result is kept on disk, under the `.cache` folder of the
 * `node_modules` that holds esbuild, named by a hash of everything that goes into it (the app's
 * sources, the bundled packages' versions, these options): a server reads it back in milliseconds,
 * and a change to any input makes a new one. Where that folder is not writable, each process builds.
 *
 * Output: ES modules split in chunks (the thread page with `useStream` and LangChain's messages, the
 * terminal and the graph view load when first shown, so the first page needs only React, the SDK's
 * client and the console's own code), minified, every file named by its content hash, so it can be
 * cached for good and only the page itself is revalidated.
 */
import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { type BuildOptions, build, version as esbuildVersion, formatMessages, type Message } from "esbuild";

const APP_DIR = join(dirname(fileURLToPath(import.meta.url)), "app");
const require = createRequire(import.meta.url);

/** Packages in the bundle: their versions are part of the cache key. */
const BUNDLED = [
  "react",
  "react-dom",
  "@langchain/langgraph-sdk",
  "@langchain/core",
  "@xterm/xterm",
  "@xyflow/react",
  "@dagrejs/dagre",
];

export interface ConsoleAsset {
  contentType: string;
  contents: Uint8Array<ArrayBuffer>;
}

export interface ConsoleBundle {
  /** By file name (`main-<hash>.js`, `chunk-<hash>.js`, `main-<hash>.css`). */
  assets: Map<string, ConsoleAsset>;
  /** The entry's script and style sheet, which the page names. */
  script: string;
  styles: string[];
  /** What the first page loads before it can paint: the entry script, its static chunks, the CSS. */
  firstPage: string[];
  /** How long esbuild took, or 0 when the bundle was read from the cache. */
  buildMs: number;
}

const CONTENT_TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

const OPTIONS: BuildOptions = {
  entryPoints: { main: join(APP_DIR, "main.tsx") },
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  minify: true,
  write: false,
  metafile: true,
  // Nothing is written; esbuild names the outputs after this folder.
  outdir: "/console-assets",
  entryNames: "[name]-[hash]",
  chunkNames: "chunk-[hash]",
  define: { "process.env.NODE_ENV": '"production"' },
  legalComments: "eof",
  logLevel: "silent",
};

/** The bundle: from the cache when an identical build is there, else built (and cached). */
export async function consoleBundle(): Promise<ConsoleBundle> {
  const key = await cacheKey();
  const file = cacheFile(key);
  if (file) {
    const cached = await readFile(file, "utf8").then(fromJson, () => undefined);
    if (cached) return cached;
  }
  const bundle = await buildConsole();
  if (file) await writeCache(file, bundle).catch(() => {}); // a read-only install builds each time
  return bundle;
}

export async function buildConsole(): Promise<ConsoleBundle> {
  const started = performance.now();
  const result = await build(OPTIONS as BuildOptions & { write: false; metafile: true }).catch(
    async (err: { errors?: Message[] }) => {
      const text = err.errors ? (await formatMessages(err.errors, { kind: "error" })).join("") : String(err);
      throw new Error(`The console does not build:\n${text}`);
    },
  );

  const assets = new Map<string, ConsoleAsset>();
  for (const file of result.outputFiles) {
    const name = basename(file.path);
    const ext = name.slice(name.lastIndexOf("."));
    assets.set(name, {
      contentType: CONTENT_TYPES[ext] ?? "application/octet-stream",
      contents: new Uint8Array(file.contents),
    });
  }

  // The entry and what it imports statically: what the first page needs before it can paint.
  const outputs = result.metafile.outputs;
  const entryKey = Object.keys(outputs).find((k) => outputs[k]!.entryPoint && k.endsWith(".js"))!;
  const firstPage = new Set<string>();
  const visit = (key: string) => {
    if (firstPage.has(key)) return;
    firstPage.add(key);
    for (const imp of outputs[key]!.imports) if (imp.kind === "import-statement") visit(imp.path);
  };
  visit(entryKey);
  const cssKey = outputs[entryKey]!.cssBundle;
  if (cssKey) firstPage.add(cssKey);

  return {
    assets,
    script: basename(entryKey),
    styles: cssKey ? [basename(cssKey)] : [],
    firstPage: [...firstPage].map((key) => basename(key)),
    buildMs: Math.round(performance.now() - started),
  };
}

// ---- the cache ---------------------------------------------------------------------------------

async function cacheKey(): Promise<string> {
  const hash = createHash("sha256");
  hash.update(JSON.stringify({ esbuild: esbuildVersion, options: OPTIONS }));
  for (const name of BUNDLED) {
    try {
      hash.update(`${name}@${require(`${name}/package.json`).version}\n`);
    } catch {
      hash.update(`${name}@?\n`);
    }
  }
  const files = (await readdir(APP_DIR, { recursive: true, withFileTypes: true }))
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name))
    .sort();
  for (const path of files) hash.update(`${relative(APP_DIR, path)}\n`).update(await readFile(path));
  return hash.digest("hex").slice(0, 32);
}

/** `<node_modules>/.cache/hangar-console/<key>.json`, beside the esbuild this process uses. */
function cacheFile(key: string): string | undefined {
  try {
    const nodeModules = dirname(dirname(require.resolve("esbuild/package.json")));
    return join(nodeModules, ".cache", "hangar-console", `${key}.json`);
  } catch {
    return undefined;
  }
}

interface CachedBundle extends Omit<ConsoleBundle, "assets" | "buildMs"> {
  assets: [string, { contentType: string; base64: string }][];
}

async function writeCache(file: string, bundle: ConsoleBundle): Promise<void> {
  const cached: CachedBundle = {
    script: bundle.script,
    styles: bundle.styles,
    firstPage: bundle.firstPage,
    assets: [...bundle.assets].map(([name, a]) => [
      name,
      { contentType: a.contentType, base64: Buffer.from(a.contents).toString("base64") },
    ]),
  };
  await mkdir(dirname(file), { recursive: true });
  // Written whole, then renamed: a process reading it never sees half a file.
  const temp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(temp, JSON.stringify(cached));
  await rename(temp, file);
  // Builds of sources that changed since are of no use: only this one is kept.
  const dir = dirname(file);
  for (const name of await readdir(dir)) {
    if (name.endsWith(".json") && name !== basename(file)) await rm(join(dir, name), { force: true });
  }
}

function fromJson(text: string): ConsoleBundle | undefined {
  try {
    const cached = JSON.parse(text) as CachedBundle;
    const assets = new Map<string, ConsoleAsset>(
      cached.assets.map(([name, a]) => [
        name,
        { contentType: a.contentType, contents: new Uint8Array(Buffer.from(a.base64, "base64")) },
      ]),
    );
    if (!assets.has(cached.script) || !cached.firstPage?.every((name) => assets.has(name))) return undefined;
    return { ...cached, assets, buildMs: 0 };
  } catch {
    return undefined;
  }
}
