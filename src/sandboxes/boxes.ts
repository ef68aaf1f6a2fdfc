/**
 * Sandboxes ("boxes"): their lifecycle, TTLs and pools, on top of the storage port and a driver.
 *
 * Lifecycle: a create records the box `provisioning` (or claims a warm one from a pool of the same
 * template, already `ready`), then the driver boots it: `ready`, or `failed` with the reason. A box
 * whose processes die without being asked is `stopped`; `start` boots it again with its files. When
 * the server starts, it boots again every box that was `provisioning` or `ready` (processes do not
 * survive a restart; files do).
 *
 * TTLs: `ttl_seconds` counts from creation, `idle_ttl_seconds` from the last data-plane call; when
 * either runs out the box is deleted (0 disables). `expires_at` is the earlier of the two.
 *
 * Pools keep `replicas` warm boxes of a template without volumes; a create for that template takes
 * one (atomically, in storage) and the pool makes a new one in the background.
 */

import { randomBytes, randomUUID } from "node:crypto";
import { badRequest, conflict, HangarError, notFound, timedOut, unavailable } from "../errors.js";
import type { Logger } from "../logger.js";
import type { AuthFilter } from "../storage/filter.js";
import type {
  BoxRecord,
  OrgId,
  PoolRecord,
  SandboxBoxesRepo,
  SandboxesRepo,
  SandboxListQuery,
} from "../storage/ports.js";
import type { Admit } from "../storage/sandbox-ports.js";
import { type CommandOptions, CommandRegistry, CommandRun } from "./commands.js";
import { ImageNotFound } from "./engines/images.js";
import type { ExecProcess, ExecRequest, SandboxDriver, SandboxSpec } from "./provisioner.js";
import { toBytes, toMillicores } from "./quantity.js";

const DEFAULT_WAIT_SECONDS = 30;
/** Activity is written to storage at most this often per box (the in-memory expiry is exact). */
const TOUCH_PERSIST_MS = 5_000;
/**
 * Commands one sandbox may run at once (`POST /execute` and `/execute/ws` together; file transfers are
 * not counted): each holds a process and, over /execute, up to 2 x MAX_EXECUTE_OUTPUT_BYTES of output.
 */
export const MAX_COMMANDS_PER_SANDBOX = 32;
const SWEEP_INTERVAL_MS = 1_000;

export interface BoxServiceOptions {
  boxes: SandboxBoxesRepo;
  sandboxes: SandboxesRepo;
  driver: SandboxDriver;
  log: Logger;
  /** The organization limits (`orgSandboxAdmit`) checked when sandboxes are added; absent: none. */
  admit?: Admit;
}

export interface BoxCreate {
  template_name: string;
  /** What custom auth stamped (its owner); a claimed warm box takes it too. */
  metadata?: Record<string, unknown>;
  name?: string | null;
  wait_for_ready?: boolean | null;
  timeout?: number | null;
  ttl_seconds?: number | null;
  idle_ttl_seconds?: number | null;
  /**
   * Custom auth's `pools:read` filter: a warm box is claimed only from a pool it matches (`false`: from
   * none, the box boots cold); another user's pool is never used up.
   */
  warm_pools?: AuthFilter | false;
}

export const boxNotFound = (name: string) => notFound(`Sandbox '${name}' not found`, "NotFound");
/** A data-plane call's sandbox (addressed by id) that is absent, of another organization, or hidden. */
export const boxIdNotFound = (id: string) => notFound(`Sandbox '${id}' not found`, "NotFound");
export const poolNotFound = (name: string) => notFound(`Pool '${name}' not found`, "NotFound");
/** A box create naming a template that is absent (or hidden from the caller). */
export const boxTemplateNotFound = (name: string) =>
  notFound(`Template '${name}' not found`, "TemplateNotFound");
/** A pool create naming a template that is absent (or hidden from the caller). */
export const poolTemplateNotFound = (name: string) =>
  badRequest(`Template '${name}' not found.`, "TemplateNotFound");
const generatedName = (prefix: string) => `${prefix}-${randomBytes(4).toString("hex")}`;

function expiresAt(box: {
  created_at: string;
  last_active_at: string;
  ttl_seconds: number;
  idle_ttl_seconds: number;
}) {
  const limits: number[] = [];
  if (box.ttl_seconds > 0) limits.push(Date.parse(box.created_at) + box.ttl_seconds * 1000);
  if (box.idle_ttl_seconds > 0) limits.push(Date.parse(box.last_active_at) + box.idle_ttl_seconds * 1000);
  return limits.length ? new Date(Math.min(...limits)).toISOString() : null;
}

export class BoxService {
  readonly commands = new CommandRegistry();
  readonly #admit: Admit | undefined;
  readonly #boxes: SandboxBoxesRepo;
  readonly #sandboxes: SandboxesRepo;
  readonly #driver: SandboxDriver;
  readonly #log: Logger;
  /** Boots in flight, by box id: a create that waits, a delete and a claim wait on them. */
  readonly #boots = new Map<string, Promise<void>>();
  /** The lifecycle operation (stop, start, delete) last queued per box: they run one after another. */
  readonly #lifecycle = new Map<string, Promise<unknown>>();
  /** Expiry (epoch ms) of every box with a TTL; the sweeper deletes the ones past it. */
  readonly #expiries = new Map<string, number>();
  readonly #lastPersisted = new Map<string, number>();
  /** One reconcile at a time per pool. */
  readonly #poolWork = new Map<string, Promise<void>>();
  #sweeper: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(opts: BoxServiceOptions) {
    this.#admit = opts.admit;
    this.#boxes = opts.boxes;
    this.#sandboxes = opts.sandboxes;
    this.#driver = opts.driver;
    this.#log = opts.log;
  }

  /** Why no sandbox could boot from `image` (the driver's image store has no such image), or null. */
  /** What isolates the sandboxes (the driver's engine). */
  get engine(): string {
    return this.#driver.engine;
  }

  imageProblem(image: string): Promise<string | null> {
    return this.#driver.imageProblem(image);
  }

  /** Boots again the boxes that were running before the server stopped, and fills the pools. */
  async start(): Promise<void> {
    this.#sweeper = setInterval(() => void this.#sweep(), SWEEP_INTERVAL_MS);
    this.#sweeper.unref();
    // A killed server's sandboxes may still run (what outran their init): ended before anything boots.
    await this.#driver
      .recover?.()
      .catch((err) =>
        this.#log.warn("could not end what a previous server left of its sandboxes", { error: String(err) }),
      );
    for (const box of await this.#boxes.listAllBoxes()) {
      this.#trackExpiry(box);
      if (box.status === "ready" || box.status === "provisioning") {
        // Its processes did not survive the restart: provisioning until the boot says otherwise.
        this.#startBoot((await this.#boxes.setBoxStatus(box.id, "provisioning", null)) ?? box);
      }
    }
    for (const pool of await this.#boxes.listAllPools()) this.reconcilePool(pool.id);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#sweeper) clearInterval(this.#sweeper);
    await Promise.all([...this.#poolWork.values()].map((p) => p.catch(() => {})));
    await this.#driver.close();
  }

  // ---- boxes -------------------------------------------------------------------------------------

  async create(org: OrgId, input: BoxCreate): Promise<BoxRecord> {
    if (!(await this.#sandboxes.getTemplate(org, input.template_name))) {
      throw boxTemplateNotFound(input.template_name);
    }
    const now = new Date().toISOString();
    const ttl = { ttl_seconds: input.ttl_seconds ?? 0, idle_ttl_seconds: input.idle_ttl_seconds ?? 0 };
    const claim = {
      ...(input.name ? { name: input.name } : {}),
      metadata: input.metadata ?? {},
      ...ttl,
      expires_at: expiresAt({ created_at: now, last_active_at: now, ...ttl }),
      now,
    };
    const claimed =
      input.warm_pools === false
        ? ({ status: "none" } as const)
        : await this.#boxes.claimWarmBox(org, input.template_name, claim, this.#admit, input.warm_pools);
    if (claimed.status === "name_taken") throw this.#nameTaken(input.name!);
    if (claimed.status === "over_limit") throw new HangarError("quota", claimed.message);
    if (claimed.status === "claimed") {
      this.#trackExpiry(claimed.box);
      void this.#refillPools(org, input.template_name);
      return claimed.box;
    }
    const id = randomUUID();
    const created = await this.#boxes.createBox(
      org,
      {
        id,
        name: input.name ?? generatedName("sandbox"),
        template_name: input.template_name,
        metadata: input.metadata ?? {},
        ...ttl,
        expires_at: expiresAt({ created_at: now, last_active_at: now, ...ttl }),
      },
      this.#admit,
    );
    if (created.status === "over_limit") throw new HangarError("quota", created.message);
    if (created.status === "template_not_found") throw boxTemplateNotFound(input.template_name);
    if (created.status === "name_taken") throw this.#nameTaken(input.name!);
    this.#trackExpiry(created.box);
    const boot = this.#startBoot(created.box);
    if (input.wait_for_ready === false) return created.box;
    return this.#waitReady(created.box, boot, input.timeout ?? DEFAULT_WAIT_SECONDS);
  }

  #nameTaken(name: string) {
    return conflict(`Sandbox '${name}' already exists`, "Conflict");
  }

  async #waitReady(box: BoxRecord, boot: Promise<void>, seconds: number): Promise<BoxRecord> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), seconds * 1000);
    });
    const outcome = await Promise.race([boot.then(() => "done" as const), timeout]);
    clearTimeout(timer);
    if (outcome === "timeout") throw timedOut("Timeout waiting for sandbox to be ready");
    const now = await this.#boxes.getBoxById(box.id);
    if (!now) throw boxNotFound(box.name);
    if (now.status === "failed") {
      throw unavailable(now.status_message ?? "The sandbox failed to start", this.#failureType(now));
    }
    return now;
  }

  #failureType(box: BoxRecord): string {
    return box.status_message?.startsWith("Image ") ? "ImagePull" : "SandboxConfig";
  }

  /** Boots a recorded box in the background; the promise settles when it is `ready` or `failed`. */
  #startBoot(box: BoxRecord): Promise<void> {
    const existing = this.#boots.get(box.id);
    if (existing) return existing;
    const boot = (async () => {
      try {
        await this.#driver.boot(await this.#spec(box));
        if (!(await this.#boxes.setBoxStatus(box.id, "ready", null))) await this.#driver.remove(box.id);
      } catch (err) {
        const message =
          err instanceof ImageNotFound || err instanceof HangarError
            ? err.message
            : String((err as Error).message ?? err);
        this.#log.warn("sandbox failed to start", { sandbox: box.name, id: box.id, error: message });
        await this.#boxes.setBoxStatus(box.id, "failed", message).catch(() => {});
      }
    })().finally(() => this.#boots.delete(box.id));
    this.#boots.set(box.id, boot);
    return boot;
  }

  async #spec(box: BoxRecord): Promise<SandboxSpec> {
    const template = await this.#sandboxes.getTemplate(box.org_id, box.template_name);
    if (!template) throw new Error(`Template '${box.template_name}' no longer exists`);
    const mounts = [];
    for (const m of template.volume_mounts) {
      const volume = await this.#sandboxes.getVolume(box.org_id, m.volume_name);
      if (!volume) throw new Error(`Volume '${m.volume_name}' no longer exists`);
      mounts.push({ volumeId: volume.id, mountPath: m.mount_path });
    }
    return {
      id: box.id,
      hostname: box.name,
      image: template.image,
      cpuMillicores: toMillicores(template.resources.cpu),
      memoryBytes: toBytes(template.resources.memory),
      storageBytes: template.resources.storage == null ? null : toBytes(template.resources.storage),
      mounts,
    };
  }

  async get(org: OrgId, name: string): Promise<BoxRecord> {
    const box = await this.#boxes.getBox(org, name);
    if (!box) throw boxNotFound(name);
    return box;
  }

  list(org: OrgId, query: SandboxListQuery) {
    return this.#boxes.listBoxes(org, query);
  }

  async update(
    org: OrgId,
    name: string,
    patch: { name?: string | null; ttl_seconds?: number | null; idle_ttl_seconds?: number | null },
  ): Promise<BoxRecord> {
    const box = await this.get(org, name);
    const ttl = {
      ttl_seconds: patch.ttl_seconds ?? box.ttl_seconds,
      idle_ttl_seconds: patch.idle_ttl_seconds ?? box.idle_ttl_seconds,
    };
    const result = await this.#boxes.updateBox(org, name, {
      ...(patch.name != null ? { name: patch.name } : {}),
      ...ttl,
      expires_at: expiresAt({ ...box, ...ttl }),
    });
    if (result.status === "not_found") throw boxNotFound(name);
    if (result.status === "name_taken") {
      throw conflict(`Sandbox name '${patch.name}' is already in use`, "Conflict");
    }
    this.#trackExpiry(result.box);
    return result.box;
  }

  async delete(org: OrgId, name: string): Promise<void> {
    await this.#remove(await this.get(org, name));
  }

  /**
   * Runs `fn` once the box's earlier lifecycle operations have finished (a stop, start and delete
   * racing each other would tear down the same mounts and cgroups at once), with the box as it is then:
   * one deleted meanwhile is not found, unless `mustExist` is false (removals: `fn` gets null).
   */
  async #exclusive<T>(
    box: BoxRecord,
    fn: (now: BoxRecord) => Promise<T>,
    opts: { mustExist: boolean } = { mustExist: true },
  ): Promise<T> {
    const previous = this.#lifecycle.get(box.id) ?? Promise.resolve();
    const next = previous
      .catch(() => {})
      .then(async () => {
        const now = await this.#boxes.getBoxById(box.id);
        if (!now && opts.mustExist) throw boxNotFound(box.name);
        return fn(now as BoxRecord);
      });
    this.#lifecycle.set(box.id, next);
    try {
      return await next;
    } finally {
      if (this.#lifecycle.get(box.id) === next) this.#lifecycle.delete(box.id);
    }
  }

  /** Removes the box after its earlier lifecycle operations (see `#exclusive`). */
  #remove(box: BoxRecord): Promise<void> {
    // Also when its record is gone already (a deleted pool's boxes): its processes and files are not.
    return this.#exclusive(box, (now: BoxRecord | null) => this.#teardown(now ?? box), { mustExist: false });
  }

  /** Processes and files first, then the record: a crash in between leaves a record to delete again. */
  async #teardown(box: BoxRecord): Promise<void> {
    this.#expiries.delete(box.id);
    this.#lastPersisted.delete(box.id);
    await this.#boots.get(box.id);
    await this.#driver.remove(box.id);
    this.commands.forget(box.id);
    await this.#boxes.deleteBox(box.id);
  }

  async stopBox(org: OrgId, name: string): Promise<void> {
    await this.#exclusive(await this.get(org, name), async (box) => {
      await this.#boots.get(box.id);
      await this.#driver.stop(box.id);
      this.commands.forget(box.id);
      await this.#boxes.setBoxStatus(box.id, "stopped", "Stopped by request");
    });
  }

  async startBox(org: OrgId, name: string): Promise<BoxRecord> {
    return this.#exclusive(await this.get(org, name), async (box) => {
      // A boot still under way (an earlier start) finishes first: one boot at a time.
      await this.#boots.get(box.id);
      const now = (await this.#boxes.getBoxById(box.id)) ?? box;
      if (now.status === "ready" && this.#driver.isRunning(box.id)) return now;
      const started = (await this.#boxes.setBoxStatus(box.id, "provisioning", null)) ?? now;
      this.#startBoot(started);
      return started;
    });
  }

  /** The driver reports a box whose processes died on their own. */
  onSandboxExit(id: string, reason: string): void {
    if (this.#closed) return;
    this.commands.forget(id);
    void this.#boxes.setBoxStatus(id, "stopped", `The sandbox stopped: ${reason}`).catch(() => {});
  }

  // ---- data plane --------------------------------------------------------------------------------

  /** The box a data-plane call addresses, checked to be the caller's and running; counts as activity. */
  async running(org: OrgId, id: string): Promise<BoxRecord> {
    const box = await this.#boxes.getBoxById(id);
    if (!box || box.org_id !== org || box.pool_id !== null) throw boxIdNotFound(id);
    if (box.status !== "ready" || !this.#driver.isRunning(id)) {
      throw badRequest(`Sandbox '${box.name}' is not ready (status: ${box.status})`, "NotReady");
    }
    this.#touch(box);
    return box;
  }

  /** A bare process in the sandbox, for callers that want its raw bytes (file transfers). */
  spawn(box: BoxRecord, request: ExecRequest): ExecProcess {
    return this.#driver.exec(box.id, request);
  }

  /** Refused with 429 `TooManyCommands` past MAX_COMMANDS_PER_SANDBOX running in the sandbox. */
  exec(box: BoxRecord, request: ExecRequest, options: CommandOptions, commandId?: string): CommandRun {
    if (this.commands.running(box.id) >= MAX_COMMANDS_PER_SANDBOX) {
      throw new HangarError(
        "quota",
        `The sandbox already runs ${MAX_COMMANDS_PER_SANDBOX} commands (the most one sandbox may run at once, over POST /execute and /execute/ws together); wait for one to end`,
        "TooManyCommands",
      );
    }
    const run = new CommandRun(this.#driver.exec(box.id, request), options, commandId);
    this.commands.add(box.id, run, options.keepSeconds);
    return run;
  }

  #touch(box: BoxRecord): void {
    if (box.idle_ttl_seconds <= 0) return;
    const now = new Date();
    const touched = { ...box, last_active_at: now.toISOString() };
    const expiry = expiresAt(touched);
    this.#trackExpiry({ ...touched, expires_at: expiry });
    if (now.getTime() - (this.#lastPersisted.get(box.id) ?? 0) >= TOUCH_PERSIST_MS) {
      this.#lastPersisted.set(box.id, now.getTime());
      void this.#boxes.touchBox(box.id, touched.last_active_at, expiry).catch(() => {});
    }
  }

  // ---- TTLs --------------------------------------------------------------------------------------

  #trackExpiry(box: Pick<BoxRecord, "id" | "expires_at" | "pool_id">): void {
    if (box.expires_at && box.pool_id === null) this.#expiries.set(box.id, Date.parse(box.expires_at));
    else this.#expiries.delete(box.id);
  }

  async #sweep(): Promise<void> {
    const now = Date.now();
    for (const [id, at] of this.#expiries) {
      if (at > now) continue;
      this.#expiries.delete(id);
      const box = await this.#boxes.getBoxById(id);
      if (!box) continue;
      this.#log.info("sandbox expired", { sandbox: box.name, id });
      await this.#remove(box).catch((err) =>
        this.#log.warn("could not delete an expired sandbox", { id, error: String(err) }),
      );
    }
  }

  // ---- pools -------------------------------------------------------------------------------------

  async createPool(
    org: OrgId,
    input: {
      name: string;
      template_name: string;
      replicas: number;
      wait_for_ready?: boolean | null;
      timeout?: number | null;
      metadata?: Record<string, unknown>;
    },
  ): Promise<PoolRecord> {
    const result = await this.#boxes.createPool(org, { id: randomUUID(), ...input }, this.#admit);
    switch (result.status) {
      case "over_limit":
        throw new HangarError("quota", result.message);
      case "template_not_found":
        throw poolTemplateNotFound(input.template_name);
      case "template_has_volumes":
        throw badRequest(
          `Template '${input.template_name}' has volumes attached. Pools only support stateless templates.`,
          "LangSmithValidationError",
        );
      case "name_taken":
        throw conflict(`Pool '${input.name}' already exists`);
    }
    const pool = result.pool;
    const filled = this.reconcilePool(pool.id);
    if (input.wait_for_ready !== false) {
      const seconds = input.timeout ?? DEFAULT_WAIT_SECONDS;
      let timer: NodeJS.Timeout | undefined;
      const ready = await Promise.race([
        filled.then(() => this.#readyCount(pool.id)),
        new Promise<number>((r) => {
          timer = setTimeout(() => r(-1), seconds * 1000);
        }),
      ]);
      clearTimeout(timer);
      if (ready < pool.replicas) {
        throw new HangarError(
          "gateway_timeout",
          `Pool '${pool.name}' did not reach ${pool.replicas} ready replica(s) within ${seconds} seconds`,
          "Timeout",
        );
      }
    }
    return pool;
  }

  async #readyCount(poolId: string): Promise<number> {
    return (await this.#boxes.poolBoxes(poolId)).filter((b) => b.status === "ready").length;
  }

  async getPool(org: OrgId, name: string): Promise<PoolRecord> {
    const pool = await this.#boxes.getPool(org, name);
    if (!pool) throw poolNotFound(name);
    return pool;
  }

  listPools(org: OrgId, query: SandboxListQuery) {
    return this.#boxes.listPools(org, query);
  }

  async updatePool(org: OrgId, name: string, patch: { name?: string | null; replicas?: number | null }) {
    const result = await this.#boxes.updatePool(
      org,
      name,
      {
        ...(patch.name != null ? { name: patch.name } : {}),
        ...(patch.replicas != null ? { replicas: patch.replicas } : {}),
      },
      this.#admit,
    );
    if (result.status === "not_found") throw poolNotFound(name);
    if (result.status === "over_limit") throw new HangarError("quota", result.message);
    if (result.status === "name_taken")
      throw conflict(`Pool name '${patch.name}' is already in use`, "Conflict");
    void this.reconcilePool(result.pool.id);
    return result.pool;
  }

  async deletePool(org: OrgId, name: string): Promise<void> {
    const deleted = await this.#boxes.deletePool(org, name);
    if (!deleted) throw poolNotFound(name);
    await this.#poolWork.get(deleted.pool.id)?.catch(() => {});
    for (const box of [...deleted.boxes, ...(await this.#boxes.poolBoxes(deleted.pool.id))])
      await this.#remove(box);
  }

  async #refillPools(org: OrgId, templateName: string): Promise<void> {
    for (const pool of await this.#boxes.listAllPools()) {
      if (pool.org_id === org && pool.template_name === templateName) void this.reconcilePool(pool.id);
    }
  }

  /** Brings a pool to `replicas` warm boxes (failed ones replaced, extra ones removed); one run per pool at a time. */
  reconcilePool(poolId: string): Promise<void> {
    const previous = this.#poolWork.get(poolId) ?? Promise.resolve();
    const next = previous
      .then(() => this.#reconcile(poolId))
      .catch((err) => {
        this.#log.warn("pool reconcile failed", { pool: poolId, error: String(err) });
      });
    this.#poolWork.set(poolId, next);
    void next.finally(() => {
      if (this.#poolWork.get(poolId) === next) this.#poolWork.delete(poolId);
    });
    return next;
  }

  async #reconcile(poolId: string): Promise<void> {
    if (this.#closed) return;
    const pool = (await this.#boxes.listAllPools()).find((p) => p.id === poolId);
    const warm = await this.#boxes.poolBoxes(poolId);
    if (!pool) {
      for (const box of warm) await this.#remove(box);
      return;
    }
    for (const box of warm.filter((b) => b.status === "failed" || b.status === "stopped"))
      await this.#remove(box);
    const alive = warm.filter((b) => b.status === "ready" || b.status === "provisioning");
    for (const extra of alive.slice(pool.replicas).reverse()) await this.#remove(extra);
    const boots: Promise<void>[] = [];
    for (let i = alive.length; i < pool.replicas; i++) {
      const created = await this.#boxes.createBox(pool.org_id, {
        id: randomUUID(),
        name: generatedName(`${pool.name}`.slice(0, 50)),
        template_name: pool.template_name,
        pool_id: pool.id,
        metadata: pool.metadata,
        ttl_seconds: 0,
        idle_ttl_seconds: 0,
        expires_at: null,
      });
      if (created.status === "created") boots.push(this.#startBoot(created.box));
    }
    for (const box of alive) {
      const boot = this.#boots.get(box.id);
      if (boot) boots.push(boot);
    }
    await Promise.all(boots);
  }
}
