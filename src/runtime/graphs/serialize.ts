/**
 * JSON for graph values on the wire and in the database: LangChain messages become their flat dict
 * (`{...data, type}`) as the official servers send them; other class instances lose their methods.
 */
function replacer(this: any, key: string, serialized: unknown): unknown {
  // JSON.stringify calls toJSON() before the replacer; LangChain objects have one, so look at the original.
  const value: unknown = this[key];
  if (value === null || typeof value !== "object") {
    return typeof serialized === "bigint" ? serialized.toString() : serialized;
  }
  const v = value as Record<string, any>;
  if (typeof v.toDict === "function" && typeof v.getType === "function") {
    const { type, data } = v.toDict();
    return { ...data, type };
  }
  if (v.lg_name === "Command") return { resume: v.resume, update: v.update, goto: v.goto };
  if (v.lg_name === "Send") return { node: v.node, args: v.args };
  if (value instanceof Map) return Object.fromEntries(value);
  if (value instanceof Set) return [...value];
  if (value instanceof Error) return { error: value.name, message: value.message };
  if (ArrayBuffer.isView(value))
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("base64");
  return serialized;
}

export const toJson = (value: unknown): string => JSON.stringify(value, replacer) ?? "null";

/** The plain-JSON form of a value (what a client would read back), for storage and comparisons. */
export const toPlain = (value: unknown): unknown =>
  value === undefined ? undefined : JSON.parse(toJson(value));
