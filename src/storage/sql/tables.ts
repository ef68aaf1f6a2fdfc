/**
 * The tables as the repositories see them, for Kysely's typing (migrations.ts creates them); a table that
 * stores a port's record as it is derives its type from the record. Values travel alike on both engines:
 * - JSON columns (`Json`) are read and written as JSON text: repositories `JSON.stringify` what they
 *   write and parse what they read (`recordOf`; Postgres' `jsonb` comes back as text, not parsed by `pg`).
 * - Timestamps are ISO-8601 text (millisecond precision, `Z`); epoch-ms columns are numbers (`int8`
 *   parsed as a JavaScript number).
 * - Booleans (`Bool`) are written with `dialect.bool()` and read with `Boolean()`: SQLite stores 0/1,
 *   Postgres `boolean`.
 * - Blobs are Buffers; a stored vector is whatever `dialect.vector()` made (float32 blob / `real[]`).
 */
import type { Generated, Selectable } from "kysely";
import type { Cron } from "../cron-ports.js";
import type { ApiKeyRecord, Assistant, Run, StopAction, Thread, ThreadTtl } from "../ports.js";
import type { BoxRecord, PoolRecord, TemplateRecord, VolumeRecord } from "../sandbox-ports.js";

/** JSON text (see above). */
type Json = string;
type Bool = number | boolean;
/** The `seq` key of the tables listed in creation order. */
type Seq = { seq: Generated<number> };

/** The JSON columns of the tables that store a port's record. */
export const ASSISTANT_JSON = ["config", "context", "metadata"] as const;
export const THREAD_JSON = ["metadata", "config", "interrupts"] as const;
export const RUN_JSON = ["metadata", "kwargs"] as const;
export const CRON_JSON = ["payload", "metadata"] as const;

/** A port's record `R` as its table stores it: the JSON fields `J` as text. */
type Stored<R, J extends readonly (keyof R)[]> = Omit<R, J[number]> & Record<J[number], Json>;

export interface Tables {
  assistants: Stored<Assistant, typeof ASSISTANT_JSON> & { org_id: string };
  assistant_versions: Omit<Tables["assistants"], "updated_at">;
  threads: Omit<Stored<Thread, typeof THREAD_JSON>, "values" | "error"> & {
    org_id: string;
    values: Json | null;
    error: Json | null;
    temporary: Generated<Bool>;
    ttl_minutes: number | null;
    ttl_strategy: ThreadTtl["strategy"] | null;
    ttl_swept_at: string | null;
  };
  runs: Omit<Stored<Run, typeof RUN_JSON>, "attempt"> &
    Seq & {
      org_id: string;
      attempt: Generated<number>;
      not_before: number;
      worker_id: string | null;
      lease_expires_at: number | null;
      stop_requested: StopAction | null;
      /** A failed run's `RunError` (JSON), null otherwise. */
      error: Json | null;
    };
  checkpoints: {
    /** The thread's organization: a thread id is unique within its organization only. */
    org_id: string;
    thread_id: string;
    checkpoint_ns: Generated<string>;
    checkpoint_id: string;
    parent_checkpoint_id: string | null;
    run_id: string | null;
    type: string | null;
    checkpoint: Buffer;
    metadata: Buffer;
  };
  checkpoint_writes: {
    org_id: string;
    thread_id: string;
    checkpoint_ns: Generated<string>;
    checkpoint_id: string;
    task_id: string;
    idx: number;
    channel: string;
    type: string | null;
    value: Buffer | null;
    task_path: Generated<string>;
    run_id: string | null;
  };
  org_usage_billing: { org_id: string; sandbox_storage_quota_bytes: number; updated_at: string };
  sandbox_volumes: Stored<VolumeRecord, ["metadata"]> & Seq;
  sandbox_templates: Omit<Stored<TemplateRecord, ["metadata"]>, "resources" | "volume_mounts"> &
    Seq & { cpu: string; memory: string; storage: string | null };
  sandbox_template_mounts: { template_id: string; position: number; volume_id: string; mount_path: string };
  api_keys: ApiKeyRecord & { key_hash: string };
  crons: Omit<Stored<Cron, typeof CRON_JSON>, "enabled" | "next_run_date"> & {
    org_id: string;
    enabled: Bool;
    next_run_at: number | null;
  };
  store_items: {
    org_id: string;
    namespace: string;
    key: string;
    value: Json;
    created_at: string;
    updated_at: string;
    ttl_minutes: number | null;
    expires_at: number | null;
  };
  store_vectors: { org_id: string; namespace: string; key: string; field: string; embedding: unknown };
  sandbox_pools: Omit<Stored<PoolRecord, ["metadata"]>, "template_name"> & Seq;
  sandbox_boxes: Omit<Stored<BoxRecord, ["metadata"]>, "template_name"> & Seq;
  /** Protocol-v2 thread events (thread-events.ts): per thread, the last seq given and what is kept. */
  thread_event_heads: {
    org_id: string;
    thread_id: string;
    last_seq: number;
    first_seq: number;
    bytes: number;
  };
  /** `data`: the event's JSON text, as served (not parsed by either engine). */
  thread_events: { org_id: string; thread_id: string; seq: number; bytes: number; data: string };
}

/** A row of the table, as read. */
export type Row<T extends keyof Tables> = Selectable<Tables[T]>;

/**
 * The port's record in a row of its table: without the columns only the table has (`hidden`, and `seq`,
 * which Postgres also adds to tables without a key of their own, migrations.ts), its JSON columns parsed.
 */
export function recordOf<R extends object, H extends keyof R, J extends keyof R>(
  row: R,
  hidden: readonly H[],
  json: readonly J[],
): Omit<R, H | J | "seq"> & Record<J, any> {
  const record: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(row)) {
    if (column === "seq" || hidden.includes(column as H)) continue;
    record[column] = json.includes(column as J) ? JSON.parse(value) : value;
  }
  return record as Omit<R, H | J | "seq"> & Record<J, any>;
}
