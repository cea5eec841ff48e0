// The Python client as a package: `pip install ./clients/python` into a fresh venv, offline (its
// build backend is the folder's own, standard library only), gives `import herrscher_state` with
// the npm package's version, whose spawn() runs $HERRSCHER_STATE_BIN. (.ci/run then runs the
// client's whole suite with that venv's Python.)
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, REPO } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const run = (cmd: string, args: string[], o: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<{ err: Error | null; out: string; stdout: string }> =>
  new Promise((resolve) => {
    execFile(cmd, args, { ...o, encoding: 'utf8', timeout: 170_000 }, (err, stdout, stderr) => resolve({ err, out: `${stdout}${stderr}`, stdout }));
  });

const npmVersion = (): string => (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;

test("herrscher_state.__version__ is package.json's version", () => {
  const line = /^__version__ = "([^"]*)"$/m.exec(readFileSync(path.join(REPO, 'clients/python/herrscher_state.py'), 'utf8'));
  assert.equal(line?.[1], npmVersion(), 'stale: run `npm run schema`');
});

test('pip install ./clients/python into a fresh venv, offline: import herrscher_state, its version, spawn() through HERRSCHER_STATE_BIN', { timeout: 180_000 }, async () => {
  const dir = tempDir();
  // A copy, as an unpacked release has it: the install must need nothing else of the repository.
  const src = path.join(dir, 'python');
  cpSync(path.join(REPO, 'clients/python'), src, { recursive: true, filter: (f) => !/__pycache__|\.egg-info|build$/.test(f) });
  const venv = path.join(dir, 'venv');
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, PIP_NO_INDEX: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1', PYTHONDONTWRITEBYTECODE: '1' };
  const python = path.join(venv, 'bin/python');
  // The venv without a pip of its own, installed into by the host's pip (`--python`, pip 22.3+):
  // the same install, without the ~6 s of CPU ensurepip spends copying pip into every venv. An
  // older host pip gets a venv with its own pip, as before.
  const bare = await run('python3', ['-m', 'venv', '--without-pip', venv], { cwd: dir });
  assert.equal(bare.err, null, `python3 -m venv (Debian: apt-get install python3-venv):\n${bare.out}`);
  let pip = await run('python3', ['-m', 'pip', '--python', python, 'install', '--no-index', src], { cwd: dir, env });
  if (pip.err && /no such option: --python/.test(pip.out)) {
    const made = await run('python3', ['-m', 'venv', '--clear', venv], { cwd: dir });
    assert.equal(made.err, null, made.out);
    pip = await run(python, ['-m', 'pip', 'install', '--no-index', src], { cwd: dir, env });
  }
  assert.equal(pip.err, null, pip.out);
  const probe = `import os, sys, tempfile, herrscher_state as hs
state = os.path.join(tempfile.mkdtemp(), "state.json")
c = hs.spawn(state, args=["--no-socket"])
with c:
    c.add_session({"name": "venv"})
    names = [s["name"] for s in c.snapshot_sessions()]
print(hs.__version__, os.path.dirname(hs.__file__).startswith(sys.prefix), names)
`;
  const r = await run(python, ['-c', probe], { cwd: dir, env: { ...env, HERRSCHER_STATE_BIN: CLI } });
  assert.equal(r.err, null, r.out);
  assert.equal(r.stdout.trim(), `${npmVersion()} True ['venv']`, r.out);
});
