/** A fork bomb across a server restart, on the bubblewrap engine: test/helpers/sandbox-hardening-suite.ts. */
import { sandboxRestartHardeningSuite } from "../helpers/sandbox-hardening-suite.js";

sandboxRestartHardeningSuite("bwrap");
