import assert from "node:assert/strict";
import { test } from "node:test";
import { studioUrl } from "../../src/cli/main.js";

const BASE = "http://127.0.0.1:2024";

test("Studio's link follows the LangSmith endpoint, as the LangSmith SDK derives its UI", () => {
  const link = (endpoint?: string) => studioUrl(BASE, endpoint ? { LANGSMITH_ENDPOINT: endpoint } : {});
  assert.equal(link(), `https://smith.langchain.com/studio?baseUrl=${BASE}`);
  assert.equal(link("https://api.smith.langchain.com"), `https://smith.langchain.com/studio?baseUrl=${BASE}`);
  assert.equal(
    link("https://eu.api.smith.langchain.com"),
    `https://eu.smith.langchain.com/studio?baseUrl=${BASE}`,
  );
  assert.equal(
    link("https://langsmith.corp.example/api/v1"),
    `https://langsmith.corp.example/studio?baseUrl=${BASE}`,
  );
  assert.equal(link("http://localhost:1984"), `http://localhost:3000/studio?baseUrl=${BASE}`);
  assert.equal(
    studioUrl(BASE, { LANGCHAIN_ENDPOINT: "https://eu.api.smith.langchain.com" }),
    `https://eu.smith.langchain.com/studio?baseUrl=${BASE}`,
  );
});
