/** Image names as Docker reads them: what `hangar images` stores a name under, and what it refuses. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { normalizeImageName } from "../../src/sandboxes/engines/images.js";

const DIGEST = `sha256:${"a".repeat(64)}`;

test("usual spellings of one image are one name", () => {
  for (const [written, stored] of [
    ["python", "python:latest"],
    ["python:3.12-slim", "python:3.12-slim"],
    ["library/python:3.12", "python:3.12"],
    ["docker.io/library/python:3.12", "python:3.12"],
    ["index.docker.io/library/python", "python:latest"],
    ["docker.io/acme/agent:1", "acme/agent:1"],
    ["ghcr.io/acme/agent:1.2.3", "ghcr.io/acme/agent:1.2.3"],
    ["localhost:5000/img", "localhost:5000/img:latest"],
    ["registry.example.com:443/team/img:v_1", "registry.example.com:443/team/img:v_1"],
    [`img@${DIGEST}`, `img@${DIGEST}`],
    [`img:1@${DIGEST}`, `img:1@${DIGEST}`],
  ]) {
    assert.equal(normalizeImageName(written!), stored, written);
  }
});

test("what is not an image reference is refused", () => {
  for (const bad of [
    "",
    "Python",
    "python:",
    "a:b:c",
    "foo/",
    "/foo",
    "foo//bar",
    "../etc",
    "a b",
    "img@sha256:xyz",
    "x".repeat(300),
  ]) {
    assert.equal(normalizeImageName(bad), null, JSON.stringify(bad));
  }
});
