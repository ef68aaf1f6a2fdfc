/** Protocol-v2 wire helpers for the e2e tests (test/e2e/protocol-*.test.ts). */
import assert from "node:assert/strict";
import { join } from "node:path";
import { CHANNELS } from "../../src/protocol/filter.js";
import { type Hangar, iterSSE, REPO_ROOT } from "./server.js";

export const PROTOCOL_CONFIG = join(REPO_ROOT, "test", "e2e", "fixtures", "protocol", "langgraph.json");
/** Every base channel (a subscription to all of them sees every event). */
export const ALL_CHANNELS = [...CHANNELS];

export const post = (h: Hangar, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(h.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

export const command = async (h: Hangar, threadId: string, method: string, params: unknown, headers = {}) => {
  const res = await post(h, `/threads/${threadId}/commands`, { id: 1, method, params }, headers);
  return { status: res.status, body: (await res.json()) as any };
};

/** The protocol events of a thread's SSE stream until `until` holds for one (or `ms` pass). */
export async function readEvents(
  h: Hangar,
  threadId: string,
  request: Record<string, unknown>,
  until: (e: any) => boolean,
  ms = 30_000,
  headers: Record<string, string> = {},
): Promise<any[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  const out: any[] = [];
  try {
    const res = await fetch(`${h.url}/threads/${threadId}/stream/events`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(request),
      signal: ac.signal,
    });
    if (res.status !== 200) assert.fail(`stream answered ${res.status}: ${await res.text()}`);
    for await (const e of iterSSE(res)) {
      out.push(e.data);
      if (until(e.data)) break;
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return out;
}

export const rootEnd = (e: any) =>
  e?.method === "lifecycle" &&
  e.params.namespace.length === 0 &&
  ["completed", "failed", "interrupted"].includes(e.params.data.event);
