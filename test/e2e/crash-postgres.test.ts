/** The crash test (test/helpers/crash-under-load.ts) on Postgres, when HANGAR_TEST_POSTGRES_URI is set. */
import { crashUnderLoad } from "../helpers/crash-under-load.js";

crashUnderLoad("postgres");
