/** Sandboxes that run, on the gVisor (runsc) engine: test/helpers/sandbox-runtime-suite.ts. */
import { sandboxRuntimeSuite } from "../helpers/sandbox-runtime-suite.js";

sandboxRuntimeSuite("runsc");
