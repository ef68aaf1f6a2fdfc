/**
 * How storage transactions execute on SQLite, measured three ways on one admission-shaped transaction
 * (read the thread, insert a run, mark the thread busy), in one process, same sitting:
 *
 * - `hangar`: what src/storage/sql does — `database.transaction` with a generator body: Kysely builds
 *   and compiles each query (not compiled once here, as the hot ones are), the body yields it, and the
 *   whole IMMEDIATE transaction runs in one synchronous call (database.ts).
 * - `kysely-sync`: the same by hand: compiled SQL run on better-sqlite3 in a synchronous IMMEDIATE
 *   transaction (the execution model issue 18 asked to measure).
 * - `raw-sync`: hand-written SQL on prepared statements (what the per-engine adapters did).
 *
 *   node --import tsx bench/sqlite-execution.ts [--n 20000]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import type { Compilable } from "kysely";
import { changed, type Executor, first, openSqlite } from "../src/storage/sql/database.js";

const { values } = parseArgs({ options: { n: { type: "string", default: "20000" } } });
const N = Number(values.n);
const dir = mkdtempSync(path.join(tmpdir(), "hangar-sqlite-exec-"));
const database = await openSqlite({ dataDir: dir, synchronous: "normal" });
const db = database.db;
const now = new Date().toISOString();
await db
  .insertInto("threads")
  .values({
    thread_id: "t",
    org_id: "default",
    status: "idle",
    metadata: "{}",
    config: "{}",
    values: null,
    interrupts: "{}",
    error: null,
    created_at: now,
    updated_at: now,
    state_updated_at: now,
  })
  .execute();

let seq = 0;
const queries = (ex: Executor) => ({
  thread: ex.selectFrom("threads").selectAll().where("thread_id", "=", "t").where("org_id", "=", "default"),
  insert: ex.insertInto("runs").values({
    run_id: `r${++seq}`,
    thread_id: "t",
    org_id: "default",
    assistant_id: "a",
    status: "success",
    metadata: "{}",
    kwargs: "{}",
    multitask_strategy: "enqueue",
    not_before: Date.now(),
    created_at: now,
    updated_at: now,
  }),
  busy: ex.updateTable("threads").set({ status: "busy", updated_at: now }).where("thread_id", "=", "t"),
});

// A second handle on the file for the synchronous ways (the Kysely one keeps its own).
const raw = new Database(path.join(dir, "hangar.sqlite"));
raw.pragma("busy_timeout = 5000");
raw.pragma("synchronous = NORMAL"); // as database.ts sets it
const cache = new Map<string, Database.Statement>();
const run = (q: Compilable) => {
  const { sql, parameters } = q.compile();
  let stmt = cache.get(sql);
  if (!stmt) {
    stmt = raw.prepare(sql);
    cache.set(sql, stmt);
  }
  return stmt.reader ? stmt.all(parameters as unknown[]) : stmt.run(parameters as unknown[]);
};
const kyselySync = raw.transaction(() => {
  const q = queries(db);
  run(q.thread);
  run(q.insert);
  run(q.busy);
});
const rawThread = raw.prepare("SELECT * FROM threads WHERE thread_id = ? AND org_id = ?");
const rawInsert = raw.prepare(
  `INSERT INTO runs (run_id, thread_id, org_id, assistant_id, status, metadata, kwargs, multitask_strategy,
     not_before, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
);
const rawBusy = raw.prepare("UPDATE threads SET status = ?, updated_at = ? WHERE thread_id = ?");
const rawSync = raw.transaction(() => {
  rawThread.get("t", "default");
  rawInsert.run(`r${++seq}`, "t", "default", "a", "success", "{}", "{}", "enqueue", Date.now(), now, now);
  rawBusy.run("busy", now, "t");
});

const ways: Record<string, () => Promise<unknown> | unknown> = {
  hangar: () =>
    database.transaction(function* (tx) {
      const q = queries(tx);
      yield* first(q.thread);
      yield* changed(q.insert);
      yield* changed(q.busy);
    }),
  "kysely-sync": () => kyselySync.immediate(),
  "raw-sync": () => rawSync.immediate(),
};

const results: Record<string, number> = {};
for (const round of [1, 2]) {
  for (const [name, fn] of Object.entries(ways)) {
    for (let i = 0; i < 500; i++) await fn(); // warm-up
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await fn();
    const us = ((performance.now() - t0) * 1000) / N;
    if (round === 2) results[name] = us;
  }
}
raw.close();
await database.close();
rmSync(dir, { recursive: true, force: true });
for (const [name, us] of Object.entries(results)) {
  console.log(`${name.padEnd(13)} ${us.toFixed(1).padStart(6)} µs per transaction (3 statements), N=${N}`);
}
