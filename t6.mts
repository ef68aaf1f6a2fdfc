import Database from "better-sqlite3";
const { openSqlite } = await import("./src/storage/sql/database.ts");
const dir = "/tmp/t6" + Date.now();
const d = await openSqlite({ dataDir: dir, synchronous: "normal" });
await d.close();
const db = new Database(dir + "/hangar.sqlite");
db.pragma("synchronous = NORMAL");
const now = new Date().toISOString();
db.prepare(`INSERT INTO threads (thread_id, org_id, status, metadata, config, interrupts, created_at, updated_at, state_updated_at) VALUES ('t','o','idle','{}','{}','{}',?,?,?)`).run(now, now, now);
const ins = db.prepare(`INSERT INTO runs (run_id, thread_id, org_id, assistant_id, status, metadata, kwargs, multitask_strategy, attempt, not_before, created_at, updated_at) VALUES (?, 't', 'o', 'a', 'running', '{}', '{}', 'enqueue', 1, 0, ?, ?)`);
const variants: Record<string, [string, (id: string) => unknown[]]> = {
  legacy: [`UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?`, (id) => ["success", now, id]],
  newform: [`update "runs" set "status" = ?, "updated_at" = ? where "run_id" = ? and "status" = 'running' and "attempt" = ? returning *`, (id) => ["success", now, id, 1]],
  noReturning: [`update "runs" set "status" = ?, "updated_at" = ? where "run_id" = ? and "status" = 'running' and "attempt" = ?`, (id) => ["success", now, id, 1]],
  noStatusWhere: [`update "runs" set "status" = ?, "updated_at" = ? where "run_id" = ? and "attempt" = ? returning *`, (id) => ["success", now, id, 1]],
};
let k = 0;
const begin = db.prepare("BEGIN IMMEDIATE"), commit = db.prepare("COMMIT");
for (const round of [1, 2]) for (const [name, [sql, params]] of Object.entries(variants)) {
  const st = db.prepare(sql);
  let total = 0;
  for (let i = 0; i < 2000; i++) {
    const id = `r${++k}`;
    ins.run(id, now, now);
    begin.run();
    const t = performance.now();
    st.reader ? st.all(...params(id)) : st.run(...params(id));
    total += performance.now() - t;
    commit.run();
  }
  if (round === 2) console.log(name.padEnd(14), ((total / 2000) * 1000).toFixed(1), "us");
}
