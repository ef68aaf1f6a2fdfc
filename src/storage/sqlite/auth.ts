import { randomUUID } from "node:crypto";
import { conflict } from "../../errors.js";
import type { ApiKeyRecord, AuthRepo, OrganizationRecord } from "../auth-ports.js";
import { type Db, statementCache } from "./database.js";

export class SqliteAuth implements AuthRepo {
  readonly #q: ReturnType<typeof statementCache>;

  constructor(db: Db) {
    this.#q = statementCache(db);
  }

  async createKey(org: string, keyHash: string, prefix: string): Promise<ApiKeyRecord> {
    const record: ApiKeyRecord = {
      id: randomUUID(),
      org_id: org,
      prefix,
      created_at: new Date().toISOString(),
      revoked_at: null,
    };
    this.#q(
      "INSERT INTO api_keys (id, org_id, key_hash, prefix, created_at) VALUES (@id, @org_id, @key_hash, @prefix, @created_at)",
    ).run({ ...record, key_hash: keyHash });
    return record;
  }

  async findActiveKey(keyHash: string) {
    return (
      (this.#q("SELECT id, org_id FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL").get(keyHash) as
        | { id: string; org_id: string }
        | undefined) ?? null
    );
  }

  async countActiveKeys(): Promise<number> {
    return (this.#q("SELECT COUNT(*) AS n FROM api_keys WHERE revoked_at IS NULL").get() as { n: number }).n;
  }

  async listKeys(): Promise<ApiKeyRecord[]> {
    return this.#q(
      "SELECT id, org_id, prefix, created_at, revoked_at FROM api_keys ORDER BY created_at",
    ).all();
  }

  async revokeKey(idOrPrefix: string): Promise<ApiKeyRecord | null> {
    const matches: ApiKeyRecord[] = this.#q(
      "SELECT id, org_id, prefix, created_at, revoked_at FROM api_keys WHERE id = ? OR prefix = ?",
    ).all(idOrPrefix, idOrPrefix);
    if (matches.length > 1) throw conflict(`"${idOrPrefix}" matches ${matches.length} keys; revoke by id`);
    const key = matches[0];
    if (!key) return null;
    const revokedAt = key.revoked_at ?? new Date().toISOString();
    this.#q("UPDATE api_keys SET revoked_at = ? WHERE id = ?").run(revokedAt, key.id);
    return { ...key, revoked_at: revokedAt };
  }

  async listOrgs(): Promise<OrganizationRecord[]> {
    return this.#q(
      `SELECT o.org_id,
         (SELECT COUNT(*) FROM api_keys k WHERE k.org_id = o.org_id AND k.revoked_at IS NULL) AS active_keys,
         (SELECT b.sandbox_storage_quota_bytes FROM org_usage_billing b WHERE b.org_id = o.org_id) AS sandbox_storage_quota_bytes
       FROM (SELECT org_id FROM api_keys UNION SELECT org_id FROM org_usage_billing) o ORDER BY o.org_id`,
    ).all();
  }
}
