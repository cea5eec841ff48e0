// The names, ids and incarnations a document's session rows hold, so that adding a session checks
// its name and picks an id and an incarnation in O(1) instead of building sets of every row on
// each add (5 000 adds were quadratic: seconds), and finding a row by name (every
// append asks) does not walk the rows.
//
// Documents are immutable and copy-on-write, the index is mutable: it describes exactly one
// `sessions` array, its owner, and a mutation that derives the next array from the owner hands
// the index on to it (updated by the rows that left and came). Asked about an array it does not
// own (an older document: the committed one that StateStore.replayOnto re-applies mutations onto
// after a failed write, or any document kept and mutated twice), a fresh index is built from that
// array's rows, O(n) once, and follows that array's descendants from then on. So an index never
// describes rows other than its owner's, whichever documents are mutated in whatever order.
import type { Session } from '../protocol/model.js';

type Row = Session;

/** A multiset: a file may hold the same name, id or incarnation twice (Go keeps a caller's id). */
class Counts {
  private readonly counts = new Map<string, number>();

  has(key: string): boolean {
    return this.counts.has(key);
  }

  count(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  add(key: string): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  delete(key: string): void {
    const n = this.counts.get(key) ?? 0;
    if (n <= 1) this.counts.delete(key);
    else this.counts.set(key, n - 1);
  }
}

export class SessionIndex {
  readonly names = new Counts();
  /** Every row's id, `''` for a row without one, as the sets addSession built before. */
  readonly ids = new Counts();
  /** Every row's incarnation, `''` for a row without one. */
  readonly incarnations = new Counts();
  /**
   * The row of each name held by exactly one row (filled lazily where a removal left one of two);
   * a name two rows share is found by a scan, as Go's FindSession finds the first.
   */
  private readonly byName = new Map<string, Row>();

  private constructor(private owner: readonly Row[]) {
    for (const r of owner) this.add(r);
  }

  /** The index of `rows`: the one it owns, else built from its rows (and kept for it). */
  static of(rows: readonly Row[]): SessionIndex {
    const known = byOwner.get(rows);
    if (known && known.owner === rows) return known;
    const built = new SessionIndex(rows);
    byOwner.set(rows, built);
    return built;
  }

  /**
   * Hands the index of `from` to `to`, the array derived from it by taking `removed` out and
   * putting `added` in. Call it last, once the mutation can no longer throw: from then on, `from`
   * gets a rebuilt index if it is asked about again.
   */
  static handOver(from: readonly Row[], to: readonly Row[], removed: readonly Row[], added: readonly Row[]): void {
    const index = SessionIndex.of(from);
    for (const r of removed) index.remove(r);
    for (const r of added) index.add(r);
    index.owner = to;
    byOwner.set(to, index);
  }

  /** The first row named `name`, as a scan of the rows would find it: O(1) unless two rows share it. */
  find(name: string): Row | undefined {
    const n = this.names.count(name);
    if (n === 0) return undefined;
    if (n > 1) return this.owner.find((r) => r.name === name);
    let row = this.byName.get(name);
    if (!row) {
      row = this.owner.find((r) => r.name === name);
      if (row) this.byName.set(name, row);
    }
    return row;
  }

  private add(r: Row): void {
    if (this.names.has(r.name)) this.byName.delete(r.name);
    else this.byName.set(r.name, r);
    this.names.add(r.name);
    this.ids.add(r.id ?? '');
    this.incarnations.add(r.incarnation ?? '');
  }

  private remove(r: Row): void {
    if (this.byName.get(r.name) === r) this.byName.delete(r.name);
    this.names.delete(r.name);
    this.ids.delete(r.id ?? '');
    this.incarnations.delete(r.incarnation ?? '');
  }
}

/** Arrays to the index that was built for them or handed to them; weak, so old documents go. */
const byOwner = new WeakMap<readonly Row[], SessionIndex>();
