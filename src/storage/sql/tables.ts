/**
 * The tables as the repositories see them, for Kysely's typing (migrations.ts creates them); a table that
 * stores a port's record as it is derives its type from the record. Values travel alike on both engines:
 * - JSON columns (`Json`) are read and written as JSON text: repositories `JSON.stringify` what they
 *   write and `JSON.parse` what they read (Postgres' `jsonb` comes back as text, not parsed by `pg`).
 * - Timestamps are ISO-8601 text (millisecond precision, `Z`); epoch-ms columns are numbers (`int8`
 *   parsed as a JavaScript number).
 * - Booleans (`Bool`) are written with `dialect.bool()` and read with `Boolean()`: SQLite stores 0/1,
 *   Postgres `boolean`.
 * - Blobs are Buffers; a stored vector is whatever `dialect.vector()` made (float32 blob / `real[]`).
 */
import type { Generated } from "kysely";
import type { Cron } from "../cron-ports.js";
import type { ApiKeyRecord, Assistant, Run, StopAction, Thread, ThreadTtl } from "../ports.js";
import type { BoxRecord, PoolRecord, TemplateRecord, VolumeRecord } from "../sandbox-ports.js";

/** JSON text (see above). */
export type Json = string;
export type Bool = number | boolean;
/** The `seq` key of the tables listed in creation order. */
type Seq = { seq: Generated<number> };

type AssistantJson = "config" | "context" | "metadata";
export type AssistantsTable = Omit<Assistant, AssistantJson> &
  Record<AssistantJson, Json> & { org_id: string };

export type AssistantVersionsTable = Omit<AssistantsTable, "org_id" | "updated_at">;

type ThreadJson = "metadata" | "config" | "interrupts";
export type ThreadsTable = Omit<Thread, ThreadJson | "values" | "error"> &
  Record<ThreadJson, Json> & {
    org_id: string;
    values: Json | null;
    error: Json | null;
    temporary: Generated<Bool>;
    ttl_minutes: number | null;
    ttl_strategy: ThreadTtl["strategy"] | null;
    ttl_swept_at: string | null;
  };

type RunJson = "metadata" | "kwargs";
export type RunsTable = Omit<Run, RunJson | "attempt"> &
  Record<RunJson, Json> &
  Seq & {
    org_id: string;
    attempt: Generated<number>;
    not_before: number;
    worker_id: string | null;
    lease_expires_at: number | null;
    stop_requested: StopAction | null;
  };

export interface CheckpointsTable {
  thread_id: string;
  checkpoint_ns: Generated<string>;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  run_id: string | null;
  type: string | null;
  checkpoint: Buffer;
  metadata: Buffer;
}

export interface CheckpointWritesTable {
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
}

export interface OrgUsageBillingTable {
  org_id: string;
  sandbox_storage_quota_bytes: number;
  updated_at: string;
}

export type SandboxVolumesTable = VolumeRecord & Seq;

export type SandboxTemplatesTable = Omit<TemplateRecord, "resources" | "volume_mounts"> &
  Seq & { cpu: string; memory: string; storage: string | null };

export interface SandboxTemplateMountsTable {
  template_id: string;
  position: number;
  volume_id: string;
  mount_path: string;
}

export type ApiKeysTable = ApiKeyRecord & { key_hash: string };

export type CronsTable = Omit<Cron, "enabled" | "payload" | "metadata" | "next_run_date"> & {
  org_id: string;
  enabled: Bool;
  payload: Json;
  metadata: Json;
  next_run_at: number | null;
};

export interface StoreItemsTable {
  org_id: string;
  namespace: string;
  key: string;
  value: Json;
  created_at: string;
  updated_at: string;
  ttl_minutes: number | null;
  expires_at: number | null;
}

export type StoreVectorsTable = Pick<StoreItemsTable, "org_id" | "namespace" | "key"> & {
  field: string;
  embedding: unknown;
};

export type SandboxPoolsTable = Omit<PoolRecord, "template_name"> & Seq;

export type SandboxBoxesTable = Omit<BoxRecord, "template_name"> & Seq;

export interface Tables {
  assistants: AssistantsTable;
  assistant_versions: AssistantVersionsTable;
  threads: ThreadsTable;
  runs: RunsTable;
  checkpoints: CheckpointsTable;
  checkpoint_writes: CheckpointWritesTable;
  org_usage_billing: OrgUsageBillingTable;
  sandbox_volumes: SandboxVolumesTable;
  sandbox_templates: SandboxTemplatesTable;
  sandbox_template_mounts: SandboxTemplateMountsTable;
  api_keys: ApiKeysTable;
  crons: CronsTable;
  store_items: StoreItemsTable;
  store_vectors: StoreVectorsTable;
  sandbox_pools: SandboxPoolsTable;
  sandbox_boxes: SandboxBoxesTable;
}
