/** CustomAuth (src/auth/custom.ts) on its own: loading, the user it makes, handler lookup and results. */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { Auth, HTTPException } from "@langchain/langgraph-sdk/auth";
import { type AuthContext, AuthHandlerError, CustomAuth } from "../../src/auth/custom.js";
import { HangarError } from "../../src/errors.js";

const dir = mkdtempSync(path.join(tmpdir(), "hangar-auth-unit-"));
const file = (name: string, text: string) => {
  const full = path.join(dir, name);
  writeFileSync(full, text);
  return full;
};
const load = (f: string, exportName = "auth") =>
  CustomAuth.load({ file: f, exportName, disableStudioAuth: false });
/** A CustomAuth around an Auth built here (the module exports it through globalThis). */
async function around(auth: Auth): Promise<CustomAuth> {
  (globalThis as Record<string, unknown>).__authUnderTest = auth;
  return load(
    file(`a${Math.random().toString(36).slice(2)}.mjs`, "export const auth = globalThis.__authUnderTest;\n"),
  );
}
const ctx: AuthContext = {
  user: { identity: "alice", display_name: "alice", is_authenticated: true, permissions: [] },
  permissions: [],
};
const kind = (err: unknown) => (err instanceof HangarError ? err.kind : String(err));

describe("CustomAuth.load", () => {
  test("a missing export, a value that is not an Auth, or on handlers without authenticate stop start-up", async () => {
    await assert.rejects(
      load(file("none.mjs", "export const other = 1;\n")),
      /no export named "auth" \(exports: other\)/,
    );
    await assert.rejects(load(file("plain.mjs", "export const auth = {};\n")), /not an Auth instance/);
    await assert.rejects(
      load(file("broken.mjs", "throw new Error('boom');\n")),
      /Failed to load auth .*boom/,
    );
    await assert.rejects(
      around(new Auth().on("*", () => false)),
      /no authenticate handler, so they would never run/,
    );
  });
});

describe("authenticate", () => {
  test("a string or a user object is normalised; HTTPException keeps status and headers; anything else is a 401", async () => {
    const req = (token: string) => new Request("http://x/", { headers: { authorization: token } });
    const auth = await around(
      new Auth().authenticate((r: Request) => {
        const t = r.headers.get("authorization");
        if (t === "string") return "bob";
        if (t === "object")
          return { identity: "carol", permissions: ["a", 1 as unknown as string], extra: 1 };
        if (t === "http") throw new HTTPException(418, { message: "teapot", headers: { "x-why": "tea" } });
        if (t === "empty") return { name: "no identity" } as never;
        throw new Error("bug");
      }),
    );
    assert.deepEqual((await auth.authenticate(req("string")))?.user, {
      identity: "bob",
      display_name: "bob",
      is_authenticated: true,
      permissions: [],
    });
    const carol = await auth.authenticate(req("object"));
    assert.deepEqual(carol?.permissions, ["a"]);
    assert.equal(carol?.user.display_name, "carol");
    assert.equal(carol?.user.extra, 1);
    const teapot = await auth.authenticate(req("http")).catch((e) => e);
    assert.ok(teapot instanceof AuthHandlerError);
    assert.equal(teapot.status, 418);
    assert.equal(teapot.message, "teapot");
    assert.deepEqual(teapot.headers, { "x-why": "tea" });
    for (const t of ["empty", "bug"]) {
      const err = await auth.authenticate(req(t)).catch((e) => e);
      assert.equal(err.status, 401, t);
    }
  });
});

describe("authorize", () => {
  test("the most specific handler runs: resource:action, resource, *:action, *", async () => {
    const seen: string[] = [];
    const mark = (name: string) => () => {
      seen.push(name);
    };
    const auth = await around(
      new Auth()
        .authenticate(() => "alice")
        .on("threads:read", mark("threads:read"))
        .on("threads", mark("threads"))
        .on("*:delete", mark("*:delete"))
        .on("*", mark("*")),
    );
    await auth.authorize(ctx, "threads", "read", {});
    await auth.authorize(ctx, "threads", "update", {});
    await auth.authorize(ctx, "assistants", "delete", {});
    await auth.authorize(ctx, "store", "put", { namespace: [] });
    assert.deepEqual(seen, ["threads:read", "threads", "*:delete", "*"]);
  });

  test("true or nothing allow; false is 403; a filter is returned; a bad result or a bug is 403, never a 500", async () => {
    const results: Record<string, unknown> = {
      allow: true,
      nothing: undefined,
      deny: false,
      filter: { owner: "alice", tags: { $contains: ["a"] } },
      map: new Map(),
      array: [],
      string: "yes",
      badop: { owner: { $ne: "bob" } },
    };
    const auth = await around(
      new Auth()
        .authenticate(() => "alice")
        .on("*", ({ value }) => {
          const which = (value as { which: string }).which;
          if (which === "bug") throw new Error("bug");
          if (which === "http") throw new HTTPException(402, { message: "pay" });
          return results[which] as never;
        }),
    );
    const run = (which: string) => auth.authorize(ctx, "threads", "read", { which });
    assert.equal((await run("allow")).filter, undefined);
    assert.equal((await run("nothing")).filter, undefined);
    assert.deepEqual((await run("filter")).filter, results.filter);
    for (const which of ["deny", "map", "array", "string", "badop", "bug"])
      assert.equal(kind(await run(which).catch((e) => e)), "forbidden", which);
    assert.equal((await run("http").catch((e) => e)).status, 402);
    // No user (a public route): handlers do not run.
    assert.equal((await auth.authorize(undefined, "threads", "read", { which: "deny" })).filter, undefined);
  });
});
