// The contract checks itself: every method's example fits its own schemas, codes are unique,
// and the committed schema/ is exactly what the table generates.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { functionName } from '../../src/protocol/define.js';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { openRpcDocument } from '../../src/protocol/openrpc.js';
import { methodList, methods } from '../../src/protocol/table.js';
import { handlers } from '../../src/server/bind.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('every method example parses with its own params and result schemas', () => {
  for (const def of methodList) {
    const p = def.params.safeParse(def.example.params);
    assert.ok(p.success, `${def.method} example params: ${p.success ? '' : p.error.message}`);
    if (!def.notification) {
      const r = def.result.safeParse(def.example.result);
      assert.ok(r.success, `${def.method} example result: ${r.success ? '' : r.error.message}`);
    }
  }
});

test('every method has a handler and a one-line summary', () => {
  for (const def of methodList) {
    assert.equal(typeof handlers[def.method as keyof typeof handlers], 'function', def.method);
    assert.ok(def.summary.length > 10 && !def.summary.includes('\n'), `${def.method} summary`);
  }
  assert.equal(Object.keys(methods).length, methodList.length, 'no two definitions share a wire name');
});

test('error codes are unique and application codes sit in the server-error range', () => {
  const codes = Object.values(ErrorCodes);
  assert.equal(new Set(codes).size, codes.length);
  for (const [name, code] of Object.entries(ErrorCodes)) {
    if (code > -32100 && code < -32000) assert.ok(!['ParseError', 'InvalidRequest'].includes(name));
    // RequestCancelled is LSP's own code (its reserved range -32899…-32800), kept so LSP clients know it.
    if (name === 'RequestCancelled') assert.equal(code, -32800);
    else assert.ok(code <= -32000 && code >= -32768, `${name} ${code}`);
  }
});

test('client function names derived from wire names are unique', () => {
  const names = methodList.map((d) => functionName(d.method));
  assert.equal(new Set(names).size, names.length);
  assert.equal(functionName('session/setResumeToken'), 'sessionSetResumeToken');
  assert.equal(functionName('rpc.discover'), 'rpcDiscover');
});

test('schema/openrpc.json is what the method table generates', () => {
  const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  const committed = JSON.parse(readFileSync(path.join(root, 'schema/openrpc.json'), 'utf8')) as unknown;
  assert.deepEqual(committed, JSON.parse(JSON.stringify(openRpcDocument(version))));
});

test('a session name that breaks the rule is refused by session/add params', () => {
  const r = methods['session/add'].params.safeParse({ session: { name: '../x' } });
  assert.equal(r.success, false);
  assert.deepEqual(r.error?.issues[0]?.path, ['session', 'name']);
});

test('a non-finite cost and a fractional token count are refused', () => {
  const base = { name: 'a', entry: { ts: 't', role: 'user', text: 'x' } };
  const inf = methods['transcript/append'].params.safeParse({ ...base, entry: { ...base.entry, cost: Infinity } });
  assert.equal(inf.success, false);
  assert.deepEqual(inf.error?.issues[0]?.path, ['entry', 'cost']);
  const frac = methods['transcript/append'].params.safeParse({ ...base, entry: { ...base.entry, tokens_in: 1.5 } });
  assert.deepEqual(frac.error?.issues[0]?.path, ['entry', 'tokens_in']);
});
