// Text from the files (a transcript is chat text anyone in the channel wrote) must not drive the
// operator's terminal: escape sequences can recolour, retitle, hide lines or, on some terminals,
// write to the clipboard, and bidi overrides can make a line read as something it is not. So the
// CLI prints them escaped, visibly, unless --raw.

/** C0 controls but \t and \n, DEL, C1 controls, and the bidi embeddings, overrides and isolates. */
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e\u2066-\u2069]/g;

const hex = (c: string, width: number): string => (c.codePointAt(0) as number).toString(16).padStart(width, '0');

/** `\x1b[31m` → the visible text `\x1b[31m`; C1 and bidi as `\u0085`, `\u202e`. */
export function escapeForTerminal(text: string): string {
  return text.replace(UNSAFE, (c) => (c <= '\x7f' ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`));
}

/**
 * JSON for a terminal or a script: JSON.stringify already escapes C0; this also writes C1 and
 * bidi characters as \u escapes, which any JSON parser reads back as the same string.
 */
export function safeJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(/[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${hex(c, 4)}`);
}
