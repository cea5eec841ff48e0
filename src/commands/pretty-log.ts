// Human log lines for a person at a terminal: `12:00:01.234 INFO  serving  state=/x/state.json`,
// an error's type and message on the next line, its stack only at debug or trace. A small
// formatter in place of pino-pretty: that is 18 more packages and 30–140 ms more at start
// (measured: require('pino-pretty') on this machine), for what is one line per event.
import type { DestinationStream } from 'pino';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const COLORS: Record<number, string> = { 10: '\x1b[2m', 20: '\x1b[2m', 40: '\x1b[33m', 50: '\x1b[31m', 60: '\x1b[1;31m' };
/** Keys pino adds to every line, shown by position instead of as key=value. */
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'err']);

export interface PrettyOptions {
  /** ANSI colours for the level. */
  color: boolean;
  /** Print an error's stack (debug and trace). */
  stacks: boolean;
}

interface LogErr {
  type?: string;
  message?: string;
  code?: string;
  stack?: string;
}

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}

function time(ms: number): string {
  const d = new Date(ms);
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

/** One pino JSON line as one human line (plus indented lines for an error). */
export function formatLine(json: string, o: PrettyOptions): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json; // not pino's: pass it through untouched
  }
  const level = typeof rec.level === 'number' ? rec.level : 30;
  const name = (LEVELS[level] ?? String(level)).padEnd(5);
  const head = o.color && COLORS[level] ? `${COLORS[level]}${name}\x1b[0m` : name;
  const fields = Object.entries(rec)
    .filter(([k, v]) => !HIDDEN.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${value(v)}`);
  let out = `${typeof rec.time === 'number' ? time(rec.time) : '--:--:--.---'} ${head} ${String(rec.msg ?? '')}${fields.length ? `  ${fields.join(' ')}` : ''}`;
  const err = rec.err as LogErr | undefined;
  if (err && typeof err === 'object') {
    out += `\n    ${err.type ?? 'Error'}${err.code ? ` ${err.code}` : ''}: ${err.message ?? ''}`;
    if (o.stacks && err.stack) out += `\n${err.stack.split('\n').slice(1).map((l) => `    ${l.trim()}`).join('\n')}`;
  }
  return `${out}\n`;
}

/** A pino destination that writes each line formatted to `dest`. */
export function prettyStream(dest: DestinationStream, o: PrettyOptions): DestinationStream {
  return {
    write(line: string): void {
      dest.write(formatLine(line.endsWith('\n') ? line.slice(0, -1) : line, o));
    },
  };
}
