import type { Statement } from "better-sqlite3";
import type {
  BoxInput,
  BoxListQuery,
  BoxPatch,
  BoxRecord,
  BoxStatus,
  ClaimBoxResult,
  CreateBoxResult,
  CreatePoolResult,
  PoolInput,
  PoolRecord,
  SandboxBoxesRepo,
  UpdateBoxResult,
  UpdatePoolResult,
} from "../sandbox-box-ports.js";
import { type Db, statementCache } from "./database.js";

/**
 * Boxes and pools on SQLite. Each check-then-write runs in one `db.transaction` (IMMEDIATE: it holds the
 * write lock from its first read, so nothing interleaves); UNIQUE (org_id, name) is the backstop.
 */

const BOX = `SELECT b.*, t.name AS template_name FROM sandbox_boxes b JOIN sandbox_templates t ON t.id = b.template_id`;
const POOL = `SELECT p.*, t.name AS template_name FROM sandbox_pools p JOIN sandbox_templates t ON t.id = p.template_id`;

type Row<T> = T & { seq: number };
const strip = <T>({ seq: _, ...rest }: Row<T>): T => rest as T;

const isUniqueViolation = (err: unknown): boolean =>
  (err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE";

export class SqliteSandboxBoxes implements SandboxBoxesRepo {
  readonly #db: Db;
  readonly #sql: (sql: string) => Statement<any[], any>;

  constructor(db: Db) {
    this.#db = db;
    this.#sql = statementCache(db);
  }

  #box(where: string, ...args: unknown[]): BoxRecord | null {
    const row = this.#sql(`${BOX} WHERE ${where}`).get(...args) as Row<BoxRecord> | undefined;
    return row ? strip(row) : null;
  }

  #pool(where: string, ...args: unknown[]): PoolRecord | null {
    const row = this.#sql(`${POOL} WHERE ${where}`).get(...args) as Row<PoolRecord> | undefined;
    return row ? strip(row) : null;
  }

  #templateId(org: string, name: string): string | undefined {
    return (
      this.#sql("SELECT id FROM sandbox_templates WHERE org_id = ? AND name = ?").get(org, name) as
        | { id: string }
        | undefined
    )?.id;
  }

  #nameTaken(org: string, name: string, exceptId = ""): boolean {
    return !!this.#sql("SELECT 1 FROM sandbox_boxes WHERE org_id = ? AND name = ? AND id <> ?").get(
      org,
      name,
      exceptId,
    );
  }

  async createBox(org: string, input: BoxInput): Promise<CreateBoxResult> {
    return this.#db.transaction((): CreateBoxResult => {
      const templateId = this.#templateId(org, input.template_name);
      if (!templateId) return { status: "template_not_found" };
      if (this.#nameTaken(org, input.name)) return { status: "name_taken" };
      const now = new Date().toISOString();
      try {
        this.#sql(
          `INSERT INTO sandbox_boxes (id, org_id, name, template_id, pool_id, status, status_message, ttl_seconds,
             idle_ttl_seconds, expires_at, last_active_at, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, 'provisioning', NULL, ?, ?, ?, ?, ?, ?)`,
        ).run(
          input.id,
          org,
          input.name,
          templateId,
          input.pool_id ?? null,
          input.ttl_seconds,
          input.idle_ttl_seconds,
          input.expires_at,
          now,
          now,
          now,
        );
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      return { status: "created", box: this.#box("b.id = ?", input.id)! };
    })();
  }

  async claimWarmBox(
    org: string,
    templateName: string,
    patch: {
      name?: string;
      ttl_seconds: number;
      idle_ttl_seconds: number;
      expires_at: string | null;
      now: string;
    },
  ): Promise<ClaimBoxResult> {
    return this.#db.transaction((): ClaimBoxResult => {
      const warm = this.#box(
        "b.org_id = ? AND t.name = ? AND b.pool_id IS NOT NULL AND b.status = 'ready' ORDER BY b.seq LIMIT 1",
        org,
        templateName,
      );
      if (!warm) return { status: "none" };
      const name = patch.name ?? warm.name;
      if (this.#nameTaken(org, name, warm.id)) return { status: "name_taken" };
      this.#sql(
        `UPDATE sandbox_boxes SET pool_id = NULL, name = ?, ttl_seconds = ?, idle_ttl_seconds = ?, expires_at = ?,
           last_active_at = ?, updated_at = ? WHERE id = ?`,
      ).run(name, patch.ttl_seconds, patch.idle_ttl_seconds, patch.expires_at, patch.now, patch.now, warm.id);
      return { status: "claimed", box: this.#box("b.id = ?", warm.id)! };
    })();
  }

  async getBox(org: string, name: string): Promise<BoxRecord | null> {
    return this.#box("b.org_id = ? AND b.name = ? AND b.pool_id IS NULL", org, name);
  }

  async getBoxById(id: string): Promise<BoxRecord | null> {
    return this.#box("b.id = ?", id);
  }

  async listBoxes(org: string, q: BoxListQuery): Promise<{ items: BoxRecord[]; hasMore: boolean }> {
    const filter = q.name_contains ? "AND instr(lower(b.name), lower(?)) > 0" : "";
    const rows = this.#sql(
      `${BOX} WHERE b.org_id = ? AND b.pool_id IS NULL ${filter} ORDER BY b.seq LIMIT ? OFFSET ?`,
    ).all(org, ...(q.name_contains ? [q.name_contains] : []), q.limit + 1, q.offset) as Row<BoxRecord>[];
    return { items: rows.slice(0, q.limit).map(strip), hasMore: rows.length > q.limit };
  }

  async listAllBoxes(): Promise<BoxRecord[]> {
    return (this.#sql(`${BOX} ORDER BY b.seq`).all() as Row<BoxRecord>[]).map(strip);
  }

  async updateBox(org: string, name: string, patch: BoxPatch): Promise<UpdateBoxResult> {
    return this.#db.transaction((): UpdateBoxResult => {
      const box = this.#box("b.org_id = ? AND b.name = ? AND b.pool_id IS NULL", org, name);
      if (!box) return { status: "not_found" };
      if (patch.name !== undefined && this.#nameTaken(org, patch.name, box.id))
        return { status: "name_taken" };
      const next = { ...box, ...patch, updated_at: new Date().toISOString() };
      this.#sql(
        `UPDATE sandbox_boxes SET name = ?, ttl_seconds = ?, idle_ttl_seconds = ?, expires_at = ?, updated_at = ?
         WHERE id = ?`,
      ).run(next.name, next.ttl_seconds, next.idle_ttl_seconds, next.expires_at, next.updated_at, box.id);
      return { status: "updated", box: this.#box("b.id = ?", box.id)! };
    })();
  }

  async setBoxStatus(id: string, status: BoxStatus, message: string | null): Promise<BoxRecord | null> {
    this.#sql("UPDATE sandbox_boxes SET status = ?, status_message = ?, updated_at = ? WHERE id = ?").run(
      status,
      message,
      new Date().toISOString(),
      id,
    );
    return this.#box("b.id = ?", id);
  }

  async touchBox(id: string, lastActiveAt: string, expiresAt: string | null): Promise<void> {
    this.#sql("UPDATE sandbox_boxes SET last_active_at = ?, expires_at = ? WHERE id = ?").run(
      lastActiveAt,
      expiresAt,
      id,
    );
  }

  async deleteBox(id: string): Promise<BoxRecord | null> {
    return this.#db.transaction(() => {
      const box = this.#box("b.id = ?", id);
      if (box) this.#sql("DELETE FROM sandbox_boxes WHERE id = ?").run(id);
      return box;
    })();
  }

  // ---- pools -------------------------------------------------------------------------------------

  async createPool(org: string, input: PoolInput): Promise<CreatePoolResult> {
    return this.#db.transaction((): CreatePoolResult => {
      const templateId = this.#templateId(org, input.template_name);
      if (!templateId) return { status: "template_not_found" };
      if (this.#sql("SELECT 1 FROM sandbox_template_mounts WHERE template_id = ? LIMIT 1").get(templateId)) {
        return { status: "template_has_volumes" };
      }
      if (this.#pool("p.org_id = ? AND p.name = ?", org, input.name)) return { status: "name_taken" };
      const now = new Date().toISOString();
      try {
        this.#sql(
          `INSERT INTO sandbox_pools (id, org_id, name, template_id, replicas, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
        ).run(input.id, org, input.name, templateId, input.replicas, now, now);
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      return { status: "created", pool: this.#pool("p.id = ?", input.id)! };
    })();
  }

  async getPool(org: string, name: string): Promise<PoolRecord | null> {
    return this.#pool("p.org_id = ? AND p.name = ?", org, name);
  }

  async listPools(org: string, q: BoxListQuery): Promise<{ items: PoolRecord[]; hasMore: boolean }> {
    const filter = q.name_contains ? "AND instr(lower(p.name), lower(?)) > 0" : "";
    const rows = this.#sql(`${POOL} WHERE p.org_id = ? ${filter} ORDER BY p.seq LIMIT ? OFFSET ?`).all(
      org,
      ...(q.name_contains ? [q.name_contains] : []),
      q.limit + 1,
      q.offset,
    ) as Row<PoolRecord>[];
    return { items: rows.slice(0, q.limit).map(strip), hasMore: rows.length > q.limit };
  }

  async listAllPools(): Promise<PoolRecord[]> {
    return (this.#sql(`${POOL} ORDER BY p.seq`).all() as Row<PoolRecord>[]).map(strip);
  }

  async updatePool(
    org: string,
    name: string,
    patch: { name?: string; replicas?: number },
  ): Promise<UpdatePoolResult> {
    return this.#db.transaction((): UpdatePoolResult => {
      const pool = this.#pool("p.org_id = ? AND p.name = ?", org, name);
      if (!pool) return { status: "not_found" };
      if (patch.name !== undefined && patch.name !== pool.name) {
        if (this.#pool("p.org_id = ? AND p.name = ?", org, patch.name)) return { status: "name_taken" };
      }
      this.#sql("UPDATE sandbox_pools SET name = ?, replicas = ?, updated_at = ? WHERE id = ?").run(
        patch.name ?? pool.name,
        patch.replicas ?? pool.replicas,
        new Date().toISOString(),
        pool.id,
      );
      return { status: "updated", pool: this.#pool("p.id = ?", pool.id)! };
    })();
  }

  async deletePool(org: string, name: string): Promise<{ pool: PoolRecord; boxes: BoxRecord[] } | null> {
    return this.#db.transaction(() => {
      const pool = this.#pool("p.org_id = ? AND p.name = ?", org, name);
      if (!pool) return null;
      const boxes = (
        this.#sql(`${BOX} WHERE b.pool_id = ? ORDER BY b.seq`).all(pool.id) as Row<BoxRecord>[]
      ).map(strip);
      // The warm boxes stay recorded (pool_id cleared by the foreign key) until the caller removes them.
      this.#sql("DELETE FROM sandbox_pools WHERE id = ?").run(pool.id);
      return { pool, boxes };
    })();
  }

  async poolBoxes(poolId: string): Promise<BoxRecord[]> {
    return (this.#sql(`${BOX} WHERE b.pool_id = ? ORDER BY b.seq`).all(poolId) as Row<BoxRecord>[]).map(
      strip,
    );
  }
}
