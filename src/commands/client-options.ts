// How the client commands (call, tail, sessions) reach a running server.
import type { Framing } from '../client/client.js';

export interface ClientOptions {
  /** The server's socket; undefined for the default one. */
  socket?: string;
  framing: Framing;
  /** How long to wait for the socket to accept. */
  timeoutMs: number;
}
