// Which server answered a client command, for what the command says: with one shared server
// serving every state of the user beside the states' own servers, an answer from a server the
// discovery rule chose names it (the socket and the step that chose it). A socket the user gave
// (--socket) is not repeated back.
import { ResponseError } from 'vscode-jsonrpc';
import type { StateClient } from '../client/client.js';
import { describeSource } from '../transport/discovery.js';

/** "answered by the server at <socket> (<why that socket>)", or undefined for a socket the user gave. */
export function answeredBy(client: StateClient): string | undefined {
  const found = client.server;
  return found && found.source !== 'explicit' ? `answered by the server at ${describeSource(found)}` : undefined;
}

/** Runs `work`; a server's error answer is rethrown with the server that gave it named (answeredBy). */
export async function namingServer<T>(client: StateClient, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const by = answeredBy(client);
    if (err instanceof ResponseError && by !== undefined) throw new ResponseError(err.code, `${err.message} (${by})`, err.data);
    throw err;
  }
}
