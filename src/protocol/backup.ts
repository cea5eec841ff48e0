// backup: a consistent copy of the state dir at one revision, written by the server while it
// keeps serving (docs/operations.md, "Back up").
import * as z from 'zod';
import { defineMethod } from './define.js';

export const backup = defineMethod({
  method: 'backup',
  summary: 'Writes a consistent copy of the state dir into `dest` (an absolute path that does not exist or is an empty folder, outside the state dir): state.json, transcripts/ and participants/ as they stood at one revision (every write answered before it, none after), fsynced, with backup-manifest.json (revision, epoch, sha256 and size of each file). Writes wait only while the copy is fixed (hard links), not while it is written; reads go on.',
  params: () => z.strictObject({
    dest: z.string().min(1).describe('Where to write the backup: an absolute path; must not exist, or be an empty folder; not inside the state dir.'),
  }),
  result: () => z.object({
    dest: z.string().describe('The backup folder, absolute.'),
    revision: z.number().int().nonnegative().describe('The state revision the copy holds (the change feed\'s revision, of `epoch`).'),
    epoch: z.string().describe('The server run the revision belongs to.'),
    createdAt: z.string().describe('When the copy was fixed (ISO 8601, UTC).'),
    files: z.number().int().nonnegative().describe('Files in the backup, the manifest not counted.'),
    bytes: z.number().int().nonnegative().describe('Their bytes.'),
  }),
  errors: ['InvalidParams', 'StorageFailure'],
  example: {
    params: { dest: '/var/backups/herrscher/2026-07-26' },
    result: { dest: '/var/backups/herrscher/2026-07-26', revision: 17, epoch: 'e0c6…', createdAt: '2026-07-26T03:00:00.000Z', files: 42, bytes: 1048576 },
  },
});
