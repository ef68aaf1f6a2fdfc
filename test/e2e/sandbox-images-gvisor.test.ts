/** Sandboxes on imported images, on the gVisor (runsc) engine: test/helpers/sandbox-images-suite.ts. */
import { sandboxImagesSuite } from "../helpers/sandbox-images-suite.js";

sandboxImagesSuite("runsc");
