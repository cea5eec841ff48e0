// docs/adding-a-method.md's path, taken by a test: one method added to a copy of the contract
// (a new module and its line in table.ts, nothing else) and `npm run schema` run on that copy
// gives the method everywhere it is derived — schema/, the Go client (which builds), the Python
// client (which imports), the typed client's names and types, the README's table and
// docs/clients.md — and changes nothing else.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { functionName } from '../../src/protocol/define.js';
import { REPO } from '../helpers/cli.js';
import { CLIENT_TYPES_CACHE, keptByContent } from '../helpers/derived-cache.js';

const DUMMY = `import * as z from 'zod';
import { defineMethod } from './define.js';

export const dummyPing = defineMethod({
  method: 'dummy/ping',
  goName: 'Ping',
  summary: 'Answers the ping it is given.',
  params: () => z.strictObject({ pingName: z.string(), pingTimes: z.number().int().optional() }),
  result: () => z.strictObject({ pong: z.string() }),
  errors: [],
  example: { params: { pingName: 'ping-me' }, result: { pong: 'ping-me' } },
});
`;

/** The files `npm run schema` fills in or writes whole, as the copy needs them. */
const COPIED = ['package.json', 'README.md', 'docs/clients.md', 'clients/python/herrscher_state.py', 'src/client/method-names.ts', 'schema', 'clients/go'];

const run = (cmd: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv): Promise<{ err: Error | null; out: string }> =>
  new Promise((resolve) => {
    execFile(cmd, args, { cwd, env, encoding: 'utf8', timeout: 110_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => resolve({ err, out: `${stdout}${stderr}` }));
  });

const hasGo = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;

test('a method added to the contract reaches every derived file, and nothing else changes', { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'add-method-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const rel of COPIED) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    cpSync(path.join(REPO, rel), path.join(dir, rel), { recursive: true });
  }

  // The contract's copy with the two edits docs/adding-a-method.md's contract step makes, kept
  // between runs by its content (tsx's transform cache keys a file by its path too: a fresh folder
  // each run compiled every file of it again); what it derives goes to the run's own `dir`.
  const contract = keptByContent('add-method-contract', (copy) => {
    cpSync(path.join(REPO, 'src/protocol'), path.join(copy, 'src/protocol'), { recursive: true });
    symlinkSync(path.join(REPO, 'node_modules'), path.join(copy, 'node_modules'));
    writeFileSync(path.join(copy, 'src/protocol/dummy.ts'), DUMMY);
    const tablePath = path.join(copy, 'src/protocol/table.ts');
    const table = readFileSync(tablePath, 'utf8');
    const lastDef = '  watch.watchSubscribe, watch.watchUnsubscribe,\n';
    assert.ok(table.includes(lastDef), 'table.ts lists its methods as this test expects');
    writeFileSync(tablePath, table.replace("import * as watch from './watch.js';\n", "import * as watch from './watch.js';\nimport * as dummy from './dummy.js';\n").replace(lastDef, `${lastDef}  dummy.dummyPing,\n`));
  });

  // A child process: the copy's `.meta({ id })` would clash with ours in zod's global registry.
  // The typed client's types from the cache when this copy's contract was derived before with the
  // same generator, compiler and zod (scripts/client-types-cache.ts).
  const gen = await run(process.execPath, ['--import', 'tsx', path.join(REPO, 'scripts/write-schema.ts'), path.join(contract, 'src/protocol'), dir], REPO, { ...process.env, HERRSCHER_CLIENT_TYPES_CACHE: CLIENT_TYPES_CACHE });
  assert.equal(gen.err, null, gen.out);
  const derived = (rel: string): string => readFileSync(path.join(dir, rel), 'utf8');

  const doc = JSON.parse(derived('schema/openrpc.json')) as { methods: { name: string; 'x-go-name'?: string }[] };
  assert.deepEqual(doc.methods.at(-1), { ...doc.methods.at(-1), name: 'dummy/ping', 'x-go-name': 'Ping' }, 'schema/openrpc.json');
  assert.ok(derived('clients/go/methods_gen.go').includes('func (c *Client) Ping(ctx context.Context, pingName string, opts ...PingOptions) (string, error) {'), 'Go');
  assert.ok(derived('clients/python/herrscher_state.py').includes('    def ping(self, pingName, pingTimes=None, timeout=None) -> Any:\n'), 'Python');
  assert.ok(derived('src/client/method-names.ts').includes("  'dummy/ping',\n"), 'the typed client builds a function per listed name');
  assert.match(derived('src/client/contract-types.ts'), /^ {2}'dummy\/ping': \{\n {4}pingName: string;\n {4}pingTimes\?: number \| undefined;\n {2}\};$/m, "the typed client's params type");
  assert.equal(functionName('dummy/ping'), 'dummyPing');
  const clientTypes = derived('src/client/contract-types.ts');
  assert.match(clientTypes, /'dummy\/ping': \{\n\s+pingName: string;/, "the typed client's params type");
  assert.match(clientTypes, /'dummy\/ping': \{\n\s+pong: string;/, "the typed client's result type");
  assert.match(derived('README.md'), /^\| `dummy\/ping` \| Answers the ping it is given\. \| `\{"pingName":"ping-me"\}` → `\{"pong":"ping-me"\}` \|$/m, 'README');
  assert.match(derived('docs/clients.md'), /^\| `dummy\/ping` \| `Ping` \|$/m, 'docs/clients.md');

  // Nothing else: every line that differs from the committed file is the new method's (or JSON's
  // comma after the method before it).
  for (const rel of ['schema/openrpc.json', 'src/client/contract-types.ts', 'clients/go/methods_gen.go', 'clients/go/types_gen.go', 'clients/go/errors_gen.go', 'clients/go/events_gen.go', 'clients/go/session_name_gen.go', 'clients/python/herrscher_state.py', 'src/client/method-names.ts', 'README.md', 'docs/clients.md']) {
    const before = new Set(readFileSync(path.join(REPO, rel), 'utf8').split('\n'));
    const after = derived(rel).split('\n');
    const foreign = after.filter((l) => !before.has(l) && !/ping|pong/i.test(l) && !/^[\s\]}),]*$/.test(l));
    assert.deepEqual(foreign, [], `${rel}: lines not of the new method`);
    const kept = new Set(after);
    const lost = [...before].filter((l) => !kept.has(l) && !/^[\s\]}),]*$/.test(l));
    assert.deepEqual(lost, [], `${rel}: lines the new method took away`);
  }

  const py = await run('python3', ['-c', 'import herrscher_state as h; assert callable(h.Client.ping)'], path.join(dir, 'clients/python'));
  assert.equal(py.err, null, `the Python client with the new method does not import: ${py.out}`);

  await t.test('the Go client with the new method builds', { skip: !hasGo && 'no go on PATH' }, async () => {
    const go = await run('go', ['vet', '.'], path.join(dir, 'clients/go'));
    assert.equal(go.err, null, go.out);
  });
});
