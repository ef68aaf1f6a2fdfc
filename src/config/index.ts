/**
 * langgraph.json + environment + command-line flags → one typed, validated, frozen Config.
 *
 * Every setting is resolved with the same precedence: flag > `HANGAR_*` environment variable >
 * langgraph.json (its optional `"hangar": {host, port, data_dir, workers}` section) > default.
 * Paths given by a flag or variable are relative to the working directory; paths inside langgraph.json
 * are relative to the file's directory. Loading has no side effects: nothing is written to process.env
 * (the server applies `env`), nothing is created on disk.
 */
import { statSync } from "node:fs";
import { availableParallelism } from "node:os";
import path from "node:path";
import { ConfigError } from "./errors.js";
import { resolveLimits, type TenantLimits } from "./limits.js";
import {
  type ProjectFile,
  readProjectFile,
  resolveEnv,
  resolveGraphs,
  resolveModuleRef,
  resolveUi,
} from "./project-file.js";
import { resolveThreadTtl, resolveWebhooks, type ThreadTtlConfig, type WebhooksConfig } from "./sections.js";
import {
  publicBaseUrl,
  resolveSandboxSettings,
  type SandboxSettings,
  schemaResolveTimeoutMs,
} from "./settings.js";

export { ConfigError } from "./errors.js";
export type { ThreadTtlConfig, WebhooksConfig, WebhookUrlPolicy } from "./sections.js";
export type { SandboxEngineName, SandboxSettings } from "./settings.js";

export interface GraphSpec {
  id: string;
  /** Absolute path of the module that exports the graph. */
  file: string;
  /** Named export; `default` when the spec has no `:export` suffix. */
  exportName: string;
  description?: string;
}

/** langgraph.json `auth`: the project's `Auth` instance (custom authentication and authorization). */
export interface AuthSpec {
  /** Absolute path of the module that exports it. */
  file: string;
  exportName: string;
  /** Studio requests (`x-auth-scheme: langsmith`, `hangar dev` only) go through the handler too. */
  disableStudioAuth: boolean;
  /** `auth.openapi.securitySchemes`: what /openapi.json says the handler checks. */
  securitySchemes?: Record<string, Record<string, unknown>>;
}

/** langgraph.json `ui` and `ui_config`: generative UI components, bundled for the browser at start-up. */
export interface UiSpec {
  /** One components file per agent (the `namespace` a client asks for, usually the graph id). */
  agents: { agent: string /** Absolute path. */; file: string }[];
  /** `ui_config.shared`: modules left out of the bundles, taken from the page at run time. */
  shared: string[];
}

export interface CorsConfig {
  allow_origins?: string[];
  allow_methods?: string[];
  allow_headers?: string[];
  allow_credentials?: boolean;
  allow_origin_regex?: string;
  expose_headers?: string[];
  max_age?: number;
}

/** langgraph.json `http.app`: the project's Hono app, served in front of the built-in routes. */
export interface CustomAppSpec {
  /** Absolute path of the module that exports it. */
  file: string;
  exportName: string;
  /**
   * Authentication (API keys, the auth handler) runs before the app, so it covers its middleware and
   * routes (`auth_first`, as under `langgraph dev`); false: after its middleware, for the built-in routes
   * only (`middleware_first`, `enable_custom_route_auth: false`).
   */
  authenticated: boolean;
}

/** Which request headers a run gets in `configurable` (`*` matches any run of characters). */
export interface HeaderRules {
  includes: string[];
  excludes: string[];
}

export interface HttpConfig {
  app?: CustomAppSpec;
  /** Everything is served under this path (`/my-api`); other paths are 404. */
  mount_prefix?: string;
  configurable_headers: HeaderRules;
  cors?: CorsConfig;
  disable_a2a?: boolean;
  disable_mcp?: boolean;
  disable_assistants?: boolean;
  disable_threads?: boolean;
  disable_runs?: boolean;
  disable_store?: boolean;
  disable_meta?: boolean;
  /** No `/ui` routes even when langgraph.json has `ui`. */
  disable_ui?: boolean;
}

export type LogLevel = "debug" | "info" | "warn" | "error";
export type SqliteSynchronous = "normal" | "full";

export interface Config {
  /** `worker`: executes runs only, no HTTP server (scale-out). */
  mode: "dev" | "serve" | "worker";
  /** Absolute path of langgraph.json. */
  configPath: string;
  /** Its directory; graph paths, the env file and the default data dir are relative to it. */
  projectDir: string;
  host: string;
  /** 0 asks the OS for a free port. */
  port: number;
  /** Absolute; default `<projectDir>/.hangar`. */
  dataDir: string;
  graphs: GraphSpec[];
  /** From langgraph.json `env` (an object, or a .env file). Not applied to process.env here. */
  env: Record<string, string>;
  http: HttpConfig;
  /** Runs executing concurrently per process; 0 (`--no-workers`) = an API process that executes none. */
  workers: number;
  /**
   * Worker threads that execute the runs (they share `workers` between them), so graphs use other cores
   * than the HTTP API; 0 = runs execute on the API's own thread. Only without Redis: scaled out, add
   * `hangar worker` processes instead.
   */
  executorThreads: number;
  sqliteSynchronous: SqliteSynchronous;
  /** How long a finished run's event log stays joinable. */
  streamRetentionSeconds: number;
  /**
   * What each thread keeps of its protocol-v2 events (`/threads/{id}/stream/events`), at most: this many
   * events (`HANGAR_THREAD_EVENTS_MAX`) and this many bytes of their JSON (`HANGAR_THREAD_EVENTS_MAX_BYTES`);
   * the oldest go first.
   */
  threadEventsMax: number;
  threadEventsMaxBytes: number;
  logLevel: LogLevel;
  /** From `LANGGRAPH_CONFIG`: `{ "<graph id>": { ...config, context?: {...} } }`, applied to default assistants. */
  defaultAssistantConfigs: Record<string, Record<string, unknown>>;
  /** Keys from `HANGAR_API_KEYS` (`key:organization,…`): key → organization. Keys made with `hangar keys create` live in the database. */
  apiKeys: Record<string, string>;
  /** `hangar serve` on a non-loopback address with no API key refuses to start unless this is set. */
  allowUnauthenticated: boolean;
  /** Things the user should hear about that do not stop the server (settings Hangar ignores). */
  warnings: string[];
  /** `--postgres-uri` / `POSTGRES_URI`: store everything in Postgres instead of the SQLite file in dataDir. */
  postgresUri?: string;
  /** `--redis-uri` / `REDIS_URI`: run event logs, wake-ups and stop signals shared by several processes. */
  redisUri?: string;
  /** Prefix of every Redis key and channel (`HANGAR_REDIS_PREFIX`), so deployments can share a Redis. */
  redisPrefix: string;
  /** How long a worker holds a claimed run without a heartbeat before the sweeper recovers it. */
  leaseSeconds: number;
  /** Largest request body accepted (`HANGAR_MAX_BODY_MB`); larger ones get 413. */
  maxBodyBytes: number;
  /** Largest file a sandbox upload takes (`HANGAR_SANDBOX_MAX_UPLOAD_MB`); counted as it arrives, 413 past it. */
  maxUploadBytes: number;
  /**
   * Output all sandbox `POST /execute` calls together may hold at once
   * (`HANGAR_SANDBOX_EXECUTE_OUTPUT_BUDGET_MB`); a command that finds it spent is stopped, `truncated`.
   */
  executeOutputBudgetBytes: number;
  /**
   * How long a sandbox file transfer may move no byte before it is broken off
   * (`HANGAR_SANDBOX_FILE_IDLE_TIMEOUT_SECONDS`): a client that stops reading or sending holds it no longer.
   */
  fileIdleTimeoutSeconds: number;
  /** langgraph.json `auth.path`, when set. */
  auth?: AuthSpec;
  /** langgraph.json `ui` (with `ui_config`), when it names at least one agent. */
  ui?: UiSpec;
  /** langgraph.json `checkpointer.ttl`: thread expiry (without it, only threads given a TTL of their own expire). */
  threadTtl: ThreadTtlConfig;
  /** langgraph.json `webhooks`: URL policy, headers and payload fields of run webhooks. */
  webhooks?: WebhooksConfig;
  /** What one organization may hold (crons, sandboxes): `HANGAR_*` variables, defaults from the machine. */
  limits: TenantLimits;
  /** The sandbox engine, its image store and process limit, the default organization's storage quota. */
  sandboxes: SandboxSettings;
  /** `HANGAR_PUBLIC_URL`: this server's public base URL, no trailing slash (A2A agent cards' `url`). */
  publicUrl?: string;
  /** `LANGGRAPH_API_URL`: the API graph code is told to call; absent: this server's own, once it listens. */
  apiUrl?: string;
  /** `LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS`: how long one reading of graph schemas from source may take. */
  schemaResolveTimeoutMs: number;
}

export interface ConfigFlags {
  config: string;
  host: string;
  /** A string is accepted so the CLI can hand over what the user typed and get a precise error back. */
  port: number | string;
  dataDir: string;
  workers: number | string;
  executorThreads: number | string;
  sqliteSynchronous: string;
  logLevel: string;
  allowUnauthenticated: boolean;
  postgresUri: string;
  redisUri: string;
  noWorkers: boolean;
}

export interface LoadConfigOptions {
  mode: Config["mode"];
  flags: Partial<ConfigFlags>;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export const DEFAULTS = Object.freeze({
  configFile: "langgraph.json",
  host: "127.0.0.1",
  port: 2024,
  dataDirName: ".hangar",
  workers: 32,
  /** Executor threads: one per core beyond the first (the API's), at most this many. */
  maxExecutorThreads: 4,
  sqliteSynchronous: "normal" as SqliteSynchronous,
  streamRetentionSeconds: 300,
  threadEventsMax: 10_000,
  threadEventsMaxBytes: 16 * 1024 * 1024,
  logLevel: "info" as LogLevel,
  redisPrefix: "hangar:",
  leaseSeconds: 30,
  maxBodyMb: 32,
  maxUploadMb: 512,
  executeOutputBudgetMb: 256,
  fileIdleTimeoutSeconds: 300,
});

const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];
const SQLITE_SYNCHRONOUS: readonly SqliteSynchronous[] = ["normal", "full"];

export function loadConfig(opts: LoadConfigOptions): Config {
  const { flags, env, cwd } = opts;
  const configPath = locateConfigFile(flags.config, env.HANGAR_CONFIG, cwd);
  const projectDir = path.dirname(configPath);
  const file = readProjectFile(configPath);
  const inFile = (key: string) => `${configPath}: hangar.${key}`;

  // A source is [where the value came from, for error messages; the raw value]. Empty env vars count as unset.
  type Source = [label: string, raw: string | number | undefined];
  const first = (...sources: Source[]): Source | undefined =>
    sources.find(([, raw]) => raw !== undefined && raw !== "");

  const host = first(
    ["--host", flags.host],
    ["HANGAR_HOST", env.HANGAR_HOST],
    [inFile("host"), file.hangar.host],
  );
  const port = first(
    ["--port", flags.port],
    ["HANGAR_PORT", env.HANGAR_PORT],
    [inFile("port"), file.hangar.port],
  );
  const workers = first(
    ["--workers", flags.workers],
    ["HANGAR_WORKERS", env.HANGAR_WORKERS],
    [inFile("workers"), file.hangar.workers],
  );
  const threads = first(
    ["--executor-threads", flags.executorThreads],
    ["HANGAR_EXECUTOR_THREADS", env.HANGAR_EXECUTOR_THREADS],
    [inFile("executor_threads"), file.hangar.executor_threads],
  );
  const sync = first(
    ["--sqlite-synchronous", flags.sqliteSynchronous],
    ["HANGAR_SQLITE_SYNCHRONOUS", env.HANGAR_SQLITE_SYNCHRONOUS],
  );
  const logLevel = first(["--log-level", flags.logLevel], ["HANGAR_LOG_LEVEL", env.HANGAR_LOG_LEVEL]);
  const retention = first(["HANGAR_STREAM_RETENTION_SECONDS", env.HANGAR_STREAM_RETENTION_SECONDS]);
  const threadEventsMax = first(["HANGAR_THREAD_EVENTS_MAX", env.HANGAR_THREAD_EVENTS_MAX]);
  const threadEventsMaxBytes = first(["HANGAR_THREAD_EVENTS_MAX_BYTES", env.HANGAR_THREAD_EVENTS_MAX_BYTES]);
  const postgres = first(["--postgres-uri", flags.postgresUri], ["POSTGRES_URI", env.POSTGRES_URI]);
  if (postgres && !/^postgres(ql)?:\/\//.test(String(postgres[1]))) {
    throw new ConfigError(`${postgres[0]}: must be a postgres:// or postgresql:// URI`);
  }
  const redis = first(["--redis-uri", flags.redisUri], ["REDIS_URI", env.REDIS_URI]);
  if (redis && !/^rediss?:\/\//.test(String(redis[1]))) {
    throw new ConfigError(`${redis[0]}: must be a redis:// or rediss:// URI`);
  }
  if (redis && !postgres) {
    throw new ConfigError(
      `${redis[0]}: Redis connects several processes that share one database; set --postgres-uri (POSTGRES_URI) too`,
    );
  }
  const lease = first(["HANGAR_LEASE_SECONDS", env.HANGAR_LEASE_SECONDS]);
  const maxBody = first(["HANGAR_MAX_BODY_MB", env.HANGAR_MAX_BODY_MB]);
  const maxUpload = first(["HANGAR_SANDBOX_MAX_UPLOAD_MB", env.HANGAR_SANDBOX_MAX_UPLOAD_MB]);
  const executeBudget = first([
    "HANGAR_SANDBOX_EXECUTE_OUTPUT_BUDGET_MB",
    env.HANGAR_SANDBOX_EXECUTE_OUTPUT_BUDGET_MB,
  ]);
  const fileIdle = first([
    "HANGAR_SANDBOX_FILE_IDLE_TIMEOUT_SECONDS",
    env.HANGAR_SANDBOX_FILE_IDLE_TIMEOUT_SECONDS,
  ]);
  const noWorkers = flags.noWorkers === true;
  if (noWorkers && opts.mode === "worker")
    throw new ConfigError("--no-workers: a worker process executes runs");
  if (noWorkers && flags.workers !== undefined)
    throw new ConfigError("--no-workers: cannot be combined with --workers");
  if ((noWorkers || opts.mode === "worker") && !redis) {
    throw new ConfigError(
      `${noWorkers ? "--no-workers" : "hangar worker"}: API and worker processes find each other through Redis; set --redis-uri (REDIS_URI) and --postgres-uri (POSTGRES_URI)`,
    );
  }
  const workerCount = noWorkers
    ? 0
    : workers
      ? integer(workers, 1, Number.MAX_SAFE_INTEGER)
      : DEFAULTS.workers;
  const executorThreads = threads
    ? integer(threads, 0, 64)
    : Math.min(DEFAULTS.maxExecutorThreads, Math.max(0, availableParallelism() - 1));
  if (threads && executorThreads > 0 && redis) {
    throw new ConfigError(
      `${threads[0]}: executor threads serve one process without Redis; scaled out, start more \`hangar worker\` processes`,
    );
  }

  const dataDir =
    firstPath(cwd, flags.dataDir, env.HANGAR_DATA_DIR) ??
    (file.hangar.data_dir !== undefined
      ? path.resolve(projectDir, file.hangar.data_dir)
      : path.join(projectDir, DEFAULTS.dataDirName));

  const fileEnv = resolveEnv(configPath, projectDir, file.env);
  const graphs = resolveGraphs(configPath, projectDir, file.graphs);
  const auth: AuthSpec | undefined = file.auth?.path
    ? {
        ...resolveModuleRef(configPath, projectDir, file.auth.path, "auth.path", "auth"),
        disableStudioAuth: file.auth.disable_studio_auth ?? false,
        ...(file.auth.openapi?.securitySchemes && { securitySchemes: file.auth.openapi.securitySchemes }),
      }
    : undefined;
  const warnings = [...file.warnings];
  const uiAgents = file.ui ? resolveUi(configPath, projectDir, file.ui) : [];
  const ui: UiSpec | undefined =
    uiAgents.length > 0 ? { agents: uiAgents, shared: file.ui_config?.shared ?? [] } : undefined;
  if (file.ui_config && !ui)
    warnings.push(`${configPath}: ui_config: no \`ui\` components to apply it to; ignored`);
  // Features' settings may be given in langgraph.json `env` too; the real environment wins, as the server
  // applies `env` to process.env without overriding it.
  const settingsEnv = { ...fileEnv, ...env };
  const publicUrl = publicBaseUrl(settingsEnv);
  const defaultAssistantConfigs = parseAssistantConfigs(
    env.LANGGRAPH_CONFIG ?? fileEnv.LANGGRAPH_CONFIG,
    graphs.map((g) => g.id),
    warnings,
  );

  const config: Config = {
    mode: opts.mode,
    configPath,
    projectDir,
    host: host ? String(host[1]) : DEFAULTS.host,
    port: port ? integer(port, 0, 65535) : DEFAULTS.port,
    dataDir,
    graphs,
    env: fileEnv,
    http: resolveHttp(configPath, projectDir, file.http),
    workers: workerCount,
    // More threads than runs at once would idle; with Redis, runs execute in this thread (or in workers).
    executorThreads: redis ? 0 : Math.min(executorThreads, workerCount),
    sqliteSynchronous: sync ? oneOf(sync, SQLITE_SYNCHRONOUS) : DEFAULTS.sqliteSynchronous,
    streamRetentionSeconds: retention
      ? integer(retention, 0, Number.MAX_SAFE_INTEGER)
      : DEFAULTS.streamRetentionSeconds,
    threadEventsMax: threadEventsMax ? integer(threadEventsMax, 1, 10_000_000) : DEFAULTS.threadEventsMax,
    threadEventsMaxBytes: threadEventsMaxBytes
      ? integer(threadEventsMaxBytes, 1024, Number.MAX_SAFE_INTEGER)
      : DEFAULTS.threadEventsMaxBytes,
    logLevel: logLevel ? oneOf(logLevel, LOG_LEVELS) : DEFAULTS.logLevel,
    defaultAssistantConfigs,
    apiKeys: parseApiKeys(env.HANGAR_API_KEYS),
    allowUnauthenticated:
      flags.allowUnauthenticated === true || /^(1|true|yes)$/i.test(env.HANGAR_ALLOW_UNAUTHENTICATED ?? ""),
    warnings,
    ...(postgres && { postgresUri: String(postgres[1]) }),
    ...(redis && { redisUri: String(redis[1]) }),
    redisPrefix: env.HANGAR_REDIS_PREFIX || DEFAULTS.redisPrefix,
    leaseSeconds: lease ? integer(lease, 1, 86_400) : DEFAULTS.leaseSeconds,
    maxBodyBytes: (maxBody ? integer(maxBody, 1, 4096) : DEFAULTS.maxBodyMb) * 1024 * 1024,
    maxUploadBytes: (maxUpload ? integer(maxUpload, 1, 65_536) : DEFAULTS.maxUploadMb) * 1024 * 1024,
    executeOutputBudgetBytes:
      (executeBudget ? integer(executeBudget, 1, 65_536) : DEFAULTS.executeOutputBudgetMb) * 1024 * 1024,
    fileIdleTimeoutSeconds: fileIdle ? integer(fileIdle, 1, 86_400) : DEFAULTS.fileIdleTimeoutSeconds,
    ...(auth && { auth }),
    ...(ui && { ui }),
    threadTtl: resolveThreadTtl(file.checkpointer),
    limits: resolveLimits(settingsEnv),
    sandboxes: resolveSandboxSettings(settingsEnv, cwd),
    ...(publicUrl && { publicUrl }),
    ...(settingsEnv.LANGGRAPH_API_URL && { apiUrl: settingsEnv.LANGGRAPH_API_URL }),
    schemaResolveTimeoutMs: schemaResolveTimeoutMs(settingsEnv),
  };
  // Header templates read the real environment first, then langgraph.json `env` (which the server applies).
  const webhooks = resolveWebhooks(configPath, file.webhooks, settingsEnv);
  if (webhooks) config.webhooks = webhooks;
  if (webhooks && Object.keys(webhooks.headers).length && !webhooks.url?.allowedDomains.length)
    warnings.push(
      `${configPath}: webhooks.headers are sent only to hosts in webhooks.url.allowed_domains (and to this server's own paths); there is no such list, so deliveries to other hosts go without them`,
    );
  return deepFreeze(config);
}

/**
 * The request headers a run gets in `configurable` unless `http.configurable_headers` says otherwise:
 * `x-*` and the user agent, never credentials (the official servers' defaults; exclusions always apply).
 */
export const DEFAULT_HEADER_RULES: Readonly<HeaderRules> = Object.freeze({
  includes: ["x-*", "user-agent"],
  excludes: ["x-api-key", "x-tenant-id", "x-service-key"],
});

/** langgraph.json `http`, its module reference resolved and its switches reconciled into one meaning. */
function resolveHttp(configPath: string, projectDir: string, http: ProjectFile["http"]): HttpConfig {
  // logging_headers: Hangar logs no request headers, so there is nothing to keep out of the log.
  const {
    app,
    enable_custom_route_auth,
    middleware_order,
    configurable_headers,
    logging_headers: _,
    ...rest
  } = http;
  // Two orders are possible with a Hono app: authentication before all of it (the default, as the JS
  // server does), or after its middleware and for the built-in routes only (the Python server's default).
  const authenticated = enable_custom_route_auth ?? middleware_order !== "middleware_first";
  if (middleware_order === "middleware_first" && enable_custom_route_auth === true) {
    throw new ConfigError(
      `${configPath}: http.middleware_order: "middleware_first" runs the app's middleware before authentication, so its routes cannot be authenticated too (http.enable_custom_route_auth: true); use "auth_first" or drop one of the two`,
    );
  }
  if (middleware_order === "auth_first" && enable_custom_route_auth === false) {
    throw new ConfigError(
      `${configPath}: http.middleware_order: "auth_first" authenticates every request before the app, so its routes cannot be left open (http.enable_custom_route_auth: false); use "middleware_first" or drop one of the two`,
    );
  }
  const headers = configurable_headers ?? {};
  return {
    ...rest,
    ...(app !== undefined && {
      app: { ...resolveModuleRef(configPath, projectDir, app, "http.app", "app"), authenticated },
    }),
    configurable_headers: {
      includes: headers.includes ?? DEFAULT_HEADER_RULES.includes,
      excludes: [...DEFAULT_HEADER_RULES.excludes, ...(headers.excludes ?? [])],
    },
  };
}

/** `HANGAR_API_KEYS=key1:org-a,key2:org-b` → {key1: "org-a", key2: "org-b"}. */
function parseApiKeys(raw: string | undefined): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const entry of (raw ?? "").split(",")) {
    if (entry.trim() === "") continue;
    const at = entry.lastIndexOf(":");
    const key = entry.slice(0, at).trim();
    const org = entry.slice(at + 1).trim();
    if (at < 0 || key === "" || org === "") {
      throw new ConfigError(
        `HANGAR_API_KEYS: each entry must be "key:organization"; got ${JSON.stringify(`${entry.trim().slice(0, 6)}…`)}`,
      );
    }
    keys[key] = org;
  }
  return keys;
}

/** `--config` / `HANGAR_CONFIG` may name the file or the directory that holds langgraph.json. */
function locateConfigFile(flag: string | undefined, envValue: string | undefined, cwd: string): string {
  const given = flag || envValue || DEFAULTS.configFile;
  let configPath = path.resolve(cwd, given);
  if (statSync(configPath, { throwIfNoEntry: false })?.isDirectory()) {
    configPath = path.join(configPath, DEFAULTS.configFile);
  }
  const stat = statSync(configPath, { throwIfNoEntry: false });
  if (!stat) throw new ConfigError(`Config file not found: ${configPath}`);
  if (!stat.isFile()) throw new ConfigError(`Config path is not a file: ${configPath}`);
  return configPath;
}

function firstPath(cwd: string, ...candidates: (string | undefined)[]): string | undefined {
  const given = candidates.find((c) => c !== undefined && c !== "");
  return given === undefined ? undefined : path.resolve(cwd, given);
}

function integer([label, raw]: [string, string | number | undefined], min: number, max: number): number {
  const value = typeof raw === "string" && /^\s*\d+\s*$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    const range =
      max === Number.MAX_SAFE_INTEGER ? `an integer ≥ ${min}` : `an integer from ${min} to ${max}`;
    throw new ConfigError(`${label}: must be ${range}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

function oneOf<T extends string>(
  [label, raw]: [string, string | number | undefined],
  allowed: readonly T[],
): T {
  const value = String(raw).trim().toLowerCase();
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(`${label}: must be one of ${allowed.join(", ")}, got ${JSON.stringify(raw)}`);
  }
  return value as T;
}

/** `LANGGRAPH_CONFIG` is read the way the reference server reads it: a JSON object keyed by graph id. */
function parseAssistantConfigs(
  raw: string | undefined,
  graphIds: string[],
  warnings: string[],
): Record<string, Record<string, unknown>> {
  if (raw === undefined || raw.trim() === "") return {};
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new ConfigError(`LANGGRAPH_CONFIG: not valid JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(json)) {
    throw new ConfigError('LANGGRAPH_CONFIG: must be a JSON object {"<graph id>": {...config}}');
  }
  for (const [id, value] of Object.entries(json)) {
    if (!isPlainObject(value))
      throw new ConfigError(`LANGGRAPH_CONFIG: ${JSON.stringify(id)}: must be an object`);
    if (!graphIds.includes(id))
      warnings.push(`LANGGRAPH_CONFIG: ${JSON.stringify(id)}: no graph with this id; ignored`);
  }
  return json as Record<string, Record<string, unknown>>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
