/**
 * What a tenant with a sandbox can make the server hold through the data plane (issue #32: execute's
 * output, downloads, uploads, WebSocket exec both ways, the output kept for reconnects) and long
 * commands, against a real `hangar` process on one engine. Each hostile case runs under a memory
 * watchdog that samples the server's RSS and kills it past a ceiling over its RSS at the start, so a
 * regression fails the test instead of the machine; afterwards the server must still answer.
 * One test file per engine (sandbox-limits*.test.ts) calls `sandboxLimitsSuite`.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { after, before, describe, test } from "node:test";
import { SandboxClient } from "langsmith-sbx/experimental/sandbox";
import WebSocket from "ws";
import { type Hangar, http, startHangar } from "./server.js";

const T = { timeout: 120_000 };
const MiB = 2 ** 20;
/** Over the server's RSS at the start of a case: past this the watchdog kills it. */
const CEILING_BYTES = 300 * MiB;
const UPLOAD_LIMIT_MB = 64;
const KEY = { "x-api-key": "test-key" };

function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024;
}

/**
 * Runs `hostile` while sampling the server's RSS every 20 ms; past start + CEILING_BYTES the server is
 * killed (SIGKILL) and the test fails, naming the RSS. Then the server must still answer a request.
 */
export async function underWatchdog<T>(h: Hangar, what: string, hostile: () => Promise<T>): Promise<T> {
  const pid = h.process.pid!;
  const start = rssOf(pid);
  let peak = start;
  let trip!: (why: Error) => void;
  const tripped = new Promise<never>((_, reject) => {
    trip = reject;
  });
  const timer = setInterval(() => {
    let rss: number;
    try {
      rss = rssOf(pid);
    } catch {
      return trip(new Error(`${what}: the server exited`));
    }
    peak = Math.max(peak, rss);
    if (rss > start + CEILING_BYTES) {
      h.process.kill("SIGKILL");
      trip(
        new Error(
          `${what}: the server's RSS went from ${mb(start)} to ${mb(rss)} MB (ceiling +${mb(CEILING_BYTES)})`,
        ),
      );
    }
  }, 20);
  let result: T;
  try {
    // A server killed by the watchdog fails the test with the RSS, whatever the client then sees.
    result = await Promise.race([hostile(), tripped]);
  } finally {
    clearInterval(timer);
  }
  console.log(`${what}: server RSS ${mb(start)} MB at the start, ${mb(peak)} MB at the peak`);
  const info = await http(h.url, "GET", "/ok");
  assert.equal(info.status, 200, `${what}: the server still answers`);
  return result;
}
const mb = (bytes: number) => Math.round(bytes / MiB);

/** A WebSocket to `/execute/ws` with its frames collected; `first` is sent once it opens. */
function openExec(dp: string, first: object) {
  const ws = new WebSocket(`${dp.replace(/^http/, "ws")}/execute/ws`, { headers: KEY });
  const frames: any[] = [];
  // A socket that failed (the server died) closes too: the test's assertions say what went wrong.
  const closed = new Promise<number>((resolve) => {
    ws.on("close", (code) => resolve(code));
    ws.on("error", () => resolve(-1));
  });
  ws.on("message", (raw) => frames.push(JSON.parse(raw.toString())));
  const opened = new Promise<void>((resolve) => ws.once("open", () => resolve()));
  void opened.then(() => ws.send(JSON.stringify(first)));
  return { ws, frames, closed, opened };
}

const stdoutOf = (frames: any[]) =>
  frames
    .filter((f) => f.type === "stdout")
    .map((f) => f.data)
    .join("");

/**
 * `http`: POST /execute, downloads, uploads, long commands; `ws`: WebSocket exec both ways and the
 * output kept for reconnects (two files per engine, each within the runner's time per file).
 */
export function sandboxLimitsSuite(engine: "bwrap" | "runsc" | "runc", part: "http" | "ws") {
  describe(`the data plane holds bounded memory (${engine}, ${part})`, () => {
    let h: Hangar;
    let dp: string;
    const execute = (command: string, extra: object = {}) =>
      fetch(`${dp}/execute`, {
        method: "POST",
        headers: { ...KEY, "content-type": "application/json" },
        body: JSON.stringify({ command, shell: "/bin/sh", ...extra }),
      });

    before(async () => {
      h = await startHangar({
        env: {
          HANGAR_SANDBOX_ENGINE: engine,
          HANGAR_API_KEYS: "test-key:org-a",
          HANGAR_SANDBOX_MAX_UPLOAD_MB: String(UPLOAD_LIMIT_MB),
        },
      });
      const c = new SandboxClient({
        apiEndpoint: `${h.url}/v2/sandboxes`,
        apiKey: "test-key",
        maxRetries: 0,
      });
      await c.createTemplate("plain", { image: "hangar/host" });
      dp = (await c.createSandbox("plain", { name: "hostile", timeout: 60 })).dataplane_url!;
    });

    after(async () => {
      await h?.stop();
    });

    if (part === "http") {
      test(
        "POST /execute: 600 MB of output is cut at 8 MiB, said so, and the command stopped",
        T,
        async () => {
          const res = await underWatchdog(h, "execute 600 MB", async () => {
            const r = await execute("yes | head -c 600M; echo finished >&2");
            return { status: r.status, body: await r.json() };
          });
          assert.equal(res.status, 200);
          assert.equal(res.body.truncated, true);
          assert.equal(res.body.stdout.length, 8 * MiB);
          assert.equal(res.body.stdout, "y\n".repeat(4 * MiB));
          assert.match(res.body.stderr, /stdout passed the 8 MiB that POST \/execute returns/);
          assert.doesNotMatch(res.body.stderr, /finished/, "the command was stopped");
          assert.notEqual(res.body.exit_code, 0);
          // Output under the cap is whole and has no `truncated`.
          const small = await (await execute("head -c 3000000 /dev/zero | tr '\\0' a; echo e >&2")).json();
          assert.deepEqual(small, { stdout: "a".repeat(3_000_000), stderr: "e\n", exit_code: 0 });
        },
      );

      test("GET /download streams a 400 MB file and refuses what is not a regular file", T, async () => {
        // Sparse: nothing of it is on disk.
        const made = await (
          await execute("truncate -s 400M /tmp/big && printf end >> /tmp/big && mkfifo /tmp/fifo")
        ).json();
        assert.equal(made.exit_code, 0, made.stderr);
        const { bytes, last } = await underWatchdog(h, "download 400 MB", async () => {
          const res = await fetch(`${dp}/download?path=/tmp/big`, { headers: KEY });
          assert.equal(res.status, 200);
          let n = 0;
          let tail = Buffer.alloc(0);
          for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
            n += chunk.length;
            tail = Buffer.concat([tail, chunk]).subarray(-3);
          }
          return { bytes: n, last: tail.toString() };
        });
        assert.equal(bytes, 400 * MiB + 3);
        assert.equal(last, "end");

        // A client that stops reading: the server holds no more than a few buffers.
        await underWatchdog(h, "download, client not reading", async () => {
          const stalled = new Promise<void>((resolve, reject) => {
            const req = request(`${dp}/download?path=/tmp/big`, { headers: KEY }, (res) => {
              assert.equal(res.statusCode, 200);
              res.pause();
              setTimeout(() => {
                req.destroy();
                resolve();
              }, 2000);
            });
            req.on("error", reject);
            req.end();
          });
          await stalled;
        });

        for (const [path, what] of [
          ["/dev/zero", "not a regular file"],
          ["/tmp/fifo", "not a regular file"],
          ["/tmp", "is a directory"],
        ] as const) {
          const res = await fetch(`${dp}/download?path=${path}`, { headers: KEY });
          assert.equal(res.status, 400, path);
          const body = await res.json();
          assert.equal(body.detail.error, "ReadError");
          assert.match(body.detail.message, new RegExp(what));
        }
        const missing = await fetch(`${dp}/download?path=/tmp/nothing`, { headers: KEY });
        assert.equal(missing.status, 404);
        // HEAD answers the checks without the bytes.
        const head = (path: string) => fetch(`${dp}/download?path=${path}`, { method: "HEAD", headers: KEY });
        assert.equal((await head("/tmp/big")).status, 200);
        assert.equal((await head("/tmp/nothing")).status, 404);
        assert.equal((await head("/dev/zero")).status, 400);
        await execute("rm -f /tmp/big /tmp/fifo");
      });

      test("POST /upload streams into the sandbox and refuses past its limit with 413", T, async () => {
        const put = (path: string, size: number) =>
          underWatchdog(h, `upload ${mb(size)} MB`, () => multipartUpload(`${dp}/upload?path=${path}`, size));
        // Under the limit: written whole (streamed: the server never holds it).
        const ok = await put("/tmp/up/file", 50 * MiB);
        assert.equal(ok.status, 200, ok.text);
        assert.deepEqual(JSON.parse(ok.text), { path: "/tmp/up/file", written: 50 * MiB });
        const size = await (await execute("wc -c < /tmp/up/file; ls -a /tmp/up")).json();
        assert.equal(size.stdout, `${50 * MiB}\n.\n..\nfile\n`);
        // Past it: 413 naming the limit, as soon as the limit is reached; the old file is as it was.
        const big = await put("/tmp/up/file", 400 * MiB);
        assert.equal(big.status, 413, big.text);
        assert.match(
          JSON.parse(big.text).detail.message,
          /64 MiB \(the upload limit, HANGAR_SANDBOX_MAX_UPLOAD_MB\)/,
        );
        assert.ok(big.sent < 200 * MiB, `refused once the limit was reached (${mb(big.sent)} MB sent)`);
        const after = await (await execute("wc -c < /tmp/up/file; ls -a /tmp/up")).json();
        assert.equal(after.stdout, `${50 * MiB}\n.\n..\nfile\n`, "no partial file is left");
        await execute("rm -rf /tmp/up");
      });

      test("a command over 128 KiB runs, over HTTP and over the WebSocket", T, async () => {
        const long = `x=${"a".repeat(300 * 1024)}\necho "\${#x} $0"`;
        const res = await execute(long);
        assert.equal(res.status, 200);
        assert.deepEqual(await res.json(), { stdout: `${300 * 1024} /bin/sh\n`, stderr: "", exit_code: 0 });
        const { frames, closed } = openExec(dp, { type: "execute", command: long, shell: "/bin/sh" });
        await closed;
        assert.equal(stdoutOf(frames), `${300 * 1024} /bin/sh\n`);
        // An environment variable past what Linux starts a program with: 422 naming the limit.
        const env = await execute("true", { env: { BIG: "b".repeat(200 * 1024) } });
        assert.equal(env.status, 422);
        assert.match(JSON.stringify(await env.json()), /at most 131071 bytes/);
      });
    }

    if (part === "ws") {
      test(
        "WebSocket exec: a client that stops reading holds the command, and loses nothing",
        T,
        async () => {
          const total = 48 * MiB;
          const { ws, frames, closed, opened } = openExec(dp, {
            type: "execute",
            command: `yes | head -c ${total}; touch /tmp/ws-finished`,
            shell: "/bin/sh",
            timeout_seconds: 60,
          });
          const finished = async () =>
            (await (await execute("test -e /tmp/ws-finished")).json()).exit_code === 0;
          await underWatchdog(h, "ws exec, client not reading", async () => {
            await opened;
            ws.pause(); // reads nothing more: the server's socket fills
            for (let i = 0; i < 25; i++) {
              await new Promise((r) => setTimeout(r, 200));
              assert.equal(await finished(), false, "the command is held while its client does not read");
            }
          });
          ws.resume();
          await underWatchdog(h, "ws exec, client reading again", () => closed);
          let received = 0;
          for (const f of frames) if (f.type === "stdout") received += Buffer.byteLength(f.data);
          assert.equal(received, total, "every byte arrived");
          assert.deepEqual(frames.at(-1), { type: "exit", exit_code: 0 });
          assert.equal(await finished(), true);
          await execute("rm -f /tmp/ws-finished");
        },
      );

      test("WebSocket exec: input to a command that does not read it is not queued", T, async () => {
        const { ws, closed, opened } = openExec(dp, {
          type: "execute",
          command: "sleep 20",
          shell: "/bin/sh",
          timeout_seconds: 30,
          kill_on_disconnect: true,
        });
        // Sends 1 MiB frames whenever the client's own buffer is under 4 MiB, for 6 s.
        const sentAt: number[] = [];
        await underWatchdog(h, "ws input, command not reading", async () => {
          await opened;
          const data = "x".repeat(MiB);
          const start = Date.now();
          while (Date.now() - start < 6000) {
            if (ws.bufferedAmount < 4 * MiB) {
              ws.send(JSON.stringify({ type: "input", data }));
              sentAt.push(Date.now() - start);
            } else await new Promise((r) => setTimeout(r, 10));
          }
        });
        console.log(`ws input: ${sentAt.length} MiB sent in 6 s to a command that reads none`);
        // Once the pipe, the socket buffers and the client's own 4 MiB are full, nothing more goes.
        const late = sentAt.filter((t) => t > 4000).length;
        assert.equal(late, 0, `the server stopped reading frames (${late} MiB sent in the last 2 s)`);
        ws.terminate();
        await closed;
      });

      // The logs are above the driver, the same on every engine; on gVisor a `runsc exec` per command
      // makes 24 of them too slow for one file's time.
      (engine === "runsc" ? test.skip : test)(
        "output kept for reconnects is bounded: the last 2 MiB of each stream",
        T,
        async () => {
          // Before the bound, each kept its first 16 MiB: 24 of them past the watchdog's ceiling.
          const ids = Array.from({ length: 24 }, (_, i) => `keep-${engine}-${i}`);
          await underWatchdog(h, "24 detached commands of 16 MiB", async () => {
            for (const command_id of ids) {
              const { ws, frames, opened } = openExec(dp, {
                type: "execute",
                command: "head -c 16777216 /dev/zero | tr '\\0' k",
                shell: "/bin/sh",
                command_id,
                ttl_seconds: 600,
              });
              await opened;
              while (!frames.some((f) => f.type === "started")) await new Promise((r) => setTimeout(r, 5));
              ws.terminate(); // detached: its output goes to the kept log only
            }
            // Each has ended once a reconnect at the end of its output sees its exit.
            for (const command_id of ids) {
              for (;;) {
                const r = openExec(dp, {
                  type: "reconnect",
                  command_id,
                  stdout_offset: 16 * MiB,
                  stderr_offset: 0,
                });
                await r.closed;
                if (r.frames.at(-1)?.type === "exit") break;
                await new Promise((res) => setTimeout(res, 100));
              }
            }
          });
          const tail = openExec(dp, {
            type: "reconnect",
            command_id: ids[0],
            stdout_offset: 14 * MiB,
            stderr_offset: 0,
          });
          await tail.closed;
          assert.deepEqual(tail.frames.at(-1), { type: "exit", exit_code: 0 });
          assert.ok(stdoutOf(tail.frames) === "k".repeat(2 * MiB), "the last 2 MiB are kept");
          const old = openExec(dp, {
            type: "reconnect",
            command_id: ids[0],
            stdout_offset: 0,
            stderr_offset: 0,
          });
          await old.closed;
          assert.equal(old.frames.at(-1)?.error_type, "SessionExpired");
        },
      );
    }
  });
}

/**
 * POSTs a multipart body whose part `file` is `size` bytes made on the fly (nothing on disk or in
 * memory), reading the answer as soon as it comes: its status and text, and how much was sent by then.
 */
function multipartUpload(url: string, size: number): Promise<{ status: number; text: string; sent: number }> {
  const boundary = "----hangar-limits";
  const head = Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="file"\r\n` +
      "content-type: application/octet-stream\r\n\r\n",
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const block = Buffer.alloc(MiB, 0x75);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = request(
      url,
      {
        method: "POST",
        headers: { ...KEY, "content-type": `multipart/form-data; boundary=${boundary}` },
      },
      (res) => {
        answered = true;
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () => {
          resolve({ status: res.statusCode!, text, sent });
          req.destroy();
        });
      },
    );
    req.on("error", (err) => {
      if (!answered) reject(err);
    });
    req.write(head);
    const pump = () => {
      while (!answered && sent < size) {
        const n = Math.min(block.length, size - sent);
        sent += n;
        if (!req.write(n === block.length ? block : block.subarray(0, n)))
          return void req.once("drain", pump);
      }
      if (!answered) req.end(tail);
    };
    pump();
  });
}
