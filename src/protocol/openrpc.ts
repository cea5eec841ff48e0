// The OpenRPC 1.3.2 document and the JSON Schemas, derived from the method table: what
// `rpc.discover` serves and what `npm run schema` writes to schema/. Every schema with an id
// (`.meta({ id })` in the contract) is written once under `components.schemas` and referred to
// by `$ref`, so a generator for another language gets one `Session` type, not 26 copies.
import * as z from 'zod';
import type { MethodDef } from './define.js';
import { ErrorCodes, ErrorData, ErrorDescriptions } from './errors.js';
import { methodList, notificationList } from './table.js';

type Json = Record<string, unknown>;
type Io = 'input' | 'output';

const COMPONENTS = '#/components/schemas/';
const DEFS = '#/$defs/';

/** One schema as zod writes it: `$defs` holds the named types it reaches. */
const raw = (s: z.ZodType, io: Io): Json => z.toJSONSchema(s, { io, unrepresentable: 'any' }) as Json;

/** Replaces every `#/$defs/X` in a JSON value by what `to(X)` says. */
function rewriteRefs(value: unknown, to: (id: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, to));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k === '$ref' && typeof v === 'string' && v.startsWith(DEFS) ? to(v.slice(DEFS.length)) : rewriteRefs(v, to),
    ]),
  );
}

/** Every schema the document contains, with the direction it travels in. */
function uses(): { schema: z.ZodType; io: Io }[] {
  return [
    ...methodList.flatMap((d) => [{ schema: d.params, io: 'input' as const }, { schema: d.result, io: 'output' as const }]),
    ...notificationList.map((n) => ({ schema: n.params, io: 'output' as const })),
    ...Object.values(ErrorData).map((schema) => ({ schema, io: 'output' as const })),
  ];
}

/**
 * The named types: each id's JSON Schema per direction it is used in. A type whose input form
 * (what a caller may send: defaults optional) differs from its output form and that travels both
 * ways gets two components, `X` (output) and `XInput`; otherwise one, `X`.
 */
class Components {
  private readonly forms = new Map<string, Partial<Record<Io, Json>>>();

  constructor() {
    for (const { schema, io } of uses()) {
      for (const [id, form] of Object.entries((raw(schema, io).$defs ?? {}) as Record<string, Json>)) {
        const seen = this.forms.get(id) ?? {};
        seen[io] = form;
        this.forms.set(id, seen);
      }
    }
  }

  name(id: string, io: Io): string {
    const f = this.forms.get(id);
    const split = f?.input !== undefined && f.output !== undefined && JSON.stringify(f.input) !== JSON.stringify(f.output);
    return split && io === 'input' ? `${id}Input` : id;
  }

  /** A schema of the document: its `$defs` become references to components. */
  schema(s: z.ZodType, io: Io): Json {
    const { $schema: _s, $defs: _d, ...rest } = raw(s, io);
    return rewriteRefs(rest, (id) => `${COMPONENTS}${this.name(id, io)}`) as Json;
  }

  /** Every component by name, its references pointing at `ref(name)`. */
  all(ref: (name: string) => string = (n) => `${COMPONENTS}${n}`): Record<string, Json> {
    const out: Record<string, Json> = {};
    for (const id of [...this.forms.keys()].sort()) {
      for (const io of ['output', 'input'] as const) {
        const form = this.forms.get(id)?.[io];
        if (form !== undefined) out[this.name(id, io)] ??= rewriteRefs(form, (x) => ref(this.name(x, io))) as Json;
      }
    }
    return out;
  }
}

function paramsOf(def: MethodDef, c: Components): Json[] {
  const schema = c.schema(def.params, 'input');
  const props = (schema.properties ?? {}) as Record<string, Json>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(props).map(([name, s]) => ({
    name,
    required: required.has(name),
    ...(typeof s.description === 'string' ? { description: s.description } : {}),
    schema: s,
  }));
}

function errorsOf(def: MethodDef, c: Components): Json[] {
  const names = new Set(['InvalidParams', ...def.errors] as const);
  return [...names].map((name) => ({
    code: ErrorCodes[name],
    message: ErrorDescriptions[name],
    ...(name in ErrorData ? { data: c.schema(ErrorData[name as keyof typeof ErrorData], 'output') } : {}),
  }));
}

function exampleOf(def: MethodDef): Json {
  const params = Object.entries((def.example.params ?? {}) as Record<string, unknown>).map(([name, value]) => ({ name, value }));
  return {
    name: `${def.method} example`,
    params,
    ...(def.notification ? {} : { result: { name: 'result', value: def.example.result ?? null } }),
  };
}

export function openRpcDocument(version: string): Json {
  const c = new Components();
  return {
    openrpc: '1.3.2',
    info: {
      title: 'herrscher-state',
      version,
      description:
        'Single-writer state process of the Herrscher daemon. JSON-RPC 2.0 over stdio or a unix socket; ' +
        'framing per connection: LSP Content-Length headers or newline-delimited JSON, detected from the first byte.',
    },
    methods: methodList.map((def) => ({
      name: def.method,
      summary: def.summary,
      paramStructure: 'by-name',
      params: paramsOf(def, c),
      ...(def.notification ? {} : { result: { name: 'result', schema: c.schema(def.result, 'output') } }),
      errors: errorsOf(def, c),
      examples: [exampleOf(def)],
      ...(def.notification ? { 'x-notification': true } : {}),
      ...(def.goName ? { 'x-go-name': def.goName } : {}),
    })),
    // OpenRPC has no server-to-client notifications; they go in an extension, from the same table.
    'x-notifications': notificationList.map((n) => ({
      name: n.method,
      summary: n.summary,
      params: c.schema(n.params, 'output'),
    })),
    components: { schemas: c.all() },
  };
}

/** Each named type's JSON Schema, one file each (schema/types/<Name>.json), referring to the others by file. */
export function typeSchemas(): Record<string, Json> {
  const all = new Components().all((n) => `${n}.json`);
  return Object.fromEntries(
    Object.entries(all).map(([n, s]) => [n, { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: `${n}.json`, title: n, ...s }]),
  );
}
