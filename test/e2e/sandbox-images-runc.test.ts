/** Sandboxes on imported images, on the runc engine (a user namespace): test/helpers/sandbox-images-suite.ts. */
import { sandboxImagesSuite } from "../helpers/sandbox-images-suite.js";

sandboxImagesSuite("runc");
