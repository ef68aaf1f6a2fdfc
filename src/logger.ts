/**
 * A deliberately tiny structured logger: one line per entry on stderr,
 * `<ISO time> <level> <msg> <k=v …>`. stdout stays free for the one line tools parse
 * (`Hangar listening on <url>`).
 */
import type { LogLevel } from "./config/index.js";

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function createLogger(
  level: LogLevel,
  out: { write(line: string): unknown } = process.stderr,
): Logger {
  const threshold = RANK[level];
  const emit = (at: LogLevel) => (msg: string, fields?: LogFields) => {
    if (RANK[at] < threshold) return;
    out.write(`${new Date().toISOString()} ${at} ${msg}${formatFields(fields)}\n`);
  };
  return { debug: emit("debug"), info: emit("info"), warn: emit("warn"), error: emit("error") };
}

/** A logger that drops everything; handy for tests and library callers. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

function formatFields(fields: LogFields | undefined): string {
  if (!fields) return "";
  let text = "";
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    text += ` ${key}=${formatValue(value)}`;
  }
  return text;
}

function formatValue(value: unknown): string {
  if (value instanceof Error) return quote(value.message);
  if (typeof value === "string") return quote(value);
  if (
    typeof value === "number" ||
    typeof value === "boolean" ||
    typeof value === "bigint" ||
    value === null
  ) {
    return String(value);
  }
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return quote(String(value));
  }
}

/** Bare when unambiguous; JSON-quoted when it holds spaces, quotes, `=` or control characters (one line). */
function quote(s: string): string {
  return s !== "" && /^[^\s"=\\\p{Cc}]+$/u.test(s) ? s : JSON.stringify(s);
}
