// Which state file a path names, as the store names the one it opened: the real path of its
// folder and its own name (Store.statePath). Two paths to one file (a linked folder, a relative
// path, `..`) give one key, so the shared server opens one unit for them; and a dedicated server
// knows its own state however a client names it.
import fs from 'node:fs/promises';
import path from 'node:path';

/** The key of the state file `file` (resolved against the working directory): its folder's real path and its name; the absolute path while its folder does not exist. */
export async function stateKey(file: string): Promise<string> {
  const abs = path.resolve(file);
  try {
    return path.join(await fs.realpath(path.dirname(abs)), path.basename(abs));
  } catch {
    return abs;
  }
}
