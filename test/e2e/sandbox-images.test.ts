/** Sandboxes on imported images, on the bubblewrap engine: test/helpers/sandbox-images-suite.ts. */
import { sandboxImagesSuite } from "../helpers/sandbox-images-suite.js";

sandboxImagesSuite("bwrap");
