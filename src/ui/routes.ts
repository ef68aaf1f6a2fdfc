/**
 * The generative UI routes (registered only when langgraph.json has `ui`):
 *
 * - `POST /ui/{agent}` `{name}` → the HTML snippet `LoadExternalComponent` inserts in a shadow root:
 *   a `<link>` per style sheet and a `<script>` whose `onload` renders the component `name`;
 * - `GET /ui/{agent}/{file}` → a file of the agent's bundle (`bundle.ts`).
 *
 * The snippet's URLs are absolute, built from the request's `Host` (the page that inserts it is on
 * another origin): `http://` for localhost and 127.0.0.1, protocol-relative (`//host`) otherwise, as the
 * reference server writes them. Values are escaped for the attribute they go in, so a component
 * name or Host header cannot break out of it; ordinary names come out byte for byte as the reference's.
 *
 * Auth: the files are public (a `<script src>` cannot send an API key or an Authorization header, and
 * they are the project's component code, the same for everyone); the snippet is asked for with the SDK
 * client's headers, so it needs the API key and passes the custom auth handler like any request.
 */

import { Hono } from "hono";
import { z } from "zod";
import { notFound } from "../errors.js";
import type { AppEnv } from "../http/context.js";
import { mountPrefixOf } from "../http/mount-prefix.js";
import type { ApiDocs } from "../http/openapi.js";
import { body, params } from "../http/validation.js";
import { type UiBundles, uiGlobalName } from "./bundle.js";

const UiComponentRequest = z.object({
  name: z.string().describe("The component's name: a key of the default export of the agent's `ui` file."),
});
const AgentPath = z.object({ agent: z.string().describe("The agent (langgraph.json `ui` key).") });
const FilePath = AgentPath.extend({ file: z.string().describe("A file of the agent's bundle.") });

export function uiRoutes(bundles: UiBundles): Hono<AppEnv> {
  return new Hono<AppEnv>()
    .post("/ui/:agent", async (c) => {
      const { agent } = params(c, AgentPath);
      const { name } = await body(c, UiComponentRequest);
      const files = bundles.files(agent);
      if (!files?.length) throw notFound(`UI not found for agent "${agent}"`);
      const host = c.req.header("host") ?? new URL(c.req.url).host;
      const local = ["localhost", "127.0.0.1"].some((h) => host === h || host.startsWith(`${h}:`));
      const base = `${local ? "http:" : ""}//${host}${mountPrefixOf(c)}/ui/${encodeURIComponent(agent)}/`;
      const lines: string[] = [];
      for (const file of files.filter((f) => f.basename.endsWith(".css"))) {
        lines.push(
          `<link rel="stylesheet" href="${doubleQuoted(base + encodeURIComponent(file.basename))}" />`,
        );
      }
      const script = files.find((f) => f.basename.endsWith(".js"));
      if (script) {
        const src = doubleQuoted(base + encodeURIComponent(script.basename));
        const onload = `${uiGlobalName(agent)}.render(${JSON.stringify(name)}, "{{shadowRootId}}")`;
        lines.push(`<script src="${src}" onload='${singleQuoted(onload)}'></script>`);
      }
      return c.body(lines.join("\n"), 200, { "Content-Type": "text/html; charset=utf-8" });
    })
    .get("/ui/:agent/:file", (c) => {
      const { agent, file: name } = params(c, FilePath);
      const file = bundles.file(agent, name);
      if (!file) throw notFound(`File not found: ${name}`);
      return c.body(file.contents as Uint8Array<ArrayBuffer>, 200, {
        "Content-Type": file.contentType,
        // Rebuilt in place in `hangar dev`: revalidate rather than keep a stale copy.
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
      });
    });
}

/** Escapes what could end a single-quoted attribute value (`"` stays: JSON strings keep their quotes). */
const singleQuoted = (value: string) => value.replace(/[&<>']/g, (ch) => `&#${ch.charCodeAt(0)};`);
/** Escapes what could end a double-quoted attribute value. */
const doubleQuoted = (value: string) => value.replace(/[&<>"]/g, (ch) => `&#${ch.charCodeAt(0)};`);

export const uiApiDocs: ApiDocs = {
  tags: [{ name: "UI", description: "Generative UI components (langgraph.json `ui`)." }],
  routes: {
    "POST /ui/{agent}": {
      tag: "UI",
      summary: "The HTML that loads a UI component",
      description:
        "Answers the snippet `LoadExternalComponent` (`@langchain/langgraph-sdk/react-ui`) inserts in a " +
        'shadow root: `<link rel="stylesheet">` tags for the bundle\'s CSS and a `<script>` whose `onload` ' +
        "calls `__LGUI_<agent>.render(name, shadowRootId)`. URLs are built from the `Host` header.",
      params: AgentPath,
      body: UiComponentRequest,
      contentType: "text/html",
      responseDescription: "HTML: link and script tags.",
    },
    "GET /ui/{agent}/{file}": {
      tag: "UI",
      summary: "A file of an agent's UI bundle",
      description:
        "The bundled components (`entrypoint.js`) or their style sheet (`entrypoint.css`). Public: " +
        "script and link tags send no API key.",
      params: FilePath,
      contentType: "application/octet-stream",
      responseDescription: "JavaScript or CSS.",
      public: true,
    },
  },
};
