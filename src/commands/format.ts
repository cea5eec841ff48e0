// How an operator sees entries and sessions at a terminal: one readable line each, with text from
// the files escaped (escape.ts) unless raw.
import type { Session, TranscriptEntry } from '../protocol/model.js';
import { escapeForTerminal } from './escape.js';

export interface FormatOptions {
  /** Print text from the files as it is, control characters included (--raw). */
  raw?: boolean;
}

/** `2026-07-26T00:00:05Z  assistant  $0.0040  text`, continuation lines indented. */
export function formatEntry(e: TranscriptEntry, o: FormatOptions = {}): string {
  const show = o.raw ? (s: string) => s : escapeForTerminal;
  const cost = e.cost ? `$${e.cost.toFixed(4)}` : '';
  const head = `${show(e.ts) || '-'}  ${show(e.role).padEnd(9)}  ${cost.padEnd(9)}  `;
  return head + show(e.text).replace(/\n/g, `\n${' '.repeat(head.length)}`);
}

export interface SessionRow {
  session: Session;
  lastTs: string;
  usage: { entries: number; cost: number };
}

/** A fixed-width table: name, vendor, archived, last activity, entries, cost. */
export function formatSessions(rows: readonly SessionRow[], o: FormatOptions = {}): string {
  const show = o.raw ? (s: string) => s : escapeForTerminal;
  const header = ['NAME', 'VENDOR', 'ARCHIVED', 'LAST ACTIVITY', 'ENTRIES', 'COST'];
  const cells = rows.map((r) => [
    show(r.session.name),
    show(r.session.vendor ?? ''),
    r.session.archived ? 'yes' : '',
    show(r.lastTs) || '-',
    String(r.usage.entries),
    `$${r.usage.cost.toFixed(4)}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] as string).length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(widths[i] as number)).join('  ').trimEnd();
  return [line(header), ...cells.map(line)].join('\n');
}
