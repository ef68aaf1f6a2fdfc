import { startHangar } from "../helpers/server.js";
import { multitaskSuite } from "./multitask-suite.js";

multitaskSuite("multitask strategies (double texting)", async () => {
  const h = await startHangar();
  return { url: h.url, writeUrl: h.url, stop: () => h.stop() };
});
