// The Python client's generated sections (clients/python/herrscher_state.py, between its
// `<generated:…>` markers), from the contract's OpenRPC document: an exception class per error
// code, a method per wire method (named as the Go client's, in snake_case), session/add's name
// rule and the shared server's socket name (src/transport/socket.ts). `npm run schema` rewrites them; CI fails when the committed file differs.
import { SHARED_SOCKET_NAME } from '../src/transport/socket.js';
import { goMethodName, isExported, sessionNamePattern } from './contract-names.js';

type Json = Record<string, unknown>;

const PY_KEYWORDS = new Set(['False', 'None', 'True', 'and', 'as', 'assert', 'async', 'await', 'break', 'class', 'continue', 'def', 'del', 'elif', 'else', 'except', 'finally', 'for', 'from', 'global', 'if', 'import', 'in', 'is', 'lambda', 'nonlocal', 'not', 'or', 'pass', 'raise', 'return', 'try', 'while', 'with', 'yield']);

/** AddSession → add_session, SetStatusMessageID → set_status_message_id. */
export function snakeName(go: string): string {
  return go.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2').toLowerCase();
}

interface Method {
  name: string;
  'x-go-name'?: string;
  summary: string;
  params: { name: string; required: boolean }[];
  result?: { schema: Json };
  'x-notification'?: boolean;
}

const pyString = (s: string): string => JSON.stringify(s);

function methodDef(m: Method): string | undefined {
  const go = goMethodName(m);
  if (!isExported(go)) return undefined; // wrapped by hand (subscribe)
  const py = snakeName(go);
  for (const p of m.params) {
    if (PY_KEYWORDS.has(p.name) || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(p.name)) throw new Error(`${m.name}: param ${p.name} is no Python identifier`);
    if (p.name === 'timeout') throw new Error(`${m.name}: param timeout would shadow the per-call timeout`);
  }
  // Every call takes timeout= (seconds; None: the client's call_timeout); a notification has no reply to wait for.
  const timeout = m['x-notification'] ? [] : ['timeout=None'];
  const args = ['self', ...m.params.filter((p) => p.required).map((p) => p.name), ...m.params.filter((p) => !p.required).map((p) => `${p.name}=None`), ...timeout];
  const kwargs = [...(m['x-notification'] ? [] : ['_timeout=timeout']), ...m.params.map((p) => `${p.name}=${p.name}`)].join(', ');
  const callArgs = [pyString(m.name), ...(kwargs ? [kwargs] : [])].join(', ');
  const schema = m.result?.schema;
  const props = schema?.type === 'object' && schema.properties ? Object.keys(schema.properties as Json) : [];
  const only = props.length === 1 ? props[0] : undefined;
  const doc = `${m.summary.replace(/\\/g, '\\\\').replace(/"""/g, '\\"\\"\\"')} (${m.name}${only ? `; returns its ${only}` : ''})`;
  let body: string;
  if (m['x-notification']) body = `self.notify(${callArgs})`;
  else if (only) body = `return self.call(${callArgs})[${pyString(only)}]`;
  else body = `return self.call(${callArgs})`;
  return `    def ${py}(${args.join(', ')}) -> ${m['x-notification'] ? 'None' : 'Any'}:\n        """${doc}"""\n        ${body}\n`;
}

/** The text of each generated section, by marker name. */
export function pythonSections(doc: Json, errorCodes: Record<string, number>, errorDescriptions: Record<string, string>): Record<string, string> {
  const errors = Object.entries(errorCodes).map(
    ([name, code]) => `class ${name}(StateError):\n    """${code}: ${errorDescriptions[name] ?? name}"""\n    code = ${code}\n`,
  );
  const byCode = `ERRORS_BY_CODE = {\n${Object.entries(errorCodes).map(([name, code]) => `    ${code}: ${name},`).join('\n')}\n}\n`;
  const methods = (doc.methods as Method[]).map(methodDef).filter((x): x is string => x !== undefined);
  const pattern = sessionNamePattern(doc);
  if (pattern.includes('"')) throw new Error(`session name pattern ${pattern} holds a double quote`);
  return {
    errors: `${errors.join('\n\n')}\n\n${byCode}`,
    methods: methods.join('\n'),
    'session-name': `_SESSION_NAME = re.compile(r"${pattern}")\n`,
    'shared-socket': `SHARED_SOCKET_NAME = ${JSON.stringify(SHARED_SOCKET_NAME)}\n`,
  };
}

/** `text` with each `# <generated:name> …` … `# </generated:name>` section replaced. */
export function applyPythonSections(text: string, sections: Record<string, string>): string {
  let out = text;
  for (const [name, body] of Object.entries(sections)) {
    const re = new RegExp(`^([ \\t]*)(# <generated:${name}>[^\\n]*\\n)[\\s\\S]*?^[ \\t]*# </generated:${name}>`, 'm');
    if (!re.test(out)) throw new Error(`herrscher_state.py has no generated:${name} section`);
    out = out.replace(re, (_m, indent: string, open: string) => `${indent}${open}${body}${indent}# </generated:${name}>`);
  }
  return out;
}
