// The ids a peer's requests carry, and the ones vscode-jsonrpc is shown instead. vscode-jsonrpc
// queues a request under `'req-' + id`, so 7 and "7" (two distinct JSON values) would be one
// key: the second would replace the first, which would be neither run nor answered, and the
// connection would never become idle. Each request it is handed carries a number of ours,
// unique on the connection; the reply is given the peer's id back. Ids are keyed by type and
// value (a Map tells 7 from "7"), in flight and in `$/cancelRequest`.

export type Id = string | number;

export class RequestIds {
  private last = 0;
  /** The peer's ids of requests in flight, to ours. */
  private readonly ours = new Map<Id, number>();
  /** Ours, to the peer's. */
  private readonly theirs = new Map<number, Id>();

  /** Takes `peer` for a new request and returns the id to hand on; undefined when `peer` is in flight already. */
  claim(peer: Id): number | undefined {
    if (this.ours.has(peer)) return undefined;
    const id = ++this.last;
    this.ours.set(peer, id);
    this.theirs.set(id, peer);
    return id;
  }

  /** Our id for the peer's request in flight, for its `$/cancelRequest`; undefined once answered. */
  inFlight(peer: Id): number | undefined {
    return this.ours.get(peer);
  }

  /** The request with our id `id` was answered: returns the peer's id, which is free again. */
  release(id: Id): Id | undefined {
    if (typeof id !== 'number') return undefined;
    const peer = this.theirs.get(id);
    if (peer === undefined) return undefined;
    this.theirs.delete(id);
    this.ours.delete(peer);
    return peer;
  }
}
