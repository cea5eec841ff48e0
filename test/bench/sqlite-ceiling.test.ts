// The bench's SQLite ceiling (bench/fixtures/sqlite-ceiling.py through python3's sqlite3): it
// measures what the row claims (WAL, one committed row of the bench's line per insert, within the
// bounds given) and says why when it cannot run. Only correctness here; the rate is the bench's.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { SQLITE_CEILING } from '../../bench/harness/config.js';
import { LINE, probeSqlite, sqliteRate } from '../../bench/harness/disk.js';
import { tempDir } from '../helpers/temp-dir.js';

const execFileAsync = promisify(execFile);

/** Runs Python against a database: the test reads it with the same SQLite that wrote it. */
async function pythonSqlite(db: string, code: string): Promise<unknown> {
  const { stdout } = await execFileAsync('python3', ['-c', `import json, sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\n${code}`, db]);
  return JSON.parse(stdout);
}

test('the probe names the SQLite and Python versions that will measure the ceiling', async () => {
  const probe = await probeSqlite();
  assert.equal(probe.skipped, undefined, `python3's sqlite3 is required by the Python client tests: ${probe.skipped}`);
  assert.match((probe as { sqlite: string }).sqlite, /^3\.\d+\.\d+$/);
  assert.match((probe as { python: string }).python, /^3\.\d+\.\d+$/);
});

test('sqliteRate inserts exactly maxCount rows of the bench line into a WAL database and reports their rate', async () => {
  const dir = tempDir('hs-sqlite-');
  const rate = await sqliteRate(dir, { maxCount: 25, maxMs: 60_000 });
  assert.equal(rate.count, 25);
  assert.ok(rate.seconds > 0 && Math.abs(rate.rate - rate.count / rate.seconds) < 1e-6 * rate.rate, JSON.stringify(rate));
  const db = path.join(dir, 'bench.sqlite');
  // Byte 18 of the header is the write version: 2 once the database has been in WAL mode.
  assert.equal(readFileSync(db)[18], 2, 'journal_mode=WAL');
  const rows = await pythonSqlite(db, 'print(json.dumps(db.execute("SELECT count(*), min(line), max(line), min(session) FROM entries").fetchone()))');
  assert.deepEqual(rows, [25, LINE.toString('utf8'), LINE.toString('utf8'), 'main']);
});

test('sqliteRate stops at maxMs when that comes first', async () => {
  const rate = await sqliteRate(tempDir('hs-sqlite-'), { maxCount: 1_000_000, maxMs: 30 });
  assert.ok(rate.count > 0 && rate.count < 1_000_000, `count ${rate.count}`);
});

test('a missing python3 skips the ceiling and says which command was missing', async () => {
  const missing = path.join(tempDir('hs-sqlite-'), 'no-python3');
  assert.deepEqual(await probeSqlite(missing), { skipped: `${missing} is not on PATH` });
});

test('a python3 without its sqlite3 module answers unavailable, with the import error', async () => {
  // A package named sqlite3 earlier on the path than the standard library's, failing as a build
  // without _sqlite3 fails.
  const shadow = path.join(tempDir('hs-sqlite-'), 'sqlite3');
  mkdirSync(shadow);
  writeFileSync(path.join(shadow, '__init__.py'), 'raise ImportError("No module named \'_sqlite3\'")\n');
  const { stdout } = await execFileAsync('python3', [SQLITE_CEILING, '--probe'], { env: { ...process.env, PYTHONPATH: path.dirname(shadow) } });
  assert.deepEqual(JSON.parse(stdout), { unavailable: 'python3 has no sqlite3 module (No module named \'_sqlite3\')' });
});
