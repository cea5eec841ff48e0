// A spawned server's stderr: passed on to ours as it comes (its log), and its last lines kept, so
// a server that cannot start can be reported by what it said (StartError.stderr).

/** The longest line kept: a line past it keeps its start and says it was cut. */
const MAX_LINE_CHARS = 2000;

export interface StderrTail {
  /** The last `max` complete lines (and the unfinished one, if any), oldest first. */
  lines(): string[];
  /** Resolves once the stream ended (or at once when it already has). */
  readonly ended: Promise<void>;
}

export function stderrTail(stream: NodeJS.ReadableStream, forward: NodeJS.WritableStream | undefined, max: number): StderrTail {
  const kept: string[] = [];
  let partial = '';
  const keep = (line: string): void => {
    kept.push(line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… (cut)` : line);
    if (kept.length > max) kept.shift();
  };
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    forward?.write(chunk);
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    if (partial.length > MAX_LINE_CHARS) {
      keep(partial);
      partial = '';
    }
    for (const line of parts) keep(line.replace(/\r$/, ''));
  });
  const ended = new Promise<void>((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });
  return {
    lines: () => (partial ? [...kept, partial].slice(-max) : [...kept]),
    ended,
  };
}
