// A method's (and a notification's) schemas are built on first use, once: importing the protocol
// builds none of them, so a server's start pays only for those its first requests use.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { defineMethod, defineNotification } from '../../src/protocol/define.js';
import { methodList, notificationList } from '../../src/protocol/table.js';

test('a method builds its params and its result on first use, each once, and keeps them', () => {
  const built: string[] = [];
  const def = defineMethod({
    method: 'x/y',
    summary: 'a test method',
    params: () => (built.push('params'), z.strictObject({ name: z.string() })),
    result: () => (built.push('result'), z.object({ ok: z.boolean() })),
    errors: [],
    example: { params: { name: 'a' }, result: { ok: true } },
  });
  assert.deepEqual(built, [], 'nothing built at definition');
  const params = def.params;
  assert.deepEqual(built, ['params'], 'the params alone, at their first use');
  assert.equal(def.params, params, 'the same schema every time');
  assert.deepEqual(def.params.parse({ name: 'a' }), { name: 'a' });
  assert.equal(def.result, def.result);
  assert.deepEqual(built, ['params', 'result'], 'each built once');
  assert.equal(def.method, 'x/y');
  assert.deepEqual(Object.keys(def).sort(), ['errors', 'example', 'method', 'params', 'result', 'summary'], 'params and result are enumerable, as before');
});

test('a notification builds its params on first use, once', () => {
  let builds = 0;
  const def = defineNotification({ method: 'x/didY', summary: 'a test notification', params: () => (builds++, z.object({ n: z.number() })) });
  assert.equal(builds, 0);
  assert.equal(def.params, def.params);
  assert.equal(builds, 1);
});

test("every method and notification of the table has zod schemas where its params and result are", () => {
  for (const d of methodList) {
    assert.ok(d.params instanceof z.ZodType, `${d.method} params`);
    assert.ok(d.result instanceof z.ZodType, `${d.method} result`);
  }
  for (const n of notificationList) assert.ok(n.params instanceof z.ZodType, `${n.method} params`);
});
