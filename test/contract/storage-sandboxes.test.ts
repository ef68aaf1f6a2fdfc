/**
 * The storage port contract (test/helpers/storage-contract.ts), sandboxesRepo and SandboxBoxesRepo: volumes, templates, quota, boxes, pools.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { storageContract } from "../helpers/storage-contract.js";
import { ORG } from "../helpers/storage-records.js";

storageContract((withStorage) => {
  describe("sandboxes", () => {
    test(
      "volumes and templates: names, quota, grow-only, mounts, pages",
      withStorage(async (s) => {
        const GI = 1024 ** 3;
        await s.sandboxes.ensureStorageQuota(ORG, 10 * GI);
        await s.sandboxes.ensureStorageQuota(ORG, 1 * GI);
        assert.deepEqual(await s.sandboxes.storageUsage(ORG), { quota_bytes: 10 * GI, usage_bytes: 0 });
        const vol = (name: string, gi: number) => ({
          id: randomUUID(),
          name,
          size: `${gi}Gi`,
          size_bytes: gi * GI,
          storage_class: "standard",
        });
        const v1 = await s.sandboxes.createVolume(ORG, vol("data", 4));
        assert.equal(v1.status, "created");
        assert.equal((await s.sandboxes.createVolume(ORG, vol("data", 1))).status, "name_taken");
        assert.equal((await s.sandboxes.createVolume(ORG, vol("big", 7))).status, "quota_exceeded");
        await s.sandboxes.createVolume(ORG, vol("logs", 2));
        assert.equal(
          (await s.sandboxes.updateVolume(ORG, "data", { size: { text: "1Gi", bytes: GI } })).status,
          "shrink",
        );
        assert.equal((await s.sandboxes.updateVolume(ORG, "data", { name: "logs" })).status, "name_taken");
        const grown = await s.sandboxes.updateVolume(ORG, "data", {
          name: "data2",
          size: { text: "5Gi", bytes: 5 * GI },
        });
        assert.equal(grown.status, "updated");
        assert.deepEqual(await s.sandboxes.storageUsage(ORG), {
          quota_bytes: 10 * GI,
          usage_bytes: 7 * GI,
        });

        const tpl = (name: string, mounts: string[]) => ({
          id: randomUUID(),
          name,
          image: "python:3.12",
          resources: { cpu: "1", memory: "1Gi" },
          volume_mounts: mounts.map((m, i) => ({ volume_name: m, mount_path: `/mnt/${i}` })),
        });
        assert.deepEqual(await s.sandboxes.createTemplate(ORG, tpl("t1", ["nope", "data2", "nope"])), {
          status: "missing_volumes",
          names: ["nope"],
        });
        const t1 = await s.sandboxes.createTemplate(ORG, tpl("t1", ["data2", "logs"]));
        assert.equal(t1.status, "created");
        assert.equal((await s.sandboxes.createTemplate(ORG, tpl("t1", []))).status, "name_taken");
        await s.sandboxes.createTemplate(ORG, tpl("t2", ["logs"]));
        assert.deepEqual(await s.sandboxes.deleteVolume(ORG, "logs"), {
          status: "in_use",
          templates: ["t1", "t2"],
        });
        await s.sandboxes.updateVolume(ORG, "data2", { name: "data3" });
        assert.deepEqual((await s.sandboxes.getTemplate(ORG, "t1"))?.volume_mounts, [
          { volume_name: "data3", mount_path: "/mnt/0" },
          { volume_name: "logs", mount_path: "/mnt/1" },
        ]);
        assert.equal((await s.sandboxes.renameTemplate(ORG, "t1", "t2")).status, "name_taken");
        assert.equal((await s.sandboxes.renameTemplate(ORG, "t1", "T-one")).status, "updated");
        const page = await s.sandboxes.listTemplates(ORG, { limit: 1, offset: 0, name_contains: "t" });
        assert.deepEqual(
          page.items.map((t) => t.name),
          ["T-one"],
        );
        assert.equal(page.hasMore, true);
        assert.deepEqual(await s.sandboxes.deleteTemplate(ORG, "T-one"), { status: "deleted" });
        assert.deepEqual(await s.sandboxes.deleteTemplate(ORG, "T-one"), { status: "not_found" });
        assert.equal((await s.sandboxes.deleteVolume(ORG, "data3")).status, "deleted");
        const volumes = await s.sandboxes.listVolumes(ORG, { limit: 10, offset: 0 });
        assert.deepEqual(
          volumes.items.map((v) => v.name),
          ["logs"],
        );
        assert.equal(await s.sandboxes.getVolume("org-b", "logs"), null);
      }),
    );

    test(
      "concurrent volume creations against one quota: only what fits is created",
      withStorage(async (s, fx) => {
        const GI = 1024 ** 3;
        await s.sandboxes.setStorageQuota(ORG, 3 * GI);
        const views = [s, await fx.another(), await fx.another()];
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            views[i % views.length].sandboxes.createVolume(ORG, {
              id: randomUUID(),
              name: `v${i}`,
              size: "1Gi",
              size_bytes: GI,
              storage_class: "standard",
            }),
          ),
        );
        assert.equal(results.filter((r) => r.status === "created").length, 3);
        assert.deepEqual(await s.sandboxes.storageUsage(ORG), { quota_bytes: 3 * GI, usage_bytes: 3 * GI });
      }),
    );

    test(
      "boxes and pools: names, warm claims, template in use, TTL fields, pool deletion",
      withStorage(async (s) => {
        const tpl = (name: string, mounts: { volume_name: string; mount_path: string }[] = []) => ({
          id: randomUUID(),
          name,
          image: "hangar/host",
          resources: { cpu: "500m", memory: "512Mi" },
          volume_mounts: mounts,
        });
        await s.sandboxes.ensureStorageQuota(ORG, 1024 ** 4);
        await s.sandboxes.createTemplate(ORG, tpl("plain"));
        await s.sandboxes.createVolume(ORG, {
          id: randomUUID(),
          name: "vol",
          size: "1Gi",
          size_bytes: 1024 ** 3,
          storage_class: "standard",
        });
        await s.sandboxes.createTemplate(ORG, tpl("stateful", [{ volume_name: "vol", mount_path: "/data" }]));
        const box = (name: string, template_name = "plain", pool_id: string | null = null) => ({
          id: randomUUID(),
          name,
          template_name,
          pool_id,
          ttl_seconds: 0,
          idle_ttl_seconds: 0,
          expires_at: null,
        });

        const b1 = await s.sandboxBoxes.createBox(ORG, box("b1"));
        assert.equal(b1.status, "created");
        if (b1.status !== "created") return;
        assert.equal(b1.box.status, "provisioning");
        assert.equal(b1.box.template_name, "plain");
        assert.equal((await s.sandboxBoxes.createBox(ORG, box("b1"))).status, "name_taken");
        assert.equal((await s.sandboxBoxes.createBox(ORG, box("b2", "ghost"))).status, "template_not_found");
        assert.equal((await s.sandboxBoxes.createBox("org-b", box("b1"))).status, "template_not_found");

        assert.equal((await s.sandboxBoxes.setBoxStatus(b1.box.id, "ready", null))?.status, "ready");
        const renamed = await s.sandboxBoxes.updateBox(ORG, "b1", {
          name: "b-one",
          ttl_seconds: 60,
          expires_at: "x",
        });
        assert.equal(renamed.status, "updated");
        if (renamed.status === "updated") {
          assert.equal(renamed.box.id, b1.box.id);
          assert.equal(renamed.box.ttl_seconds, 60);
        }
        await s.sandboxBoxes.touchBox(b1.box.id, "2030-01-01T00:00:00.000Z", null);
        assert.equal(
          (await s.sandboxBoxes.getBoxById(b1.box.id))?.last_active_at,
          "2030-01-01T00:00:00.000Z",
        );
        // Templates follow renames; a template in use cannot be deleted.
        await s.sandboxes.renameTemplate(ORG, "plain", "plain2");
        assert.equal((await s.sandboxBoxes.getBox(ORG, "b-one"))?.template_name, "plain2");
        assert.deepEqual(await s.sandboxes.deleteTemplate(ORG, "plain2"), {
          status: "in_use",
          sandboxes: ["b-one"],
          pools: [],
        });

        // Pools: stateless templates only; warm boxes are hidden and claimed once.
        const mkPool = (name: string, template_name: string) => ({
          id: randomUUID(),
          name,
          template_name,
          replicas: 1,
        });
        assert.equal(
          (await s.sandboxBoxes.createPool(ORG, mkPool("p", "stateful"))).status,
          "template_has_volumes",
        );
        assert.equal(
          (await s.sandboxBoxes.createPool(ORG, mkPool("p", "ghost"))).status,
          "template_not_found",
        );
        const pool = await s.sandboxBoxes.createPool(ORG, mkPool("p", "plain2"));
        assert.equal(pool.status, "created");
        if (pool.status !== "created") return;
        assert.deepEqual(await s.sandboxBoxes.getPool(ORG, "p"), pool.pool);
        assert.equal((await s.sandboxBoxes.createPool(ORG, mkPool("p", "plain2"))).status, "name_taken");
        const warm = await s.sandboxBoxes.createBox(ORG, box("p-warm", "plain2", pool.pool.id));
        assert.equal(warm.status, "created");
        if (warm.status !== "created") return;
        const claim = {
          ttl_seconds: 0,
          idle_ttl_seconds: 0,
          expires_at: null,
          now: new Date().toISOString(),
        };
        assert.equal(
          (await s.sandboxBoxes.claimWarmBox(ORG, "plain2", claim)).status,
          "none",
          "not ready yet",
        );
        await s.sandboxBoxes.setBoxStatus(warm.box.id, "ready", null);
        assert.deepEqual(
          (await s.sandboxBoxes.listBoxes(ORG, { limit: 10, offset: 0 })).items.map((b) => b.name),
          ["b-one"],
        );
        assert.equal(
          (await s.sandboxBoxes.claimWarmBox(ORG, "plain2", { ...claim, name: "b-one" })).status,
          "name_taken",
        );
        const claimed = await s.sandboxBoxes.claimWarmBox(ORG, "plain2", { ...claim, name: "mine" });
        assert.equal(claimed.status, "claimed");
        if (claimed.status === "claimed") {
          assert.equal(claimed.box.id, warm.box.id);
          assert.equal(claimed.box.pool_id, null);
        }
        assert.equal((await s.sandboxBoxes.claimWarmBox(ORG, "plain2", claim)).status, "none");
        assert.deepEqual(await s.sandboxes.deleteTemplate(ORG, "plain2"), {
          status: "in_use",
          sandboxes: ["b-one", "mine"],
          pools: ["p"],
        });

        const again = await s.sandboxBoxes.createBox(ORG, box("p-warm2", "plain2", pool.pool.id));
        assert.equal(again.status, "created");
        const resized = await s.sandboxBoxes.updatePool(ORG, "p", { replicas: 0 });
        assert.equal(resized.status, "updated");
        if (resized.status === "updated")
          assert.deepEqual(await s.sandboxBoxes.getPool(ORG, "p"), resized.pool);
        assert.equal((await s.sandboxBoxes.getPool(ORG, "p"))?.replicas, 0);
        const deleted = await s.sandboxBoxes.deletePool(ORG, "p");
        assert.deepEqual(
          deleted?.boxes.map((b) => b.name),
          ["p-warm2"],
        );
        assert.equal(await s.sandboxBoxes.deletePool(ORG, "p"), null);
        for (const b of await s.sandboxBoxes.listAllBoxes()) await s.sandboxBoxes.deleteBox(b.id);
        assert.equal(await s.sandboxBoxes.deleteBox(b1.box.id), null);
        assert.deepEqual(await s.sandboxes.deleteTemplate(ORG, "plain2"), { status: "deleted" });
      }),
    );

    test(
      "name filters: a case-insensitive substring, LIKE's wildcards taken literally; template pages keep their mounts",
      withStorage(async (s) => {
        await s.sandboxes.ensureStorageQuota(ORG, 1024 ** 4);
        const names = ["a%b", "a_b", "axb", "AXB", "a\\b"];
        for (const name of names) {
          const created = await s.sandboxes.createVolume(ORG, {
            id: randomUUID(),
            name,
            size: "1Gi",
            size_bytes: 1024 ** 3,
            storage_class: "standard",
          });
          assert.equal(created.status, "created");
        }
        const volumes = async (name_contains: string) =>
          (await s.sandboxes.listVolumes(ORG, { limit: 10, offset: 0, name_contains })).items.map(
            (v) => v.name,
          );
        assert.deepEqual(await volumes("%"), ["a%b"]);
        assert.deepEqual(await volumes("_"), ["a_b"]);
        assert.deepEqual(await volumes("\\"), ["a\\b"]);
        assert.deepEqual(await volumes("X"), ["axb", "AXB"]);
        assert.deepEqual(await volumes(""), names);

        const template = (name: string, mounts: string[]) => ({
          id: randomUUID(),
          name,
          image: "hangar/host",
          resources: { cpu: "1", memory: "1Gi" },
          volume_mounts: mounts.map((m, i) => ({ volume_name: m, mount_path: `/m/${i}` })),
        });
        await s.sandboxes.createTemplate(ORG, template("t_1", ["axb", "a%b", "AXB"]));
        await s.sandboxes.createTemplate(ORG, template("t-2", []));
        await s.sandboxes.createTemplate(ORG, template("T_3", ["a_b"]));
        const page = await s.sandboxes.listTemplates(ORG, { limit: 10, offset: 0, name_contains: "_" });
        assert.deepEqual(
          page.items.map((t) => [t.name, t.volume_mounts.map((m) => `${m.volume_name}@${m.mount_path}`)]),
          [
            ["t_1", ["axb@/m/0", "a%b@/m/1", "AXB@/m/2"]],
            ["T_3", ["a_b@/m/0"]],
          ],
        );

        await s.sandboxBoxes.createBox(ORG, {
          id: randomUUID(),
          name: "Box_1",
          template_name: "t-2",
          ttl_seconds: 0,
          idle_ttl_seconds: 0,
          expires_at: null,
        });
        await s.sandboxBoxes.createBox(ORG, {
          id: randomUUID(),
          name: "box-2",
          template_name: "t-2",
          ttl_seconds: 0,
          idle_ttl_seconds: 0,
          expires_at: null,
        });
        const boxes = async (name_contains: string) =>
          (await s.sandboxBoxes.listBoxes(ORG, { limit: 10, offset: 0, name_contains })).items.map(
            (b) => b.name,
          );
        assert.deepEqual(await boxes("_"), ["Box_1"]);
        assert.deepEqual(await boxes("BOX"), ["Box_1", "box-2"]);
        await s.sandboxBoxes.createPool(ORG, {
          id: randomUUID(),
          name: "p_1",
          template_name: "t-2",
          replicas: 0,
        });
        await s.sandboxBoxes.createPool(ORG, {
          id: randomUUID(),
          name: "P-2",
          template_name: "t-2",
          replicas: 0,
        });
        const pools = async (name_contains: string) =>
          (await s.sandboxBoxes.listPools(ORG, { limit: 10, offset: 0, name_contains })).items.map(
            (p) => p.name,
          );
        assert.deepEqual(await pools("_"), ["p_1"]);
        assert.deepEqual(await pools("p"), ["p_1", "P-2"]);
      }),
    );

    test(
      "concurrent warm claims from several connections: each warm box goes to one create",
      withStorage(async (s, fx) => {
        await s.sandboxes.createTemplate(ORG, {
          id: randomUUID(),
          name: "warm",
          image: "hangar/host",
          resources: { cpu: "1", memory: "1Gi" },
          volume_mounts: [],
        });
        const pool = await s.sandboxBoxes.createPool(ORG, {
          id: randomUUID(),
          name: "p",
          template_name: "warm",
          replicas: 3,
        });
        assert.equal(pool.status, "created");
        if (pool.status !== "created") return;
        for (let i = 0; i < 3; i++) {
          const warm = await s.sandboxBoxes.createBox(ORG, {
            id: randomUUID(),
            name: `warm-${i}`,
            template_name: "warm",
            pool_id: pool.pool.id,
            ttl_seconds: 0,
            idle_ttl_seconds: 0,
            expires_at: null,
          });
          assert.equal(warm.status, "created");
          if (warm.status === "created") await s.sandboxBoxes.setBoxStatus(warm.box.id, "ready", null);
        }
        const views = [s, await fx.another(), await fx.another()];
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            views[i % views.length].sandboxBoxes.claimWarmBox(ORG, "warm", {
              name: `mine-${i}`,
              ttl_seconds: 0,
              idle_ttl_seconds: 0,
              expires_at: null,
              now: new Date().toISOString(),
            }),
          ),
        );
        const claimed = results.flatMap((r) => (r.status === "claimed" ? [r.box] : []));
        assert.equal(claimed.length, 3);
        assert.equal(new Set(claimed.map((b) => b.id)).size, 3);
        assert.equal(results.filter((r) => r.status === "none").length, 5);
        assert.deepEqual(await s.sandboxBoxes.poolBoxes(pool.pool.id), []);
        assert.deepEqual(
          (await s.sandboxBoxes.listBoxes(ORG, { limit: 10, offset: 0 })).items.map((b) => b.name).sort(),
          claimed.map((b) => b.name).sort(),
        );
      }),
    );
  });
});
