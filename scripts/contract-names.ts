// What the Go and Python generators read from the contract's OpenRPC document besides types: each
// method's Go name (the method definition's `goName`, carried as `x-go-name`; otherwise the wire
// name in PascalCase) and session/add's name rule (the pattern of its session's `name`).

type Json = Record<string, unknown>;

/** `channelID` → ChannelID, `cost_cap` → CostCap, `modelId` → ModelID, `userIds` → UserIDs, `rootUri` → RootURI. */
export function goName(key: string): string {
  const words = key.split(/[_./$-]|(?<=[a-z0-9])(?=[A-Z])/).filter(Boolean);
  return words
    .map((w) => {
      const lower = w.toLowerCase();
      if (lower === 'id') return 'ID';
      if (lower === 'ids') return 'IDs';
      if (lower === 'uri' || lower === 'url' || lower === 'json') return lower.toUpperCase();
      return w[0]!.toUpperCase() + w.slice(1);
    })
    .join('');
}

/** A method of the document as the generators read it. */
export interface OpenRpcMethodName {
  name: string;
  'x-go-name'?: string;
}

/** The Go client's name of a wire method; a lower-case one is unexported (a hand-written method wraps it). */
export function goMethodName(m: OpenRpcMethodName): string {
  return m['x-go-name'] ?? goName(m.name);
}

export const isExported = (goMethod: string): boolean => goMethod[0] === goMethod[0]!.toUpperCase();

/**
 * session/add's name rule as a regular expression source: the `pattern` of the `name` of the
 * session it takes. Written into the Go and Python clients, which skip rows that break it when
 * they watch every session. Throws when the contract no longer has it there.
 */
export function sessionNamePattern(doc: Json): string {
  const add = (doc.methods as { name: string; params: { name: string; schema: Json }[] }[]).find((m) => m.name === 'session/add');
  const ref = add?.params.find((p) => p.name === 'session')?.schema.$ref;
  const schemas = ((doc.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>;
  const session = typeof ref === 'string' ? schemas[ref.slice('#/components/schemas/'.length)] : undefined;
  const pattern = ((session?.properties as Record<string, Json> | undefined)?.name)?.pattern;
  if (typeof pattern !== 'string') throw new Error('the contract has no pattern for session/add\'s session.name');
  return pattern;
}
