// The client builds its functions from src/client/method-names.ts, which `npm run schema` writes
// from the method table so that the client loads no zod: it must list exactly the table's methods.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { methodNames } from '../../src/client/method-names.js';
import { methodList } from '../../src/protocol/table.js';

test('the client\'s method names are the method table\'s, in order (else run npm run schema)', () => {
  assert.deepEqual([...methodNames], methodList.map((d) => d.method));
});
