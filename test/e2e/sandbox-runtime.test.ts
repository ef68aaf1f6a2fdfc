/** Sandboxes that run, on the bubblewrap engine: test/helpers/sandbox-runtime-suite.ts. */
import { sandboxRuntimeSuite } from "../helpers/sandbox-runtime-suite.js";

sandboxRuntimeSuite("bwrap");
