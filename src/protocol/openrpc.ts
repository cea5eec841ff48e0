// The OpenRPC 1.3.2 document and the JSON Schemas, derived from the method table: what
// `rpc.discover` serves and what `npm run schema` writes to schema/.
import { z } from 'zod';
import type { MethodDef } from './define.js';
import { ErrorCodes, ErrorData, ErrorDescriptions } from './errors.js';
import { HomeRef, NewSession, Session, StateDocument, TranscriptEntry } from './model.js';
import { methodList, notificationList } from './table.js';

/** The shared data types, each written to schema/types/<Name>.json. */
export const namedTypes = { HomeRef, Session, NewSession, TranscriptEntry, StateDocument } as const;

type Json = Record<string, unknown>;

const inputSchema = (s: z.ZodType): Json => strip(z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Json);
const outputSchema = (s: z.ZodType): Json => strip(z.toJSONSchema(s, { io: 'output', unrepresentable: 'any' }) as Json);

/** Drops `$schema` from nested use (OpenRPC content descriptors carry bare schemas). */
function strip(schema: Json): Json {
  const { $schema: _drop, ...rest } = schema;
  return rest;
}

function paramsOf(def: MethodDef): Json[] {
  const schema = inputSchema(def.params);
  const props = (schema.properties ?? {}) as Record<string, Json>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(props).map(([name, s]) => ({
    name,
    required: required.has(name),
    ...(typeof s.description === 'string' ? { description: s.description } : {}),
    schema: s,
  }));
}

function errorsOf(def: MethodDef): Json[] {
  const names = new Set(['InvalidParams', ...def.errors] as const);
  return [...names].map((name) => ({
    code: ErrorCodes[name],
    message: ErrorDescriptions[name],
    ...(name in ErrorData ? { data: outputSchema(ErrorData[name as keyof typeof ErrorData]) } : {}),
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
      params: paramsOf(def),
      ...(def.notification ? {} : { result: { name: 'result', schema: outputSchema(def.result) } }),
      errors: errorsOf(def),
      examples: [exampleOf(def)],
      ...(def.notification ? { 'x-notification': true } : {}),
    })),
    // OpenRPC has no server-to-client notifications; they go in an extension, from the same table.
    'x-notifications': notificationList.map((n) => ({
      name: n.method,
      summary: n.summary,
      params: outputSchema(n.params),
    })),
    components: {
      schemas: Object.fromEntries(Object.entries(namedTypes).map(([n, s]) => [n, outputSchema(s)])),
    },
  };
}

/** Each named type's JSON Schema (what a client sends: input form). */
export function typeSchemas(): Record<string, Json> {
  return Object.fromEntries(
    Object.entries(namedTypes).map(([n, s]) => [n, { $id: `${n}.json`, title: n, ...(z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Json) }]),
  );
}
