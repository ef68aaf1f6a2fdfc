/**
 * Boxes and pools, one implementation for both engines. Every check-then-write of an organization runs
 * in one transaction that first takes the organization's lock (sandboxes.ts: SQLite's IMMEDIATE write
 * lock, Postgres' advisory lock, the one the sandbox area takes), so name checks and claims of one
 * organization run one after the other; claiming a warm box also locks its row (`FOR UPDATE SKIP
 * LOCKED` on Postgres), so two creates never get the same box. UNIQUE (org_id, name) is the backstop.
 *
 * A box or pool is read with its template's current name (`template_name`): boxes follow renames.
 */
import type { ExpressionBuilder, Selectable } from "kysely";
import type {
  BoxClaim,
  BoxInput,
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
import type { SandboxListQuery, SandboxPage } from "../sandbox-ports.js";
import { type Executor, orgNamed, page, SqlRepo } from "./database.js";
import { sql } from "./kysely.js";
import { lockOrg } from "./sandboxes.js";
import type { SandboxBoxesTable, SandboxPoolsTable, Tables } from "./tables.js";

type BoxRow = Selectable<SandboxBoxesTable> & { template_name: string | null };
type PoolRow = Selectable<SandboxPoolsTable> & { template_name: string };

const toBox = ({ seq: _, ...box }: BoxRow): BoxRecord => box as BoxRecord;
const toPool = ({ seq: _, ...pool }: PoolRow): PoolRecord => pool;

/** Boxes with their template's name. */
const boxes = (ex: Executor) =>
  ex
    .selectFrom("sandbox_boxes as b")
    .innerJoin("sandbox_templates as t", "t.id", "b.template_id")
    .selectAll("b")
    .select("t.name as template_name");

/** Pools with their template's name. */
const pools = (ex: Executor) =>
  ex
    .selectFrom("sandbox_pools as p")
    .innerJoin("sandbox_templates as t", "t.id", "p.template_id")
    .selectAll("p")
    .select("t.name as template_name");

/** The organization's box called `name`, unless it is a warm pool member. */
const unpooled = (ex: Executor, org: string, name: string) =>
  boxes(ex)
    .where(orgNamed(org, name, "b."))
    .where("b.pool_id", "is", null);

/** The template's name, for a box written with RETURNING (the template is always there: a foreign key). */
const withTemplateName = (eb: ExpressionBuilder<Tables, "sandbox_boxes">) =>
  eb
    .selectFrom("sandbox_templates as t")
    .select("t.name")
    .whereRef("t.id", "=", "sandbox_boxes.template_id")
    .as("template_name");

export class SqlSandboxBoxes extends SqlRepo implements SandboxBoxesRepo {
  async #boxById(ex: Executor, id: string): Promise<BoxRecord | null> {
    const row = await boxes(ex).where("b.id", "=", id).executeTakeFirst();
    return row ? toBox(row) : null;
  }

  async #poolById(ex: Executor, id: string): Promise<PoolRecord | null> {
    const row = await pools(ex).where("p.id", "=", id).executeTakeFirst();
    return row ? toPool(row) : null;
  }

  async #poolByName(ex: Executor, org: string, name: string): Promise<PoolRecord | null> {
    const row = await pools(ex)
      .where(orgNamed(org, name, "p."))
      .executeTakeFirst();
    return row ? toPool(row) : null;
  }

  async #templateId(ex: Executor, org: string, name: string): Promise<string | undefined> {
    return (
      await ex.selectFrom("sandbox_templates").select("id").where(orgNamed(org, name)).executeTakeFirst()
    )?.id;
  }

  async #nameTaken(ex: Executor, org: string, name: string, exceptId = ""): Promise<boolean> {
    const row = await ex
      .selectFrom("sandbox_boxes")
      .select(sql.lit(1).as("one"))
      .where(orgNamed(org, name))
      .where("id", "<>", exceptId)
      .executeTakeFirst();
    return row !== undefined;
  }

  async createBox(org: string, input: BoxInput): Promise<CreateBoxResult> {
    const now = new Date().toISOString();
    return this.database.transaction(async (tx): Promise<CreateBoxResult> => {
      await lockOrg(this.database, tx, org);
      const templateId = await this.#templateId(tx, org, input.template_name);
      if (!templateId) return { status: "template_not_found" };
      if (await this.#nameTaken(tx, org, input.name)) return { status: "name_taken" };
      const row = await this.unlessDuplicate(
        tx
          .insertInto("sandbox_boxes")
          .values({
            id: input.id,
            org_id: org,
            name: input.name,
            template_id: templateId,
            pool_id: input.pool_id ?? null,
            status: "provisioning",
            status_message: null,
            ttl_seconds: input.ttl_seconds,
            idle_ttl_seconds: input.idle_ttl_seconds,
            expires_at: input.expires_at,
            last_active_at: now,
            created_at: now,
            updated_at: now,
          })
          .returningAll()
          .returning(withTemplateName)
          .executeTakeFirstOrThrow(),
      );
      return row ? { status: "created", box: toBox(row) } : { status: "name_taken" };
    });
  }

  async claimWarmBox(org: string, templateName: string, patch: BoxClaim): Promise<ClaimBoxResult> {
    return this.database.transaction(async (tx): Promise<ClaimBoxResult> => {
      await lockOrg(this.database, tx, org);
      // Each warm box goes to one create: a box another transaction is claiming (or deleting) is skipped.
      const warm = await this.dialect
        .lock(
          tx
            .selectFrom("sandbox_boxes as b")
            .innerJoin("sandbox_templates as t", "t.id", "b.template_id")
            .select(["b.id", "b.name"])
            .where("b.org_id", "=", org)
            .where("t.name", "=", templateName)
            .where("b.pool_id", "is not", null)
            .where("b.status", "=", "ready")
            .orderBy("b.seq")
            .limit(1),
          { of: "b", skipLocked: true },
        )
        .executeTakeFirst();
      if (!warm) return { status: "none" };
      const name = patch.name ?? warm.name;
      if (await this.#nameTaken(tx, org, name, warm.id)) return { status: "name_taken" };
      const row = await tx
        .updateTable("sandbox_boxes")
        .set({
          pool_id: null,
          name,
          ttl_seconds: patch.ttl_seconds,
          idle_ttl_seconds: patch.idle_ttl_seconds,
          expires_at: patch.expires_at,
          last_active_at: patch.now,
          updated_at: patch.now,
        })
        .where("id", "=", warm.id)
        .returningAll()
        .returning(withTemplateName)
        .executeTakeFirstOrThrow();
      return { status: "claimed", box: toBox(row) };
    });
  }

  async getBox(org: string, name: string): Promise<BoxRecord | null> {
    const row = await unpooled(this.database.db, org, name).executeTakeFirst();
    return row ? toBox(row) : null;
  }

  getBoxById(id: string): Promise<BoxRecord | null> {
    return this.#boxById(this.database.db, id);
  }

  async listBoxes(org: string, q: SandboxListQuery): Promise<SandboxPage<BoxRecord>> {
    const unpooled = boxes(this.database.db).where("b.org_id", "=", org).where("b.pool_id", "is", null);
    const { items, hasMore } = await page(unpooled, "b", q);
    return { items: items.map(toBox), hasMore };
  }

  async listAllBoxes(): Promise<BoxRecord[]> {
    return (await boxes(this.database.db).orderBy("b.seq").execute()).map(toBox);
  }

  async updateBox(org: string, name: string, patch: BoxPatch): Promise<UpdateBoxResult> {
    const updatedAt = new Date().toISOString();
    return this.database.transaction(async (tx): Promise<UpdateBoxResult> => {
      await lockOrg(this.database, tx, org);
      const box = await unpooled(tx, org, name).executeTakeFirst();
      if (!box) return { status: "not_found" };
      if (patch.name !== undefined && (await this.#nameTaken(tx, org, patch.name, box.id))) {
        return { status: "name_taken" };
      }
      const next = { ...box, ...patch };
      const row = await tx
        .updateTable("sandbox_boxes")
        .set({
          name: next.name,
          ttl_seconds: next.ttl_seconds,
          idle_ttl_seconds: next.idle_ttl_seconds,
          expires_at: next.expires_at,
          updated_at: updatedAt,
        })
        .where("id", "=", box.id)
        .returningAll()
        .returning(withTemplateName)
        .executeTakeFirst();
      // Deleted by another transaction since the read above: gone, as for a delete that came first.
      return row ? { status: "updated", box: toBox(row) } : { status: "not_found" };
    });
  }

  /** One statement: the update returns the box. */
  async setBoxStatus(id: string, status: BoxStatus, message: string | null): Promise<BoxRecord | null> {
    const row = await this.database.db
      .updateTable("sandbox_boxes")
      .set({ status, status_message: message, updated_at: new Date().toISOString() })
      .where("id", "=", id)
      .returningAll()
      .returning(withTemplateName)
      .executeTakeFirst();
    return row ? toBox(row) : null;
  }

  async touchBox(id: string, lastActiveAt: string, expiresAt: string | null): Promise<void> {
    await this.database.db
      .updateTable("sandbox_boxes")
      .set({ last_active_at: lastActiveAt, expires_at: expiresAt })
      .where("id", "=", id)
      .execute();
  }

  async deleteBox(id: string): Promise<BoxRecord | null> {
    return this.database.transaction(async (tx) => {
      const box = await this.#boxById(tx, id);
      if (box) await tx.deleteFrom("sandbox_boxes").where("id", "=", id).execute();
      return box;
    });
  }

  // ---- pools -------------------------------------------------------------------------------------

  async createPool(org: string, input: PoolInput): Promise<CreatePoolResult> {
    const now = new Date().toISOString();
    return this.database.transaction(async (tx): Promise<CreatePoolResult> => {
      await lockOrg(this.database, tx, org);
      const templateId = await this.#templateId(tx, org, input.template_name);
      if (!templateId) return { status: "template_not_found" };
      const mounted = await tx
        .selectFrom("sandbox_template_mounts")
        .select(sql.lit(1).as("one"))
        .where("template_id", "=", templateId)
        .limit(1)
        .executeTakeFirst();
      if (mounted) return { status: "template_has_volumes" };
      if (await this.#poolByName(tx, org, input.name)) return { status: "name_taken" };
      if (
        !(await this.unlessDuplicate(
          tx
            .insertInto("sandbox_pools")
            .values({
              id: input.id,
              org_id: org,
              name: input.name,
              template_id: templateId,
              replicas: input.replicas,
              created_at: now,
              updated_at: now,
            })
            .execute(),
        ))
      )
        return { status: "name_taken" };
      return { status: "created", pool: (await this.#poolById(tx, input.id))! };
    });
  }

  getPool(org: string, name: string): Promise<PoolRecord | null> {
    return this.#poolByName(this.database.db, org, name);
  }

  async listPools(org: string, q: SandboxListQuery): Promise<SandboxPage<PoolRecord>> {
    const { items, hasMore } = await page(pools(this.database.db).where("p.org_id", "=", org), "p", q);
    return { items: items.map(toPool), hasMore };
  }

  async listAllPools(): Promise<PoolRecord[]> {
    return (await pools(this.database.db).orderBy("p.seq").execute()).map(toPool);
  }

  async updatePool(
    org: string,
    name: string,
    patch: { name?: string; replicas?: number },
  ): Promise<UpdatePoolResult> {
    const updatedAt = new Date().toISOString();
    return this.database.transaction(async (tx): Promise<UpdatePoolResult> => {
      await lockOrg(this.database, tx, org);
      const pool = await this.#poolByName(tx, org, name);
      if (!pool) return { status: "not_found" };
      if (
        patch.name !== undefined &&
        patch.name !== pool.name &&
        (await this.#poolByName(tx, org, patch.name))
      ) {
        return { status: "name_taken" };
      }
      await tx
        .updateTable("sandbox_pools")
        .set({
          name: patch.name ?? pool.name,
          replicas: patch.replicas ?? pool.replicas,
          updated_at: updatedAt,
        })
        .where("id", "=", pool.id)
        .execute();
      return { status: "updated", pool: (await this.#poolById(tx, pool.id))! };
    });
  }

  async deletePool(org: string, name: string): Promise<{ pool: PoolRecord; boxes: BoxRecord[] } | null> {
    return this.database.transaction(async (tx) => {
      await lockOrg(this.database, tx, org);
      const pool = await this.#poolByName(tx, org, name);
      if (!pool) return null;
      const members = await boxes(tx).where("b.pool_id", "=", pool.id).orderBy("b.seq").execute();
      // The warm boxes stay recorded (pool_id cleared by the foreign key) until the caller removes them.
      await tx.deleteFrom("sandbox_pools").where("id", "=", pool.id).execute();
      return { pool, boxes: members.map(toBox) };
    });
  }

  async poolBoxes(poolId: string): Promise<BoxRecord[]> {
    return (await boxes(this.database.db).where("b.pool_id", "=", poolId).orderBy("b.seq").execute()).map(
      toBox,
    );
  }
}
