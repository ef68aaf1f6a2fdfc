/**
 * The data plane against broken and odd clients, on the bubblewrap engine (issue #32's review):
 * a multipart body cut before its closing boundary, upgrade requests reset before authentication,
 * uploads onto a directory or over an executable, downloads' Content-Length, and a download whose
 * client stops reading (broken off after the file idle timeout).
 * Each case ends by checking the server still answers.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { SandboxClient } from "langsmith-sbx/experimental/sandbox";
import WebSocket from "ws";
import { underWatchdog } from "../helpers/sandbox-limits-suite.js";
import { type Hangar, http, startHangar } from "../helpers/server.js";

const T = { timeout: 120_000 };
const KEY = { "x-api-key": "test-key" };
/** HANGAR_SANDBOX_FILE_IDLE_TIMEOUT_SECONDS of this file's server (300 by default). */
const IDLE_SECONDS = 5;

/**
 * The server's side of the TCP connection whose client end is `client`: its state in /proc/net/tcp
 * ("01" established; a closed socket whose FIN waits behind unsent bytes is "04", FIN_WAIT1), or null
 * once it is gone.
 */
function serverSideState(client: Socket): string | null {
  const hexPort = (port: number) => port.toString(16).toUpperCase().padStart(4, "0");
  const local = `:${hexPort(client.remotePort!)}`;
  const remote = `:${hexPort(client.localPort!)}`;
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const [, l, r, state] = line.trim().split(/\s+/);
    if (l?.endsWith(local) && r?.endsWith(remote)) return state!;
  }
  return null;
}

describe("the data plane survives broken clients (bwrap)", () => {
  let h: Hangar;
  let dp: string;
  const post = (command: string, signal?: AbortSignal) =>
    fetch(`${dp}/execute`, {
      method: "POST",
      headers: { ...KEY, "content-type": "application/json" },
      body: JSON.stringify({ command, shell: "/bin/sh", timeout: 60 }),
      signal,
    });
  const execute = async (command: string) =>
    (await (await post(command)).json()) as { stdout: string; stderr: string; exit_code: number };
  const stillUp = async () => assert.equal((await http(h.url, "GET", "/ok")).status, 200);
  const upload = (path: string, content: string) => {
    const form = new FormData();
    form.append("file", new Blob([content]), "f");
    return fetch(`${dp}/upload?path=${encodeURIComponent(path)}`, {
      method: "POST",
      headers: KEY,
      body: form,
    });
  };

  before(async () => {
    h = await startHangar({
      env: {
        HANGAR_SANDBOX_ENGINE: "bwrap",
        HANGAR_API_KEYS: "test-key:org-a",
        HANGAR_SANDBOX_EXECUTE_OUTPUT_BUDGET_MB: "12",
        HANGAR_SANDBOX_FILE_IDLE_TIMEOUT_SECONDS: String(IDLE_SECONDS),
      },
    });
    const c = new SandboxClient({ apiEndpoint: `${h.url}/v2/sandboxes`, apiKey: "test-key", maxRetries: 0 });
    await c.createTemplate("plain", { image: "hangar/host" });
    dp = (await c.createSandbox("plain", { name: "faults", timeout: 60 })).dataplane_url!;
  });
  after(async () => {
    await h?.stop();
  });

  test("an upload whose body ends before the closing boundary: 400, the file untouched", T, async () => {
    assert.equal((await upload("/tmp/kept", "old")).status, 200);
    const url = new URL(`${dp}/upload?path=/tmp/kept`);
    const body =
      '--XX\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc-new-bytes-never-finished';
    const answer = await new Promise<string>((resolve, reject) => {
      const s = connect(Number(url.port), url.hostname, () => {
        // Whole headers, then a body (its whole Content-Length) that stops short of `--XX--`.
        s.write(
          `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\nx-api-key: test-key\r\n` +
            `content-type: multipart/form-data; boundary=XX\r\ncontent-length: ${body.length}\r\n` +
            `connection: close\r\n\r\n${body}`,
        );
      });
      let text = "";
      s.on("data", (d) => {
        text += d;
      });
      s.on("end", () => resolve(text));
      s.on("error", reject);
    });
    assert.match(answer, /^HTTP\/1\.1 400/);
    assert.match(answer, /WriteError/);
    assert.match(answer, /broken off before the multipart body's closing boundary/);
    await stillUp();
    const after = await execute("cat /tmp/kept; ls -a /tmp | grep -c hangar-upload");
    assert.equal(after.stdout, "old0\n", "the old file is as it was, and no temporary file is left");
  });

  test("upgrade requests reset before authentication do not crash the server", T, async () => {
    const url = new URL(dp);
    // Without a key (answered 401 by the handler) and with one (upgraded): reset as soon as sent,
    // in parallel so that the server's answers are late, many times.
    const attempt = (i: number) =>
      new Promise<void>((resolve) => {
        const s = connect(Number(url.port), url.hostname, () => {
          s.write(
            `GET ${url.pathname}/execute/ws HTTP/1.1\r\nhost: ${url.host}\r\n` +
              (i % 2 ? "x-api-key: test-key\r\n" : "") +
              "connection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\n" +
              "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
            () =>
              setTimeout(() => {
                s.resetAndDestroy();
                resolve();
              }, i % 3),
          );
        });
        s.on("error", () => resolve());
      });
    for (let batch = 0; batch < 10; batch++) {
      await Promise.all(Array.from({ length: 30 }, (_, i) => attempt(i)));
    }
    await new Promise((r) => setTimeout(r, 500));
    await stillUp();
  });

  test("an upload onto a directory is refused; a replaced file keeps its mode", T, async () => {
    await execute("mkdir -p /tmp/dir");
    for (const path of ["/tmp/dir", "/tmp/dir/"]) {
      const res = await upload(path, "x");
      assert.equal(res.status, 400, path);
      const body = await res.json();
      assert.equal(body.detail.error, "WriteError");
      assert.match(body.detail.message, /is a directory/);
    }
    assert.equal((await execute("ls -A /tmp/dir; ls -a /tmp | grep -c hangar-upload")).stdout, "0\n");
    // A script made executable, uploaded again: still executable.
    assert.equal((await upload("/tmp/run.sh", "echo one\n")).status, 200);
    await execute("chmod 750 /tmp/run.sh");
    assert.equal((await upload("/tmp/run.sh", "echo two\n")).status, 200);
    assert.deepEqual(await execute("stat -c %a /tmp/run.sh; /tmp/run.sh"), {
      stdout: "750\ntwo\n",
      stderr: "",
      exit_code: 0,
    });
    await stillUp();
  });

  test("GET and HEAD /download carry the file's Content-Length", T, async () => {
    await execute("head -c 123457 /dev/zero > /tmp/sized; : > /tmp/empty");
    for (const [path, size] of [
      ["/tmp/sized", 123457],
      ["/tmp/empty", 0],
    ] as const) {
      const head = await fetch(`${dp}/download?path=${path}`, { method: "HEAD", headers: KEY });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get("content-length"), String(size), `HEAD ${path}`);
      const get = await fetch(`${dp}/download?path=${path}`, { headers: KEY });
      assert.equal(get.headers.get("content-length"), String(size), `GET ${path}`);
      assert.equal((await get.arrayBuffer()).byteLength, size);
    }
    await stillUp();
  });

  test("a download whose client stops reading is broken off after the idle timeout", T, async () => {
    // Sparse: 400 MB that the socket buffers (a few MB) cannot hold.
    assert.equal((await execute("truncate -s 400M /tmp/stalled")).exit_code, 0);
    const url = new URL(`${dp}/download?path=/tmp/stalled`);
    const s = connect(Number(url.port), url.hostname);
    const { broken, received } = await underWatchdog(h, "download, client stalled", async () => {
      await new Promise<void>((resolve, reject) => {
        s.once("connect", resolve);
        s.once("error", reject);
      });
      s.write(
        `GET ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\nx-api-key: test-key\r\n\r\n`,
      );
      // Reads the head and a little of the file, then nothing more.
      let head = "";
      let got = 0;
      await new Promise<void>((resolve) => {
        const onData = (chunk: Buffer) => {
          if (!head.includes("\r\n\r\n")) head += chunk.toString("latin1");
          got += chunk.length;
          if (got >= 256 * 1024) {
            s.pause();
            s.off("data", onData);
            resolve();
          }
        };
        s.on("data", onData);
      });
      assert.match(head, /^HTTP\/1\.1 200 /);
      assert.match(head, new RegExp(`content-length: ${400 * 2 ** 20}`, "i"));
      const stalledAt = Date.now();
      assert.equal(serverSideState(s), "01", "the server's side is open while the client stalls");
      // The server closes its side (its FIN then waits behind the bytes the client does not take).
      while (serverSideState(s) === "01" && Date.now() - stalledAt < (IDLE_SECONDS + 20) * 1000) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const brokenAfter = (Date.now() - stalledAt) / 1000;
      // Read again: what was in flight, then the end, far short of the file.
      let more = 0;
      s.on("data", (chunk: Buffer) => {
        more += chunk.length;
      });
      const ended = new Promise<void>((resolve) => s.once("close", () => resolve()));
      s.resume();
      await ended;
      return { broken: brokenAfter, received: got + more };
    });
    console.log(`stalled download: broken off ${broken.toFixed(1)} s into the stall, ${received} bytes sent`);
    assert.ok(
      broken >= IDLE_SECONDS - 0.5 && broken < IDLE_SECONDS + 10,
      `the server ended the response ${broken.toFixed(1)} s into the stall (idle timeout ${IDLE_SECONDS} s)`,
    );
    assert.ok(received < 100 * 2 ** 20, `the file was not sent whole (${received} bytes)`);
    // The command reading the file was stopped too.
    assert.equal((await execute("pgrep -x cat || echo none")).stdout, "none\n");
    await execute("rm -f /tmp/stalled");
    await stillUp();
  });

  test(
    "an upload whose client stops sending is refused after the idle timeout, leaving nothing",
    T,
    async () => {
      assert.equal((await upload("/tmp/kept-idle", "old")).status, 200);
      const url = new URL(`${dp}/upload?path=/tmp/kept-idle`);
      const part = '--XX\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n';
      const began = Date.now();
      const answer = await new Promise<string>((resolve, reject) => {
        const s = connect(Number(url.port), url.hostname, () => {
          // A body announced at 100 MB, of which a part's head and 1 MiB are sent; then nothing.
          s.write(
            `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\nx-api-key: test-key\r\n` +
              `content-type: multipart/form-data; boundary=XX\r\ncontent-length: ${100 * 2 ** 20}\r\n\r\n${part}`,
          );
          s.write(Buffer.alloc(2 ** 20, 0x61));
        });
        let text = "";
        s.on("data", (d) => {
          text += d;
          if (/\r\n\r\n[\s\S]*\}$/.test(text)) {
            s.destroy();
            resolve(text);
          }
        });
        s.on("close", () => resolve(text));
        s.on("error", reject);
      });
      const after = (Date.now() - began) / 1000;
      assert.match(answer, /^HTTP\/1\.1 400/, answer);
      assert.match(
        answer,
        /WriteError.*no byte arrived for 5 s \(HANGAR_SANDBOX_FILE_IDLE_TIMEOUT_SECONDS\)/,
      );
      assert.ok(after >= IDLE_SECONDS - 0.5 && after < IDLE_SECONDS + 10, `answered after ${after} s`);
      const left = await execute("cat /tmp/kept-idle; ls -a /tmp | grep -c hangar-upload");
      assert.equal(left.stdout, "old0\n", "the old file is as it was, and no temporary file is left");
      await stillUp();
    },
  );

  test("commands per sandbox are capped (429), and /execute's command ends with its client", T, async () => {
    const clients = Array.from({ length: 32 }, () => new AbortController());
    const pending = clients.map((c) => post("sleep 60", c.signal).catch(() => null));
    // Once all 32 run, the next is refused, naming the limit.
    let refused: Response | null = null;
    for (let i = 0; i < 100 && !refused; i++) {
      const r = await post("true");
      if (r.status === 429) refused = r;
      else await r.arrayBuffer();
    }
    assert.ok(refused, "a 33rd command was refused");
    const body = await refused.json();
    assert.equal(body.detail.error, "TooManyCommands");
    assert.match(body.detail.message, /already runs 32 commands/);
    // The WebSocket counts too.
    const ws = new WebSocket(`${dp.replace(/^http/, "ws")}/execute/ws`, { headers: KEY });
    const frame = await new Promise<any>((resolve, reject) => {
      ws.on("open", () => ws.send(JSON.stringify({ type: "execute", command: "true", shell: "/bin/sh" })));
      ws.on("message", (raw) => resolve(JSON.parse(raw.toString())));
      ws.on("error", reject);
    });
    assert.equal(frame.error_type, "TooManyCommands");
    ws.terminate();
    // The clients go away: their commands are stopped (not left to run their 60 s), room again.
    for (const c of clients) c.abort();
    await Promise.all(pending);
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      const r = await post("true");
      status = r.status;
      await r.arrayBuffer();
      if (status !== 200) await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(status, 200, "the commands of the clients that went away were stopped");
    await stillUp();
  });

  test("POST /execute calls together hold no more output than the server's budget", T, async () => {
    // A holds 6 MiB until it ends; B, meanwhile, finds the 12 MiB budget spent after 6 MiB of its own.
    const a = post("head -c 6291456 /dev/zero | tr '\\0' a; sleep 3");
    await new Promise((r) => setTimeout(r, 1500));
    const b = await (await post("head -c 8388608 /dev/zero | tr '\\0' b; echo finished >&2")).json();
    assert.equal(b.truncated, true);
    assert.ok(b.stdout.length <= 6 * 2 ** 20, `B kept ${b.stdout.length} bytes`);
    assert.match(b.stderr, /at most 12 MiB of output for all POST \/execute calls at once/);
    assert.doesNotMatch(b.stderr, /finished/, "B was stopped");
    const whole = await (await a).json();
    assert.equal(whole.stdout.length, 6 * 2 ** 20);
    assert.equal(whole.truncated, undefined);
    // Both answered: the budget is given back, and a third has all of it.
    const c = await (await post("head -c 8388608 /dev/zero | tr '\\0' c")).json();
    assert.equal(c.stdout.length, 8 * 2 ** 20);
    assert.equal(c.truncated, undefined);
  });
});
