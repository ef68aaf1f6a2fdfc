/**
 * Bad input across the whole API, generated from the server's own /openapi.json (test/helpers/bad-input.ts):
 * ~1,000 malformed requests per adapter, then the server must still work. Asserts no 5xx, no hang (15 s
 * per request; streams count from their headers), no reset, and that GET /ok and an SDK thread +
 * runs.wait of "agent" work afterwards. The long form is scripts/fuzz-api.ts (10,000+ requests).
 *
 * The sweep of sizes and filter shapes is bad-input-sweep.test.ts, a file of its own (each file has
 * the runner's per-file time budget to itself).
 *
 * HANGAR_FUZZ_SEED=<n> changes the seed (the report prints it). The same on Postgres:
 * bad-input-postgres.test.ts.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { formatReport, runBadInputs } from "../helpers/bad-input.js";
import { fuzz, REQUESTS } from "../helpers/bad-input-server.js";
import { startHangar } from "../helpers/server.js";

describe("bad input generated from /openapi.json", () => {
  test("the runner reports a 5xx, a hang and a leaked file (against a stub server)", {
    timeout: 30_000,
  }, async () => {
    // A tiny API whose POST /items answers 500 to any nested object and whose GET /items/{id} never
    // answers for some ids: the runner must report both, with method, path, body and status.
    const doc = {
      openapi: "3.1.0",
      info: { title: "stub", version: "1" },
      paths: {
        "/items": {
          post: {
            requestBody: {
              required: true,
              content: {
                "application/json": {
                  schema: {
                    type: "object",
                    properties: {
                      name: { type: "string" },
                      meta: { type: "object", additionalProperties: {} },
                    },
                    required: ["name"],
                  },
                },
              },
            },
            responses: { 200: { description: "ok" } },
          },
        },
        "/items/{id}": {
          get: {
            parameters: [
              { name: "id", in: "path", required: true, schema: { type: "string", format: "uuid" } },
            ],
            responses: { 200: { description: "ok" } },
          },
        },
      },
    };
    const server: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        if (req.url === "/openapi.json")
          return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(doc));
        if (req.method === "POST" && req.url === "/items") {
          if (/\{[^}]*\{[^}]*\{/.test(body)) return res.writeHead(500).end('{"detail":"boom"}');
          return res.writeHead(422).end("{}");
        }
        if (req.method === "GET" && req.url?.startsWith("/items/")) {
          if (req.url.includes("..")) return; // never answers
          if (req.url.includes("passwd")) return res.writeHead(200).end("root:x:0:0:root:/root:/bin/sh");
          return res.writeHead(404).end("{}");
        }
        res.writeHead(404).end("{}");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const report = await runBadInputs({
        baseUrl: url,
        requests: 120,
        seed: 7,
        timeoutMs: 1_000,
        settleMs: 0,
      });
      const text = formatReport(report);
      const fiveHundreds = report.failures.filter((f) => f.status === 500);
      assert.ok(fiveHundreds.length > 0, text);
      assert.equal(fiveHundreds[0]!.method, "POST");
      assert.equal(fiveHundreds[0]!.url, "/items");
      assert.match(fiveHundreds[0]!.body, /\{/);
      assert.ok(
        report.failures.some((f) => f.error?.startsWith("timeout") && f.url.startsWith("/items/")),
        text,
      );
      assert.ok(
        report.failures.some((f) => f.status === 200 && f.url.includes("passwd")),
        text,
      );
      assert.match(text, /failures \(5xx, hangs, resets\)/);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  test(`embedded SQLite: ${REQUESTS} requests, no 5xx or hang, still works after`, {
    timeout: 240_000,
  }, async (t) => {
    const h = await startHangar();
    try {
      await fuzz(h, t);
    } finally {
      await h.stop();
    }
  });
});
