/**
 * API keys and organizations. A key maps to one organization; only a hash of it is stored, so the
 * database never holds a usable key. Re-exported by `ports.ts`.
 */
type OrgId = string;

export interface ApiKeyRecord {
  id: string;
  org_id: OrgId;
  /** The first characters of the key, shown in listings so a person can tell keys apart. */
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

export interface OrganizationRecord {
  org_id: OrgId;
  active_keys: number;
  sandbox_storage_quota_bytes: number | null;
}

export interface AuthRepo {
  createKey(org: OrgId, keyHash: string, prefix: string): Promise<ApiKeyRecord>;
  /** The organization of an unrevoked key with this hash, or null. Runs on every authenticated request. */
  findActiveKey(keyHash: string): Promise<{ id: string; org_id: OrgId } | null>;
  countActiveKeys(): Promise<number>;
  listKeys(): Promise<ApiKeyRecord[]>;
  /** Revokes by id or by unique prefix; returns the revoked key, or null if nothing matched. */
  revokeKey(idOrPrefix: string): Promise<ApiKeyRecord | null>;
  /** Organizations known from keys or from billing settings. */
  listOrgs(): Promise<OrganizationRecord[]>;
}
