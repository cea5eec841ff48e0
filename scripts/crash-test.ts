// `npm run crash-test [-- --kills N --durability sync|write --big-every N]`: the long crash test
// (default 200 kills; every 4th round appends ~256 KiB entries, so kills land inside compactions
// and the checkpoints before them). Exits 1 and lists what was wrong when anything acknowledged
// was lost or torn, or a seq was answered twice.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runCrashTest } from '../test/helpers/crash-runner.js';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '200' },
    durability: { type: 'string', default: 'sync' },
    seed: { type: 'string', default: String(Date.now() % 100000) },
    'big-every': { type: 'string', default: '4' },
  },
});
const dir = mkdtempSync(path.join(os.tmpdir(), 'hs-crash-'));
const kills = Number(values.kills);
console.log(`crash test: ${kills} kills, durability ${values.durability}, seed ${values.seed}, dir ${dir}`);
const report = await runCrashTest({
  dir,
  kills,
  durability: values.durability as 'sync' | 'write',
  seed: Number(values.seed),
  bigEvery: Number(values['big-every']),
  onRound: (round, acked) => {
    if (round % 20 === 0 || round === kills) console.log(`  kill ${round}/${kills}: ${acked} appends acknowledged so far`);
  },
});
console.log(JSON.stringify({ ...report, problems: report.problems.length }, null, 2));
if (report.problems.length) {
  for (const p of report.problems) console.log(`  PROBLEM ${p}`);
  console.log(`state dir kept for inspection: ${dir}`);
  process.exit(1);
}
rmSync(dir, { recursive: true, force: true });
console.log('crash test passed: every acknowledged write survived every kill');
