// How deep a request's params may nest. A 100 000-deep field in session/add passed the schema (an
// unknown field is kept as is) and then overflowed the stack of the encoder: -32603.

/**
 * Arrays and objects params may nest, counting params itself as 1. The store's encoder and zod
 * recurse per level (2 000 levels overflowed the stack, 1 000 did not), Go's decoder refuses
 * 10 000, and no Herrscher document comes near 512.
 */
export const MAX_PARAMS_DEPTH = 512;

/**
 * The path (first keys only) to a value nested deeper than `max`, or undefined when none is.
 * Iterative, so a value of any depth is measured without recursion. Runs on every request: the
 * common case (nothing too deep) walks without building paths; only a refusal finds its path.
 */
export function tooDeep(value: unknown, max: number = MAX_PARAMS_DEPTH): (string | number)[] | undefined {
  if (typeof value !== 'object' || value === null || !deeperThan(value, max)) return undefined;
  return pathPast(value, max);
}

function deeperThan(root: object, max: number): boolean {
  const values: object[] = [root];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop() as Record<string, unknown>;
    const depth = depths.pop() as number;
    if (depth > max) return true;
    for (const k in v) {
      const child = v[k];
      if (typeof child === 'object' && child !== null) {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** The first keys (at most 8, enough to find the field) of a path that goes past `max`. */
function pathPast(root: object, max: number): (string | number)[] {
  const path: (string | number)[] = [];
  let v: unknown = root;
  for (let depth = 1; path.length < 8 && depth <= max && typeof v === 'object' && v !== null; depth++) {
    const o = v as Record<string, unknown>;
    const k = Object.keys(o).find((key) => {
      const child = o[key];
      return typeof child === 'object' && child !== null && deeperThan(child, max - depth);
    });
    if (k === undefined) break;
    path.push(Array.isArray(o) ? Number(k) : k);
    v = o[k];
  }
  return path;
}
