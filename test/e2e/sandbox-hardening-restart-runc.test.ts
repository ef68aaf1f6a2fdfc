/** A fork bomb across a server restart, on the runc (a user namespace) engine: test/helpers/sandbox-hardening-suite.ts. */
import { sandboxRestartHardeningSuite } from "../helpers/sandbox-hardening-suite.js";

sandboxRestartHardeningSuite("runc");
