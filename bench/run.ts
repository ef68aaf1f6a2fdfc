/**
 * `npm run bench`: Hangar and the reference JS Agent Server side by side, in one run.
 *
 * Installs the reference (bench/reference) if needed, measures the in-process ceiling, then for each
 * scenario starts, one after the other, a fresh reference server, a fresh Hangar on embedded SQLite
 * ("hangar") and a fresh Hangar on Postgres ("hangar-pg"), each on a free 127.0.0.1 port with a fresh
 * state directory, drives it with bench/loadgen.ts (a child process), and stops it by pid. Writes
 * bench/results/<timestamp>.json and .md (each Hangar, the reference, advantage per figure) and prints
 * the table.
 *
 * "hangar-pg" is the same command line as "hangar" plus `--postgres-uri`: a single process running
 * API and workers (no Redis) on a database created for that server start (hangar_bench_<hex>) on the
 * Postgres of HANGAR_BENCH_POSTGRES_URI (default postgres://postgres@127.0.0.1:5432/test), dropped once
 * the server is stopped (kept with --keep). The Postgres server's own CPU and memory are not in the
 * server figures (only the Hangar process is sampled). Postgres unreachable: hangar-pg is skipped with a
 * note when it came from the default --servers, a failure when asked for.
 *
 *   npm run bench                                   # everything (~15 min on the 2-core machine before hangar-pg)
 *   npm run bench -- --quick                        # smoke run (< 2 min once installed)
 *   npm run bench -- --scenario throughput,stream   # a subset
 *   npm run bench -- --servers hangar,hangar-pg --scenario wait-seq,throughput --quick
 *   npm run bench -- --servers hangar --scenario throughput --levels 32 --duration 20 --cpu-prof /tmp/prof
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pg from "pg";
import { SCENARIOS, type Scenario, type ScenarioResult } from "./loadgen.js";

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH, "..");
const REFERENCE = path.join(BENCH, "reference");
const SERVERS = ["reference", "hangar", "hangar-pg"] as const;
type ServerKind = (typeof SERVERS)[number];
/** The Hangar kinds, each with the name it has in the report. */
const HANGARS = { hangar: "SQLite", "hangar-pg": "Postgres" } as const;
type HangarKind = keyof typeof HANGARS;
const isHangar = (kind: ServerKind): kind is HangarKind => kind in HANGARS;
/** The Postgres hangar-pg's databases are created on (and dropped from) by this admin connection. */
const POSTGRES_URI = process.env.HANGAR_BENCH_POSTGRES_URI || "postgres://postgres@127.0.0.1:5432/test";

const HELP = `Usage: npm run bench -- [options]

  --scenario <a,b,…>     subset of: ${SCENARIOS.join(", ")} (default: all)
  --quick                small counts and durations (smoke run, < 2 min once installed)
  --servers <a,b,…>      of reference, hangar (SQLite), hangar-pg (Postgres); the order of the runs per
                         scenario (default reference,hangar,hangar-pg; hangar-pg skipped with a note if
                         Postgres is unreachable, a failure if asked for by --servers)
  --levels <1,8,32,128>  throughput concurrency levels
  --duration <s>         seconds per throughput level
  --durability <mode>    the runs' durability (sync | async | exit; default: the server's, async)
  --hangar-workers <n>   Hangar --workers, both kinds (default: Hangar's own default)
  --n-workers <n>        reference nWorkers (default 10)
  --cpu-prof <dir>       run Hangar (both kinds) with --cpu-prof, profiles into <dir>
  --out-dir <dir>        where results go (default bench/results)
  --keep                 keep the servers' state dirs and logs (printed at the end) and hangar-pg's
                         databases (logged when created)

hangar-pg: Hangar with --postgres-uri, API and workers in one process (no Redis), on a database
hangar_bench_<hex> created per server start on HANGAR_BENCH_POSTGRES_URI
(default postgres://postgres@127.0.0.1:5432/test, needs CREATE DATABASE), dropped when it stops.
Only the Hangar process is sampled: the server CPU and RSS figures leave Postgres out.`;

interface RunOptions {
  scenarios: Scenario[];
  quick: boolean;
  servers: ServerKind[];
  /** --servers was given: a server in it that cannot run is a failure, not a skip. */
  serversExplicit: boolean;
  levels?: string;
  duration?: string;
  durability?: string;
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
      durability: { type: "string" },
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
    serversExplicit: values.servers !== undefined,
    levels: values.levels,
    duration: values.duration,
    durability: values.durability,
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
  /** hangar-pg: the database created for this server start. */
  database?: PgDatabase;
}

// ---------------------------------------------------------------------------------------------------
// Postgres (hangar-pg)

/** A database on the bench Postgres (POSTGRES_URI), created for one hangar-pg server start. */
interface PgDatabase {
  name: string;
  uri: string;
}

/** Runs `fn` on a fresh connection to `uri` (5 s to connect), closed afterwards. */
async function withPostgres<T>(uri: string, fn: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: uri, connectionTimeoutMillis: 5_000 });
  await db.connect();
  try {
    return await fn(db);
  } finally {
    await db.end();
  }
}

/** A connection error in words (ECONNREFUSED on localhost comes as an AggregateError without a message). */
const pgError = (err: unknown): string =>
  (err as Error).message || (err as { code?: string }).code || String(err);

/** The bench Postgres's version, or why it cannot be reached. */
async function postgresVersion(): Promise<{ version: string } | { error: string }> {
  try {
    const { rows } = await withPostgres(POSTGRES_URI, (db) => db.query("SHOW server_version"));
    return { version: String(rows[0]?.server_version) };
  } catch (err) {
    return { error: pgError(err) };
  }
}

async function createDatabase(): Promise<PgDatabase> {
  const name = `hangar_bench_${randomBytes(5).toString("hex")}`;
  try {
    await withPostgres(POSTGRES_URI, (db) => db.query(`CREATE DATABASE ${name}`));
  } catch (err) {
    throw new Error(
      `cannot create database ${name} on Postgres at ${new URL(POSTGRES_URI).host}: ${pgError(err)}`,
    );
  }
  const url = new URL(POSTGRES_URI);
  url.pathname = `/${name}`;
  return { name, uri: url.toString() };
}

async function dropDatabase(database: PgDatabase): Promise<void> {
  await withPostgres(POSTGRES_URI, (db) => db.query(`DROP DATABASE IF EXISTS ${database.name} WITH (FORCE)`));
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

/**
 * Node's arguments for a Hangar server, both kinds: `serve` on the bench graphs with its own port and
 * state directory, then `extra` (hangar-pg: `--postgres-uri`), --workers and --cpu-prof if asked for.
 */
function hangarArgs(port: number, stateDir: string, opts: RunOptions, extra: string[] = []): string[] {
  const args = [
    path.join(ROOT, "bin", "hangar.js"),
    "serve",
    "--config",
    path.join(BENCH, "langgraph.json"),
    "--port",
    String(port),
    "--data-dir",
    stateDir,
    ...extra,
  ];
  if (opts.hangarWorkers) args.push("--workers", opts.hangarWorkers);
  // Node 20 refuses --cpu-prof in NODE_OPTIONS: pass it on the command line of the hangar process.
  if (opts.cpuProf) {
    mkdirSync(opts.cpuProf, { recursive: true });
    args.unshift("--cpu-prof", `--cpu-prof-dir=${opts.cpuProf}`);
  }
  return args;
}

async function startServer(kind: ServerKind, work: string, name: string, opts: RunOptions): Promise<Server> {
  const port = await freePort();
  const stateDir = mkdtempSync(path.join(work, `${kind}-${name}-`));
  const logFile = `${stateDir}.log`;
  const database = kind === "hangar-pg" ? await createDatabase() : undefined;
  if (database) log(`${kind}: database ${database.name} created`);
  const out = openSync(logFile, "w");
  const child =
    kind === "reference"
      ? spawn(process.execPath, ["--import", "tsx", "start.ts"], {
          cwd: REFERENCE,
          env: childEnv({ PORT: String(port), STATE_DIR: stateDir, N_WORKERS: opts.nWorkers }),
          stdio: ["ignore", out, out],
        })
      : spawn(
          process.execPath,
          hangarArgs(port, stateDir, opts, database && ["--postgres-uri", database.uri]),
          {
            cwd: ROOT,
            env: childEnv(),
            stdio: ["ignore", out, out],
          },
        );
  const url = `http://127.0.0.1:${port}`;
  const server: Server = { kind, url, pid: child.pid!, stateDir, logFile, child, database };
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      await closeServer(server, opts);
      throw new Error(`${kind} exited at start:\n${tail(logFile)}`);
    }
    try {
      const res = await fetch(`${url}/ok`);
      if (res.ok) return server;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await closeServer(server, opts, "SIGKILL");
  throw new Error(`${kind} did not answer GET /ok within 90 s:\n${tail(logFile)}`);
}

/** Stops a server (see stopServer), then drops its hangar-pg database unless --keep. */
async function closeServer(server: Server, opts: RunOptions, signal?: NodeJS.Signals): Promise<void> {
  await stopServer(server, signal);
  if (!server.database) return;
  if (opts.keep) log(`${server.kind}: database ${server.database.name} kept (${server.database.uri})`);
  else await dropDatabase(server.database);
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
  if (opts.durability) args.push("--durability", opts.durability);
  if (server && isHangar(server.kind) && scenario === "throughput")
    args.push("--acked-file", ackedFile(server));
  const child = spawn(process.execPath, args, { cwd: ROOT, env: childEnv(), stdio: "inherit" });
  await exited(child);
  if (child.exitCode !== 0) throw new Error(`loadgen ${scenario} failed (exit ${child.exitCode})`);
  return JSON.parse(readFileSync(out, "utf8")) as ScenarioResult;
}

const ackedFile = (server: Server) => `${server.stateDir}.acked`;

/** How many of these threads have a run stored with status success, read from the server's own storage. */
async function countStoredSuccess(server: Server, threadIds: string[]): Promise<number> {
  if (server.database) {
    const sql =
      "SELECT count(DISTINCT thread_id) AS n FROM runs WHERE thread_id = ANY($1) AND status = 'success'";
    const { rows } = await withPostgres(server.database.uri, (db) =>
      db.query<{ n: string }>(sql, [threadIds]),
    );
    return Number(rows[0]?.n ?? 0);
  }
  const { default: Sqlite } = await import("better-sqlite3");
  const db = new Sqlite(path.join(server.stateDir, "hangar.sqlite"), { readonly: true });
  try {
    const stmt = db.prepare("SELECT count(*) AS n FROM runs WHERE thread_id = ? AND status = 'success'");
    let stored = 0;
    for (const id of threadIds) if ((stmt.get(id) as { n: number }).n > 0) stored++;
    return stored;
  } finally {
    db.close();
  }
}

/**
 * Hangar after the throughput scenario: killed with SIGKILL (no graceful shutdown; on SQLite the WAL is
 * not folded back), then its database (the SQLite file, or the hangar-pg Postgres database) is read and
 * every run the client saw acknowledged (by thread id, warm-up included) is looked up: it must be stored
 * with status success.
 */
async function durabilityCheck(server: Server, result: ScenarioResult): Promise<void> {
  await stopServer(server, "SIGKILL");
  const threadIds = readFileSync(ackedFile(server), "utf8").split("\n").filter(Boolean);
  const stored = await countStoredSuccess(server, threadIds);
  result.metrics["throughput.stored_success_runs"] = stored;
  result.metrics["throughput.all_acked_stored"] = stored === threadIds.length ? 1 : 0;
  result.notes.push(
    `after SIGKILL: ${stored} of the ${threadIds.length} acknowledged runs found stored with status success`,
  );
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
    {
      label: "C=32 CPU per run: main thread (ms)",
      key: "throughput.c32.main_thread_cpu_ms_per_run",
      better: "lower",
    },
    {
      label: "C=32 CPU per run: busiest other thread (ms)",
      key: "throughput.c32.busiest_other_thread_cpu_ms_per_run",
      better: "lower",
    },
    {
      label: "C=32 CPU per run: all other threads (ms)",
      key: "throughput.c32.other_threads_cpu_ms_per_run",
      better: "lower",
    },
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
  "rest-mem": [
    { label: "RSS at start, left alone (MB)", key: "rest_mem.rss_start_mb", better: "lower", digits: 0 },
    { label: "RSS at rest, settled (MB)", key: "rest_mem.rss_settled_mb", better: "lower", digits: 0 },
    { label: "RSS settled after (s)", key: "rest_mem.settled_after_s", better: "lower", digits: 0 },
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
  /** Per scenario and server kind ("hangar" is Hangar on SQLite, "hangar-pg" on Postgres). */
  results: Partial<Record<Scenario, Partial<Record<ServerKind, ScenarioResult>>>>;
  failures: string[];
  /** Run-level notes, e.g. hangar-pg skipped because Postgres was unreachable. */
  notes: string[];
  /** 1-minute load average just before each server run (the machine is shared: noise indicator). */
  loadBefore: Record<string, number>;
}

/** The "Targets (issue 6)" lines for one Hangar kind, those its results (and the reference's) allow. */
function targets(report: Report, kind: HangarKind): string[] {
  const lines: string[] = [];
  const who = `Hangar (${HANGARS[kind]})`;
  const tp = report.results.throughput?.[kind]?.metrics;
  const h32 = tp?.["throughput.c32.runs_per_s"];
  if (tp && h32 !== undefined) {
    const r32 = report.results.throughput?.reference?.metrics["throughput.c32.runs_per_s"];
    const stored = tp["throughput.all_acked_stored"];
    lines.push(
      `- ${who}: throughput C=32 ≥ 10× reference: ` +
        (r32 === undefined
          ? `${fmt(h32)} runs/s, no reference figure in this run`
          : `${fmt(h32)} vs ${fmt(r32)} runs/s = ${fmt(h32 / r32)}× → ${h32 >= 10 * r32 ? "met" : "MISSED"}`) +
        `; durability: ${stored === 1 ? "every acknowledged run found stored after SIGKILL" : stored === 0 ? "ACKNOWLEDGED RUNS MISSING after SIGKILL" : "not checked"}` +
        ` (${fmt(tp["throughput.stored_success_runs"], 0)} stored / ${fmt(tp["throughput.acked_runs"], 0)} acknowledged).`,
    );
  }
  const ws = report.results["wait-seq"]?.[kind]?.metrics;
  const ip = report.inproc?.metrics;
  if (ws && ip) {
    const rtt = ws["wait_seq.ok_rtt_ms.p50"];
    const sqlite = ip["inproc.sqlite.us.p50"] / 1000;
    const memory = ip["inproc.memory.us.p50"] / 1000;
    const p50 = ws["wait_seq.latency_ms.p50"];
    lines.push(
      `- ${who}: runs/wait p50 within 3× (in-process invoke + one HTTP round trip): ${fmt(p50)} ms vs 3 × (${fmt(sqlite)} ms SQLite invoke + ${fmt(rtt)} ms GET /ok) = ${fmt(3 * (sqlite + rtt))} ms → ${p50 <= 3 * (sqlite + rtt) ? "met" : "MISSED"}` +
        ` (with the MemorySaver invoke, ${fmt(memory)} ms: bound ${fmt(3 * (memory + rtt))} ms → ${p50 <= 3 * (memory + rtt) ? "met" : "missed"}).`,
    );
  }
  const ms = report.results["many-streams"]?.[kind];
  if (ms) {
    const n = ms.metrics["many_streams.streams"];
    const done = ms.metrics["many_streams.completed"];
    lines.push(
      `- ${who}: ${fmt(n, 0)} concurrent streams all complete, no error: ${fmt(done, 0)} completed, ${ms.errors} errors in ${fmt(ms.metrics["many_streams.total_s"])} s → ${done === n && ms.errors === 0 ? "met" : "MISSED"}.`,
    );
  }
  return lines;
}

function markdown(report: Report): string {
  const lines: string[] = [];
  const m = report.machine;
  const hangars = Object.keys(HANGARS) as HangarKind[];
  lines.push(`# Bench run ${report.date}`, "");
  lines.push(
    `Machine: ${m.cpus} × ${m.cpuModel}, ${m.memGb} GB RAM, Node ${m.node}, ${m.os}. ` +
      `Hangar at ${m.hangarCommit}${m.hangarTreeDirty ? " with uncommitted changes in src/ or bin/" : ""}` +
      `${m.postgres ? `; Hangar (Postgres) on ${m.postgres}` : ""}. ` +
      `Load average at start ${m.loadStart}, at end ${m.loadEnd}. Run took ${fmt(report.durationSeconds / 60, 1)} min` +
      `${report.options.quick ? " (--quick: small counts, not comparable with full runs)" : ""}.`,
    "",
  );
  lines.push(
    "Advantage = how many times better that Hangar is (reference ÷ Hangar for times and memory, Hangar ÷ reference for rates); < 1× means Hangar is worse. " +
      "Server CPU and RSS are the server process's own: for Hangar (Postgres) they leave out the Postgres server's.",
    "",
  );
  const header = [
    "figure",
    ...hangars.map((k) => `Hangar (${HANGARS[k]})`),
    "reference",
    ...hangars.map((k) => `${HANGARS[k]} advantage`),
  ];
  lines.push(`| ${header.join(" | ")} |`, `|---|${"---:|".repeat(header.length - 1)}`);
  for (const [scenario, figures] of Object.entries(FIGURES) as [Scenario, Figure[]][]) {
    const byKind = report.results[scenario];
    if (!byKind) continue;
    for (const f of figures) {
      const r = byKind.reference?.metrics[f.key];
      const hs = hangars.map((k) => byKind[k]?.metrics[f.key]);
      const cells = [
        f.label,
        ...hs.map((h) => fmt(h, f.digits)),
        fmt(r, f.digits),
        ...hs.map((h) => advantage(f, h, r)),
      ];
      lines.push(`| ${cells.join(" | ")} |`);
    }
  }
  const errs: string[] = [...report.notes];
  for (const [scenario, byKind] of Object.entries(report.results)) {
    for (const [kind, res] of Object.entries(byKind ?? {})) {
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
      ["hangar_executor", "Hangar's per-run work: SQLite, `stream` values"],
    ]) {
      lines.push(
        `| ${label} | ${fmt(x[`inproc.${mode}.per_s`], 0)} | ${fmt(x[`inproc.${mode}.us.p50`], 0)} | ${fmt(x[`inproc.${mode}.us.p99`], 0)} | ${fmt(x[`inproc.${mode}.cpu_us`], 0)} |`,
      );
    }
  }
  const targetLines = hangars.flatMap((k) => targets(report, k));
  if (targetLines.length) lines.push("", "Targets (issue 6):", "", ...targetLines);
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
  const notes: string[] = [];
  let postgres: string | undefined;
  if (opts.servers.includes("hangar-pg")) {
    const where = new URL(POSTGRES_URI).host;
    const pgInfo = await postgresVersion();
    if ("version" in pgInfo) postgres = `PostgreSQL ${pgInfo.version} at ${where}`;
    else if (!opts.serversExplicit) {
      // Only the default list: skipped. Asked for by --servers: each start fails and is recorded.
      opts.servers = opts.servers.filter((k) => k !== "hangar-pg");
      notes.push(
        `hangar-pg skipped: Postgres at ${where} unreachable (${pgInfo.error}); set HANGAR_BENCH_POSTGRES_URI`,
      );
      log(notes.at(-1)!);
    }
  }
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
      ...(postgres && { postgres }),
      loadStart: os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(" "),
    },
    options: { ...opts, scenarios: opts.scenarios },
    durationSeconds: 0,
    results: {},
    failures: [],
    notes,
    loadBefore: {},
  };
  let current: Server | undefined;
  const interrupt = () => {
    if (!current) process.exit(130);
    // SIGKILL at once, then drop its database (hangar-pg) before leaving.
    void closeServer(current, opts, "SIGKILL")
      .catch(() => undefined)
      .finally(() => process.exit(130));
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
    try {
      if (checkDurability) await durabilityCheck(server, checkDurability);
    } finally {
      await closeServer(server, opts);
    }
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
      const byKind = report.results[scenario];
      // A failing server or scenario is recorded and the run goes on with the next one.
      try {
        report.loadBefore[`${scenario}/${kind}`] = Number(os.loadavg()[0].toFixed(2));
        if (!current) {
          log(`${scenario}: starting ${kind} (load ${os.loadavg()[0].toFixed(2)})`);
          current = await startServer(kind, work, opts.quick ? "all" : scenario, opts);
          log(`${scenario}: ${kind} pid ${current.pid} at ${current.url}`);
        }
        const result = await runLoadgen(scenario, work, opts, current);
        if (isHangar(kind) && scenario === "throughput" && !opts.cpuProf) pendingCheck = result;
        byKind[kind] = result;
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
