/**
 * The sandbox control plane (`/v2/sandboxes`: volumes and templates) against a real `hangar` process.
 * Every operation goes through the official client, `langsmith` pinned at 0.5.21 (the last release
 * with volume and template methods, installed as `langsmith-sbx`); every rule is also checked with
 * raw HTTP for its exact status and body, since the 0.5.x client throws a TypeError on any 422 and
 * drops the body of some statuses (reference/sandbox.md sections 4 and 9).
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  LangSmithQuotaExceededError,
  LangSmithResourceInUseError,
  LangSmithResourceNameConflictError,
  LangSmithResourceNotFoundError,
  LangSmithSandboxError,
  SandboxClient,
} from "langsmith-sbx/experimental/sandbox";
import { emptyImageStore } from "../helpers/images-cli.js";
import { type ApiResponse, type Hangar, http, startHangar, UUID_RE } from "../helpers/server.js";

const T = { timeout: 60_000 };
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const VOLUME_KEYS = ["created_at", "id", "name", "size", "storage_class", "updated_at"];
const TEMPLATE_KEYS = ["created_at", "id", "image", "name", "resources", "updated_at", "volume_mounts"];

const sandboxClient = (h: Hangar) =>
  new SandboxClient({ apiEndpoint: `${h.url}/v2/sandboxes`, apiKey: "test-key", maxRetries: 0 });

/** Raw HTTP under /v2/sandboxes. */
const api = (h: Hangar, method: string, path: string, body?: unknown) =>
  http(h.url, method, `/v2/sandboxes${path}`, body);

/** The error a promise rejects with. */
async function thrown(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected the call to fail, it succeeded");
}

const ctx = (res: ApiResponse) => `${res.status} ${res.text.slice(0, 500)}`;

/** `{detail: {error, message}}` with this status and error type; returns the message. */
function typedError(res: ApiResponse, status: number, error: string): string {
  assert.equal(res.status, status, ctx(res));
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  assert.deepEqual(Object.keys(res.body), ["detail"], ctx(res));
  assert.deepEqual(Object.keys(res.body.detail).sort(), ["error", "message"], ctx(res));
  assert.equal(res.body.detail.error, error, ctx(res));
  assert.equal(typeof res.body.detail.message, "string");
  assert.ok(res.body.detail.message.length > 0);
  return res.body.detail.message;
}

/** 422 `{detail: [{loc: [...strings], msg, type}]}` with some loc equal to `loc`. */
function validation(res: ApiResponse, loc: string[], what = ""): void {
  assert.equal(res.status, 422, `${what}: ${ctx(res)}`);
  const detail = res.body?.detail;
  assert.ok(Array.isArray(detail) && detail.length > 0, `${what}: ${ctx(res)}`);
  for (const issue of detail) {
    assert.deepEqual(Object.keys(issue).sort(), ["loc", "msg", "type"], `${what}: ${ctx(res)}`);
    assert.ok(Array.isArray(issue.loc) && issue.loc.every((p: unknown) => typeof p === "string"), ctx(res));
    assert.equal(typeof issue.msg, "string");
    assert.equal(typeof issue.type, "string");
  }
  assert.ok(
    detail.some((i: { loc: string[] }) => JSON.stringify(i.loc) === JSON.stringify(loc)),
    `${what}: expected an issue at ${JSON.stringify(loc)}: ${ctx(res)}`,
  );
}

function assertVolumeShape(v: any, expected: { name: string; size: string }): void {
  assert.deepEqual(Object.keys(v).sort(), VOLUME_KEYS);
  assert.match(v.id, UUID_RE);
  assert.equal(v.name, expected.name);
  assert.equal(v.size, expected.size);
  assert.equal(v.storage_class, "standard");
  assert.match(v.created_at, ISO);
  assert.match(v.updated_at, ISO);
}

const volumeDirs = (h: Hangar): string[] => {
  const root = join(h.dataDir, "volumes");
  return existsSync(root) ? readdirSync(root).sort() : [];
};

/**
 * An image store with the images these templates name, as root filesystem directories (a template's
 * image must be in the store; no sandbox boots here, so the directories stay empty).
 */
async function imageStore(): Promise<{ HANGAR_SANDBOX_IMAGES: string }> {
  const images = ["python:3.12-slim", "node:20-slim", "x", "python:3.12", "busybox"];
  return { HANGAR_SANDBOX_IMAGES: await emptyImageStore(images) };
}

describe("sandboxes: volumes and templates", () => {
  let h: Hangar;
  let c: SandboxClient;
  before(async () => {
    h = await startHangar({ env: await imageStore() });
    c = sandboxClient(h);
  });
  after(async () => {
    await h?.stop();
  });

  test("the official client drives the whole lifecycle", T, async () => {
    const v = await c.createVolume("data-1", { size: "1Gi" });
    assert.equal(v.name, "data-1");
    assert.equal(v.size, "1Gi");
    assert.equal(v.storage_class, "standard");
    assert.match(v.id!, UUID_RE);
    assert.equal((await c.getVolume("data-1")).id, v.id);
    assert.ok((await c.listVolumes()).some((x) => x.id === v.id));

    const grown = await c.updateVolume("data-1", { size: "2Gi" });
    assert.equal(grown.size, "2Gi");
    const renamed = await c.updateVolume("data-1", { newName: "data-2" });
    assert.equal(renamed.name, "data-2");
    assert.equal(renamed.id, v.id, "a rename keeps the id");
    assert.equal((await c.updateVolume("data-2", {})).id, v.id, "no change: the client falls back to a GET");

    const shrink = await thrown(c.updateVolume("data-2", { size: "1Gi" }));
    assert.ok(shrink instanceof LangSmithSandboxError);
    assert.match(shrink.message, /Storage cannot be decreased\. Current: 2\.00Gi, Requested: 1\.00Gi/);

    const t = await c.createTemplate("py", {
      image: "python:3.12-slim",
      volumeMounts: [{ volume_name: "data-2", mount_path: "/data" }],
    });
    assert.equal(t.name, "py");
    assert.equal(t.image, "python:3.12-slim");
    assert.deepEqual(t.resources, { cpu: "500m", memory: "512Mi" });
    assert.deepEqual(t.volume_mounts, [{ volume_name: "data-2", mount_path: "/data" }]);
    assert.match(t.id!, UUID_RE);
    assert.equal((await c.getTemplate("py")).id, t.id);
    assert.ok((await c.listTemplates()).some((x) => x.id === t.id));
    const t2 = await c.updateTemplate("py", { newName: "py2" });
    assert.equal(t2.name, "py2");
    assert.equal(t2.id, t.id);
    assert.equal((await c.updateTemplate("py2", {})).id, t.id);

    const inUse = await thrown(c.deleteVolume("data-2"));
    assert.ok(inUse instanceof LangSmithResourceInUseError, String(inUse));
    assert.match(inUse.message, /in use by templates: py2/);

    await c.createTemplate("other", { image: "node:20-slim", cpu: "1", memory: "1Gi", storage: "2Gi" });
    assert.deepEqual((await c.getTemplate("other")).resources, { cpu: "1", memory: "1Gi", storage: "2Gi" });
    const templateClash = await thrown(c.updateTemplate("other", { newName: "py2" }));
    assert.ok(templateClash instanceof LangSmithResourceNameConflictError, String(templateClash));
    assert.match(templateClash.message, /py2/);

    await c.createVolume("data-3", { size: "1Gi" });
    const volumeClash = await thrown(c.updateVolume("data-3", { newName: "data-2" }));
    assert.ok(volumeClash instanceof LangSmithResourceNameConflictError, String(volumeClash));
    assert.match(volumeClash.message, /data-2/);

    const duplicateVolume = await thrown(c.createVolume("data-3", { size: "1Gi" }));
    assert.ok(duplicateVolume instanceof LangSmithSandboxError, "the client loses a createVolume 409's body");
    assert.match(duplicateVolume.message, /409/);
    const duplicateTemplate = await thrown(c.createTemplate("other", { image: "x" }));
    assert.ok(duplicateTemplate instanceof LangSmithSandboxError);
    assert.match(duplicateTemplate.message, /Template 'other' already exists/);
    const missingVolume = await thrown(
      c.createTemplate("dangling", {
        image: "x",
        volumeMounts: [{ volume_name: "ghost", mount_path: "/g" }],
      }),
    );
    assert.ok(missingVolume instanceof LangSmithSandboxError);
    assert.match(missingVolume.message, /Volume 'ghost' not found/);

    await c.deleteTemplate("other");
    await c.deleteTemplate("py2");
    await c.deleteVolume("data-2");
    await c.deleteVolume("data-3");
    for (const missing of [
      () => c.getVolume("data-2"),
      () => c.updateVolume("data-2", { size: "9Gi" }),
      () => c.deleteVolume("data-2"),
      () => c.getTemplate("py2"),
      () => c.updateTemplate("py2", { newName: "py3" }),
      () => c.deleteTemplate("py2"),
    ]) {
      const err = await thrown(missing());
      assert.ok(err instanceof LangSmithResourceNotFoundError, String(err));
    }
    assert.ok(!(await c.listVolumes()).some((x) => x.id === v.id));
    assert.ok(!(await c.listTemplates()).some((x) => x.id === t.id));
  });

  test("volume create, get, list: exact statuses and shapes", T, async () => {
    const created = await api(h, "POST", "/volumes", { name: "shape-1", size: "10Gi" });
    assert.equal(created.status, 201, ctx(created));
    assertVolumeShape(created.body, { name: "shape-1", size: "10Gi" });
    assert.equal(created.body.created_at, created.body.updated_at);

    const got = await api(h, "GET", "/volumes/shape-1");
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, created.body);

    const withClass = await api(h, "POST", "/volumes", {
      name: "shape-2",
      size: "512Mi",
      storage_class: "standard",
      wait_for_ready: true,
      timeout: 60,
    });
    assert.equal(withClass.status, 201, ctx(withClass));
    assertVolumeShape(withClass.body, { name: "shape-2", size: "512Mi" });

    const list = await api(h, "GET", "/volumes?name_contains=shape-");
    assert.equal(list.status, 200);
    assert.deepEqual(Object.keys(list.body).sort(), ["offset", "volumes"]);
    assert.deepEqual(
      list.body.volumes.map((v: { name: string }) => v.name),
      ["shape-1", "shape-2"],
    );
    assert.equal(list.body.offset, 0);

    const duplicate = await api(h, "POST", "/volumes", { name: "shape-1", size: "1Gi" });
    assert.equal(typedError(duplicate, 409, "Conflict"), "Volume 'shape-1' already exists");

    for (const name of ["shape-1", "shape-2"]) {
      const res = await api(h, "DELETE", `/volumes/${name}`);
      assert.equal(res.status, 204);
      assert.equal(res.text, "");
    }
  });

  test("PATCH volume: a shrink is a 400 ResizeError with both sizes in Gi, two decimals", T, async () => {
    await api(h, "POST", "/volumes", { name: "shrink-me", size: "10Gi" });
    const res = await api(h, "PATCH", "/volumes/shrink-me", { size: "5Gi" });
    assert.equal(
      typedError(res, 400, "ResizeError"),
      "Volume 'shrink-me' resize failed: Storage cannot be decreased. Current: 10.00Gi, Requested: 5.00Gi",
    );
    const odd = await api(h, "PATCH", "/volumes/shrink-me", { size: "500Mi" });
    assert.match(typedError(odd, 400, "ResizeError"), /Current: 10\.00Gi, Requested: 0\.49Gi$/);
    const decimal = await api(h, "PATCH", "/volumes/shrink-me", { size: "10G" });
    assert.match(typedError(decimal, 400, "ResizeError"), /Current: 10\.00Gi, Requested: 9\.31Gi$/);
    // A shrink combined with a rename changes nothing.
    const both = await api(h, "PATCH", "/volumes/shrink-me", { name: "shrunk", size: "1Gi" });
    typedError(both, 400, "ResizeError");
    const after = await api(h, "GET", "/volumes/shrink-me");
    assert.equal(after.body.size, "10Gi");
    assert.equal((await api(h, "GET", "/volumes/shrunk")).status, 404);
  });

  test("PATCH volume: an equal size is allowed, in any spelling; growth is recorded", T, async () => {
    const created = (await api(h, "POST", "/volumes", { name: "same-size", size: "10Gi" })).body;
    const same = await api(h, "PATCH", "/volumes/same-size", { size: "10Gi" });
    assert.equal(same.status, 200, ctx(same));
    assert.deepEqual(same.body, created, "nothing changed, not even updated_at");
    const respelled = await api(h, "PATCH", "/volumes/same-size", { size: "10240Mi" });
    assert.equal(respelled.status, 200, ctx(respelled));
    assert.equal(respelled.body.size, "10240Mi");
    const grown = await api(h, "PATCH", "/volumes/same-size", { size: "11Gi" });
    assert.equal(grown.status, 200);
    assert.equal(grown.body.size, "11Gi");
    assert.equal(grown.body.id, created.id);
    assert.equal(grown.body.created_at, created.created_at);
    assert.ok(grown.body.updated_at >= created.updated_at);
    const empty = await api(h, "PATCH", "/volumes/same-size", {});
    assert.equal(empty.status, 200);
    assert.equal(empty.body.size, "11Gi");
    const nulls = await api(h, "PATCH", "/volumes/same-size", { name: null, size: null });
    assert.equal(nulls.status, 200);
    assert.equal(nulls.body.name, "same-size");
    const selfRename = await api(h, "PATCH", "/volumes/same-size", { name: "same-size" });
    assert.equal(selfRename.status, 200, "renaming to its own name is not a conflict");
  });

  test("PATCH volume: rename and grow at once; rename conflict 409; unknown name 404", T, async () => {
    const a = (await api(h, "POST", "/volumes", { name: "ren-a", size: "1Gi" })).body;
    await api(h, "POST", "/volumes", { name: "ren-b", size: "1Gi" });
    const both = await api(h, "PATCH", "/volumes/ren-a", { name: "ren-c", size: "3Gi" });
    assert.equal(both.status, 200, ctx(both));
    assert.equal(both.body.id, a.id);
    assert.equal(both.body.name, "ren-c");
    assert.equal(both.body.size, "3Gi");
    assert.equal((await api(h, "GET", "/volumes/ren-a")).status, 404);

    const clash = await api(h, "PATCH", "/volumes/ren-c", { name: "ren-b", size: "4Gi" });
    const message = typedError(clash, 409, "Conflict");
    assert.match(message, /^Volume name 'ren-b' is already in use/);
    assert.match(message, /already exists/);
    assert.equal((await api(h, "GET", "/volumes/ren-c")).body.size, "3Gi", "a refused PATCH changes nothing");

    for (const [method, path, body] of [
      ["GET", "/volumes/nope", undefined],
      ["PATCH", "/volumes/nope", { size: "1Gi" }],
      ["PATCH", "/volumes/nope", { name: "other" }],
      ["DELETE", "/volumes/nope", undefined],
      ["GET", "/volumes/Not_A_Name", undefined],
      ["GET", "/volumes/a%2Fb", undefined],
    ] as const) {
      const res = await api(h, method, path, body);
      assert.match(typedError(res, 404, "NotFound"), /^Volume '.+' not found$/, `${method} ${path}`);
    }
    const named = await api(h, "GET", "/volumes/nope");
    assert.deepEqual(named.body, { detail: { error: "NotFound", message: "Volume 'nope' not found" } });
  });

  test("malformed bodies, bad names and bad quantities are 422 with string locs", T, async () => {
    await api(h, "POST", "/volumes", { name: "valid-vol", size: "1Gi" });
    const cases: [string, string, unknown, string[]][] = [
      ["POST", "/volumes", "{not json", ["body"]],
      ["POST", "/volumes", [], ["body"]],
      ["POST", "/volumes", '"a string"', ["body"]],
      ["POST", "/volumes", { size: "1Gi" }, ["body", "name"]],
      ["POST", "/volumes", { name: "no-size" }, ["body", "size"]],
      ["POST", "/volumes", { name: "Upper", size: "1Gi" }, ["body", "name"]],
      ["POST", "/volumes", { name: "under_score", size: "1Gi" }, ["body", "name"]],
      ["POST", "/volumes", { name: "1digit", size: "1Gi" }, ["body", "name"]],
      ["POST", "/volumes", { name: "trailing-", size: "1Gi" }, ["body", "name"]],
      ["POST", "/volumes", { name: "x".repeat(64), size: "1Gi" }, ["body", "name"]],
      ["POST", "/volumes", { name: 42, size: "1Gi" }, ["body", "name"]],
      ["POST", "/volumes", { name: "bad-size", size: "abc" }, ["body", "size"]],
      ["POST", "/volumes", { name: "bad-size", size: "10GB" }, ["body", "size"]],
      ["POST", "/volumes", { name: "bad-size", size: "10gi" }, ["body", "size"]],
      ["POST", "/volumes", { name: "bad-size", size: "-1Gi" }, ["body", "size"]],
      ["POST", "/volumes", { name: "bad-size", size: "0" }, ["body", "size"]],
      ["POST", "/volumes", { name: "bad-size", size: 10 }, ["body", "size"]],
      ["POST", "/volumes", { name: "bad-size", size: "1Ei" }, ["body", "size"]],
      [
        "POST",
        "/volumes",
        { name: "bad-class", size: "1Gi", storage_class: "gold" },
        ["body", "storage_class"],
      ],
      ["POST", "/volumes", { name: "bad-timeout", size: "1Gi", timeout: 1 }, ["body", "timeout"]],
      ["PATCH", "/volumes/valid-vol", "{", ["body"]],
      ["PATCH", "/volumes/valid-vol", { size: "lots" }, ["body", "size"]],
      ["PATCH", "/volumes/valid-vol", { size: "2Gi", name: "Bad Name" }, ["body", "name"]],
      ["PATCH", "/volumes/valid-vol", { name: "" }, ["body", "name"]],
      ["PATCH", "/volumes/valid-vol", { storage_class: "standard" }, ["body", "storage_class"]],
      ["PATCH", "/volumes/nope", { size: "bad" }, ["body", "size"]],
      ["GET", "/volumes?limit=0", undefined, ["query", "limit"]],
      ["GET", "/volumes?limit=501", undefined, ["query", "limit"]],
      ["GET", "/volumes?limit=abc", undefined, ["query", "limit"]],
      ["GET", "/volumes?offset=-1", undefined, ["query", "offset"]],
      ["GET", "/templates?limit=0", undefined, ["query", "limit"]],
      ["POST", "/templates", { name: "t", resources: { cpu: "1", memory: "1Gi" } }, ["body", "image"]],
      ["POST", "/templates", { name: "t", image: "" }, ["body", "image"]],
      ["POST", "/templates", { name: "t", image: "x" }, ["body", "resources"]],
      [
        "POST",
        "/templates",
        { name: "T", image: "x", resources: { cpu: "1", memory: "1Gi" } },
        ["body", "name"],
      ],
      [
        "POST",
        "/templates",
        { name: "t", image: "x", resources: { cpu: "lots", memory: "1Gi" } },
        ["body", "resources", "cpu"],
      ],
      [
        "POST",
        "/templates",
        { name: "t", image: "x", resources: { cpu: "1", memory: "1GB" } },
        ["body", "resources", "memory"],
      ],
      [
        "POST",
        "/templates",
        { name: "t", image: "x", resources: { cpu: "1", memory: "1Gi", storage: "-2Gi" } },
        ["body", "resources", "storage"],
      ],
      [
        "POST",
        "/templates",
        {
          name: "t",
          image: "x",
          resources: { cpu: "1", memory: "1Gi" },
          volume_mounts: [{ volume_name: "valid-vol", mount_path: "relative" }],
        },
        ["body", "volume_mounts", "0", "mount_path"],
      ],
      [
        "POST",
        "/templates",
        {
          name: "t",
          image: "x",
          resources: { cpu: "1", memory: "1Gi" },
          volume_mounts: [{ mount_path: "/a" }],
        },
        ["body", "volume_mounts", "0", "volume_name"],
      ],
      [
        "POST",
        "/templates",
        {
          name: "t",
          image: "x",
          resources: { cpu: "1", memory: "1Gi" },
          volume_mounts: [
            { volume_name: "valid-vol", mount_path: "/a" },
            { volume_name: "valid-vol", mount_path: "/a" },
          ],
        },
        ["body", "volume_mounts", "1", "mount_path"],
      ],
    ];
    for (const [method, path, body, loc] of cases) {
      validation(
        await api(h, method, path, body),
        loc,
        `${method} ${path} ${JSON.stringify(body)?.slice(0, 80)}`,
      );
    }
    // Nothing was written by any of them.
    const vol = await api(h, "GET", "/volumes/valid-vol");
    assert.equal(vol.body.size, "1Gi");
    assert.equal((await api(h, "GET", "/templates/t")).status, 404);
    const names = (await api(h, "GET", "/volumes?limit=500")).body.volumes.map(
      (v: { name: string }) => v.name,
    );
    assert.ok(!names.some((n: string) => n.startsWith("bad-") || n === "no-size"), names.join(","));
    await api(h, "DELETE", "/volumes/valid-vol");
  });

  test("quantities: the Kubernetes grammar, compared in bytes", T, async () => {
    const sizes = ["1073741824", "1024Mi", "1.5Gi", "2e9", "2E9", "3G", "1048576Ki", "0.001Ti", "+1Gi"];
    for (const [i, size] of sizes.entries()) {
      const res = await api(h, "POST", "/volumes", { name: `qty-${i}`, size });
      assert.equal(res.status, 201, `${size}: ${ctx(res)}`);
      assert.equal(res.body.size, size, "the size is echoed as written");
    }
    // 1073741824 bytes = 1Gi: growing to 1024Mi is "equal", shrinking to 1023Mi is refused.
    assert.equal((await api(h, "PATCH", "/volumes/qty-0", { size: "1024Mi" })).status, 200);
    const shrink = await api(h, "PATCH", "/volumes/qty-0", { size: "1073741823" });
    assert.match(typedError(shrink, 400, "ResizeError"), /Current: 1\.00Gi, Requested: 1\.00Gi$/);
    for (const [i] of sizes.entries()) await api(h, "DELETE", `/volumes/qty-${i}`);

    const t = await api(h, "POST", "/templates", {
      name: "qty-template",
      image: "python:3.12",
      resources: { cpu: "0.5", memory: "1e9", storage: "10Gi" },
    });
    assert.equal(t.status, 201, ctx(t));
    assert.deepEqual(t.body.resources, { cpu: "0.5", memory: "1e9", storage: "10Gi" });
    await api(h, "DELETE", "/templates/qty-template");
  });

  test("10 concurrent renames of different volumes to one name: one 200, nine 409", T, async () => {
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      ids.push((await api(h, "POST", "/volumes", { name: `race-${i}`, size: "1Gi" })).body.id);
    }
    const results = await Promise.all(
      ids.map((_, i) => api(h, "PATCH", `/volumes/race-${i}`, { name: "race-winner" })),
    );
    const ok = results.filter((r) => r.status === 200);
    const conflicts = results.filter((r) => r.status === 409);
    assert.equal(ok.length, 1, results.map(ctx).join("\n"));
    assert.equal(conflicts.length, 9, results.map(ctx).join("\n"));
    for (const r of conflicts) typedError(r, 409, "Conflict");
    const winner = await api(h, "GET", "/volumes/race-winner");
    assert.equal(winner.body.id, ok[0]!.body.id);
    const names = (await api(h, "GET", "/volumes?name_contains=race-")).body.volumes.map(
      (v: { name: string }) => v.name,
    );
    assert.equal(names.length, 10);
    assert.equal(names.filter((n: string) => n === "race-winner").length, 1);
    for (const name of names) assert.equal((await api(h, "DELETE", `/volumes/${name}`)).status, 204);
  });

  test("concurrent creates of one name: exactly one 201", T, async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, () => api(h, "POST", "/volumes", { name: "same-create", size: "1Gi" })),
    );
    assert.equal(results.filter((r) => r.status === 201).length, 1, results.map(ctx).join("\n"));
    for (const r of results.filter((r) => r.status !== 201)) typedError(r, 409, "Conflict");
    await api(h, "DELETE", "/volumes/same-create");
  });

  test("deleting a mounted volume is a 409 naming the templates", T, async () => {
    await api(h, "POST", "/volumes", { name: "shared", size: "1Gi" });
    await api(h, "POST", "/volumes", { name: "scratch", size: "1Gi" });
    const mounts = (paths: string[]) =>
      paths.map((p, i) => ({ volume_name: i ? "scratch" : "shared", mount_path: p }));
    const res = { cpu: "250m", memory: "256Mi" };
    for (const name of ["tpl-b", "tpl-a"]) {
      const created = await api(h, "POST", "/templates", {
        name,
        image: "busybox",
        resources: res,
        volume_mounts: mounts(["/shared", "/scratch"]),
      });
      assert.equal(created.status, 201, ctx(created));
      assert.deepEqual(Object.keys(created.body).sort(), TEMPLATE_KEYS);
      assert.deepEqual(created.body.volume_mounts, [
        { volume_name: "shared", mount_path: "/shared" },
        { volume_name: "scratch", mount_path: "/scratch" },
      ]);
    }
    const refused = await api(h, "DELETE", "/volumes/shared");
    assert.equal(
      typedError(refused, 409, "Conflict"),
      "Volume 'shared' is in use by templates: tpl-a, tpl-b. Delete or update the templates first.",
    );
    assert.equal((await api(h, "GET", "/volumes/shared")).status, 200);

    // Mounts follow a volume rename.
    assert.equal((await api(h, "PATCH", "/volumes/shared", { name: "shared-2" })).status, 200);
    assert.deepEqual((await api(h, "GET", "/templates/tpl-a")).body.volume_mounts[0], {
      volume_name: "shared-2",
      mount_path: "/shared",
    });

    assert.equal((await api(h, "DELETE", "/templates/tpl-a")).status, 204);
    assert.match(
      typedError(await api(h, "DELETE", "/volumes/shared-2"), 409, "Conflict"),
      /templates: tpl-b\./,
    );
    assert.equal((await api(h, "DELETE", "/templates/tpl-b")).status, 204);
    assert.equal((await api(h, "DELETE", "/volumes/shared-2")).status, 204);
    assert.equal((await api(h, "DELETE", "/volumes/scratch")).status, 204);
  });

  test("a template that mounts an unknown volume is refused with 400 VolumeNotFound", T, async () => {
    await api(h, "POST", "/volumes", { name: "known", size: "1Gi" });
    const res = await api(h, "POST", "/templates", {
      name: "dangling",
      image: "busybox",
      resources: { cpu: "1", memory: "1Gi" },
      volume_mounts: [
        { volume_name: "known", mount_path: "/k" },
        { volume_name: "ghost", mount_path: "/g" },
        { volume_name: "phantom", mount_path: "/p" },
      ],
    });
    assert.equal(
      typedError(res, 400, "VolumeNotFound"),
      "Volumes 'ghost', 'phantom' not found: a template can only mount existing volumes.",
    );
    assert.equal((await api(h, "GET", "/templates/dangling")).status, 404);
    assert.equal(
      (await api(h, "DELETE", "/volumes/known")).status,
      204,
      "the refused template mounts nothing",
    );
  });

  test("templates: create, get, list, PATCH name only; conflicts and unknown names", T, async () => {
    const body = {
      name: "tpl-x",
      image: "python:3.12-slim",
      resources: { cpu: "500m", memory: "512Mi", storage: "1Gi" },
      proxy_config: { rules: [] },
    };
    const created = await api(h, "POST", "/templates", body);
    assert.equal(created.status, 201, ctx(created));
    assert.deepEqual(Object.keys(created.body).sort(), TEMPLATE_KEYS);
    assert.match(created.body.id, UUID_RE);
    assert.deepEqual(created.body.volume_mounts, []);
    assert.match(created.body.created_at, ISO);
    const got = await api(h, "GET", "/templates/tpl-x");
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, created.body);
    assert.equal(
      typedError(await api(h, "POST", "/templates", body), 409, "Conflict"),
      "Template 'tpl-x' already exists",
    );

    await api(h, "POST", "/templates", { ...body, name: "tpl-y" });
    const clash = await api(h, "PATCH", "/templates/tpl-x", { name: "tpl-y" });
    const message = typedError(clash, 409, "Conflict");
    assert.match(message, /^Template name 'tpl-y' is already in use/);
    assert.match(message, /already exists/);

    const renamed = await api(h, "PATCH", "/templates/tpl-x", { name: "tpl-z" });
    assert.equal(renamed.status, 200, ctx(renamed));
    assert.equal(renamed.body.id, created.body.id);
    assert.equal(renamed.body.name, "tpl-z");
    assert.equal(renamed.body.image, body.image);
    assert.deepEqual(renamed.body.resources, body.resources);
    assert.equal((await api(h, "GET", "/templates/tpl-x")).status, 404);
    assert.equal((await api(h, "PATCH", "/templates/tpl-z", { name: "tpl-z" })).status, 200);

    // Image, resources and volume mounts are fixed at creation.
    validation(await api(h, "PATCH", "/templates/tpl-z", { name: "tpl-w", image: "node:20" }), [
      "body",
      "image",
    ]);
    validation(await api(h, "PATCH", "/templates/tpl-z", { name: "tpl-w", resources: { cpu: "2" } }), [
      "body",
      "resources",
    ]);
    validation(await api(h, "PATCH", "/templates/tpl-z", { name: "tpl-w", volume_mounts: [] }), [
      "body",
      "volume_mounts",
    ]);
    validation(await api(h, "PATCH", "/templates/tpl-z", {}), ["body", "name"]);
    validation(await api(h, "PATCH", "/templates/tpl-z", { name: "x".repeat(64) }), ["body", "name"]);
    validation(await api(h, "PATCH", "/templates/tpl-z", { name: "Bad" }), ["body", "name"]);
    assert.equal((await api(h, "GET", "/templates/tpl-z")).body.image, body.image);
    assert.equal((await api(h, "GET", "/templates/tpl-w")).status, 404);

    for (const [method, path, b] of [
      ["GET", "/templates/nope", undefined],
      ["PATCH", "/templates/nope", { name: "other" }],
      ["DELETE", "/templates/nope", undefined],
    ] as const) {
      assert.deepEqual((await api(h, method, path, b)).body, {
        detail: { error: "NotFound", message: "Template 'nope' not found" },
      });
    }
    assert.equal((await api(h, "DELETE", "/templates/tpl-z")).status, 204);
    assert.equal((await api(h, "DELETE", "/templates/tpl-y")).status, 204);
  });

  test("lists: limit, offset (next page or 0) and name_contains", T, async () => {
    for (const n of ["page-a", "page-b", "page-c", "page-d", "page-e"]) {
      await api(h, "POST", "/volumes", { name: n, size: "1Gi" });
      await api(h, "POST", "/templates", { name: n, image: "x", resources: { cpu: "1", memory: "1Mi" } });
    }
    const names = (r: ApiResponse, key: string) => r.body[key].map((x: { name: string }) => x.name);
    for (const kind of ["volumes", "templates"]) {
      const p1 = await api(h, "GET", `/${kind}?name_contains=page-&limit=2`);
      assert.deepEqual(names(p1, kind), ["page-a", "page-b"]);
      assert.equal(p1.body.offset, 2);
      const p2 = await api(h, "GET", `/${kind}?name_contains=page-&limit=2&offset=2`);
      assert.deepEqual(names(p2, kind), ["page-c", "page-d"]);
      assert.equal(p2.body.offset, 4);
      const p3 = await api(h, "GET", `/${kind}?name_contains=page-&limit=2&offset=4`);
      assert.deepEqual(names(p3, kind), ["page-e"]);
      assert.equal(p3.body.offset, 0);
      const exact = await api(h, "GET", `/${kind}?name_contains=page-&limit=5`);
      assert.equal(exact.body.offset, 0, "no next page when the page ends exactly at the last item");
      assert.deepEqual(names(await api(h, "GET", `/${kind}?name_contains=GE-C`), kind), ["page-c"]);
      assert.deepEqual(names(await api(h, "GET", `/${kind}?name_contains=zzz`), kind), []);
    }
    for (const n of ["page-a", "page-b", "page-c", "page-d", "page-e"]) {
      await api(h, "DELETE", `/templates/${n}`);
      await api(h, "DELETE", `/volumes/${n}`);
    }
  });

  test("each volume has a directory: created on create, kept on rename, removed on delete", T, async () => {
    const before = volumeDirs(h);
    const v = (await api(h, "POST", "/volumes", { name: "dir-vol", size: "1Gi" })).body;
    const dir = join(h.dataDir, "volumes", v.id);
    assert.ok(existsSync(dir), `${dir} should exist after create`);
    assert.equal((await api(h, "PATCH", "/volumes/dir-vol", { name: "dir-vol-2", size: "2Gi" })).status, 200);
    assert.ok(existsSync(dir), "the directory is kept on rename and resize");
    typedError(await api(h, "POST", "/volumes", { name: "dir-vol-2", size: "1Gi" }), 409, "Conflict");
    assert.deepEqual(volumeDirs(h), [...before, v.id].sort(), "a refused create leaves no directory");
    assert.equal((await api(h, "DELETE", "/volumes/dir-vol-2")).status, 204);
    assert.ok(!existsSync(dir), "the directory is removed on delete");
    assert.deepEqual(volumeDirs(h), before);
  });

  test("unknown sandbox routes are JSON 404s", T, async () => {
    const res = await api(h, "GET", "/snapshots");
    assert.equal(res.status, 404);
    assert.equal(typeof res.body.detail, "string");
  });

  test(
    "a template's image must be in the server's image store: 400 ImageNotFound, saying how to import it",
    T,
    async () => {
      const missing = await api(h, "POST", "/templates", {
        name: "no-such-image",
        image: "python:3.13-slim",
        resources: { cpu: "500m", memory: "512Mi" },
      });
      assert.equal(missing.status, 400, missing.text);
      assert.equal(missing.body.detail.error, "ImageNotFound");
      assert.match(missing.body.detail.message, /Image 'python:3\.13-slim' is not in the image store/);
      assert.match(missing.body.detail.message, /hangar images import python:3\.13-slim/);
      assert.equal((await api(h, "GET", "/templates/no-such-image")).status, 404);
      const err = await thrown(c.createTemplate("no-such-image", { image: "ghcr.io/acme/agent:1" }));
      assert.ok(err instanceof LangSmithSandboxError, String(err));
      assert.match(err.message, /ghcr\.io\/acme\/agent:1' is not in the image store/);
      // The built-in image is always there.
      assert.equal((await c.createTemplate("builtin", { image: "hangar/host" })).image, "hangar/host");
      await c.deleteTemplate("builtin");
    },
  );
});

describe("sandboxes: the organization's storage quota", () => {
  let h: Hangar;
  let c: SandboxClient;
  before(async () => {
    h = await startHangar({ env: { HANGAR_SANDBOX_STORAGE_QUOTA: "20Gi" } });
    c = sandboxClient(h);
  });
  after(async () => {
    await h?.stop();
  });

  const usage = async () => {
    const { volumes } = (await api(h, "GET", "/volumes?limit=500")).body as { volumes: { size: string }[] };
    return volumes;
  };

  test(
    "grows and creates past the quota are 429 with a string detail: limit, usage, increase",
    T,
    async () => {
      assert.equal((await api(h, "POST", "/volumes", { name: "q-a", size: "10Gi" })).status, 201);
      const create = await api(h, "POST", "/volumes", { name: "q-b", size: "11Gi" });
      assert.equal(create.status, 429, ctx(create));
      assert.deepEqual(Object.keys(create.body), ["detail"]);
      assert.equal(
        create.body.detail,
        "Storage quota exceeded for organization 'default': limit 20.00Gi, current usage 10.00Gi, requested increase 11.00Gi.",
      );
      assert.equal((await api(h, "GET", "/volumes/q-b")).status, 404);

      const grow = await api(h, "PATCH", "/volumes/q-a", { size: "25Gi" });
      assert.equal(grow.status, 429, ctx(grow));
      assert.equal(typeof grow.body.detail, "string");
      assert.match(grow.body.detail, /limit 20\.00Gi/);
      assert.match(grow.body.detail, /current usage 10\.00Gi/);
      assert.match(grow.body.detail, /requested increase 15\.00Gi/);
      // A refused grow also refuses the rename sent with it.
      assert.equal((await api(h, "PATCH", "/volumes/q-a", { size: "25Gi", name: "q-renamed" })).status, 429);
      assert.equal((await api(h, "GET", "/volumes/q-a")).body.size, "10Gi");

      // Exactly up to the quota is fine; one byte more is not.
      assert.equal((await api(h, "PATCH", "/volumes/q-a", { size: "20Gi" })).status, 200);
      const byte = await api(h, "POST", "/volumes", { name: "q-byte", size: "1" });
      assert.equal(byte.status, 429);
      assert.match(byte.body.detail, /current usage 20\.00Gi/);
      // An equal size needs no headroom.
      assert.equal((await api(h, "PATCH", "/volumes/q-a", { size: "20480Mi" })).status, 200);

      // The official client classifies it as a storage quota.
      const viaClient = await thrown(c.updateVolume("q-a", { size: "21Gi" }));
      assert.ok(viaClient instanceof LangSmithQuotaExceededError, String(viaClient));
      assert.equal(viaClient.quotaType, "storage");
      const createViaClient = await thrown(c.createVolume("q-c", { size: "1Gi" }));
      assert.ok(createViaClient instanceof LangSmithQuotaExceededError, String(createViaClient));
      assert.match(createViaClient.message, /limit 20\.00Gi/);

      // Deleting frees the quota.
      assert.equal((await api(h, "DELETE", "/volumes/q-a")).status, 204);
      assert.equal((await api(h, "POST", "/volumes", { name: "q-b", size: "11Gi" })).status, 201);
      assert.equal((await api(h, "DELETE", "/volumes/q-b")).status, 204);
    },
  );

  test("concurrent grows never exceed the quota", T, async () => {
    assert.deepEqual(await usage(), []);
    for (let i = 0; i < 10; i++) {
      assert.equal((await api(h, "POST", "/volumes", { name: `grow-${i}`, size: "1Gi" })).status, 201);
    }
    // 10Gi used, 10Gi left: ten concurrent +3Gi grows → exactly three fit.
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => api(h, "PATCH", `/volumes/grow-${i}`, { size: "4Gi" })),
    );
    assert.equal(results.filter((r) => r.status === 200).length, 3, results.map(ctx).join("\n"));
    assert.equal(results.filter((r) => r.status === 429).length, 7, results.map(ctx).join("\n"));
    const total = (await usage()).reduce((sum, v) => sum + Number.parseInt(v.size, 10), 0);
    assert.equal(total, 19, "3 × 4Gi + 7 × 1Gi");

    // Concurrent creates against the last 1Gi: exactly one fits.
    const creates = await Promise.all(
      Array.from({ length: 5 }, (_, i) => api(h, "POST", "/volumes", { name: `last-${i}`, size: "1Gi" })),
    );
    assert.equal(creates.filter((r) => r.status === 201).length, 1, creates.map(ctx).join("\n"));
    assert.equal(creates.filter((r) => r.status === 429).length, 4);
    const sizes = (await usage()).reduce((sum, v) => sum + Number.parseInt(v.size, 10), 0);
    assert.equal(sizes, 20);
    // Every recorded volume, and only those, has a directory.
    const ids = (await api(h, "GET", "/volumes?limit=500")).body.volumes
      .map((v: { id: string }) => v.id)
      .sort();
    assert.deepEqual(volumeDirs(h), ids);
  });

  test("volumes persist across a restart; the quota follows the environment", T, async () => {
    const before = (await api(h, "GET", "/volumes?limit=500")).body.volumes;
    assert.equal(before.length, 11);
    await h.stop();
    h = await startHangar({ dataDir: h.dataDir, env: { HANGAR_SANDBOX_STORAGE_QUOTA: "30Gi" } });
    c = sandboxClient(h);
    assert.deepEqual((await api(h, "GET", "/volumes?limit=500")).body.volumes, before);
    assert.equal((await api(h, "POST", "/volumes", { name: "after-restart", size: "10Gi" })).status, 201);
    const over = await api(h, "POST", "/volumes", { name: "too-much", size: "1" });
    assert.equal(over.status, 429);
    assert.match(over.body.detail, /limit 30\.00Gi, current usage 30\.00Gi/);
  });
});

describe("sandboxes: a bad HANGAR_SANDBOX_STORAGE_QUOTA stops the server at start", () => {
  test("the error names the variable", T, async () => {
    await assert.rejects(
      startHangar({ env: { HANGAR_SANDBOX_STORAGE_QUOTA: "plenty" } }),
      /HANGAR_SANDBOX_STORAGE_QUOTA=plenty/,
    );
  });
});
