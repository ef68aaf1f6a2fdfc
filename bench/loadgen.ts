/**
 * Hangar's load generator: drives one Agent Server (Hangar or the reference) through one scenario and
 * writes a JSON result. No dependencies beyond Node for the HTTP scenarios: a keep-alive `node:http`
 * client, an SSE parser, a `/proc/<pid>` sampler (RSS + CPU of the server), nearest-rank percentiles.
 * The `inproc` scenario (no server) measures the in-process ceiling with the project's LangGraph.
 *
 *   node --import tsx bench/loadgen.ts --scenario wait-seq --url http://127.0.0.1:2024 --server-pid 123
 *   node --import tsx bench/loadgen.ts --scenario inproc --n 5000
 *
 * Every loop is bounded by a count and by a deadline (`--max-seconds`, default 900); every request by
 * `--timeout` (ms, default 120 s). `--quick` shrinks every count and duration for a smoke run.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

export const SCENARIOS = [
  "inproc",
  "wait-seq",
  "bg-join",
  "stream",
  "throughput",
  "many-streams",
  "threads-mem",
  "rest-mem",
] as const;
export type Scenario = (typeof SCENARIOS)[number];

export interface ScenarioResult {
  scenario: string;
  label: string;
  /** Flat figures, `group.field` → number, so runs merge and compare. */
  metrics: Record<string, number>;
  errors: number;
  errorSamples: string[];
  wallSeconds: number;
  clientCpuSeconds: number;
  notes: string[];
}

const HUMAN_INPUT = { messages: [{ role: "human", content: "hi" }] };

// ---------------------------------------------------------------------------------------------------
// Statistics

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}

/** p50/p90/p99/max/mean of a sample under `prefix.` (times in ms, rounded to 0.01). */
function summarize(prefix: string, values: number[], out: Record<string, number>): void {
  const sorted = [...values].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  out[`${prefix}.n`] = sorted.length;
  if (sorted.length === 0) return;
  out[`${prefix}.p50`] = r(percentile(sorted, 50));
  out[`${prefix}.p90`] = r(percentile(sorted, 90));
  out[`${prefix}.p99`] = r(percentile(sorted, 99));
  out[`${prefix}.max`] = r(sorted[sorted.length - 1]);
  out[`${prefix}.mean`] = r(sorted.reduce((a, b) => a + b, 0) / sorted.length);
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

// ---------------------------------------------------------------------------------------------------
// /proc sampler

const CLK_TCK = 100; // USER_HZ; `getconf CLK_TCK` is 100 on Linux x86-64

/** User + system CPU time in ms from a /proc stat line (a process's or a thread's). */
function cpuMsOfStat(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

/** RSS and CPU of another process from /proc/<pid>: sampled every `intervalMs` while running. */
export class ProcSampler {
  readonly #pid: number;
  readonly #intervalMs: number;
  #timer?: NodeJS.Timeout;
  peakRssKb = 0;

  constructor(pid: number, intervalMs = 200) {
    this.#pid = pid;
    this.#intervalMs = intervalMs;
  }

  /** Resident set size in kB (0 if the process is gone). */
  rssKb(): number {
    try {
      const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${this.#pid}/status`, "utf8"));
      return m ? Number(m[1]) : 0;
    } catch {
      return 0;
    }
  }

  /** User + system CPU time of all its threads, in ms. */
  cpuMs(): number {
    try {
      return cpuMsOfStat(readFileSync(`/proc/${this.#pid}/stat`, "utf8"));
    } catch {
      return 0;
    }
  }

  /** CPU time in ms of each of its threads (by thread id), from /proc/<pid>/task/<tid>/stat. */
  threadCpuMs(): Map<number, number> {
    const byThread = new Map<number, number>();
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${this.#pid}/task`);
    } catch {
      return byThread;
    }
    for (const tid of tids) {
      try {
        byThread.set(Number(tid), cpuMsOfStat(readFileSync(`/proc/${this.#pid}/task/${tid}/stat`, "utf8")));
      } catch {} // the thread ended
    }
    return byThread;
  }

  /**
   * How the CPU time since `before` (a `threadCpuMs()`) splits: the main thread (its tid is the pid:
   * Hangar's API thread), the busiest other thread (Hangar's executor thread, with one), and the rest
   * (other executor threads, V8's GC helpers, libuv's pool). Linux does not name Node's threads apart.
   */
  threadSplitMs(before: Map<number, number>): { main: number; busiestOther: number; rest: number } {
    const spent = [...this.threadCpuMs()].map(([tid, ms]) => [tid, ms - (before.get(tid) ?? 0)] as const);
    const main = spent.find(([tid]) => tid === this.#pid)?.[1] ?? 0;
    const others = spent.filter(([tid]) => tid !== this.#pid).map(([, ms]) => ms);
    const busiestOther = Math.max(0, ...others);
    const rest = others.reduce((a, b) => a + b, 0) - busiestOther;
    return { main, busiestOther, rest };
  }

  sample(): number {
    const rss = this.rssKb();
    if (rss > this.peakRssKb) this.peakRssKb = rss;
    return rss;
  }

  start(): this {
    this.sample();
    this.#timer = setInterval(() => this.sample(), this.#intervalMs);
    this.#timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.#timer);
    this.sample();
  }

  resetPeak(): void {
    this.peakRssKb = 0;
    this.sample();
  }
}

/** A sampler that reports nothing, when no server pid is known. */
class NoSampler extends ProcSampler {
  override rssKb() {
    return 0;
  }
  override cpuMs() {
    return 0;
  }
}

const mb = (kb: number) => round(kb / 1024, 1);

// ---------------------------------------------------------------------------------------------------
// HTTP client (keep-alive) and SSE parser

export interface HttpResult {
  status: number;
  body: string;
  /** Times in ms since the request started. */
  headersMs: number;
  endMs: number;
}

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/** Incremental SSE parser: feed text as it arrives, get complete events. */
export class SseParser {
  #buffer = "";
  #event = "";
  #data: string[] = [];
  #id: string | undefined;

  feed(text: string): SseEvent[] {
    this.#buffer += text;
    const out: SseEvent[] = [];
    let start = 0;
    for (;;) {
      const nl = this.#buffer.indexOf("\n", start);
      if (nl < 0) break;
      let line = this.#buffer.slice(start, nl);
      start = nl + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        if (this.#data.length > 0 || this.#event !== "") {
          out.push({ event: this.#event || "message", data: this.#data.join("\n"), id: this.#id });
        }
        this.#event = "";
        this.#data = [];
        this.#id = undefined;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") this.#event = value;
      else if (field === "data") this.#data.push(value);
      else if (field === "id") this.#id = value;
    }
    this.#buffer = this.#buffer.slice(start);
    return out;
  }
}

export class HttpClient {
  readonly #host: string;
  readonly #port: number;
  readonly #agent: http.Agent;
  readonly #timeoutMs: number;

  constructor(baseUrl: string, timeoutMs: number) {
    const url = new URL(baseUrl);
    this.#host = url.hostname;
    this.#port = Number(url.port || 80);
    this.#agent = new http.Agent({
      keepAlive: true,
      maxSockets: Number.POSITIVE_INFINITY,
      maxFreeSockets: 2048,
    });
    this.#timeoutMs = timeoutMs;
  }

  close(): void {
    this.#agent.destroy();
  }

  /**
   * One request; resolves with the whole body (or, with `onText`, hands each chunk over as it comes
   * and returns an empty body). Rejects on network errors and after the timeout.
   */
  request(
    method: string,
    urlPath: string,
    body?: unknown,
    onText?: (text: string, atMs: number) => void,
    timeoutMs = this.#timeoutMs,
  ): Promise<HttpResult> {
    const t0 = performance.now();
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          agent: this.#agent,
          host: this.#host,
          port: this.#port,
          method,
          path: urlPath,
          headers: payload
            ? { "content-type": "application/json", "content-length": payload.length }
            : undefined,
        },
        (res) => {
          const headersMs = performance.now() - t0;
          res.setEncoding("utf8");
          let text = "";
          res.on("data", (chunk: string) => {
            if (onText) onText(chunk, performance.now() - t0);
            else text += chunk;
          });
          res.on("end", () => {
            clearTimeout(timer);
            resolve({ status: res.statusCode ?? 0, body: text, headersMs, endMs: performance.now() - t0 });
          });
          res.on("error", (err) => {
            clearTimeout(timer);
            reject(err);
          });
        },
      );
      const timer = setTimeout(() => req.destroy(new Error(`timeout after ${timeoutMs} ms`)), timeoutMs);
      req.on("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.end(payload);
    });
  }

  /** POST/GET returning parsed JSON; throws on a non-2xx status. */
  async json<T = any>(method: string, urlPath: string, body?: unknown): Promise<T> {
    const res = await this.request(method, urlPath, body);
    if (res.status < 200 || res.status >= 300) {
      throw new Error(`${method} ${urlPath} → ${res.status} ${res.body.slice(0, 200)}`);
    }
    return JSON.parse(res.body) as T;
  }

  /** An SSE request: every event with its arrival time (ms since the request started). */
  async sse(
    method: string,
    urlPath: string,
    body: unknown,
    timeoutMs?: number,
  ): Promise<HttpResult & { events: { event: string; atMs: number; data?: string }[] }> {
    const parser = new SseParser();
    const events: { event: string; atMs: number; data?: string }[] = [];
    const res = await this.request(
      method,
      urlPath,
      body,
      (text, atMs) => {
        for (const e of parser.feed(text)) {
          // Keep payloads only where they are checked (final values, errors): 1000 streams stay small.
          const keep = e.event === "values" || e.event === "error";
          events.push({ event: e.event, atMs, data: keep ? e.data : undefined });
        }
      },
      timeoutMs,
    );
    return { ...res, events };
  }
}

// ---------------------------------------------------------------------------------------------------
// Helpers shared by scenarios

class ErrorLog {
  count = 0;
  samples: string[] = [];
  add(what: string): void {
    this.count++;
    if (this.samples.length < 10) this.samples.push(what.slice(0, 300));
  }
}

interface Ctx {
  client: HttpClient;
  sampler: ProcSampler;
  deadline: number;
  quick: boolean;
  errors: ErrorLog;
  notes: string[];
  opts: Options;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Checks a runs/wait or join body: 2xx, no `__error__`, contains the expected text. */
function checkResult(res: HttpResult, expect: string): string | null {
  if (res.status < 200 || res.status >= 300) return `status ${res.status}: ${res.body.slice(0, 200)}`;
  if (res.body.includes("__error__")) return `run error: ${res.body.slice(0, 200)}`;
  if (!res.body.includes(expect)) return `missing ${JSON.stringify(expect)}: ${res.body.slice(0, 200)}`;
  return null;
}

async function createThread(client: HttpClient, metadata?: Record<string, unknown>): Promise<string> {
  const t = await client.json<{ thread_id: string }>("POST", "/threads", metadata ? { metadata } : {});
  return t.thread_id;
}

/** Runs `fn(i)` with `concurrency` workers over `count` items, stopping at the deadline. */
async function pool(
  count: number,
  concurrency: number,
  deadline: number,
  fn: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count && performance.now() < deadline) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

/** One create-thread + runs/wait iteration: the unit of the latency and throughput scenarios. */
async function waitOnce(
  ctx: Ctx,
  assistant: string,
  expect: string,
  acked?: string[],
): Promise<number | null> {
  try {
    const threadId = await createThread(ctx.client);
    const res = await ctx.client.request("POST", `/threads/${threadId}/runs/wait`, {
      assistant_id: assistant,
      input: HUMAN_INPUT,
      ...(ctx.opts.durability && { durability: ctx.opts.durability }),
    });
    const problem = checkResult(res, expect);
    if (problem) {
      ctx.errors.add(`runs/wait: ${problem}`);
      return null;
    }
    acked?.push(threadId);
    return res.endMs;
  } catch (err) {
    ctx.errors.add(`runs/wait: ${(err as Error).message}`);
    return null;
  }
}

// ---------------------------------------------------------------------------------------------------
// Scenarios against a server

/** Sequential `POST /threads` + `runs/wait` on echo; latency = runs/wait start → response end. */
async function waitSeq(ctx: Ctx, m: Record<string, number>): Promise<void> {
  const n = ctx.opts.n ?? (ctx.quick ? 10 : 200);
  const warmup = ctx.quick ? 1 : 5;
  for (let i = 0; i < warmup && performance.now() < ctx.deadline; i++)
    await waitOnce(ctx, "echo", "echo: hi");
  const latencies: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < n && performance.now() < ctx.deadline; i++) {
    const ms = await waitOnce(ctx, "echo", "echo: hi");
    if (ms !== null) latencies.push(ms);
  }
  const elapsed = (performance.now() - t0) / 1000;
  summarize("wait_seq.latency_ms", latencies, m);
  m["wait_seq.runs_per_s"] = round(latencies.length / elapsed);
  // One HTTP round trip to the same server (GET /ok), for the latency target.
  const rtts: number[] = [];
  for (let i = 0; i < n && performance.now() < ctx.deadline; i++) {
    try {
      const res = await ctx.client.request("GET", "/ok");
      if (res.status === 200) rtts.push(res.endMs);
      else ctx.errors.add(`GET /ok → ${res.status}`);
    } catch (err) {
      ctx.errors.add(`GET /ok: ${(err as Error).message}`);
    }
  }
  summarize("wait_seq.ok_rtt_ms", rtts, m);
}

/** Background run: `POST /threads/{id}/runs` then `GET …/join`; latency = create start → join end. */
async function bgJoin(ctx: Ctx, m: Record<string, number>): Promise<void> {
  const n = ctx.opts.n ?? (ctx.quick ? 5 : 100);
  const warmup = ctx.quick ? 1 : 5;
  const creates: number[] = [];
  const totals: number[] = [];
  for (let i = 0; i < n + warmup && performance.now() < ctx.deadline; i++) {
    try {
      const threadId = await createThread(ctx.client);
      const t0 = performance.now();
      const created = await ctx.client.request("POST", `/threads/${threadId}/runs`, {
        assistant_id: "echo",
        input: HUMAN_INPUT,
      });
      if (created.status !== 200) {
        ctx.errors.add(`runs create → ${created.status} ${created.body.slice(0, 200)}`);
        continue;
      }
      const runId = (JSON.parse(created.body) as { run_id: string }).run_id;
      const joined = await ctx.client.request("GET", `/threads/${threadId}/runs/${runId}/join`);
      const total = performance.now() - t0;
      const problem = checkResult(joined, "echo: hi");
      if (problem) {
        ctx.errors.add(`join: ${problem}`);
        continue;
      }
      if (i >= warmup) {
        creates.push(created.endMs);
        totals.push(total);
      }
    } catch (err) {
      ctx.errors.add(`bg-join: ${(err as Error).message}`);
    }
  }
  summarize("bg_join.create_ms", creates, m);
  summarize("bg_join.create_to_join_ms", totals, m);
}

/**
 * Streaming on `custom200` (200 `config.writer` events), sequentially: time to headers, to the first
 * event, to the first and last custom event, to the end of the response; events/s per stream =
 * custom events / (last custom event − request start).
 */
async function stream(ctx: Ctx, m: Record<string, number>): Promise<void> {
  const n = ctx.opts.n ?? (ctx.quick ? 5 : 100);
  const warmup = ctx.quick ? 1 : 5;
  const headers: number[] = [];
  const first: number[] = [];
  const firstCustom: number[] = [];
  const lastCustom: number[] = [];
  const ends: number[] = [];
  const tails: number[] = [];
  const rates: number[] = [];
  const burst: number[] = [];
  let totalCustom = 0;
  let totalSeconds = 0;
  for (let i = 0; i < n + warmup && performance.now() < ctx.deadline; i++) {
    try {
      const threadId = await createThread(ctx.client);
      const res = await ctx.client.sse("POST", `/threads/${threadId}/runs/stream`, {
        assistant_id: "custom200",
        input: HUMAN_INPUT,
        stream_mode: ["custom"],
      });
      if (res.status !== 200) {
        ctx.errors.add(`stream → ${res.status}`);
        continue;
      }
      const custom = res.events.filter((e) => e.event === "custom");
      const failed = res.events.find((e) => e.event === "error");
      if (failed || custom.length !== 200 || res.events.length === 0) {
        ctx.errors.add(`stream: ${custom.length} custom events, error=${failed?.data ?? "none"}`);
        continue;
      }
      if (i < warmup) continue;
      const c0 = custom[0].atMs;
      const c1 = custom[custom.length - 1].atMs;
      headers.push(res.headersMs);
      first.push(res.events[0].atMs);
      firstCustom.push(c0);
      lastCustom.push(c1);
      ends.push(res.endMs);
      tails.push(res.endMs - res.events[res.events.length - 1].atMs);
      rates.push(custom.length / (c1 / 1000));
      if (c1 > c0) burst.push((custom.length - 1) / ((c1 - c0) / 1000));
      totalCustom += custom.length;
      totalSeconds += res.endMs / 1000;
    } catch (err) {
      ctx.errors.add(`stream: ${(err as Error).message}`);
    }
  }
  summarize("stream.headers_ms", headers, m);
  summarize("stream.first_event_ms", first, m);
  summarize("stream.first_custom_ms", firstCustom, m);
  summarize("stream.last_custom_ms", lastCustom, m);
  summarize("stream.end_ms", ends, m);
  summarize("stream.end_after_last_event_ms", tails, m);
  summarize("stream.events_per_s", rates, m);
  summarize("stream.burst_events_per_s", burst, m);
  m["stream.sequential_events_per_s"] = round(totalCustom / (totalSeconds || 1));
}

/**
 * Closed-loop throughput: C clients each loop create-thread + runs/wait on echo for `duration` s after
 * `warmup` unrecorded iterations each; runs/s = completed / (elapsed incl. drain of in-flight calls).
 */
async function throughput(ctx: Ctx, m: Record<string, number>): Promise<void> {
  const levels = ctx.opts.levels ?? [1, 8, 32, 128];
  const duration = ctx.opts.duration ?? (ctx.quick ? 1.5 : 10);
  const warmup = ctx.quick ? 1 : 5;
  const pauseMs = ctx.quick ? 200 : 2000;
  const maxIterations = 1_000_000;
  // Threads whose run was acknowledged (warm-up included): run.ts checks that the server stored them all.
  const acked: string[] = [];
  for (const c of levels) {
    if (performance.now() >= ctx.deadline) break;
    const errorsBefore = ctx.errors.count;
    await pool(c * warmup, c, ctx.deadline, async () => {
      await waitOnce(ctx, "echo", "echo: hi", acked);
    });
    const latencies: number[] = [];
    const cpu0 = ctx.sampler.cpuMs();
    const threads0 = ctx.sampler.threadCpuMs();
    const client0 = process.cpuUsage();
    const t0 = performance.now();
    const stopAt = Math.min(t0 + duration * 1000, ctx.deadline);
    await pool(maxIterations, c, stopAt, async () => {
      const ms = await waitOnce(ctx, "echo", "echo: hi", acked);
      if (ms !== null) latencies.push(ms);
    });
    const elapsed = (performance.now() - t0) / 1000;
    const serverCpu = (ctx.sampler.cpuMs() - cpu0) / 1000;
    const client = process.cpuUsage(client0);
    const k = `throughput.c${c}`;
    m[`${k}.runs_per_s`] = round(latencies.length / elapsed);
    summarize(`${k}.latency_ms`, latencies, m);
    m[`${k}.errors`] = ctx.errors.count - errorsBefore;
    m[`${k}.server_cpu_pct`] = round((serverCpu / elapsed) * 100, 1);
    m[`${k}.server_cpu_ms_per_run`] = round((serverCpu * 1000) / Math.max(1, latencies.length));
    const split = ctx.sampler.threadSplitMs(threads0);
    m[`${k}.main_thread_cpu_ms_per_run`] = round(split.main / Math.max(1, latencies.length));
    m[`${k}.busiest_other_thread_cpu_ms_per_run`] = round(split.busiestOther / Math.max(1, latencies.length));
    m[`${k}.other_threads_cpu_ms_per_run`] = round(split.rest / Math.max(1, latencies.length));
    m[`${k}.client_cpu_pct`] = round(((client.user + client.system) / 1e6 / elapsed) * 100, 1);
    m[`${k}.rss_end_mb`] = mb(ctx.sampler.sample());
    await sleep(pauseMs);
  }
  m["throughput.acked_runs"] = acked.length;
  if (ctx.opts.ackedFile) writeFileSync(ctx.opts.ackedFile, `${acked.join("\n")}\n`);
}

/**
 * S concurrent streams of `slow1s` (a 1 s run each): threads are created first (32 creators, untimed),
 * then all streams open at once. Reports how many complete, in what time, and the server's RSS.
 */
async function manyStreams(ctx: Ctx, m: Record<string, number>): Promise<void> {
  const s = ctx.opts.streams ?? (ctx.quick ? 50 : 1000);
  const timeoutMs = ctx.opts.timeoutMs ?? 300_000;
  const threads: string[] = [];
  await pool(s, 32, ctx.deadline, async () => {
    try {
      threads.push(await createThread(ctx.client));
    } catch (err) {
      ctx.errors.add(`thread create: ${(err as Error).message}`);
    }
  });
  await sleep(500);
  ctx.sampler.resetPeak();
  const rssBefore = ctx.sampler.sample();
  const cpu0 = ctx.sampler.cpuMs();
  const firsts: number[] = [];
  const ends: number[] = [];
  let completed = 0;
  const t0 = performance.now();
  await Promise.all(
    threads.map(async (threadId) => {
      try {
        const res = await ctx.client.sse(
          "POST",
          `/threads/${threadId}/runs/stream`,
          { assistant_id: "slow1s", input: HUMAN_INPUT, stream_mode: ["values"] },
          Math.min(timeoutMs, Math.max(1000, ctx.deadline - performance.now())),
        );
        const values = res.events.filter((e) => e.event === "values");
        const failed = res.events.find((e) => e.event === "error");
        if (res.status !== 200 || failed || !values.at(-1)?.data?.includes("slow echo: hi")) {
          ctx.errors.add(`stream: status ${res.status}, error=${failed?.data ?? "none"}`);
          return;
        }
        completed++;
        if (res.events.length) firsts.push(res.events[0].atMs);
        ends.push(res.endMs);
      } catch (err) {
        ctx.errors.add(`stream: ${(err as Error).message}`);
      }
    }),
  );
  const total = (performance.now() - t0) / 1000;
  const cpu = (ctx.sampler.cpuMs() - cpu0) / 1000;
  const peak = ctx.sampler.peakRssKb;
  await sleep(ctx.quick ? 1000 : 3000);
  m["many_streams.streams"] = threads.length;
  m["many_streams.completed"] = completed;
  m["many_streams.total_s"] = round(total);
  summarize("many_streams.first_event_ms", firsts, m);
  summarize("many_streams.end_ms", ends, m);
  m["many_streams.rss_before_mb"] = mb(rssBefore);
  m["many_streams.rss_peak_mb"] = mb(peak);
  m["many_streams.rss_after_mb"] = mb(ctx.sampler.sample());
  m["many_streams.server_cpu_s"] = round(cpu);
  m["many_streams.server_cpu_pct"] = round((cpu / total) * 100, 1);
}

/**
 * RSS of a server left alone after its start, sampled every second for 60 s (quick: 3 s): the first
 * sample (about a second after it answered `/ok`) and the settled figure (median of the last 10 s).
 * Both servers keep the young generation V8 grew while loading modules until its memory reducer runs
 * after some idle time (20–40 s here), so the two figures differ by some 30–50 MB.
 */
async function restMem(ctx: Ctx, m: Record<string, number>): Promise<void> {
  const seconds = ctx.quick ? 3 : 60;
  const samples: number[] = [];
  const t0 = performance.now();
  while (performance.now() - t0 < seconds * 1000 && performance.now() < ctx.deadline) {
    samples.push(ctx.sampler.sample());
    await sleep(1000);
  }
  const last = samples.slice(-10).sort((a, b) => a - b);
  const settled = last[Math.floor(last.length / 2)] ?? 0;
  m["rest_mem.rss_start_mb"] = mb(samples[0] ?? 0);
  m["rest_mem.rss_settled_mb"] = mb(settled);
  // When it got there: the first second from which every sample is within 2 MB of the settled figure.
  let from = samples.length;
  while (from > 0 && Math.abs(samples[from - 1]! - settled) <= 2048) from--;
  m["rest_mem.settled_after_s"] = from;
}

/** T threads with metadata by 16 concurrent creators: rate, RSS before / after / after idling. */
async function threadsMem(ctx: Ctx, m: Record<string, number>): Promise<void> {
  const t = ctx.opts.threads ?? (ctx.quick ? 1000 : 10_000);
  const idleMs = ctx.quick ? 1000 : 5000;
  await sleep(500);
  const before = ctx.sampler.sample();
  const creates: number[] = [];
  const t0 = performance.now();
  await pool(t, 16, ctx.deadline, async (i) => {
    try {
      const res = await ctx.client.request("POST", "/threads", {
        metadata: { bench: "threads-mem", i, group: `g${i % 10}` },
      });
      if (res.status !== 200) ctx.errors.add(`POST /threads → ${res.status}`);
      else creates.push(res.endMs);
    } catch (err) {
      ctx.errors.add(`POST /threads: ${(err as Error).message}`);
    }
  });
  const elapsed = (performance.now() - t0) / 1000;
  const after = ctx.sampler.sample();
  await sleep(idleMs);
  const idle = ctx.sampler.sample();
  m["threads_mem.threads"] = creates.length;
  m["threads_mem.threads_per_s"] = round(creates.length / elapsed);
  summarize("threads_mem.create_ms", creates, m);
  m["threads_mem.rss_before_mb"] = mb(before);
  m["threads_mem.rss_after_mb"] = mb(after);
  m["threads_mem.rss_after_idle_mb"] = mb(idle);
  m["threads_mem.peak_rss_mb"] = mb(ctx.sampler.peakRssKb);
  m["threads_mem.kib_per_thread"] = round((idle - before) / Math.max(1, creates.length));
  const search: number[] = [];
  const count: number[] = [];
  for (let i = 0; i < 5 && performance.now() < ctx.deadline; i++) {
    try {
      const s = await ctx.client.request("POST", "/threads/search", { metadata: { group: "g3" }, limit: 10 });
      if (s.status === 200) search.push(s.endMs);
      else ctx.errors.add(`threads/search → ${s.status}`);
      const c = await ctx.client.request("POST", "/threads/count", {});
      if (c.status === 200) count.push(c.endMs);
      else ctx.errors.add(`threads/count → ${c.status}`);
    } catch (err) {
      ctx.errors.add(`search/count: ${(err as Error).message}`);
    }
  }
  summarize("threads_mem.search_ms", search, m);
  summarize("threads_mem.count_ms", count, m);
}

// ---------------------------------------------------------------------------------------------------
// In-process ceiling (no server)

/**
 * The echo graph's `invoke()` rate in this process with the project's LangGraph: no checkpointer,
 * MemorySaver, Hangar's SQLite checkpointer (a fresh file, Hangar's pragmas), and what Hangar's
 * executor does per run (SQLite, `graph.stream` values; its final state is the last values chunk).
 */
async function inproc(ctx: Ctx, m: Record<string, number>): Promise<void> {
  const n = ctx.opts.n ?? (ctx.quick ? 200 : 5000);
  const warmup = ctx.quick ? 30 : 200;
  const here = path.dirname(fileURLToPath(import.meta.url));
  const { graph } = (await import(pathToFileURL(path.join(here, "graphs", "echo.ts")).href)) as {
    graph: any;
  };
  const { MemorySaver } = await import("@langchain/langgraph");
  const { SqlCheckpointer } = await import("../src/storage/sql/checkpointer.js");
  const { openSqlite } = await import("../src/storage/sql/database.js");
  const { mkdtempSync, rmSync } = await import("node:fs");
  const dir = mkdtempSync(path.join(os.tmpdir(), "hangar-bench-inproc-"));
  const db = await openSqlite({ dataDir: dir, synchronous: "normal" });
  const variants: [string, any, (g: any, i: number) => Promise<unknown>][] = [
    ["none", false, (g) => g.invoke(HUMAN_INPUT)],
    ["memory", new MemorySaver(), (g, i) => g.invoke(HUMAN_INPUT, { configurable: { thread_id: `m${i}` } })],
    [
      "sqlite",
      new SqlCheckpointer(db),
      (g, i) => g.invoke(HUMAN_INPUT, { configurable: { thread_id: `s${i}` } }),
    ],
    [
      "hangar_executor",
      new SqlCheckpointer(db),
      async (g, i) => {
        const config = { configurable: { thread_id: `h${i}` } };
        let last: unknown;
        for await (const chunk of await g.stream(HUMAN_INPUT, { ...config, streamMode: ["values"] })) {
          last = chunk;
        }
        return last;
      },
    ],
  ];
  try {
    for (const [name, checkpointer, call] of variants) {
      const g = Object.assign(Object.create(Object.getPrototypeOf(graph)), graph, { checkpointer });
      for (let i = 0; i < warmup; i++) await call(g, -1 - i);
      const times: number[] = [];
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < n && performance.now() < ctx.deadline; i++) {
        const s = performance.now();
        await call(g, i);
        times.push((performance.now() - s) * 1000);
      }
      const elapsed = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      m[`inproc.${name}.per_s`] = round(times.length / elapsed, 1);
      summarize(`inproc.${name}.us`, times, m);
      m[`inproc.${name}.cpu_us`] = round((cpu.user + cpu.system) / Math.max(1, times.length), 1);
    }
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------
// CLI

export interface Options {
  scenario: Scenario;
  url?: string;
  serverPid?: number;
  quick: boolean;
  label: string;
  out?: string;
  n?: number;
  levels?: number[];
  duration?: number;
  /** The runs' `durability` (absent: the server's default). */
  durability?: string;
  streams?: number;
  threads?: number;
  timeoutMs?: number;
  maxSeconds: number;
  /** throughput: write the thread ids of acknowledged runs there, one per line. */
  ackedFile?: string;
}

const RUNNERS: Record<Scenario, (ctx: Ctx, m: Record<string, number>) => Promise<void>> = {
  inproc,
  "wait-seq": waitSeq,
  "bg-join": bgJoin,
  stream,
  throughput,
  "many-streams": manyStreams,
  "threads-mem": threadsMem,
  "rest-mem": restMem,
};

export async function runScenario(opts: Options): Promise<ScenarioResult> {
  const client = new HttpClient(opts.url ?? "http://127.0.0.1:1", opts.timeoutMs ?? 120_000);
  const sampler = opts.serverPid ? new ProcSampler(opts.serverPid).start() : new NoSampler(0);
  const ctx: Ctx = {
    client,
    sampler,
    deadline: performance.now() + opts.maxSeconds * 1000,
    quick: opts.quick,
    errors: new ErrorLog(),
    notes: [],
    opts,
  };
  const metrics: Record<string, number> = {};
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const serverCpu0 = sampler.cpuMs();
  try {
    await RUNNERS[opts.scenario](ctx, metrics);
  } finally {
    sampler.stop();
    client.close();
  }
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  if (opts.serverPid) {
    metrics[`${prefixOf(opts.scenario)}.server_cpu_total_s`] = round((sampler.cpuMs() - serverCpu0) / 1000);
    metrics[`${prefixOf(opts.scenario)}.server_peak_rss_mb`] = mb(sampler.peakRssKb);
  }
  if (performance.now() >= ctx.deadline) ctx.notes.push(`stopped at --max-seconds ${opts.maxSeconds}`);
  return {
    scenario: opts.scenario,
    label: opts.label,
    metrics,
    errors: ctx.errors.count,
    errorSamples: ctx.errors.samples,
    wallSeconds: round(wall),
    clientCpuSeconds: round((cpu.user + cpu.system) / 1e6),
    notes: ctx.notes,
  };
}

const prefixOf = (s: Scenario) => s.replaceAll("-", "_");

const HELP = `Usage: node --import tsx bench/loadgen.ts --scenario <name> [options]

Scenarios: ${SCENARIOS.join(", ")}
  --url <base>            server URL (all but inproc)
  --server-pid <pid>      sample the server's RSS/CPU from /proc/<pid>
  --quick                 small counts and durations (smoke run)
  --n <count>             iterations (wait-seq, bg-join, stream, inproc)
  --levels 1,8,32,128     throughput concurrency levels
  --duration <s>          seconds per throughput level (10; quick 1.5)
  --durability <mode>     runs/wait's durability: sync | async | exit (default: the server's)
  --streams <count>       many-streams (1000; quick 50)
  --threads <count>       threads-mem (10000; quick 1000)
  --timeout <ms>          per-request timeout (120000; many-streams 300000)
  --max-seconds <s>       bound for the whole scenario (900)
  --acked-file <file>     throughput: thread ids of acknowledged runs, one per line
  --label <text>          stored with the result
  --out <file>            write the JSON result there (default: stdout)`;

export function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      scenario: { type: "string" },
      url: { type: "string" },
      "server-pid": { type: "string" },
      quick: { type: "boolean", default: false },
      label: { type: "string", default: "" },
      out: { type: "string" },
      n: { type: "string" },
      levels: { type: "string" },
      duration: { type: "string" },
      durability: { type: "string" },
      streams: { type: "string" },
      threads: { type: "string" },
      timeout: { type: "string" },
      "max-seconds": { type: "string" },
      "acked-file": { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  const scenario = values.scenario as Scenario;
  if (!SCENARIOS.includes(scenario)) throw new Error(`--scenario must be one of ${SCENARIOS.join(", ")}`);
  if (scenario !== "inproc" && !values.url) throw new Error("--url is required");
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  return {
    scenario,
    url: values.url,
    serverPid: num(values["server-pid"]),
    quick: values.quick ?? false,
    label: values.label ?? "",
    out: values.out,
    n: num(values.n),
    levels: values.levels?.split(",").map(Number),
    duration: num(values.duration),
    durability: values.durability,
    streams: num(values.streams),
    threads: num(values.threads),
    timeoutMs: num(values.timeout),
    maxSeconds: num(values["max-seconds"]) ?? 900,
    ackedFile: values["acked-file"],
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const opts = parseOptions(process.argv.slice(2));
  const result = await runScenario(opts);
  const text = `${JSON.stringify(result, null, 2)}\n`;
  if (opts.out) writeFileSync(opts.out, text);
  else process.stdout.write(text);
}
