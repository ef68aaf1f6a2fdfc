/**
 * SQLite's group commit (`SqlDatabase.write`, used by the checkpointer): the writes asked for in one turn
 * of the event loop commit together at its end; each promise resolves once its write is committed; a
 * write that fails fails alone; a write whose `unless` holds by the commit is left out.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import Database from "better-sqlite3";
import { openSqlite, type SqlDatabase } from "../../src/storage/sql/database.js";
import { CompiledQuery, sql } from "../../src/storage/sql/kysely.js";

const dataDir = mkdtempSync(path.join(tmpdir(), "hangar-group-commit-"));
let db: SqlDatabase;
let other: Database.Database;
before(async () => {
  db = await openSqlite({ dataDir, synchronous: "normal" });
  await db.execute(CompiledQuery.raw("CREATE TABLE grouped (k TEXT PRIMARY KEY)"));
  other = new Database(path.join(dataDir, "hangar.sqlite"), { readonly: true });
});
after(async () => {
  other.close();
  await db.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const insert = (k: string, unless?: () => boolean) =>
  db.write(CompiledQuery.raw("INSERT INTO grouped (k) VALUES (?)", [k]), unless);
const stored = (prefix: string) =>
  (other.prepare("SELECT k FROM grouped WHERE k LIKE ? ORDER BY k").all(`${prefix}%`) as { k: string }[]).map(
    (r) => r.k,
  );

test("the writes of one turn are committed together at its end, each resolved once committed", async () => {
  const keys = Array.from({ length: 20 }, (_, i) => `a${String(i).padStart(2, "0")}`);
  const writes = keys.map((k) => insert(k));
  assert.deepEqual(stored("a"), [], "nothing is written before the turn ends");
  const results = await Promise.all(writes);
  assert.deepEqual(stored("a"), keys);
  for (const r of results) assert.equal(Number(r.numAffectedRows), 1);
});

test("a write that fails fails alone: the others of its group are committed", async () => {
  await insert("b-taken");
  const outcomes = await Promise.allSettled([insert("b1"), insert("b-taken"), insert("b2")]);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ["fulfilled", "rejected", "fulfilled"],
  );
  assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /UNIQUE/);
  assert.deepEqual(stored("b"), ["b-taken", "b1", "b2"]);
});

test("a write whose `unless` holds by the commit is left out", async () => {
  let fenced = false;
  const left = insert("c-fenced", () => fenced);
  const kept = insert("c-kept");
  fenced = true; // after the write was asked for, before its turn ended (a rollback's fence)
  assert.deepEqual((await left).rows, []);
  await kept;
  assert.deepEqual(stored("c"), ["c-kept"]);
});

test("a statement asked for after grouped writes runs after their commit, as on one connection", async () => {
  const written = insert("e1");
  // Same turn: the read waits for the write before it, and a transaction too.
  const read = db.execute(CompiledQuery.raw("SELECT k FROM grouped WHERE k = 'e1'"));
  const inTx = db.transaction(function* () {
    return (yield CompiledQuery.raw("SELECT k FROM grouped WHERE k = 'e1'")).rows;
  });
  const viaKysely = sql`SELECT k FROM grouped WHERE k = 'e1'`.execute(db.db); // Kysely's own driver
  insert("e2"); // asked for after them: they need not wait for it
  assert.deepEqual((await read).rows, [{ k: "e1" }]);
  assert.deepEqual((await viaKysely).rows, [{ k: "e1" }]);
  assert.deepEqual(await inTx, [{ k: "e1" }]);
  await written;
  await db.flushWrites();
  assert.deepEqual(stored("e"), ["e1", "e2"]);
  // A query Kysely runs itself waits too.
  const e3 = insert("e3");
  assert.deepEqual((await sql`SELECT k FROM grouped WHERE k = 'e3'`.execute(db.db)).rows, [{ k: "e3" }]);
  await e3;
});

test("closing the database commits the writes still waiting for their turn's end", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "hangar-group-close-"));
  try {
    const closing = await openSqlite({ dataDir: dir, synchronous: "normal" });
    await closing.execute(CompiledQuery.raw("CREATE TABLE grouped (k TEXT PRIMARY KEY)"));
    const write = closing.write(CompiledQuery.raw("INSERT INTO grouped (k) VALUES ('d1')"));
    await closing.close();
    assert.equal(Number((await write).numAffectedRows), 1);
    const check = new Database(path.join(dir, "hangar.sqlite"), { readonly: true });
    assert.deepEqual(check.prepare("SELECT k FROM grouped").all(), [{ k: "d1" }]);
    check.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
