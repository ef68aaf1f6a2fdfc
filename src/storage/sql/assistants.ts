/**
 * Assistants and their versions. Every change writes a new row of `assistant_versions` and copies it
 * into `assistants` (the latest); `setLatest` copies an older version back.
 */
import { conflict } from "../../errors.js";
import type * as Port from "../ports.js";
import { DEFAULT_ORG } from "../ports.js";
import { all, changed, type Executor, first, nameContains, SqlRepo, type TxSteps } from "./database.js";
import { sql } from "./kysely.js";
import { slot } from "./prepared.js";
import { ASSISTANT_JSON, type Row, recordOf } from "./tables.js";
import { deleteThreads, deletion, settledStatusExpression } from "./threads.js";

/** System (default) assistants have org_id '' and are visible to every organization. */
const SYSTEM = "";

type AssistantRow = Row<"assistants">;

const toAssistant = (r: AssistantRow): Port.Assistant => recordOf(r, ["org_id"], ASSISTANT_JSON);
const toVersion = (r: Row<"assistant_versions">): Port.AssistantVersion => recordOf(r, [], ASSISTANT_JSON);

const visible = (ex: Executor, org: Port.OrgId, assistantId: string) =>
  ex
    .selectFrom("assistants")
    .selectAll()
    .where("assistant_id", "=", assistantId)
    .where("org_id", "in", [org, sql.lit(SYSTEM)]);

export class SqlAssistants extends SqlRepo implements Port.AssistantsRepo {
  create(org: Port.OrgId, input: Port.AssistantInput, ifExists: "raise" | "do_nothing") {
    const now = new Date().toISOString();
    const version = {
      assistant_id: input.assistant_id,
      version: 1,
      graph_id: input.graph_id,
      name: input.name,
      description: input.description,
      config: JSON.stringify(input.config),
      context: JSON.stringify(input.context),
      metadata: JSON.stringify(input.metadata),
      created_at: now,
    };
    const row: AssistantRow = { ...version, org_id: org, updated_at: now };
    return this.transaction(function* (tx) {
      // ON CONFLICT DO NOTHING: two processes ensuring the same system assistant at once both succeed.
      const inserted = yield* changed(
        tx
          .insertInto("assistants")
          .values(row)
          .onConflict((oc) => oc.column("assistant_id").doNothing()),
      );
      if (inserted) {
        yield* changed(tx.insertInto("assistant_versions").values(version));
        return toAssistant(row);
      }
      const existing = yield* first(
        tx.selectFrom("assistants").selectAll().where("assistant_id", "=", input.assistant_id),
      );
      // An id taken in another organization is reported like any conflict, without revealing it.
      if (existing && ifExists === "do_nothing" && (existing.org_id === org || existing.org_id === SYSTEM)) {
        return toAssistant(existing);
      }
      throw conflict(`Assistant ${input.assistant_id} already exists`);
    });
  }

  /**
   * In a transaction: the assistant the organization sees, locked (FOR UPDATE). System assistants are
   * shared by every organization, so only the default organization (the operator's; everyone's when auth
   * is off) may change them; others get a conflict that says what to do instead.
   */
  *#toChange(tx: Executor, org: Port.OrgId, id: string): TxSteps<AssistantRow | undefined> {
    const row = yield* first(this.dialect.lock(visible(tx, org, id)));
    if (row?.org_id === SYSTEM && org !== DEFAULT_ORG) {
      throw conflict(
        `Assistant ${row.assistant_id} is a default assistant shared by every organization and cannot be changed; ` +
          `create an assistant of your own for graph "${row.graph_id}" instead`,
      );
    }
    return row;
  }

  ensureSystem(input: Port.AssistantInput): Promise<Port.Assistant> {
    return this.create(SYSTEM, input, "do_nothing");
  }

  async get(org: Port.OrgId, assistantId: string): Promise<Port.Assistant | null> {
    // On every run's admission: compiled once.
    const query = this.database.prepared("assistants.get", (db) =>
      visible(db, slot("org"), slot("assistant_id")),
    );
    const [row] = await query.execute(this.database, { org, assistant_id: assistantId });
    return row ? toAssistant(row) : null;
  }

  update(org: Port.OrgId, assistantId: string, patch: Port.AssistantPatch): Promise<Port.Assistant | null> {
    return this.transaction(function* (tx) {
      // The row lock serializes concurrent updates, so each gets its own version number.
      const row = yield* this.#toChange(tx, org, assistantId);
      if (!row) return null;
      const { max } = (yield* first(
        tx
          .selectFrom("assistant_versions")
          .select((eb) => eb.fn.max("version").as("max"))
          .where("assistant_id", "=", assistantId),
      ))!;
      const now = new Date().toISOString();
      const next = {
        version: (max ?? row.version) + 1,
        graph_id: patch.graph_id ?? row.graph_id,
        name: patch.name ?? row.name,
        description: patch.description !== undefined ? patch.description : row.description,
        config: patch.config ? JSON.stringify(patch.config) : row.config,
        context: patch.context ? JSON.stringify(patch.context) : row.context,
        metadata: JSON.stringify({ ...JSON.parse(row.metadata), ...(patch.metadata ?? {}) }),
      };
      yield* changed(
        tx.insertInto("assistant_versions").values({ assistant_id: assistantId, ...next, created_at: now }),
      );
      const latest = { ...next, updated_at: now };
      yield* changed(tx.updateTable("assistants").set(latest).where("assistant_id", "=", assistantId));
      return toAssistant({ ...row, ...latest });
    });
  }

  delete(org: Port.OrgId, assistantId: string, opts: { deleteThreads: boolean }) {
    return this.transaction(function* (tx) {
      // System assistants are shared; an organization cannot delete them for everyone.
      const deleted = yield* changed(
        tx.deleteFrom("assistants").where("assistant_id", "=", assistantId).where("org_id", "=", org),
      );
      if (!deleted) return deletion(false);
      // The threads that go with it are locked first (in a fixed order), as admission locks a thread: no
      // run can be admitted on them between the look at their runs and their deletion.
      const threads = opts.deleteThreads
        ? (yield* all(
            this.dialect.lock(
              tx
                .selectFrom("threads")
                .select("thread_id")
                .where("org_id", "=", org)
                .where(this.dialect.jsonContains("metadata", { assistant_id: assistantId }))
                .orderBy("thread_id"),
            ),
          )).map((r) => r.thread_id)
        : [];
      const inFlight = yield* all(
        tx
          .selectFrom("runs")
          .select(["run_id", "thread_id", "status"])
          .where("org_id", "=", org)
          .where("status", "in", ["pending", "running"])
          .where((eb) =>
            threads.length
              ? eb.or([eb("assistant_id", "=", assistantId), eb("thread_id", "in", threads)])
              : eb("assistant_id", "=", assistantId),
          ),
      );
      yield* deleteThreads(tx, threads);
      // Executing runs keep their rows until the runtime has stopped them (it deletes them then). Those
      // of its runs admitted on other threads since the look above (Postgres) are in what the delete
      // returns.
      const removed = yield* all(
        tx
          .deleteFrom("runs")
          .where("assistant_id", "=", assistantId)
          .where("org_id", "=", org)
          .where("status", "<>", "running")
          .returning(["run_id", "thread_id", "status"]),
      );
      for (const row of removed) if (!inFlight.some((r) => r.run_id === row.run_id)) inFlight.push(row);
      // A thread whose queued runs were deleted stops being `busy` once nothing of it is in flight.
      for (const threadId of new Set(inFlight.map((r) => r.thread_id))) {
        const thread = yield* first(
          tx.selectFrom("threads").select(["status", "interrupts"]).where("thread_id", "=", threadId),
        );
        if (thread?.status !== "busy") continue;
        const hasNext = Object.keys(JSON.parse(thread.interrupts) ?? {}).length > 0;
        const status = settledStatusExpression(threadId, hasNext, false);
        const update = tx.updateTable("threads").where("thread_id", "=", threadId);
        yield* changed(update.set((eb) => ({ status: status(eb) })));
      }
      return deletion(true, inFlight);
    });
  }

  #filtered(org: Port.OrgId, q: Port.AssistantFilter) {
    const d = this.dialect;
    return this.database.db
      .selectFrom("assistants")
      .where("org_id", "in", [org, SYSTEM])
      .$if(q.graph_id !== undefined, (qb) => qb.where("graph_id", "=", q.graph_id!))
      .$if(q.name !== undefined, (qb) => qb.where(nameContains("name", q.name!)))
      .$if(Boolean(q.metadata), (qb) => qb.where(d.jsonContains("metadata", q.metadata!)))
      .$if(Boolean(q.auth), (qb) => qb.where(d.authFilter("metadata", q.auth!)));
  }

  search(org: Port.OrgId, q: Port.AssistantQuery): Promise<{ items: Port.Assistant[]; total: number }> {
    return this.searchPage(
      this.#filtered(org, q),
      (qb, order) => qb.selectAll().orderBy(q.sort_by, order),
      toAssistant,
      q,
    );
  }

  count(org: Port.OrgId, q: Port.AssistantFilter): Promise<number> {
    return this.countOf(this.#filtered(org, q));
  }

  async versions(org: Port.OrgId, assistantId: string, q: Port.VersionQuery) {
    const db = this.database.db;
    if (!(await visible(db, org, assistantId).executeTakeFirst())) return [];
    const rows = await db
      .selectFrom("assistant_versions")
      .selectAll()
      .where("assistant_id", "=", assistantId)
      .where(this.dialect.jsonContains("metadata", q.metadata ?? {}))
      .orderBy("version", "desc")
      .limit(q.limit)
      .offset(q.offset)
      .execute();
    return rows.map(toVersion);
  }

  setLatest(org: Port.OrgId, assistantId: string, version: number): Promise<Port.Assistant | null> {
    return this.transaction(function* (tx) {
      const current = yield* this.#toChange(tx, org, assistantId);
      if (!current) return null;
      const v = yield* first(
        tx
          .selectFrom("assistant_versions")
          .selectAll()
          .where("assistant_id", "=", assistantId)
          .where("version", "=", version),
      );
      if (!v) return null;
      const now = new Date().toISOString();
      const { assistant_id: _, created_at: __, ...fields } = v;
      const latest = { ...fields, updated_at: now };
      yield* changed(tx.updateTable("assistants").set(latest).where("assistant_id", "=", assistantId));
      return toAssistant({ ...current, ...latest });
    });
  }
}
