import { randomUUID } from "node:crypto";
import { conflict } from "../../errors.js";
import type { ApiKeyRecord, AuthRepo, OrganizationRecord } from "../auth-ports.js";
import type { PgDatabase } from "./database.js";

const KEY_COLUMNS = "id, org_id, prefix, created_at, revoked_at";

/** API keys and organizations on Postgres; the twin of sqlite/auth.ts. */
export class PgAuth implements AuthRepo {
  readonly #db: PgDatabase;

  constructor(db: PgDatabase) {
    this.#db = db;
  }

  async createKey(org: string, keyHash: string, prefix: string): Promise<ApiKeyRecord> {
    const record: ApiKeyRecord = {
      id: randomUUID(),
      org_id: org,
      prefix,
      created_at: new Date().toISOString(),
      revoked_at: null,
    };
    await this.#db.query(
      "INSERT INTO api_keys (id, org_id, key_hash, prefix, created_at) VALUES ($1, $2, $3, $4, $5)",
      [record.id, org, keyHash, prefix, record.created_at],
    );
    return record;
  }

  async findActiveKey(keyHash: string) {
    const { rows } = await this.#db.query<{ id: string; org_id: string }>(
      "SELECT id, org_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL",
      [keyHash],
    );
    return rows[0] ?? null;
  }

  async countActiveKeys(): Promise<number> {
    const { rows } = await this.#db.query<{ n: number }>(
      "SELECT COUNT(*) AS n FROM api_keys WHERE revoked_at IS NULL",
    );
    return rows[0].n;
  }

  async listKeys(): Promise<ApiKeyRecord[]> {
    const { rows } = await this.#db.query<ApiKeyRecord>(
      `SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY created_at, seq`,
    );
    return rows;
  }

  async revokeKey(idOrPrefix: string): Promise<ApiKeyRecord | null> {
    return this.#db.tx(async (c) => {
      const { rows: matches } = await c.query<ApiKeyRecord>(
        `SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 OR prefix = $1 FOR UPDATE`,
        [idOrPrefix],
      );
      if (matches.length > 1) throw conflict(`"${idOrPrefix}" matches ${matches.length} keys; revoke by id`);
      const key = matches[0];
      if (!key) return null;
      const revokedAt = key.revoked_at ?? new Date().toISOString();
      await c.query("UPDATE api_keys SET revoked_at = $2 WHERE id = $1", [key.id, revokedAt]);
      return { ...key, revoked_at: revokedAt };
    });
  }

  async listOrgs(): Promise<OrganizationRecord[]> {
    const { rows } = await this.#db.query<OrganizationRecord>(
      `SELECT o.org_id,
         (SELECT COUNT(*) FROM api_keys k WHERE k.org_id = o.org_id AND k.revoked_at IS NULL) AS active_keys,
         (SELECT b.sandbox_storage_quota_bytes FROM org_usage_billing b WHERE b.org_id = o.org_id)
           AS sandbox_storage_quota_bytes
       FROM (SELECT org_id FROM api_keys UNION SELECT org_id FROM org_usage_billing) o ORDER BY o.org_id`,
    );
    return rows;
  }
}
