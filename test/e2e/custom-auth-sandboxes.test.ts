/**
 * Custom auth in the sandbox area (issue 32, items 8 and 18), on bubblewrap: the fixture's handler
 * (test/e2e/fixtures/auth/auth.ts) stamps an owner on every sandbox, volume, template and pool and
 * shows each user only theirs. alice and bob drive it through the official sandbox client
 * (`langsmith-sbx`, the user's token as its API key: the server has no API keys, the handler reads
 * `X-Api-Key`), and through raw HTTP and WebSockets where bob reaches for what is alice's.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  LangSmithResourceNotFoundError,
  type Sandbox,
  SandboxClient,
} from "langsmith-sbx/experimental/sandbox";
import WebSocket from "ws";
import { AUTH_CONFIG, token } from "../helpers/auth-tokens.js";
import { type FreshDatabase, freshDatabase, PG_SKIP } from "../helpers/postgres.js";
import { assertDetail, type Hangar, http, startHangar } from "../helpers/server.js";

const T = { timeout: 120_000 };
const IMAGE = "hangar/host";
const b64 = (text: string) => Buffer.from(text).toString("base64url");

async function thrown(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected the call to fail, it succeeded");
}

/** What a WebSocket upgrade came to: the HTTP status of a refusal, or the subprotocol of an open socket. */
function upgrade(
  url: string,
  opts: { protocols?: string[]; headers?: Record<string, string> },
): Promise<{ status: number; body?: string; protocol?: string; ws?: WebSocket }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, opts.protocols ?? [], { headers: opts.headers });
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on("upgrade", (res) => {
      const protocol = res.headers["sec-websocket-protocol"];
      // Checked here, before `ws` itself refuses an answer it did not offer.
      ws.once("open", () => resolve({ status: 101, protocol: protocol as string | undefined, ws }));
    });
    ws.on("error", (err) => reject(err));
  });
}

/** SQLite, and Postgres when HANGAR_TEST_POSTGRES_URI is set (the filters are SQL on each). */
const targets = [
  { name: "sqlite", env: async () => ({}), cleanup: async () => {} },
  (() => {
    let db: FreshDatabase | undefined;
    return {
      name: "postgres",
      skip: PG_SKIP,
      env: async () => {
        db = await freshDatabase("hangar_sbx_auth");
        return { POSTGRES_URI: db.uri };
      },
      cleanup: async () => db?.drop(),
    };
  })(),
];

for (const target of targets)
  describe(`custom auth in the sandbox area (bwrap, ${target.name})`, {
    skip: (target as { skip?: string }).skip,
  }, () => {
    let h: Hangar;
    let tokens: Record<"alice" | "bob" | "reader", string>;
    let alice: SandboxClient;
    let bob: SandboxClient;
    let box: Sandbox;
    const clientOf = (who: keyof typeof tokens) =>
      new SandboxClient({ apiEndpoint: `${h.url}/v2/sandboxes`, apiKey: tokens[who], maxRetries: 0 });
    const req = (who: keyof typeof tokens | null, method: string, path: string, body?: unknown) =>
      http(h.url, method, `/v2/sandboxes${path}`, body, who ? { "x-api-key": tokens[who] } : {});

    before(async () => {
      tokens = {
        alice: await token("alice", ["delete"]),
        bob: await token("bob", ["delete"]),
        reader: await token("reader", ["read-only"]),
      };
      const env = { ...(await target.env()), HANGAR_SANDBOX_ENGINE: "bwrap" };
      h = await startHangar({ config: AUTH_CONFIG, env });
      alice = clientOf("alice");
      bob = clientOf("bob");
      await alice.createVolume("alice-volume", { size: "64Mi" });
      await alice.createTemplate("alice-template", {
        image: IMAGE,
        volumeMounts: [{ volume_name: "alice-volume", mount_path: "/data" }],
      });
      await alice.createTemplate("alice-plain", { image: IMAGE });
      await alice.createPool("alice-pool", { templateName: "alice-plain", replicas: 1, timeout: 60 });
      box = await alice.createSandbox("alice-template", { name: "alice-box", timeout: 60 });
      assert.equal((await box.run("echo secret > /data/s")).exit_code, 0);
    });
    after(async () => {
      await h?.stop();
      await target.cleanup();
    });

    test("bob sees none of alice's sandboxes, volumes, templates or pools, and changes none", T, async () => {
      // Lists: only one's own.
      assert.deepEqual(
        (await alice.listSandboxes()).map((s) => s.name),
        ["alice-box"],
      );
      assert.deepEqual(await bob.listSandboxes(), []);
      assert.deepEqual(await bob.listVolumes(), []);
      assert.deepEqual(await bob.listTemplates(), []);
      assert.deepEqual(await bob.listPools(), []);
      // By name: not found, exactly as a name that names nothing.
      // (Each call made when awaited: a rejection left waiting would fail the test as unhandled.)
      for (const call of [
        () => bob.getSandbox("alice-box"),
        () => bob.getVolume("alice-volume"),
        () => bob.getTemplate("alice-template"),
        () => bob.getPool("alice-pool"),
      ]) {
        assert.ok((await thrown(call())) instanceof LangSmithResourceNotFoundError);
      }
      const absent = await req("bob", "GET", "/boxes/no-such-box");
      const hidden = await req("bob", "GET", "/boxes/alice-box");
      assert.equal(hidden.status, 404);
      assert.deepEqual(hidden.body, {
        detail: {
          ...absent.body.detail,
          message: absent.body.detail.message.replace("no-such-box", "alice-box"),
        },
      });
      for (const [method, path, body] of [
        ["GET", "/boxes/alice-box/status", undefined],
        ["PATCH", "/boxes/alice-box", { name: "bobs-now" }],
        ["POST", "/boxes/alice-box/stop", undefined],
        ["POST", "/boxes/alice-box/start", undefined],
        ["DELETE", "/boxes/alice-box", undefined],
        ["PATCH", "/volumes/alice-volume", { name: "bobs-volume" }],
        ["DELETE", "/volumes/alice-volume", undefined],
        ["PATCH", "/templates/alice-template", { name: "bobs-template" }],
        ["DELETE", "/templates/alice-template", undefined],
        ["PATCH", "/pools/alice-pool", { replicas: 2 }],
        ["DELETE", "/pools/alice-pool", undefined],
      ] as const) {
        const res = await req("bob", method, path, body);
        assert.equal(res.status, 404, `bob ${method} ${path}: ${res.status} ${res.text}`);
      }
      // What bob makes cannot use alice's template or volume: they are missing to him.
      const fromHers = await req("bob", "POST", "/boxes", { template_name: "alice-template", name: "b" });
      assert.equal(fromHers.status, 404, fromHers.text);
      assert.equal(fromHers.body.detail.error, "TemplateNotFound");
      const pool = await req("bob", "POST", "/pools", {
        name: "p",
        template_name: "alice-plain",
        replicas: 1,
      });
      assert.equal(pool.status, 400, pool.text);
      assert.equal(pool.body.detail.error, "TemplateNotFound");
      const mounting = await req("bob", "POST", "/templates", {
        name: "bobs-template",
        image: IMAGE,
        resources: { cpu: "1", memory: "256Mi" },
        volume_mounts: [
          { volume_name: "alice-volume", mount_path: "/data" },
          { volume_name: "nowhere", mount_path: "/n" },
        ],
      });
      assert.equal(mounting.status, 400, mounting.text);
      assert.equal(mounting.body.detail.error, "VolumeNotFound");
      assert.match(mounting.body.detail.message, /Volumes 'alice-volume', 'nowhere' not found/);
      // bob's own work is his: a volume of his is listed to him alone.
      await bob.createVolume("bobs-volume", { size: "1Mi" });
      assert.deepEqual(
        (await bob.listVolumes()).map((v) => v.name),
        ["bobs-volume"],
      );
      assert.deepEqual(
        (await alice.listVolumes()).map((v) => v.name),
        ["alice-volume"],
      );
      // A handler that refuses a create is a 403.
      assertDetail(
        await req("reader", "POST", "/volumes", { name: "r", size: "1Mi" }),
        403,
        "read-only create",
      );
      // Nothing of alice's moved.
      assert.equal((await alice.getSandbox("alice-box")).status, "ready");
      assert.equal((await alice.getVolume("alice-volume")).name, "alice-volume");
      assert.equal((await alice.getPool("alice-pool")).replicas, 1);
      assert.equal((await alice.getTemplate("alice-template")).name, "alice-template");
    });

    test("a shared template mounts only volumes the box's creator may update", T, async () => {
      // The handler lets everyone read `shared-…` templates; alice's volume stays hers.
      await alice.createTemplate("shared-dev", {
        image: IMAGE,
        volumeMounts: [{ volume_name: "alice-volume", mount_path: "/data" }],
      });
      assert.equal((await bob.getTemplate("shared-dev")).name, "shared-dev");
      const fromShared = await req("bob", "POST", "/boxes", {
        template_name: "shared-dev",
        name: "bobs-dev",
      });
      assert.equal(fromShared.status, 400, fromShared.text);
      assert.equal(fromShared.body.detail.error, "VolumeNotFound");
      assert.match(fromShared.body.detail.message, /Volume 'alice-volume' not found/);
      assert.equal((await req("bob", "GET", "/boxes/bobs-dev")).status, 404);
      // alice, who may update her volume, uses her shared template as before.
      const hers = await alice.createSandbox("shared-dev", { name: "alice-dev", timeout: 60 });
      assert.deepEqual(await hers.run("cat /data/s"), { stdout: "secret\n", stderr: "", exit_code: 0 });
      await alice.deleteSandbox("alice-dev");
    });

    test(
      "a shared template: warm boxes only from the creator's own pools, a 409 names only what one may see",
      T,
      async () => {
        await alice.createTemplate("shared-plain", { image: IMAGE });
        await alice.createPool("alice-shared-pool", {
          templateName: "shared-plain",
          replicas: 1,
          timeout: 60,
        });
        // The client's createPool waits for the pool's replicas to be ready (`wait_for_ready`): the warm
        // box has booted when it returns.
        const warmBefore = new Date().toISOString();
        // A warm box keeps the created_at of its boot: one made now was booted cold.
        const bobs = await req("bob", "POST", "/boxes", {
          template_name: "shared-plain",
          name: "bobs-plain",
        });
        assert.equal(bobs.status, 201, bobs.text);
        assert.ok(bobs.body.created_at >= warmBefore, "bob's box booted cold, not from alice's pool");
        const hers = await req("alice", "POST", "/boxes", {
          template_name: "shared-plain",
          name: "alice-plain-box",
        });
        assert.equal(hers.status, 201, hers.text);
        assert.ok(hers.body.created_at < warmBefore, "alice's box is her pool's warm one");
        // Deleting the template in use: the 409 names alice's own users, and only counts bob's box.
        const inUse = await req("alice", "DELETE", "/templates/shared-plain");
        assert.equal(inUse.status, 409, inUse.text);
        assert.equal(
          inUse.body.detail.message,
          "Template 'shared-plain' is in use by sandboxes: alice-plain-box and 1 other you cannot see; " +
            "pools: alice-shared-pool. Delete the dependent resources first.",
        );
        await req("bob", "DELETE", "/boxes/bobs-plain");
        await req("alice", "DELETE", "/boxes/alice-plain-box");
        await req("alice", "DELETE", "/pools/alice-shared-pool");
      },
    );

    test(
      "the data plane is sandboxes:exec: bob cannot run, upload, download or open a terminal in hers",
      T,
      async () => {
        const url = box.dataplane_url!;
        const as = (who: "alice" | "bob") => ({ "x-api-key": tokens[who] });
        const execute = (who: "alice" | "bob") =>
          fetch(`${url}/execute`, {
            method: "POST",
            headers: { ...as(who), "content-type": "application/json" },
            body: JSON.stringify({ command: "id -u; cat /data/s" }),
          });
        assert.equal((await execute("bob")).status, 404);
        const form = new FormData();
        form.append("file", new Blob(["bob was here"]), "x");
        const upload = await fetch(`${url}/upload?path=/data/s`, {
          method: "POST",
          headers: as("bob"),
          body: form,
        });
        assert.equal(upload.status, 404);
        const download = await fetch(`${url}/download?path=/data/s`, { headers: as("bob") });
        assert.equal(download.status, 404);
        const wsUrl = `${url.replace(/^http/, "ws")}/execute/ws`;
        assert.equal((await upgrade(wsUrl, { headers: as("bob") })).status, 404, "the client's WebSocket");
        const terminal = await upgrade(wsUrl, {
          protocols: ["hangar.console", `hangar.key.${b64(tokens.bob)}`],
        });
        assert.equal(terminal.status, 404, "the console's terminal");
        // alice: all of it, and her file is as she left it.
        const mine = await execute("alice");
        assert.equal(mine.status, 200);
        assert.deepEqual(await mine.json(), { stdout: "0\nsecret\n", stderr: "", exit_code: 0 });
        assert.deepEqual(await box.run("cat /data/s"), { stdout: "secret\n", stderr: "", exit_code: 0 });
        assert.equal(new TextDecoder().decode(await box.read("/data/s")), "secret\n");
      },
    );

    test("a WebSocket from a browser page on a foreign origin is refused before it opens", T, async () => {
      const wsUrl = `${box.dataplane_url!.replace(/^http/, "ws")}/execute/ws`;
      const key = { "x-api-key": tokens.alice };
      const foreign = await upgrade(wsUrl, { headers: { ...key, origin: "https://evil.example" } });
      assert.equal(foreign.status, 403, foreign.body);
      assert.match(JSON.parse(foreign.body!).detail, /origin 'https:\/\/evil\.example' refused/);
      const terminal = await upgrade(wsUrl, {
        protocols: ["hangar.console", `hangar.key.${b64(tokens.alice)}`],
        headers: { origin: "null" },
      });
      assert.equal(terminal.status, 403, "the console's terminal from an opaque origin");
      // Without http.cors: the server's own origin (the console) and loopback pages (Studio, dev).
      for (const origin of [new URL(h.url).origin, "http://localhost:5173", "http://127.0.0.1:3000"]) {
        const opened = await upgrade(wsUrl, { headers: { ...key, origin } });
        assert.equal(opened.status, 101, `${origin}: ${opened.body}`);
        opened.ws!.close();
      }
    });

    test("a WebSocket is never answered with a credential subprotocol", T, async () => {
      const wsUrl = `${box.dataplane_url!.replace(/^http/, "ws")}/execute/ws`;
      const key = `hangar.key.${b64(tokens.alice)}`;
      // The key offered first: the answer is the console's protocol, and the terminal works.
      const opened = await upgrade(wsUrl, { protocols: [key, "hangar.console"] });
      assert.equal(opened.status, 101);
      assert.equal(opened.protocol, "hangar.console");
      const ws = opened.ws!;
      const frames: any[] = [];
      const closed = new Promise<void>((resolve) => ws.on("close", () => resolve()));
      ws.on("message", (data) => frames.push(JSON.parse(String(data))));
      ws.send(JSON.stringify({ type: "execute", command: "echo from-the-terminal" }));
      await closed;
      assert.ok(
        frames.some((f) => f.type === "stdout" && f.data === "from-the-terminal\n"),
        JSON.stringify(frames),
      );
      // Credentials and nothing else to answer: refused before the upgrade, saying what to offer.
      for (const protocols of [[key], [key, `hangar.authorization.${b64(`Bearer ${tokens.alice}`)}`]]) {
        const refused = await upgrade(wsUrl, { protocols });
        assert.equal(refused.status, 400, refused.body);
        assert.match(JSON.parse(refused.body!).detail, /must also offer 'hangar\.console'/);
      }
    });
  });
