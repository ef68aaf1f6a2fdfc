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
import type { PgDatabase, Queryable } from "./database.js";
import { authClause, jsonContains, Params } from "./json-filter.js";
import { deleteThreadCheckpoints, settledStatus } from "./threads.js";

/** System (default) assistants have org_id '' and are visible to every organization. */
const SYSTEM = "";

interface AssistantRow {
  assistant_id: string;
  org_id?: string;
  graph_id: string;
  version: number;
  name: string;
  description: string | null;
  config: JsonObject;
  context: JsonObject;
  metadata: JsonObject;
  created_at: string;
  updated_at?: string;
}

const toAssistant = (r: AssistantRow): Assistant => ({
  assistant_id: r.assistant_id,
  graph_id: r.graph_id,
  version: r.version,
  name: r.name,
  description: r.description,
  config: r.config,
  context: r.context,
  metadata: r.metadata,
  created_at: r.created_at,
  updated_at: r.updated_at ?? r.created_at,
});

const toVersion = (r: AssistantRow): AssistantVersion => {
  const { updated_at: _, ...version } = toAssistant(r);
  return version;
};

const INSERT_VERSION = `INSERT INTO assistant_versions
  (assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

/**
 * System assistants are shared by every organization, so only the default organization (the operator's;
 * everyone's when auth is off) may change them (as sqlite/assistants.ts).
 */
function assertMayChange(row: AssistantRow, org: OrgId): void {
  if (row.org_id === SYSTEM && org !== DEFAULT_ORG) {
    throw conflict(
      `Assistant ${row.assistant_id} is a default assistant shared by every organization and cannot be changed; ` +
        `create an assistant of your own for graph "${row.graph_id}" instead`,
    );
  }
}

/** Assistants on Postgres; the twin of sqlite/assistants.ts. */
export class PgAssistants implements AssistantsRepo {
  readonly #db: PgDatabase;

  constructor(db: PgDatabase) {
    this.#db = db;
  }

  async #get(q: Queryable, org: OrgId, assistantId: string, lock = false): Promise<AssistantRow | undefined> {
    const { rows } = await q.query<AssistantRow>(
      `SELECT * FROM assistants WHERE assistant_id = $1 AND (org_id = $2 OR org_id = '')${lock ? " FOR UPDATE" : ""}`,
      [assistantId, org],
    );
    return rows[0];
  }

  async #create(org: string, input: AssistantInput, ifExists: "raise" | "do_nothing"): Promise<Assistant> {
    return this.#db.tx(async (c) => {
      const now = new Date().toISOString();
      // ON CONFLICT DO NOTHING: two processes ensuring the same system assistant at once both succeed.
      const inserted = await c.query<AssistantRow>(
        `INSERT INTO assistants (assistant_id, org_id, graph_id, version, name, description, config, context, metadata,
           created_at, updated_at)
         VALUES ($1, $2, $3, 1, $4, $5, $6, $7, $8, $9, $9)
         ON CONFLICT (assistant_id) DO NOTHING RETURNING *`,
        [
          input.assistant_id,
          org,
          input.graph_id,
          input.name,
          input.description,
          JSON.stringify(input.config),
          JSON.stringify(input.context),
          JSON.stringify(input.metadata),
          now,
        ],
      );
      if (inserted.rows[0]) {
        await c.query(INSERT_VERSION, [
          input.assistant_id,
          1,
          input.graph_id,
          input.name,
          input.description,
          JSON.stringify(input.config),
          JSON.stringify(input.context),
          JSON.stringify(input.metadata),
          now,
        ]);
        return toAssistant(inserted.rows[0]);
      }
      const { rows } = await c.query<AssistantRow>("SELECT * FROM assistants WHERE assistant_id = $1", [
        input.assistant_id,
      ]);
      const existing = rows[0];
      // An id taken in another organization is reported like any conflict, without revealing it.
      if (existing && ifExists === "do_nothing" && (existing.org_id === org || existing.org_id === SYSTEM)) {
        return toAssistant(existing);
      }
      throw conflict(`Assistant ${input.assistant_id} already exists`);
    });
  }

  async create(org: OrgId, input: AssistantInput, ifExists: "raise" | "do_nothing"): Promise<Assistant> {
    return this.#create(org, input, ifExists);
  }

  async ensureSystem(input: AssistantInput): Promise<Assistant> {
    return this.#create(SYSTEM, input, "do_nothing");
  }

  async get(org: OrgId, assistantId: string): Promise<Assistant | null> {
    const row = await this.#get(this.#db, org, assistantId);
    return row ? toAssistant(row) : null;
  }

  async update(org: OrgId, assistantId: string, patch: AssistantPatch): Promise<Assistant | null> {
    return this.#db.tx(async (c) => {
      // The row lock serializes concurrent updates, so each gets its own version number.
      const row = await this.#get(c, org, assistantId, true);
      if (!row) return null;
      assertMayChange(row, org);
      const current = toAssistant(row);
      const { rows } = await c.query<{ max: number | null }>(
        "SELECT MAX(version) AS max FROM assistant_versions WHERE assistant_id = $1",
        [assistantId],
      );
      const next = {
        version: (rows[0].max ?? current.version) + 1,
        graph_id: patch.graph_id ?? current.graph_id,
        name: patch.name ?? current.name,
        description: patch.description !== undefined ? patch.description : current.description,
        config: patch.config ?? current.config,
        context: patch.context ?? current.context,
        metadata: { ...current.metadata, ...(patch.metadata ?? {}) },
        now: new Date().toISOString(),
      };
      const values = [
        assistantId,
        next.version,
        next.graph_id,
        next.name,
        next.description,
        JSON.stringify(next.config),
        JSON.stringify(next.context),
        JSON.stringify(next.metadata),
        next.now,
      ];
      await c.query(INSERT_VERSION, values);
      await c.query(
        `UPDATE assistants SET version = $2, graph_id = $3, name = $4, description = $5, config = $6, context = $7,
           metadata = $8, updated_at = $9 WHERE assistant_id = $1`,
        values,
      );
      return toAssistant({
        assistant_id: assistantId,
        ...next,
        created_at: current.created_at,
        updated_at: next.now,
      });
    });
  }

  async delete(
    org: OrgId,
    assistantId: string,
    opts: { deleteThreads: boolean },
  ): Promise<AssistantDeletion> {
    return this.#db.tx(async (c) => {
      // System assistants are shared; an organization cannot delete them for everyone.
      const deleted = await c.query("DELETE FROM assistants WHERE assistant_id = $1 AND org_id = $2", [
        assistantId,
        org,
      ]);
      if (!deleted.rowCount) return { deleted: false, runningRunIds: [], pendingRunIds: [] };
      // The threads that go with it are locked first (in a fixed order), as admission locks a thread: no
      // run can be admitted on them between the look at their runs and their deletion.
      const threads = opts.deleteThreads
        ? (
            await c.query<{ thread_id: string }>(
              `SELECT thread_id FROM threads WHERE org_id = $1 AND metadata ->> 'assistant_id' = $2
               ORDER BY thread_id FOR UPDATE`,
              [org, assistantId],
            )
          ).rows.map((r) => r.thread_id)
        : [];
      const inFlight = (
        await c.query<{ run_id: string; thread_id: string; status: string }>(
          `SELECT run_id, thread_id, status FROM runs WHERE org_id = $1 AND status IN ('pending', 'running')
             AND (assistant_id = $2 OR thread_id = ANY($3::text[]))`,
          [org, assistantId, threads],
        )
      ).rows;
      await deleteThreadCheckpoints(c, threads);
      await c.query("DELETE FROM threads WHERE thread_id = ANY($1::text[])", [threads]);
      // Executing runs keep their rows until the runtime has stopped them (it deletes them then). Those
      // of its runs admitted on other threads since the look above are in what the delete returns.
      const removed = await c.query<{ run_id: string; thread_id: string; status: string }>(
        "DELETE FROM runs WHERE assistant_id = $1 AND org_id = $2 AND status <> 'running' RETURNING run_id, thread_id, status",
        [assistantId, org],
      );
      for (const row of removed.rows) if (!inFlight.some((r) => r.run_id === row.run_id)) inFlight.push(row);
      for (const threadId of new Set(inFlight.map((r) => r.thread_id))) {
        const thread = (
          await c.query<{ status: string; interrupts: unknown }>(
            "SELECT status, interrupts FROM threads WHERE thread_id = $1",
            [threadId],
          )
        ).rows[0];
        if (thread?.status !== "busy") continue;
        const hasNext = Object.keys((thread.interrupts as object) ?? {}).length > 0;
        const status = await settledStatus(c, threadId, hasNext, false);
        await c.query("UPDATE threads SET status = $1 WHERE thread_id = $2", [status, threadId]);
      }
      return {
        deleted: true,
        runningRunIds: inFlight.filter((r) => r.status === "running").map((r) => r.run_id),
        pendingRunIds: inFlight.filter((r) => r.status === "pending").map((r) => r.run_id),
      };
    });
  }

  #where(
    org: OrgId,
    q: Pick<AssistantQuery, "graph_id" | "name" | "metadata" | "auth">,
    params: Params,
  ): string {
    const clauses = [`(org_id = ${params.add(org)} OR org_id = '')`];
    if (q.graph_id !== undefined) clauses.push(`graph_id = ${params.add(q.graph_id)}`);
    if (q.name !== undefined) clauses.push(`strpos(lower(name), lower(${params.add(q.name)})) > 0`);
    if (q.metadata && Object.keys(q.metadata).length)
      clauses.push(jsonContains("metadata", q.metadata, params));
    if (q.auth) clauses.push(authClause("metadata", q.auth, params));
    return clauses.join(" AND ");
  }

  async search(org: OrgId, q: AssistantQuery): Promise<{ items: Assistant[]; total: number }> {
    const params = new Params();
    const where = this.#where(org, q, params);
    const order = q.sort_order === "asc" ? "ASC" : "DESC";
    // sort_by is validated against a closed list by the route schema, so it is safe to interpolate.
    const { rows } = await this.#db.query<AssistantRow>(
      `SELECT * FROM assistants WHERE ${where} ORDER BY ${q.sort_by} ${order}, seq ${order}
       LIMIT ${params.add(q.limit)} OFFSET ${params.add(q.offset)}`,
      params.values,
    );
    return { items: rows.map(toAssistant), total: await this.count(org, q) };
  }

  async count(
    org: OrgId,
    q: Pick<AssistantQuery, "graph_id" | "name" | "metadata" | "auth">,
  ): Promise<number> {
    const params = new Params();
    const where = this.#where(org, q, params);
    const { rows } = await this.#db.query<{ n: number }>(
      `SELECT COUNT(*) AS n FROM assistants WHERE ${where}`,
      params.values,
    );
    return rows[0].n;
  }

  async versions(
    org: OrgId,
    assistantId: string,
    q: { metadata?: JsonObject; limit: number; offset: number },
  ): Promise<AssistantVersion[]> {
    if (!(await this.#get(this.#db, org, assistantId))) return [];
    const params = new Params([assistantId]);
    const filter = jsonContains("metadata", q.metadata ?? {}, params);
    const { rows } = await this.#db.query<AssistantRow>(
      `SELECT * FROM assistant_versions WHERE assistant_id = $1 AND ${filter} ORDER BY version DESC
       LIMIT ${params.add(q.limit)} OFFSET ${params.add(q.offset)}`,
      params.values,
    );
    return rows.map(toVersion);
  }

  async setLatest(org: OrgId, assistantId: string, version: number): Promise<Assistant | null> {
    return this.#db.tx(async (c) => {
      const current = await this.#get(c, org, assistantId, true);
      if (!current) return null;
      assertMayChange(current, org);
      const { rows } = await c.query<AssistantRow>(
        "SELECT * FROM assistant_versions WHERE assistant_id = $1 AND version = $2",
        [assistantId, version],
      );
      const v = rows[0];
      if (!v) return null;
      const now = new Date().toISOString();
      await c.query(
        `UPDATE assistants SET version = $2, graph_id = $3, name = $4, description = $5, config = $6, context = $7,
           metadata = $8, updated_at = $9 WHERE assistant_id = $1`,
        [
          assistantId,
          v.version,
          v.graph_id,
          v.name,
          v.description,
          JSON.stringify(v.config),
          JSON.stringify(v.context),
          JSON.stringify(v.metadata),
          now,
        ],
      );
      return toAssistant({ ...v, created_at: current.created_at, updated_at: now });
    });
  }
}
