/**
 * The protocol's WebSocket (`GET /threads/{id}/stream/events` upgraded) on a real server, spoken frame
 * by frame with the `ws` package: invalid frames, subscriptions (answered at once, across runs,
 * overlapping, unsubscribed), replay on subscribe, `subscription.reconnect`, rejections as close codes
 * with API keys and custom auth (credentials as headers and as subprotocols), and a client that stops
 * reading, watched by the server process's memory; and scaled out, a socket on one API process following
 * a run started on the other, restored there by `subscription.reconnect`.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { SignJWT } from "jose";
import WebSocket from "ws";
import { Cluster, SKIP } from "../helpers/cluster.js";
import { type Hangar, REPO_ROOT, startHangar } from "../helpers/server.js";

const FIXTURE = join(REPO_ROOT, "test", "e2e", "fixtures", "protocol-clients");
const AUTH_FIXTURE = join(REPO_ROOT, "test", "e2e", "fixtures", "auth", "langgraph.json");

type Frame = { type: "success" | "error" | "event"; id?: number | null; [key: string]: any };

/** A protocol WebSocket that keeps every frame it receives, and waits for the ones a test wants. */
class Socket {
  readonly frames: Frame[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  #waiters = new Set<() => void>();
  #nextId = 1;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      this.frames.push(JSON.parse(String(data)));
      for (const wake of this.#waiters) wake();
    });
    this.closed = new Promise((resolve) =>
      ws.on("close", (code, reason) => resolve({ code, reason: String(reason) })),
    );
  }

  static open(
    url: string,
    opts: { headers?: Record<string, string>; protocols?: string[] } = {},
  ): Promise<Socket> {
    const ws = new WebSocket(url.replace(/^http/, "ws"), opts.protocols ?? [], { headers: opts.headers });
    const socket = new Socket(ws);
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(socket));
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
  }

  /** Opens, expecting the server to close the connection at once; resolves with the close. */
  static async rejected(url: string, opts: { headers?: Record<string, string>; protocols?: string[] } = {}) {
    const socket = await Socket.open(url, opts);
    return socket.closed;
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }

  /** Sends a command and resolves with its answer. */
  async command(method: string, params?: unknown): Promise<Frame> {
    const id = this.#nextId++;
    this.send({ id, method, ...(params !== undefined && { params }) });
    return this.until((f) => f.type !== "event" && f.id === id);
  }

  /** The first frame received (from the start) that matches; waits for it up to `ms`. */
  async until(match: (f: Frame) => boolean, ms = 20_000, from = 0): Promise<Frame> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.frames.slice(from).find(match);
      if (found) return found;
      if (Date.now() > deadline)
        throw new Error(`no such frame within ${ms} ms; got ${JSON.stringify(this.frames.slice(-5))}`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#waiters.delete(wake);
          resolve();
        };
        this.#waiters.add(wake);
        setTimeout(wake, 200);
      });
    }
  }

  events(): Frame[] {
    return this.frames.filter((f) => f.type === "event");
  }

  close(): void {
    this.ws.close();
  }
}

const rootDone = (f: Frame) =>
  f.type === "event" &&
  f.method === "lifecycle" &&
  f.params.namespace.length === 0 &&
  ["completed", "failed", "interrupted"].includes(f.params.data.event);

const human = (content: string) => ({ messages: [{ type: "human", content }] });

describe("protocol WebSocket", () => {
  let hangar: Hangar;
  const url = (threadId: string) => `${hangar.url}/threads/${threadId}/stream/events`;

  before(async () => {
    hangar = await startHangar({
      config: join(FIXTURE, "langgraph.json"),
      env: { HANGAR_TEST_REPLY_MS: "2" },
    });
  });
  after(async () => {
    await hangar?.stop();
  });

  test("a plain GET is told to upgrade (426)", async () => {
    const res = await fetch(url(randomUUID()));
    assert.equal(res.status, 426);
    assert.match((await res.json()).detail, /Upgrade: websocket/);
  });

  test("invalid frames are answered with the protocol's error shape and the socket stays open", async () => {
    const socket = await Socket.open(url(randomUUID()));
    socket.send("not json");
    const notJson = await socket.until((f) => f.type === "error");
    assert.deepEqual(notJson, {
      type: "error",
      id: null,
      error: "invalid_argument",
      message: "Protocol commands must be valid JSON.",
    });
    socket.send({ method: "state.get" });
    socket.send({ id: -1, method: "state.get" });
    socket.send({ id: 1.5, method: "state.get" });
    socket.send({ id: 7 });
    socket.send([1, 2]);
    socket.send("null");
    await socket.until(() => socket.frames.length >= 7);
    for (const frame of socket.frames.slice(1, 7)) {
      assert.equal(frame.type, "error");
      assert.equal(frame.id, null);
      assert.equal(frame.error, "invalid_argument");
      assert.match(frame.message, /integer id and string method/);
    }
    const badParams = await socket.command("state.get", [1]);
    assert.equal(badParams.error, "invalid_argument");
    const unknown = await socket.command("no.such.method", {});
    assert.equal(unknown.type, "error");
    assert.ok(["unknown_command", "no_such_run"].includes(unknown.error), unknown.error);
    const badChannel = await socket.command("subscription.subscribe", { channels: ["nope"] });
    assert.equal(badChannel.error, "invalid_argument");
    const empty = await socket.command("subscription.subscribe", { channels: [] });
    assert.equal(empty.error, "invalid_argument");
    const badDepth = await socket.command("subscription.subscribe", { channels: ["values"], depth: -1 });
    assert.equal(badDepth.error, "invalid_argument");
    // Still open, still answering.
    const ok = await socket.command("subscription.subscribe", { channels: ["values"] });
    assert.equal(ok.type, "success");
    assert.equal(socket.ws.readyState, WebSocket.OPEN);
    socket.close();
  });

  test("subscriptions are answered at once, kept across runs, overlap per spec, and unsubscribe sticks", async () => {
    const threadId = randomUUID();
    const socket = await Socket.open(url(threadId));
    const started = Date.now();
    const a = await socket.command("subscription.subscribe", { channels: ["lifecycle"] });
    assert.ok(Date.now() - started < 2000, "answered before any run exists");
    assert.equal(a.type, "success");
    assert.equal(a.result.replayed_events, 0);
    const b = await socket.command("subscription.subscribe", {
      channels: ["lifecycle", "messages"],
      namespaces: [[]],
      depth: 0,
    });
    assert.notEqual(b.result.subscription_id, a.result.subscription_id);

    const run1 = await socket.command("run.start", { assistant_id: "chat", input: human("one") });
    assert.equal(run1.type, "success", JSON.stringify(run1));
    // Both subscriptions' copies of the run's end (the second may follow the first a little later).
    await socket.until(() => socket.frames.filter(rootDone).length >= 2);
    // Root lifecycle events match both subscriptions: each is sent twice (the SDK dedupes by event_id).
    const rootLifecycle = socket
      .events()
      .filter((e) => e.method === "lifecycle" && e.params.namespace.length === 0);
    const seqs = rootLifecycle.map((e) => e.seq);
    assert.ok(seqs.length >= 4, `root lifecycle twice: ${seqs}`);
    for (const seq of new Set(seqs))
      assert.equal(seqs.filter((s) => s === seq).length, 2, `seq ${seq} twice`);
    // Namespaced lifecycle events match only `a` (b is the root at depth 0).
    const nested = socket.events().filter((e) => e.method === "lifecycle" && e.params.namespace.length > 0);
    for (const seq of new Set(nested.map((e) => e.seq))) {
      assert.equal(nested.filter((e) => e.seq === seq).length, 1);
    }
    for (const e of socket.events()) assert.equal(e.event_id, String(e.seq));

    const unsubscribed = await socket.command("subscription.unsubscribe", {
      subscription_id: b.result.subscription_id,
    });
    assert.deepEqual(unsubscribed.result, {});
    const again = await socket.command("subscription.unsubscribe", {
      subscription_id: b.result.subscription_id,
    });
    assert.equal(again.error, "no_such_subscription");

    const mark = socket.frames.length;
    const lastSeq = Math.max(...socket.events().map((e) => e.seq));
    const run2 = await socket.command("run.start", { assistant_id: "chat", input: human("two") });
    assert.equal(run2.type, "success");
    assert.notEqual(run2.result.run_id, run1.result.run_id);
    await socket.until(rootDone, 20_000, mark + 1);
    const second = socket.frames.slice(mark).filter((f) => f.type === "event");
    assert.ok(second.length > 0, "the first subscription still delivers on the second run");
    assert.ok(
      second.every((e) => e.seq > lastSeq),
      "the thread's seq goes on across runs",
    );
    assert.ok(!second.some((e) => e.method === "messages"), "the unsubscribed subscription delivers nothing");
    const seqs2 = second.map((e) => e.seq);
    assert.equal(new Set(seqs2).size, seqs2.length, "one subscription: each event once");
    socket.close();
  });

  test("subscribing after a run replays the latest run's matching events, as counted in replayed_events", async () => {
    const threadId = randomUUID();
    const first = await Socket.open(url(threadId));
    await first.command("subscription.subscribe", { channels: ["lifecycle"] });
    const run1 = await first.command("run.start", { assistant_id: "chat", input: human("one") });
    await first.until(rootDone);
    const mark = first.frames.length;
    const run2 = await first.command("run.start", { assistant_id: "chat", input: human("two") });
    await first.until(rootDone, 20_000, mark + 1);
    const run2Events = first.frames.slice(mark).filter((f) => f.type === "event");
    first.close();
    assert.notEqual(run1.result.run_id, run2.result.run_id);

    const late = await Socket.open(url(threadId));
    const sub = await late.command("subscription.subscribe", { channels: ["lifecycle"] });
    assert.equal(sub.result.replayed_events, run2Events.length);
    await late.until(() => late.events().length >= run2Events.length);
    const subIndex = late.frames.indexOf(sub);
    assert.ok(
      late.frames.findIndex((f) => f.type === "event") > subIndex,
      "the answer comes before the replayed events",
    );
    assert.deepEqual(
      late.events().map((e) => e.seq),
      run2Events.map((e) => e.seq),
    );
    late.close();
  });

  test("subscription.reconnect restores a closed socket's subscription from last_event_id, on a new socket", async () => {
    const threadId = randomUUID();
    const first = await Socket.open(url(threadId));
    const sub = await first.command("subscription.subscribe", { channels: ["lifecycle", "values"] });
    const run = await first.command("run.start", { assistant_id: "chat", input: human("one") });
    await first.until(rootDone);
    const all = first.events();
    first.close();
    const cut = all[Math.floor(all.length / 2)]!.seq;

    const second = await Socket.open(url(threadId));
    assert.equal((await second.command("subscription.reconnect", {})).error, "invalid_argument");
    assert.equal(
      (await second.command("subscription.reconnect", { run_id: randomUUID() })).error,
      "no_such_run",
    );
    const bad = await second.command("subscription.reconnect", {
      run_id: run.result.run_id,
      last_event_id: "x",
    });
    assert.equal(bad.error, "invalid_argument");
    const restored = await second.command("subscription.reconnect", {
      run_id: run.result.run_id,
      last_event_id: String(cut),
      subscriptions: [sub.result.subscription_id],
    });
    assert.deepEqual(restored.result, { restored: true, missed_events: 0 });
    const expected = all.filter((e) => e.seq > cut).map((e) => e.seq);
    await second.until(() => second.events().length >= expected.length);
    assert.deepEqual(
      second.events().map((e) => e.seq),
      expected,
    );
    // Restored under its id: it can be unsubscribed.
    const unsub = await second.command("subscription.unsubscribe", {
      subscription_id: sub.result.subscription_id,
    });
    assert.equal(unsub.type, "success");
    const unknown = await second.command("subscription.reconnect", {
      run_id: run.result.run_id,
      subscriptions: ["forged"],
    });
    assert.equal(unknown.result.restored, false);
    second.close();
  });

  test("a client that stops reading is closed, and the server's memory stays bounded", async () => {
    const rss = () => {
      const status = readFileSync(`/proc/${hangar.process.pid}/status`, "utf8");
      return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) * 1024;
    };
    // ~80 MB of custom events. Running it once first, unread, takes what the run itself needs (the
    // graph, the buffer's writes: ~180 MB at first); what an unread socket holds comes on top.
    const flood = {
      assistant_id: "flood",
      input: { messages: [{ type: "human", content: JSON.stringify({ count: 8000, size: 10_000 }) }] },
    };
    const warmThread = randomUUID();
    const warm = await fetch(`${hangar.url}/threads/${warmThread}/commands`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: 1, method: "run.start", params: flood }),
    });
    const { result } = await warm.json();
    await fetch(`${hangar.url}/threads/${warmThread}/runs/${result.run_id}/join`);

    const threadId = randomUUID();
    const socket = await Socket.open(url(threadId));
    await socket.command("subscription.subscribe", { channels: ["custom"] });
    const baseline = rss();
    const run = await socket.command("run.start", flood);
    assert.equal(run.type, "success");
    (socket.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    let peak = baseline;
    const watchdog = setInterval(() => {
      peak = Math.max(peak, rss());
    }, 100);
    const tcp = (socket.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    try {
      // Past the server's patience (STALLED_MS, 15 s) with nothing read; then reading again lets the
      // close frame through (or the reset, if the server gave up on delivering it).
      await new Promise((resolve) => setTimeout(resolve, 20_000));
      tcp.resume();
      const close = await Promise.race([
        socket.closed,
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 15_000)),
      ]);
      assert.ok(close, "the server closed a client that read nothing");
      assert.ok([1013, 1006].includes(close.code), `closed with ${close.code} ${close.reason}`);
    } finally {
      clearInterval(watchdog);
    }
    const grown = (peak - baseline) / 2 ** 20;
    assert.ok(grown < 40, `the server grew by ${grown.toFixed(0)} MiB while an 80 MB stream went unread`);
    // The server still serves others.
    const other = await Socket.open(url(randomUUID()));
    assert.equal((await other.command("subscription.subscribe", { channels: ["values"] })).type, "success");
    other.close();
  });
});

describe("protocol WebSocket credentials", () => {
  const KEY = "protocol-ws-key-0123456789abcdef";
  let keyed: Hangar;
  let custom: Hangar;
  const b64 = (s: string) => Buffer.from(s).toString("base64url");
  const secret = new TextEncoder().encode("test-secret-of-the-auth-suite");
  const token = (sub: string) =>
    new SignJWT({ name: sub, permissions: [] })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(sub)
      .sign(secret);

  before(async () => {
    [keyed, custom] = await Promise.all([
      startHangar({ config: join(FIXTURE, "langgraph.json"), env: { HANGAR_API_KEYS: `${KEY}:ws-org` } }),
      startHangar({ config: AUTH_FIXTURE }),
    ]);
  });
  after(async () => {
    await Promise.all([keyed?.stop(), custom?.stop()]);
  });

  test("API keys: none or a wrong one closes with 4401; as a header or a subprotocol it opens", async () => {
    const url = `${keyed.url}/threads/${randomUUID()}/stream/events`;
    const none = await Socket.rejected(url);
    assert.equal(none.code, 4401);
    assert.ok(none.reason.length > 0, "the reason says why");
    const wrong = await Socket.rejected(url, { protocols: ["hangar.console", `hangar.key.${b64("wrong")}`] });
    assert.equal(wrong.code, 4401);
    const header = await Socket.open(url, { headers: { "x-api-key": KEY } });
    assert.equal((await header.command("subscription.subscribe", { channels: ["values"] })).type, "success");
    header.close();
    const sub = await Socket.open(url, { protocols: ["hangar.console", `hangar.key.${b64(KEY)}`] });
    assert.equal(sub.ws.protocol, "hangar.console", "the key is never echoed back");
    const run = await sub.command("run.start", { assistant_id: "chat", input: human("hi") });
    assert.equal(run.type, "success");
    await sub.command("subscription.subscribe", { channels: ["lifecycle"] });
    await sub.until(rootDone);
    sub.close();
    // Credentials and no other subprotocol: refused, final (4400).
    const only = await Socket.rejected(url, { protocols: [`hangar.key.${b64(KEY)}`] }).catch((e) => e);
    assert.ok(only instanceof Error || only.code === 4400, `refused: ${JSON.stringify(only)}`);
  });

  test("custom auth: another user's thread closes with 4404, the owner's opens (Authorization as a subprotocol)", async () => {
    const [alice, bob] = await Promise.all([token("alice"), token("bob")]);
    const threadId = randomUUID();
    const created = await fetch(`${custom.url}/threads`, {
      method: "POST",
      headers: { authorization: `Bearer ${alice}`, "content-type": "application/json" },
      body: JSON.stringify({ thread_id: threadId }),
    });
    assert.equal(created.status, 200);
    const url = `${custom.url}/threads/${threadId}/stream/events`;
    assert.equal((await Socket.rejected(url)).code, 4401);
    const other = await Socket.rejected(url, {
      protocols: ["hangar.console", `hangar.authorization.${b64(`Bearer ${bob}`)}`],
    });
    assert.equal(other.code, 4404);
    const owner = await Socket.open(url, {
      protocols: ["hangar.console", `hangar.authorization.${b64(`Bearer ${alice}`)}`],
    });
    assert.equal((await owner.command("subscription.subscribe", { channels: ["values"] })).type, "success");
    owner.close();
  });
});

describe("protocol WebSocket scaled out (2 API + 2 workers, Postgres + Redis)", { skip: SKIP }, () => {
  const cluster = new Cluster({
    config: join(FIXTURE, "langgraph.json"),
    env: { HANGAR_TEST_REPLY_MS: "5" },
  });
  before(async () => {
    await (await cluster.create()).up();
  });
  after(() => cluster.destroy());

  test("a socket on one API process follows a worker's run started on the other; reconnect restores it on the first", async () => {
    const [a, b] = cluster.apis.map((api) => api.url);
    const threadId = randomUUID();
    const onB = await Socket.open(`${b}/threads/${threadId}/stream/events`);
    const sub = await onB.command("subscription.subscribe", { channels: ["lifecycle", "messages"] });
    const started = await fetch(`${a}/threads/${threadId}/commands`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        id: 1,
        method: "run.start",
        params: { assistant_id: "chat", input: human("far") },
      }),
    });
    const { result } = await started.json();
    await onB.until(rootDone, 60_000);
    const all = onB.events();
    const text = all
      .filter((e) => e.method === "messages" && e.params.data.delta?.type === "text-delta")
      .map((e) => e.params.data.delta.text)
      .join("");
    assert.equal(text, "You said: far. That is all.");
    onB.close();
    const cut = all[Math.floor(all.length / 2)]!.seq;
    const onA = await Socket.open(`${a}/threads/${threadId}/stream/events`);
    const restored = await onA.command("subscription.reconnect", {
      run_id: result.run_id,
      last_event_id: String(cut),
      subscriptions: [sub.result.subscription_id],
    });
    assert.deepEqual(restored.result, { restored: true, missed_events: 0 });
    const expected = all.filter((e) => e.seq > cut).map((e) => e.seq);
    await onA.until(() => onA.events().length >= expected.length);
    assert.deepEqual(
      onA.events().map((e) => e.seq),
      expected,
    );
    onA.close();
  });
});
