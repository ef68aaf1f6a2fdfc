/**
 * Cron schedules: validation and "when does it fire next", on top of the `cron-parser` library.
 *
 * Accepted: the standard five fields (`minute hour day-of-month month day-of-week`), the same with a
 * leading seconds field (six fields; a Hangar extension, handy for tests and short intervals, which
 * the routes refuse below HANGAR_CRON_MIN_INTERVAL_SECONDS: `shortestInterval`), and the
 * `@yearly`/`@monthly`/`@weekly`/`@daily`/`@hourly` style macros. Times are read in the cron's IANA
 * time zone, UTC by default.
 */
import { createRequire } from "node:module";
import type * as CronParser from "cron-parser";

/**
 * cron-parser, required at the first schedule read: it brings luxon, about 2 MB of heap that a server
 * with no crons would otherwise hold from its start. (Its CommonJS build, so the load stays synchronous.)
 */
let parser: typeof CronParser.CronExpressionParser | undefined;
function cronParser(): typeof CronParser.CronExpressionParser {
  parser ??= (createRequire(import.meta.url)("cron-parser") as typeof CronParser).CronExpressionParser;
  return parser;
}

const MACROS = new Set([
  "@yearly",
  "@annually",
  "@monthly",
  "@weekly",
  "@daily",
  "@hourly",
  "@minutely",
  "@secondly",
  "@weekdays",
  "@weekends",
]);

/** Why the schedule is not a valid cron expression, or null when it is. */
export function scheduleError(schedule: string): string | null {
  const text = schedule.trim();
  if (text === "") return "must not be empty";
  if (text.startsWith("@")) {
    if (!MACROS.has(text.toLowerCase())) return `unknown macro "${text}"`;
  } else {
    const fields = text.split(/\s+/).length;
    if (fields !== 5 && fields !== 6) {
      return `must have 5 fields (minute hour day-of-month month day-of-week) or 6 with leading seconds, got ${fields}`;
    }
  }
  try {
    cronParser().parse(text, { currentDate: new Date(), tz: "UTC" }).next();
  } catch (err) {
    return (err as Error).message;
  }
  return null;
}

/** True when `timezone` is an IANA time zone name this runtime knows. */
export function isTimeZone(timezone: string): boolean {
  if (timezone.trim() === "") return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/**
 * The first firing strictly after `after` (epoch ms), or null when there is none before `endTime`
 * (epoch ms, inclusive) or none at all.
 */
export function nextRunAt(
  schedule: string,
  timezone: string | null,
  after: number,
  endTime: number | null = null,
): number | null {
  let next: number;
  try {
    next = cronParser()
      .parse(schedule.trim(), {
        currentDate: new Date(after),
        tz: timezone ?? "UTC",
      })
      .next()
      .getTime();
  } catch {
    return null;
  }
  return endTime !== null && next > endTime ? null : next;
}

/**
 * The shortest time between two firings of `schedule` (ms), read from its next firings in UTC. A
 * pattern's seconds and minutes repeat within every hour it fires, so 200 firings hold its shortest gap
 * (a day's worth for a five-field schedule firing every minute; `@secondly` shows at once).
 */
export function shortestInterval(schedule: string): number {
  const firings = cronParser().parse(schedule.trim(), { currentDate: new Date(0), tz: "UTC" });
  let shortest = Number.POSITIVE_INFINITY;
  let previous = firings.next().getTime();
  for (let i = 0; i < 200 && firings.hasNext(); i++) {
    const next = firings.next().getTime();
    shortest = Math.min(shortest, next - previous);
    previous = next;
  }
  return shortest;
}
