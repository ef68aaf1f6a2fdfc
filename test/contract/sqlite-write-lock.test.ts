/**
 * SQLite's write lock held by another connection (the API thread's and the executor threads' share one
 * file): a write waits for it without blocking its thread, goes through once it is free, and fails
 * with SQLITE_BUSY only after the busy timeout. Driven with a second, raw connection that holds the
 * lock as another thread's transaction would.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { CHECKPOINT_ORG_KEY } from "../../src/storage/ports.js";
import { openSqliteStorage } from "../../src/storage/sql/index.js";

/** The organization whose threads these checkpoints are. */
const ORG = "default";

const dataDir = mkdtempSync(path.join(tmpdir(), "hangar-write-lock-"));
after(() => rmSync(dataDir, { recursive: true, force: true }));

test("a write waits for the lock another connection holds, and its thread keeps working meanwhile", async () => {
  const storage = await openSqliteStorage({ dataDir, synchronous: "normal" });
  const other = new Database(path.join(dataDir, "hangar.sqlite"));
  try {
    other.exec("BEGIN IMMEDIATE");
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    const released = new Promise<void>((resolve) =>
      setTimeout(() => {
        other.exec("COMMIT");
        resolve();
      }, 60),
    );
    // A transaction (threads.create) and a statement outside one (the checkpointer's) both wait.
    const [thread] = await Promise.all([
      storage.threads.create("default", { thread_id: crypto.randomUUID(), metadata: { a: 1 } }, "raise"),
      storage.checkpointer.put(
        { configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "t-lock", checkpoint_ns: "" } },
        {
          v: 4,
          id: "1",
          ts: new Date().toISOString(),
          channel_values: {},
          channel_versions: {},
          versions_seen: {},
        },
        { source: "input", step: -1, parents: {} },
        {},
      ),
      released,
    ]);
    clearInterval(ticker);
    assert.deepEqual(thread.metadata, { a: 1 });
    assert.ok(
      (await storage.checkpointer.getTuple({
        configurable: { [CHECKPOINT_ORG_KEY]: ORG, thread_id: "t-lock" },
      })) !== undefined,
    );
    // SQLite's own busy handler would have blocked the event loop for the whole 60 ms.
    assert.ok(ticks >= 10, `the event loop turned ${ticks} times while the write waited`);
  } finally {
    other.close();
    await storage.close();
  }
});

test("a write refused the lock past the busy timeout fails with SQLITE_BUSY, and leaves nothing", async () => {
  const storage = await openSqliteStorage({ dataDir, synchronous: "normal" });
  const other = new Database(path.join(dataDir, "hangar.sqlite"));
  const threadId = crypto.randomUUID();
  try {
    other.exec("BEGIN IMMEDIATE");
    const started = Date.now();
    await assert.rejects(storage.threads.create("default", { thread_id: threadId, metadata: {} }, "raise"), {
      code: "SQLITE_BUSY",
    });
    assert.ok(Date.now() - started >= 5000, "it waited the busy timeout first");
    other.exec("COMMIT");
    assert.equal(await storage.threads.get("default", threadId), null);
  } finally {
    other.close();
    await storage.close();
  }
});
