// `herrscher-state verify [DIR | --state FILE]`: store/verify.ts's report, one line per problem.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { describeBackup } from '../store/backup-manifest.js';
import { formatProblem, verifyStateDir } from '../store/verify.js';
import { defaultStatePath } from './state-path.js';

export async function verify(dir: string | undefined, state: string | undefined): Promise<number> {
  const statePath = path.resolve(dir !== undefined ? path.join(dir, 'state.json') : state ?? defaultStatePath());
  const folder = path.dirname(statePath);
  try {
    if (!(await stat(folder)).isDirectory()) throw new Error('not a folder');
  } catch (err) {
    process.stderr.write(`herrscher-state verify: ${folder}: ${(err as Error).message}\n`);
    return 1;
  }
  const report = await verifyStateDir(folder, path.basename(statePath));
  for (const p of report.problems) process.stdout.write(`${formatProblem(p)}\n`);
  const what = report.backup ? `backup${report.manifest ? ` ${describeBackup(report.manifest)}` : ''}` : 'state dir';
  if (report.problems.length === 0) {
    process.stderr.write(`verify: ${folder}: ${what}: ${report.files} files checked, no problem\n`);
    return 0;
  }
  process.stderr.write(`verify: ${folder}: ${what}: ${report.problems.length} problem(s) in ${report.files} files checked\n`);
  return 1;
}
