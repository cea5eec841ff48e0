// The bytes of state.json's session rows, kept between commits for one document layout (indent
// and prefix). The state document is copy-on-write: a row that did not change is the same,
// never-mutated object, so its bytes are those it was written with. A commit encodes only the
// rows it replaced, and copies the runs of rows it kept, with the separators between them, from
// the last document's rows in one copy per run (docs/performance.md, "Mutations at 5 000
// sessions": one copy per row and separator cost more than the write's own copy).

/** How a rows block is joined: the bytes between two rows. */
export interface BlockLayout {
  layout: string;
  sep: Buffer;
}

export class RowCache {
  private readonly byRow = new WeakMap<object, Buffer>();
  private layout: string | undefined;
  /**
   * Two buffers the blocks are built in, in turn, and the one the last block is in: a block is
   * made in the other, so building one allocates nothing once they are big enough (a 1.8 MB
   * buffer per commit kept the garbage collector busy).
   */
  private readonly buffers: [Buffer, Buffer] = [Buffer.alloc(0), Buffer.alloc(0)];
  private held = 0;
  /** The rows of the last block built, with where each one's bytes are in `bytes`. */
  private last: { rows: readonly object[]; starts: number[]; ends: number[]; bytes: Buffer } = { rows: [], starts: [], ends: [], bytes: Buffer.alloc(0) };

  /** The cached bytes of `row` in this layout, or `encode()`'s, remembered. */
  get(row: object, layout: string, encode: () => string): Buffer {
    this.checkLayout(layout);
    let bytes = this.byRow.get(row);
    if (bytes === undefined) {
      bytes = Buffer.from(encode(), 'utf8');
      this.byRow.set(row, bytes);
    }
    return bytes;
  }

  /**
   * The bytes of `rows` joined by `sep`, as one buffer: rows that stand in the last block built
   * where this walk expects them (the same index, or one further on after a removal) are copied
   * from it with their neighbours; any other row comes from `get`. The last block is replaced by
   * this one only once it is complete: an encode that throws leaves the cache as it was.
   * The bytes returned stay as they are until the next-but-one block: the caller writes them
   * before it asks for another.
   */
  block(rows: readonly object[], { layout, sep }: BlockLayout, encode: (row: object, index: number) => string): Buffer {
    this.checkLayout(layout);
    const last = this.last;
    const pieces: Buffer[] = [];
    const starts: number[] = new Array<number>(rows.length);
    const ends: number[] = new Array<number>(rows.length);
    let out = 0; // bytes in `pieces` so far, the open run excluded
    let runFrom = -1; // the open run: bytes [runFrom, runTo) of the last block, at `out` in this one
    let runTo = -1;
    const closeRun = (): void => {
      if (runFrom < 0) return;
      pieces.push(last.bytes.subarray(runFrom, runTo));
      out += runTo - runFrom;
      runFrom = -1;
    };
    let j = 0; // where the walk expects the next row in the last block
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as object;
      const k = last.rows[j] === row ? j : last.rows[j + 1] === row ? j + 1 : -1;
      if (k >= 0 && runFrom >= 0 && last.starts[k] === runTo + sep.length) {
        // Next to the open run in the last block, with the separator between them: the run grows.
        starts[i] = out + (last.starts[k] as number) - runFrom;
        runTo = last.ends[k] as number;
        ends[i] = out + runTo - runFrom;
        j = k + 1;
        continue;
      }
      closeRun();
      if (i > 0) {
        pieces.push(sep);
        out += sep.length;
      }
      if (k >= 0) {
        runFrom = last.starts[k] as number;
        runTo = last.ends[k] as number;
        starts[i] = out;
        ends[i] = out + runTo - runFrom;
        j = k + 1;
      } else {
        const bytes = this.get(row, layout, () => encode(row, i));
        pieces.push(bytes);
        starts[i] = out;
        out += bytes.length;
        ends[i] = out;
        j++; // a replaced row stands where the one it replaced stood
      }
    }
    closeRun();
    // Into the buffer the last block does not use: the one of the block before it, which the
    // writer copied before this commit began (a store's commits are one at a time).
    const spare = this.held === 0 ? 1 : 0;
    let into = this.buffers[spare] as Buffer;
    if (into.length < out) {
      into = Buffer.allocUnsafeSlow(Math.ceil(out * 1.25)); // room for rows that grow
      this.buffers[spare] = into;
    }
    let at = 0;
    for (const p of pieces) at += p.copy(into, at);
    const bytes = into.subarray(0, out);
    this.held = spare;
    this.last = { rows, starts, ends, bytes };
    return bytes;
  }

  private checkLayout(layout: string): void {
    if (layout === this.layout) return;
    if (this.layout !== undefined) throw new Error(`RowCache used for two layouts (${JSON.stringify(this.layout)}, ${JSON.stringify(layout)})`);
    this.layout = layout;
  }
}
