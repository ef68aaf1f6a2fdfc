import type { Statement } from "better-sqlite3";
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
import { type Db, statementCache } from "./database.js";

/**
 * The sandbox area on SQLite. Every rule that must hold under concurrency (unique names, grow-only
 * sizes, the storage quota, no deleting a mounted volume) is checked and written inside one
 * `db.transaction`, which begins IMMEDIATE (database.ts): it holds the write lock from its first read,
 * so no other request or connection can interleave between the check and the write. UNIQUE (org_id, name)
 * is the backstop.
 */

interface VolumeRow extends VolumeRecord {
  seq: number;
}

interface TemplateRow {
  seq: number;
  id: string;
  org_id: string;
  name: string;
  image: string;
  cpu: string;
  memory: string;
  storage: string | null;
  created_at: string;
  updated_at: string;
}

const toVolume = ({ seq: _, ...volume }: VolumeRow): VolumeRecord => volume;

const isUniqueViolation = (err: unknown): boolean =>
  (err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE";

export class SqliteSandboxes implements SandboxesRepo {
  readonly #db: Db;
  readonly #sql: (sql: string) => Statement<any[], any>;

  constructor(db: Db) {
    this.#db = db;
    this.#sql = statementCache(db);
  }

  // ---- organizations' usage billing ------------------------------------------------------------

  async setStorageQuota(org: string, quotaBytes: number): Promise<void> {
    this.#sql(
      `INSERT INTO org_usage_billing (org_id, sandbox_storage_quota_bytes, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (org_id) DO UPDATE SET sandbox_storage_quota_bytes = excluded.sandbox_storage_quota_bytes,
         updated_at = excluded.updated_at`,
    ).run(org, quotaBytes, new Date().toISOString());
  }

  async ensureStorageQuota(org: string, quotaBytes: number): Promise<void> {
    this.#sql(
      `INSERT INTO org_usage_billing (org_id, sandbox_storage_quota_bytes, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (org_id) DO NOTHING`,
    ).run(org, quotaBytes, new Date().toISOString());
  }

  async storageUsage(org: string): Promise<StorageUsage> {
    return this.#usage(org);
  }

  #usage(org: string): StorageUsage {
    const quota = this.#sql(
      "SELECT sandbox_storage_quota_bytes AS q FROM org_usage_billing WHERE org_id = ?",
    ).get(org) as { q: number } | undefined;
    const { used } = this.#sql(
      "SELECT COALESCE(SUM(size_bytes), 0) AS used FROM sandbox_volumes WHERE org_id = ?",
    ).get(org) as { used: number };
    return { quota_bytes: quota?.q ?? 0, usage_bytes: used };
  }

  // ---- volumes -----------------------------------------------------------------------------------

  #volume(org: string, name: string): VolumeRow | undefined {
    return this.#sql("SELECT * FROM sandbox_volumes WHERE org_id = ? AND name = ?").get(org, name) as
      | VolumeRow
      | undefined;
  }

  async createVolume(
    org: string,
    input: { id: string; name: string; size: string; size_bytes: number; storage_class: string },
  ): Promise<CreateVolumeResult> {
    return this.#db.transaction((): CreateVolumeResult => {
      if (this.#volume(org, input.name)) return { status: "name_taken" };
      const usage = this.#usage(org);
      if (usage.usage_bytes + input.size_bytes > usage.quota_bytes) {
        return { status: "quota_exceeded", ...usage, increase_bytes: input.size_bytes };
      }
      const now = new Date().toISOString();
      const volume: VolumeRecord = { ...input, org_id: org, created_at: now, updated_at: now };
      try {
        this.#sql(
          `INSERT INTO sandbox_volumes (id, org_id, name, size, size_bytes, storage_class, created_at, updated_at)
           VALUES (@id, @org_id, @name, @size, @size_bytes, @storage_class, @created_at, @updated_at)`,
        ).run(volume);
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      return { status: "created", volume };
    })();
  }

  async getVolume(org: string, name: string): Promise<VolumeRecord | null> {
    const row = this.#volume(org, name);
    return row ? toVolume(row) : null;
  }

  async listVolumes(org: string, query: SandboxListQuery): Promise<SandboxPage<VolumeRecord>> {
    const rows = this.#page<VolumeRow>("sandbox_volumes", org, query);
    return { items: rows.items.map(toVolume), hasMore: rows.hasMore };
  }

  #page<R>(table: "sandbox_volumes" | "sandbox_templates", org: string, q: SandboxListQuery): SandboxPage<R> {
    const filter = q.name_contains ? "AND instr(lower(name), lower(?)) > 0" : "";
    const args: unknown[] = [org, ...(q.name_contains ? [q.name_contains] : []), q.limit + 1, q.offset];
    const rows = this.#sql(
      `SELECT * FROM ${table} WHERE org_id = ? ${filter} ORDER BY seq LIMIT ? OFFSET ?`,
    ).all(...args) as R[];
    return { items: rows.slice(0, q.limit), hasMore: rows.length > q.limit };
  }

  async updateVolume(org: string, name: string, patch: VolumePatch): Promise<UpdateVolumeResult> {
    return this.#db.transaction((): UpdateVolumeResult => {
      const row = this.#volume(org, name);
      if (!row) return { status: "not_found" };
      const previous = toVolume(row);
      const next = { ...previous };
      if (patch.size) {
        if (patch.size.bytes < previous.size_bytes) return { status: "shrink", volume: previous };
        const increase = patch.size.bytes - previous.size_bytes;
        if (increase > 0) {
          const usage = this.#usage(org);
          if (usage.usage_bytes + increase > usage.quota_bytes) {
            return { status: "quota_exceeded", ...usage, increase_bytes: increase };
          }
        }
        next.size = patch.size.text;
        next.size_bytes = patch.size.bytes;
      }
      if (patch.name !== undefined && patch.name !== previous.name) {
        if (this.#volume(org, patch.name)) return { status: "name_taken" };
        next.name = patch.name;
      }
      if (
        next.name === previous.name &&
        next.size === previous.size &&
        next.size_bytes === previous.size_bytes
      ) {
        return { status: "updated", volume: previous, previous };
      }
      next.updated_at = new Date().toISOString();
      try {
        this.#sql(
          "UPDATE sandbox_volumes SET name = @name, size = @size, size_bytes = @size_bytes, updated_at = @updated_at WHERE id = @id",
        ).run(next);
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      return { status: "updated", volume: next, previous };
    })();
  }

  async deleteVolume(org: string, name: string): Promise<DeleteVolumeResult> {
    return this.#db.transaction((): DeleteVolumeResult => {
      const row = this.#volume(org, name);
      if (!row) return { status: "not_found" };
      const users = this.#sql(
        `SELECT DISTINCT t.name FROM sandbox_template_mounts m JOIN sandbox_templates t ON t.id = m.template_id
         WHERE m.volume_id = ? ORDER BY t.name`,
      ).all(row.id) as { name: string }[];
      if (users.length > 0) return { status: "in_use", templates: users.map((u) => u.name) };
      this.#sql("DELETE FROM sandbox_volumes WHERE id = ?").run(row.id);
      return { status: "deleted", volume: toVolume(row) };
    })();
  }

  async forgetVolume(org: string, id: string): Promise<boolean> {
    return this.#db.transaction((): boolean => {
      if (this.#sql("SELECT 1 FROM sandbox_template_mounts WHERE volume_id = ? LIMIT 1").get(id))
        return false;
      return this.#sql("DELETE FROM sandbox_volumes WHERE org_id = ? AND id = ?").run(org, id).changes > 0;
    })();
  }

  // ---- templates ---------------------------------------------------------------------------------

  #templateRow(org: string, name: string): TemplateRow | undefined {
    return this.#sql("SELECT * FROM sandbox_templates WHERE org_id = ? AND name = ?").get(org, name) as
      | TemplateRow
      | undefined;
  }

  #toTemplate(row: TemplateRow): TemplateRecord {
    const mounts = this.#sql(
      `SELECT v.name AS volume_name, m.mount_path FROM sandbox_template_mounts m
       JOIN sandbox_volumes v ON v.id = m.volume_id WHERE m.template_id = ? ORDER BY m.position`,
    ).all(row.id) as VolumeMount[];
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

  async createTemplate(org: string, input: TemplateInput): Promise<CreateTemplateResult> {
    return this.#db.transaction((): CreateTemplateResult => {
      if (this.#templateRow(org, input.name)) return { status: "name_taken" };
      const volumeIds: string[] = [];
      const missing: string[] = [];
      for (const mount of input.volume_mounts) {
        const volume = this.#volume(org, mount.volume_name);
        if (volume) volumeIds.push(volume.id);
        else if (!missing.includes(mount.volume_name)) missing.push(mount.volume_name);
      }
      if (missing.length > 0) return { status: "missing_volumes", names: missing };
      const now = new Date().toISOString();
      const row: Omit<TemplateRow, "seq"> = {
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
      try {
        this.#sql(
          `INSERT INTO sandbox_templates (id, org_id, name, image, cpu, memory, storage, created_at, updated_at)
           VALUES (@id, @org_id, @name, @image, @cpu, @memory, @storage, @created_at, @updated_at)`,
        ).run(row);
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      const insertMount = this.#sql(
        "INSERT INTO sandbox_template_mounts (template_id, position, volume_id, mount_path) VALUES (?, ?, ?, ?)",
      );
      input.volume_mounts.forEach((mount, i) => {
        insertMount.run(input.id, i, volumeIds[i], mount.mount_path);
      });
      return { status: "created", template: this.#toTemplate({ ...row, seq: 0 }) };
    })();
  }

  async getTemplate(org: string, name: string): Promise<TemplateRecord | null> {
    const row = this.#templateRow(org, name);
    return row ? this.#toTemplate(row) : null;
  }

  async listTemplates(org: string, query: SandboxListQuery): Promise<SandboxPage<TemplateRecord>> {
    return this.#db.transaction(() => {
      const rows = this.#page<TemplateRow>("sandbox_templates", org, query);
      return { items: rows.items.map((r) => this.#toTemplate(r)), hasMore: rows.hasMore };
    })();
  }

  async renameTemplate(org: string, name: string, newName: string): Promise<RenameTemplateResult> {
    return this.#db.transaction((): RenameTemplateResult => {
      const row = this.#templateRow(org, name);
      if (!row) return { status: "not_found" };
      if (newName === row.name) return { status: "updated", template: this.#toTemplate(row) };
      if (this.#templateRow(org, newName)) return { status: "name_taken" };
      const updated = { ...row, name: newName, updated_at: new Date().toISOString() };
      try {
        this.#sql("UPDATE sandbox_templates SET name = @name, updated_at = @updated_at WHERE id = @id").run(
          updated,
        );
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      return { status: "updated", template: this.#toTemplate(updated) };
    })();
  }

  async deleteTemplate(org: string, name: string): Promise<DeleteTemplateResult> {
    return this.#db.transaction((): DeleteTemplateResult => {
      const row = this.#templateRow(org, name);
      if (!row) return { status: "not_found" };
      const names = (table: string, where = "") =>
        (
          this.#sql(`SELECT name FROM ${table} WHERE template_id = ? ${where} ORDER BY name`).all(row.id) as {
            name: string;
          }[]
        ).map((r) => r.name);
      const sandboxes = names("sandbox_boxes", "AND pool_id IS NULL"); // warm pool members count as their pool
      const pools = names("sandbox_pools");
      if (sandboxes.length > 0 || pools.length > 0) return { status: "in_use", sandboxes, pools };
      this.#sql("DELETE FROM sandbox_template_mounts WHERE template_id = ?").run(row.id);
      this.#sql("DELETE FROM sandbox_templates WHERE id = ?").run(row.id);
      return { status: "deleted" };
    })();
  }
}
