import { pathToFileURL } from "node:url";

/**
 * The named export of one of the project's modules (a graph, the auth handlers), awaited (an export may
 * be a promise). Throws an Error saying what is wrong; callers name the module in their own error.
 */
export async function importProjectExport(file: string, exportName: string): Promise<unknown> {
  const module = await import(pathToFileURL(file).href);
  if (!(exportName in module)) {
    const names = Object.keys(module).join(", ") || "none";
    throw new Error(`the file has no export named "${exportName}" (exports: ${names})`);
  }
  return await module[exportName];
}
