// docs/clients.md's list of the Go client's method names, between its markers: written by
// `npm run schema` from the contract's methods and their Go names, so the page names what
// clients/go has. The Go methods written by hand over a wire method are listed here; a test
// checks every name on the page is a method of clients/go.
import { goMethodName, isExported, type OpenRpcMethodName } from './contract-names.js';

type Json = Record<string, unknown>;

export interface GoMethodName {
  /** `AddSession`, or `Watcher.Close` for a method of another type than `*Client`. */
  name: string;
  /** What it adds over the wire method, when it is hand-written; empty for a generated one. */
  note: string;
}

/** Hand-written Go methods over a wire method, beside the generated one (or instead of it when that is unexported). */
export const GO_HAND_WRITTEN: Record<string, readonly GoMethodName[]> = {
  'transcript/read': [{ name: 'ReadTranscript', note: 'the newest `limit` entries, as the state package reads them' }],
  'watch/subscribe': [{ name: 'Watch', note: 'events on a channel, in commit order' }],
  'watch/unsubscribe': [{ name: 'Watcher.Close', note: 'ends the watch and closes its channel' }],
};

/** The Go methods over each wire method, in the contract's order; unexported generated ones left out. */
export function goMethodNames(doc: Json): { wire: string; methods: GoMethodName[] }[] {
  return (doc.methods as OpenRpcMethodName[]).map((m) => {
    const generated = goMethodName(m);
    return { wire: m.name, methods: [...(isExported(generated) ? [{ name: generated, note: '' }] : []), ...(GO_HAND_WRITTEN[m.name] ?? [])] };
  });
}

export const BEGIN = '<!-- go-methods:begin -->';
export const END = '<!-- go-methods:end -->';

/** The markdown table between the markers. */
export function goMethodNamesTable(doc: Json): string {
  const rows = goMethodNames(doc).map(({ wire, methods }) => {
    const cell = methods.map((m) => (m.note ? `\`${m.name}\` (${m.note})` : `\`${m.name}\``)).join(', ');
    return `| \`${wire}\` | ${cell} |`;
  });
  return ['| wire method | Go method |', '|---|---|', ...rows].join('\n');
}

/** `markdown` with the section between the markers replaced; throws when the markers are missing. */
export function applyGoMethodNames(markdown: string, doc: Json): string {
  const at = markdown.indexOf(BEGIN);
  const to = markdown.indexOf(END);
  if (at < 0 || to < at) throw new Error(`docs/clients.md lacks the markers ${BEGIN} … ${END}`);
  return `${markdown.slice(0, at)}${BEGIN}\n${goMethodNamesTable(doc)}\n${markdown.slice(to)}`;
}
