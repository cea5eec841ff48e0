// Keys read from JSON are data, whatever their name. `obj[key] = v` with key "__proto__" sets
// the object's prototype instead of a key, and `key in obj` is true for "constructor" or
// "toString" on any object: a session row's unknown "__proto__" or "constructor" was dropped
// that way, answered with success. These two helpers treat every key as an own data property.

/** Sets `key` as an own enumerable data property of `obj`, "__proto__" included. */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** Whether `obj` has `key` of its own (never through its prototype). */
export function hasOwn(obj: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}
