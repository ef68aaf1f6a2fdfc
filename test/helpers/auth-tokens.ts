/** The users of the custom auth suites: JWTs the fixture's handler (test/e2e/fixtures/auth/auth.ts) verifies. */
import { join } from "node:path";
import { SignJWT } from "jose";
import { REPO_ROOT } from "./server.js";

/** The project with that handler and the `whoami` graph. */
export const AUTH_CONFIG = join(REPO_ROOT, "test", "e2e", "fixtures", "auth", "langgraph.json");
const SECRET = new TextEncoder().encode("test-secret-of-the-auth-suite");

/** A token for user `sub` with these permissions (`delete`, `read-only`). */
export const token = (sub: string, permissions: string[] = []) =>
  new SignJWT({ name: `${sub} (display)`, permissions })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(sub)
    .sign(SECRET);
