/**
 * The sandbox area (volumes, templates and their mounts, organizations' storage quota), one
 * implementation for both engines.
 *
 * Every rule that must hold under concurrency (unique names, grow-only sizes, the storage quota, no
 * deleting a mounted volume) is checked and written in one transaction that first takes the
 * organization's lock (`lockOrg`): on SQLite the IMMEDIATE transaction's write lock already serialises
 * it; on Postgres a transaction-scoped advisory lock on the organization makes concurrent renames or
 * grows of one organization run one after the other. UNIQUE (org_id, name) is the backstop.
 */
import type { Selectable } from "kysely";
import type {
  CreateTemplateResult,
  CreateVolumeResult,
  DeleteTemplateResult,
  DeleteVolumeResult,
  RenameTemplateResult,
  SandboxesRepo,
  SandboxListQuery,
  SandboxPage,
  StorageUsage,
  TemplateInput,
  TemplateRecord,
  UpdateVolumeResult,
  VolumeMount,
  VolumePatch,
  VolumeRecord,
} from "../sandbox-ports.js";
import { type Executor, orgNamed, page, type SqlDatabase, SqlRepo, type Tx } from "./database.js";
import { sql } from "./kysely.js";
import type { SandboxTemplatesTable, SandboxVolumesTable } from "./tables.js";

/** The advisory-lock space of the sandbox area's organization locks (sandbox-boxes.ts takes them too). */
const ORG_LOCK_SPACE = 726855;

/** Serialises the sandbox area's check-then-write transactions of one organization (see above). */
export const lockOrg = (database: SqlDatabase, tx: Tx, org: string) =>
  database.dialect.advisoryLock(tx, ORG_LOCK_SPACE, org);

type VolumeRow = Selectable<SandboxVolumesTable>;
type TemplateRow = Omit<Selectable<SandboxTemplatesTable>, "seq">;

const toVolume = ({ seq: _, ...volume }: VolumeRow): VolumeRecord => volume;

function toTemplate(row: TemplateRow, mounts: VolumeMount[]): TemplateRecord {
  return {
    id: row.id,
    org_id: row.org_id,
    name: row.name,
    image: row.image,
    resources: {
      cpu: row.cpu,
      memory: row.memory,
      ...(row.storage !== null ? { storage: row.storage } : {}),
    },
    volume_mounts: mounts.map((m) => ({ volume_name: m.volume_name, mount_path: m.mount_path })),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export class SqlSandboxes extends SqlRepo implements SandboxesRepo {
  // ---- organizations' usage billing ------------------------------------------------------------

  async setStorageQuota(org: string, quotaBytes: number): Promise<void> {
    await this.database.db
      .insertInto("org_usage_billing")
      .values({ org_id: org, sandbox_storage_quota_bytes: quotaBytes, updated_at: new Date().toISOString() })
      .onConflict((oc) =>
        oc.column("org_id").doUpdateSet((eb) => ({
          sandbox_storage_quota_bytes: eb.ref("excluded.sandbox_storage_quota_bytes"),
          updated_at: eb.ref("excluded.updated_at"),
        })),
      )
      .execute();
  }

  async ensureStorageQuota(org: string, quotaBytes: number): Promise<void> {
    await this.database.db
      .insertInto("org_usage_billing")
      .values({ org_id: org, sandbox_storage_quota_bytes: quotaBytes, updated_at: new Date().toISOString() })
      .onConflict((oc) => oc.column("org_id").doNothing())
      .execute();
  }

  async storageUsage(org: string): Promise<StorageUsage> {
    return this.#usage(this.database.db, org);
  }

  /** Quota and usage in one statement. */
  async #usage(ex: Executor, org: string): Promise<StorageUsage> {
    const row = await ex
      .selectNoFrom((eb) => [
        eb
          .selectFrom("org_usage_billing")
          .select("sandbox_storage_quota_bytes")
          .where("org_id", "=", org)
          .as("quota"),
        eb
          .selectFrom("sandbox_volumes")
          // SUM of a bigint is numeric on Postgres: cast back, so it comes back a number.
          .select((s) =>
            s.cast<number>(s.fn.coalesce(s.fn.sum<number>("size_bytes"), sql.lit(0)), "bigint").as("u"),
          )
          .where("org_id", "=", org)
          .as("used"),
      ])
      .executeTakeFirstOrThrow();
    return { quota_bytes: Number(row.quota ?? 0), usage_bytes: Number(row.used ?? 0) };
  }

  // ---- volumes -----------------------------------------------------------------------------------

  #volume(ex: Executor, org: string, name: string): Promise<VolumeRow | undefined> {
    return ex.selectFrom("sandbox_volumes").selectAll().where(orgNamed(org, name)).executeTakeFirst();
  }

  async createVolume(
    org: string,
    input: { id: string; name: string; size: string; size_bytes: number; storage_class: string },
  ): Promise<CreateVolumeResult> {
    const now = new Date().toISOString();
    const volume: VolumeRecord = {
      id: input.id,
      org_id: org,
      name: input.name,
      size: input.size,
      size_bytes: input.size_bytes,
      storage_class: input.storage_class,
      created_at: now,
      updated_at: now,
    };
    return this.database.transaction(async (tx): Promise<CreateVolumeResult> => {
      await lockOrg(this.database, tx, org);
      if (await this.#volume(tx, org, input.name)) return { status: "name_taken" };
      const usage = await this.#usage(tx, org);
      if (usage.usage_bytes + input.size_bytes > usage.quota_bytes) {
        return { status: "quota_exceeded", ...usage, increase_bytes: input.size_bytes };
      }
      if (!(await this.unlessDuplicate(tx.insertInto("sandbox_volumes").values(volume).execute())))
        return { status: "name_taken" };
      return { status: "created", volume };
    });
  }

  async getVolume(org: string, name: string): Promise<VolumeRecord | null> {
    const row = await this.#volume(this.database.db, org, name);
    return row ? toVolume(row) : null;
  }

  async listVolumes(org: string, query: SandboxListQuery): Promise<SandboxPage<VolumeRecord>> {
    const volumes = this.database.db.selectFrom("sandbox_volumes").selectAll().where("org_id", "=", org);
    const { items, hasMore } = await page(volumes, "sandbox_volumes", query);
    return { items: items.map(toVolume), hasMore };
  }

  async updateVolume(org: string, name: string, patch: VolumePatch): Promise<UpdateVolumeResult> {
    const updatedAt = new Date().toISOString();
    return this.database.transaction(async (tx): Promise<UpdateVolumeResult> => {
      await lockOrg(this.database, tx, org);
      const row = await this.#volume(tx, org, name);
      if (!row) return { status: "not_found" };
      const previous = toVolume(row);
      const next = { ...previous };
      if (patch.size) {
        if (patch.size.bytes < previous.size_bytes) return { status: "shrink", volume: previous };
        const increase = patch.size.bytes - previous.size_bytes;
        if (increase > 0) {
          const usage = await this.#usage(tx, org);
          if (usage.usage_bytes + increase > usage.quota_bytes) {
            return { status: "quota_exceeded", ...usage, increase_bytes: increase };
          }
        }
        next.size = patch.size.text;
        next.size_bytes = patch.size.bytes;
      }
      if (patch.name !== undefined && patch.name !== previous.name) {
        if (await this.#volume(tx, org, patch.name)) return { status: "name_taken" };
        next.name = patch.name;
      }
      if (
        next.name === previous.name &&
        next.size === previous.size &&
        next.size_bytes === previous.size_bytes
      ) {
        return { status: "updated", volume: previous, previous };
      }
      next.updated_at = updatedAt;
      const { id, name: newName, size, size_bytes } = next;
      const set = { name: newName, size, size_bytes, updated_at: updatedAt };
      const written = await this.unlessDuplicate(
        tx.updateTable("sandbox_volumes").set(set).where("id", "=", id).execute(),
      );
      return written ? { status: "updated", volume: next, previous } : { status: "name_taken" };
    });
  }

  async deleteVolume(org: string, name: string): Promise<DeleteVolumeResult> {
    return this.database.transaction(async (tx): Promise<DeleteVolumeResult> => {
      await lockOrg(this.database, tx, org);
      const row = await this.#volume(tx, org, name);
      if (!row) return { status: "not_found" };
      const users = await tx
        .selectFrom("sandbox_template_mounts as m")
        .innerJoin("sandbox_templates as t", "t.id", "m.template_id")
        .select("t.name")
        .distinct()
        .where("m.volume_id", "=", row.id)
        .orderBy("t.name")
        .execute();
      if (users.length > 0) return { status: "in_use", templates: users.map((u) => u.name) };
      await tx.deleteFrom("sandbox_volumes").where("id", "=", row.id).execute();
      return { status: "deleted", volume: toVolume(row) };
    });
  }

  async forgetVolume(org: string, id: string): Promise<boolean> {
    return this.database.transaction(async (tx) => {
      await lockOrg(this.database, tx, org);
      const mounted = await tx
        .selectFrom("sandbox_template_mounts")
        .select(sql.lit(1).as("one"))
        .where("volume_id", "=", id)
        .limit(1)
        .executeTakeFirst();
      if (mounted) return false;
      const result = await tx
        .deleteFrom("sandbox_volumes")
        .where("org_id", "=", org)
        .where("id", "=", id)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    });
  }

  // ---- templates ---------------------------------------------------------------------------------

  #templateRow(ex: Executor, org: string, name: string): Promise<TemplateRow | undefined> {
    return ex.selectFrom("sandbox_templates").selectAll().where(orgNamed(org, name)).executeTakeFirst();
  }

  /** The mounts of these templates (one statement), by template id, in mount order. */
  async #mounts(ex: Executor, templateIds: string[]): Promise<Map<string, VolumeMount[]>> {
    const byTemplate = new Map<string, VolumeMount[]>(templateIds.map((id) => [id, []]));
    if (!templateIds.length) return byTemplate;
    const rows = await ex
      .selectFrom("sandbox_template_mounts as m")
      .innerJoin("sandbox_volumes as v", "v.id", "m.volume_id")
      .select(["m.template_id", "v.name as volume_name", "m.mount_path"])
      .where("m.template_id", "in", templateIds)
      .orderBy("m.template_id")
      .orderBy("m.position")
      .execute();
    for (const r of rows) byTemplate.get(r.template_id)?.push(r);
    return byTemplate;
  }

  async #toTemplate(ex: Executor, row: TemplateRow): Promise<TemplateRecord> {
    const mounts = await this.#mounts(ex, [row.id]);
    return toTemplate(row, mounts.get(row.id) ?? []);
  }

  async createTemplate(org: string, input: TemplateInput): Promise<CreateTemplateResult> {
    const now = new Date().toISOString();
    const row: TemplateRow = {
      id: input.id,
      org_id: org,
      name: input.name,
      image: input.image,
      cpu: input.resources.cpu,
      memory: input.resources.memory,
      storage: input.resources.storage ?? null,
      created_at: now,
      updated_at: now,
    };
    return this.database.transaction(async (tx): Promise<CreateTemplateResult> => {
      await lockOrg(this.database, tx, org);
      if (await this.#templateRow(tx, org, input.name)) return { status: "name_taken" };
      const volumeIds: string[] = [];
      const missing: string[] = [];
      for (const mount of input.volume_mounts) {
        const volume = await this.#volume(tx, org, mount.volume_name);
        if (volume) volumeIds.push(volume.id);
        else if (!missing.includes(mount.volume_name)) missing.push(mount.volume_name);
      }
      if (missing.length > 0) return { status: "missing_volumes", names: missing };
      if (!(await this.unlessDuplicate(tx.insertInto("sandbox_templates").values(row).execute())))
        return { status: "name_taken" };
      if (input.volume_mounts.length) {
        await tx
          .insertInto("sandbox_template_mounts")
          .values(
            input.volume_mounts.map((mount, i) => ({
              template_id: input.id,
              position: i,
              volume_id: volumeIds[i],
              mount_path: mount.mount_path,
            })),
          )
          .execute();
      }
      return { status: "created", template: await this.#toTemplate(tx, row) };
    });
  }

  async getTemplate(org: string, name: string): Promise<TemplateRecord | null> {
    const row = await this.#templateRow(this.database.db, org, name);
    return row ? this.#toTemplate(this.database.db, row) : null;
  }

  async listTemplates(org: string, query: SandboxListQuery): Promise<SandboxPage<TemplateRecord>> {
    return this.database.transaction(async (tx) => {
      const templates = tx.selectFrom("sandbox_templates").selectAll().where("org_id", "=", org);
      const { items, hasMore } = await page(templates, "sandbox_templates", query);
      const mounts = await this.#mounts(
        tx,
        items.map((r) => r.id),
      );
      return { items: items.map((r) => toTemplate(r, mounts.get(r.id) ?? [])), hasMore };
    });
  }

  async renameTemplate(org: string, name: string, newName: string): Promise<RenameTemplateResult> {
    const updatedAt = new Date().toISOString();
    return this.database.transaction(async (tx): Promise<RenameTemplateResult> => {
      await lockOrg(this.database, tx, org);
      const row = await this.#templateRow(tx, org, name);
      if (!row) return { status: "not_found" };
      if (newName === row.name) return { status: "updated", template: await this.#toTemplate(tx, row) };
      if (await this.#templateRow(tx, org, newName)) return { status: "name_taken" };
      const set = { name: newName, updated_at: updatedAt };
      const written = await this.unlessDuplicate(
        tx.updateTable("sandbox_templates").set(set).where("id", "=", row.id).execute(),
      );
      if (!written) return { status: "name_taken" };
      return { status: "updated", template: await this.#toTemplate(tx, { ...row, ...set }) };
    });
  }

  async deleteTemplate(org: string, name: string): Promise<DeleteTemplateResult> {
    return this.database.transaction(async (tx): Promise<DeleteTemplateResult> => {
      await lockOrg(this.database, tx, org);
      const row = await this.#templateRow(tx, org, name);
      if (!row) return { status: "not_found" };
      // Warm pool members count as their pool.
      const sandboxes = await tx
        .selectFrom("sandbox_boxes")
        .select("name")
        .where("template_id", "=", row.id)
        .where("pool_id", "is", null)
        .orderBy("name")
        .execute();
      const pools = await tx
        .selectFrom("sandbox_pools")
        .select("name")
        .where("template_id", "=", row.id)
        .orderBy("name")
        .execute();
      if (sandboxes.length > 0 || pools.length > 0) {
        return { status: "in_use", sandboxes: sandboxes.map((r) => r.name), pools: pools.map((r) => r.name) };
      }
      await tx.deleteFrom("sandbox_template_mounts").where("template_id", "=", row.id).execute();
      await tx.deleteFrom("sandbox_templates").where("id", "=", row.id).execute();
      return { status: "deleted" };
    });
  }
}
