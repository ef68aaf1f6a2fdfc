/**
 * Hash routing (`/console#/threads/<id>`): the server serves one page, so a reload or a shared link
 * needs no server-side routes, and relative asset URLs stay right.
 */
import { useEffect, useState } from "react";

/** The route's path segments: `#/threads/abc` → `["threads", "abc"]` (a malformed escape is kept as typed). */
function current(): string[] {
  return location.hash.replace(/^#\/?/, "").split("?")[0]!.split("/").filter(Boolean).map(decodeSegment);
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * The route, and a count of the navigations so far: a page keyed by it starts afresh when the user
 * navigates, even to the route it shows (a second "new thread"). A page that records where it is
 * with `history.replaceState` (a new thread's id) fires no hashchange, so it is not restarted.
 */
export function useRoute(): { route: string[]; visit: number } {
  const [state, setState] = useState(() => ({ route: current(), visit: 0 }));
  useEffect(() => {
    const onChange = () => setState((s) => ({ route: current(), visit: s.visit + 1 }));
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return state;
}

/** The href of a route: `href("threads", id)` → `#/threads/<id>`. */
export const href = (...parts: string[]) => `#/${parts.map(encodeURIComponent).join("/")}`;

export function navigate(...parts: string[]): void {
  location.hash = href(...parts);
}
