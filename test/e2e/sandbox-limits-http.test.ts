/** The data plane's memory bounds (http part), on the bubblewrap engine: test/helpers/sandbox-limits-suite.ts. */
import { sandboxLimitsSuite } from "../helpers/sandbox-limits-suite.js";

sandboxLimitsSuite("bwrap", "http");
