// Where tests keep what is slow to derive and depends only on content they can hash (the typed
// client's generated types: scripts/client-types-cache.ts; the copies of clients/go that
// test/clients/go-consume.test.ts builds against, each named after its content), shared by every
// run and checkout of this user on this machine.
import os from 'node:os';
import path from 'node:path';

export const CLIENT_TYPES_CACHE = path.join(os.tmpdir(), `herrscher-state-client-types-${process.getuid?.() ?? 'u'}`);

export const GO_RELEASE_COPIES = path.join(os.tmpdir(), `herrscher-state-go-release-${process.getuid?.() ?? 'u'}`);
