/** The sandbox area's boxes (running sandboxes) and pools of warm ones. */
import type { ExpressionBuilder, Updateable } from "kysely";
import type * as Port from "../../sandbox-ports.js";
import { all, changed, type Executor, first, type TxSteps } from "../database.js";
import type { Dialect } from "../dialect.js";
import type { Row, Tables } from "../tables.js";
import {
  mounted,
  orgNamed,
  page,
  SandboxRepo,
  storedMetadata,
  templateRow,
  unlessDuplicate,
} from "./repo.js";

type BoxRow = Row<"sandbox_boxes"> & { template_name: string };
type PoolRow = Row<"sandbox_pools"> & { template_name: string };

const toBox = ({ seq: _, metadata, ...box }: BoxRow): Port.BoxRecord =>
  ({ ...box, metadata: JSON.parse(metadata) }) as Port.BoxRecord;
const toPool = ({ seq: _, metadata, ...pool }: PoolRow): Port.PoolRecord => ({
  ...pool,
  metadata: JSON.parse(metadata),
});

/** The name of the row's template (`<table>.template_id`, always there: a foreign key) as `template_name`. */
const templateNameOf = (table: string) => (eb: ExpressionBuilder<any, any>) =>
  eb
    .selectFrom("sandbox_templates as t")
    .select("t.name")
    .whereRef("t.id", "=", `${table}.template_id`)
    .as("template_name");

const boxes = (ex: Executor) => ex.selectFrom("sandbox_boxes as b").selectAll().select(templateNameOf("b"));
const pools = (ex: Executor) => ex.selectFrom("sandbox_pools as p").selectAll().select(templateNameOf("p"));

/** The organization's boxes that are not warm pool members. */
const unpooled = (ex: Executor, org: string) =>
  boxes(ex).where("b.org_id", "=", org).where("b.pool_id", "is", null);

const poolNamed = (ex: Executor, org: string, name: string) =>
  pools(ex).where("p.org_id", "=", org).where("p.name", "=", name);

const boxTemplateName = templateNameOf("sandbox_boxes");

/** The UPDATE of one box, returning it with its template's name. */
const boxUpdate = (ex: Executor, id: string, set: Updateable<Tables["sandbox_boxes"]>) =>
  ex.updateTable("sandbox_boxes").set(set).where("id", "=", id).returningAll().returning(boxTemplateName);

function* nameTaken(tx: Executor, org: string, name: string, exceptId = ""): TxSteps<boolean> {
  const named = tx.selectFrom("sandbox_boxes").select("id").where(orgNamed(org, name));
  return (yield* first(named.where("id", "<>", exceptId))) !== undefined;
}

/** What the organization's sandboxes hold (`Port.Admit`'s `held`): boxes outside pools, and pools' replicas. */
function* heldUnits(tx: Executor, org: string): TxSteps<Port.SandboxUnit[]> {
  const resources = ["t.cpu", "t.memory"] as const;
  const loose = yield* all(
    tx
      .selectFrom("sandbox_boxes as b")
      .innerJoin("sandbox_templates as t", "t.id", "b.template_id")
      .select(resources)
      .where("b.org_id", "=", org)
      .where("b.pool_id", "is", null),
  );
  const pooled = yield* all(
    tx
      .selectFrom("sandbox_pools as p")
      .innerJoin("sandbox_templates as t", "t.id", "p.template_id")
      .select([...resources, "p.replicas"])
      .where("p.org_id", "=", org),
  );
  return [
    ...loose,
    ...pooled.flatMap(({ replicas, ...unit }) => Array<Port.SandboxUnit>(replicas).fill(unit)),
  ];
}

/** The refusal when `admit` turns down `count` more sandboxes of the template (`unit`), else undefined. */
function* overLimit(
  tx: Executor,
  org: string,
  admit: Port.Admit | undefined,
  unit: Port.SandboxUnit,
  count: number,
): TxSteps<Port.OverLimit | undefined> {
  if (!admit || count <= 0) return undefined;
  const message = admit(yield* heldUnits(tx, org), Array<Port.SandboxUnit>(count).fill(unit));
  return message === null ? undefined : { status: "over_limit", message };
}

export class SqlSandboxBoxes extends SandboxRepo implements Port.SandboxBoxesRepo {
  async createBox(org: string, input: Port.BoxInput, admit?: Port.Admit): Promise<Port.CreateBoxResult> {
    const now = new Date().toISOString();
    const { template_name, pool_id = null, metadata, ...fields } = input;
    return this.inOrg(org, function* (tx, dialect): TxSteps<Port.CreateBoxResult> {
      const template = yield* first(templateRow(tx, org, template_name));
      if (!template) return { status: "template_not_found" };
      const template_id = template.id;
      if (yield* nameTaken(tx, org, input.name)) return { status: "name_taken" };
      const refused = yield* overLimit(tx, org, pool_id === null ? admit : undefined, template, 1);
      if (refused) return refused;
      const box = {
        ...fields,
        metadata: storedMetadata(metadata),
        org_id: org,
        template_id,
        pool_id,
        status_message: null,
        last_active_at: now,
      };
      const insert = tx
        .insertInto("sandbox_boxes")
        .values({ ...box, status: "provisioning", created_at: now, updated_at: now });
      const row = yield* unlessDuplicate(dialect, first(insert.returningAll().returning(boxTemplateName)));
      return row ? { status: "created", box: toBox(row) } : { status: "name_taken" };
    });
  }

  async claimWarmBox(
    org: string,
    templateName: string,
    patch: Port.BoxClaim,
    admit?: Port.Admit,
    pools?: Parameters<Dialect["authFilter"]>[1],
  ): Promise<Port.ClaimBoxResult> {
    return this.inOrg(org, function* (tx, dialect): TxSteps<Port.ClaimBoxResult> {
      // The claimed box leaves its pool, which makes a new one: one sandbox more for the organization.
      const template = yield* first(templateRow(tx, org, templateName));
      const refused = template && (yield* overLimit(tx, org, admit, template, 1));
      if (refused) return refused;
      // Each warm box goes to one create: a box another transaction is claiming (or deleting) is skipped.
      const warm = yield* first(
        dialect.lock(
          boxes(tx)
            .where("b.org_id", "=", org)
            .where("b.template_id", "in", (eb) =>
              eb.selectFrom("sandbox_templates").select("id").where("name", "=", templateName),
            )
            .where("b.pool_id", "is not", null)
            .$if(!!pools, (b) =>
              b.where("b.pool_id", "in", (eb) =>
                eb.selectFrom("sandbox_pools").select("id").where(dialect.authFilter("metadata", pools!)),
              ),
            )
            .where("b.status", "=", "ready")
            .orderBy("b.seq")
            .limit(1),
          { of: "b", skipLocked: true },
        ),
      );
      if (!warm) return { status: "none" };
      const name = patch.name ?? warm.name;
      if (yield* nameTaken(tx, org, name, warm.id)) return { status: "name_taken" };
      const { now, metadata, name: _, ...ttls } = patch;
      const set = {
        ...ttls,
        pool_id: null,
        name,
        metadata: storedMetadata(metadata),
        last_active_at: now,
        updated_at: now,
      };
      const row = yield* first(boxUpdate(tx, warm.id, set));
      return { status: "claimed", box: toBox(row!) };
    });
  }

  async getBox(org: string, name: string): Promise<Port.BoxRecord | null> {
    return this.recordOrNull(unpooled(this.database.db, org).where("b.name", "=", name), toBox);
  }

  async getBoxById(id: string): Promise<Port.BoxRecord | null> {
    return this.recordOrNull(boxes(this.database.db).where("b.id", "=", id), toBox);
  }

  async listAllBoxes(): Promise<Port.BoxRecord[]> {
    return (await boxes(this.database.db).orderBy("b.seq").execute()).map(toBox);
  }

  async listBoxes(org: string, q: Port.SandboxListQuery): Promise<Port.SandboxPage<Port.BoxRecord>> {
    return page(unpooled(this.database.db, org), this.dialect, "b", q, toBox);
  }

  async updateBox(org: string, name: string, patch: Port.BoxPatch): Promise<Port.UpdateBoxResult> {
    const updatedAt = new Date().toISOString();
    return this.inOrg(org, function* (tx): TxSteps<Port.UpdateBoxResult> {
      const box = yield* first(unpooled(tx, org).where("b.name", "=", name));
      if (!box) return { status: "not_found" };
      const taken = patch.name !== undefined && (yield* nameTaken(tx, org, patch.name, box.id));
      if (taken) return { status: "name_taken" };
      const { name: newName, ttl_seconds, idle_ttl_seconds, expires_at } = { ...box, ...patch };
      const set = { name: newName, ttl_seconds, idle_ttl_seconds, expires_at, updated_at: updatedAt };
      const row = yield* first(boxUpdate(tx, box.id, set));
      // Deleted by another transaction since the read above: gone, as for a delete that came first.
      return row ? { status: "updated", box: toBox(row) } : { status: "not_found" };
    });
  }

  async setBoxStatus(id: string, status: Port.BoxStatus, message: string | null) {
    const set = { status, status_message: message, updated_at: new Date().toISOString() };
    return this.recordOrNull(boxUpdate(this.database.db, id, set), toBox);
  }

  async touchBox(id: string, lastActiveAt: string, expiresAt: string | null): Promise<void> {
    await this.database.db
      .updateTable("sandbox_boxes")
      .set({ last_active_at: lastActiveAt, expires_at: expiresAt })
      .where("id", "=", id)
      .execute();
  }

  async deleteBox(id: string): Promise<Port.BoxRecord | null> {
    return this.transaction(function* (tx) {
      const row = yield* first(boxes(tx).where("b.id", "=", id));
      if (!row) return null;
      yield* changed(tx.deleteFrom("sandbox_boxes").where("id", "=", id));
      return toBox(row);
    });
  }

  async createPool(org: string, input: Port.PoolInput, admit?: Port.Admit): Promise<Port.CreatePoolResult> {
    const now = new Date().toISOString();
    return this.inOrg(org, function* (tx, dialect): TxSteps<Port.CreatePoolResult> {
      const template = yield* first(templateRow(tx, org, input.template_name));
      if (!template) return { status: "template_not_found" };
      const template_id = template.id;
      if (yield* first(mounted(tx, "template_id", template_id))) return { status: "template_has_volumes" };
      if (yield* first(poolNamed(tx, org, input.name))) return { status: "name_taken" };
      const refused = yield* overLimit(tx, org, admit, template, input.replicas);
      if (refused) return refused;
      const { id, name, replicas, template_name, metadata = {} } = input;
      const pool = { id, org_id: org, name, template_id, replicas, created_at: now, updated_at: now };
      const insert = tx.insertInto("sandbox_pools").values({ ...pool, metadata: storedMetadata(metadata) });
      if ((yield* unlessDuplicate(dialect, changed(insert))) === undefined) return { status: "name_taken" };
      return { status: "created", pool: { ...pool, metadata, template_name } };
    });
  }

  async getPool(org: string, name: string): Promise<Port.PoolRecord | null> {
    return this.recordOrNull(poolNamed(this.database.db, org, name), toPool);
  }

  async listPools(org: string, q: Port.SandboxListQuery): Promise<Port.SandboxPage<Port.PoolRecord>> {
    return page(pools(this.database.db).where("p.org_id", "=", org), this.dialect, "p", q, toPool);
  }

  async listAllPools(): Promise<Port.PoolRecord[]> {
    return (await pools(this.database.db).orderBy("p.seq").execute()).map(toPool);
  }

  async updatePool(
    org: string,
    name: string,
    patch: Port.PoolPatch,
    admit?: Port.Admit,
  ): Promise<Port.UpdatePoolResult> {
    const updated_at = new Date().toISOString();
    return this.inOrg(org, function* (tx): TxSteps<Port.UpdatePoolResult> {
      const pool = yield* first(poolNamed(tx, org, name));
      if (!pool) return { status: "not_found" };
      const renamed = patch.name !== undefined && patch.name !== pool.name;
      if (renamed && (yield* first(poolNamed(tx, org, patch.name!)))) return { status: "name_taken" };
      const growth = (patch.replicas ?? pool.replicas) - pool.replicas;
      const template = yield* first(
        tx.selectFrom("sandbox_templates").selectAll().where("id", "=", pool.template_id),
      );
      const refused = template && (yield* overLimit(tx, org, admit, template, growth));
      if (refused) return refused;
      const set = { name: patch.name ?? pool.name, replicas: patch.replicas ?? pool.replicas, updated_at };
      yield* changed(tx.updateTable("sandbox_pools").set(set).where("id", "=", pool.id));
      return { status: "updated", pool: toPool({ ...pool, ...set }) };
    });
  }

  async deletePool(org: string, name: string) {
    return this.inOrg(org, function* (tx) {
      const row = yield* first(poolNamed(tx, org, name));
      if (!row) return null;
      const members = yield* all(boxes(tx).where("b.pool_id", "=", row.id).orderBy("b.seq"));
      // The warm boxes stay recorded (pool_id cleared by the foreign key) until the caller removes them.
      yield* changed(tx.deleteFrom("sandbox_pools").where("id", "=", row.id));
      return { pool: toPool(row), boxes: members.map(toBox) };
    });
  }

  async poolBoxes(poolId: string): Promise<Port.BoxRecord[]> {
    const members = boxes(this.database.db).where("b.pool_id", "=", poolId).orderBy("b.seq");
    return (await members.execute()).map(toBox);
  }
}
