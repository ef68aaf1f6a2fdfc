/** API keys and organizations (ports.ts' `AuthRepo`). */
import { randomUUID } from "node:crypto";
import { conflict } from "../../errors.js";
import type { ApiKeyRecord, AuthRepo, OrganizationRecord } from "../ports.js";
import { all, changed, SqlRepo } from "./database.js";

const KEY_COLUMNS = ["id", "org_id", "prefix", "created_at", "revoked_at"] as const;

export class SqlAuth extends SqlRepo implements AuthRepo {
  async createKey(org: string, keyHash: string, prefix: string): Promise<ApiKeyRecord> {
    const record: ApiKeyRecord = {
      id: randomUUID(),
      org_id: org,
      prefix,
      created_at: new Date().toISOString(),
      revoked_at: null,
    };
    await this.database.db
      .insertInto("api_keys")
      .values({ ...record, key_hash: keyHash })
      .execute();
    return record;
  }

  async findActiveKey(keyHash: string): Promise<{ id: string; org_id: string } | null> {
    const row = await this.database.db
      .selectFrom("api_keys")
      .select(["id", "org_id"])
      .where("key_hash", "=", keyHash)
      .where("revoked_at", "is", null)
      .executeTakeFirst();
    return row ?? null;
  }

  countActiveKeys(): Promise<number> {
    return this.countOf(this.database.db.selectFrom("api_keys").where("revoked_at", "is", null));
  }

  listKeys(): Promise<ApiKeyRecord[]> {
    return this.database.db
      .selectFrom("api_keys")
      .select(KEY_COLUMNS)
      .orderBy("created_at")
      .orderBy(this.dialect.insertionOrder())
      .execute();
  }

  revokeKey(idOrPrefix: string): Promise<ApiKeyRecord | null> {
    return this.transaction(function* (tx) {
      const matches = yield* all(
        this.dialect.lock(
          tx
            .selectFrom("api_keys")
            .select(KEY_COLUMNS)
            .where((eb) => eb.or([eb("id", "=", idOrPrefix), eb("prefix", "=", idOrPrefix)])),
        ),
      );
      if (matches.length > 1) throw conflict(`"${idOrPrefix}" matches ${matches.length} keys; revoke by id`);
      const key = matches[0];
      if (!key) return null;
      const revokedAt = key.revoked_at ?? new Date().toISOString();
      yield* changed(tx.updateTable("api_keys").set({ revoked_at: revokedAt }).where("id", "=", key.id));
      return { ...key, revoked_at: revokedAt };
    });
  }

  async listOrgs(): Promise<OrganizationRecord[]> {
    const rows = await this.database.db
      .selectFrom((eb) =>
        eb
          .selectFrom("api_keys")
          .select("org_id")
          .union(eb.selectFrom("org_usage_billing").select("org_id"))
          .as("o"),
      )
      .select((eb) => [
        "o.org_id",
        eb
          .selectFrom("api_keys as k")
          .select((k) => k.fn.countAll<number>().as("n"))
          .whereRef("k.org_id", "=", "o.org_id")
          .where("k.revoked_at", "is", null)
          .as("active_keys"),
        eb
          .selectFrom("org_usage_billing as b")
          .select("b.sandbox_storage_quota_bytes")
          .whereRef("b.org_id", "=", "o.org_id")
          .as("sandbox_storage_quota_bytes"),
      ])
      .orderBy("o.org_id")
      .execute();
    return rows.map((r) => ({
      org_id: r.org_id,
      active_keys: Number(r.active_keys),
      sandbox_storage_quota_bytes: r.sandbox_storage_quota_bytes ?? null,
    }));
  }
}
