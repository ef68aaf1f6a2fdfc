/**
 * The sandbox area (volumes, templates and their mounts, organizations' storage quota), one
 * implementation for both engines.
 *
 * Every rule that must hold under concurrency (unique names, grow-only sizes, the storage quota, no
 * deleting a mounted volume) is checked and written in one transaction that first takes the
 * organization's lock (`inOrg`): on SQLite the IMMEDIATE transaction's write lock already serialises
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
import {
  all,
  changed,
  type Executor,
  first,
  orgNamed,
  page,
  pageQuery,
  type SqlDatabase,
  SqlRepo,
  type TxSteps,
  toPage,
  unlessDuplicate,
} from "./database.js";
import type { Dialect } from "./dialect.js";
import { sql } from "./kysely.js";
import type { SandboxTemplatesTable, SandboxVolumesTable } from "./tables.js";

/** The advisory-lock space of the sandbox area's organization locks (sandbox-boxes.ts takes them too). */
const ORG_LOCK_SPACE = 726855;

/**
 * Runs `body` (given the engine's dialect too) in one transaction that first takes the organization's
 * lock: the sandbox area's check-then-write transactions of one organization run one after the other.
 */
export function inOrg<T>(
  database: SqlDatabase,
  org: string,
  body: (tx: Executor, dialect: Dialect) => TxSteps<T>,
): Promise<T> {
  const { dialect } = database;
  return database.transaction(function* (tx) {
    const lock = dialect.advisoryLock(ORG_LOCK_SPACE, org);
    // A raw statement is not `Compilable` without a builder: compiled with the transaction's.
    if (lock) yield lock.compile(tx);
    return yield* body(tx, dialect);
  });
}

/** One mount of the volume (`volume_id`) or of the template (`template_id`), if there is one. */
export const mounted = (ex: Executor, column: "volume_id" | "template_id", id: string) =>
  ex.selectFrom("sandbox_template_mounts").select(sql.lit(1).as("one")).where(column, "=", id).limit(1);

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

/** Quota and usage in one statement (one row, for `toUsage`). */
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

const toUsage = (row: { quota: number | null; used: number | null }): StorageUsage => ({
  quota_bytes: Number(row.quota ?? 0),
  usage_bytes: Number(row.used ?? 0),
});

const volume = (ex: Executor, org: string, name: string) =>
  ex.selectFrom("sandbox_volumes").selectAll().where(orgNamed(org, name));

const templateRow = (ex: Executor, org: string, name: string) =>
  ex.selectFrom("sandbox_templates").selectAll().where(orgNamed(org, name));

/** The mounts of these templates (one statement), by template, in mount order. */
const mounts = (ex: Executor, templateIds: string[]) =>
  ex
    .selectFrom("sandbox_template_mounts as m")
    .innerJoin("sandbox_volumes as v", "v.id", "m.volume_id")
    .select(["m.template_id", "v.name as volume_name", "m.mount_path"])
    .where("m.template_id", "in", templateIds)
    .orderBy("m.template_id")
    .orderBy("m.position");

/** In a transaction: the template with its mounts. */
function* withMounts(tx: Executor, row: TemplateRow): TxSteps<TemplateRecord> {
  return toTemplate(row, yield* all(mounts(tx, [row.id])));
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
    return toUsage(await usage(this.database.db, org).executeTakeFirstOrThrow());
  }

  // ---- volumes -----------------------------------------------------------------------------------

  async createVolume(
    org: string,
    input: { id: string; name: string; size: string; size_bytes: number; storage_class: string },
  ): Promise<CreateVolumeResult> {
    const now = new Date().toISOString();
    const record: VolumeRecord = {
      id: input.id,
      org_id: org,
      name: input.name,
      size: input.size,
      size_bytes: input.size_bytes,
      storage_class: input.storage_class,
      created_at: now,
      updated_at: now,
    };
    return inOrg(this.database, org, function* (tx, dialect): TxSteps<CreateVolumeResult> {
      if (yield* first(volume(tx, org, input.name))) return { status: "name_taken" };
      const used = toUsage((yield* first(usage(tx, org)))!);
      if (used.usage_bytes + input.size_bytes > used.quota_bytes) {
        return { status: "quota_exceeded", ...used, increase_bytes: input.size_bytes };
      }
      const insert = tx.insertInto("sandbox_volumes").values(record);
      const inserted = yield* unlessDuplicate(dialect, changed(insert));
      return inserted === undefined ? { status: "name_taken" } : { status: "created", volume: record };
    });
  }

  async getVolume(org: string, name: string): Promise<VolumeRecord | null> {
    const row = await volume(this.database.db, org, name).executeTakeFirst();
    return row ? toVolume(row) : null;
  }

  async listVolumes(org: string, query: SandboxListQuery): Promise<SandboxPage<VolumeRecord>> {
    const volumes = this.database.db.selectFrom("sandbox_volumes").selectAll().where("org_id", "=", org);
    const { items, hasMore } = await page(volumes, "sandbox_volumes", query);
    return { items: items.map(toVolume), hasMore };
  }

  async updateVolume(org: string, name: string, patch: VolumePatch): Promise<UpdateVolumeResult> {
    const updatedAt = new Date().toISOString();
    return inOrg(this.database, org, function* (tx, dialect): TxSteps<UpdateVolumeResult> {
      const row = yield* first(volume(tx, org, name));
      if (!row) return { status: "not_found" };
      const previous = toVolume(row);
      const next = { ...previous };
      if (patch.size) {
        if (patch.size.bytes < previous.size_bytes) return { status: "shrink", volume: previous };
        const increase = patch.size.bytes - previous.size_bytes;
        if (increase > 0) {
          const used = toUsage((yield* first(usage(tx, org)))!);
          if (used.usage_bytes + increase > used.quota_bytes) {
            return { status: "quota_exceeded", ...used, increase_bytes: increase };
          }
        }
        next.size = patch.size.text;
        next.size_bytes = patch.size.bytes;
      }
      if (patch.name !== undefined && patch.name !== previous.name) {
        if (yield* first(volume(tx, org, patch.name))) return { status: "name_taken" };
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
      const update = tx.updateTable("sandbox_volumes").set(set).where("id", "=", id);
      const written = yield* unlessDuplicate(dialect, changed(update));
      return written !== undefined ? { status: "updated", volume: next, previous } : { status: "name_taken" };
    });
  }

  async deleteVolume(org: string, name: string): Promise<DeleteVolumeResult> {
    return inOrg(this.database, org, function* (tx): TxSteps<DeleteVolumeResult> {
      const row = yield* first(volume(tx, org, name));
      if (!row) return { status: "not_found" };
      const users = yield* all(
        tx
          .selectFrom("sandbox_template_mounts as m")
          .innerJoin("sandbox_templates as t", "t.id", "m.template_id")
          .select("t.name")
          .distinct()
          .where("m.volume_id", "=", row.id)
          .orderBy("t.name"),
      );
      if (users.length > 0) return { status: "in_use", templates: users.map((u) => u.name) };
      yield* changed(tx.deleteFrom("sandbox_volumes").where("id", "=", row.id));
      return { status: "deleted", volume: toVolume(row) };
    });
  }

  async forgetVolume(org: string, id: string): Promise<boolean> {
    return inOrg(this.database, org, function* (tx) {
      if (yield* first(mounted(tx, "volume_id", id))) return false;
      return (
        (yield* changed(tx.deleteFrom("sandbox_volumes").where("org_id", "=", org).where("id", "=", id))) > 0
      );
    });
  }

  // ---- templates ---------------------------------------------------------------------------------

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
    return inOrg(this.database, org, function* (tx, dialect): TxSteps<CreateTemplateResult> {
      if (yield* first(templateRow(tx, org, input.name))) return { status: "name_taken" };
      const volumeIds: string[] = [];
      const missing: string[] = [];
      for (const mount of input.volume_mounts) {
        const found = yield* first(volume(tx, org, mount.volume_name));
        if (found) volumeIds.push(found.id);
        else if (!missing.includes(mount.volume_name)) missing.push(mount.volume_name);
      }
      if (missing.length > 0) return { status: "missing_volumes", names: missing };
      const insert = tx.insertInto("sandbox_templates").values(row);
      const inserted = yield* unlessDuplicate(dialect, changed(insert));
      if (inserted === undefined) return { status: "name_taken" };
      if (input.volume_mounts.length) {
        yield* changed(
          tx.insertInto("sandbox_template_mounts").values(
            input.volume_mounts.map((mount, i) => ({
              template_id: input.id,
              position: i,
              volume_id: volumeIds[i],
              mount_path: mount.mount_path,
            })),
          ),
        );
      }
      return { status: "created", template: yield* withMounts(tx, row) };
    });
  }

  async getTemplate(org: string, name: string): Promise<TemplateRecord | null> {
    const { db } = this.database;
    const row = await templateRow(db, org, name).executeTakeFirst();
    return row ? toTemplate(row, await mounts(db, [row.id]).execute()) : null;
  }

  async listTemplates(org: string, query: SandboxListQuery): Promise<SandboxPage<TemplateRecord>> {
    return this.database.transaction(function* (tx) {
      const templates = tx.selectFrom("sandbox_templates").selectAll().where("org_id", "=", org);
      const { items, hasMore } = toPage(yield* all(pageQuery(templates, "sandbox_templates", query)), query);
      const byTemplate = new Map<string, VolumeMount[]>(items.map((r) => [r.id, []]));
      if (items.length) {
        for (const m of yield* all(mounts(tx, [...byTemplate.keys()])))
          byTemplate.get(m.template_id)?.push(m);
      }
      return { items: items.map((r) => toTemplate(r, byTemplate.get(r.id) ?? [])), hasMore };
    });
  }

  async renameTemplate(org: string, name: string, newName: string): Promise<RenameTemplateResult> {
    const updatedAt = new Date().toISOString();
    return inOrg(this.database, org, function* (tx, dialect): TxSteps<RenameTemplateResult> {
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

  async deleteTemplate(org: string, name: string): Promise<DeleteTemplateResult> {
    return inOrg(this.database, org, function* (tx): TxSteps<DeleteTemplateResult> {
      const row = yield* first(templateRow(tx, org, name));
      if (!row) return { status: "not_found" };
      // Warm pool members count as their pool.
      const sandboxes = yield* all(
        tx
          .selectFrom("sandbox_boxes")
          .select("name")
          .where("template_id", "=", row.id)
          .where("pool_id", "is", null)
          .orderBy("name"),
      );
      const pools = yield* all(
        tx.selectFrom("sandbox_pools").select("name").where("template_id", "=", row.id).orderBy("name"),
      );
      if (sandboxes.length > 0 || pools.length > 0) {
        return { status: "in_use", sandboxes: sandboxes.map((r) => r.name), pools: pools.map((r) => r.name) };
      }
      yield* changed(tx.deleteFrom("sandbox_template_mounts").where("template_id", "=", row.id));
      yield* changed(tx.deleteFrom("sandbox_templates").where("id", "=", row.id));
      return { status: "deleted" };
    });
  }
}
