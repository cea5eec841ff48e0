// zod builds the objects it returns by assignment, so a "__proto__" key the caller sent (an
// unknown session-row field, which this server stores and returns as Go keeps it) becomes the
// parsed object's prototype and vanishes. JSON.parse keeps it as an own key: this puts it back.
import { hasOwn, setOwn } from '../common/own-key.js';

/**
 * Walks `raw` (what JSON.parse gave) beside `parsed` (what zod gave) and, wherever `raw` has an
 * own "__proto__" key, makes it an own key of the parsed object again, with the prototype of a
 * plain object. Both are walked only while they have the same shape.
 */
export function restoreProtoKeys(raw: unknown, parsed: unknown, depth = 0): void {
  if (depth > 64 || typeof raw !== 'object' || raw === null || typeof parsed !== 'object' || parsed === null || raw === parsed) return;
  if (Array.isArray(raw)) {
    if (!Array.isArray(parsed)) return;
    raw.forEach((v, i) => restoreProtoKeys(v, parsed[i], depth + 1));
    return;
  }
  const from = raw as Record<string, unknown>;
  const to = parsed as Record<string, unknown>;
  if (hasOwn(from, '__proto__') && !hasOwn(to, '__proto__')) {
    Object.setPrototypeOf(to, Object.prototype);
    setOwn(to, '__proto__', from.__proto__);
  }
  for (const k of Object.keys(from)) if (k !== '__proto__' && hasOwn(to, k)) restoreProtoKeys(from[k], to[k], depth + 1);
}
