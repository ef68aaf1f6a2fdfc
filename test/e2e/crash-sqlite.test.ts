/** The crash test (test/helpers/crash-under-load.ts) on embedded SQLite. */
import { crashUnderLoad } from "../helpers/crash-under-load.js";

crashUnderLoad("sqlite");
