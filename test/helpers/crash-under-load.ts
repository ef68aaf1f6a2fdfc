/**
 * Crash test (test/e2e/crash-sqlite.test.ts, crash-postgres.test.ts): several concurrent SDK clients put load on a real `hangar dev` process (threads with
 * metadata, background runs, `runs.wait`, runs queued on one thread with `enqueue`, stateless runs),
 * while the process is killed with SIGKILL at random moments and restarted on the same data several
 * times. After the last restart, everything the server acknowledged must be there and settle:
 *
 * - every thread whose create returned exists, with its metadata, and is not left `busy`;
 * - every run whose create returned exists and reaches a final status (none stays pending/running),
 *   and so does every other run listed on those threads (creates cut short by a kill included);
 * - a run that succeeded holds its input and its echo exactly once in the thread's state (a retried
 *   run resumes from its checkpoint, its input is not applied twice);
 * - a stateless run's temporary thread is gone once the run ended (404), whatever the crashes; none
 *   stays pending/running; one with `on_completion: keep` keeps its thread.
 *
 * Runs on embedded SQLite, and on Postgres (a fresh database per test, short leases) when
 * HANGAR_TEST_POSTGRES_URI is set. The random choices (kill delays, operations) come from a seed that is
 * printed; HANGAR_CRASH_SEED=<seed> replays them (the interleaving with the server is still timing).
 * On a failure the servers' logs are written to a file named in the message.
 */
import assert from "node:assert/strict";
import { randomInt, randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import { freshDatabase, PG_SKIP } from "./postgres.js";
import { client, contents, type Hangar, http, human, startHangar } from "./server.js";

/** HANGAR_E2E_KEEP=1 (see the harness) also keeps the Postgres database and writes the server logs. */
const KEEP = process.env.HANGAR_E2E_KEEP === "1";
const FINAL = new Set(["success", "error", "interrupted"]);
const IN_FLIGHT = new Set(["pending", "running"]);

/** Kills after the first start; the load runs on CRASHES + 1 processes in all. */
const CRASHES = 5;
/** Concurrent SDK clients. */
const CLIENTS = 8;
/** How long the last process takes load before it stops and the checks begin. */
const LAST_PHASE_MS = 1_000;
/** Outstanding client calls (a `runs.wait` behind a queue) must return within this after the load stops. */
const DRAIN_MS = 15_000;
/** Every acknowledged run must be final within this after the load stopped. */
const RECOVERY_MS = 20_000;

/** mulberry32: a small seeded PRNG, so a failing run's choices can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface AckThread {
  thread_id: string;
  /** The metadata the create was acknowledged with; undefined for threads created by a run (`if_not_exists`). */
  metadata?: Record<string, unknown>;
}

interface AckRun {
  run_id: string;
  thread_id: string;
  /** The human message's text (unique per run). */
  text: string;
  graph: "agent" | "slow";
  stateless: boolean;
  /** Stateless runs with `on_completion: keep` keep their thread; the others delete it when they end. */
  keep: boolean;
}

/** Everything acknowledged, and everything that went wrong while the load ran. */
class Ledger {
  readonly threads = new Map<string, AckThread>();
  readonly runs = new Map<string, AckRun>();
  /** Threads runs may be created on (acknowledged, not temporary). */
  readonly targets: string[] = [];
  readonly counts: Record<string, number> = {};
  /** Server answers that should not happen, and failures while the server was up. */
  readonly unexpected: string[] = [];

  count(what: string, n = 1): void {
    this.counts[what] = (this.counts[what] ?? 0) + n;
  }

  thread(t: AckThread): void {
    this.threads.set(t.thread_id, t);
    this.targets.push(t.thread_id);
  }
}

/** The server the clients talk to; `down` while it is being killed and restarted. */
class Target {
  h!: Hangar;
  c!: Client;
  gen = 0;
  down = true;
  readonly logs: string[] = [];
  #up!: Promise<void>;
  #release!: () => void;

  constructor(
    private readonly start: (dataDir?: string) => Promise<Hangar>,
    private readonly onLog: (line: string) => void,
  ) {
    this.#arm();
  }

  #arm(): void {
    this.#up = new Promise((r) => {
      this.#release = r;
    });
  }

  /** Resolves once a server is up (at once if it is). */
  whenUp(): Promise<void> {
    return this.#up;
  }

  async boot(): Promise<void> {
    const started = Date.now();
    this.h = await this.start(this.h?.dataDir);
    this.c = client(this.h.url);
    this.gen++;
    this.down = false;
    this.onLog(`process ${this.gen} (pid ${this.h.process.pid}) up in ${Date.now() - started} ms`);
    this.#release();
  }

  async kill(): Promise<void> {
    this.down = true;
    this.#arm();
    await this.h.kill9();
    this.logs.push(`===== process ${this.gen} (pid ${this.h.process.pid}), killed =====\n${this.h.logs()}`);
  }

  async stop(): Promise<void> {
    if (!this.h || this.down) return;
    this.down = true;
    await this.h.stop().catch(() => this.h.kill9());
    this.logs.push(`===== process ${this.gen} (pid ${this.h.process.pid}), last =====\n${this.h.logs()}`);
  }
}

/** The client side of a failed call: an HTTP answer (status), or a connection that broke (no status). */
function describeError(error: unknown): { status?: number; message: string } {
  const e = error as { status?: number; message?: string; cause?: { code?: string } };
  const message = `${e.message ?? String(error)}${e.cause?.code ? ` (${e.cause.code})` : ""}`;
  return { status: typeof e.status === "number" ? e.status : undefined, message: message.slice(0, 300) };
}

/**
 * One client: random operations on the current server until `stopped()`. A call that fails because the
 * server it was sent to is being killed is "in flight" and not counted; any other failure is recorded.
 */
async function clientLoop(
  id: number,
  rand: () => number,
  target: Target,
  ledger: Ledger,
  tag: string,
  stopped: () => boolean,
): Promise<void> {
  let n = 0;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  /** A thread to run on: mostly recent ones (queues build up there), sometimes any. */
  const someThread = (): string | undefined => {
    const all = ledger.targets;
    if (!all.length) return undefined;
    return rand() < 0.7 ? all[Math.max(0, all.length - 1 - Math.floor(rand() * 8))] : pick(all);
  };
  const slowConfig = () => ({ configurable: { sleep_ms: 100 + Math.floor(rand() * 900) } });

  while (!stopped()) {
    if (target.down) {
      await target.whenUp();
      continue;
    }
    const gen = target.gen;
    const c = target.c;
    const text = `${tag}-c${id}-${n++}`;
    const roll = rand();
    let op = "";
    try {
      if (roll < 0.18 || !ledger.targets.length) {
        op = "threads.create";
        const metadata = { crash_suite: tag, client: id, seq: n, kind: pick(["a", "b", "c"]) };
        const t = await c.threads.create({ metadata });
        ledger.thread({ thread_id: t.thread_id, metadata: t.metadata as Record<string, unknown> });
        assert.deepEqual(t.metadata, metadata, "threads.create answered other metadata");
        ledger.count("threads acknowledged");
      } else if (roll < 0.5) {
        op = "runs.create";
        const thread_id = someThread()!;
        const graph = rand() < 0.5 ? "agent" : "slow";
        const run = await c.runs.create(thread_id, graph, {
          input: human(text),
          ...(graph === "slow" ? { config: slowConfig() } : {}),
          ...(rand() < 0.5 ? { multitaskStrategy: "enqueue" as const } : {}),
        });
        ledger.runs.set(run.run_id, {
          run_id: run.run_id,
          thread_id,
          text,
          graph,
          stateless: false,
          keep: true,
        });
        ledger.count("thread runs acknowledged");
      } else if (roll < 0.58) {
        op = "runs.create x3 enqueue";
        // Several runs queued on one thread at once.
        const thread_id = someThread()!;
        const texts = [0, 1, 2].map((k) => `${text}.${k}`);
        const graphs = texts.map(() => (rand() < 0.5 ? ("agent" as const) : ("slow" as const)));
        const configs = texts.map(() => slowConfig());
        const settled = await Promise.allSettled(
          texts.map((t, k) =>
            c.runs.create(thread_id, graphs[k]!, {
              input: human(t),
              multitaskStrategy: "enqueue",
              ...(graphs[k] === "slow" ? { config: configs[k] } : {}),
            }),
          ),
        );
        settled.forEach((s, k) => {
          if (s.status !== "fulfilled") return;
          const r = s.value;
          ledger.runs.set(r.run_id, {
            run_id: r.run_id,
            thread_id,
            text: texts[k]!,
            graph: graphs[k]!,
            stateless: false,
            keep: true,
          });
          ledger.count("thread runs acknowledged");
        });
        const failed = settled.find((s) => s.status === "rejected");
        if (failed) throw (failed as PromiseRejectedResult).reason;
      } else if (roll < 0.63) {
        op = "runs.create if_not_exists=create";
        const thread_id = randomUUID();
        const run = await c.runs.create(thread_id, "agent", { input: human(text), ifNotExists: "create" });
        ledger.thread({ thread_id });
        ledger.runs.set(run.run_id, {
          run_id: run.run_id,
          thread_id,
          text,
          graph: "agent",
          stateless: false,
          keep: true,
        });
        ledger.count("thread runs acknowledged");
      } else if (roll < 0.78) {
        op = "runs.wait";
        const thread_id = someThread()!;
        const out = await c.runs.wait(thread_id, "agent", {
          input: human(text),
          multitaskStrategy: "enqueue",
          raiseError: false,
        });
        ledger.count("thread waits answered");
        // The run's own result: later runs on the thread wait for it (enqueue).
        assert.deepEqual(
          contents(out).slice(-2),
          [text, `echo: ${text}`],
          `runs.wait on ${thread_id} answered ${JSON.stringify(out).slice(0, 300)}`,
        );
      } else if (roll < 0.9) {
        op = "stateless runs.create";
        const graph = rand() < 0.5 ? "agent" : "slow";
        const keep = rand() < 0.3;
        const run = await c.runs.create(null, graph, {
          input: human(text),
          ...(graph === "slow" ? { config: slowConfig() } : {}),
          // The API's `on_completion` is "delete" | "keep"; the SDK's type says otherwise.
          ...(keep ? ({ onCompletion: "keep" } as object) : {}),
        });
        ledger.runs.set(run.run_id, {
          run_id: run.run_id,
          thread_id: run.thread_id,
          text,
          graph,
          stateless: true,
          keep,
        });
        ledger.count("stateless runs acknowledged");
      } else {
        op = "stateless runs.wait";
        const out = await c.runs.wait(null, "agent", { input: human(text), raiseError: false });
        ledger.count("stateless waits answered");
        assert.deepEqual(
          contents(out),
          [text, `echo: ${text}`],
          `stateless runs.wait answered ${JSON.stringify(out).slice(0, 300)}`,
        );
      }
    } catch (error) {
      const e = describeError(error);
      if (error instanceof assert.AssertionError) {
        ledger.unexpected.push(`client ${id}, process ${gen}, ${op} (${text}): ${e.message}`);
      } else if (e.status === undefined && (target.down || target.gen !== gen)) {
        ledger.count("calls cut by a kill");
      } else {
        ledger.unexpected.push(`client ${id}, process ${gen}, ${op} (${text}): ${e.message}`);
      }
    }
    await sleep(10 + Math.floor(rand() * 70));
  }
}

interface Adapter {
  name: "sqlite" | "postgres";
  skip?: string;
  /** Sets up the storage for one test; returns the env of its servers and a cleanup. */
  prepare(): Promise<{ env: Record<string, string>; cleanup(note: (line: string) => void): Promise<void> }>;
}

const ADAPTERS: Adapter[] = [
  {
    name: "sqlite",
    async prepare() {
      return { env: {}, cleanup: async () => {} };
    },
  },
  {
    name: "postgres",
    skip: PG_SKIP,
    async prepare() {
      const db = await freshDatabase();
      return {
        // Without Redis, a dead process's runs are recovered by the next one's sweeper once their lease
        // expires (Postgres is shared storage: nothing is recovered at start just because it is `running`).
        env: { POSTGRES_URI: db.uri, HANGAR_LEASE_SECONDS: "2" },
        cleanup: async (note) => {
          // HANGAR_E2E_KEEP=1 keeps the database to look into, as it keeps SQLite data dirs.
          if (KEEP) note(`kept database ${db.uri}`);
          else await db.drop();
        },
      };
    },
  },
];

/**
 * The crash test on one engine. Each engine has its own test file (test/e2e/crash-*.test.ts), so each
 * run has the whole per-file time budget to itself.
 */
export function crashUnderLoad(engine: Adapter["name"]): void {
  const adapter = ADAPTERS.find((a) => a.name === engine)!;
  describe(`crash under load: kill -9 at random moments (${adapter.name})`, { skip: adapter.skip }, () => {
    test("everything acknowledged survives and settles", { timeout: 75_000 }, async (ctx) => {
      const seed = process.env.HANGAR_CRASH_SEED ? Number(process.env.HANGAR_CRASH_SEED) : randomInt(2 ** 31);
      const tag = `crash-${seed}`;
      const note = (line: string) => ctx.diagnostic(`[${adapter.name} seed=${seed}] ${line}`);
      note(`seed ${seed} (replay its choices with HANGAR_CRASH_SEED=${seed})`);
      const rand = prng(seed);
      const { env, cleanup } = await adapter.prepare();
      const target = new Target(
        (dataDir) => startHangar({ dataDir, env: { HANGAR_LEASE_SECONDS: "2", ...env } }),
        note,
      );
      const ledger = new Ledger();
      const started = Date.now();
      const logFile = join(tmpdir(), `hangar-crash-${adapter.name}-${seed}-${started}.log`);
      let passed = false;
      const phase = (name: string) => note(`${name} at ${((Date.now() - started) / 1000).toFixed(1)} s`);
      try {
        await target.boot();
        if (adapter.name === "sqlite") note(`data dir ${target.h.dataDir}`);
        let stopLoad = false;
        const loops = Array.from({ length: CLIENTS }, (_, i) =>
          clientLoop(i, prng(seed + 1 + i), target, ledger, tag, () => stopLoad),
        );

        // --- load, with kills at random moments ------------------------------------------------------
        for (let crash = 1; crash <= CRASHES; crash++) {
          // Mostly under load, sometimes right after the start (while the previous crash is recovered).
          const delay = rand() < 0.2 ? 30 + Math.floor(rand() * 300) : 400 + Math.floor(rand() * 2_100);
          await sleep(delay);
          phase(`kill ${crash} of ${CRASHES} (process ${target.gen}, after ${delay} ms)`);
          await target.kill();
          await target.boot();
        }
        await sleep(LAST_PHASE_MS);
        stopLoad = true;
        phase("load stopped");
        let drainTimer: NodeJS.Timeout | undefined;
        const drained = await Promise.race([
          Promise.all(loops).then(() => true),
          new Promise<false>((r) => {
            drainTimer = setTimeout(() => r(false), DRAIN_MS);
          }),
        ]).finally(() => clearTimeout(drainTimer));
        if (!drained)
          ledger.unexpected.push(`client calls still unanswered ${DRAIN_MS} ms after the load stopped`);
        phase("clients drained");
        note(
          `acknowledged: ${ledger.threads.size} threads, ${ledger.runs.size} runs; ${JSON.stringify(ledger.counts)}`,
        );

        const c = target.c;
        const violations: string[] = [...ledger.unexpected.map((u) => `during the load: ${u}`)];

        // --- recovery: every run on a kept thread settles, no thread stays busy ------------------------
        const unsettled = new Set(ledger.threads.keys());
        for (const r of ledger.runs.values()) if (r.stateless && r.keep) unsettled.add(r.thread_id);
        const deadline = Date.now() + RECOVERY_MS;
        while (unsettled.size && Date.now() < deadline) {
          const ids = [...unsettled];
          for (let i = 0; i < ids.length; i += 16) {
            await Promise.all(
              ids.slice(i, i + 16).map(async (thread_id) => {
                try {
                  const runs = await c.runs.list(thread_id, { limit: 1000 });
                  const thread = await c.threads.get(thread_id);
                  if (!runs.some((r) => IN_FLIGHT.has(r.status)) && thread.status !== "busy")
                    unsettled.delete(thread_id);
                } catch {
                  // checked below
                }
              }),
            );
          }
          if (unsettled.size) await sleep(250);
        }
        phase(`recovery polled (${unsettled.size} threads not settled)`);

        // --- the checks ---------------------------------------------------------------------------------
        const statuses: Record<string, number> = {};
        const tally = (s: string) => {
          statuses[s] = (statuses[s] ?? 0) + 1;
        };
        const ackOnThread = new Map<string, AckRun[]>();
        for (const r of ledger.runs.values()) {
          if (r.stateless && !r.keep) continue;
          ackOnThread.set(r.thread_id, [...(ackOnThread.get(r.thread_id) ?? []), r]);
        }
        const kept = new Map<string, AckThread | undefined>([...ledger.threads].map(([k, v]) => [k, v]));
        for (const r of ledger.runs.values()) if (r.stateless && r.keep) kept.set(r.thread_id, undefined);

        const ids = [...kept.keys()];
        for (let i = 0; i < ids.length; i += 16) {
          await Promise.all(
            ids.slice(i, i + 16).map(async (thread_id) => {
              const ack = kept.get(thread_id);
              const what = `thread ${thread_id}`;
              let thread: Awaited<ReturnType<Client["threads"]["get"]>>;
              try {
                thread = await c.threads.get(thread_id);
              } catch (error) {
                violations.push(`${what} (acknowledged) cannot be read: ${describeError(error).message}`);
                return;
              }
              for (const [key, value] of Object.entries(ack?.metadata ?? {})) {
                try {
                  assert.deepEqual(thread.metadata?.[key], value);
                } catch {
                  violations.push(
                    `${what}: metadata ${key} is ${JSON.stringify(thread.metadata?.[key])}, not ${JSON.stringify(value)}`,
                  );
                }
              }
              if (thread.status === "busy") violations.push(`${what} is still busy`);
              const listed = await c.runs.list(thread_id, { limit: 1000 }).catch(() => null);
              if (!listed) {
                violations.push(`${what}: its runs cannot be listed`);
                return;
              }
              for (const r of listed) {
                if (!FINAL.has(r.status)) violations.push(`${what}: run ${r.run_id} is ${r.status}`);
              }
              const values = (await c.threads.getState(thread_id).catch(() => null))?.values;
              const messages = contents(values);
              for (const r of ackOnThread.get(thread_id) ?? []) {
                const run = await c.runs.get(thread_id, r.run_id).catch((error) => describeError(error));
                if (!("run_id" in run)) {
                  violations.push(
                    `${what}: acknowledged run ${r.run_id} (${r.graph}) cannot be read: ${run.message}`,
                  );
                  continue;
                }
                tally(run.status);
                if (!FINAL.has(run.status)) {
                  violations.push(`${what}: acknowledged run ${r.run_id} (${r.graph}) is ${run.status}`);
                  continue;
                }
                // These graphs never fail by themselves: an error is recovery giving up (RunAbandoned),
                // which it does only after MAX_ATTEMPTS (3) starts.
                const attempt = (run as { attempt?: number }).attempt;
                if (run.status === "error" && attempt !== 3)
                  violations.push(
                    `${what}: run ${r.run_id} (${r.graph}) ended in error after ${attempt} attempts`,
                  );
                if (r.stateless) continue; // a kept stateless thread's state: its single run, not checked further
                const echo = `${r.graph === "slow" ? "slow echo" : "echo"}: ${r.text}`;
                const inputs = messages.filter((m) => m === r.text).length;
                const echoes = messages.filter((m) => m === echo).length;
                if (run.status === "success" ? inputs !== 1 || echoes !== 1 : inputs > 1 || echoes > 1) {
                  violations.push(
                    `${what}: run ${r.run_id} (${r.graph}, ${run.status}, attempt ${attempt}) has its input ${inputs}× and its echo ${echoes}× in the thread's state`,
                  );
                }
              }
            }),
          );
        }

        // Every thread created with metadata is found by it.
        const found = new Set(
          (await c.threads.search({ metadata: { crash_suite: tag }, limit: 1000 })).map((t) => t.thread_id),
        );
        for (const t of ledger.threads.values()) {
          if (t.metadata && !found.has(t.thread_id))
            violations.push(`thread ${t.thread_id} is not found by its metadata (threads.search)`);
        }

        // Stateless runs that delete their thread: gone (404), never left pending/running, and never an
        // ended run whose temporary thread stayed behind (ending a run deletes it in the same transaction).
        for (const r of ledger.runs.values()) {
          if (!r.stateless || r.keep) continue;
          const res = await http(target.h.url, "GET", `/threads/${r.thread_id}/runs/${r.run_id}`);
          if (res.status === 404) {
            tally("stateless: gone");
            continue;
          }
          if (res.status !== 200) {
            violations.push(
              `stateless run ${r.run_id}: GET answered ${res.status} ${res.text.slice(0, 200)}`,
            );
            continue;
          }
          tally(`stateless: ${res.body.status}`);
          violations.push(
            FINAL.has(res.body.status)
              ? `stateless run ${r.run_id} ended (${res.body.status}) but its temporary thread ${r.thread_id} is still there`
              : `stateless run ${r.run_id} is ${res.body.status}`,
          );
        }
        note(`final statuses of acknowledged runs: ${JSON.stringify(statuses)}`);

        // The server still works normally.
        const t = await c.threads.create();
        const out = await c.runs.wait(t.thread_id, "agent", { input: human("after the crashes") });
        assert.deepEqual(contents(out), ["after the crashes", "echo: after the crashes"]);

        if (violations.length) {
          assert.fail(
            `${violations.length} violations (seed ${seed}; server logs in ${logFile}):\n  ${violations.slice(0, 40).join("\n  ")}`,
          );
        }
        assert.ok(ledger.runs.size > 0 && ledger.threads.size > 0, "the load acknowledged nothing");
        phase("done");
        passed = true;
      } finally {
        await target.stop();
        if (!passed || KEEP) {
          await writeFile(logFile, target.logs.join("\n"));
          note(`server logs in ${logFile}`);
        }
        await cleanup(note);
      }
    });
  });
}
