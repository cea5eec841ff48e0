// A StrykerJS ignore-plugin (stryker.config.json "ignorers": ["contract-prose"]): no mutants in
// the contract's prose, the text a person reads in schema/ and the README: a `.describe(…)`
// argument, a `description`, `summary` or `example` property, and `ErrorDescriptions`. The one
// test that notices a change there is the schema staleness check (test/protocol/contract.test.ts
// compares schema/openrpc.json with what the table generates), which kills every such mutant
// whatever the code does: several hundred kills that would say nothing about the tests.
// Everything else in those files (names, codes, bounds, patterns, error messages) is mutated.
import { declareValuePlugin, PluginKind } from '@stryker-mutator/api/plugin';

const PROSE_KEYS = new Set(['description', 'summary', 'example']);

const keyName = (key) => (key.type === 'Identifier' ? key.name : key.type === 'StringLiteral' ? key.value : undefined);

/** Why `path` (a babel NodePath) is prose, or undefined when it is code. */
export function proseReason(path) {
  const parent = path.parentPath;
  if (!parent) return undefined;
  if (parent.isCallExpression() && path.listKey === 'arguments') {
    const callee = parent.node.callee;
    if (callee.type === 'MemberExpression' && !callee.computed && callee.property.type === 'Identifier' && callee.property.name === 'describe') {
      return 'contract prose: a .describe() text (only the schema staleness check reads it)';
    }
  }
  if (parent.isObjectProperty() && path.key === 'value' && !parent.node.computed && PROSE_KEYS.has(keyName(parent.node.key))) {
    return `contract prose: a "${keyName(parent.node.key)}" (only the schema staleness check reads it)`;
  }
  if (parent.isVariableDeclarator() && path.key === 'init' && parent.node.id.type === 'Identifier' && parent.node.id.name === 'ErrorDescriptions') {
    return 'contract prose: the error descriptions of schema/ (only the schema staleness check reads them)';
  }
  return undefined;
}

export const strykerPlugins = [declareValuePlugin(PluginKind.Ignore, 'contract-prose', { shouldIgnore: proseReason })];
