/**
 * Names of volumes and templates: DNS-1035 labels (RFC 1035 / Kubernetes `IsDNS1035Label`), at most
 * 63 characters: lowercase letters, digits and '-', starting with a letter, not ending with '-'.
 * They become Kubernetes object names when a cluster provisioner is plugged in, hence the rule.
 */

export const NAME_MAX_LENGTH = 63;

const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** Why `name` is not a valid resource name, or null when it is. */
export function nameProblem(name: string): string | null {
  if (name.length === 0) return "must not be empty";
  if (name.length > NAME_MAX_LENGTH) {
    return `must be at most ${NAME_MAX_LENGTH} characters (got ${name.length})`;
  }
  if (!DNS_1035.test(name)) {
    return `'${name}' is not a DNS-1035 label: use lowercase letters, digits and '-', start with a letter and end with a letter or digit`;
  }
  return null;
}

export const isValidName = (name: string): boolean => nameProblem(name) === null;
