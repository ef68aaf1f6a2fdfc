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
import { deleteThreads, deletion, settledStatusExpression, threadUpdate } from "./threads.js";

/** System (default) assistants have org_id '' and are visible to every organization. */
const SYSTEM = "";

type AssistantRow = Row<"assistants">;

const toAssistant = (r: AssistantRow): Port.Assistant => recordOf(r, ["org_id"], ASSISTANT_JSON);
const toVersion = (r: Row<"assistant_versions">): Port.AssistantVersion =>
  recordOf(r, ["org_id"], ASSISTANT_JSON);

/**
 * The assistant `org` sees under this id: its own, else a system one. (An id is unique within an
 * organization; an organization's own assistant may share a system assistant's id: made before the
 * project gained that graph, whose default assistant's id is derived from the graph's.)
 */
const visible = (ex: Executor, org: Port.OrgId, assistantId: string) =>
  ex
    .selectFrom("assistants")
    .selectAll()
    .where("assistant_id", "=", assistantId)
    .where("org_id", "in", [org, sql.lit(SYSTEM)])
    .orderBy("org_id", "desc") // '' (system) last
    .limit(sql.lit(1));

/** An UPDATE of the assistant `(org, assistantId)`. */
const assistantUpdate = (ex: Executor, org: Port.OrgId, assistantId: string) =>
  ex.updateTable("assistants").where("org_id", "=", org).where("assistant_id", "=", assistantId);

export class SqlAssistants extends SqlRepo implements Port.AssistantsRepo {
  create(org: Port.OrgId, input: Port.AssistantInput, ifExists: "raise" | "do_nothing") {
    const now = new Date().toISOString();
    const version = {
      org_id: org,
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
    const row: AssistantRow = { ...version, updated_at: now };
    return this.transaction(function* (tx) {
      // Another organization's assistant of this id does not exist here: only the organization's own, or
      // a system one (which every organization sees), is "already there".
      const existing = yield* first(visible(tx, org, input.assistant_id));
      // ON CONFLICT DO NOTHING: two processes ensuring the same system assistant at once both succeed.
      const inserted =
        !existing &&
        (yield* changed(
          tx
            .insertInto("assistants")
            .values(row)
            .onConflict((oc) => oc.columns(["org_id", "assistant_id"]).doNothing()),
        ));
      if (inserted) {
        yield* changed(tx.insertInto("assistant_versions").values(version));
        return toAssistant(row);
      }
      const current = existing ?? (yield* first(visible(tx, org, input.assistant_id)));
      if (current && ifExists === "do_nothing") return toAssistant(current);
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
          .where("org_id", "=", row.org_id)
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
        tx
          .insertInto("assistant_versions")
          .values({ org_id: row.org_id, assistant_id: assistantId, ...next, created_at: now }),
      );
      const latest = { ...next, updated_at: now };
      yield* changed(assistantUpdate(tx, row.org_id, assistantId).set(latest));
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
      // Its crons go with it (a cron may name a system assistant, so no foreign key does this): a
      // system assistant's, every organization's.
      yield* changed(
        tx
          .deleteFrom("crons")
          .where("assistant_id", "=", assistantId)
          .$if(org !== SYSTEM, (q) => q.where("org_id", "=", org)),
      );
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
      yield* deleteThreads(tx, org, threads);
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
          tx
            .selectFrom("threads")
            .select(["status", "interrupts"])
            .where("org_id", "=", org)
            .where("thread_id", "=", threadId),
        );
        if (thread?.status !== "busy") continue;
        const hasNext = Object.keys(JSON.parse(thread.interrupts) ?? {}).length > 0;
        const status = settledStatusExpression(hasNext, false);
        yield* changed(threadUpdate(tx, org, threadId).set((eb) => ({ status: status(eb) })));
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
    const assistant = await visible(db, org, assistantId).executeTakeFirst();
    if (!assistant) return [];
    const rows = await db
      .selectFrom("assistant_versions")
      .selectAll()
      .where("org_id", "=", assistant.org_id)
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
          .where("org_id", "=", current.org_id)
          .where("assistant_id", "=", assistantId)
          .where("version", "=", version),
      );
      if (!v) return null;
      const now = new Date().toISOString();
      const { org_id: _, assistant_id: __, created_at: ___, ...fields } = v;
      const latest = { ...fields, updated_at: now };
      yield* changed(assistantUpdate(tx, current.org_id, assistantId).set(latest));
      return toAssistant({ ...current, ...latest });
    });
  }
}
