// `herrscher-state call METHOD [PARAMS-JSON | -]`: the command line of call.ts.
import { text } from 'node:stream/consumers';
import { CLIENT_FLAGS, clientOptions } from './client-options.js';
import { replyTimeoutMs } from './reply-timeout.js';
import { defineCommand, UsageError } from './command.js';

export const callCommand = defineCommand({
  name: 'call',
  summary: 'send one request to a running server and print the result as JSON',
  usage: ['call METHOD [PARAMS-JSON] [--socket PATH | --state FILE] [--framing lsp|ndjson] [--timeout MS]'],
  description:
    'The result goes to stdout as JSON (exit 0); an error answer goes to stderr as\n' +
    '"error CODE: message" and its data (exit 1). --timeout bounds the whole request, finding\n' +
    'the server, connecting and the reply (exit 1 when it passes). `call shutdown` sends `exit`\n' +
    'after the reply, so the server stops (a host\'s stdio server refuses both).',
  args: [
    { name: 'METHOD', help: 'e.g. state/get, session/list, transcript/read;\nall of them: herrscher-state call rpc.discover' },
    { name: 'PARAMS-JSON', help: 'the params object (default {}); - reads it from stdin' },
  ],
  flags: { ...CLIENT_FLAGS },
  examples: [
    { command: 'herrscher-state call session/list', says: 'the sessions, from the server on the default socket' },
    { command: `herrscher-state call transcript/read '{"name":"main","limit":20}'`, says: 'the 20 newest entries of session main' },
    { command: 'jq -n \'{name:"main"}\' | herrscher-state call session/find -', says: 'params from stdin, e.g. built by a script' },
  ],
  async run(v, positionals) {
    const [method, params, ...extra] = positionals;
    if (!method) throw new UsageError('call needs a METHOD, e.g. herrscher-state call state/get');
    if (extra.length) throw new UsageError(`call takes METHOD and one PARAMS-JSON, got extra ${JSON.stringify(extra)}`);
    const options = clientOptions(v);
    const requestTimeoutMs = options.givenTimeoutMs ?? replyTimeoutMs();
    // The connect gets the whole budget: the deadline, not the connect's own timer, is the bound.
    const { call } = await import('./call.js');
    return call({ method, params: params === '-' ? await text(process.stdin) : params, ...options, timeoutMs: requestTimeoutMs, requestTimeoutMs });
  },
});
