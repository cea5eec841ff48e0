// The Go client's generated half follows the contract: the committed clients/go/*_gen.go is
// what the generator makes of src/protocol, and a method edited in a copy of the contract
// changes the generated Go method with it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ErrorCodes, ErrorDescriptions } from '../../src/protocol/errors.js';
import { openRpcDocument } from '../../src/protocol/openrpc.js';
import { generateGo } from '../../scripts/go-client-gen.js';
import { goName } from '../../scripts/contract-names.js';
import { REPO } from '../helpers/cli.js';
import { keptByContent } from '../helpers/derived-cache.js';

const generated = () => generateGo({ doc: openRpcDocument('0.0.0'), errorCodes: ErrorCodes, errorDescriptions: ErrorDescriptions });

test('the committed clients/go/*_gen.go is what npm run schema generates', () => {
  for (const [file, text] of Object.entries(generated())) {
    assert.equal(readFileSync(path.join(REPO, 'clients/go', file), 'utf8'), text, `clients/go/${file} is stale: run npm run schema`);
  }
});

test('Go names follow Go initialisms', () => {
  assert.deepEqual(['channelID', 'modelId', 'cost_cap', 'userIds', 'dur_ms', 'rootUri', 'rpc.discover'].map(goName), ['ChannelID', 'ModelID', 'CostCap', 'UserIDs', 'DurMs', 'RootURI', 'RpcDiscover']);
});

test('a method edited in a copy of the contract changes the generated Go method', { timeout: 60_000 }, async (t) => {
  // The edited copy is kept between runs by its content (tsx's transform cache keys a file by its
  // path too: a fresh folder each run compiled every file of it again); the output is the run's own.
  const dir = keptByContent('go-gen-contract', (copy) => {
    cpSync(path.join(REPO, 'src/protocol'), path.join(copy, 'protocol'), { recursive: true });
    symlinkSync(path.join(REPO, 'node_modules'), path.join(copy, 'node_modules'));
    const sessionTs = path.join(copy, 'protocol/session.ts');
    const before = 'params: () => z.strictObject({ name: Name, archived: z.boolean(), incarnation: Incarnation, writer: Writer }),';
    const source = readFileSync(sessionTs, 'utf8');
    assert.ok(source.includes(before), 'session/setArchived params as this test expects them');
    writeFileSync(sessionTs, source.replace(before, 'params: () => z.strictObject({ name: Name, archived: z.boolean(), note: z.string(), incarnation: Incarnation, writer: Writer }),'));
  });
  const outDir = mkdtempSync(path.join(os.tmpdir(), 'go-gen-'));
  t.after(() => rmSync(outDir, { recursive: true, force: true }));
  const out = path.join(outDir, 'go');
  // A child process: the copy's `.meta({ id })` would clash with ours in zod's global registry.
  const r = await new Promise<{ err: Error | null; stderr: string }>((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', path.join(REPO, 'scripts/go-client-gen.ts'), path.join(dir, 'protocol'), out], { cwd: REPO, encoding: 'utf8' }, (err, _o, stderr) =>
      resolve({ err, stderr }),
    );
  });
  assert.equal(r.err, null, r.stderr);
  const edited = readFileSync(path.join(out, 'methods_gen.go'), 'utf8');
  const original = generated()['methods_gen.go']!;
  const was = 'func (c *Client) SetArchived(ctx context.Context, name string, archived bool, opts ...SetArchivedOptions) (FoundChanged, error) {';
  const now = 'func (c *Client) SetArchived(ctx context.Context, name string, archived bool, note string, opts ...SetArchivedOptions) (FoundChanged, error) {';
  assert.ok(original.includes(was) && !original.includes(now));
  assert.ok(edited.includes(now) && !edited.includes(was), 'the new param is a Go argument');
  assert.match(edited, /\tNote +string +`json:"note"`/);
  // Nothing else changed: the two outputs differ only in setArchived's lines.
  const diff = edited.split('\n').filter((l) => !original.includes(l));
  assert.ok(diff.every((l) => /note|Note|SetArchived/.test(l)), `unexpected changes:\n${diff.join('\n')}`);
});
