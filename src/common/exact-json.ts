// JSON with integers exact to 64 bits. Go writes int and uint64 values as plain digits up to
// 18446744073709551615; JSON.parse rounds every one beyond 2^53-1 (9007199254740993 becomes
// ...992) and JSON.stringify cannot write a bigint. Here an integer literal beyond 2^53-1 parses
// as a bigint, and a bigint is written as its digits. Everything else is JSON.parse's and
// JSON.stringify's, which also do the work: the slow paths only mark the big literals.
import { randomBytes } from 'node:crypto';

/** Stands for a big integer inside a JSON string while JSON.parse or JSON.stringify runs. */
const NONCE = `${randomBytes(9).toString('base64')}:`;
const MARK = `\u0000${NONCE}`;
/** MARK as JSON text writes it. */
const MARK_TEXT = `\\u0000${NONCE}`;
const MARKED = new RegExp(`"\\\\u0000${NONCE.replace(/[+/]/g, '\\$&')}(-?\\d+)"`, 'g');

/** 2^53 has 16 digits: text without a run of 16 digits holds no unsafe integer literal. */
const LONG_DIGITS = /\d{16}/;

const reviveMarked = (_key: string, v: unknown): unknown =>
  typeof v === 'string' && v.startsWith(MARK) ? BigInt(v.slice(MARK.length)) : v;

/**
 * The index of the quote that closes the JSON string opening at `open` (escapes skipped), or
 * text.length when it is never closed: how a scan of JSON text steps over a string.
 */
export function closingQuote(text: string, open: number): number {
  let i = open + 1;
  for (; i < text.length; i++) {
    const d = text.charCodeAt(i);
    if (d === 0x5c) i++;
    else if (d === 0x22) break;
  }
  return i;
}

/**
 * JSON.parse, except that an integer literal (no fraction, no exponent) beyond 2^53-1 is a
 * bigint. Numbers written otherwise (1e20, 1.5) are numbers, as JSON.parse makes them.
 */
export function parseExactJson(text: string): unknown {
  if (!LONG_DIGITS.test(text)) return JSON.parse(text);
  let out = '';
  let from = 0;
  let marked = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: skip to its closing quote (a malformed one is JSON.parse's to report).
      i = closingQuote(text, i);
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let end = i + 1;
      while (end < text.length && isNumberChar(text.charCodeAt(end))) end++;
      const token = text.slice(i, end);
      if (/^-?(?:0|[1-9]\d*)$/.test(token) && !Number.isSafeInteger(Number(token))) {
        out += `${text.slice(from, i)}"${MARK_TEXT}${token}"`;
        from = end;
        marked = true;
      }
      i = end - 1;
    }
  }
  if (!marked) return JSON.parse(text);
  return JSON.parse(out + text.slice(from), reviveMarked);
}

const isNumberChar = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;

const markBigint = (_key: string, v: unknown): unknown => (typeof v === 'bigint' ? `${MARK}${v}` : v);

/** JSON.stringify, except that a bigint is written as its digits (JSON.stringify throws on one). */
export function stringifyExactJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof TypeError) || !/BigInt/i.test(err.message)) throw err;
  }
  return JSON.stringify(value, markBigint).replace(MARKED, '$1');
}
