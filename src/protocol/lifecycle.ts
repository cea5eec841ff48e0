// Connection lifecycle: the optional handshake, orderly shutdown, and the discovery document.
import { z } from 'zod';
import { defineMethod } from './define.js';

export const PROTOCOL_VERSION = '1.0';

export const initialize = defineMethod({
  method: 'initialize',
  summary: 'Optional handshake: who the server is, which state file it serves, which methods it has.',
  params: z.strictObject({
    clientInfo: z.object({ name: z.string(), version: z.string().optional() }).optional(),
  }).default({}),
  result: z.object({
    serverInfo: z.object({ name: z.string(), version: z.string() }),
    protocolVersion: z.string(),
    statePath: z.string().describe('The absolute path of the state.json served.'),
    capabilities: z.object({ methods: z.array(z.string()) }),
  }),
  errors: [],
  example: { params: { clientInfo: { name: 'herrscher', version: '1.4.0' } }, result: { serverInfo: { name: 'herrscher-state', version: '0.1.0' }, protocolVersion: '1.0', statePath: '/home/u/.config/herrscher/state.json', capabilities: { methods: ['initialize', '…'] } } },
});

export const shutdown = defineMethod({
  method: 'shutdown',
  summary: 'Finishes every pending write, then refuses writes with -32030; send `exit` next.',
  params: z.strictObject({}).optional(),
  result: z.null(),
  errors: [],
  example: { params: {}, result: null },
});

export const exit = defineMethod({
  method: 'exit',
  summary: 'Notification: the server exits (0 after shutdown, 1 without).',
  params: z.strictObject({}).optional(),
  result: z.null(),
  errors: [],
  notification: true,
  example: { params: {} },
});

export const rpcDiscover = defineMethod({
  method: 'rpc.discover',
  summary: 'The OpenRPC 1.3.2 document of this server (schema/openrpc.json).',
  params: z.strictObject({}).optional(),
  result: z.record(z.string(), z.unknown()),
  errors: [],
  example: { params: {}, result: { openrpc: '1.3.2', '…': '…' } },
});
