/**
 * The storage port of the sandbox area (`/v2/sandboxes`): volumes, templates and the organizations'
 * usage-billing configuration (their sandbox storage quota). Re-exported by `ports.ts`.
 *
 * The operations that enforce a rule are domain-sized and atomic: `createVolume` / `updateVolume`
 * check the name, the size and the quota and write in one transaction, so concurrent renames to one
 * name or concurrent grows against one quota can never both win. They report a refused change as a
 * result value rather than an error, so the wording of the API's errors stays in `src/sandboxes/`.
 */

type OrgId = string;

export interface VolumeRecord {
  id: string;
  org_id: OrgId;
  name: string;
  /** The size as the client wrote it (`10Gi`), echoed back. */
  size: string;
  /** The same size in bytes; what every comparison and the quota use. */
  size_bytes: number;
  storage_class: string;
  created_at: string;
  updated_at: string;
}

export interface TemplateResources {
  cpu: string;
  memory: string;
  storage?: string;
}

export interface VolumeMount {
  volume_name: string;
  mount_path: string;
}

export interface TemplateRecord {
  id: string;
  org_id: OrgId;
  name: string;
  image: string;
  resources: TemplateResources;
  /** In creation order; `volume_name` is the mounted volume's current name (mounts follow renames). */
  volume_mounts: VolumeMount[];
  created_at: string;
  updated_at: string;
}

export interface SandboxListQuery {
  limit: number;
  offset: number;
  /** Case-insensitive substring of the name. */
  name_contains?: string;
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
  | { status: "name_taken" }
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
  | { status: "not_found" }
  | { status: "shrink"; volume: VolumeRecord }
  | QuotaRefusal
  | { status: "name_taken" };

export type DeleteVolumeResult =
  | { status: "deleted"; volume: VolumeRecord }
  | { status: "not_found" }
  /** Names of the templates that mount it, sorted. */
  | { status: "in_use"; templates: string[] };

export interface TemplateInput {
  id: string;
  name: string;
  image: string;
  resources: TemplateResources;
  volume_mounts: VolumeMount[];
}

export type CreateTemplateResult =
  | { status: "created"; template: TemplateRecord }
  | { status: "name_taken" }
  /** Mounted volume names that no volume of the organization has, in request order. */
  | { status: "missing_volumes"; names: string[] };

export type DeleteTemplateResult =
  | { status: "deleted" }
  | { status: "not_found" }
  /** Names of the sandboxes and pools made from it, sorted. */
  | { status: "in_use"; sandboxes: string[]; pools: string[] };

export type RenameTemplateResult =
  | { status: "updated"; template: TemplateRecord }
  | { status: "not_found" }
  | { status: "name_taken" };

export interface SandboxesRepo {
  /** Sets an organization's sandbox storage quota (its usage-billing configuration), creating the row. */
  setStorageQuota(org: OrgId, quotaBytes: number): Promise<void>;
  /** Creates the organization's billing configuration with this quota unless it has one. */
  ensureStorageQuota(org: OrgId, quotaBytes: number): Promise<void>;
  /** Quota and usage; an organization without a billing configuration has a quota of 0. */
  storageUsage(org: OrgId): Promise<StorageUsage>;

  createVolume(
    org: OrgId,
    input: { id: string; name: string; size: string; size_bytes: number; storage_class: string },
  ): Promise<CreateVolumeResult>;
  getVolume(org: OrgId, name: string): Promise<VolumeRecord | null>;
  listVolumes(org: OrgId, query: SandboxListQuery): Promise<SandboxPage<VolumeRecord>>;
  updateVolume(org: OrgId, name: string, patch: VolumePatch): Promise<UpdateVolumeResult>;
  /** Refused (`in_use`) while a template mounts it. */
  deleteVolume(org: OrgId, name: string): Promise<DeleteVolumeResult>;
  /**
   * Removes a volume row by id unless a template mounts it (undoing a create whose provisioning
   * failed); false when it was kept or absent.
   */
  forgetVolume(org: OrgId, id: string): Promise<boolean>;

  createTemplate(org: OrgId, input: TemplateInput): Promise<CreateTemplateResult>;
  getTemplate(org: OrgId, name: string): Promise<TemplateRecord | null>;
  listTemplates(org: OrgId, query: SandboxListQuery): Promise<SandboxPage<TemplateRecord>>;
  renameTemplate(org: OrgId, name: string, newName: string): Promise<RenameTemplateResult>;
  /** Refused (`in_use`) while a sandbox or a pool is made from it. */
  deleteTemplate(org: OrgId, name: string): Promise<DeleteTemplateResult>;
}
