/**
 * End-to-end harness: start a real Hangar process (`bin/hangar.js dev`) on a free port and a fresh data
 * dir, and talk to it with the official SDK or raw fetch. Nothing here mocks the server.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@langchain/langgraph-sdk";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const EXAMPLES_CONFIG = join(REPO_ROOT, "examples", "langgraph.json");
export const FIXTURES_CONFIG = join(REPO_ROOT, "test", "e2e", "fixtures", "langgraph.json");

export interface Hangar {
  url: string;
  dataDir: string;
  process: ChildProcess;
  /** SIGTERM, wait for the exit (at most 20 s, then SIGKILL and throw), return the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL, wait for the exit. */
  kill9(): Promise<void>;
  /** Everything the process wrote to stdout and stderr so far. */
  logs(): string;
}

export interface StartOptions {
  /** `dev` (default), `serve`, or `worker` (no HTTP: `url` is empty once it reports ready). */
  command?: "dev" | "serve" | "worker";
  /** Path to a langgraph.json; default examples/langgraph.json. */
  config?: string;
  /** Data directory; default a fresh mkdtemp. */
  dataDir?: string;
  env?: Record<string, string>;
  args?: string[];
  /** How long to wait for the "listening on" line; default 30 s. */
  startTimeoutMs?: number;
}

const live = new Set<ChildProcess>();
/** Temp dirs this process created (data dirs, merged configs); removed at exit unless HANGAR_E2E_KEEP=1. */
const ownedDirs = new Set<string>();
/** Every data dir a server of this process used: the cgroups of those killed are cleared at exit. */
const serverDataDirs = new Set<string>();
let exitHookInstalled = false;

function killAll(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    killAll();
    // A server stopped cleanly removed its cgroups; one killed (by a test, or just now) could not.
    for (const dir of serverDataDirs) clearCgroupScope(dir, 5_000);
    if (process.env.HANGAR_E2E_KEEP === "1") return;
    for (const dir of ownedDirs) {
      try {
        unmountUnder(dir);
        rmSync(dir, { recursive: true, force: true });
      } catch {}
    }
  });
  // A test process stopped by a signal must not leave servers behind.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      killAll();
      process.exit(signal === "SIGINT" ? 130 : 143);
    });
  }
}

/**
 * Lazily unmounts every mount under `dir`: a sandbox server makes its data dir's `sandboxes/` and
 * `volumes/` mounts of their own (src/sandboxes/engines/nosuid.ts), and one killed with SIGKILL leaves them.
 */
export function unmountUnder(dir: string): void {
  let info: string;
  try {
    info = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return;
  }
  const points = info
    .split("\n")
    .map((line) => line.split(" ")[4])
    .filter((p): p is string => p?.startsWith(`${dir}/`) === true);
  for (const point of points.reverse()) spawnSync("umount", ["-l", point], { stdio: "ignore" });
}

/** Every cgroup hierarchy this machine mounts (v1 controllers and named ones, v2's unified). */
export function cgroupHierarchies(): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((line) => / - cgroup2? /.test(line))
    .map((line) => line.split(" ")[4]!);
}

/** A server's cgroup scope (src/sandboxes/engines/cgroups.ts): `hangar/<sha256 of its sandboxes dir>`. */
export const cgroupScopeOf = (dataDir: string) =>
  join("hangar", createHash("sha256").update(resolve(dataDir, "sandboxes")).digest("hex").slice(0, 16));

/** A synchronous pause (for the exit hook, where no timer fires). */
const pauseSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Ends every process in the cgroups of `dataDir`'s server and removes them, deepest first, on every
 * hierarchy: what a server killed with SIGKILL leaves (its sandboxes' groups and its scope), which no
 * later server clears (each clears only its own data dir's). Synchronous, so the exit hook can run it.
 */
export function clearCgroupScope(dataDir: string, timeoutMs = 20_000): void {
  const scopes = cgroupHierarchies()
    .map((h) => join(h, cgroupScopeOf(dataDir)))
    .filter((d) => existsSync(d));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const groups = scopes.flatMap(groupsDeepestFirst);
    if (groups.length === 0 || Date.now() > deadline) return;
    for (const dir of groups) {
      for (const pid of readText(join(dir, "cgroup.procs")).split("\n").filter(Boolean)) {
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {} // exited meanwhile
      }
      try {
        rmdirSync(dir);
      } catch {} // EBUSY until its killed processes are reaped: the next round
    }
    pauseSync(20);
  }
}

const readText = (file: string) => {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
};

/** `dir` and the groups below it, deepest first; none if `dir` is gone. */
function groupsDeepestFirst(dir: string): string[] {
  let below: string[];
  try {
    below = readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => join(dir, e.name));
  } catch {
    return [];
  }
  return [...below.flatMap(groupsDeepestFirst), dir];
}

/**
 * A fresh temp dir for a test's own files (projects, image stores, data dirs), removed with its mounts
 * when the test process exits (kept with HANGAR_E2E_KEEP=1), as the data dirs `startHangar` makes are.
 */
export async function tempDir(prefix = "hangar-e2e-"): Promise<string> {
  installExitHook();
  const dir = await mkdtemp(join(tmpdir(), prefix));
  ownedDirs.add(dir);
  return dir;
}

/**
 * A project in a fresh temp dir: `content` as its langgraph.json, and `files` (relative path → text)
 * beside it. Returns the langgraph.json's path. Graph paths are written as given, so absolute paths
 * (or paths into `files`).
 */
export async function writeProject(
  content: Record<string, unknown>,
  files: Record<string, string> = {},
): Promise<string> {
  const dir = await tempDir("hangar-e2e-project-");
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  const path = join(dir, "langgraph.json");
  await writeFile(path, JSON.stringify(content, null, 2));
  return path;
}

/** An example graph by file name (`chat.ts`), as an absolute langgraph.json graph path. */
export const exampleGraph = (file: string) => `${join(REPO_ROOT, "examples", "src", file)}:graph`;

function waitExit(child: ChildProcess, timeoutMs: number): Promise<number | null | "timeout"> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolveExit) => {
    const timer = setTimeout(() => resolveExit("timeout"), timeoutMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolveExit(code);
    });
  });
}

export async function startHangar(opts: StartOptions = {}): Promise<Hangar> {
  installExitHook();
  const config = opts.config ?? EXAMPLES_CONFIG;
  const dataDir = opts.dataDir ?? (await tempDir("hangar-e2e-"));
  serverDataDirs.add(dataDir);
  const args = [
    join(REPO_ROOT, "bin", "hangar.js"),
    opts.command ?? "dev",
    "--config",
    config,
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--data-dir",
    dataDir,
    ...(opts.args ?? []),
  ];
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      // No tracing to the network from graphs under test.
      LANGCHAIN_TRACING_V2: "false",
      LANGSMITH_TRACING: "false",
      ...opts.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  child.once("exit", () => live.delete(child));

  let stdout = "";
  let stderr = "";
  let all = "";
  child.stdout!.setEncoding("utf8");
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    stderr += chunk;
    all += chunk;
  });

  const timeoutMs = opts.startTimeoutMs ?? 30_000;
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      child.kill("SIGKILL");
      reject(
        new Error(
          `hangar did not print "listening on <url>" within ${timeoutMs} ms.\nstdout:\n${stdout}\nstderr:\n${stderr}`,
        ),
      );
    }, timeoutMs);
    const onData = (chunk: string) => {
      stdout += chunk;
      all += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match || /^Hangar worker ready$/m.test(stdout)) {
        cleanup();
        resolveUrl(match ? match[1]!.replace(/\/+$/, "") : "");
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(
        new Error(
          `hangar exited (code ${code}, signal ${signal}) before listening.\nstdout:\n${stdout}\nstderr:\n${stderr}`,
        ),
      );
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.off("exit", onExit);
    };
    child.stdout!.on("data", onData);
    child.once("exit", onExit);
  });
  // Keep collecting output after startup (the listener above keeps appending to `all`).

  return {
    url,
    dataDir,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill("SIGTERM");
      const code = await waitExit(child, 20_000);
      if (code === "timeout") {
        child.kill("SIGKILL");
        await waitExit(child, 5_000);
        throw new Error(`hangar did not exit within 20 s of SIGTERM.\nlogs:\n${all}`);
      }
      return code;
    },
    async kill9() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGKILL");
      await waitExit(child, 10_000);
    },
    logs: () => all,
  };
}

/**
 * A langgraph.json serving the example graphs plus the test fixtures (test/e2e/fixtures), written to a
 * temp dir with absolute graph paths, so one server has both.
 */
export async function fixturesConfig(): Promise<string> {
  const examples = JSON.parse(await readFile(EXAMPLES_CONFIG, "utf8"));
  const fixtures = JSON.parse(await readFile(FIXTURES_CONFIG, "utf8"));
  const absolutise = (spec: unknown, base: string): unknown => {
    const fix = (p: string) => {
      const [file, ...rest] = p.split(":");
      const abs = isAbsolute(file!) ? file! : resolve(base, file!);
      return [abs, ...rest].join(":");
    };
    if (typeof spec === "string") return fix(spec);
    if (spec && typeof spec === "object" && typeof (spec as { path?: unknown }).path === "string") {
      return { ...(spec as object), path: fix((spec as { path: string }).path) };
    }
    return spec;
  };
  const graphs: Record<string, unknown> = {};
  for (const [id, spec] of Object.entries(examples.graphs ?? {}))
    graphs[id] = absolutise(spec, dirname(EXAMPLES_CONFIG));
  for (const [id, spec] of Object.entries(fixtures.graphs ?? {}))
    graphs[id] = absolutise(spec, dirname(FIXTURES_CONFIG));
  const merged = { ...examples, graphs };
  if (typeof examples.env === "string") merged.env = resolve(dirname(EXAMPLES_CONFIG), examples.env);
  const dir = await tempDir("hangar-e2e-config-");
  const path = join(dir, "langgraph.json");
  await writeFile(path, JSON.stringify(merged, null, 2));
  return path;
}

/**
 * The official SDK client. Retries are off so that a 5xx surfaces at once instead of being retried
 * (and possibly hidden) by the SDK's default 4 retries with backoff.
 */
export function client(url: string): Client {
  return new Client({ apiUrl: url, callerOptions: { maxRetries: 0, maxConcurrency: 32 } });
}

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Shown in the timeout error. */
  what?: string;
}

/**
 * Polls `fn` until it returns a truthy value (which is returned) or the timeout passes (throws, with the
 * last value or error). Exceptions from `fn` count as "not yet".
 */
export async function waitFor<T>(fn: () => T | Promise<T>, opts: WaitOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value as NonNullable<T>;
      last = value;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const detail = lastError ? `last error: ${String(lastError)}` : `last value: ${JSON.stringify(last)}`;
      throw new Error(
        `waitFor${opts.what ? ` (${opts.what})` : ""} timed out after ${timeoutMs} ms; ${detail}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface SSEEvent {
  event: string;
  data: any;
  id?: string;
}

/** Parses a `text/event-stream` body event by event (`:` comment lines ignored). */
export async function* iterSSE(response: Response): AsyncGenerator<SSEEvent> {
  if (!response.body) throw new Error("response has no body");
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let id: string | undefined;
  let sawField = false;
  const flush = (): SSEEvent | null => {
    if (!sawField) return null;
    const raw = data.join("\n");
    let parsed: unknown = raw;
    if (data.length === 0) parsed = null;
    else {
      try {
        parsed = JSON.parse(raw);
      } catch {
        parsed = raw;
      }
    }
    const out: SSEEvent = { event: event || "message", data: parsed };
    if (id !== undefined) out.id = id;
    event = "";
    data = [];
    id = undefined;
    sawField = false;
    return out;
  };
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (;;) {
      const nl = buffer.search(/\r\n|\r|\n/);
      if (nl === -1) break;
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + (buffer.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        const ev = flush();
        if (ev) yield ev;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      sawField = true;
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
      else if (field === "id") id = value;
    }
  }
  buffer += decoder.decode();
  if (buffer.length > 0 && !buffer.startsWith(":")) {
    const colon = buffer.indexOf(":");
    const field = colon === -1 ? buffer : buffer.slice(0, colon);
    let value = colon === -1 ? "" : buffer.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    sawField = true;
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
  const last = flush();
  if (last) yield last;
}

/** Reads a whole `text/event-stream` body into `{event, data, id}[]` (`:` comment lines ignored). */
export async function readSSE(response: Response): Promise<SSEEvent[]> {
  const out: SSEEvent[] = [];
  for await (const ev of iterSSE(response)) out.push(ev);
  return out;
}

/** Collects an async iterable (e.g. an SDK stream) into an array, untyped (the SDK's unions get in the way). */
export async function collect<T = any>(iterable: AsyncIterable<unknown>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item as T);
  return out;
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON body, or undefined when the body is empty or not JSON. */
  body: T;
}

/** Raw HTTP with exact statuses and bodies. `body` is JSON-encoded unless it is already a string. */
export async function http<T = any>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiResponse<T>> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] ??= "application/json";
  }
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  let parsed: any;
  try {
    parsed = text.trim() === "" ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

/** uuid v5 (RFC 4122) with node:crypto. */
export function uuid5(name: string, namespace: string): string {
  const ns = Buffer.from(namespace.replace(/-/g, ""), "hex");
  const hash = createHash("sha1").update(ns).update(Buffer.from(name, "utf8")).digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The LangGraph namespace for default assistant ids. */
export const ASSISTANT_NAMESPACE = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";
export const defaultAssistantId = (graphId: string) => uuid5(graphId, ASSISTANT_NAMESPACE);

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A human message input for the message-state example graphs. */
export const human = (content: string) => ({ messages: [{ role: "human", content }] });

/** Message contents of a `{messages}` state (values, join/wait output). */
export function contents(values: unknown): string[] {
  const messages = (values as { messages?: { content: unknown }[] } | null)?.messages;
  if (!Array.isArray(messages)) return [];
  return messages.map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
}

/** The error object of a failed SDK call (`HTTPError` has `status`). */
export async function rejection(promise: Promise<unknown>): Promise<{ status?: number; message: string }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { status?: number; message?: string };
    return { status: e.status, message: e.message ?? String(error) };
  }
  throw new Error("expected the call to fail, it succeeded");
}

/** Asserts a JSON error `{"detail": "<text>"}` with the given status. */
export function assertDetail(res: ApiResponse, status: number, what = ""): void {
  const ctx = `${what} → ${res.status} ${res.text.slice(0, 300)}`;
  if (res.status !== status) throw new Error(`expected HTTP ${status}, got ${ctx}`);
  const type = res.headers.get("content-type") ?? "";
  if (!type.includes("application/json"))
    throw new Error(`expected a JSON error body, got content-type "${type}": ${ctx}`);
  const detail = res.body?.detail;
  const ok =
    typeof detail === "string" ||
    (detail && typeof detail === "object" && !Array.isArray(detail) && typeof detail.message === "string");
  if (!ok || (typeof detail === "string" && detail.length === 0)) {
    throw new Error(`expected {"detail": "<text>"}, got ${ctx}`);
  }
}

/** Asserts a 422 `{"detail": [{loc, msg, type}]}`; when `field` is given, some loc must name it. */
export function assertValidation(res: ApiResponse, field?: string, what = ""): void {
  const ctx = `${what} → ${res.status} ${res.text.slice(0, 400)}`;
  if (res.status !== 422) throw new Error(`expected HTTP 422, got ${ctx}`);
  const detail = res.body?.detail;
  if (!Array.isArray(detail) || detail.length === 0)
    throw new Error(`expected detail to be a non-empty array: ${ctx}`);
  for (const issue of detail) {
    if (!Array.isArray(issue?.loc) || typeof issue?.msg !== "string" || typeof issue?.type !== "string") {
      throw new Error(`expected every issue to be {loc: [...], msg, type}: ${ctx}`);
    }
  }
  if (field && !detail.some((i: { loc: unknown[] }) => i.loc.map(String).includes(field))) {
    throw new Error(`expected an issue whose loc names "${field}": ${ctx}`);
  }
}

/**
 * Runs every check and fails once with all the failures listed, so that one wrong answer in a table of
 * bad inputs does not hide the rest.
 */
export async function checkAll(checks: [name: string, check: () => unknown][]): Promise<void> {
  const failures: string[] = [];
  for (const [name, check] of checks) {
    try {
      await check();
    } catch (error) {
      failures.push(`${name}: ${String((error as Error).message ?? error).split("\n")[0]}`);
    }
  }
  if (failures.length > 0) {
    throw new Error(`${failures.length} of ${checks.length} checks failed:\n  ${failures.join("\n  ")}`);
  }
}
