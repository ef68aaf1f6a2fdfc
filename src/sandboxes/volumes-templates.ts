/**
 * The sandbox control plane's domain: turns the storage port's atomic results into the API's errors
 * (wording per the spec's Errors table) and drives the provisioner around them.
 *
 * Order of a volume's life: the row is recorded first (the atomic name/size/quota decision), then the
 * provisioner creates the backing storage; a failed provisioning removes the row again. A delete
 * removes the row first (refused while mounted), then releases the storage, after any provisioning of
 * the same volume still in flight, so a fast create-then-delete leaves no directory behind.
 */

import { randomUUID } from "node:crypto";
import type { TenantLimits } from "../config/limits.js";
import { badRequest, conflict, HangarError, notFound, validationFailed } from "../errors.js";
import { DEFAULT_ORG, type OrgId } from "../storage/ports.js";
import type {
  SandboxesRepo,
  SandboxListQuery,
  SandboxPage,
  TemplateRecord,
  TemplateResources,
  VolumeMount,
  VolumeRecord,
} from "../storage/sandbox-ports.js";
import type { VolumeProvisioner } from "./provisioner.js";
import { formatGi } from "./quantity.js";
import { quotaExceededMessage, resourceProblems } from "./quota.js";

export interface VolumeTemplateServiceOptions {
  repo: SandboxesRepo;
  provisioner: VolumeProvisioner;
  /**
   * The default organization's quota (HANGAR_SANDBOX_STORAGE_QUOTA), written to its usage-billing
   * configuration on first use; other organizations get it as their initial quota.
   */
  defaultQuotaBytes: number;
  /** Why no sandbox could boot from an image (the sandbox driver's image store), or null. */
  imageProblem?: (image: string) => Promise<string | null>;
  /** One sandbox's CPU, memory and storage limits (a template asking for more is a 422); absent: none. */
  limits?: TenantLimits["sandboxes"];
}

export const volumeNotFound = (name: string) => notFound(`Volume '${name}' not found`, "NotFound");
export const templateNotFound = (name: string) => notFound(`Template '${name}' not found`, "NotFound");

/** A template create naming volumes that are absent (or hidden from the caller), in request order. */
export function mountedVolumesNotFound(names: string[]) {
  const [first, ...rest] = names.map((n) => `'${n}'`);
  const which = rest.length
    ? `Volumes ${[first, ...rest].join(", ")} not found`
    : `Volume ${first} not found`;
  return badRequest(`${which}: a template can only mount existing volumes.`, "VolumeNotFound");
}

/**
 * Which of these records (by name) the caller may read: a 409 names only those, and counts the others
 * (under custom auth another user's records are not the caller's to know by name).
 */
export type Readable = (kind: "templates" | "sandboxes" | "pools", names: string[]) => Promise<string[]>;
const everything: Readable = async (_kind, names) => names;

async function named(readable: Readable, kind: Parameters<Readable>[0], names: string[]): Promise<string> {
  const shown = await readable(kind, names);
  const others = names.length - shown.length;
  const more = others ? `${others} other${others === 1 ? "" : "s"} you cannot see` : "";
  return [shown.join(", "), more].filter(Boolean).join(shown.length ? " and " : "");
}

export class VolumeTemplateService {
  readonly #repo: SandboxesRepo;
  readonly #provisioner: VolumeProvisioner;
  readonly #defaultQuotaBytes: number;
  readonly #imageProblem: VolumeTemplateServiceOptions["imageProblem"];
  readonly #limits: TenantLimits["sandboxes"] | undefined;
  readonly #orgsReady = new Map<OrgId, Promise<void>>();
  readonly #provisioning = new Map<string, Promise<void>>();

  constructor(opts: VolumeTemplateServiceOptions) {
    this.#repo = opts.repo;
    this.#provisioner = opts.provisioner;
    this.#defaultQuotaBytes = opts.defaultQuotaBytes;
    this.#imageProblem = opts.imageProblem;
    this.#limits = opts.limits;
  }

  get storageClasses(): readonly string[] {
    return this.#provisioner.storageClasses;
  }

  /** Makes sure the organization has its usage-billing configuration (once per process and org). */
  ready(org: OrgId): Promise<void> {
    let ready = this.#orgsReady.get(org);
    if (!ready) {
      ready =
        org === DEFAULT_ORG
          ? this.#repo.setStorageQuota(org, this.#defaultQuotaBytes)
          : this.#repo.ensureStorageQuota(org, this.#defaultQuotaBytes);
      ready.catch(() => this.#orgsReady.delete(org));
      this.#orgsReady.set(org, ready);
    }
    return ready;
  }

  // ---- volumes -----------------------------------------------------------------------------------

  async createVolume(
    org: OrgId,
    input: {
      name: string;
      size: { text: string; value: number };
      storage_class?: string | null;
      metadata?: Record<string, unknown>;
    },
  ): Promise<VolumeRecord> {
    await this.ready(org);
    const result = await this.#repo.createVolume(org, {
      id: randomUUID(),
      name: input.name,
      size: input.size.text,
      size_bytes: input.size.value,
      storage_class: input.storage_class ?? this.#provisioner.defaultStorageClass,
      metadata: input.metadata ?? {},
    });
    switch (result.status) {
      case "name_taken":
        throw conflict(`Volume '${input.name}' already exists`, "Conflict");
      case "quota_exceeded":
        throw new HangarError("quota", quotaExceededMessage(org, result));
    }
    const { volume } = result;
    const provisioning = this.#provisioner.provision(volume);
    this.#provisioning.set(volume.id, provisioning);
    try {
      await provisioning;
    } catch (err) {
      await this.#repo.forgetVolume(org, volume.id).catch(() => {});
      throw err;
    } finally {
      this.#provisioning.delete(volume.id);
    }
    return volume;
  }

  async getVolume(org: OrgId, name: string): Promise<VolumeRecord> {
    const volume = await this.#repo.getVolume(org, name);
    if (!volume) throw volumeNotFound(name);
    return volume;
  }

  listVolumes(org: OrgId, query: SandboxListQuery): Promise<SandboxPage<VolumeRecord>> {
    return this.#repo.listVolumes(org, query);
  }

  /** Rename and/or grow, atomically; the checks run in the order of the spec's rules. */
  async updateVolume(
    org: OrgId,
    name: string,
    patch: { name?: string | null; size?: { text: string; value: number } | null },
  ): Promise<VolumeRecord> {
    await this.ready(org);
    const result = await this.#repo.updateVolume(org, name, {
      ...(patch.name != null ? { name: patch.name } : {}),
      ...(patch.size != null ? { size: { text: patch.size.text, bytes: patch.size.value } } : {}),
    });
    switch (result.status) {
      case "not_found":
        throw volumeNotFound(name);
      case "shrink":
        throw badRequest(
          `Volume '${name}' resize failed: Storage cannot be decreased. ` +
            `Current: ${formatGi(result.volume.size_bytes)}, Requested: ${formatGi(patch.size!.value)}`,
          "ResizeError",
        );
      case "quota_exceeded":
        throw new HangarError("quota", quotaExceededMessage(org, result));
      case "name_taken":
        throw conflict(
          `Volume name '${patch.name}' is already in use: a volume with that name already exists`,
          "Conflict",
        );
    }
    if (result.volume.size_bytes > result.previous.size_bytes) await this.#provisioner.resize(result.volume);
    return result.volume;
  }

  async deleteVolume(org: OrgId, name: string, readable: Readable = everything): Promise<void> {
    const result = await this.#repo.deleteVolume(org, name);
    switch (result.status) {
      case "not_found":
        throw volumeNotFound(name);
      case "in_use":
        throw conflict(
          `Volume '${name}' is in use by templates: ${await named(readable, "templates", result.templates)}. ` +
            "Delete or update the templates first.",
          "Conflict",
        );
    }
    await this.#provisioning.get(result.volume.id)?.catch(() => {});
    await this.#provisioner.release(result.volume);
  }

  // ---- templates ---------------------------------------------------------------------------------

  async createTemplate(
    org: OrgId,
    input: {
      name: string;
      image: string;
      resources: TemplateResources;
      volume_mounts: VolumeMount[];
      metadata?: Record<string, unknown>;
    },
  ): Promise<TemplateRecord> {
    const tooBig = this.#limits ? resourceProblems(input.resources, this.#limits) : [];
    if (tooBig.length) throw validationFailed(tooBig);
    await this.ready(org);
    // Refused now rather than at every sandbox's boot.
    const imageProblem = await this.#imageProblem?.(input.image);
    if (imageProblem) throw badRequest(imageProblem, "ImageNotFound");
    const result = await this.#repo.createTemplate(org, { id: randomUUID(), ...input });
    switch (result.status) {
      case "name_taken":
        throw conflict(`Template '${input.name}' already exists`, "Conflict");
      case "missing_volumes":
        throw mountedVolumesNotFound(result.names);
    }
    return result.template;
  }

  async getTemplate(org: OrgId, name: string): Promise<TemplateRecord> {
    const template = await this.#repo.getTemplate(org, name);
    if (!template) throw templateNotFound(name);
    return template;
  }

  listTemplates(org: OrgId, query: SandboxListQuery): Promise<SandboxPage<TemplateRecord>> {
    return this.#repo.listTemplates(org, query);
  }

  async renameTemplate(org: OrgId, name: string, newName: string): Promise<TemplateRecord> {
    const result = await this.#repo.renameTemplate(org, name, newName);
    switch (result.status) {
      case "not_found":
        throw templateNotFound(name);
      case "name_taken":
        throw conflict(
          `Template name '${newName}' is already in use: a template with that name already exists`,
          "Conflict",
        );
    }
    return result.template;
  }

  async deleteTemplate(org: OrgId, name: string, readable: Readable = everything): Promise<void> {
    const result = await this.#repo.deleteTemplate(org, name);
    switch (result.status) {
      case "not_found":
        throw templateNotFound(name);
      case "in_use": {
        const users = [
          result.sandboxes.length ? `sandboxes: ${await named(readable, "sandboxes", result.sandboxes)}` : "",
          result.pools.length ? `pools: ${await named(readable, "pools", result.pools)}` : "",
        ].filter(Boolean);
        throw conflict(
          `Template '${name}' is in use by ${users.join("; ")}. Delete the dependent resources first.`,
          "Conflict",
        );
      }
    }
  }
}
