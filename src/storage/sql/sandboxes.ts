/**
 * The sandbox area (volumes, templates and their mounts, organizations' storage quota, boxes and pools),
 * one implementation for both engines. Every rule that must hold under concurrency (unique names,
 * grow-only sizes, the storage quota, no deleting a mounted volume, a warm box claimed once) is checked
 * and written in one `inOrg` transaction; UNIQUE (org_id, name) is the backstop.
 */
import type { ExpressionBuilder, Insertable, SelectQueryBuilder, Updateable } from "kysely";
import type * as Port from "../sandbox-ports.js";
import { all, changed, type Executor, first, nameContains, SqlRepo, type TxSteps } from "./database.js";
import type { Dialect } from "./dialect.js";
import { fromExcluded, sql } from "./kysely.js";
import type { Row, Tables } from "./tables.js";

/** The advisory-lock space of the sandbox area's organization locks. */
const ORG_LOCK_SPACE = 726855;

abstract class SandboxRepo extends SqlRepo {
  /**
   * Runs `body` in one transaction that first takes the organization's lock, so the sandbox area's
   * check-then-write transactions of one organization run one after the other: SQLite's IMMEDIATE
   * transaction already holds the write lock; Postgres takes an advisory lock.
   */
  protected inOrg<T>(org: string, body: (tx: Executor, dialect: Dialect) => TxSteps<T>): Promise<T> {
    return this.transaction(function* (tx) {
      const lock = this.dialect.advisoryLock(ORG_LOCK_SPACE, org);
      // A raw statement is not `Compilable` without a builder: compiled with the transaction's.
      if (lock) yield lock.compile(tx);
      return yield* body(tx, this.dialect);
    });
  }
}

/**
 * The write's result, or undefined when a unique constraint refused it (a concurrent write took the
 * name). On SQLite the transaction goes on; on Postgres the failed statement aborted it, so the caller
 * returns at once and the transaction rejects (its COMMIT rolls back).
 */
function* unlessDuplicate<T>(dialect: Dialect, write: TxSteps<T>): TxSteps<T | undefined> {
  try {
    return yield* write;
  } catch (err) {
    if (dialect.isUniqueViolation(err)) return undefined;
    throw err;
  }
}

/** Where the row is the organization's and is called `name`. */
const orgNamed = (org: string, name: string) => (eb: ExpressionBuilder<any, any>) =>
  eb.and([eb("org_id", "=", org), eb("name", "=", name)]);

/**
 * The query of a page in creation order (`<alias>.seq`) of the rows whose name contains
 * `q.name_contains` and whose metadata matches `q.auth`, one row more than asked for: `toPage` tells
 * from it whether there are more.
 */
const pageQuery = <O>(
  qb: SelectQueryBuilder<Tables, any, O>,
  dialect: Dialect,
  alias: string,
  q: Port.SandboxListQuery,
) =>
  qb
    .$if(!!q.name_contains, (b) => b.where(nameContains(`${alias}.name`, q.name_contains!)))
    .$if(!!q.auth, (b) => b.where(dialect.authFilter(`${alias}.metadata`, q.auth!)))
    .orderBy(sql.ref(`${alias}.seq`))
    .limit(q.limit + 1)
    .offset(q.offset);

/** The page in `rows` (`pageQuery`'s), its rows made records by `to`. */
const toPage = <O, T>(rows: O[], q: Port.SandboxListQuery, to: (row: O) => T): Port.SandboxPage<T> => ({
  items: rows.slice(0, q.limit).map(to),
  hasMore: rows.length > q.limit,
});

/** `pageQuery` run outside a transaction, and its page. */
const page = async <O, T>(
  qb: SelectQueryBuilder<Tables, any, O>,
  dialect: Dialect,
  alias: string,
  q: Port.SandboxListQuery,
  to: (row: O) => T,
) => toPage(await pageQuery(qb, dialect, alias, q).execute(), q, to);

/** One mount of the volume (`volume_id`) or of the template (`template_id`), if there is one. */
const mounted = (ex: Executor, column: "volume_id" | "template_id", id: string) =>
  ex.selectFrom("sandbox_template_mounts").select(sql.lit(1).as("one")).where(column, "=", id).limit(1);

type VolumeRow = Row<"sandbox_volumes">;
type TemplateRow = Omit<Row<"sandbox_templates">, "seq"> & { seq?: number };

/** The metadata column as written (JSON text, tables.ts). */
const storedMetadata = (metadata: Record<string, unknown> | undefined) => JSON.stringify(metadata ?? {});

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

const templateRow = (ex: Executor, org: string, name: string) =>
  ex.selectFrom("sandbox_templates").selectAll().where(orgNamed(org, name));

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
