/**
 * The tables as the repositories see them, for Kysely's typing; migrations.ts creates them.
 *
 * How values travel, the same on both engines (database.ts sets the drivers up so):
 * - JSON columns (`Json`) are read and written as JSON text: repositories `JSON.stringify` what they
 *   write and `JSON.parse` what they read (Postgres' `jsonb` comes back as text, not parsed by `pg`).
 * - Timestamps are ISO-8601 text (millisecond precision, `Z`); epoch-ms columns are numbers (`int8`
 *   parsed as a JavaScript number).
 * - Booleans (`Bool`) are written with `dialect.bool()` and read with `Boolean()`: SQLite stores 0/1,
 *   Postgres `boolean`.
 * - Blobs are Buffers; a stored vector is whatever `dialect.vector()` made (float32 blob / `real[]`).
 */
import type { Generated } from "kysely";

/** JSON text (see above). */
export type Json = string;
export type Bool = number | boolean;

export interface AssistantsTable {
  assistant_id: string;
  /** '' = system assistant, visible to every organization. */
  org_id: string;
  graph_id: string;
  version: number;
  name: string;
  description: string | null;
  config: Json;
  context: Json;
  metadata: Json;
  created_at: string;
  updated_at: string;
}

export interface AssistantVersionsTable {
  assistant_id: string;
  version: number;
  graph_id: string;
  name: string;
  description: string | null;
  config: Json;
  context: Json;
  metadata: Json;
  created_at: string;
}

export interface ThreadsTable {
  thread_id: string;
  org_id: string;
  status: string;
  metadata: Json;
  config: Json;
  values: Json | null;
  interrupts: Json;
  error: Json | null;
  temporary: Generated<Bool>;
  created_at: string;
  updated_at: string;
  state_updated_at: string;
  ttl_minutes: number | null;
  ttl_strategy: string | null;
  /** The updated_at a keep_latest sweep last pruned at (so it prunes once per update). */
  ttl_swept_at: string | null;
}

export interface RunsTable {
  /** Queue order among runs due at the same time. */
  seq: Generated<number>;
  run_id: string;
  thread_id: string;
  org_id: string;
  assistant_id: string;
  status: string;
  metadata: Json;
  kwargs: Json;
  multitask_strategy: string;
  attempt: Generated<number>;
  /** Epoch ms; after_seconds makes it later than created_at. */
  not_before: number;
  created_at: string;
  updated_at: string;
  worker_id: string | null;
  /** Epoch ms. */
  lease_expires_at: number | null;
  stop_requested: string | null;
}

export interface CheckpointsTable {
  thread_id: string;
  checkpoint_ns: Generated<string>;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  /** Copied from the stored metadata, so one run's checkpoints can be deleted. */
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
  /** `putWrites` receives it; pending writes are returned in `(task_path, task_id, idx)` order. */
  task_path: Generated<string>;
  /** The run that wrote the row (rolling a resumed run back removes its writes on the prior checkpoint). */
  run_id: string | null;
}

export interface OrgUsageBillingTable {
  org_id: string;
  sandbox_storage_quota_bytes: number;
  updated_at: string;
}

export interface SandboxVolumesTable {
  /** Creation order = list order. */
  seq: Generated<number>;
  id: string;
  org_id: string;
  name: string;
  /** As the client wrote it. */
  size: string;
  /** What comparisons and the quota use. */
  size_bytes: number;
  storage_class: string;
  created_at: string;
  updated_at: string;
}

export interface SandboxTemplatesTable {
  seq: Generated<number>;
  id: string;
  org_id: string;
  name: string;
  image: string;
  cpu: string;
  memory: string;
  storage: string | null;
  created_at: string;
  updated_at: string;
}

export interface SandboxTemplateMountsTable {
  template_id: string;
  position: number;
  volume_id: string;
  mount_path: string;
}

export interface ApiKeysTable {
  id: string;
  org_id: string;
  /** Only a SHA-256 hash of each key is stored. */
  key_hash: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

export interface CronsTable {
  cron_id: string;
  org_id: string;
  assistant_id: string;
  /** NULL: a stateless cron. */
  thread_id: string | null;
  user_id: string | null;
  schedule: string;
  timezone: string | null;
  end_time: string | null;
  enabled: Bool;
  on_run_completed: string | null;
  payload: Json;
  metadata: Json;
  /** Epoch ms of the next firing; NULL = none (disabled, ended). */
  next_run_at: number | null;
  created_at: string;
  updated_at: string;
}

export interface StoreItemsTable {
  org_id: string;
  /** Labels joined with '.', which no label contains. */
  namespace: string;
  key: string;
  value: Json;
  created_at: string;
  updated_at: string;
  /** NULL = never expires. */
  ttl_minutes: number | null;
  /** Epoch ms; reads treat the item as gone from then on. */
  expires_at: number | null;
}

export interface StoreVectorsTable {
  org_id: string;
  namespace: string;
  key: string;
  /** Which text of the item: a field path, '.N' for the Nth of several. */
  field: string;
  /** `dialect.vector(...)`: float32 little-endian blob on SQLite, `real[]` on Postgres. */
  embedding: unknown;
}

export interface SandboxPoolsTable {
  seq: Generated<number>;
  id: string;
  org_id: string;
  name: string;
  template_id: string;
  replicas: number;
  created_at: string;
  updated_at: string;
}

export interface SandboxBoxesTable {
  /** Creation order = list order. */
  seq: Generated<number>;
  id: string;
  org_id: string;
  name: string;
  template_id: string;
  /** Set while a warm pool member. */
  pool_id: string | null;
  status: string;
  status_message: string | null;
  ttl_seconds: number;
  idle_ttl_seconds: number;
  expires_at: string | null;
  last_active_at: string;
  created_at: string;
  updated_at: string;
}

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
