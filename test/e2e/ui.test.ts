/**
 * Generative UI (langgraph.json `ui`, src/ui/): a real `hangar dev` on test/e2e/fixtures/ui, with an API
 * key. Raw HTTP for the snippet and the files (statuses, content types, 404s, 422s, which routes need
 * the key); then Debian's chromium (playwright-core) on a page bundled here with esbuild and served
 * from 127.0.0.1, which runs the graph with the SDK's `useStream` and renders the UI message it pushes
 * with `LoadExternalComponent`, from the server's bundle. Also: a components file that does not build
 * stops start-up naming it, and `hangar dev` rebuilds a changed file.
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { build } from "esbuild";
import { SignJWT } from "jose";
import type { Browser } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import {
  assertValidation,
  type Hangar,
  http,
  REPO_ROOT,
  readSSE,
  startHangar,
  tempDir,
  waitFor,
  writeProject,
} from "../helpers/server.js";

const FIXTURE = join(REPO_ROOT, "test", "e2e", "fixtures", "ui");
const CONFIG = join(FIXTURE, "langgraph.json");
const OUTPUT = join(REPO_ROOT, "test-output");
const KEY = "ui-test-key";
const T = { timeout: 90_000 };

describe("generative UI", () => {
  let h: Hangar;
  const key = { "x-api-key": KEY };

  before(async () => {
    h = await startHangar({ config: CONFIG, env: { HANGAR_API_KEYS: `${KEY}:ui-org` } });
  });
  after(async () => {
    await h?.stop();
  });

  /** The snippet asked for with another Host header (fetch cannot set one). */
  const snippetFor = (host: string) =>
    new Promise<string>((resolve, reject) => {
      const url = new URL(`${h.url}/ui/agent`);
      const req = request(
        { host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { ...key, host } },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (text += chunk));
          res.on("end", () => resolve(text));
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify({ name: "weather" }));
    });

  test("POST /ui/{agent}: the snippet that loads the bundle, as the reference writes it", T, async () => {
    const { port } = new URL(h.url);
    const res = await http(h.url, "POST", "/ui/agent", { name: "weather" }, key);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(
      res.text,
      `<link rel="stylesheet" href="http://127.0.0.1:${port}/ui/agent/entrypoint.css" />\n` +
        `<script src="http://127.0.0.1:${port}/ui/agent/entrypoint.js" onload='__LGUI_agent.render("weather", "{{shadowRootId}}")'></script>`,
    );
    // localhost is http: too; any other host gets protocol-relative URLs.
    const localhost = await snippetFor("localhost");
    assert.match(localhost, /href="http:\/\/localhost\/ui\/agent\/entrypoint\.css"/);
    const other = await snippetFor("ui.example:8443");
    assert.match(
      other,
      /^<link rel="stylesheet" href="\/\/ui\.example:8443\/ui\/agent\/entrypoint\.css" \/>/,
    );
    assert.match(other, /<script src="\/\/ui\.example:8443\/ui\/agent\/entrypoint\.js"/);
    // A name cannot break out of the attribute: the quote is an entity, the browser reads it back.
    const quoted = await http(h.url, "POST", "/ui/agent", { name: "it's <b>" }, key);
    assert.match(
      quoted.text,
      /onload='__LGUI_agent\.render\("it&#39;s &#60;b&#62;", "\{\{shadowRootId\}\}"\)'/,
    );
  });

  test(
    "POST /ui/{agent}: 404 for an agent without UI, 422 for a bad body, 401 without the key",
    T,
    async () => {
      const missing = await http(h.url, "POST", "/ui/nope", { name: "weather" }, key);
      assert.equal(missing.status, 404);
      assert.deepEqual(missing.body, { detail: 'UI not found for agent "nope"' });
      assertValidation(await http(h.url, "POST", "/ui/agent", {}, key), "name", "no name");
      assertValidation(await http(h.url, "POST", "/ui/agent", { name: 3 }, key), "name", "name not a string");
      assertValidation(await http(h.url, "POST", "/ui/agent", "{bad", key), "body", "malformed JSON");
      assertValidation(await http(h.url, "POST", "/ui/agent", undefined, key), "name", "no body");
      assert.equal((await http(h.url, "POST", "/ui/agent", { name: "weather" })).status, 401);
    },
  );

  test("GET /ui/{agent}/{file}: the bundle's files, public; 404 for anything else", T, async () => {
    const js = await http(h.url, "GET", "/ui/agent/entrypoint.js"); // no key: a script tag sends none
    assert.equal(js.status, 200);
    assert.equal(js.headers.get("content-type"), "text/javascript; charset=utf-8");
    assert.match(js.text, /^var __LGUI_agent = \(\(\) => \{/);
    assert.match(js.text, /Symbol\.for\("LGUI_REQUIRE"\)/);
    assert.match(js.text, /Symbol\.for\("LGUI_EXT_STORE"\)/);
    // React, the SDK and the shared module come from the page, not from the bundle.
    for (const name of [
      "react",
      "react/jsx-runtime",
      "@langchain/langgraph-sdk/react-ui",
      "@fixture/greeting",
    ]) {
      assert.ok(js.text.includes(`load(${JSON.stringify(name)})`), `${name} taken from the page`);
    }
    assert.doesNotMatch(js.text, /react\.production|react\.development|ReactCurrentOwner/);
    const css = await http(h.url, "GET", "/ui/agent/entrypoint.css");
    assert.equal(css.status, 200);
    assert.equal(css.headers.get("content-type"), "text/css; charset=utf-8");
    assert.match(css.text, /\.weather-card \{/);
    for (const path of ["/ui/agent/nope.js", "/ui/nope/entrypoint.js", "/ui/agent/entrypoint.js.map"]) {
      const res = await http(h.url, "GET", path);
      assert.equal(res.status, 404, path);
      assert.equal(typeof res.body?.detail, "string", path);
    }
  });

  test("/openapi.json documents both routes; the file route is public", T, async () => {
    const doc = (await http(h.url, "GET", "/openapi.json")).body;
    assert.equal(doc.paths["/ui/{agent}"].post.tags[0], "UI");
    assert.ok(doc.paths["/ui/{agent}"].post.requestBody);
    assert.deepEqual(doc.paths["/ui/{agent}/{file}"].get.security, []);
  });

  test("the graph's typedUi message streams as a custom event and in values.ui", T, async () => {
    const res = await fetch(`${h.url}/runs/stream`, {
      method: "POST",
      headers: { ...key, "content-type": "application/json" },
      body: JSON.stringify({
        assistant_id: "agent",
        input: { city: "Oslo" },
        stream_mode: ["values", "custom"],
      }),
    });
    const events = await readSSE(res);
    const custom = events.filter((e) => e.event === "custom");
    assert.equal(custom.length, 1);
    assert.equal(custom[0]!.data.type, "ui");
    assert.equal(custom[0]!.data.name, "weather");
    assert.deepEqual(custom[0]!.data.props, { city: "Oslo", temperature: 21 });
    assert.equal(custom[0]!.data.metadata.id, "ai-Oslo", "linked to its message");
    assert.equal(custom[0]!.data.metadata.run_id, events[0]!.data.run_id);
    const last = events.filter((e) => e.event === "values").at(-1)!.data;
    assert.deepEqual(last.ui, [custom[0]!.data]);
  });

  describe("in a browser", () => {
    let browser: Browser;
    let pages: Server;
    let pageUrl: string;

    before(async () => {
      await mkdir(OUTPUT, { recursive: true });
      const bundle = await build({
        entryPoints: [join(FIXTURE, "page.tsx")],
        bundle: true,
        write: false,
        format: "iife",
        platform: "browser",
        target: "es2020",
        jsx: "automatic",
        define: { "process.env.NODE_ENV": '"production"' },
        logLevel: "silent",
      });
      const script = bundle.outputFiles[0]!.contents;
      const html =
        '<!doctype html><html><head><meta charset="utf-8"><title>ui test</title><link rel="icon" href="data:,"></head><body><div id="root"></div><script src="/page.js"></script></body></html>';
      pages = createServer((req, res) => {
        if (req.url === "/page.js") res.writeHead(200, { "content-type": "text/javascript" }).end(script);
        else if (req.url?.startsWith("/?") || req.url === "/")
          res.writeHead(200, { "content-type": "text/html" }).end(html);
        else res.writeHead(404).end();
      });
      await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve));
      const { port } = pages.address() as AddressInfo;
      pageUrl = `http://127.0.0.1:${port}/?${new URLSearchParams({ api: h.url, key: KEY })}`;
      browser = await launchChromium();
    });

    after(async () => {
      await browser?.close();
      await new Promise((resolve) => pages?.close(resolve));
    });

    test("useStream + LoadExternalComponent render the component from the server's bundle", T, async () => {
      const page = await browser.newPage();
      const requests: string[] = [];
      const problems: string[] = [];
      page.on("request", (r) => requests.push(`${r.method()} ${r.url()}`));
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(`console: ${m.text()}`);
      });
      page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
      page.on("response", (r) => {
        if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
      });

      await page.goto(pageUrl);
      await page.locator("#start").click();
      // Playwright's locators reach into the open shadow root LoadExternalComponent renders in.
      const card = page.getByTestId("weather");
      await card.waitFor({ timeout: 30_000 });
      assert.equal(await card.textContent(), "Hello Paris: 21°C, clicked 0, on the test page");
      // The bundle's style sheet applies inside the shadow root.
      assert.equal(await card.evaluate((el) => getComputedStyle(el).borderTopColor), "rgb(0, 128, 0)");
      // Its hooks run on the page's React.
      await card.click();
      await waitFor(async () => (await card.textContent())?.includes("clicked 1"), {
        what: "a click re-renders",
      });
      await page.locator("#status", { hasText: "idle" }).waitFor();
      // The custom event arrived too (useStream's onCustomEvent).
      const custom = await page.evaluate(() => (window as unknown as { customEvents: any[] }).customEvents);
      assert.equal(custom.length, 1);
      assert.equal(custom[0].name, "weather");
      await page.screenshot({ path: join(OUTPUT, "ui-component.png") });

      const server = new URL(h.url).origin;
      assert.ok(requests.includes(`POST ${server}/ui/agent`), "asked for the snippet");
      assert.ok(requests.includes(`GET ${server}/ui/agent/entrypoint.js`), "loaded the script");
      assert.ok(requests.includes(`GET ${server}/ui/agent/entrypoint.css`), "loaded the style sheet");
      const page0 = new URL(pageUrl).origin;
      const foreign = requests.filter((r) => !r.includes(`${server}/`) && !r.includes(`${page0}/`));
      assert.deepEqual(foreign, [], "nothing from elsewhere");
      assert.deepEqual(problems, []);
      await page.close();
    });
  });
});

describe("generative UI: start-up", () => {
  let dir: string;
  before(async () => {
    dir = await tempDir("hangar-ui-");
  });

  /** A project with the fixture's graph and the given components file. */
  const projectWith = (ui: string) =>
    writeProject(
      { graphs: { agent: `${join(FIXTURE, "graph.ts")}:graph` }, ui: { agent: "./ui.tsx" } },
      { "ui.tsx": ui },
    );

  const startFailure = async (config: string): Promise<string> => {
    try {
      const h = await startHangar({ config, args: ["--executor-threads", "0"] });
      await h.stop();
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error("expected start-up to fail");
  };

  test("a components file that does not build stops start-up, naming it and the error", T, async () => {
    const config = await projectWith("export default { weather: () => <div>unclosed };\n");
    const message = await startFailure(config);
    assert.match(message, /exited \(code 1/);
    assert.match(message, /hangar: ui\["agent"\] \(.*ui\.tsx\): the UI components do not build:/);
    assert.match(message, /ERROR\] The character "\}" is not valid inside a JSX element\n\n\s+ui\.tsx:1:46:/);
    const missing = await projectWith('import "./missing.css";\nexport default {};\n');
    assert.match(await startFailure(missing), /Could not resolve "\.\/missing\.css"/);
  });

  test("a ui entry naming no file stops start-up with the field named", T, async () => {
    const config = join(dir, "bad.json");
    await writeFile(
      config,
      JSON.stringify({
        graphs: { agent: `${join(FIXTURE, "graph.ts")}:graph` },
        ui: { agent: "./nope.tsx" },
      }),
    );
    assert.match(
      await startFailure(config),
      /bad\.json: ui\.agent: UI components file not found: .*nope\.tsx/,
    );
  });

  test("under custom auth: the files need no user, the snippet does", T, async () => {
    const config = join(dir, "auth.json");
    const authFile = join(REPO_ROOT, "test", "e2e", "fixtures", "auth", "auth.ts");
    await writeFile(
      config,
      JSON.stringify({
        graphs: { agent: `${join(FIXTURE, "graph.ts")}:graph` },
        auth: { path: `${authFile}:auth` },
        ui: { agent: join(FIXTURE, "ui.tsx") },
        ui_config: { shared: ["@fixture/greeting"] },
      }),
    );
    const h = await startHangar({ config, command: "serve", args: ["--executor-threads", "0"] });
    try {
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: "HS256" })
        .setSubject("alice")
        .sign(new TextEncoder().encode("test-secret-of-the-auth-suite"));
      assert.equal((await http(h.url, "GET", "/ui/agent/entrypoint.js")).status, 200);
      assert.equal((await http(h.url, "GET", "/ui/agent/entrypoint.css")).status, 200);
      const anonymous = await http(h.url, "POST", "/ui/agent", { name: "weather" });
      assert.equal(anonymous.status, 401);
      const alice = await http(
        h.url,
        "POST",
        "/ui/agent",
        { name: "weather" },
        { authorization: `Bearer ${token}` },
      );
      assert.equal(alice.status, 200);
      assert.match(alice.text, /__LGUI_agent\.render\("weather"/);
    } finally {
      await h.stop();
    }
  });

  test("hangar dev rebuilds a changed components file", T, async () => {
    const config = await projectWith("export default { weather: () => <div>first</div> };\n");
    const h = await startHangar({ config, args: ["--executor-threads", "0"] });
    try {
      const js = async () => (await http(h.url, "GET", "/ui/agent/entrypoint.js")).text;
      assert.match(await js(), /"first"/);
      await writeFile(join(config, "..", "ui.tsx"), "export default { weather: () => <div>second</div> };\n");
      await waitFor(async () => /"second"/.test(await js()), {
        timeoutMs: 20_000,
        what: "the rebuilt bundle",
      });
      // A broken edit is logged; the last good bundle stays.
      await writeFile(join(config, "..", "ui.tsx"), "export default { weather: () => <div>third };\n");
      await waitFor(() => /UI components do not build/.test(h.logs()), {
        timeoutMs: 20_000,
        what: "the error logged",
      });
      assert.match(await js(), /"second"/);
    } finally {
      await h.stop();
    }
  });
});
