/**
 * Operators' caps on what a tenant's sandboxes hold (issue 32, item 11), on SQLite and on Postgres: one
 * sandbox's CPU, memory and storage (a template asking for more is a 422 naming the field), and one
 * organization's sandboxes (warm pool replicas included), CPU and memory together (429 with a string
 * detail, as the spec's quota errors), also when creates race.
 *
 * The image store holds empty image directories: templates are accepted, sandboxes fail to boot at
 * once (cheap), and a failed sandbox is still one the organization holds until it is deleted.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { emptyImageStore } from "../helpers/images-cli.js";
import { type FreshDatabase, freshDatabase, PG_SKIP } from "../helpers/postgres.js";
import { type Hangar, http, startHangar } from "../helpers/server.js";

const T = { timeout: 90_000 };
const API = "/v2/sandboxes";

const LIMITS = {
  HANGAR_SANDBOX_MAX_CPU: "2",
  HANGAR_SANDBOX_MAX_MEMORY: "1Gi",
  HANGAR_SANDBOX_MAX_STORAGE: "5Gi",
  HANGAR_SANDBOXES_PER_ORG: "3",
  HANGAR_SANDBOX_ORG_CPU: "1",
  HANGAR_SANDBOX_ORG_MEMORY: "200Mi",
};

for (const engine of ["sqlite", "postgres"] as const) {
  describe(`sandbox limits (${engine})`, { skip: engine === "postgres" ? PG_SKIP : undefined }, () => {
    let h: Hangar;
    let db: FreshDatabase | undefined;
    before(async () => {
      db = engine === "postgres" ? await freshDatabase() : undefined;
      h = await startHangar({
        env: {
          ...LIMITS,
          HANGAR_SANDBOX_IMAGES: await emptyImageStore(["busybox"]),
          ...(db && { POSTGRES_URI: db.uri }),
        },
      });
    });
    after(async () => {
      await h?.stop();
      await db?.drop();
    });
    const template = (name: string, resources: Record<string, string>) =>
      http(h.url, "POST", `${API}/templates`, { name, image: "busybox", resources });
    const box = (template_name: string, name: string) =>
      http(h.url, "POST", `${API}/boxes`, { template_name, name, wait_for_ready: false });
    const remove = async (name: string) =>
      assert.ok((await http(h.url, "DELETE", `${API}/boxes/${name}`)).status < 300, name);

    test("a template asking for more than one sandbox may have is a 422 naming the field", T, async () => {
      for (const [field, resources] of [
        ["cpu", { cpu: "1000", memory: "64Mi" }],
        ["memory", { cpu: "1", memory: "1Pi" }],
        ["storage", { cpu: "1", memory: "64Mi", storage: "1Ti" }],
      ] as const) {
        const res = await template(`big-${field}`, resources);
        assert.equal(res.status, 422, JSON.stringify(res.body));
        assert.deepEqual(res.body.detail[0].loc, ["body", "resources", field]);
        assert.match(res.body.detail[0].msg, /more than one sandbox may have/);
      }
      assert.equal((await template("at-limit", { cpu: "2", memory: "1Gi", storage: "5Gi" })).status, 201);
    });

    test(
      "sandboxes per organization: ten racing creates, three made; pools count their replicas",
      T,
      async () => {
        assert.equal((await template("small", { cpu: "100m", memory: "64Mi" })).status, 201);
        const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => box("small", `race-${i}`)));
        const made = answers.filter((r) => r.status < 300);
        assert.equal(made.length, 3, JSON.stringify(answers.map((r) => [r.status, r.body])));
        for (const refused of answers.filter((r) => r.status >= 300)) {
          assert.equal(refused.status, 429, JSON.stringify(refused.body));
          assert.match(refused.body.detail, /^Limit of 3 sandbox\(es\) per organization exceeded/);
        }
        const pool = await http(h.url, "POST", `${API}/pools`, {
          name: "warm",
          template_name: "small",
          replicas: 1,
          wait_for_ready: false,
        });
        assert.equal(pool.status, 429, JSON.stringify(pool.body));
        assert.match(pool.body.detail, /Current usage: 3 sandboxes, Requested: 1 additional/);
        for (const r of made) await remove(r.body.name);
      },
    );

    test("CPU and memory of an organization's sandboxes together", T, async () => {
      assert.equal((await template("wide", { cpu: "100m", memory: "150Mi" })).status, 201);
      assert.equal((await template("busy", { cpu: "1", memory: "64Mi" })).status, 201);
      assert.ok((await box("wide", "wide-1")).status < 300);
      const memory = await box("small", "small-1"); // 150Mi + 64Mi > 200Mi
      assert.equal(memory.status, 429, JSON.stringify(memory.body));
      assert.match(memory.body.detail, /^Memory limit per organization exceeded/);
      await remove("wide-1");
      assert.ok((await box("busy", "busy-1")).status < 300);
      const cpu = await box("small", "small-2"); // 1 + 0.1 CPU > 1
      assert.equal(cpu.status, 429, JSON.stringify(cpu.body));
      assert.match(cpu.body.detail, /^CPU limit per organization exceeded/);
      await remove("busy-1");
      assert.ok((await box("small", "small-3")).status < 300, "room again once deleted");
    });
  });
}
