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
import type { PgDatabase, Queryable } from "./database.js";

/**
 * Boxes and pools on Postgres, the twin of sqlite/sandbox-boxes.ts. Every check-then-write of an
 * organization first takes the organization's advisory lock (the one sandboxes.ts takes), so name
 * checks and claims of one organization run one after the other; claiming a warm box also locks its
 * row (`FOR UPDATE SKIP LOCKED`), so two creates never get the same box.
 */

const BOX = `SELECT b.*, t.name AS template_name FROM sandbox_boxes b JOIN sandbox_templates t ON t.id = b.template_id`;
const POOL = `SELECT p.*, t.name AS template_name FROM sandbox_pools p JOIN sandbox_templates t ON t.id = p.template_id`;

type Row<T> = T & { seq: string };
const strip = <T>({ seq: _, ...rest }: Row<T>): T => rest as T;

const isUniqueViolation = (err: unknown): boolean => (err as { code?: string }).code === "23505";

const lockOrg = (c: Queryable, org: string) =>
  c.query("SELECT pg_advisory_xact_lock(726855, hashtext($1))", [org]);

async function one<T>(c: Queryable, sql: string, args: unknown[]): Promise<T | null> {
  const { rows } = await c.query<Row<T>>(sql, args);
  return rows[0] ? strip(rows[0]) : null;
}

async function all<T>(c: Queryable, sql: string, args: unknown[]): Promise<T[]> {
  const { rows } = await c.query<Row<T>>(sql, args);
  return rows.map(strip);
}

export class PgSandboxBoxes implements SandboxBoxesRepo {
  readonly #db: PgDatabase;

  constructor(db: PgDatabase) {
    this.#db = db;
  }

  #boxById(c: Queryable, id: string) {
    return one<BoxRecord>(c, `${BOX} WHERE b.id = $1`, [id]);
  }

  #poolById(c: Queryable, id: string) {
    return one<PoolRecord>(c, `${POOL} WHERE p.id = $1`, [id]);
  }

  async #templateId(c: Queryable, org: string, name: string): Promise<string | undefined> {
    const { rows } = await c.query<{ id: string }>(
      "SELECT id FROM sandbox_templates WHERE org_id = $1 AND name = $2",
      [org, name],
    );
    return rows[0]?.id;
  }

  async #nameTaken(c: Queryable, org: string, name: string, exceptId = ""): Promise<boolean> {
    const { rows } = await c.query(
      "SELECT 1 FROM sandbox_boxes WHERE org_id = $1 AND name = $2 AND id <> $3",
      [org, name, exceptId],
    );
    return rows.length > 0;
  }

  async createBox(org: string, input: BoxInput): Promise<CreateBoxResult> {
    return this.#db.tx(async (c): Promise<CreateBoxResult> => {
      await lockOrg(c, org);
      const templateId = await this.#templateId(c, org, input.template_name);
      if (!templateId) return { status: "template_not_found" };
      if (await this.#nameTaken(c, org, input.name)) return { status: "name_taken" };
      const now = new Date().toISOString();
      try {
        await c.query(
          `INSERT INTO sandbox_boxes (id, org_id, name, template_id, pool_id, status, status_message, ttl_seconds,
             idle_ttl_seconds, expires_at, last_active_at, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, 'provisioning', NULL, $6, $7, $8, $9, $9, $9)`,
          [
            input.id,
            org,
            input.name,
            templateId,
            input.pool_id ?? null,
            input.ttl_seconds,
            input.idle_ttl_seconds,
            input.expires_at,
            now,
          ],
        );
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      return { status: "created", box: (await this.#boxById(c, input.id))! };
    });
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
    return this.#db.tx(async (c): Promise<ClaimBoxResult> => {
      await lockOrg(c, org);
      const { rows } = await c.query<{ id: string; name: string }>(
        `SELECT b.id, b.name FROM sandbox_boxes b JOIN sandbox_templates t ON t.id = b.template_id
         WHERE b.org_id = $1 AND t.name = $2 AND b.pool_id IS NOT NULL AND b.status = 'ready'
         ORDER BY b.seq LIMIT 1 FOR UPDATE OF b SKIP LOCKED`,
        [org, templateName],
      );
      const warm = rows[0];
      if (!warm) return { status: "none" };
      const name = patch.name ?? warm.name;
      if (await this.#nameTaken(c, org, name, warm.id)) return { status: "name_taken" };
      await c.query(
        `UPDATE sandbox_boxes SET pool_id = NULL, name = $1, ttl_seconds = $2, idle_ttl_seconds = $3, expires_at = $4,
           last_active_at = $5, updated_at = $5 WHERE id = $6`,
        [name, patch.ttl_seconds, patch.idle_ttl_seconds, patch.expires_at, patch.now, warm.id],
      );
      return { status: "claimed", box: (await this.#boxById(c, warm.id))! };
    });
  }

  getBox(org: string, name: string): Promise<BoxRecord | null> {
    return one(this.#db, `${BOX} WHERE b.org_id = $1 AND b.name = $2 AND b.pool_id IS NULL`, [org, name]);
  }

  getBoxById(id: string): Promise<BoxRecord | null> {
    return this.#boxById(this.#db, id);
  }

  async listBoxes(org: string, q: BoxListQuery): Promise<{ items: BoxRecord[]; hasMore: boolean }> {
    const rows = await all<BoxRecord>(
      this.#db,
      `${BOX} WHERE b.org_id = $1 AND b.pool_id IS NULL AND ($2::text IS NULL OR strpos(lower(b.name), lower($2)) > 0)
       ORDER BY b.seq LIMIT $3 OFFSET $4`,
      [org, q.name_contains ?? null, q.limit + 1, q.offset],
    );
    return { items: rows.slice(0, q.limit), hasMore: rows.length > q.limit };
  }

  listAllBoxes(): Promise<BoxRecord[]> {
    return all(this.#db, `${BOX} ORDER BY b.seq`, []);
  }

  async updateBox(org: string, name: string, patch: BoxPatch): Promise<UpdateBoxResult> {
    return this.#db.tx(async (c): Promise<UpdateBoxResult> => {
      await lockOrg(c, org);
      const box = await one<BoxRecord>(
        c,
        `${BOX} WHERE b.org_id = $1 AND b.name = $2 AND b.pool_id IS NULL`,
        [org, name],
      );
      if (!box) return { status: "not_found" };
      if (patch.name !== undefined && (await this.#nameTaken(c, org, patch.name, box.id))) {
        return { status: "name_taken" };
      }
      const next = { ...box, ...patch };
      await c.query(
        `UPDATE sandbox_boxes SET name = $1, ttl_seconds = $2, idle_ttl_seconds = $3, expires_at = $4, updated_at = $5
         WHERE id = $6`,
        [
          next.name,
          next.ttl_seconds,
          next.idle_ttl_seconds,
          next.expires_at,
          new Date().toISOString(),
          box.id,
        ],
      );
      // Deleted by another transaction since the read above: gone, as for a delete that came first.
      const updated = await this.#boxById(c, box.id);
      return updated ? { status: "updated", box: updated } : { status: "not_found" };
    });
  }

  async setBoxStatus(id: string, status: BoxStatus, message: string | null): Promise<BoxRecord | null> {
    await this.#db.query(
      "UPDATE sandbox_boxes SET status = $1, status_message = $2, updated_at = $3 WHERE id = $4",
      [status, message, new Date().toISOString(), id],
    );
    return this.#boxById(this.#db, id);
  }

  async touchBox(id: string, lastActiveAt: string, expiresAt: string | null): Promise<void> {
    await this.#db.query("UPDATE sandbox_boxes SET last_active_at = $1, expires_at = $2 WHERE id = $3", [
      lastActiveAt,
      expiresAt,
      id,
    ]);
  }

  async deleteBox(id: string): Promise<BoxRecord | null> {
    return this.#db.tx(async (c) => {
      const box = await this.#boxById(c, id);
      if (box) await c.query("DELETE FROM sandbox_boxes WHERE id = $1", [id]);
      return box;
    });
  }

  // ---- pools -------------------------------------------------------------------------------------

  async createPool(org: string, input: PoolInput): Promise<CreatePoolResult> {
    return this.#db.tx(async (c): Promise<CreatePoolResult> => {
      await lockOrg(c, org);
      const templateId = await this.#templateId(c, org, input.template_name);
      if (!templateId) return { status: "template_not_found" };
      const mounts = await c.query("SELECT 1 FROM sandbox_template_mounts WHERE template_id = $1 LIMIT 1", [
        templateId,
      ]);
      if (mounts.rows.length > 0) return { status: "template_has_volumes" };
      if (await this.#poolByName(c, org, input.name)) return { status: "name_taken" };
      const now = new Date().toISOString();
      try {
        await c.query(
          `INSERT INTO sandbox_pools (id, org_id, name, template_id, replicas, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $6)`,
          [input.id, org, input.name, templateId, input.replicas, now],
        );
      } catch (err) {
        if (isUniqueViolation(err)) return { status: "name_taken" };
        throw err;
      }
      return { status: "created", pool: (await this.#poolById(c, input.id))! };
    });
  }

  #poolByName(c: Queryable, org: string, name: string): Promise<PoolRecord | null> {
    return one(c, `${POOL} WHERE p.org_id = $1 AND p.name = $2`, [org, name]);
  }

  getPool(org: string, name: string): Promise<PoolRecord | null> {
    return this.#poolByName(this.#db, org, name);
  }

  async listPools(org: string, q: BoxListQuery): Promise<{ items: PoolRecord[]; hasMore: boolean }> {
    const rows = await all<PoolRecord>(
      this.#db,
      `${POOL} WHERE p.org_id = $1 AND ($2::text IS NULL OR strpos(lower(p.name), lower($2)) > 0)
       ORDER BY p.seq LIMIT $3 OFFSET $4`,
      [org, q.name_contains ?? null, q.limit + 1, q.offset],
    );
    return { items: rows.slice(0, q.limit), hasMore: rows.length > q.limit };
  }

  listAllPools(): Promise<PoolRecord[]> {
    return all(this.#db, `${POOL} ORDER BY p.seq`, []);
  }

  async updatePool(
    org: string,
    name: string,
    patch: { name?: string; replicas?: number },
  ): Promise<UpdatePoolResult> {
    return this.#db.tx(async (c): Promise<UpdatePoolResult> => {
      await lockOrg(c, org);
      const pool = await this.#poolByName(c, org, name);
      if (!pool) return { status: "not_found" };
      if (
        patch.name !== undefined &&
        patch.name !== pool.name &&
        (await this.#poolByName(c, org, patch.name))
      ) {
        return { status: "name_taken" };
      }
      await c.query("UPDATE sandbox_pools SET name = $1, replicas = $2, updated_at = $3 WHERE id = $4", [
        patch.name ?? pool.name,
        patch.replicas ?? pool.replicas,
        new Date().toISOString(),
        pool.id,
      ]);
      return { status: "updated", pool: (await this.#poolById(c, pool.id))! };
    });
  }

  async deletePool(org: string, name: string): Promise<{ pool: PoolRecord; boxes: BoxRecord[] } | null> {
    return this.#db.tx(async (c) => {
      await lockOrg(c, org);
      const pool = await this.#poolByName(c, org, name);
      if (!pool) return null;
      const boxes = await all<BoxRecord>(c, `${BOX} WHERE b.pool_id = $1 ORDER BY b.seq`, [pool.id]);
      await c.query("DELETE FROM sandbox_pools WHERE id = $1", [pool.id]);
      return { pool, boxes };
    });
  }

  poolBoxes(poolId: string): Promise<BoxRecord[]> {
    return all(this.#db, `${BOX} WHERE b.pool_id = $1 ORDER BY b.seq`, [poolId]);
  }
}
