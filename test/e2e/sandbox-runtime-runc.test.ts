/** Sandboxes that run, on the runc engine (a user namespace): test/helpers/sandbox-runtime-suite.ts. */
import { sandboxRuntimeSuite } from "../helpers/sandbox-runtime-suite.js";

sandboxRuntimeSuite("runc");
