/**
 * Boxes and pools, one implementation for both engines. Every check-then-write of an organization runs
 * in one transaction that first takes the organization's lock (sandboxes.ts' `inOrg`: SQLite's IMMEDIATE
 * write lock, Postgres' advisory lock, the one the sandbox area takes), so name checks and claims of one
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
import {
  all,
  changed,
  type Executor,
  first,
  orgNamed,
  page,
  SqlRepo,
  type TxSteps,
  unlessDuplicate,
} from "./database.js";
import { sql } from "./kysely.js";
import { inOrg, mounted } from "./sandboxes.js";
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

/** The organization's pool called `name`. */
const poolNamed = (ex: Executor, org: string, name: string) => pools(ex).where(orgNamed(org, name, "p."));

/** The template's name, for a box written with RETURNING (the template is always there: a foreign key). */
const withTemplateName = (eb: ExpressionBuilder<Tables, "sandbox_boxes">) =>
  eb
    .selectFrom("sandbox_templates as t")
    .select("t.name")
    .whereRef("t.id", "=", "sandbox_boxes.template_id")
    .as("template_name");

function* poolById(tx: Executor, id: string): TxSteps<PoolRecord | null> {
  const row = yield* first(pools(tx).where("p.id", "=", id));
  return row ? toPool(row) : null;
}

function* templateId(tx: Executor, org: string, name: string): TxSteps<string | undefined> {
  return (yield* first(tx.selectFrom("sandbox_templates").select("id").where(orgNamed(org, name))))?.id;
}

function* nameTaken(tx: Executor, org: string, name: string, exceptId = ""): TxSteps<boolean> {
  const row = yield* first(
    tx
      .selectFrom("sandbox_boxes")
      .select(sql.lit(1).as("one"))
      .where(orgNamed(org, name))
      .where("id", "<>", exceptId),
  );
  return row !== undefined;
}

export class SqlSandboxBoxes extends SqlRepo implements SandboxBoxesRepo {
  async createBox(org: string, input: BoxInput): Promise<CreateBoxResult> {
    const now = new Date().toISOString();
    return inOrg(this.database, org, function* (tx, dialect): TxSteps<CreateBoxResult> {
      const template = yield* templateId(tx, org, input.template_name);
      if (!template) return { status: "template_not_found" };
      if (yield* nameTaken(tx, org, input.name)) return { status: "name_taken" };
      const row = yield* unlessDuplicate(
        dialect,
        first(
          tx
            .insertInto("sandbox_boxes")
            .values({
              id: input.id,
              org_id: org,
              name: input.name,
              template_id: template,
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
            .returning(withTemplateName),
        ),
      );
      return row ? { status: "created", box: toBox(row) } : { status: "name_taken" };
    });
  }

  async claimWarmBox(org: string, templateName: string, patch: BoxClaim): Promise<ClaimBoxResult> {
    return inOrg(this.database, org, function* (tx, dialect): TxSteps<ClaimBoxResult> {
      // Each warm box goes to one create: a box another transaction is claiming (or deleting) is skipped.
      const warm = yield* first(
        dialect.lock(
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
        ),
      );
      if (!warm) return { status: "none" };
      const name = patch.name ?? warm.name;
      if (yield* nameTaken(tx, org, name, warm.id)) return { status: "name_taken" };
      const row = yield* first(
        tx
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
          .returning(withTemplateName),
      );
      return { status: "claimed", box: toBox(row!) };
    });
  }

  async getBox(org: string, name: string): Promise<BoxRecord | null> {
    const row = await unpooled(this.database.db, org, name).executeTakeFirst();
    return row ? toBox(row) : null;
  }

  async getBoxById(id: string): Promise<BoxRecord | null> {
    const row = await boxes(this.database.db).where("b.id", "=", id).executeTakeFirst();
    return row ? toBox(row) : null;
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
    return inOrg(this.database, org, function* (tx): TxSteps<UpdateBoxResult> {
      const box = yield* first(unpooled(tx, org, name));
      if (!box) return { status: "not_found" };
      if (patch.name !== undefined && (yield* nameTaken(tx, org, patch.name, box.id))) {
        return { status: "name_taken" };
      }
      const next = { ...box, ...patch };
      const row = yield* first(
        tx
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
          .returning(withTemplateName),
      );
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
    return this.database.transaction(function* (tx) {
      const row = yield* first(boxes(tx).where("b.id", "=", id));
      if (!row) return null;
      yield* changed(tx.deleteFrom("sandbox_boxes").where("id", "=", id));
      return toBox(row);
    });
  }

  // ---- pools -------------------------------------------------------------------------------------

  async createPool(org: string, input: PoolInput): Promise<CreatePoolResult> {
    const now = new Date().toISOString();
    return inOrg(this.database, org, function* (tx, dialect): TxSteps<CreatePoolResult> {
      const template = yield* templateId(tx, org, input.template_name);
      if (!template) return { status: "template_not_found" };
      if (yield* first(mounted(tx, "template_id", template))) return { status: "template_has_volumes" };
      if (yield* first(poolNamed(tx, org, input.name))) return { status: "name_taken" };
      const insert = tx.insertInto("sandbox_pools").values({
        id: input.id,
        org_id: org,
        name: input.name,
        template_id: template,
        replicas: input.replicas,
        created_at: now,
        updated_at: now,
      });
      if ((yield* unlessDuplicate(dialect, changed(insert))) === undefined) return { status: "name_taken" };
      return { status: "created", pool: (yield* poolById(tx, input.id))! };
    });
  }

  async getPool(org: string, name: string): Promise<PoolRecord | null> {
    const row = await poolNamed(this.database.db, org, name).executeTakeFirst();
    return row ? toPool(row) : null;
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
    return inOrg(this.database, org, function* (tx): TxSteps<UpdatePoolResult> {
      const pool = yield* first(poolNamed(tx, org, name));
      if (!pool) return { status: "not_found" };
      if (
        patch.name !== undefined &&
        patch.name !== pool.name &&
        (yield* first(poolNamed(tx, org, patch.name)))
      ) {
        return { status: "name_taken" };
      }
      yield* changed(
        tx
          .updateTable("sandbox_pools")
          .set({
            name: patch.name ?? pool.name,
            replicas: patch.replicas ?? pool.replicas,
            updated_at: updatedAt,
          })
          .where("id", "=", pool.id),
      );
      return { status: "updated", pool: (yield* poolById(tx, pool.id))! };
    });
  }

  async deletePool(org: string, name: string): Promise<{ pool: PoolRecord; boxes: BoxRecord[] } | null> {
    return inOrg(this.database, org, function* (tx) {
      const row = yield* first(poolNamed(tx, org, name));
      if (!row) return null;
      const members = yield* all(boxes(tx).where("b.pool_id", "=", row.id).orderBy("b.seq"));
      // The warm boxes stay recorded (pool_id cleared by the foreign key) until the caller removes them.
      yield* changed(tx.deleteFrom("sandbox_pools").where("id", "=", row.id));
      return { pool: toPool(row), boxes: members.map(toBox) };
    });
  }

  async poolBoxes(poolId: string): Promise<BoxRecord[]> {
    return (await boxes(this.database.db).where("b.pool_id", "=", poolId).orderBy("b.seq").execute()).map(
      toBox,
    );
  }
}
