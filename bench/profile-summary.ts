/**
 * Summarizes a V8 `.cpuprofile` (from `node --cpu-prof`): self time grouped by package, the top
 * self-time functions, and the inclusive time of Hangar's own functions.
 *
 *   node --import tsx bench/profile-summary.ts <file.cpuprofile> [--top 30]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Which package (or part of Hangar, or V8/Node pseudo-frame) a frame belongs to. */
function packageOf(url: string, fn: string): string {
  if (!url) {
    if (fn === "(garbage collector)") return "(gc)";
    if (fn === "(idle)") return "(idle)";
    if (fn === "(program)") return "(program)";
    return "(native)";
  }
  const nm = url.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "/node_modules/".length).split("/");
    return rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith("node:")) return "node internals";
  const src = /\/src\/([^/]+)/.exec(url);
  if (src) return `hangar src/${src[1].replace(/\.ts$/, ".ts")}`;
  if (url.includes("/bench/")) return "bench graphs";
  return url;
}

function summarize(profile: Profile, top = 30): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
    total += dt;
  }
  const key = (n: ProfileNode) =>
    `${n.callFrame.functionName || "(anonymous)"} ${shortUrl(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, { us: number; pkg: string }>();
  const inclusive = new Map<string, number>();
  let idle = 0;
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const pkg = packageOf(n.callFrame.url, n.callFrame.functionName);
    if (pkg === "(idle)") {
      idle += us;
      continue;
    }
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
    const k = key(n);
    const f = byFunction.get(k) ?? { us: 0, pkg };
    f.us += us;
    byFunction.set(k, f);
    // Inclusive time of Hangar's own functions: count each function once per stack.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const node = byId.get(cur)!;
      if (!packageOf(node.callFrame.url, node.callFrame.functionName).startsWith("hangar")) continue;
      const fk = key(node);
      if (seen.has(fk)) continue;
      seen.add(fk);
      inclusive.set(fk, (inclusive.get(fk) ?? 0) + us);
    }
  }
  const busy = total - idle;
  const pct = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)} %`;
  const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
  const lines: string[] = [];
  lines.push(
    `sampled ${(total / 1e6).toFixed(1)} s, busy ${(busy / 1e6).toFixed(1)} s (${((busy / total) * 100).toFixed(0)} %); percentages are of busy time`,
    "",
    "self time by package:",
  );
  for (const [pkg, us] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
    lines.push(`  ${pct(us)} ${ms(us)}  ${pkg}`);
  }
  lines.push("", `top ${top} functions by self time:`);
  for (const [fn, { us, pkg }] of [...byFunction].sort((a, b) => b[1].us - a[1].us).slice(0, top)) {
    lines.push(`  ${pct(us)} ${ms(us)}  ${fn}  [${pkg}]`);
  }
  lines.push("", "Hangar functions by inclusive time:");
  for (const [fn, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    lines.push(`  ${pct(us)} ${ms(us)}  ${fn}`);
  }
  return lines.join("\n");
}

function shortUrl(url: string): string {
  const nm = url.lastIndexOf("/node_modules/");
  if (nm >= 0) return url.slice(nm + "/node_modules/".length);
  const src = url.indexOf("/src/");
  if (src >= 0) return url.slice(src + 1);
  return url.replace(/^file:\/\//, "");
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: "string", default: "30" } },
});
if (positionals.length !== 1) {
  process.stderr.write("Usage: node --import tsx bench/profile-summary.ts <file.cpuprofile> [--top 30]\n");
  process.exit(2);
}
const profile = JSON.parse(readFileSync(positionals[0], "utf8")) as Profile;
process.stdout.write(`${summarize(profile, Number(values.top))}\n`);
