/**
 * The whole double-texting suite (multitask-suite.ts) on a scale-out deployment: runs admitted on one
 * API process and observed on the other, executed by `hangar worker` processes, on Postgres and Redis.
 * Needs HANGAR_TEST_POSTGRES_URI and HANGAR_TEST_REDIS_URI (CI sets both).
 */
import { Cluster, SKIP } from "../helpers/cluster.js";
import { multitaskSuite } from "./multitask-suite.js";

// The whole double-texting suite again, admitted on one API process and observed on the other.
if (!SKIP) {
  multitaskSuite("scale-out: multitask strategies behave as in embedded mode", async () => {
    const cluster = await (await new Cluster().create()).up();
    return {
      url: cluster.apis[0]!.url,
      writeUrl: cluster.apis[1]!.url,
      stop: () => cluster.destroy(),
    };
  });
}
