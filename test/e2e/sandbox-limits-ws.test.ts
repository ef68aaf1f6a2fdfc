/** The data plane's memory bounds (ws part), on the bubblewrap engine: test/helpers/sandbox-limits-suite.ts. */
import { sandboxLimitsSuite } from "../helpers/sandbox-limits-suite.js";

sandboxLimitsSuite("bwrap", "ws");
