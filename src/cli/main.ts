/**
 * `hangar dev` / `hangar serve` / `hangar worker`: parse flags, build the Config, start the server,
 * shut down on a signal.
 *
 * Contract with callers and tests:
 *   - success: exactly one line on stdout, `Hangar listening on <url>` (the real bound address), or for
 *     `hangar worker` (no HTTP) `Hangar worker ready`;
 *     everything else goes to stderr;
 *   - exit 2: usage errors (unknown command or flag, missing flag value);
 *   - exit 1: configuration errors, graphs that fail to load, a port in use, any other startup failure
 *     (message only; the stack with --log-level debug);
 *   - SIGINT/SIGTERM: `shutting down`, wait for the server to close, exit 0; a second signal exits 1 at once.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { type Config, ConfigError, loadConfig } from "../config/index.js";
import { createLogger, type Logger } from "../logger.js";
import type { RunningServer } from "../server/index.js";
import { ADMIN_COMMANDS, type AdminCommand } from "./admin.js";

const COMMANDS = {
  dev: "Run the agent server for local development",
  serve: "Run the agent server for production (with --no-workers: the API only)",
  worker: "Execute runs only, beside API processes (needs --postgres-uri and --redis-uri)",
} as const;
type Command = keyof typeof COMMANDS;

const OPTIONS = {
  config: { type: "string", short: "c" },
  host: { type: "string" },
  port: { type: "string", short: "p" },
  "data-dir": { type: "string" },
  workers: { type: "string" },
  "executor-threads": { type: "string" },
  "sqlite-synchronous": { type: "string" },
  "postgres-uri": { type: "string" },
  "redis-uri": { type: "string" },
  "no-workers": { type: "boolean" },
  "log-level": { type: "string" },
  "allow-unauthenticated": { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;

const OPTIONS_HELP = `Options:
  -c, --config <path>         langgraph.json, or the directory holding it   [HANGAR_CONFIG]  (./langgraph.json)
      --host <host>           Address to listen on                          [HANGAR_HOST]    (127.0.0.1)
  -p, --port <port>           Port to listen on; 0 picks a free port        [HANGAR_PORT]    (2024)
      --data-dir <path>       Where the SQLite database lives               [HANGAR_DATA_DIR] (<config dir>/.hangar)
      --workers <n>           Runs executing at once in this process        [HANGAR_WORKERS] (32)
      --executor-threads <n>  Threads executing runs beside the API's; 0 = in the API's thread
                                               [HANGAR_EXECUTOR_THREADS] (cores - 1, at most 4; 0 with Redis)
      --sqlite-synchronous <normal|full>                                    [HANGAR_SQLITE_SYNCHRONOUS] (normal)
      --postgres-uri <uri>    Store everything in Postgres, not SQLite      [POSTGRES_URI]
      --redis-uri <uri>       Share run streams and signals between processes [REDIS_URI]
      --no-workers            API only: runs execute in \`hangar worker\` processes
      --log-level <debug|info|warn|error>                                   [HANGAR_LOG_LEVEL] (info)
      --allow-unauthenticated serve with no API key on a non-loopback host  [HANGAR_ALLOW_UNAUTHENTICATED]
  -h, --help                  Show help
      --version               Show the version

Flags win over HANGAR_* variables, which win over the "hangar" section of langgraph.json
({"hangar": {"host", "port", "data_dir", "workers", "executor_threads"}}). Also read from the environment:
HANGAR_STREAM_RETENTION_SECONDS (300), LANGGRAPH_CONFIG (default assistant configs by graph id),
HANGAR_API_KEYS (key:organization,… — with any key configured, every request needs X-Api-Key),
HANGAR_LEASE_SECONDS (30: a dead worker's runs are recovered after this), HANGAR_REDIS_PREFIX (hangar:).

Administration (on the data dir; works while the server runs):
  hangar keys create --org <name> | keys list | keys revoke <id|prefix>
  hangar orgs set <name> --sandbox-storage-quota <size> | orgs list | orgs show <name>
  hangar migrate [--postgres-uri <uri>]   apply pending database migrations and exit
  hangar images import <name> <archive|dir> | images list | images rm <name>   sandbox images`;

function usage(command?: Command): string {
  if (command) return `Usage: hangar ${command} [options]\n\n${COMMANDS[command]}.\n\n${OPTIONS_HELP}\n`;
  const list = Object.entries(COMMANDS)
    .map(([name, what]) => `  ${name.padEnd(8)} ${what}`)
    .join("\n");
  return `Usage: hangar <command> [options]\n\nCommands:\n${list}\n\n${OPTIONS_HELP}\n\nRun 'hangar <command> --help' for details.\n`;
}

/** Runs the CLI. Reports through process.exitCode; returns once the server has stopped (or never started). */
export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  if (argv[0] !== undefined && Object.hasOwn(ADMIN_COMMANDS, argv[0])) {
    const { runAdmin } = await import("./admin.js");
    return runAdmin(argv[0] as AdminCommand, argv.slice(1));
  }
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    return usageError(describeArgsError(err as Error));
  }
  const { values, positionals } = parsed;
  if (values.version) {
    process.stdout.write(`hangar ${packageVersion()}\n`);
    return;
  }
  const [name, ...extra] = positionals;
  if (name === undefined) {
    if (values.help) {
      process.stdout.write(usage());
      return;
    }
    return usageError("missing command");
  }
  if (!Object.hasOwn(COMMANDS, name)) return usageError(`unknown command ${JSON.stringify(name)}`);
  const command = name as Command;
  if (values.help) {
    process.stdout.write(usage(command));
    return;
  }
  if (extra.length > 0) return usageError(`unexpected argument ${JSON.stringify(extra[0])}`, command);

  let config: Config;
  try {
    config = loadConfig({
      mode: command,
      flags: {
        config: values.config,
        host: values.host,
        port: values.port,
        dataDir: values["data-dir"],
        workers: values.workers,
        executorThreads: values["executor-threads"],
        sqliteSynchronous: values["sqlite-synchronous"],
        postgresUri: values["postgres-uri"],
        redisUri: values["redis-uri"],
        noWorkers: values["no-workers"],
        logLevel: values["log-level"],
        allowUnauthenticated: values["allow-unauthenticated"],
      },
      env: process.env,
      cwd: process.cwd(),
    });
  } catch (err) {
    return fail(err, wantsStacks(values["log-level"] ?? process.env.HANGAR_LOG_LEVEL));
  }
  await run(config, createLogger(config.logLevel));
}

async function run(config: Config, log: Logger): Promise<void> {
  for (const warning of config.warnings) log.warn(warning);
  const shutdown = onShutdownSignal(log);
  let server: RunningServer;
  try {
    const { startServer } = await import("../server/index.js");
    server = await startServer(config, log);
  } catch (err) {
    shutdown.dispose();
    return fail(err, config.logLevel === "debug", config);
  }

  process.stdout.write(
    config.mode === "worker" ? "Hangar worker ready\n" : `Hangar listening on ${server.url}\n`,
  );
  if (config.mode === "dev") {
    process.stderr.write(devBanner(config, server));
  } else {
    log.info(config.mode === "worker" ? "worker started" : "server started", {
      url: server.url || undefined,
      graphs: config.graphs.map((g) => g.id).join(","),
      data_dir: config.dataDir,
      workers: config.workers,
      executor_threads: config.executorThreads,
    });
  }

  await shutdown.requested;
  try {
    await server.close();
    process.exitCode = 0;
    log.info("stopped");
  } catch (err) {
    process.exitCode = 1;
    log.error("shutdown failed", { error: err instanceof Error ? err.message : String(err) });
  } finally {
    shutdown.dispose();
    exitIfStuck(log);
  }
}

/**
 * The first SIGINT/SIGTERM resolves `requested` (a signal during startup is remembered and acted on
 * once the server is up); the second exits with 1 immediately, whatever is still in flight.
 */
function onShutdownSignal(log: Logger): { requested: Promise<NodeJS.Signals>; dispose(): void } {
  let resolve!: (signal: NodeJS.Signals) => void;
  const requested = new Promise<NodeJS.Signals>((r) => {
    resolve = r;
  });
  let received = false;
  const handler = (signal: NodeJS.Signals) => {
    if (received) {
      log.error("second signal: exiting now", { signal });
      process.exit(1);
    }
    received = true;
    log.info("shutting down", { signal });
    resolve(signal);
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
  return {
    requested,
    dispose() {
      process.off("SIGINT", handler);
      process.off("SIGTERM", handler);
    },
  };
}

/**
 * After a failed start or a finished shutdown the event loop should drain and the process exit by
 * itself. If something (a stray socket, a timer) keeps it alive, do not hang the terminal or a
 * supervisor: exit anyway. The timer is unref'd, so it never delays a clean exit.
 */
function exitIfStuck(log?: Logger, afterMs = 3000): void {
  setTimeout(() => {
    log?.warn("handles still open after shutdown; exiting");
    process.exit();
  }, afterMs).unref();
}

/** node's parseArgs messages explain `--` for positionals at length; keep the part that matters. */
function describeArgsError(err: Error): string {
  const unknown = /^Unknown option '([^']+)'/.exec(err.message);
  return unknown ? `unknown option ${unknown[1]}` : err.message;
}

function usageError(message: string, command?: Command): void {
  process.stderr.write(`hangar: ${message}\n\n${usage(command)}`);
  process.exitCode = 2;
}

function fail(err: unknown, withStack: boolean, config?: Config): void {
  process.stderr.write(`hangar: ${describeStartupError(err, config)}\n`);
  if (withStack && err instanceof Error && !(err instanceof ConfigError) && err.stack) {
    process.stderr.write(`${err.stack}\n`);
  }
  process.exitCode = 1;
  exitIfStuck();
}

/** Errors whose message says all there is to say: a project file that does not load. */
const STARTUP_ERRORS = ["GraphLoadError", "AuthLoadError", "CustomAppLoadError", "UiBundleError"];

export function describeStartupError(err: unknown, config?: Config): string {
  if (!(err instanceof Error)) return String(err);
  if (err instanceof ConfigError || STARTUP_ERRORS.includes(err.name)) return err.message;
  const code = systemErrorCode(err);
  const where = config ? { host: config.host, port: config.port } : undefined;
  if (where && code === "EADDRINUSE") {
    return `Port ${where.port} on ${where.host} is already in use; pick another with --port or HANGAR_PORT`;
  }
  if (where && code === "EACCES") {
    return `Not allowed to listen on ${where.host}:${where.port} (ports below 1024 need privileges); pick another with --port or HANGAR_PORT`;
  }
  if (where && (code === "EADDRNOTAVAIL" || code === "ENOTFOUND")) {
    return `Cannot listen on ${where.host}: not an address of this machine; pick another with --host or HANGAR_HOST`;
  }
  return err.message || err.name;
}

/** Listen errors may arrive wrapped; look down the `cause` chain for the system error code. */
function systemErrorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return undefined;
}

function wantsStacks(level: string | undefined): boolean {
  return level?.trim().toLowerCase() === "debug";
}

function devBanner(config: Config, server: RunningServer): string {
  const graphs = config.graphs.map((g) => g.id).join(", ");
  // Studio runs in the browser on this machine: it reaches the API as a local client does.
  const local = server.apiUrl;
  return [
    "",
    `  Hangar dev server  ${server.url}`,
    "",
    `  API        ${local}`,
    `  Studio     ${studioUrl(local, process.env)}`,
    `  API docs   ${local}/docs`,
    `  Graphs     ${graphs}`,
    `  Data dir   ${config.dataDir}`,
    "",
    "",
  ].join("\n");
}

/**
 * LangGraph Studio's link for this server, as `langgraph dev` prints it: `<LangSmith UI>/studio?baseUrl=…`.
 * The UI follows `LANGSMITH_ENDPOINT` (or `LANGCHAIN_ENDPOINT`) as the LangSmith SDK derives it: a
 * self-hosted `…/api/v1` or `…/api` without it, the EU, dev and beta regions, else smith.langchain.com.
 */
export function studioUrl(baseUrl: string, env: NodeJS.ProcessEnv): string {
  return `${langsmithUiUrl(env.LANGSMITH_ENDPOINT || env.LANGCHAIN_ENDPOINT)}/studio?baseUrl=${baseUrl}`;
}

function langsmithUiUrl(apiUrl: string | undefined): string {
  const api = apiUrl?.trim().replace(/\/+$/, "");
  if (!api) return "https://smith.langchain.com";
  let host = "";
  try {
    host = new URL(api).hostname;
  } catch {
    return "https://smith.langchain.com";
  }
  if (host === "localhost" || host === "127.0.0.1" || host === "::1") return "http://localhost:3000";
  if (api.endsWith("/api/v1")) return api.slice(0, -"/api/v1".length);
  const first = api.split(".", 1)[0]!;
  if (api.includes("/api") && !first.endsWith("api")) return api.replace("/api", "");
  if (first.includes("dev")) return "https://dev.smith.langchain.com";
  if (first.includes("eu")) return "https://eu.smith.langchain.com";
  if (first.includes("beta")) return "https://beta.smith.langchain.com";
  return "https://smith.langchain.com";
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    return String(pkg.version);
  } catch {
    return "unknown";
  }
}
