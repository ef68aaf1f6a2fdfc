/**
 * Generative UI (langgraph.json `ui`): each agent's components file is bundled for the browser with
 * esbuild, in memory, when the server starts (and again when a file changes, in `hangar dev`).
 *
 * What a bundle is, as `LoadExternalComponent` (`@langchain/langgraph-sdk/react-ui`) loads it:
 * - `entrypoint.js`: an IIFE that defines the global `__LGUI_<agent>` (the agent name with every
 *   character but ASCII letters and digits replaced by `_`), whose `render(name, shadowRootId)` mounts
 *   the component `name` of the file's default export (a `{name: Component}` map) in a new element of
 *   that element's shadow root, through `window[Symbol.for("LGUI_EXT_STORE")].respond(...)`;
 * - `entrypoint.css`: the CSS the components import, when they import any.
 *
 * React, react-dom, `@langchain/langgraph-sdk` (and their subpaths) and `ui_config.shared` are not
 * bundled: the page provides them, and the bundle takes them from
 * `globalThis[Symbol.for("LGUI_REQUIRE")]`, which the SDK's react-ui module installs.
 */
import { basename } from "node:path";
import {
  type BuildContext,
  type BuildOptions,
  type BuildResult,
  context,
  formatMessages,
  type Message,
  type OutputFile,
  type Plugin,
} from "esbuild";
import { getMimeType } from "hono/utils/mime";
import type { UiSpec } from "../config/index.js";
import type { Logger } from "../logger.js";

/** Modules the page always provides (the SDK's LGUI_REQUIRE answers them), beside `ui_config.shared`. */
const PAGE_MODULES = ["react", "react-dom", "@langchain/langgraph-sdk"];

export interface UiFile {
  basename: string;
  contentType: string;
  contents: Uint8Array;
}

/** A components file that does not build; the message names the agent, the file and esbuild's errors. */
export class UiBundleError extends Error {
  override name = "UiBundleError";
}

/** The global a bundle defines: `__LGUI_` + the agent name with anything but [A-Za-z0-9] as `_`. */
export const uiGlobalName = (agent: string) => `__LGUI_${agent.replace(/[^a-zA-Z0-9]/g, "_")}`;

/**
 * The bundles of every agent, by agent and file name. In watch mode a rebuild replaces an agent's
 * files when it succeeds; a failing one is logged and the last good files keep being served.
 */
export class UiBundles {
  private readonly byAgent = new Map<string, Map<string, UiFile>>();
  private readonly contexts: BuildContext[] = [];

  private constructor(private readonly log: Logger) {}

  /** Bundles every agent's components (in parallel); throws UiBundleError naming the first that fails. */
  static async build(spec: UiSpec, opts: { projectDir: string; watch: boolean; log: Logger }) {
    const bundles = new UiBundles(opts.log);
    const results = await Promise.allSettled(
      spec.agents.map((agent) => bundles.start(agent, spec.shared, opts.projectDir, opts.watch)),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) {
      await bundles.close();
      throw failed.reason;
    }
    return bundles;
  }

  /** The agent's files (the script first), or undefined for an agent without components. */
  files(agent: string): UiFile[] | undefined {
    const files = this.byAgent.get(agent);
    return files && [...files.values()];
  }

  file(agent: string, name: string): UiFile | undefined {
    return this.byAgent.get(agent)?.get(name);
  }

  async close(): Promise<void> {
    await Promise.all(this.contexts.splice(0).map((ctx) => ctx.dispose()));
  }

  private async start(
    { agent, file }: UiSpec["agents"][number],
    shared: string[],
    projectDir: string,
    watch: boolean,
  ): Promise<void> {
    let first: ((result: BuildResult) => void) | undefined;
    const firstBuild = new Promise<BuildResult>((resolve) => (first = resolve));
    const onEnd: Plugin = {
      name: "hangar-ui-output",
      setup: (build) =>
        build.onEnd(async (result) => {
          if (first) {
            first(result);
            first = undefined;
            if (result.errors.length === 0) this.byAgent.set(agent, outputs(result.outputFiles));
            return;
          }
          if (result.errors.length > 0) {
            this.log.error("UI components do not build; the previous bundle is still served", {
              agent,
              file,
              errors: (await describe(result.errors)).trim(),
            });
            return;
          }
          this.byAgent.set(agent, outputs(result.outputFiles));
          this.log.info("UI components rebuilt", { agent });
        }),
    };
    const ctx = await context({
      ...buildOptions(agent, projectDir),
      plugins: [componentsEntry(file), pageModules([...PAGE_MODULES, ...shared]), onEnd],
    });
    this.contexts.push(ctx);
    let result: BuildResult;
    if (watch) {
      // esbuild's watch mode builds once at once, then again when a file it read changes.
      await ctx.watch();
      result = await firstBuild;
    } else {
      result = await ctx.rebuild().catch((err: { errors?: Message[] }) => ({
        errors: err.errors ?? [],
        warnings: [],
        outputFiles: undefined,
        metafile: undefined,
        mangleCache: undefined,
      }));
    }
    if (!watch) await ctx.dispose();
    if (result.errors.length > 0) {
      throw new UiBundleError(
        `ui["${agent}"] (${file}): the UI components do not build:\n${(await describe(result.errors)).trimEnd()}`,
      );
    }
  }
}

function buildOptions(agent: string, projectDir: string): BuildOptions {
  return {
    entryPoints: [{ in: ENTRY, out: "entrypoint" }],
    // Nothing is written (write: false); esbuild names the outputs after this folder.
    outdir: `${projectDir}/.hangar-ui/${agent}`,
    write: false,
    bundle: true,
    format: "iife",
    globalName: uiGlobalName(agent),
    platform: "browser",
    target: "es2020",
    jsx: "automatic",
    absWorkingDir: projectDir,
    // Errors are reported by the caller (start-up) or logged (rebuilds), not printed by esbuild.
    logLevel: "silent",
  };
}

const ENTRY = "hangar-ui-entry";

/** The entry module: the components file's default export, and the `render` the snippet calls. */
function componentsEntry(file: string): Plugin {
  return {
    name: "hangar-ui-entry",
    setup(build) {
      build.onResolve({ filter: /^hangar-ui-entry$/ }, (args) =>
        args.kind === "entry-point" ? { path: ENTRY, namespace: "hangar-ui" } : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: "hangar-ui" }, () => ({
        resolveDir: build.initialOptions.absWorkingDir,
        loader: "js",
        contents: `import components from ${JSON.stringify(file)};
const STORE = Symbol.for("LGUI_EXT_STORE");
export function render(name, shadowRootId) {
  const component = Object.prototype.hasOwnProperty.call(components ?? {}, name) ? components[name] : undefined;
  if (component == null) throw new Error("No UI component named " + JSON.stringify(name) + " in " + ${JSON.stringify(basename(file))});
  const root = document.getElementById(shadowRootId)?.shadowRoot;
  if (!root) throw new Error("No shadow root on element #" + shadowRootId);
  const target = document.createElement("div");
  root.appendChild(target);
  window[STORE].respond(shadowRootId, component, target);
}
`,
      }));
    },
  };
}

/** `react`, `react/jsx-runtime`, a shared module…: taken from the page's LGUI_REQUIRE when the bundle runs. */
function pageModules(names: string[]): Plugin {
  const escaped = names.map((n) => n.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"));
  const filter = new RegExp(`^(${escaped.join("|")})(/.*)?$`);
  const importKinds = new Set(["import-statement", "require-call", "dynamic-import", "require-resolve"]);
  return {
    name: "hangar-ui-page-modules",
    setup(build) {
      build.onResolve({ filter }, (args) =>
        importKinds.has(args.kind) ? { path: args.path, namespace: "hangar-ui-page" } : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: "hangar-ui-page" }, (args) => ({
        loader: "js",
        contents: `const load = globalThis[Symbol.for("LGUI_REQUIRE")];
if (typeof load !== "function") {
  throw new Error("UI components need the page's modules: load them with LoadExternalComponent from @langchain/langgraph-sdk/react-ui");
}
module.exports = load(${JSON.stringify(args.path)});
`,
      }));
    },
  };
}

/** The script first, then the style sheet (the snippet lists them in this order). */
function outputs(files: OutputFile[] | undefined): Map<string, UiFile> {
  const sorted = [...(files ?? [])].sort((a, b) => rank(a.path) - rank(b.path));
  return new Map(
    sorted.map((f) => {
      const name = basename(f.path);
      return [name, { basename: name, contents: f.contents, contentType: getMimeType(name) ?? "text/plain" }];
    }),
  );
}

const rank = (path: string) => (path.endsWith(".js") ? 0 : path.endsWith(".css") ? 1 : 2);

async function describe(errors: Message[]): Promise<string> {
  return (await formatMessages(errors, { kind: "error", color: false })).join("");
}
