/**
 * BoxService (src/sandboxes/boxes.ts) in process, on real SQLite storage: the lifecycle states, a boot
 * that fails, TTLs, warm pools and the reboot at start. The driver is a double of the SandboxDriver port
 * that keeps its "sandboxes" in memory, so what is checked is the service's bookkeeping, not an engine
 * (the engines have their own e2e files).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { silentLogger } from "../../src/logger.js";
import { BoxService } from "../../src/sandboxes/boxes.js";
import type { ExecProcess, SandboxDriver, SandboxSpec } from "../../src/sandboxes/provisioner.js";
import { DEFAULT_ORG, type Storage } from "../../src/storage/ports.js";
import { openSqliteStorage } from "../../src/storage/sql/index.js";
import { waitFor } from "../helpers/server.js";

/**
 * The port's double: boots are instant unless the image is "missing:*" (fails as an absent image would),
 * "broken:*" (fails otherwise) or "slow:*" (waits for `release`).
 */
class MemoryDriver implements SandboxDriver {
  readonly engine = "memory";
  readonly running = new Set<string>();
  readonly boots: SandboxSpec[] = [];
  readonly removed: string[] = [];
  #release: (() => void)[] = [];

  unavailable = async () => null;
  imageProblem = async () => null;
  async boot(spec: SandboxSpec): Promise<void> {
    this.boots.push(spec);
    if (spec.image.startsWith("missing:")) throw new Error(`Image '${spec.image}' not found`);
    if (spec.image.startsWith("broken:")) throw new Error("the init process exited with code 1");
    if (spec.image.startsWith("slow:")) await new Promise<void>((r) => this.#release.push(r));
    this.running.add(spec.id);
  }
  release(): void {
    for (const r of this.#release.splice(0)) r();
  }
  isRunning(id: string): boolean {
    return this.running.has(id);
  }
  exec(): ExecProcess {
    throw new Error("not used here");
  }
  async stop(id: string): Promise<void> {
    this.running.delete(id);
  }
  async remove(id: string): Promise<void> {
    this.running.delete(id);
    this.removed.push(id);
  }
  async close(): Promise<void> {
    this.running.clear();
  }
}

let dataDir: string;
let storage: Storage;
const services: BoxService[] = [];
const org = DEFAULT_ORG;

async function service(driver = new MemoryDriver()) {
  const boxes = new BoxService({
    boxes: storage.sandboxBoxes,
    sandboxes: storage.sandboxes,
    driver,
    log: silentLogger,
  });
  services.push(boxes);
  await boxes.start();
  return { boxes, driver };
}

let templates = 0;
async function template(image = "alpine:3") {
  const name = `t${++templates}`;
  const created = await storage.sandboxes.createTemplate(org, {
    id: `00000000-0000-4000-8000-${String(templates).padStart(12, "0")}`,
    name,
    image,
    resources: { cpu: "500m", memory: "256Mi" },
    volume_mounts: [],
  });
  assert.equal(created.status, "created");
  return name;
}

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "hangar-boxes-"));
  storage = await openSqliteStorage({ dataDir, synchronous: "normal" });
});

after(async () => {
  for (const s of services) await s.close();
  await storage.close();
  await rm(dataDir, { recursive: true, force: true });
});

test("a create boots the box: provisioning, then ready; the driver gets the template's spec", async () => {
  const { boxes, driver } = await service();
  const name = await template();
  const box = await boxes.create(org, { template_name: name, name: "first" });
  assert.equal(box.status, "ready");
  assert.equal(box.pool_id, null);
  assert.ok(driver.isRunning(box.id));
  assert.deepEqual(driver.boots.at(-1), {
    id: box.id,
    hostname: "first",
    image: "alpine:3",
    cpuMillicores: 500,
    memoryBytes: 256 * 1024 * 1024,
    storageBytes: null,
    mounts: [],
  });
  assert.equal((await boxes.running(org, box.id)).id, box.id);

  const slow = await template("slow:image");
  const pending = await boxes.create(org, { template_name: slow, wait_for_ready: false });
  assert.equal(pending.status, "provisioning");
  await assert.rejects(boxes.running(org, pending.id), /not ready \(status: provisioning\)/);
  await waitFor(() => driver.boots.some((b) => b.id === pending.id), { what: "the boot under way" });
  driver.release();
  await waitFor(async () => (await boxes.get(org, pending.name)).status === "ready", { what: "ready" });

  await assert.rejects(boxes.create(org, { template_name: "absent" }), /Template 'absent' not found/);
  await assert.rejects(boxes.create(org, { template_name: name, name: "first" }), /'first' already exists/);
});

test("a boot that fails leaves the box failed with the reason, and the create answers 503 naming the kind", async () => {
  const { boxes } = await service();
  for (const [image, name, type, reason] of [
    ["missing:nothing", "no-image", "ImagePull", /Image 'missing:nothing' not found/],
    ["broken:init", "no-init", "SandboxConfig", /init process exited/],
  ] as const) {
    const err = await boxes.create(org, { template_name: await template(image), name }).then(
      () => assert.fail("the create succeeded"),
      (e) => e,
    );
    assert.equal(err.kind, "unavailable", name);
    assert.equal(err.type, type, name);
    assert.match(err.message, reason, name);
    const box = await boxes.get(org, name);
    assert.equal(box.status, "failed", name);
    assert.match(box.status_message ?? "", reason, name);
  }
});

test("stop, start, and a sandbox that dies on its own", async () => {
  const { boxes, driver } = await service();
  const box = await boxes.create(org, { template_name: await template(), name: "cycled" });
  await boxes.stopBox(org, "cycled");
  assert.equal(driver.isRunning(box.id), false);
  const stopped = await boxes.get(org, "cycled");
  assert.equal(stopped.status, "stopped");
  assert.equal(stopped.status_message, "Stopped by request");
  await assert.rejects(boxes.running(org, box.id), /not ready \(status: stopped\)/);

  await boxes.startBox(org, "cycled");
  await waitFor(async () => (await boxes.get(org, "cycled")).status === "ready", { what: "ready again" });
  assert.ok(driver.isRunning(box.id));

  boxes.onSandboxExit(box.id, "out of memory");
  await waitFor(async () => (await boxes.get(org, "cycled")).status === "stopped", { what: "stopped" });
  assert.equal((await boxes.get(org, "cycled")).status_message, "The sandbox stopped: out of memory");

  await boxes.delete(org, "cycled");
  assert.ok(driver.removed.includes(box.id));
  await assert.rejects(boxes.get(org, "cycled"), /Sandbox 'cycled' not found/);
});

test("a box past its TTL is deleted by the sweeper, processes and record; one without a TTL stays", async () => {
  const { boxes, driver } = await service();
  const name = await template();
  const short = await boxes.create(org, { template_name: name, ttl_seconds: 1 });
  const kept = await boxes.create(org, { template_name: name });
  assert.ok(short.expires_at);
  assert.equal(kept.expires_at, null);
  await waitFor(
    () =>
      boxes.get(org, short.name).then(
        () => false,
        () => true,
      ),
    {
      timeoutMs: 5_000,
      what: "the expired box deleted",
    },
  );
  assert.ok(driver.removed.includes(short.id));
  assert.equal((await boxes.get(org, kept.name)).status, "ready");
});

test("a pool keeps its warm boxes; a create claims one and the pool makes another", async () => {
  const { boxes, driver } = await service();
  const name = await template();
  const pool = await boxes.createPool(org, { name: "warm", template_name: name, replicas: 2 });
  const warm = await storage.sandboxBoxes.poolBoxes(pool.id);
  assert.deepEqual(
    warm.map((b) => b.status),
    ["ready", "ready"],
  );
  const bootsBefore = driver.boots.length;
  const claimed = await boxes.create(org, { template_name: name, name: "from-pool" });
  assert.equal(claimed.status, "ready");
  assert.equal(claimed.pool_id, null);
  assert.ok(
    warm.some((b) => b.id === claimed.id),
    "the box is one of the warm ones",
  );
  await waitFor(
    async () =>
      (await storage.sandboxBoxes.poolBoxes(pool.id)).filter((b) => b.status === "ready").length === 2,
    { what: "the pool refilled" },
  );
  assert.equal(driver.boots.length, bootsBefore + 1, "one boot: the refill, none for the claim");

  // `warm_pools: false` (a caller who may not read this pool): a cold boot, the pool untouched.
  const cold = await boxes.create(org, { template_name: name, warm_pools: false });
  assert.ok(!(await storage.sandboxBoxes.poolBoxes(pool.id)).some((b) => b.id === cold.id));

  const left = (await storage.sandboxBoxes.poolBoxes(pool.id)).map((b) => b.id);
  await boxes.deletePool(org, "warm");
  for (const id of left) assert.ok(driver.removed.includes(id), "a warm box of the deleted pool is removed");
  assert.equal((await boxes.get(org, "from-pool")).status, "ready", "a claimed box outlives its pool");
});

test("at start, boxes that were ready or provisioning are booted again; stopped ones are not", async () => {
  const first = await service();
  const name = await template();
  const up = await first.boxes.create(org, { template_name: name });
  const down = await first.boxes.create(org, { template_name: name });
  await first.boxes.stopBox(org, down.name);

  // A second service on the same storage, as a restarted server: its driver runs nothing yet.
  const second = await service();
  await waitFor(() => second.driver.isRunning(up.id), { what: "the ready box booted again" });
  assert.equal((await second.boxes.get(org, up.name)).status, "ready");
  assert.equal(second.driver.isRunning(down.id), false);
  assert.equal((await second.boxes.get(org, down.name)).status, "stopped");
});
