/**
 * The storage port contract's frame (test/contract/storage-*.test.ts, one file per repository or
 * concern): each file's tests run against every adapter (adapters.ts), once on SQLite and once on
 * Postgres (when `HANGAR_TEST_POSTGRES_URI` is set; see there). And what more than one file uses.
 */
import { randomUUID } from "node:crypto";
import { describe } from "node:test";
import { type Checkpoint, emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { HangarError } from "../../src/errors.js";
import { CHECKPOINT_ORG_KEY, type Storage } from "../../src/storage/ports.js";
import { ADAPTERS, type Adapter, type Fixture } from "./adapters.js";
import { ORG } from "./storage-records.js";

/** A test body run against a fresh database of the adapter. */
export type WithStorage = (fn: (storage: Storage, fx: Fixture) => Promise<void>) => () => Promise<void>;

/** Declares the contract's tests (`body`) once per adapter, under `storage contract: <adapter>`. */
export function storageContract(body: (withStorage: WithStorage, adapter: Adapter) => void): void {
  for (const adapter of ADAPTERS) {
    describe(`storage contract: ${adapter.name}`, { skip: adapter.skip }, () => {
      /** Runs `fn` against a fresh database of this adapter. */
      const withStorage: WithStorage = (fn) => async () => {
        const fx = await adapter.open();
        try {
          await fn(fx.storage, fx);
        } finally {
          await fx.close();
        }
      };
      body(withStorage, adapter);
    });
  }
}

export function checkpoint(id: string, values: Record<string, unknown> = {}): Checkpoint {
  const cp = emptyCheckpoint();
  cp.id = id;
  cp.channel_values = values;
  return cp;
}

export async function putCheckpoint(
  storage: Storage,
  threadId: string,
  runId: string,
  id: string,
  org: string = ORG,
) {
  await storage.checkpointer.put(
    {
      configurable: { [CHECKPOINT_ORG_KEY]: org, thread_id: threadId, checkpoint_ns: "" },
      metadata: { run_id: runId },
    },
    checkpoint(id, { n: id }),
    { source: "loop", step: 0, parents: {} },
    {},
  );
}

export async function checkpointIds(
  storage: Storage,
  threadId: string,
  org: string = ORG,
): Promise<string[]> {
  const ids: string[] = [];
  for await (const t of storage.checkpointer.list({
    configurable: { [CHECKPOINT_ORG_KEY]: org, thread_id: threadId },
  }))
    ids.push(t.config.configurable?.checkpoint_id as string);
  return ids;
}

/** A cron to create: every minute, due at 1,000, no thread; `over` changes any field. */
export const cronInput = (assistantId: string, over: Record<string, unknown> = {}) => ({
  cron_id: randomUUID(),
  assistant_id: assistantId,
  thread_id: null,
  user_id: null,
  schedule: "* * * * *",
  timezone: null,
  end_time: null,
  enabled: true,
  on_run_completed: null,
  payload: { input: { x: 1 } },
  metadata: { k: "v" },
  next_run_at: 1_000,
  ...over,
});

export const isKind = (kind: string) => (err: unknown) => err instanceof HangarError && err.kind === kind;

export async function statuses(storage: Storage, threadId: string): Promise<string[]> {
  const runs = await storage.runs.list(ORG, threadId, { limit: 100, offset: 0 });
  return runs.map((r) => r.status).sort();
}
