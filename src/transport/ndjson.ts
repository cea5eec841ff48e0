// Newline-delimited JSON, the framing Herrscher's Go sockets and any language's standard JSON
// encoder speak: one message per `\n`-terminated line.
import { stringifyExactJson } from '../common/exact-json.js';
import type { FrameBudget } from './frame-budget.js';
import { overBudget, processFrameBudget } from './frame-budget.js';
import type { FrameDecoder, FrameHandlers } from './frame-decoder.js';
import { isJsonWhitespace } from './frame-decoder.js';
import { tooLarge } from './framing-error.js';

const LF = 0x0a;
const CR = 0x0d;

/** Characters JSON.stringify leaves raw that some line splitters treat as line breaks. */
const LINE_BREAKERS = /[\u0085\u2028\u2029]/g;
const escapeLineBreaker = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * Encodes one message as an NDJSON line with U+2028, U+2029 and U+0085 escaped: Python's
 * `str.splitlines()` breaks lines at all three and pre-ES2019 JS parsers reject the first two
 * (Go's encoder escapes those two for the same reason).
 */
export function encodeNdjson(message: unknown): string {
  return `${stringifyExactJson(message).replace(LINE_BREAKERS, escapeLineBreaker)}\n`;
}

/**
 * Splits a byte stream at `\n`, holding at most maxMessageBytes (+1 for a `\r`) of an
 * unfinished line, taken from the shared partial-frame budget; a longer line is refused before
 * its end arrives, so memory stays bounded.
 */
export class NdjsonDecoder implements FrameDecoder {
  // The unfinished line, as the pieces that arrived; joined once when its `\n` comes, so a line
  // split over many chunks costs O(length), not O(length²).
  private parts: Buffer[] = [];
  private partsLength = 0;
  private stopped = false;

  constructor(
    private readonly maxMessageBytes: number,
    private readonly handlers: FrameHandlers,
    private readonly budget: FrameBudget = processFrameBudget,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (!this.stopped) {
      const newline = chunk.indexOf(LF, start);
      if (newline === -1) {
        this.keep(chunk, start);
        return;
      }
      let line = chunk.subarray(start, newline);
      if (this.partsLength > 0) {
        this.parts.push(line);
        line = Buffer.concat(this.parts, this.partsLength + line.length);
        this.release();
      }
      start = newline + 1;
      this.line(line);
    }
  }

  end(): void {
    if (this.stopped || this.partsLength === 0) return;
    const line = Buffer.concat(this.parts, this.partsLength);
    this.release();
    this.line(line);
  }

  discard(): void {
    this.stopped = true;
    this.release();
  }

  /** Drops the pieces held and gives their bytes back to the budget. */
  private release(): void {
    if (this.partsLength > 0) this.budget.give(this.partsLength);
    this.parts = [];
    this.partsLength = 0;
  }

  private keep(chunk: Buffer, start: number): void {
    const length = chunk.length - start;
    if (length === 0) return;
    // +1: the line may still turn out to end in `\r\n`, whose `\r` is not part of the message.
    if (this.partsLength + length > this.maxMessageBytes + 1) {
      this.fail(`Got ${this.partsLength + length} bytes and no newline yet`);
      return;
    }
    if (!this.budget.take(length)) {
      const bytes = this.partsLength + length;
      this.release();
      this.stopped = true;
      this.handlers.fatal(overBudget(this.budget, bytes));
      return;
    }
    // A tail, or a chunk that is a small view of a larger allocation, is copied so that what is
    // held is what the budget counts, not the whole memory it came in.
    const whole = start === 0 && chunk.buffer.byteLength <= 2 * length;
    this.parts.push(whole ? chunk : Buffer.from(chunk.subarray(start)));
    this.partsLength += length;
  }

  private line(raw: Buffer): void {
    const line = raw.length > 0 && raw[raw.length - 1] === CR ? raw.subarray(0, raw.length - 1) : raw;
    if (line.length > this.maxMessageBytes) {
      this.fail(`Got a line of ${line.length} bytes`);
      return;
    }
    let first = 0;
    while (first < line.length && isJsonWhitespace(line[first] as number)) first++;
    if (first === line.length) return; // blank lines are keep-alives, not messages
    this.handlers.body(line);
  }

  private fail(seen: string): void {
    this.stopped = true;
    this.release();
    this.handlers.fatal(tooLarge(`message too large: a line must be at most ${this.maxMessageBytes} bytes. ${seen}`));
  }
}
