/**
 * Custom auth in the sandbox area: sandboxes, volumes, templates and pools are resources the project's
 * handlers see, as threads are (src/agents/authz.ts). Each operation raises `<resource>:<action>`:
 *
 *   sandboxes  create | read | update | delete | search | exec   (exec: the data plane, the console terminal)
 *   volumes    create | read | update | delete | search
 *   templates  create | read | update | delete | search
 *   pools      create | read | update | delete | search
 *
 * A create's `value.metadata` is stored with the record (a handler stamps its owner); a filter the
 * handler returns hides every record whose metadata does not match: lists pass it to storage, and a
 * record named by the request that does not match is answered exactly as an absent one (404, or the
 * 400 a create answers for a template or volume it cannot find). Using a template (a sandbox or pool
 * made from it) needs `templates:read`; mounting a volume in a template needs `volumes:read`, and a
 * sandbox that mounts it (created or started) its user's `volumes:update` (box-routes.ts).
 * Without langgraph.json `auth` nothing here is asked and nothing is hidden.
 */
import type { Context } from "hono";
import type { AuthAction, Authorization, CustomAuth } from "../auth/custom.js";
import type { AppEnv } from "../http/context.js";
import { type AuthFilter, matchesFilter } from "../storage/filter.js";

export type SandboxResource = "sandboxes" | "volumes" | "templates" | "pools";
type C = Context<AppEnv>;

export class SandboxAuthz {
  constructor(private readonly auth: CustomAuth | undefined) {}

  /** Whether the project has custom auth (langgraph.json `auth`): without it nothing is checked. */
  get enabled(): boolean {
    return this.auth !== undefined;
  }

  /** The handler's answer for `resource:action` (403 when it refuses); everything allowed without auth. */
  ask<V>(c: C, resource: SandboxResource, action: AuthAction, value: V): Promise<Authorization<V>> {
    if (!this.auth) return Promise.resolve({ value });
    return this.auth.authorize(c.get("auth"), resource, action, value);
  }

  /** The filter a list applies (`<resource>:search`). */
  async filter(c: C, resource: SandboxResource, value: object): Promise<AuthFilter | undefined> {
    return (await this.ask(c, resource, "search", value)).filter;
  }

  /**
   * The record `load` finds, if this user may `action` it; `hidden()` (the error an absent record gets)
   * when the handler's filter does not match. The handler is asked first, so a refusal (403) is the
   * same whether or not the record exists.
   */
  async visible<R extends { metadata: Record<string, unknown> }>(
    c: C,
    resource: SandboxResource,
    action: AuthAction,
    value: object,
    load: () => Promise<R>,
    hidden: () => Error,
  ): Promise<R> {
    const { filter } = await this.ask(c, resource, action, value);
    const record = await load();
    if (!matchesFilter(record.metadata, filter)) throw hidden();
    return record;
  }

  /** Whether this user may `action` a record with this metadata (for records checked in a batch). */
  async allows(c: C, resource: SandboxResource, action: AuthAction, value: object) {
    const { filter } = await this.ask(c, resource, action, value);
    return (metadata: Record<string, unknown>) => matchesFilter(metadata, filter);
  }
}
