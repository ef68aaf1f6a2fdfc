/**
 * langgraph.json `webhooks.url`: which webhook URLs runs and crons may name. Checked when a run or
 * cron is created or updated (a refused URL is a 422 naming the rule) and again before each delivery,
 * as the official server does. Without a `webhooks.url` policy every URL the request schema accepts
 * goes (a path of this server, or an absolute http(s) URL).
 */
import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import type { WebhookUrlPolicy } from "../../config/index.js";
import { HangarError } from "../../errors.js";

const refused = (message: string) => new HangarError("validation", message);

function blockList(ranges: [string, number, "ipv4" | "ipv6"][]): BlockList {
  const list = new BlockList();
  for (const [net, prefix, family] of ranges) list.addSubnet(net, prefix, family);
  return list;
}

const LOOPBACK = blockList([
  ["127.0.0.0", 8, "ipv4"],
  ["0.0.0.0", 8, "ipv4"], // "this network": 0.0.0.0 reaches the local host
  ["::1", 128, "ipv6"],
  ["::", 128, "ipv6"],
]);
const PRIVATE = blockList([
  ["10.0.0.0", 8, "ipv4"],
  ["172.16.0.0", 12, "ipv4"],
  ["192.168.0.0", 16, "ipv4"],
  ["100.64.0.0", 10, "ipv4"], // carrier-grade NAT
  ["fc00::", 7, "ipv6"], // unique local
]);
/** Never a webhook target under a policy: link-local (cloud metadata endpoints), multicast, reserved. */
const ALWAYS_REFUSED = blockList([
  ["169.254.0.0", 16, "ipv4"],
  ["224.0.0.0", 4, "ipv4"],
  ["240.0.0.0", 4, "ipv4"],
  ["fe80::", 10, "ipv6"],
  ["ff00::", 8, "ipv6"],
]);

/** An address as the block lists take it: IPv4-mapped IPv6 (`::ffff:127.0.0.1`) as IPv4. */
function normalize(address: string): [string, "ipv4" | "ipv6"] {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return [mapped[1], "ipv4"];
  return [address, isIP(address) === 6 ? "ipv6" : "ipv4"];
}

export type Resolver = (host: string) => Promise<string[]>;

const resolveAll: Resolver = async (host) => (await lookup(host, { all: true })).map((a) => a.address);

/** Throws a `validation` error (422) naming the rule the URL breaks; resolves when it may be used. */
export async function checkWebhookUrl(
  url: string,
  policy: WebhookUrlPolicy | undefined,
  resolve: Resolver = resolveAll,
): Promise<void> {
  if (!policy) return;
  if (url.length > policy.maxUrlLength)
    throw refused(
      `Webhook URL too long: ${url.length} characters, webhooks.url.max_url_length is ${policy.maxUrlLength}`,
    );
  if (url.startsWith("/")) {
    if (policy.disableLoopback)
      throw refused(
        "Loopback webhooks are disabled: a relative URL calls this server, and webhooks.url.disable_loopback is true",
      );
    return;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw refused("Invalid webhook URL");
  }
  const scheme = parsed.protocol.slice(0, -1).toLowerCase();
  if (scheme !== "http" && scheme !== "https") throw refused(`Webhook must use http or https, not ${scheme}`);
  if (policy.requireHttps && scheme !== "https")
    throw refused("Webhook must use https (webhooks.url.require_https)");
  const port = parsed.port ? Number(parsed.port) : scheme === "https" ? 443 : 80;
  if (policy.allowedPorts.length && !policy.allowedPorts.includes(port))
    throw refused(`Webhook port ${port} not allowed (webhooks.url.allowed_ports)`);
  const host = parsed.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (!host) throw refused("Invalid webhook hostname ''");
  if (
    policy.allowedDomains.length &&
    !policy.allowedDomains.some((d) => (d.startsWith("*.") ? host.endsWith(d.slice(1)) : host === d))
  ) {
    throw refused(`Webhook domain not allowed: ${host} is not in webhooks.url.allowed_domains`);
  }
  if (policy.disableLoopback && (host === "localhost" || host.endsWith(".localhost")))
    throw refused("Webhook host is loopback (webhooks.url.disable_loopback)");
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = await resolve(host);
    } catch {
      throw refused(`Failed to resolve webhook host ${host}`);
    }
  }
  for (const address of addresses) {
    const [ip, family] = normalize(address);
    if (ALWAYS_REFUSED.check(ip, family))
      throw refused(
        `Webhook host resolves to a disallowed IP (${address}: link-local, multicast or reserved)`,
      );
    if (policy.disableLoopback && LOOPBACK.check(ip, family))
      throw refused(`Webhook host resolves to a loopback IP (${address}; webhooks.url.disable_loopback)`);
    if (policy.disablePrivateIps && PRIVATE.check(ip, family))
      throw refused(`Webhook host resolves to a private IP (${address}; webhooks.url.disable_private_ips)`);
  }
}
