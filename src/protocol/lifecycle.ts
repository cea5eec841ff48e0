// Connection lifecycle: the optional handshake, orderly shutdown, and the discovery document.
import * as z from 'zod';
import { defineMethod } from './define.js';

/**
 * Semver of the wire protocol: the major changes when a method or param a client may rely on
 * goes away or changes meaning; the minor when one is added (1.1.0: `status`, LSP-style
 * `initialize` params, `capabilities.params`; 1.2.0: `backup`; 1.3.0: initialize's `state`, StateLocked, NotThisState).
 */
export const PROTOCOL_VERSION = '1.4.0';

export const initialize = defineMethod({
  method: 'initialize',
  summary: 'Optional handshake: who the server is, which state file it serves, which methods (and which params of each) it has. Accepts any client params, as LSP does: unknown keys are ignored, so a newer client never breaks an older server.',
  // The one permissive method (every other keeps strict params: a typo there is an error). The
  // LSP fields are typed so a wrong type is still refused; anything else is ignored.
  params: () => z.looseObject({
    processId: z.number().int().nullable().optional().describe('LSP: the client\'s pid; ignored.'),
    rootUri: z.string().nullable().optional().describe('LSP: ignored.'),
    capabilities: z.record(z.string(), z.unknown()).optional().describe('LSP: the client\'s capabilities; ignored.'),
    clientInfo: z.looseObject({ name: z.string(), version: z.string().optional() }).optional(),
    state: z.string().min(1).optional().describe(
      'The state file this connection works on (an absolute path; a relative one is resolved against the server\'s working directory). ' +
        'A shared server (`serve --shared`) binds the connection to it, opening it on first use; a dedicated server answers NotThisState unless it serves that file.',
    ),
  }).default({}),
  result: () => z.object({
    serverInfo: z.object({ name: z.string(), version: z.string() }),
    protocolVersion: z.string().describe('Semver of the wire protocol.'),
    statePath: z.string().describe('The absolute path of the state.json served.'),
    capabilities: z.object({
      methods: z.array(z.string()).describe('Every method this server has.'),
      params: z.record(z.string(), z.array(z.string())).describe('For each method, the names of the params it accepts.'),
    }),
  }),
  errors: ['NotThisState', 'StateLocked', 'StorageFailure'],
  example: {
    params: { processId: 4242, rootUri: null, capabilities: {}, clientInfo: { name: 'herrscher', version: '1.4.0' }, state: '/home/u/.config/herrscher/state.json' },
    result: {
      serverInfo: { name: 'herrscher-state', version: '0.1.0' }, protocolVersion: '1.3.0', statePath: '/home/u/.config/herrscher/state.json',
      capabilities: { methods: ['initialize', 'session/find', '…'], params: { 'session/find': ['name'], '…': [] } },
    },
  },
});

export const shutdown = defineMethod({
  method: 'shutdown',
  summary: 'Finishes every pending write, then refuses writes with -32030; send `exit` next.',
  params: () => z.strictObject({}).optional(),
  result: () => z.null(),
  errors: [],
  example: { params: {}, result: null },
});

export const exit = defineMethod({
  method: 'exit',
  summary: 'Notification: the server exits (0 after shutdown, 1 without).',
  params: () => z.strictObject({}).optional(),
  result: () => z.null(),
  errors: [],
  notification: true,
  example: { params: {} },
});

export const rpcDiscover = defineMethod({
  method: 'rpc.discover',
  goName: 'Discover',
  summary: 'The OpenRPC 1.3.2 document of this server (schema/openrpc.json).',
  params: () => z.strictObject({}).optional(),
  result: () => z.record(z.string(), z.unknown()),
  errors: [],
  example: { params: {}, result: { openrpc: '1.3.2', '…': '…' } },
});
