/**
 * `npm run bench`: Hangar and the reference JS Agent Server side by side, in one run.
 *
 * Installs the reference (bench/reference) if needed, measures the in-process ceiling, then for each
 * scenario starts a fresh reference server and a fresh Hangar (embedded SQLite) one after the other,
 * each on a free 127.0.0.1 port with a fresh state directory, drives it with bench/loadgen.ts (a child
 * process), and stops it by pid. Writes bench/results/<timestamp>.json and .md (Hangar, reference,
 * ratio per figure) and prints the table.
 *
 *   npm run bench                                   # everything (~15 min on the 2-core machine)
 *   npm run bench -- --quick                        # smoke run (< 2 min once installed)
 *   npm run bench -- --scenario throughput,stream   # a subset
 *   npm run bench -- --servers hangar --scenario throughput --levels 32 --duration 20 --cpu-prof /tmp/prof
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { SCENARIOS, type Scenario, type ScenarioResult } from "./loadgen.js";

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH, "..");
const REFERENCE = path.join(BENCH, "reference");
const SERVERS = ["reference", "hangar"] as const;
type ServerKind = (typeof SERVERS)[number];

const HELP = `Usage: npm run bench -- [options]

  --scenario <a,b,…>     subset of: ${SCENARIOS.join(", ")} (default: all)
  --quick                small counts and durations (smoke run, < 2 min once installed)
  --servers <a,b>        reference,hangar (default both; order of the runs per scenario)
  --levels <1,8,32,128>  throughput concurrency levels
  --duration <s>         seconds per throughput level
  --hangar-workers <n>   Hangar --workers (default: Hangar's own default)
  --n-workers <n>        reference nWorkers (default 10)
  --cpu-prof <dir>       run Hangar with --cpu-prof, profiles into <dir>
  --out-dir <dir>        where results go (default bench/results)
  --keep                 keep the servers' state dirs and logs (printed at the end)`;

interface RunOptions {
  scenarios: Scenario[];
  quick: boolean;
  servers: ServerKind[];
  levels?: string;
  duration?: string;
  hangarWorkers?: string;
  nWorkers: string;
  cpuProf?: string;
  outDir: string;
  keep: boolean;
}

function parseOptions(argv: string[]): RunOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      scenario: { type: "string" },
      quick: { type: "boolean", default: false },
      servers: { type: "string" },
      levels: { type: "string" },
      duration: { type: "string" },
      "hangar-workers": { type: "string" },
      "n-workers": { type: "string", default: "10" },
      "cpu-prof": { type: "string" },
      "out-dir": { type: "string", default: path.join(BENCH, "results") },
      keep: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  const scenarios = (values.scenario?.split(",") ?? [...SCENARIOS]) as Scenario[];
  for (const s of scenarios) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s}`);
  const servers = (values.servers?.split(",") ?? [...SERVERS]) as ServerKind[];
  for (const s of servers) if (!SERVERS.includes(s)) throw new Error(`unknown server ${s}`);
  return {
    scenarios,
    quick: values.quick ?? false,
    servers,
    levels: values.levels,
    duration: values.duration,
    hangarWorkers: values["hangar-workers"],
    nWorkers: values["n-workers"] ?? "10",
    cpuProf: values["cpu-prof"] ? path.resolve(values["cpu-prof"]) : undefined,
    outDir: path.resolve(values["out-dir"] ?? path.join(BENCH, "results")),
    keep: values.keep ?? false,
  };
}

// ---------------------------------------------------------------------------------------------------
// Processes

const log = (msg: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** The environment children get: no LangSmith/LangChain tracing variables, no inherited NODE_OPTIONS. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(LANGSMITH_|LANGCHAIN_)/.test(k) || k === "NODE_OPTIONS") continue;
    env[k] = v;
  }
  return { ...env, LANGGRAPH_CLI_NO_ANALYTICS: "1", BROWSER: "none", ...extra };
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

interface Server {
  kind: ServerKind;
  url: string;
  pid: number;
  stateDir: string;
  logFile: string;
  child: ChildProcess;
}

function ensureReferenceInstalled(): void {
  if (existsSync(path.join(REFERENCE, "node_modules", "@langchain", "langgraph-api", "package.json"))) return;
  log("installing the reference server into bench/reference (npm install, ~20 s)");
  const r = spawnSync("npm", ["install", "--prefix", REFERENCE, "--no-audit", "--no-fund"], {
    cwd: ROOT,
    stdio: "inherit",
    env: childEnv(),
  });
  if (r.status !== 0) throw new Error("npm install of bench/reference failed");
}

async function startServer(kind: ServerKind, work: string, name: string, opts: RunOptions): Promise<Server> {
  const port = await freePort();
  const stateDir = mkdtempSync(path.join(work, `${kind}-${name}-`));
  const logFile = `${stateDir}.log`;
  const out = openSync(logFile, "w");
  let child: ChildProcess;
  if (kind === "reference") {
    child = spawn(process.execPath, ["--import", "tsx", "start.ts"], {
      cwd: REFERENCE,
      env: childEnv({ PORT: String(port), STATE_DIR: stateDir, N_WORKERS: opts.nWorkers }),
      stdio: ["ignore", out, out],
    });
  } else {
    const args = [
      path.join(ROOT, "bin", "hangar.js"),
      "serve",
      "--config",
      path.join(BENCH, "langgraph.json"),
      "--port",
      String(port),
      "--data-dir",
      stateDir,
    ];
    if (opts.hangarWorkers) args.push("--workers", opts.hangarWorkers);
    // Node 20 refuses --cpu-prof in NODE_OPTIONS: pass it on the command line of the hangar process.
    if (opts.cpuProf) {
      mkdirSync(opts.cpuProf, { recursive: true });
      args.unshift("--cpu-prof", `--cpu-prof-dir=${opts.cpuProf}`);
    }
    child = spawn(process.execPath, args, { cwd: ROOT, env: childEnv(), stdio: ["ignore", out, out] });
  }
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${kind} exited at start:\n${tail(logFile)}`);
    try {
      const res = await fetch(`${url}/ok`);
      if (res.ok) return { kind, url, pid: child.pid!, stateDir, logFile, child };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stopServer({ kind, url, pid: child.pid!, stateDir, logFile, child }, "SIGKILL");
  throw new Error(`${kind} did not answer GET /ok within 90 s:\n${tail(logFile)}`);
}

/** Stops a server we started, by its pid: SIGTERM (or SIGKILL), then SIGKILL after 20 s. */
async function stopServer(server: Server, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  process.kill(server.pid, signal);
  const timer = setTimeout(() => {
    if (server.child.exitCode === null && server.child.signalCode === null)
      process.kill(server.pid, "SIGKILL");
  }, 20_000);
  await exited(server.child);
  clearTimeout(timer);
}

async function runLoadgen(
  scenario: Scenario,
  work: string,
  opts: RunOptions,
  server?: Server,
): Promise<ScenarioResult> {
  const out = path.join(work, `${server?.kind ?? "inproc"}-${scenario}.json`);
  const args = ["--import", "tsx", path.join(BENCH, "loadgen.ts"), "--scenario", scenario, "--out", out];
  if (server) args.push("--url", server.url, "--server-pid", String(server.pid), "--label", server.kind);
  if (opts.quick) args.push("--quick");
  if (opts.levels) args.push("--levels", opts.levels);
  if (opts.duration) args.push("--duration", opts.duration);
  if (server?.kind === "hangar" && scenario === "throughput") args.push("--acked-file", ackedFile(server));
  const child = spawn(process.execPath, args, { cwd: ROOT, env: childEnv(), stdio: "inherit" });
  await exited(child);
  if (child.exitCode !== 0) throw new Error(`loadgen ${scenario} failed (exit ${child.exitCode})`);
  return JSON.parse(readFileSync(out, "utf8")) as ScenarioResult;
}

const ackedFile = (server: Server) => `${server.stateDir}.acked`;

/**
 * Hangar after the throughput scenario: killed with SIGKILL (no graceful shutdown, the WAL is not
 * folded back), then its database is opened and every run the client saw acknowledged (by thread id,
 * warm-up included) is looked up: it must be stored with status success.
 */
async function durabilityCheck(server: Server, result: ScenarioResult): Promise<void> {
  await stopServer(server, "SIGKILL");
  const threadIds = readFileSync(ackedFile(server), "utf8").split("\n").filter(Boolean);
  const { default: Database } = await import("better-sqlite3");
  const db = new Database(path.join(server.stateDir, "hangar.sqlite"), { readonly: true });
  try {
    const stmt = db.prepare("SELECT count(*) AS n FROM runs WHERE thread_id = ? AND status = 'success'");
    let stored = 0;
    for (const id of threadIds) if ((stmt.get(id) as { n: number }).n > 0) stored++;
    result.metrics["throughput.stored_success_runs"] = stored;
    result.metrics["throughput.all_acked_stored"] = stored === threadIds.length ? 1 : 0;
    result.notes.push(
      `after SIGKILL: ${stored} of the ${threadIds.length} acknowledged runs found stored with status success`,
    );
  } finally {
    db.close();
  }
}

// ---------------------------------------------------------------------------------------------------
// Report

interface Figure {
  label: string;
  key: string;
  better: "lower" | "higher";
  digits?: number;
}

const FIGURES: Record<Exclude<Scenario, "inproc">, Figure[]> = {
  "wait-seq": [
    { label: "runs/wait sequential p50 (ms)", key: "wait_seq.latency_ms.p50", better: "lower" },
    { label: "runs/wait sequential p99 (ms)", key: "wait_seq.latency_ms.p99", better: "lower" },
    { label: "GET /ok round trip p50 (ms)", key: "wait_seq.ok_rtt_ms.p50", better: "lower" },
  ],
  "bg-join": [
    { label: "background run create → join p50 (ms)", key: "bg_join.create_to_join_ms.p50", better: "lower" },
    { label: "background run create → join p99 (ms)", key: "bg_join.create_to_join_ms.p99", better: "lower" },
  ],
  stream: [
    { label: "stream: first event p50 (ms)", key: "stream.first_event_ms.p50", better: "lower" },
    { label: "stream: first event p99 (ms)", key: "stream.first_event_ms.p99", better: "lower" },
    {
      label: "stream: last of 200 custom events p50 (ms)",
      key: "stream.last_custom_ms.p50",
      better: "lower",
    },
    { label: "stream: end of response p50 (ms)", key: "stream.end_ms.p50", better: "lower" },
    {
      label: "stream: custom events/s p50 (200 / time to last)",
      key: "stream.events_per_s.p50",
      better: "higher",
      digits: 0,
    },
  ],
  throughput: [
    { label: "throughput C=1 (runs/s)", key: "throughput.c1.runs_per_s", better: "higher" },
    { label: "throughput C=8 (runs/s)", key: "throughput.c8.runs_per_s", better: "higher" },
    { label: "throughput C=32 (runs/s)", key: "throughput.c32.runs_per_s", better: "higher" },
    { label: "throughput C=128 (runs/s)", key: "throughput.c128.runs_per_s", better: "higher" },
    { label: "C=32 runs/wait p50 (ms)", key: "throughput.c32.latency_ms.p50", better: "lower" },
    { label: "C=32 server CPU per run (ms)", key: "throughput.c32.server_cpu_ms_per_run", better: "lower" },
    { label: "C=128 server CPU per run (ms)", key: "throughput.c128.server_cpu_ms_per_run", better: "lower" },
  ],
  "many-streams": [
    {
      label: "concurrent slow1s streams completed",
      key: "many_streams.completed",
      better: "higher",
      digits: 0,
    },
    { label: "concurrent streams: total time (s)", key: "many_streams.total_s", better: "lower" },
    {
      label: "concurrent streams: first event p50 (ms)",
      key: "many_streams.first_event_ms.p50",
      better: "lower",
      digits: 0,
    },
    {
      label: "concurrent streams: peak RSS (MB)",
      key: "many_streams.rss_peak_mb",
      better: "lower",
      digits: 0,
    },
  ],
  "threads-mem": [
    {
      label: "thread creation (threads/s, 16 clients)",
      key: "threads_mem.threads_per_s",
      better: "higher",
      digits: 0,
    },
    { label: "RSS before threads (MB)", key: "threads_mem.rss_before_mb", better: "lower", digits: 0 },
    {
      label: "RSS after threads + idle (MB)",
      key: "threads_mem.rss_after_idle_mb",
      better: "lower",
      digits: 0,
    },
    { label: "RSS growth per thread (KiB)", key: "threads_mem.kib_per_thread", better: "lower" },
    { label: "threads/search by metadata p50 (ms)", key: "threads_mem.search_ms.p50", better: "lower" },
  ],
};

function fmt(x: number | undefined, digits = 2): string {
  if (x === undefined || Number.isNaN(x)) return "–";
  if (Math.abs(x) >= 100 && digits > 1) digits = 1;
  if (Math.abs(x) >= 1000) digits = 0;
  return x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

function advantage(f: Figure, h?: number, r?: number): string {
  if (h === undefined || r === undefined || Number.isNaN(h) || Number.isNaN(r)) return "–";
  if (h === 0 || r === 0) return "–";
  const x = f.better === "lower" ? r / h : h / r;
  return `${x >= 10 ? x.toFixed(0) : x.toFixed(2)}×`;
}

interface Report {
  date: string;
  machine: Record<string, unknown>;
  options: Omit<RunOptions, "scenarios"> & { scenarios: string[] };
  durationSeconds: number;
  inproc?: ScenarioResult;
  results: Partial<Record<Scenario, Partial<Record<ServerKind, ScenarioResult>>>>;
  failures: string[];
  /** 1-minute load average just before each server run (the machine is shared: noise indicator). */
  loadBefore: Record<string, number>;
}

function markdown(report: Report): string {
  const lines: string[] = [];
  const m = report.machine;
  lines.push(`# Bench run ${report.date}`, "");
  lines.push(
    `Machine: ${m.cpus} × ${m.cpuModel}, ${m.memGb} GB RAM, Node ${m.node}, ${m.os}. ` +
      `Hangar at ${m.hangarCommit}${m.hangarTreeDirty ? " with uncommitted changes in src/ or bin/" : ""}. ` +
      `Load average at start ${m.loadStart}, at end ${m.loadEnd}. Run took ${fmt(report.durationSeconds / 60, 1)} min` +
      `${report.options.quick ? " (--quick: small counts, not comparable with full runs)" : ""}.`,
    "",
  );
  lines.push(
    "Advantage = how many times better Hangar is (reference ÷ Hangar for times and memory, Hangar ÷ reference for rates); < 1× means Hangar is worse.",
    "",
  );
  lines.push("| figure | Hangar | reference | advantage |", "|---|---:|---:|---:|");
  for (const [scenario, figures] of Object.entries(FIGURES) as [Scenario, Figure[]][]) {
    const pair = report.results[scenario];
    if (!pair) continue;
    for (const f of figures) {
      const h = pair.hangar?.metrics[f.key];
      const r = pair.reference?.metrics[f.key];
      lines.push(`| ${f.label} | ${fmt(h, f.digits)} | ${fmt(r, f.digits)} | ${advantage(f, h, r)} |`);
    }
  }
  const errs: string[] = [];
  for (const [scenario, pair] of Object.entries(report.results)) {
    for (const [kind, res] of Object.entries(pair ?? {})) {
      if (res && res.errors > 0)
        errs.push(`${kind} ${scenario}: ${res.errors} errors (${res.errorSamples[0] ?? ""})`);
      for (const note of res?.notes ?? []) errs.push(`${kind} ${scenario}: ${note}`);
    }
  }
  if (report.inproc) {
    const x = report.inproc.metrics;
    lines.push("", "In-process ceiling (echo graph, no server, project's LangGraph, one process):", "");
    lines.push("| mode | invokes/s | p50 (µs) | p99 (µs) | CPU µs/invoke |", "|---|---:|---:|---:|---:|");
    for (const [mode, label] of [
      ["none", "`invoke`, no checkpointer"],
      ["memory", "`invoke`, MemorySaver"],
      ["sqlite", "`invoke`, Hangar's SqliteCheckpointer (file, WAL)"],
      ["hangar_executor", "Hangar's per-run work: SQLite, `stream` values + `getState`"],
    ]) {
      lines.push(
        `| ${label} | ${fmt(x[`inproc.${mode}.per_s`], 0)} | ${fmt(x[`inproc.${mode}.us.p50`], 0)} | ${fmt(x[`inproc.${mode}.us.p99`], 0)} | ${fmt(x[`inproc.${mode}.cpu_us`], 0)} |`,
      );
    }
  }
  const targetsAt = lines.length;
  const tp = report.results.throughput;
  const h32 = tp?.hangar?.metrics["throughput.c32.runs_per_s"];
  const r32 = tp?.reference?.metrics["throughput.c32.runs_per_s"];
  if (h32 !== undefined && r32 !== undefined) {
    const stored = tp?.hangar?.metrics["throughput.all_acked_stored"];
    lines.push(
      `- Throughput C=32 ≥ 10× reference: ${fmt(h32)} vs ${fmt(r32)} runs/s = ${fmt(h32 / r32)}× → ${h32 >= 10 * r32 ? "met" : "MISSED"}` +
        `; durability: ${stored === 1 ? "every acknowledged run found stored after SIGKILL" : stored === 0 ? "ACKNOWLEDGED RUNS MISSING after SIGKILL" : "not checked"}` +
        ` (${fmt(tp?.hangar?.metrics["throughput.stored_success_runs"], 0)} stored / ${fmt(tp?.hangar?.metrics["throughput.acked_runs"], 0)} acknowledged).`,
    );
  }
  const ws = report.results["wait-seq"]?.hangar?.metrics;
  const ip = report.inproc?.metrics;
  if (ws && ip) {
    const rtt = ws["wait_seq.ok_rtt_ms.p50"];
    const sqlite = ip["inproc.sqlite.us.p50"] / 1000;
    const memory = ip["inproc.memory.us.p50"] / 1000;
    const p50 = ws["wait_seq.latency_ms.p50"];
    lines.push(
      `- runs/wait p50 within 3× (in-process invoke + one HTTP round trip): ${fmt(p50)} ms vs 3 × (${fmt(sqlite)} ms SQLite invoke + ${fmt(rtt)} ms GET /ok) = ${fmt(3 * (sqlite + rtt))} ms → ${p50 <= 3 * (sqlite + rtt) ? "met" : "MISSED"}` +
        ` (with the MemorySaver invoke, ${fmt(memory)} ms: bound ${fmt(3 * (memory + rtt))} ms → ${p50 <= 3 * (memory + rtt) ? "met" : "missed"}).`,
    );
  }
  const ms = report.results["many-streams"]?.hangar;
  if (ms) {
    const n = ms.metrics["many_streams.streams"];
    const done = ms.metrics["many_streams.completed"];
    lines.push(
      `- ${fmt(n, 0)} concurrent streams all complete, no error: ${fmt(done, 0)} completed, ${ms.errors} errors in ${fmt(ms.metrics["many_streams.total_s"])} s → ${done === n && ms.errors === 0 ? "met" : "MISSED"}.`,
    );
  }
  if (lines.length > targetsAt) lines.splice(targetsAt, 0, "", "Targets (issue 6):", "");
  const loads = Object.entries(report.loadBefore).map(([k, v]) => `${k} ${v}`);
  if (loads.length) lines.push("", `1-minute load average before each server run: ${loads.join(", ")}.`);
  errs.push(...report.failures.map((f) => `FAILED ${f}`));
  if (errs.length) lines.push("", "Errors and notes:", "", ...errs.map((e) => `- ${e}`));
  lines.push("");
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------------
// Main

function git(args: string[]): string {
  const r = spawnSync("git", args, { cwd: ROOT, encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : "?";
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  const started = Date.now();
  const stamp = new Date()
    .toISOString()
    .replaceAll(":", "-")
    .replace(/\.\d+Z$/, "Z");
  mkdirSync(opts.outDir, { recursive: true });
  const work = mkdtempSync(path.join(os.tmpdir(), "hangar-bench-"));
  if (opts.servers.includes("reference")) ensureReferenceInstalled();
  const cpus = os.cpus();
  const report: Report = {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model ?? "?",
      memGb: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      os: `${os.type()} ${os.release()}`,
      hangarCommit: git(["rev-parse", "--short", "HEAD"]),
      hangarTreeDirty: git(["status", "--porcelain", "--", "src", "bin"]) !== "",
      loadStart: os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(" "),
    },
    options: { ...opts, scenarios: opts.scenarios },
    durationSeconds: 0,
    results: {},
    failures: [],
    loadBefore: {},
  };
  let current: Server | undefined;
  const interrupt = () => {
    if (current) void stopServer(current, "SIGKILL");
    process.exit(130);
  };
  process.on("SIGINT", interrupt);
  process.on("SIGTERM", interrupt);
  // Full runs: a fresh server (and state dir) per scenario and server, scenario by scenario, the
  // servers one after the other. --quick: one server per kind for all its scenarios (saves the starts).
  const serverScenarios = opts.scenarios.filter((s) => s !== "inproc");
  const jobs: [Scenario, ServerKind][] = opts.quick
    ? opts.servers.flatMap((kind) => serverScenarios.map((s): [Scenario, ServerKind] => [s, kind]))
    : serverScenarios.flatMap((s) => opts.servers.map((kind): [Scenario, ServerKind] => [s, kind]));
  /** Stops the current server; Hangar after throughput gets SIGKILL and the durability check. */
  const finish = async (checkDurability?: ScenarioResult) => {
    if (!current) return;
    const server = current;
    current = undefined;
    if (checkDurability) await durabilityCheck(server, checkDurability);
    await stopServer(server);
  };
  try {
    if (opts.scenarios.includes("inproc")) {
      log("inproc: in-process ceiling (no server)");
      try {
        report.inproc = await runLoadgen("inproc", work, opts);
      } catch (err) {
        report.failures.push(`inproc: ${(err as Error).message}`);
      }
    }
    let pendingCheck: ScenarioResult | undefined;
    for (const [i, [scenario, kind]] of jobs.entries()) {
      report.results[scenario] ??= {};
      const pair = report.results[scenario];
      // A failing server or scenario is recorded and the run goes on with the next one.
      try {
        report.loadBefore[`${scenario}/${kind}`] = Number(os.loadavg()[0].toFixed(2));
        if (!current) {
          log(`${scenario}: starting ${kind} (load ${os.loadavg()[0].toFixed(2)})`);
          current = await startServer(kind, work, opts.quick ? "all" : scenario, opts);
          log(`${scenario}: ${kind} pid ${current.pid} at ${current.url}`);
        }
        const result = await runLoadgen(scenario, work, opts, current);
        if (kind === "hangar" && scenario === "throughput" && !opts.cpuProf) pendingCheck = result;
        pair[kind] = result;
        log(`${scenario}: ${kind} done in ${result.wallSeconds} s, ${result.errors} errors`);
      } catch (err) {
        const message = (err as Error).message;
        report.failures.push(`${kind} ${scenario}: ${message}`);
        log(`${scenario}: ${kind} FAILED: ${message}`);
      }
      const next = jobs[i + 1];
      if (!opts.quick || !next || next[1] !== kind || !current) {
        try {
          await finish(pendingCheck);
        } catch (err) {
          report.failures.push(`${kind} durability check: ${(err as Error).message}`);
        }
        pendingCheck = undefined;
      }
    }
  } finally {
    report.machine.loadEnd = os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(" ");
    report.durationSeconds = Math.round((Date.now() - started) / 1000);
    const base = path.join(opts.outDir, stamp);
    writeFileSync(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
    const md = markdown(report);
    writeFileSync(`${base}.md`, md);
    process.stdout.write(`\n${md}\n`);
    log(`results: ${base}.json, ${base}.md (${report.durationSeconds} s)`);
    if (opts.keep) log(`state dirs and server logs kept in ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

await main();
