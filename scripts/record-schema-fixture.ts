/**
 * Records a database made by another checkout's storage code, as a migration fixture
 * (test/contract/fixtures/): one of each record that hangs off a thread or an assistant, in two
 * organizations. Written for schema 0004 (before 0006_org_scoped_ids):
 *
 *   node --import tsx scripts/record-schema-fixture.ts <checkout> <sqlite data dir> [postgres uri schema]
 *
 * The checkout's own `src/storage/sql/index.ts` writes the records, so the fixture is what that
 * release's code left, not what this one thinks it left.
 */
import path from "node:path";

const [checkout, dataDir, uri, schema] = process.argv.slice(2);
if (!checkout || !dataDir)
  throw new Error("usage: record-schema-fixture.ts <checkout> <data dir> [uri schema]");
const storageModule = await import(path.resolve(checkout, "src/storage/sql/index.ts"));

export const FIXTURE = {
  orgA: "org-a",
  orgB: "org-b",
  assistant: "a6000000-0000-4000-8000-000000000001",
  thread: "t6000000-0000-4000-8000-000000000001",
  threadB: "t6000000-0000-4000-8000-000000000002",
  run: "r6000000-0000-4000-8000-000000000001",
  cron: "c6000000-0000-4000-8000-000000000001",
};

async function record(storage: any) {
  const f = FIXTURE;
  const assistant = await storage.assistants.create(
    f.orgA,
    {
      assistant_id: f.assistant,
      graph_id: "agent",
      name: "main",
      description: null,
      config: {},
      context: {},
      metadata: { v: 1 },
    },
    "raise",
  );
  await storage.assistants.update(f.orgA, f.assistant, { metadata: { v: 2 } });
  await storage.threads.create(f.orgB, { thread_id: f.threadB, metadata: { owner: "b" } }, "raise");
  await storage.runs.admit(f.orgA, {
    run_id: f.run,
    thread_id: f.thread,
    assistant,
    metadata: {},
    kwargs: {
      config: { configurable: { graph_id: "agent" } },
      context: {},
      stream_mode: ["values"],
      stream_subgraphs: false,
      stream_resumable: false,
      temporary: false,
    },
    multitask_strategy: "reject",
    if_not_exists: "create",
    not_before: new Date(),
    stateless: false,
  });
  await storage.runs.claimNext();
  const config = { configurable: { thread_id: f.thread, checkpoint_ns: "" }, metadata: { run_id: f.run } };
  const checkpoint = {
    v: 4,
    id: "cp-1",
    ts: new Date().toISOString(),
    channel_values: { n: 1 },
    channel_versions: { n: 1 },
    versions_seen: {},
  };
  await storage.checkpointer.put(config, checkpoint, { source: "loop", step: 0, parents: {} }, {});
  await storage.checkpointer.putWrites(
    { ...config, configurable: { ...config.configurable, checkpoint_id: "cp-1" } },
    [["n", 2]],
    "task-1",
  );
  await storage.runs.complete({
    run_id: f.run,
    status: "success",
    values: { n: 1 },
    interrupts: {},
    hasNext: false,
  });
  await storage.crons.create(f.orgA, {
    cron_id: f.cron,
    assistant_id: f.assistant,
    thread_id: f.thread,
    user_id: null,
    schedule: "0 * * * *",
    timezone: null,
    end_time: null,
    enabled: true,
    on_run_completed: null,
    payload: {},
    metadata: {},
    next_run_at: Date.now() + 3_600_000,
  });
}

const sqlite = await storageModule.openSqliteStorage({ dataDir, synchronous: "normal" });
await record(sqlite);
await sqlite.close();
if (uri && schema) {
  const pgStorage = await storageModule.openPostgresStorage({ uri, schema });
  await record(pgStorage);
  await pgStorage.close();
}
