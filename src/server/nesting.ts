// How deep a request's params may nest. A 100 000-deep field in session/add passed the schema (an
// unknown field is kept as is) and then overflowed the stack of the encoder: -32603 (issue 10).

/**
 * Arrays and objects params may nest, counting params itself as 1. The store's encoder and zod
 * recurse per level (2 000 levels overflowed the stack, 1 000 did not), Go's decoder refuses
 * 10 000, and no Herrscher document comes near 512.
 */
export const MAX_PARAMS_DEPTH = 512;

/**
 * The path (first keys only) to a value nested deeper than `max`, or undefined when none is.
 * Iterative, so a value of any depth is measured without recursion.
 */
export function tooDeep(value: unknown, max: number = MAX_PARAMS_DEPTH): (string | number)[] | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const stack: { v: object; depth: number; path: (string | number)[] | undefined }[] = [{ v: value, depth: 1, path: [] }];
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop() as (typeof stack)[number];
    if (depth > max) return path;
    const keys: (string | number)[] = Array.isArray(v) ? v.map((_x, i) => i) : Object.keys(v);
    for (const k of keys) {
      const child = (v as Record<string | number, unknown>)[k];
      if (typeof child !== 'object' || child === null) continue;
      // Only the first few keys of the path are kept: enough to find the field, never a flood.
      stack.push({ v: child, depth: depth + 1, path: path && path.length < 8 ? [...path, k] : path });
    }
  }
  return undefined;
}
