import { Hono } from "hono";
import type { AppEnv } from "../http/context.js";

const VERSION = "0.1.0";

/** `sandboxEngine`: what isolates this server's sandboxes. */
export function systemRoutes(opts: { sandboxEngine: string }) {
  const engine = opts.sandboxEngine;
  return new Hono<AppEnv>()
    .get("/ok", (c) => c.json({ ok: true }))
    .get("/info", (c) =>
      c.json({
        version: VERSION,
        server: "hangar",
        context: "js",
        flags: { assistants: true, crons: true, langsmith: false, langsmith_tracing_replicas: false },
        metadata: {},
        sandboxes: { engine },
      }),
    );
}
