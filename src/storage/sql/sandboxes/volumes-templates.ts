/** The sandbox area's volumes, templates and their mounts, and organizations' storage quota. */
import type { Insertable, SelectQueryBuilder } from "kysely";
import type * as Port from "../../sandbox-ports.js";
import { all, changed, type Executor, first, type TxSteps } from "../database.js";
import { fromExcluded, sql } from "../kysely.js";
import type { Row, Tables } from "../tables.js";
import {
  mounted,
  orgNamed,
  page,
  pageQuery,
  SandboxRepo,
  storedMetadata,
  templateRow,
  toPage,
  unlessDuplicate,
} from "./repo.js";

type VolumeRow = Row<"sandbox_volumes">;
type TemplateRow = Omit<Row<"sandbox_templates">, "seq"> & { seq?: number };
const toVolume = ({ seq: _, metadata, ...volume }: VolumeRow): Port.VolumeRecord => ({
  ...volume,
  metadata: JSON.parse(metadata),
});

const toTemplate = (
  { seq: _, cpu, memory, storage, metadata, ...row }: TemplateRow,
  mounts: Port.VolumeMount[],
): Port.TemplateRecord => ({
  ...row,
  metadata: JSON.parse(metadata),
  resources: { cpu, memory, ...(storage !== null ? { storage } : {}) },
  volume_mounts: mounts.map(({ volume_name, mount_path }) => ({ volume_name, mount_path })),
});

const usage = (ex: Executor, org: string) =>
  ex.selectNoFrom((eb) => [
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
  ]);

const toUsage = (row: { quota: number | null; used: number | null }): Port.StorageUsage => ({
  quota_bytes: Number(row.quota ?? 0),
  usage_bytes: Number(row.used ?? 0),
});

/** The refusal when `increase` bytes more would take the organization past its quota. */
function* overQuota(tx: Executor, org: string, increase: number): TxSteps<Port.QuotaRefusal | undefined> {
  const used = toUsage((yield* first(usage(tx, org)))!);
  if (used.usage_bytes + increase > used.quota_bytes) {
    return { status: "quota_exceeded", ...used, increase_bytes: increase };
  }
}

const volume = (ex: Executor, org: string, name: string) =>
  ex.selectFrom("sandbox_volumes").selectAll().where(orgNamed(org, name));
const mounts = (ex: Executor, templateIds: string[]) =>
  ex
    .selectFrom("sandbox_template_mounts as m")
    .innerJoin("sandbox_volumes as v", "v.id", "m.volume_id")
    .select(["m.template_id", "v.name as volume_name", "m.mount_path"])
    .where("m.template_id", "in", templateIds)
    .orderBy("m.template_id")
    .orderBy("m.position");

/** The names the query selects, sorted: what still uses a volume or a template, so it is not deleted. */
function* namesOf(query: SelectQueryBuilder<any, any, { name: string }>): TxSteps<string[]> {
  return (yield* all(query.orderBy("name"))).map((r) => r.name);
}

function* withMounts(tx: Executor, row: TemplateRow): TxSteps<Port.TemplateRecord> {
  return toTemplate(row, yield* all(mounts(tx, [row.id])));
}

export class SqlSandboxes extends SandboxRepo implements Port.SandboxesRepo {
  #billing(org: string, quotaBytes: number) {
    return this.database.db
      .insertInto("org_usage_billing")
      .values({ org_id: org, sandbox_storage_quota_bytes: quotaBytes, updated_at: new Date().toISOString() });
  }

  async setStorageQuota(org: string, quotaBytes: number): Promise<void> {
    await this.#billing(org, quotaBytes)
      .onConflict((oc) =>
        oc.column("org_id").doUpdateSet(fromExcluded(["sandbox_storage_quota_bytes", "updated_at"])),
      )
      .execute();
  }

  async ensureStorageQuota(org: string, quotaBytes: number): Promise<void> {
    await this.#billing(org, quotaBytes)
      .onConflict((oc) => oc.column("org_id").doNothing())
      .execute();
  }

  async storageUsage(org: string): Promise<Port.StorageUsage> {
    return toUsage(await usage(this.database.db, org).executeTakeFirstOrThrow());
  }

  async createVolume(org: string, input: Port.VolumeInput): Promise<Port.CreateVolumeResult> {
    const now = new Date().toISOString();
    const record: Port.VolumeRecord = {
      ...input,
      metadata: input.metadata ?? {},
      org_id: org,
      created_at: now,
      updated_at: now,
    };
    return this.inOrg(org, function* (tx, dialect): TxSteps<Port.CreateVolumeResult> {
      if (yield* first(volume(tx, org, input.name))) return { status: "name_taken" };
      const refused = yield* overQuota(tx, org, input.size_bytes);
      if (refused) return refused;
      const insert = tx
        .insertInto("sandbox_volumes")
        .values({ ...record, metadata: storedMetadata(record.metadata) });
      const inserted = yield* unlessDuplicate(dialect, changed(insert));
      return inserted === undefined ? { status: "name_taken" } : { status: "created", volume: record };
    });
  }

  async getVolume(org: string, name: string): Promise<Port.VolumeRecord | null> {
    return this.recordOrNull(volume(this.database.db, org, name), toVolume);
  }

  async listVolumes(org: string, query: Port.SandboxListQuery): Promise<Port.SandboxPage<Port.VolumeRecord>> {
    const volumes = this.database.db.selectFrom("sandbox_volumes").selectAll().where("org_id", "=", org);
    return page(volumes, this.dialect, "sandbox_volumes", query, toVolume);
  }

  async updateVolume(org: string, name: string, patch: Port.VolumePatch): Promise<Port.UpdateVolumeResult> {
    const updatedAt = new Date().toISOString();
    return this.inOrg(org, function* (tx, dialect): TxSteps<Port.UpdateVolumeResult> {
      const row = yield* first(volume(tx, org, name));
      if (!row) return { status: "not_found" };
      const previous = toVolume(row);
      const { name: newName = name, size = { text: previous.size, bytes: previous.size_bytes } } = patch;
      const increase = size.bytes - previous.size_bytes;
      if (increase < 0) return { status: "shrink", volume: previous };
      const refused = increase > 0 ? yield* overQuota(tx, org, increase) : undefined;
      if (refused) return refused;
      const renamed = newName !== previous.name;
      if (renamed && (yield* first(volume(tx, org, newName)))) return { status: "name_taken" };
      if (!renamed && size.text === previous.size && increase === 0) {
        return { status: "updated", volume: previous, previous };
      }
      const set = { name: newName, size: size.text, size_bytes: size.bytes, updated_at: updatedAt };
      const update = tx.updateTable("sandbox_volumes").set(set).where("id", "=", row.id);
      const written = yield* unlessDuplicate(dialect, changed(update));
      const next = { ...previous, ...set };
      return written !== undefined ? { status: "updated", volume: next, previous } : { status: "name_taken" };
    });
  }

  async deleteVolume(org: string, name: string): Promise<Port.DeleteVolumeResult> {
    return this.inOrg(org, function* (tx): TxSteps<Port.DeleteVolumeResult> {
      const row = yield* first(volume(tx, org, name));
      if (!row) return { status: "not_found" };
      const templates = yield* namesOf(
        tx
          .selectFrom("sandbox_template_mounts as m")
          .innerJoin("sandbox_templates as t", "t.id", "m.template_id")
          .select("t.name")
          .distinct()
          .where("m.volume_id", "=", row.id),
      );
      if (templates.length > 0) return { status: "in_use", templates };
      yield* changed(tx.deleteFrom("sandbox_volumes").where("id", "=", row.id));
      return { status: "deleted", volume: toVolume(row) };
    });
  }

  async forgetVolume(org: string, id: string): Promise<boolean> {
    return this.inOrg(org, function* (tx) {
      if (yield* first(mounted(tx, "volume_id", id))) return false;
      const forget = tx.deleteFrom("sandbox_volumes").where("org_id", "=", org).where("id", "=", id);
      return (yield* changed(forget)) > 0;
    });
  }

  async createTemplate(org: string, input: Port.TemplateInput): Promise<Port.CreateTemplateResult> {
    const now = new Date().toISOString();
    const { volume_mounts, resources, metadata, ...fields } = input;
    const { cpu, memory, storage = null } = resources;
    const row = {
      ...fields,
      metadata: storedMetadata(metadata),
      org_id: org,
      cpu,
      memory,
      storage,
      created_at: now,
      updated_at: now,
    };
    return this.inOrg(org, function* (tx, dialect): TxSteps<Port.CreateTemplateResult> {
      if (yield* first(templateRow(tx, org, input.name))) return { status: "name_taken" };
      const mountRows: Insertable<Tables["sandbox_template_mounts"]>[] = [];
      const missing: string[] = [];
      for (const [position, { volume_name, mount_path }] of volume_mounts.entries()) {
        const found = yield* first(volume(tx, org, volume_name));
        if (found) mountRows.push({ template_id: input.id, position, volume_id: found.id, mount_path });
        else if (!missing.includes(volume_name)) missing.push(volume_name);
      }
      if (missing.length > 0) return { status: "missing_volumes", names: missing };
      const insert = tx.insertInto("sandbox_templates").values(row);
      const inserted = yield* unlessDuplicate(dialect, changed(insert));
      if (inserted === undefined) return { status: "name_taken" };
      if (mountRows.length) yield* changed(tx.insertInto("sandbox_template_mounts").values(mountRows));
      return { status: "created", template: yield* withMounts(tx, row) };
    });
  }

  async getTemplate(org: string, name: string): Promise<Port.TemplateRecord | null> {
    const { db } = this.database;
    const row = await templateRow(db, org, name).executeTakeFirst();
    return row ? toTemplate(row, await mounts(db, [row.id]).execute()) : null;
  }

  async listTemplates(org: string, query: Port.SandboxListQuery) {
    return this.transaction(function* (tx) {
      const templates = tx.selectFrom("sandbox_templates").selectAll().where("org_id", "=", org);
      const rows = yield* all(pageQuery(templates, this.dialect, "sandbox_templates", query));
      const ids = rows.slice(0, query.limit).map((r) => r.id);
      const found = ids.length ? yield* all(mounts(tx, ids)) : [];
      const mountsOf = (id: string) => found.filter((m) => m.template_id === id);
      return toPage(rows, query, (r) => toTemplate(r, mountsOf(r.id)));
    });
  }

  async renameTemplate(org: string, name: string, newName: string): Promise<Port.RenameTemplateResult> {
    const updatedAt = new Date().toISOString();
    return this.inOrg(org, function* (tx, dialect): TxSteps<Port.RenameTemplateResult> {
      const row = yield* first(templateRow(tx, org, name));
      if (!row) return { status: "not_found" };
      if (newName === row.name) return { status: "updated", template: yield* withMounts(tx, row) };
      if (yield* first(templateRow(tx, org, newName))) return { status: "name_taken" };
      const set = { name: newName, updated_at: updatedAt };
      const update = tx.updateTable("sandbox_templates").set(set).where("id", "=", row.id);
      const written = yield* unlessDuplicate(dialect, changed(update));
      if (written === undefined) return { status: "name_taken" };
      return { status: "updated", template: yield* withMounts(tx, { ...row, ...set }) };
    });
  }

  async deleteTemplate(org: string, name: string): Promise<Port.DeleteTemplateResult> {
    return this.inOrg(org, function* (tx): TxSteps<Port.DeleteTemplateResult> {
      const row = yield* first(templateRow(tx, org, name));
      if (!row) return { status: "not_found" };
      // Warm pool members count as their pool.
      const unpooledBoxes = tx.selectFrom("sandbox_boxes").select("name").where("pool_id", "is", null);
      const sandboxes = yield* namesOf(unpooledBoxes.where("template_id", "=", row.id));
      const pools = yield* namesOf(
        tx.selectFrom("sandbox_pools").select("name").where("template_id", "=", row.id),
      );
      if (sandboxes.length > 0 || pools.length > 0) return { status: "in_use", sandboxes, pools };
      yield* changed(tx.deleteFrom("sandbox_template_mounts").where("template_id", "=", row.id));
      yield* changed(tx.deleteFrom("sandbox_templates").where("id", "=", row.id));
      return { status: "deleted" };
    });
  }
}
