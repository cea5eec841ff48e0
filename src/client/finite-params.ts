// JSON has no NaN or Infinity: JSON.stringify would send null in their place, silently changing
// what is stored. The client refuses such params before anything is sent.

/** Where in `value` a number that JSON cannot carry sits (e.g. `entry.cost`), or undefined. */
export function nonFiniteAt(value: unknown, where = 'params'): string | undefined {
  const seen = new Set<object>();
  // Iterative: params nested deeper than the stack allows are refused by the server, not by us.
  const stack: [unknown, string][] = [[value, where]];
  while (stack.length > 0) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return `${path} is ${String(v)}`;
      continue;
    }
    if (typeof v !== 'object' || v === null || seen.has(v)) continue;
    seen.add(v);
    if (Array.isArray(v)) v.forEach((x, i) => stack.push([x, `${path}[${i}]`]));
    else for (const [k, x] of Object.entries(v as Record<string, unknown>)) stack.push([x, `${path}.${k}`]);
  }
  return undefined;
}

/** A TypeError naming where params hold NaN or ±Infinity, or undefined when they hold none. */
export function nonFiniteError(method: string, params: unknown): TypeError | undefined {
  const at = nonFiniteAt(params);
  if (at === undefined) return undefined;
  return new TypeError(`${method}: ${at}; JSON has no NaN or Infinity, so nothing was sent (send a finite number or leave the field out)`);
}
