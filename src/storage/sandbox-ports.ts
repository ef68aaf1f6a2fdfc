/**
 * The storage port of the sandbox area (`/v2/sandboxes`): volumes, templates, organizations' storage
 * quotas, running sandboxes ("boxes") and pools of warm ones. Re-exported by `ports.ts`.
 *
 * Operations that enforce a rule are domain-sized and atomic: concurrent renames to one name or grows
 * against one quota never both win, a warm box is claimed once. A refusal is a result value, not an
 * error, so the wording of the API's errors stays in `src/sandboxes/`. Boxes and pools point at their
 * template by id: they follow its renames, and it cannot be deleted while either uses it.
 */
type OrgId = string;
/** What authorization handlers (custom auth) stamped on a record, e.g. its owner; `{}` without them. */
type Metadata = Record<string, unknown>;
/** An authorization handler's filter on `metadata` (src/storage/filter.ts). */
type AuthFilter = import("./filter.js").AuthFilter;

/** One `{ status }` member per refusal, so that callers narrow on each. */
export type Refusal<S extends string> = S extends string ? { status: S } : never;

/** What every record of the area has: its id, its organization, its name (unique there), its times. */
interface SandboxRecord {
  id: string;
  org_id: OrgId;
  name: string;
  /** Set at creation (custom auth handlers stamp the owner), matched by their filters; not on the wire. */
  metadata: Metadata;
  created_at: string;
  updated_at: string;
}

export interface VolumeRecord extends SandboxRecord {
  /** The size as the client wrote it (`10Gi`), echoed back. */
  size: string;
  /** The same size in bytes; what every comparison and the quota use. */
  size_bytes: number;
  storage_class: string;
}

export type VolumeInput = Omit<VolumeRecord, "org_id" | "created_at" | "updated_at" | "metadata"> & {
  metadata?: Metadata;
};

export interface TemplateResources {
  cpu: string;
  memory: string;
  storage?: string;
}

export interface VolumeMount {
  volume_name: string;
  mount_path: string;
}

export interface TemplateRecord extends SandboxRecord {
  image: string;
  resources: TemplateResources;
  /** In creation order; `volume_name` is the mounted volume's current name (mounts follow renames). */
  volume_mounts: VolumeMount[];
}

export interface SandboxListQuery {
  limit: number;
  offset: number;
  /** Case-insensitive substring of the name. */
  name_contains?: string;
  /** Only records whose metadata matches (custom auth's filter). */
  auth?: AuthFilter;
}

/** A page in creation order; `hasMore` when items exist past `offset + limit`. */
export interface SandboxPage<T> {
  items: T[];
  hasMore: boolean;
}

/** An organization's sandbox storage: its quota and what its volumes use (sum of their sizes). */
export interface StorageUsage {
  quota_bytes: number;
  usage_bytes: number;
}

/** Returned instead of writing when a volume would take the organization past its quota. */
export interface QuotaRefusal extends StorageUsage {
  status: "quota_exceeded";
  /** How many bytes the change would add. */
  increase_bytes: number;
}

export type CreateVolumeResult =
  | { status: "created"; volume: VolumeRecord }
  | Refusal<"name_taken">
  | QuotaRefusal;

export interface VolumePatch {
  name?: string;
  size?: { text: string; bytes: number };
}

/**
 * Checked in this order, nothing written unless all pass: the volume exists (`not_found`), the size
 * does not shrink (`shrink`; equal is fine), the increase fits the quota (`quota_exceeded`), the new
 * name is free among the organization's other volumes (`name_taken`).
 */
export type UpdateVolumeResult =
  | { status: "updated"; volume: VolumeRecord; previous: VolumeRecord }
  | { status: "shrink"; volume: VolumeRecord }
  | QuotaRefusal
  | Refusal<"not_found" | "name_taken">;

export type DeleteVolumeResult =
  | { status: "deleted"; volume: VolumeRecord }
  | Refusal<"not_found">
  /** Names of the templates that mount it, sorted. */
  | { status: "in_use"; templates: string[] };

export type TemplateInput = Pick<TemplateRecord, "id" | "name" | "image" | "resources" | "volume_mounts"> & {
  metadata?: Metadata;
};

export type CreateTemplateResult =
  | { status: "created"; template: TemplateRecord }
  | Refusal<"name_taken">
  /** Mounted volume names that no volume of the organization has, in request order. */
  | { status: "missing_volumes"; names: string[] };

export type DeleteTemplateResult =
  | { status: "deleted" }
  | Refusal<"not_found">
  /** Names of the sandboxes and pools made from it, sorted. */
  | { status: "in_use"; sandboxes: string[]; pools: string[] };

export type RenameTemplateResult =
  | { status: "updated"; template: TemplateRecord }
  | Refusal<"not_found" | "name_taken">;

export interface SandboxesRepo {
  /** Sets an organization's sandbox storage quota (its usage-billing configuration), creating the row. */
  setStorageQuota(org: OrgId, quotaBytes: number): Promise<void>;
  /** Creates the organization's billing configuration with this quota unless it has one. */
  ensureStorageQuota(org: OrgId, quotaBytes: number): Promise<void>;
  /** Quota and usage; an organization without a billing configuration has a quota of 0. */
  storageUsage(org: OrgId): Promise<StorageUsage>;

  createVolume(org: OrgId, input: VolumeInput): Promise<CreateVolumeResult>;
  getVolume(org: OrgId, name: string): Promise<VolumeRecord | null>;
  listVolumes(org: OrgId, query: SandboxListQuery): Promise<SandboxPage<VolumeRecord>>;
  updateVolume(org: OrgId, name: string, patch: VolumePatch): Promise<UpdateVolumeResult>;
  /** Refused (`in_use`) while a template mounts it. */
  deleteVolume(org: OrgId, name: string): Promise<DeleteVolumeResult>;
  /** Undoes a create whose provisioning failed: deletes row `id` unless mounted; false if kept or absent. */
  forgetVolume(org: OrgId, id: string): Promise<boolean>;

  createTemplate(org: OrgId, input: TemplateInput): Promise<CreateTemplateResult>;
  getTemplate(org: OrgId, name: string): Promise<TemplateRecord | null>;
  listTemplates(org: OrgId, query: SandboxListQuery): Promise<SandboxPage<TemplateRecord>>;
  renameTemplate(org: OrgId, name: string, newName: string): Promise<RenameTemplateResult>;
  /** Refused (`in_use`) while a sandbox or a pool is made from it. */
  deleteTemplate(org: OrgId, name: string): Promise<DeleteTemplateResult>;
}

export type BoxStatus = "provisioning" | "ready" | "failed" | "stopped";

export interface BoxRecord extends SandboxRecord {
  template_id: string;
  /** The template's current name (boxes follow renames). */
  template_name: string;
  /** Set while the box is a warm member of a pool; null once claimed (or never pooled). */
  pool_id: string | null;
  status: BoxStatus;
  status_message: string | null;
  /** 0 = no limit. */
  ttl_seconds: number;
  /** 0 = no limit. */
  idle_ttl_seconds: number;
  /** When the box is deleted for its TTLs (ISO), or null when neither TTL is set. */
  expires_at: string | null;
  /** The last data-plane call (ISO); where the idle TTL counts from. */
  last_active_at: string;
}

export interface PoolRecord extends SandboxRecord {
  template_id: string;
  template_name: string;
  replicas: number;
}

export type BoxPatch = Partial<Pick<BoxRecord, "name" | "ttl_seconds" | "idle_ttl_seconds" | "expires_at">>;

export type BoxInput = Required<BoxPatch> &
  Pick<BoxRecord, "id" | "template_name"> & { pool_id?: string | null; metadata?: Metadata };

/** What one sandbox of an organization holds: its template's resources, as written. */
export interface SandboxUnit {
  cpu: string;
  memory: string;
}

/**
 * The organization's limits, checked in the transaction that adds sandboxes (under the organization's
 * lock, so concurrent adds cannot overrun them): `held` has one unit per sandbox outside a pool and
 * `replicas` units per pool (its warm sandboxes); the refusal's message, or null to go on.
 */
export type Admit = (held: SandboxUnit[], adding: SandboxUnit[]) => string | null;

/** An organization limit refused the change (`Admit`'s message). */
export type OverLimit = { status: "over_limit"; message: string };

export type CreateBoxResult =
  | { status: "created"; box: BoxRecord }
  | Refusal<"name_taken" | "template_not_found">
  | OverLimit;

/** The claimed box keeps its id and files; it gets the caller's name and TTLs. */
export type ClaimBoxResult =
  | { status: "claimed"; box: BoxRecord }
  | Refusal<"none" | "name_taken">
  | OverLimit;

/** What claiming a warm box sets: its TTLs, its name when given, its metadata, and `now` as its last activity. */
export type BoxClaim = Required<Omit<BoxPatch, "name">> & { name?: string; metadata?: Metadata; now: string };

export type UpdateBoxResult = { status: "updated"; box: BoxRecord } | Refusal<"not_found" | "name_taken">;

export type PoolInput = Pick<PoolRecord, "id" | "name" | "template_name" | "replicas"> & {
  metadata?: Metadata;
};

export type CreatePoolResult =
  | { status: "created"; pool: PoolRecord }
  /** `template_has_volumes`: pools only hold stateless templates. */
  | Refusal<"name_taken" | "template_not_found" | "template_has_volumes">
  | OverLimit;

export type PoolPatch = Partial<Pick<PoolInput, "name" | "replicas">>;

export type UpdatePoolResult =
  | { status: "updated"; pool: PoolRecord }
  | Refusal<"not_found" | "name_taken">
  | OverLimit;

export interface SandboxBoxesRepo {
  /** `admit`: the organization's limits, for a box outside a pool (a pool's are its replicas). */
  createBox(org: OrgId, input: BoxInput, admit?: Admit): Promise<CreateBoxResult>;
  /**
   * Atomically takes one `ready` warm box of a pool of this template out of its pool, renaming it
   * (when `name` is given) and setting its TTLs. `none` when no warm box is ready.
   */
  /**
   * A warm box of the template (a sandbox more for `admit`), from a pool whose metadata matches `pools`
   * (custom auth's `pools:read`) when given.
   */
  claimWarmBox(
    org: OrgId,
    templateName: string,
    patch: BoxClaim,
    admit?: Admit,
    pools?: AuthFilter,
  ): Promise<ClaimBoxResult>;
  getBox(org: OrgId, name: string): Promise<BoxRecord | null>;
  getBoxById(id: string): Promise<BoxRecord | null>;
  /** The organization's boxes that are not warm pool members, in creation order. */
  listBoxes(org: OrgId, query: SandboxListQuery): Promise<SandboxPage<BoxRecord>>;
  /** Every box of every organization (pool members included): for start-up and the TTL sweeper. */
  listAllBoxes(): Promise<BoxRecord[]>;
  updateBox(org: OrgId, name: string, patch: BoxPatch): Promise<UpdateBoxResult>;
  setBoxStatus(id: string, status: BoxStatus, message: string | null): Promise<BoxRecord | null>;
  /** Records data-plane activity (and the resulting expiry). */
  touchBox(id: string, lastActiveAt: string, expiresAt: string | null): Promise<void>;
  /** Removes the row; returns it, or null when it was already gone. */
  deleteBox(id: string): Promise<BoxRecord | null>;

  createPool(org: OrgId, input: PoolInput, admit?: Admit): Promise<CreatePoolResult>;
  getPool(org: OrgId, name: string): Promise<PoolRecord | null>;
  listPools(org: OrgId, query: SandboxListQuery): Promise<SandboxPage<PoolRecord>>;
  listAllPools(): Promise<PoolRecord[]>;
  updatePool(org: OrgId, name: string, patch: PoolPatch, admit?: Admit): Promise<UpdatePoolResult>;
  /** Removes the pool; its warm boxes are returned (still recorded) for the caller to tear down. */
  deletePool(org: OrgId, name: string): Promise<{ pool: PoolRecord; boxes: BoxRecord[] } | null>;
  /** The warm boxes of a pool, oldest first. */
  poolBoxes(poolId: string): Promise<BoxRecord[]>;
}
