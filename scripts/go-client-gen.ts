// The Go client's generated half (clients/go/*_gen.go), from the contract's OpenRPC document: one
// struct per named type (components.schemas), one Go method per JSON-RPC method, one sentinel
// error per error code, one event type per notification. `npm run schema` writes it; CI fails
// when the committed files differ. The output is gofmt's own layout (checked by a test with
// gofmt), so it is the same with or without Go on the machine that generates it.
//
// Run alone (`tsx scripts/go-client-gen.ts <protocol dir> <out dir>`) it generates from another
// copy of the contract: the test that edits a method in a temp copy uses that.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { SHARED_SOCKET_NAME } from '../src/transport/socket.js';
import { goMethodName, goName, isExported, sessionNamePattern } from './contract-names.js';

type Json = Record<string, unknown>;

export interface GoContract {
  /** The OpenRPC document (openRpcDocument()). */
  doc: Json;
  /** ErrorCodes and ErrorDescriptions of src/protocol/errors.ts. */
  errorCodes: Record<string, number>;
  errorDescriptions: Record<string, string>;
}

/** Named types Go spells as another: session/add takes Go's Session, as state.AddSession does. */
const GO_TYPE_ALIASES: Record<string, string> = { NewSession: 'Session' };

const GO_KEYWORDS = new Set(['break', 'case', 'chan', 'const', 'continue', 'default', 'defer', 'else', 'fallthrough', 'for', 'func', 'go', 'goto', 'if', 'import', 'interface', 'map', 'package', 'range', 'return', 'select', 'struct', 'switch', 'type', 'var']);

const lowerFirst = (s: string): string => (/^[A-Z]+$/.test(s) ? s.toLowerCase() : s[0]!.toLowerCase() + s.slice(1));
const argName = (key: string): string => {
  const n = lowerFirst(goName(key));
  return GO_KEYWORDS.has(n) ? `${n}_` : n;
};

const REF = '#/components/schemas/';

/** One struct field, laid out by alignStruct. */
interface Field {
  doc?: string;
  name: string;
  type: string;
  tag: string;
}

/** gofmt's layout of struct fields: names and types in columns, a comment line starts a new section. */
function alignStruct(fields: Field[], indent = '\t'): string[] {
  const out: string[] = [];
  let section: Field[] = [];
  const flush = (): void => {
    const nw = Math.max(...section.map((f) => f.name.length));
    const tw = Math.max(...section.map((f) => f.type.length));
    for (const f of section) out.push(`${indent}${f.name.padEnd(nw)} ${f.type.padEnd(tw)} ${f.tag}`);
    section = [];
  };
  for (const f of fields) {
    if (f.doc) {
      if (section.length) flush();
      for (const line of wrap(f.doc)) out.push(`${indent}// ${line}`);
    }
    section.push(f);
  }
  if (section.length) flush();
  return out;
}

/** A doc text as comment lines of at most ~100 columns. */
function wrap(text: string, width = 96): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.replace(/\s+/g, ' ').trim().split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

const comment = (text: string, indent = ''): string => wrap(text).map((l) => `${indent}// ${l}`).join('\n');

class Generator {
  /** Struct declarations, in the order first needed. */
  private readonly structs = new Map<string, string>();

  constructor(private readonly components: Record<string, Json>) {}

  refName(ref: string): string {
    const n = ref.slice(REF.length);
    return GO_TYPE_ALIASES[n] ?? n;
  }

  /** The Go type of a schema; `name` is used when the schema is an inline object needing a struct. */
  type(s: Json, name: string, opt: { optional?: boolean; param?: boolean } = {}): string {
    if (typeof s.$ref === 'string') {
      const t = this.refName(s.$ref);
      return opt.optional ? `*${t}` : t;
    }
    if (Array.isArray(s.type)) {
      const types = (s.type as string[]).filter((t) => t !== 'null');
      const inner = types.length === 1 ? this.type({ ...s, type: types[0] }, name) : 'interface{}';
      return types.length < (s.type as string[]).length && !/^(\[\]|map\[|\*|interface)/.test(inner) ? `*${inner}` : inner;
    }
    const anyOf = s.anyOf as Json[] | undefined;
    if (anyOf) {
      const nonNull = anyOf.filter((x) => x.type !== 'null');
      if (nonNull.length === 1 && nonNull.length < anyOf.length) {
        const inner = this.type(nonNull[0]!, name);
        return inner.startsWith('[]') || inner.startsWith('map[') || inner.startsWith('*') || inner === 'json.RawMessage' ? inner : `*${inner}`;
      }
      return 'interface{}';
    }
    switch (s.type) {
      case 'string':
        return 'string';
      case 'boolean':
        // A flag whose default is true must be able to say false: a pointer, as optional numbers.
        return opt.optional && opt.param && s.default === true ? '*bool' : 'bool';
      case 'integer': {
        const t = typeof s['x-go-type'] === 'string' ? (s['x-go-type'] as string) : 'int';
        return opt.optional && opt.param ? `*${t}` : t;
      }
      case 'number':
        return opt.optional && opt.param ? '*float64' : 'float64';
      case 'array':
        return `[]${this.type((s.items ?? {}) as Json, `${name}Item`)}`;
      case 'object': {
        if (s.properties) {
          this.struct(name, s);
          return opt.optional ? `*${name}` : name;
        }
        const extra = s.additionalProperties;
        const value = extra && typeof extra === 'object' && Object.keys(extra).length ? this.type(extra as Json, `${name}Value`) : 'json.RawMessage';
        return `map[string]${value}`;
      }
      default:
        return 'json.RawMessage';
    }
  }

  /** Declares a struct for an object schema (once per name). */
  struct(name: string, s: Json, doc?: string): void {
    if (this.structs.has(name)) return;
    this.structs.set(name, ''); // reserve: fields may refer back
    const props = (s.properties ?? {}) as Record<string, Json>;
    const required = new Set((s.required ?? []) as string[]);
    const fields: Field[] = Object.entries(props).map(([key, p]) => {
      const optional = !required.has(key);
      return {
        ...(typeof p.description === 'string' ? { doc: p.description } : {}),
        name: goName(key),
        type: this.type(p, name + goName(key), { optional: optional && (p.type === 'object' || typeof p.$ref === 'string') }),
        tag: `\`json:"${key}${optional ? ',omitempty' : ''}"\``,
      };
    });
    const text = typeof doc === 'string' ? doc : typeof s.description === 'string' ? `${name}: ${s.description as string}` : `${name} is a part of a message.`;
    this.structs.set(name, `${comment(text)}\ntype ${name} struct {\n${alignStruct(fields).join('\n')}\n}`);
  }

  declarations(): string[] {
    return [...this.structs.values()];
  }

  components_(): void {
    for (const [name, s] of Object.entries(this.components)) {
      if (name in GO_TYPE_ALIASES) continue;
      this.struct(name, s);
    }
  }
}

interface Param {
  name: string;
  required: boolean;
  description?: string;
  schema: Json;
}

interface Method {
  name: string;
  'x-go-name'?: string;
  summary: string;
  params: Param[];
  result?: { schema: Json };
  errors: { code: number }[];
  'x-notification'?: boolean;
}

/** The doc comment of a method: Go's "Name does…" when the summary starts with a verb. */
function methodDoc(goMethod: string, m: Method, errorNames: string[]): string {
  const [first = ''] = m.summary.split(' ');
  const verb = /^[A-Z][a-z]+s$/.test(first);
  const lead = verb ? `${goMethod} ${m.summary[0]!.toLowerCase()}${m.summary.slice(1)}` : `${goMethod} calls ${m.name}: ${m.summary}`;
  return `${comment(lead)}\n//\n${comment(`Wire method ${m.name}.${errorNames.length ? ` Errors: ${errorNames.join(', ')}.` : ''}`)}`;
}

const HEADER = '// Code generated by `npm run schema` (scripts/go-client-gen.ts) from src/protocol. DO NOT EDIT.\n\n';

/** Every generated file of clients/go, by file name. */
export function generateGo(c: GoContract): Record<string, string> {
  const components = ((c.doc.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>;
  const g = new Generator(components);
  g.components_();
  const nameOfCode = new Map(Object.entries(c.errorCodes).map(([n, code]) => [code, n]));

  const methods: string[] = [];
  for (const m of c.doc.methods as Method[]) {
    const goMethod = goMethodName(m);
    const exported = isExported(goMethod);
    const base = exported ? goMethod : goMethod[0]!.toUpperCase() + goMethod.slice(1);
    const paramsType = `${lowerFirst(base)}Params`;
    const required = m.params.filter((p) => p.required);
    const optional = m.params.filter((p) => !p.required);
    const paramFields: Field[] = m.params.map((p) => ({
      name: goName(p.name),
      type: g.type(p.schema, `${base}${goName(p.name)}`, { optional: !p.required, param: true }),
      tag: `\`json:"${p.name}${p.required ? '' : ',omitempty'}"\``,
    }));
    const decls: string[] = [];
    if (m.params.length) decls.push(`type ${paramsType} struct {\n${alignStruct(paramFields).join('\n')}\n}`);
    const optionsType = `${exported ? base : goMethod}Options`;
    if (optional.length) {
      const fields: Field[] = optional.map((p) => ({
        ...(p.description ? { doc: p.description } : {}),
        name: goName(p.name),
        type: paramFields.find((f) => f.name === goName(p.name))!.type,
        tag: `\`json:"${p.name},omitempty"\``,
      }));
      decls.push(`${comment(`${optionsType} holds the optional params of ${goMethod}; the zero value sends none.`)}\ntype ${optionsType} struct {\n${alignStruct(fields).join('\n')}\n}`);
    }
    const args = ['ctx context.Context', ...required.map((p) => `${argName(p.name)} ${paramFields.find((f) => f.name === goName(p.name))!.type}`)];
    if (optional.length) args.push(`opts ...${optionsType}`);
    const body: string[] = [];
    const paramsExpr = m.params.length ? '&p' : 'struct{}{}';
    if (m.params.length) {
      body.push(`\tvar p ${paramsType}`);
      for (const p of required) body.push(`\tp.${goName(p.name)} = ${argName(p.name)}`);
      if (optional.length) {
        body.push('\tfor _, o := range opts {');
        for (const p of optional) body.push(`\t\tp.${goName(p.name)} = o.${goName(p.name)}`);
        body.push('\t}');
      }
    }
    const errorNames = m.errors.map((e) => `Err${nameOfCode.get(e.code) ?? e.code}`);
    let ret: string;
    const result = m.result?.schema;
    if (m['x-notification'] || !result) {
      ret = 'error';
      body.push(`\treturn c.notify(ctx, ${JSON.stringify(m.name)}, ${paramsExpr})`);
    } else if (result.type === 'null') {
      ret = 'error';
      body.push(`\treturn c.call(ctx, ${JSON.stringify(m.name)}, ${paramsExpr}, nil)`);
    } else {
      const props = result.properties as Record<string, Json> | undefined;
      const keys = props ? Object.keys(props) : [];
      if (result.type === 'object' && keys.length === 1) {
        const key = keys[0]!;
        const resultType = `${lowerFirst(base)}Result`;
        const fieldType = g.type(props![key]!, `${base}${goName(key)}`);
        decls.push(`type ${resultType} struct {\n${alignStruct([{ name: goName(key), type: fieldType, tag: `\`json:"${key}"\`` }]).join('\n')}\n}`);
        ret = `(${fieldType}, error)`;
        body.push(`\tvar r ${resultType}`, `\terr := c.call(ctx, ${JSON.stringify(m.name)}, ${paramsExpr}, &r)`, `\treturn r.${goName(key)}, err`);
      } else {
        const t = g.type(result, `${exported ? base : goMethod}Result`);
        ret = `(${t}, error)`;
        body.push(`\tvar r ${t}`, `\terr := c.call(ctx, ${JSON.stringify(m.name)}, ${paramsExpr}, &r)`, '\treturn r, err');
      }
    }
    methods.push(
      [...decls, `${methodDoc(goMethod, m, errorNames)}\nfunc (c *Client) ${goMethod}(${args.join(', ')}) ${ret} {\n${body.join('\n')}\n}`].join('\n\n'),
    );
  }

  const notifications = (c.doc['x-notifications'] ?? []) as { name: string; summary: string; params: Json }[];
  const events = notifications.map((n) => ({ n, type: g.type(n.params, `${goName(n.name)}Params`) }));

  const errors = Object.entries(c.errorCodes).map(
    ([name, code]) => `${comment(`Err${name} is error ${code}: ${c.errorDescriptions[name] ?? name}`)}\nvar Err${name} = &ErrorCode{Code: ${code}, Name: ${JSON.stringify(name)}}`,
  );

  const methodsBody = methods.join('\n\n');
  const methodsImports = methodsBody.includes('json.RawMessage') ? 'import (\n\t"context"\n\t"encoding/json"\n)' : 'import "context"';
  const methodsFile = `${HEADER}package stateclient\n\n${methodsImports}\n\n${methodsBody}\n`;
  const eventCases = events.map(({ n, type }) => `\tcase ${JSON.stringify(n.name)}:\n\t\tvar e ${type}\n\t\treturn &e, json.Unmarshal(params, &e)`);
  const eventMarks = events.map(({ n, type }) => `${comment(`${type} is a ${n.name} event: ${n.summary}`)}\nfunc (*${type}) isEvent() {}`);
  const eventsFile = `${HEADER}package stateclient\n\nimport "encoding/json"\n\n${eventMarks.join('\n\n')}\n\n// decodeEvent turns a notification into its typed event; nil for a method this client does not\n// know (a newer server's), which the caller skips.\nfunc decodeEvent(method string, params json.RawMessage) (Event, error) {\n\tswitch method {\n${eventCases.join('\n')}\n\t}\n\treturn nil, nil\n}\n`;
  const typesBody = g.declarations().join('\n\n');
  const typesFile = `${HEADER}package stateclient\n\n${typesBody.includes('json.RawMessage') ? 'import "encoding/json"\n\n' : ''}${typesBody}\n`;
  const errorsFile = `${HEADER}package stateclient\n\n${errors.join('\n\n')}\n\n// errorCodes lists every code the contract defines, for errors.Is.\nvar errorCodes = []*ErrorCode{${Object.keys(c.errorCodes).map((n) => `Err${n}`).join(', ')}}\n`;
  const pattern = sessionNamePattern(c.doc);
  if (pattern.includes('`')) throw new Error(`session name pattern ${pattern} holds a backtick`);
  const sessionNameFile = `${HEADER}package stateclient\n\nimport "regexp"\n\n${comment('sessionNameRule is session/add\'s name rule (the pattern of its session\'s name). A legacy row\'s name outside it may not name a file the server reads, and one such name in a watch\'s since would end the subscription (watch/overflow), so the watch of every session leaves it out.')}\nvar sessionNameRule = regexp.MustCompile(\`${pattern}\`)\n`;
  if (!/^[A-Za-z0-9._-]+$/.test(SHARED_SOCKET_NAME)) throw new Error(`shared socket name ${SHARED_SOCKET_NAME} is not a plain file name`);
  const sharedSocketFile = `// Code generated by \`npm run schema\` (scripts/go-client-gen.ts) from src/transport/socket.ts. DO NOT EDIT.\n\npackage stateclient\n\n${comment('SharedSocketName is the file name of the per-user shared server\'s socket (`serve --shared`) in DefaultSocketFolder; SharedSocketPath joins them.')}\nconst SharedSocketName = ${JSON.stringify(SHARED_SOCKET_NAME)}\n`;
  return { 'types_gen.go': typesFile, 'methods_gen.go': methodsFile, 'events_gen.go': eventsFile, 'errors_gen.go': errorsFile, 'session_name_gen.go': sessionNameFile, 'shared_socket_gen.go': sharedSocketFile };
}

/** Writes the generated files into `outDir`. */
export function writeGo(outDir: string, c: GoContract): string[] {
  mkdirSync(outDir, { recursive: true });
  const files = generateGo(c);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(outDir, name), text);
  return Object.keys(files);
}

async function main(protocolDir: string, outDir: string): Promise<void> {
  const openrpc = (await import(pathToFileURL(path.resolve(protocolDir, 'openrpc.ts')).href)) as { openRpcDocument(v: string): Json };
  const errors = (await import(pathToFileURL(path.resolve(protocolDir, 'errors.ts')).href)) as {
    ErrorCodes: Record<string, number>;
    ErrorDescriptions: Record<string, string>;
  };
  writeGo(outDir, { doc: openrpc.openRpcDocument('0.0.0'), errorCodes: errors.ErrorCodes, errorDescriptions: errors.ErrorDescriptions });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [protocolDir, outDir] = process.argv.slice(2);
  if (!protocolDir || !outDir) throw new Error('usage: tsx scripts/go-client-gen.ts <protocol dir> <out dir>');
  await main(protocolDir, outDir);
}
