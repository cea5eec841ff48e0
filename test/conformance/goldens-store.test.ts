// Every Go golden replayed in-process against the store (through the method table, no
// transport): the results Go returned and the exact bytes Go left on disk. With durability
// `write`: the goldens against the Service (e2e/goldens-stdio.test.ts) run the default `sync`, so
// both modes are shown to leave Go's bytes, and the 1 000 appends of the compaction golden skip
// their log records and fdatasyncs here.
import { writeFileSync } from 'node:fs';
import { test } from 'node:test';
import type { ServerContext } from '../../src/server/bind.js';
import { dispatch, isMethodName } from '../../src/server/dispatch.js';
import { Store } from '../../src/store/store.js';
import { assertFilesMatch, assertResult, expandOp, loadGoldens } from '../helpers/goldens.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

for (const golden of loadGoldens()) {
  test(`golden ${golden.name}: ${golden.about}`, async () => {
    const dir = tempDir();
    if (golden.stateFile !== undefined) writeFileSync(statePathIn(dir), golden.stateFile);
    const store = await Store.open(statePathIn(dir), { durability: 'write' });
    const ctx = { store } as ServerContext;
    try {
      for (const [i, op] of golden.ops.entries()) {
        for (const call of expandOp(op)) {
          if (!isMethodName(call.method)) throw new Error(`unknown method ${call.method}`);
          const got = await dispatch(call.method, call.params, ctx);
          if (op.expect !== undefined) assertResult(got, op.expect, `op ${i} ${op.method}`);
        }
      }
    } finally {
      await store.close();
    }
    assertFilesMatch(dir, golden);
  });
}
