// The typed client's public types, written out as plain TypeScript by `npm run schema`: each
// method's params (what a caller may send: zod's input) and result (what it gets back: zod's
// output), each notification's params and the model's shapes, exactly as the TypeScript compiler
// reads them from src/protocol. The client's declarations import these instead of zod's types, so
// a consumer typechecks them whatever its module mode, esModuleInterop or skipLibCheck, and on
// any TypeScript the package supports (test/install/consumer.ts). test/client/contract-types.test.ts
// holds every generated type equal to the contract's.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type ts from 'typescript';

/** The generated file, relative to the repository. */
export const CLIENT_TYPES_FILE = 'src/client/contract-types.ts';

/** The model's shapes the client exports by name, each its zod schema's output. */
const MODEL_TYPES = ['HomeRef', 'Session', 'NewSession', 'TranscriptEntry', 'StateDocument'] as const;

const PROBE = `import type * as z from 'zod';
import type { MethodTable, NotificationTable } from '../protocol/table.js';
import type { ${MODEL_TYPES.join(', ')} } from '../protocol/model.js';
export type MethodParams = { [M in keyof MethodTable]: z.input<MethodTable[M]['params']> };
export type MethodResults = { [M in keyof MethodTable]: z.output<MethodTable[M]['result']> };
export type NotificationParams = { [N in keyof NotificationTable]: z.output<NotificationTable[N]['params']> };
${MODEL_TYPES.map((t) => `export type ${t}_ = ${t};`).join('\n')}
`;

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

type TypeScript = typeof ts;

/** The source of src/client/contract-types.ts for the contract in `protocolDir` (a `src/protocol`), compiled with this repository's options. */
export function clientTypesSource(protocolDir: string): string {
  // Loaded here, not at import: the compiler's module alone is ~1 CPU-s to load, and the tests
  // that import this file for CLIENT_TYPES_FILE, or that find the text in the cache
  // (scripts/client-types-cache.ts), never compile.
  const ts = createRequire(import.meta.url)('typescript') as TypeScript;
  const FLAGS = ts.NodeBuilderFlags.NoTruncation | ts.NodeBuilderFlags.InTypeAlias | ts.NodeBuilderFlags.MultilineObjectLiterals | ts.NodeBuilderFlags.IgnoreErrors;
  const probe = path.join(protocolDir, '../client/__contract-types-probe.ts');
  const config = ts.getParsedCommandLineOfConfigFile(path.join(REPO, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } });
  if (!config) throw new Error('client-types-gen: tsconfig.json unreadable');
  const host = ts.createCompilerHost(config.options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.getSourceFile = (file, lang, ...rest) => (file === probe ? ts.createSourceFile(file, PROBE, lang) : getSourceFile(file, lang, ...rest));
  host.fileExists = (file) => file === probe || fileExists(file);
  const program = ts.createProgram([probe], { ...config.options, noEmit: true, rootDir: undefined, incremental: false }, host);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(probe);
  if (!source) throw new Error('client-types-gen: probe not loaded');
  const errors = ts.getPreEmitDiagnostics(program, source);
  if (errors.length > 0) throw new Error(`client-types-gen: ${ts.flattenDiagnosticMessageText(errors[0]?.messageText, '\n')}`);

  const printer = ts.createPrinter({ newLine: ts.NewLineKind.LineFeed });
  const print = (node: ts.Node): string => printer.printNode(ts.EmitHint.Unspecified, node, source).replace(/ {4}/g, '  ');
  const typeText = (t: ts.Type, at: ts.Node): string => {
    const node = checker.typeToTypeNode(t, at, FLAGS);
    if (!node) throw new Error(`client-types-gen: no type node for ${checker.typeToString(t)}`);
    // A named type of the contract prints as import("<absolute path>").Name: every such name is
    // declared in the generated file itself (GoInteger), which compiling it alone checks.
    return print(node).replace(/import\("[^"]*"\)\./g, '');
  };
  const aliases = new Map(source.statements.filter(ts.isTypeAliasDeclaration).map((s) => [s.name.text, s]));
  const table = (name: string): string[] => {
    const decl = aliases.get(name);
    if (!decl) throw new Error(`client-types-gen: ${name} missing`);
    const members = checker.getTypeAtLocation(decl.name).getProperties();
    return [
      `export interface ${name} {`,
      ...members.map((m) => `  '${m.name}': ${typeText(checker.getTypeOfSymbolAtLocation(m, decl), decl).replace(/\n/g, '\n  ')};`),
      '}',
    ];
  };
  const model = MODEL_TYPES.flatMap((t) => {
    const decl = aliases.get(`${t}_`);
    if (!decl) throw new Error(`client-types-gen: ${t} missing`);
    return [`export type ${t} = ${typeText(checker.getTypeAtLocation(decl.name), decl)};`, ''];
  });
  const text = [
    '// Generated by `npm run schema` (scripts/client-types-gen.ts) from src/protocol: do not edit.',
    "// The typed client's public types as plain TypeScript, with no zod in them: each method's params",
    '// (what a call may send) and result (what it answers), each notification\'s params and the',
    "// model's shapes. test/client/contract-types.test.ts holds them equal to the contract's.",
    '',
    '/** A Go integer field: a number while it is exact, a bigint past 2^53-1. */',
    'export type GoInteger = number | bigint;',
    '',
    ...model,
    '/** Each method\'s params, by wire name. */',
    ...table('MethodParams'),
    '',
    '/** Each method\'s result, by wire name. */',
    ...table('MethodResults'),
    '',
    '/** Each notification\'s params, by wire name. */',
    ...table('NotificationParams'),
    '',
    '/** Every method\'s wire name. */',
    'export type MethodName = keyof MethodParams;',
    '/** Every notification\'s wire name. */',
    'export type NotificationName = keyof NotificationParams;',
    '',
  ].join('\n');
  return text;
}
