/**
 * The storage port contract (test/helpers/storage-contract.ts), authRepo: API keys and organizations.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKind, storageContract } from "../helpers/storage-contract.js";

storageContract((withStorage) => {
  describe("auth", () => {
    test(
      "keys: create, find, count, revoke by prefix or id, organizations",
      withStorage(async (s) => {
        const k1 = await s.auth.createKey("org-a", "hash-1", "hk_aaaa");
        await s.auth.createKey("org-b", "hash-2", "hk_bbbb");
        await s.auth.createKey("org-b", "hash-3", "hk_bbbb");
        assert.deepEqual(await s.auth.findActiveKey("hash-1"), { id: k1.id, org_id: "org-a" });
        assert.equal(await s.auth.findActiveKey("nope"), null);
        assert.equal(await s.auth.countActiveKeys(), 3);
        await assert.rejects(s.auth.revokeKey("hk_bbbb"), isKind("conflict"));
        const revoked = await s.auth.revokeKey("hk_aaaa");
        assert.equal(revoked?.id, k1.id);
        assert.ok(revoked?.revoked_at);
        assert.equal(await s.auth.findActiveKey("hash-1"), null);
        assert.equal(await s.auth.revokeKey("missing"), null);
        assert.equal((await s.auth.listKeys()).length, 3);
        await s.sandboxes.setStorageQuota("org-c", 1024);
        assert.deepEqual(await s.auth.listOrgs(), [
          { org_id: "org-a", active_keys: 0, sandbox_storage_quota_bytes: null },
          { org_id: "org-b", active_keys: 2, sandbox_storage_quota_bytes: null },
          { org_id: "org-c", active_keys: 0, sandbox_storage_quota_bytes: 1024 },
        ]);
      }),
    );
  });
});
