import Database from "better-sqlite3";
import { randomUUID } from "node:crypto";
const stats = new Map<string, { n: number; ms: number }>();
const proto = (Database as any).prototype;
// wrap Statement methods through a prepared statement sample
const db0 = new Database(":memory:");
const Stmt = Object.getPrototypeOf(db0.prepare("select 1"));
for (const m of ["all", "run", "get"]) {
  const orig = Stmt[m];
  Stmt[m] = function (...a: any[]) {
    const t = performance.now();
    try { return orig.apply(this, a); } finally {
      const s = stats.get(this.source) ?? { n: 0, ms: 0 };
      s.n++; s.ms += performance.now() - t; stats.set(this.source, s);
    }
  };
}
const { openSqliteStorage } = await import("./src/storage/sql/index.ts");
const { makeAssistant, admission } = await import("./test/helpers/storage-records.ts");
const storage = await openSqliteStorage({ dataDir: "/tmp/t5" + Date.now(), synchronous: "normal" });
const a = await makeAssistant(storage);
const N = Number(process.argv[2] ?? 3000);
for (let i = 0; i < N; i++) {
  const tid = randomUUID();
  await storage.runs.admit("default", admission(a, tid));
  const c = await storage.runs.claimNext();
  await storage.runs.complete({ run_id: c.run!.run_id, attempt: c.run!.attempt, status: "success", values: { x: 1 }, interrupts: {}, hasNext: false });
  await storage.runs.claimNext();
}
const rows = [...stats.entries()].sort((x, y) => y[1].ms - x[1].ms).slice(0, 4);
for (const [sql, s] of rows) console.log(s.ms.toFixed(0).padStart(6), "ms", String(s.n).padStart(6), (s.ms / s.n * 1000).toFixed(0).padStart(6), "us", sql.replace(/\s+/g, " ").slice(0, 2000));
await storage.close();
