// The bounds one connection's reader lives within: every number here caps memory or time that a
// peer could otherwise make us spend.

/** Default for --max-message-bytes: large enough for any realistic transcript read. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/**
 * The bytes of unfinished messages (partial frames) held for all connections of the process
 * together. Four maximum-size messages may be on their way at once; past that, the connection
 * whose bytes would pass the limit is answered -32040 and closed. When nothing else is held, one
 * message of any allowed size is always accepted.
 */
export const DEFAULT_PARTIAL_FRAME_BYTES_TOTAL = 256 * 1024 * 1024;

/**
 * An LSP header block longer than this is garbage, not headers: real ones are two short lines.
 * 8 KiB is what HTTP servers commonly allow per header section, and bounds what we hold before
 * we know a body's length.
 */
export const MAX_HEADER_BYTES = 8 * 1024;

/**
 * How long a connection we closed keeps reading (and discarding) the peer's bytes after our last
 * frame was flushed. Destroying a socket with unread input makes the kernel send RST, which can
 * throw away our error reply before the peer reads it; lingering lets a well-behaved peer see our
 * EOF and hang up first, and the bound keeps a silent peer from holding the socket forever.
 */
export const CLOSE_LINGER_MS = 2000;

/** How much of a peer's bytes an error message quotes: enough to recognise, never a flood. */
export const MAX_QUOTED_CHARS = 80;

/**
 * The longest method name passed on to the connection. Ours are short (`transcript/appendMany`);
 * a request naming a longer one is answered -32601 by the transport, and such a notification
 * dropped: a 60 MB method name handed on kept hundreds of MB alive per connection that never
 * read its replies.
 */
export const MAX_METHOD_CHARS = 256;

/** Quotes a value seen on the wire for an error message, shortened to MAX_QUOTED_CHARS. */
export function quote(text: string): string {
  const short = text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS)}…` : text;
  return JSON.stringify(short);
}

/**
 * Socket connections served at once; one more is closed as it arrives (and logged). Every bound
 * a connection lives within (unsent replies, its feed, its partial frame) times this is what a
 * crowd of clients can make the server hold. A host's bridges, an editor and an operator are a
 * handful; 256 leaves room for many without letting a loop of connects exhaust memory.
 */
export const MAX_CONNECTIONS = 256;

/**
 * The same for the shared server (`serve --shared`), whose clients are every program of the user
 * on every state file: 200 states in use, each with a connection or two, passed 256. An idle
 * connection holds a few KB and a descriptor; the partial-frame budget above is per process.
 */
export const MAX_SHARED_CONNECTIONS = 1024;
