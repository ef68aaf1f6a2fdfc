/**
 * Custom auth beside API keys (the key selects the organization, the handler the user within it) and
 * LangGraph Studio's header in `hangar dev` (the Studio user, whom the handlers see like any other; never
 * on a sandbox's data plane). The fixture's handler: test/e2e/fixtures/auth/auth.ts.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AUTH_CONFIG, token } from "../helpers/auth-tokens.js";
import { type ApiResponse, assertDetail, type Hangar, http, startHangar } from "../helpers/server.js";

const CONFIG = AUTH_CONFIG;
const T = { timeout: 60_000 };

describe("custom auth with API keys and Studio", () => {
  let h: Hangar;
  let alice: string;
  before(async () => {
    alice = await token("alice", ["delete"]);
    h = await startHangar({ config: CONFIG, env: { HANGAR_API_KEYS: "key-acme:acme,key-globex:globex" } });
  });
  after(async () => {
    await h?.stop();
  });
  const call = (
    headers: Record<string, string>,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<ApiResponse> => http(h.url, method, path, body, headers);

  test("the key selects the organization, the handler the user within it: both are needed", T, async () => {
    assertDetail(await call({ authorization: `Bearer ${alice}` }, "POST", "/threads", {}), 401, "no key");
    assertDetail(await call({ "x-api-key": "key-acme" }, "POST", "/threads", {}), 401, "no user");
    const acme = { "x-api-key": "key-acme", authorization: `Bearer ${alice}` };
    const globex = { "x-api-key": "key-globex", authorization: `Bearer ${alice}` };
    const created = await call(acme, "POST", "/threads", {});
    assert.equal(created.status, 200);
    // The same user in another organization does not see it: tenant isolation holds.
    assertDetail(await call(globex, "GET", `/threads/${created.body.thread_id}`), 404, "other org");
    assert.equal((await call(acme, "GET", `/threads/${created.body.thread_id}`)).status, 200);
  });

  test("Studio requests act as the Studio user in hangar dev", T, async () => {
    const studio = { "x-api-key": "key-acme", "x-auth-scheme": "langsmith" };
    const out = await call(studio, "POST", "/runs/wait", { assistant_id: "whoami", input: { input: "s" } });
    assert.equal(out.status, 200, out.text);
    assert.equal(out.body.user_id, "langgraph-studio-user");
  });

  test(
    "the Studio user gets what the handlers grant it, in the sandbox area too, and never the data plane",
    T,
    async () => {
      const acme = { "x-api-key": "key-acme", authorization: `Bearer ${alice}` };
      const studio = { "x-api-key": "key-acme", "x-auth-scheme": "langsmith" };
      const volume = await call(acme, "POST", "/v2/sandboxes/volumes", {
        name: "alices-volume",
        size: "1Mi",
      });
      assert.equal(volume.status, 201, volume.text);
      // The handler's owner filter applies to the Studio user as to anyone: alice's volume is not its.
      const listed = await call(studio, "GET", "/v2/sandboxes/volumes");
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(listed.body.volumes, []);
      assertDetail(await call(studio, "GET", "/v2/sandboxes/volumes/alices-volume"), 404, "studio reads it");
      // Deleting needs the `delete` permission in the fixture's handler; the Studio user has none.
      const del = await call(studio, "DELETE", "/v2/sandboxes/volumes/alices-volume");
      assertDetail(del, 403, "studio deletes it");
      const patch = await call(studio, "PATCH", "/v2/sandboxes/volumes/alices-volume", { name: "x" });
      assertDetail(patch, 404, "studio renames it");
      // Its own are its own.
      const own = await call(studio, "POST", "/v2/sandboxes/volumes", {
        name: "studios-volume",
        size: "1Mi",
      });
      assert.equal(own.status, 201, own.text);
      const names = (await call(studio, "GET", "/v2/sandboxes/volumes")).body.volumes.map((v: any) => v.name);
      assert.deepEqual(names, ["studios-volume"]);
      // The data plane never takes the header: the handler authenticates (no token: 401).
      const id = "00000000-0000-0000-0000-000000000000";
      for (const [method, path] of [
        ["POST", `/v2/sandboxes/dataplane/${id}/execute`],
        ["GET", `/v2/sandboxes/dataplane/${id}/download?path=/etc/passwd`],
        ["GET", `/v2/sandboxes/dataplane/${id}/execute/ws`],
      ] as const) {
        assertDetail(
          await call(studio, method, path, method === "POST" ? { command: "id" } : undefined),
          401,
          path,
        );
      }
    },
  );
});
