/**
 * Namespace listing shared by both store adapters: SQL narrows the candidates to the literal leading
 * labels of the prefix, and these functions apply wildcards, the suffix, max depth, order and paging.
 */
import type { NamespaceQuery } from "./store-ports.js";

/** The prefix's labels before its first `*` wildcard: what SQL can match directly. */
export function literalPrefix(prefix: string[] | undefined): string[] {
  const literal: string[] = [];
  for (const label of prefix ?? []) {
    if (label === "*") break;
    literal.push(label);
  }
  return literal;
}

const matchesAt = (labels: string[], pattern: string[], start: number) =>
  pattern.every((p, i) => p === "*" || labels[start + i] === p);

function compareLabels(a: string[], b: string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return a.length - b.length;
}

/** The page of distinct namespaces (dot-joined in storage) that the query selects, sorted. */
export function selectNamespaces(namespaces: Iterable<string>, q: NamespaceQuery): string[][] {
  const seen = new Set<string>();
  const out: string[][] = [];
  const { prefix, suffix } = q;
  for (const namespace of namespaces) {
    let labels = namespace.split(".");
    if (prefix && (labels.length < prefix.length || !matchesAt(labels, prefix, 0))) continue;
    if (
      suffix &&
      (labels.length < suffix.length || !matchesAt(labels, suffix, labels.length - suffix.length))
    ) {
      continue;
    }
    if (q.maxDepth !== undefined) labels = labels.slice(0, q.maxDepth);
    const id = labels.join(".");
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(labels);
  }
  out.sort(compareLabels);
  return out.slice(q.offset, q.offset + q.limit);
}
