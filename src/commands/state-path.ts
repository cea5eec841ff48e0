// Where the state lives when --state is not given, as Herrscher decides it (core/host/serve.go).
import os from 'node:os';
import path from 'node:path';

export function defaultStatePath(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.HERRSCHER_STATE_DIR;
  return dir ? path.join(dir, 'state.json') : path.join(os.homedir(), '.config', 'herrscher', 'state.json');
}
