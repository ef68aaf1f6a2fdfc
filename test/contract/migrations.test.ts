/**
 * The schema's life across versions, on both engines: a database made by Hangar 0.1.0 (one migration
 * list per engine; the fixtures were written by that release's storage) opens with everything in it,
 * and a database migrated by a newer Hangar is refused, not used.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { gunzipSync } from "node:zlib";
import Database from "better-sqlite3";
import pg from "pg";
import { CHECKPOINT_ORG_KEY, type Storage } from "../../src/storage/ports.js";
import { openPostgresStorage, openSqliteStorage } from "../../src/storage/sql/index.js";
import { MIGRATION_TABLE, MIGRATIONS } from "../../src/storage/sql/migrations.js";
import { PG_URI } from "../helpers/adapters.js";

const FIXTURES = path.join(import.meta.dirname, "fixtures");
const tmp = mkdtempSync(path.join(tmpdir(), "hangar-migrations-"));
after(() => rmSync(tmp, { recursive: true, force: true }));
let dirs = 0;
const newDataDir = () => path.join(tmp, `db-${++dirs}`);

/** What the fixtures hold (scratch script of the 0.1.0 release: one of each record). */
async function assertLegacyRecords(storage: Storage) {
  const assistant = await storage.assistants.get("default", "a0000000-0000-4000-8000-000000000001");
  assert.equal(assistant?.name, "legacy");
  assert.deepEqual(assistant?.metadata, { team: "blue" });
  const thread = await storage.threads.get("default", "t0000000-0000-4000-8000-000000000001");
  assert.equal(thread?.metadata.owner, "ada");
  assert.equal(thread?.status, "busy");
  const run = await storage.runs.get(
    "default",
    thread?.thread_id ?? null,
    "r0000000-0000-4000-8000-000000000001",
  );
  assert.equal(run?.status, "pending");
  assert.deepEqual(await storage.auth.findActiveKey("f".repeat(64)), {
    id: (await storage.auth.listKeys())[0].id,
    org_id: "org-b",
  });
  const [hit] = await storage.store.search(
    "default",
    {
      namespacePrefix: ["legacy"],
      filter: [],
      limit: 5,
      offset: 0,
      queryVector: [1, 0, 0],
      refreshTtl: false,
    },
    Date.now(),
  );
  assert.deepEqual(hit?.value, { text: "kept" });
  assert.ok(hit && Math.abs((hit.score ?? 0) - 1) < 1e-6, `score ${hit?.score}`);
  // The adopted database works as any: the queue claims its run.
  const claim = await storage.runs.claimNext();
  assert.equal(claim.run?.run_id, "r0000000-0000-4000-8000-000000000001");
}

const FUTURE = "9999_from_a_newer_hangar";

/**
 * What the main-0004 fixtures hold: a database made by the storage code of schema 0004 (before
 * 0006_org_scoped_ids), recorded by scripts/record-schema-fixture.ts: org-a's assistant (two
 * versions), its thread with a completed run, a checkpoint and a pending write, a cron on that thread;
 * org-b's thread.
 */
const MAIN = {
  orgA: "org-a",
  orgB: "org-b",
  assistant: "a6000000-0000-4000-8000-000000000001",
  thread: "t6000000-0000-4000-8000-000000000001",
  threadB: "t6000000-0000-4000-8000-000000000002",
  run: "r6000000-0000-4000-8000-000000000001",
  cron: "c6000000-0000-4000-8000-000000000001",
};

/** The main-0004 records, carried by 0006 to their organizations and readable only there. */
async function assertOrgScopedRecords(storage: Storage) {
  const { orgA, orgB } = MAIN;
  const assistant = await storage.assistants.get(orgA, MAIN.assistant);
  assert.deepEqual([assistant?.version, assistant?.metadata], [2, { v: 2 }]);
  assert.deepEqual(
    (await storage.assistants.versions(orgA, MAIN.assistant, { limit: 10, offset: 0 })).map((v) => v.version),
    [2, 1],
  );
  assert.equal(await storage.assistants.get(orgB, MAIN.assistant), null);
  const thread = await storage.threads.get(orgA, MAIN.thread);
  assert.deepEqual([thread?.status, thread?.values], ["idle", { n: 1 }]);
  assert.equal((await storage.runs.get(orgA, MAIN.thread, MAIN.run))?.status, "success");
  assert.equal((await storage.crons.get(orgA, MAIN.cron))?.thread_id, MAIN.thread);
  assert.ok(await storage.threads.get(orgB, MAIN.threadB));
  const tuple = (org: string) =>
    storage.checkpointer.getTuple({ configurable: { [CHECKPOINT_ORG_KEY]: org, thread_id: MAIN.thread } });
  const carried = await tuple(orgA);
  assert.equal(carried?.checkpoint.id, "cp-1");
  assert.deepEqual(carried?.pendingWrites, [["task-1", "n", 2]]);
  assert.equal(await tuple(orgB), undefined);
  // The migrated keys at work: org-b makes a thread and an assistant of org-a's ids, both live apart.
  await storage.threads.create(orgB, { thread_id: MAIN.thread, metadata: { owner: "b" } }, "raise");
  await storage.assistants.create(
    orgB,
    { ...assistant!, assistant_id: MAIN.assistant, name: "b's", metadata: {} },
    "raise",
  );
  assert.equal((await storage.assistants.get(orgA, MAIN.assistant))?.name, "main");
  assert.equal((await storage.threads.delete(orgB, MAIN.thread)).deleted, true);
  assert.equal((await tuple(orgA))?.checkpoint.id, "cp-1", "org-b's delete left org-a's checkpoints");
  assert.equal((await storage.crons.get(orgA, MAIN.cron))?.thread_id, MAIN.thread);
}

describe("migrations: sqlite", () => {
  test("a database made by Hangar 0.1.0 opens with its records; the migrations are recorded once", async () => {
    const dataDir = newDataDir();
    mkdirSync(dataDir);
    writeFileSync(
      path.join(dataDir, "hangar.sqlite"),
      gunzipSync(readFileSync(path.join(FIXTURES, "legacy-0.1.0.sqlite.gz"))),
    );
    const storage = await openSqliteStorage({ dataDir, synchronous: "normal" });
    try {
      await assertLegacyRecords(storage);
    } finally {
      await storage.close();
    }
    const again = await openSqliteStorage({ dataDir, synchronous: "normal" });
    await again.close();
    const raw = new Database(path.join(dataDir, "hangar.sqlite"));
    try {
      const names = raw.prepare(`SELECT name FROM ${MIGRATION_TABLE} ORDER BY name`).pluck().all();
      assert.deepEqual(
        names,
        MIGRATIONS.map((m) => m.name),
      );
      const indexes = raw
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs'")
        .pluck()
        .all();
      assert.ok(indexes.includes("runs_one_running") && !indexes.includes("runs_running"), String(indexes));
    } finally {
      raw.close();
    }
  });

  test("a database made at schema 0004 is carried to organization-scoped ids (0006)", async () => {
    const dataDir = newDataDir();
    mkdirSync(dataDir);
    writeFileSync(
      path.join(dataDir, "hangar.sqlite"),
      gunzipSync(readFileSync(path.join(FIXTURES, "main-0004.sqlite.gz"))),
    );
    const storage = await openSqliteStorage({ dataDir, synchronous: "normal" });
    try {
      await assertOrgScopedRecords(storage);
    } finally {
      await storage.close();
    }
    const raw = new Database(path.join(dataDir, "hangar.sqlite"));
    try {
      assert.deepEqual(raw.pragma("foreign_key_check"), []);
      const leftovers = raw.prepare("SELECT name FROM sqlite_master WHERE name LIKE '%_0006'").pluck().all();
      assert.deepEqual(leftovers, []);
    } finally {
      raw.close();
    }
  });

  test("a database migrated by a newer Hangar is refused with a message, and left as it was", async () => {
    const dataDir = newDataDir();
    await (await openSqliteStorage({ dataDir, synchronous: "normal" })).close();
    const raw = new Database(path.join(dataDir, "hangar.sqlite"));
    raw
      .prepare(`INSERT INTO ${MIGRATION_TABLE} (name, applied_at) VALUES (?, ?)`)
      .run(FUTURE, new Date().toISOString());
    raw.close();
    await assert.rejects(openSqliteStorage({ dataDir, synchronous: "normal" }), (err: Error) => {
      assert.match(err.message, /newer than this Hangar/);
      assert.match(err.message, new RegExp(FUTURE));
      return true;
    });
  });

  test("a database of a development build between releases is refused with a message", async () => {
    const dataDir = newDataDir();
    mkdirSync(dataDir);
    const raw = new Database(path.join(dataDir, "hangar.sqlite"));
    raw.exec("CREATE TABLE assistants (assistant_id TEXT PRIMARY KEY)");
    raw.pragma("user_version = 5");
    raw.close();
    await assert.rejects(
      openSqliteStorage({ dataDir, synchronous: "normal" }),
      /development build of Hangar \(schema 5\)/,
    );
  });
});

describe("migrations: postgres", { skip: PG_URI ? undefined : "HANGAR_TEST_POSTGRES_URI is not set" }, () => {
  const uri = PG_URI as string;
  const schemas: string[] = [];
  const newSchema = () => {
    const schema = `hangar_test_${randomBytes(6).toString("hex")}`;
    schemas.push(schema);
    return schema;
  };
  const sql = async (text: string, params: unknown[] = []) => {
    const client = new pg.Client({ connectionString: uri });
    await client.connect();
    try {
      return (await client.query(text, params)).rows;
    } finally {
      await client.end();
    }
  };
  after(async () => {
    for (const schema of schemas) await sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  });

  test("a database made by Hangar 0.1.0 opens with its records; its old migration table goes", async () => {
    const schema = newSchema();
    const dump = readFileSync(path.join(FIXTURES, "legacy-0.1.0-postgres.sql"), "utf8");
    await sql(dump.replaceAll("hangar_legacy_fixture", schema));
    const storage = await openPostgresStorage({ uri, schema });
    try {
      await assertLegacyRecords(storage);
    } finally {
      await storage.close();
    }
    const names = await sql(`SELECT name FROM ${schema}.${MIGRATION_TABLE} ORDER BY name`);
    assert.deepEqual(
      names.map((r) => r.name),
      MIGRATIONS.map((m) => m.name),
    );
    const [old] = await sql("SELECT to_regclass($1) AS present", [`${schema}.hangar_migrations`]);
    assert.equal(old.present, null);
  });

  test("a database made at schema 0004 is carried to organization-scoped ids (0006)", async () => {
    const schema = newSchema();
    const dump = readFileSync(path.join(FIXTURES, "main-0004-postgres.sql"), "utf8");
    await sql(dump.replaceAll("hangar_main_fixture", schema));
    const storage = await openPostgresStorage({ uri, schema });
    try {
      await assertOrgScopedRecords(storage);
    } finally {
      await storage.close();
    }
  });

  test("a database migrated by a newer Hangar is refused with a message", async () => {
    const schema = newSchema();
    await (await openPostgresStorage({ uri, schema })).close();
    await sql(`INSERT INTO ${schema}.${MIGRATION_TABLE} (name, applied_at) VALUES ($1, $2)`, [
      FUTURE,
      new Date().toISOString(),
    ]);
    await assert.rejects(
      openPostgresStorage({ uri, schema }),
      new RegExp(`newer than this Hangar.*${FUTURE}`),
    );
  });

  test("processes opening one schema at once migrate it once", async () => {
    const uri = PG_URI as string;
    const schema = `hangar_test_${randomBytes(6).toString("hex")}`;
    const opened = await Promise.all([1, 2, 3].map(() => openPostgresStorage({ uri, schema })));
    const client = new pg.Client({ connectionString: uri });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT name FROM ${schema}.hangar_migration ORDER BY name`);
      assert.deepEqual(
        rows.map((r) => r.name),
        MIGRATIONS.map((m) => m.name),
      );
    } finally {
      for (const s of opened) await s.close();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    }
  });
});
