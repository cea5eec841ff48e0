// `herrscher-state restore BACKUP --state FILE`: store/restore.ts, its refusals as one message.
import path from 'node:path';
import { describeBackup } from '../store/backup-manifest.js';
import { RestoreRefused, restoreBackup } from '../store/restore.js';
import { formatProblem } from '../store/verify.js';

export async function restore(backupDir: string, state: string): Promise<number> {
  try {
    const r = await restoreBackup(path.resolve(backupDir), path.resolve(state));
    process.stdout.write(`restored the backup ${describeBackup(r)}: ${r.files} files into ${path.dirname(r.statePath)}\n`
      + `start it with: herrscher-state serve --state ${r.statePath}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof RestoreRefused)) throw err;
    if (err.report) for (const p of err.report.problems) process.stdout.write(`${formatProblem(p)}\n`);
    process.stderr.write(`herrscher-state restore: ${err.report ? `the backup in ${path.resolve(backupDir)} failed verify; nothing was restored` : err.message}\n`);
    return 1;
  }
}
