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
import type { PgDatabase, Queryable } from "./database.js";

/**
 * The sandbox area on Postgres, the twin of sqlite/sandboxes.ts. SQLite's single writer makes each
 * check-then-write atomic; here every transaction that checks a rule of an organization (names, quota,
 * mounts) first takes a transaction-scoped advisory lock on that organization, so concurrent renames or
 * grows of one organization run one after the other. UNIQUE (org_id, name) stays the backstop.
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

const isUniqueViolation = (err: unknown): boolean => (err as { code?: string }).code === "23505";

const lockOrg = (c: Queryable, org: string) =>
  c.query("SELECT pg_advisory_xact_lock(726855, hashtext($1))", [org]);

export class PgSandboxes implements SandboxesRepo {
  readonly #db: PgDatabase;

  constructor(db: PgDatabase) {
    this.#db = db;
  }

  async setStorageQuota(org: string, quotaBytes: number): Promise<void> {
    await this.#db.query(
      `INSERT INTO org_usage_billing (org_id, sandbox_storage_quota_bytes, updated_at) VALUES ($1, $2, $3)
       ON CONFLICT (org_id) DO UPDATE SET sandbox_storage_quota_bytes = excluded.sandbox_storage_quota_bytes,
         updated_at = excluded.updated_at`,
      [org, quotaBytes, new Date().toISOString()],
    );
  }

  async ensureStorageQuota(org: string, quotaBytes: number): Promise<void> {
    await this.#db.query(
      `INSERT INTO org_usage_billing (org_id, sandbox_storage_quota_bytes, updated_at) VALUES ($1, $2, $3)
       ON CONFLICT (org_id) DO NOTHING`,
      [org, quotaBytes, new Date().toISOString()],
    );
  }

  async storageUsage(org: string): Promise<StorageUsage> {
    return this.#usage(this.#db, org);
  }

  async #usage(c: Queryable, org: string): Promise<StorageUsage> {
    const quota = await c.query<{ q: number }>(
      "SELECT sandbox_storage_quota_bytes AS q FROM org_usage_billing WHERE org_id = $1",
      [org],
    );
    const used = await c.query<{ used: number }>(
      "SELECT COALESCE(SUM(size_bytes), 0)::bigint AS used FROM sandbox_volumes WHERE org_id = $1",
      [org],
    );
    return { quota_bytes: quota.rows[0]?.q ?? 0, usage_bytes: used.rows[0].used };
  }

  async #volume(c: Queryable, org: string, name: string): Promise<VolumeRow | undefined> {
    const { rows } = await c.query<VolumeRow>(
      "SELECT * FROM sandbox_volumes WHERE org_id = $1 AND name = $2",
      [org, name],
    );
    return rows[0];
  }

  async createVolume(
    org: string,
    input: { id: string; name: string; size: string; size_bytes: number; storage_class: string },
  ): Promise<CreateVolumeResult> {
    return this.#db.tx(async (c): Promise<CreateVolumeResult> => {
      await lockOrg(c, org);
      if (await this.#volume(c, org, input.name)) return { status: "name_taken" };
      const usage = await this.#usage(c, org);
      if (usage.usage_bytes + input.size_bytes > usage.quota_bytes) {
        return { status: "quota_exceeded", ...usage, increase_bytes: input.size_bytes };
      }
      const now = new Date().toISOString();
      const volume: VolumeRecord = { ...input, org_id: org, created_at: now, updated_at: now };
      try {
        await c.query(
          `INSERT INTO sandbox_volumes (id, org_id, name, size, size_bytes, storage_class, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
          [volume.id, org, volume.name, volume.size, volume.size_bytes, volume.storage_class, now],
        );
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      return { status: "created", volume };
    });
  }

  async getVolume(org: string, name: string): Promise<VolumeRecord | null> {
    const row = await this.#volume(this.#db, org, name);
    return row ? toVolume(row) : null;
  }

  async listVolumes(org: string, query: SandboxListQuery): Promise<SandboxPage<VolumeRecord>> {
    const rows = await this.#page<VolumeRow>(this.#db, "sandbox_volumes", org, query);
    return { items: rows.items.map(toVolume), hasMore: rows.hasMore };
  }

  async #page<R>(
    c: Queryable,
    table: "sandbox_volumes" | "sandbox_templates",
    org: string,
    q: SandboxListQuery,
  ): Promise<SandboxPage<R>> {
    const args: unknown[] = [org, q.limit + 1, q.offset];
    const filter = q.name_contains ? "AND strpos(lower(name), lower($4)) > 0" : "";
    if (q.name_contains) args.push(q.name_contains);
    const { rows } = await c.query(
      `SELECT * FROM ${table} WHERE org_id = $1 ${filter} ORDER BY seq LIMIT $2 OFFSET $3`,
      args,
    );
    return { items: rows.slice(0, q.limit) as R[], hasMore: rows.length > q.limit };
  }

  async updateVolume(org: string, name: string, patch: VolumePatch): Promise<UpdateVolumeResult> {
    return this.#db.tx(async (c): Promise<UpdateVolumeResult> => {
      await lockOrg(c, org);
      const row = await this.#volume(c, org, name);
      if (!row) return { status: "not_found" };
      const previous = toVolume(row);
      const next = { ...previous };
      if (patch.size) {
        if (patch.size.bytes < previous.size_bytes) return { status: "shrink", volume: previous };
        const increase = patch.size.bytes - previous.size_bytes;
        if (increase > 0) {
          const usage = await this.#usage(c, org);
          if (usage.usage_bytes + increase > usage.quota_bytes) {
            return { status: "quota_exceeded", ...usage, increase_bytes: increase };
          }
        }
        next.size = patch.size.text;
        next.size_bytes = patch.size.bytes;
      }
      if (patch.name !== undefined && patch.name !== previous.name) {
        if (await this.#volume(c, org, patch.name)) return { status: "name_taken" };
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
        await c.query(
          "UPDATE sandbox_volumes SET name = $2, size = $3, size_bytes = $4, updated_at = $5 WHERE id = $1",
          [next.id, next.name, next.size, next.size_bytes, next.updated_at],
        );
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      return { status: "updated", volume: next, previous };
    });
  }

  async deleteVolume(org: string, name: string): Promise<DeleteVolumeResult> {
    return this.#db.tx(async (c): Promise<DeleteVolumeResult> => {
      await lockOrg(c, org);
      const row = await this.#volume(c, org, name);
      if (!row) return { status: "not_found" };
      const users = await c.query<{ name: string }>(
        `SELECT DISTINCT t.name FROM sandbox_template_mounts m JOIN sandbox_templates t ON t.id = m.template_id
         WHERE m.volume_id = $1 ORDER BY t.name`,
        [row.id],
      );
      if (users.rows.length > 0) return { status: "in_use", templates: users.rows.map((u) => u.name) };
      await c.query("DELETE FROM sandbox_volumes WHERE id = $1", [row.id]);
      return { status: "deleted", volume: toVolume(row) };
    });
  }

  async forgetVolume(org: string, id: string): Promise<boolean> {
    return this.#db.tx(async (c) => {
      await lockOrg(c, org);
      const mounted = await c.query("SELECT 1 FROM sandbox_template_mounts WHERE volume_id = $1 LIMIT 1", [
        id,
      ]);
      if (mounted.rows.length) return false;
      const { rowCount } = await c.query("DELETE FROM sandbox_volumes WHERE org_id = $1 AND id = $2", [
        org,
        id,
      ]);
      return (rowCount ?? 0) > 0;
    });
  }

  async #templateRow(c: Queryable, org: string, name: string): Promise<TemplateRow | undefined> {
    const { rows } = await c.query<TemplateRow>(
      "SELECT * FROM sandbox_templates WHERE org_id = $1 AND name = $2",
      [org, name],
    );
    return rows[0];
  }

  async #toTemplate(c: Queryable, row: TemplateRow): Promise<TemplateRecord> {
    const { rows: mounts } = await c.query<VolumeMount>(
      `SELECT v.name AS volume_name, m.mount_path FROM sandbox_template_mounts m
       JOIN sandbox_volumes v ON v.id = m.volume_id WHERE m.template_id = $1 ORDER BY m.position`,
      [row.id],
    );
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
    return this.#db.tx(async (c): Promise<CreateTemplateResult> => {
      await lockOrg(c, org);
      if (await this.#templateRow(c, org, input.name)) return { status: "name_taken" };
      const volumeIds: string[] = [];
      const missing: string[] = [];
      for (const mount of input.volume_mounts) {
        const volume = await this.#volume(c, org, mount.volume_name);
        if (volume) volumeIds.push(volume.id);
        else if (!missing.includes(mount.volume_name)) missing.push(mount.volume_name);
      }
      if (missing.length > 0) return { status: "missing_volumes", names: missing };
      const now = new Date().toISOString();
      const row: TemplateRow = {
        seq: 0,
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
        await c.query(
          `INSERT INTO sandbox_templates (id, org_id, name, image, cpu, memory, storage, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
          [row.id, org, row.name, row.image, row.cpu, row.memory, row.storage, now],
        );
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      for (const [i, mount] of input.volume_mounts.entries()) {
        await c.query(
          "INSERT INTO sandbox_template_mounts (template_id, position, volume_id, mount_path) VALUES ($1, $2, $3, $4)",
          [input.id, i, volumeIds[i], mount.mount_path],
        );
      }
      return { status: "created", template: await this.#toTemplate(c, row) };
    });
  }

  async getTemplate(org: string, name: string): Promise<TemplateRecord | null> {
    const row = await this.#templateRow(this.#db, org, name);
    return row ? this.#toTemplate(this.#db, row) : null;
  }

  async listTemplates(org: string, query: SandboxListQuery): Promise<SandboxPage<TemplateRecord>> {
    return this.#db.tx(async (c) => {
      const rows = await this.#page<TemplateRow>(c, "sandbox_templates", org, query);
      const items: TemplateRecord[] = [];
      for (const r of rows.items) items.push(await this.#toTemplate(c, r));
      return { items, hasMore: rows.hasMore };
    });
  }

  async renameTemplate(org: string, name: string, newName: string): Promise<RenameTemplateResult> {
    return this.#db.tx(async (c): Promise<RenameTemplateResult> => {
      await lockOrg(c, org);
      const row = await this.#templateRow(c, org, name);
      if (!row) return { status: "not_found" };
      if (newName === row.name) return { status: "updated", template: await this.#toTemplate(c, row) };
      if (await this.#templateRow(c, org, newName)) return { status: "name_taken" };
      const updated = { ...row, name: newName, updated_at: new Date().toISOString() };
      try {
        await c.query("UPDATE sandbox_templates SET name = $2, updated_at = $3 WHERE id = $1", [
          row.id,
          newName,
          updated.updated_at,
        ]);
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      return { status: "updated", template: await this.#toTemplate(c, updated) };
    });
  }

  async deleteTemplate(org: string, name: string): Promise<DeleteTemplateResult> {
    return this.#db.tx(async (c): Promise<DeleteTemplateResult> => {
      await lockOrg(c, org);
      const row = await this.#templateRow(c, org, name);
      if (!row) return { status: "not_found" };
      const names = async (table: string, where = "") =>
        (
          await c.query<{ name: string }>(
            `SELECT name FROM ${table} WHERE template_id = $1 ${where} ORDER BY name`,
            [row.id],
          )
        ).rows.map((r) => r.name);
      const sandboxes = await names("sandbox_boxes", "AND pool_id IS NULL"); // warm pool members count as their pool
      const pools = await names("sandbox_pools");
      if (sandboxes.length > 0 || pools.length > 0) return { status: "in_use", sandboxes, pools };
      await c.query("DELETE FROM sandbox_template_mounts WHERE template_id = $1", [row.id]);
      await c.query("DELETE FROM sandbox_templates WHERE id = $1", [row.id]);
      return { status: "deleted" };
    });
  }
}
