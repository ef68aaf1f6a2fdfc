import { conflict } from "../../errors.js";
import {
  type Assistant,
  type AssistantDeletion,
  type AssistantInput,
  type AssistantPatch,
  type AssistantQuery,
  type AssistantsRepo,
  type AssistantVersion,
  DEFAULT_ORG,
  type JsonObject,
  type OrgId,
} from "../ports.js";
import { type Db, prepared } from "./database.js";
import { authClause, jsonContains } from "./json-filter.js";
import { deleteThreadCheckpoints, settledStatus } from "./threads.js";

/** System (default) assistants have org_id '' and are visible to every organization. */
const SYSTEM = "";
const VISIBLE = "(org_id = ? OR org_id = '')";

interface AssistantRow {
  assistant_id: string;
  graph_id: string;
  version: number;
  name: string;
  description: string | null;
  config: string;
  context: string;
  metadata: string;
  created_at: string;
  updated_at?: string;
}

const toAssistant = (r: AssistantRow): Assistant => ({
  assistant_id: r.assistant_id,
  graph_id: r.graph_id,
  version: r.version,
  name: r.name,
  description: r.description,
  config: JSON.parse(r.config),
  context: JSON.parse(r.context),
  metadata: JSON.parse(r.metadata),
  created_at: r.created_at,
  updated_at: r.updated_at ?? r.created_at,
});

const toVersion = (r: AssistantRow): AssistantVersion => {
  const { updated_at: _, ...version } = toAssistant(r);
  return version;
};

/**
 * System assistants are shared by every organization, so only the default organization (the operator's;
 * everyone's when auth is off) may change them. Others get a conflict that says what to do instead.
 */
function assertMayChange(row: AssistantRow & { org_id?: string }, org: OrgId): void {
  if (row.org_id === SYSTEM && org !== DEFAULT_ORG) {
    throw conflict(
      `Assistant ${row.assistant_id} is a default assistant shared by every organization and cannot be changed; ` +
        `create an assistant of your own for graph "${row.graph_id}" instead`,
    );
  }
}

/** A thread whose queued runs were deleted stops being `busy` once nothing of it is in flight. */
function settleIfIdle(db: Db, threadId: string): void {
  const thread = prepared<[string], { status: string; interrupts: string }>(
    db,
    "SELECT status, interrupts FROM threads WHERE thread_id = ?",
  ).get(threadId);
  if (thread?.status !== "busy") return;
  const status = settledStatus(db, threadId, thread.interrupts !== "{}", false);
  prepared(db, "UPDATE threads SET status = ? WHERE thread_id = ?").run(status, threadId);
}

export class SqliteAssistants implements AssistantsRepo {
  readonly #db: Db;
  readonly #get;
  readonly #insert;
  readonly #insertVersion;

  constructor(db: Db) {
    this.#db = db;
    this.#get = prepared<[string, string], AssistantRow>(
      db,
      `SELECT * FROM assistants WHERE assistant_id = ? AND ${VISIBLE}`,
    );
    this.#insert = prepared(
      db,
      `INSERT INTO assistants (assistant_id, org_id, graph_id, version, name, description, config, context, metadata, created_at, updated_at)
       VALUES (@assistant_id, @org_id, @graph_id, @version, @name, @description, @config, @context, @metadata, @now, @now)`,
    );
    this.#insertVersion = prepared(
      db,
      `INSERT INTO assistant_versions (assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
       VALUES (@assistant_id, @version, @graph_id, @name, @description, @config, @context, @metadata, @now)`,
    );
  }

  #create(org: string, input: AssistantInput, ifExists: "raise" | "do_nothing"): Assistant {
    return this.#db.transaction(() => {
      const existing = prepared<[string], AssistantRow & { org_id: string }>(
        this.#db,
        "SELECT * FROM assistants WHERE assistant_id = ?",
      ).get(input.assistant_id);
      if (existing) {
        // An id taken in another organization is reported like any conflict, without revealing it.
        if (ifExists === "do_nothing" && (existing.org_id === org || existing.org_id === SYSTEM)) {
          return toAssistant(existing);
        }
        throw conflict(`Assistant ${input.assistant_id} already exists`);
      }
      const row = {
        ...input,
        org_id: org,
        version: 1,
        config: JSON.stringify(input.config),
        context: JSON.stringify(input.context),
        metadata: JSON.stringify(input.metadata),
        now: new Date().toISOString(),
      };
      this.#insert.run(row);
      this.#insertVersion.run(row);
      return toAssistant({ ...row, created_at: row.now, updated_at: row.now });
    })();
  }

  async create(org: OrgId, input: AssistantInput, ifExists: "raise" | "do_nothing"): Promise<Assistant> {
    return this.#create(org, input, ifExists);
  }

  async ensureSystem(input: AssistantInput): Promise<Assistant> {
    return this.#create(SYSTEM, input, "do_nothing");
  }

  async get(org: OrgId, assistantId: string): Promise<Assistant | null> {
    const row = this.#get.get(assistantId, org);
    return row ? toAssistant(row) : null;
  }

  async update(org: OrgId, assistantId: string, patch: AssistantPatch): Promise<Assistant | null> {
    return this.#db.transaction(() => {
      const row = this.#get.get(assistantId, org);
      if (!row) return null;
      assertMayChange(row, org);
      const current = toAssistant(row);
      const { max } = prepared<[string], { max: number }>(
        this.#db,
        "SELECT MAX(version) AS max FROM assistant_versions WHERE assistant_id = ?",
      ).get(assistantId)!;
      const next = {
        assistant_id: assistantId,
        version: (max ?? current.version) + 1,
        graph_id: patch.graph_id ?? current.graph_id,
        name: patch.name ?? current.name,
        description: patch.description !== undefined ? patch.description : current.description,
        config: JSON.stringify(patch.config ?? current.config),
        context: JSON.stringify(patch.context ?? current.context),
        metadata: JSON.stringify({ ...current.metadata, ...(patch.metadata ?? {}) }),
        now: new Date().toISOString(),
      };
      this.#insertVersion.run(next);
      prepared(
        this.#db,
        `UPDATE assistants SET version = @version, graph_id = @graph_id, name = @name, description = @description,
             config = @config, context = @context, metadata = @metadata, updated_at = @now WHERE assistant_id = @assistant_id`,
      ).run(next);
      return toAssistant({ ...next, created_at: current.created_at, updated_at: next.now });
    })();
  }

  async delete(
    org: OrgId,
    assistantId: string,
    opts: { deleteThreads: boolean },
  ): Promise<AssistantDeletion> {
    return this.#db.transaction((): AssistantDeletion => {
      // System assistants are shared; an organization cannot delete them for everyone.
      const deleted = prepared(this.#db, "DELETE FROM assistants WHERE assistant_id = ? AND org_id = ?").run(
        assistantId,
        org,
      ).changes;
      if (!deleted) return { deleted: false, runningRunIds: [], pendingRunIds: [] };
      const threadsOfAssistant =
        "SELECT thread_id FROM threads WHERE org_id = ? AND json_extract(metadata, '$.assistant_id') = ?";
      const inFlight = prepared<unknown[], { run_id: string; thread_id: string; status: string }>(
        this.#db,
        `SELECT run_id, thread_id, status FROM runs WHERE org_id = ? AND status IN ('pending', 'running')
           AND (assistant_id = ? ${opts.deleteThreads ? `OR thread_id IN (${threadsOfAssistant})` : ""})`,
      ).all(org, assistantId, ...(opts.deleteThreads ? [org, assistantId] : []));
      if (opts.deleteThreads) {
        for (const { thread_id } of prepared<unknown[], { thread_id: string }>(
          this.#db,
          threadsOfAssistant,
        ).all(org, assistantId)) {
          deleteThreadCheckpoints(this.#db, thread_id);
        }
        prepared(this.#db, `DELETE FROM threads WHERE thread_id IN (${threadsOfAssistant})`).run(
          org,
          assistantId,
        );
      }
      // Executing runs keep their rows until the runtime has stopped them (it deletes them then).
      prepared(
        this.#db,
        "DELETE FROM runs WHERE assistant_id = ? AND org_id = ? AND status <> 'running'",
      ).run(assistantId, org);
      for (const threadId of new Set(inFlight.map((r) => r.thread_id))) settleIfIdle(this.#db, threadId);
      return {
        deleted: true,
        runningRunIds: inFlight.filter((r) => r.status === "running").map((r) => r.run_id),
        pendingRunIds: inFlight.filter((r) => r.status === "pending").map((r) => r.run_id),
      };
    })();
  }

  #where(org: OrgId, q: Pick<AssistantQuery, "graph_id" | "name" | "metadata" | "auth">) {
    const clauses = [VISIBLE];
    const params: unknown[] = [org];
    if (q.graph_id !== undefined) {
      clauses.push("graph_id = ?");
      params.push(q.graph_id);
    }
    if (q.name !== undefined) {
      clauses.push("instr(lower(name), lower(?)) > 0");
      params.push(q.name);
    }
    if (q.metadata && Object.keys(q.metadata).length) {
      const f = jsonContains("metadata", q.metadata);
      clauses.push(f.sql);
      params.push(...f.params);
    }
    if (q.auth) {
      const f = authClause("metadata", q.auth);
      clauses.push(f.sql);
      params.push(...f.params);
    }
    return { sql: clauses.join(" AND "), params };
  }

  async search(org: OrgId, q: AssistantQuery): Promise<{ items: Assistant[]; total: number }> {
    const where = this.#where(org, q);
    // sort_by is validated against a closed list by the route schema, so it is safe to interpolate.
    const rows = prepared<unknown[], AssistantRow>(
      this.#db,
      `SELECT * FROM assistants WHERE ${where.sql} ORDER BY ${q.sort_by} ${q.sort_order}, rowid ${q.sort_order} LIMIT ? OFFSET ?`,
    ).all(...where.params, q.limit, q.offset);
    return { items: rows.map(toAssistant), total: await this.count(org, q) };
  }

  async count(
    org: OrgId,
    q: Pick<AssistantQuery, "graph_id" | "name" | "metadata" | "auth">,
  ): Promise<number> {
    const where = this.#where(org, q);
    return prepared<unknown[], { n: number }>(
      this.#db,
      `SELECT COUNT(*) AS n FROM assistants WHERE ${where.sql}`,
    ).get(...where.params)!.n;
  }

  async versions(
    org: OrgId,
    assistantId: string,
    q: { metadata?: JsonObject; limit: number; offset: number },
  ): Promise<AssistantVersion[]> {
    if (!this.#get.get(assistantId, org)) return [];
    const filter = jsonContains("metadata", q.metadata ?? {});
    return prepared<unknown[], AssistantRow>(
      this.#db,
      `SELECT * FROM assistant_versions WHERE assistant_id = ? AND ${filter.sql} ORDER BY version DESC LIMIT ? OFFSET ?`,
    )
      .all(assistantId, ...filter.params, q.limit, q.offset)
      .map(toVersion);
  }

  async setLatest(org: OrgId, assistantId: string, version: number): Promise<Assistant | null> {
    return this.#db.transaction(() => {
      const current = this.#get.get(assistantId, org);
      if (!current) return null;
      assertMayChange(current, org);
      const v = prepared<[string, number], AssistantRow>(
        this.#db,
        "SELECT * FROM assistant_versions WHERE assistant_id = ? AND version = ?",
      ).get(assistantId, version);
      if (!v) return null;
      const now = new Date().toISOString();
      prepared(
        this.#db,
        `UPDATE assistants SET version = ?, graph_id = ?, name = ?, description = ?, config = ?, context = ?,
             metadata = ?, updated_at = ? WHERE assistant_id = ?`,
      ).run(v.version, v.graph_id, v.name, v.description, v.config, v.context, v.metadata, now, assistantId);
      return toAssistant({ ...v, created_at: current.created_at, updated_at: now });
    })();
  }
}
