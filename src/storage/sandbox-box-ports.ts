/**
 * The storage port of running sandboxes ("boxes") and pools of warm sandboxes. Re-exported by
 * `ports.ts`. Boxes and pools point at a template by id, so a template rename is followed, and a
 * template cannot be deleted while either uses it (`SandboxesRepo.deleteTemplate` answers `in_use`).
 *
 * Like `sandbox-ports.ts`, operations that enforce a rule (unique names, claiming a warm box once)
 * are atomic and report a refusal as a result value.
 */

import type { SandboxListQuery, SandboxPage } from "./sandbox-ports.js";

type OrgId = string;

/** One `{ status }` member per refusal, so that callers narrow on each. */
type Refusal<S extends string> = S extends string ? { status: S } : never;

export type BoxStatus = "provisioning" | "ready" | "failed" | "stopped";

export interface BoxRecord {
  id: string;
  org_id: OrgId;
  name: string;
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
  created_at: string;
  updated_at: string;
}

export interface PoolRecord {
  id: string;
  org_id: OrgId;
  name: string;
  template_id: string;
  template_name: string;
  replicas: number;
  created_at: string;
  updated_at: string;
}

export interface BoxInput {
  id: string;
  name: string;
  template_name: string;
  pool_id?: string | null;
  ttl_seconds: number;
  idle_ttl_seconds: number;
  expires_at: string | null;
}

export type CreateBoxResult =
  | { status: "created"; box: BoxRecord }
  | Refusal<"name_taken" | "template_not_found">;

/** The claimed box keeps its id and files; it gets the caller's name and TTLs. */
export type ClaimBoxResult = { status: "claimed"; box: BoxRecord } | Refusal<"none" | "name_taken">;

export interface BoxPatch {
  name?: string;
  ttl_seconds?: number;
  idle_ttl_seconds?: number;
  expires_at?: string | null;
}

/** What claiming a warm box sets: its TTLs, its name when given, and `now` as its last activity. */
export type BoxClaim = Required<Omit<BoxPatch, "name">> & { name?: string; now: string };

export type UpdateBoxResult = { status: "updated"; box: BoxRecord } | Refusal<"not_found" | "name_taken">;

export interface PoolInput {
  id: string;
  name: string;
  template_name: string;
  replicas: number;
}

export type CreatePoolResult =
  | { status: "created"; pool: PoolRecord }
  /** `template_has_volumes`: pools only hold stateless templates. */
  | Refusal<"name_taken" | "template_not_found" | "template_has_volumes">;

export type UpdatePoolResult = { status: "updated"; pool: PoolRecord } | Refusal<"not_found" | "name_taken">;

export interface SandboxBoxesRepo {
  createBox(org: OrgId, input: BoxInput): Promise<CreateBoxResult>;
  /**
   * Atomically takes one `ready` warm box of a pool of this template out of its pool, renaming it
   * (when `name` is given) and setting its TTLs. `none` when no warm box is ready.
   */
  claimWarmBox(org: OrgId, templateName: string, patch: BoxClaim): Promise<ClaimBoxResult>;
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

  createPool(org: OrgId, input: PoolInput): Promise<CreatePoolResult>;
  getPool(org: OrgId, name: string): Promise<PoolRecord | null>;
  listPools(org: OrgId, query: SandboxListQuery): Promise<SandboxPage<PoolRecord>>;
  listAllPools(): Promise<PoolRecord[]>;
  updatePool(
    org: OrgId,
    name: string,
    patch: { name?: string; replicas?: number },
  ): Promise<UpdatePoolResult>;
  /** Removes the pool; its warm boxes are returned (still recorded) for the caller to tear down. */
  deletePool(org: OrgId, name: string): Promise<{ pool: PoolRecord; boxes: BoxRecord[] } | null>;
  /** The warm boxes of a pool, oldest first. */
  poolBoxes(poolId: string): Promise<BoxRecord[]>;
}
