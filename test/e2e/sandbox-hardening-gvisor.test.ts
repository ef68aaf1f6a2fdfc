/** A hostile sandbox and the host, on the gVisor (runsc) engine: test/helpers/sandbox-hardening-suite.ts. */
import { sandboxHardeningSuite } from "../helpers/sandbox-hardening-suite.js";

sandboxHardeningSuite("runsc");
