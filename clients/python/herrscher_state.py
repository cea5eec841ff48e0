"""Python client of herrscher-state, the single-writer state server of Herrscher.

One file, standard library only, Python 3.9+. `pip install ./clients/python` (a clone or an
unpacked release) installs it as the package herrscher_state; or copy it next to a bridge.

    import herrscher_state as hs

    with hs.connect() as c:                     # finds the server as the CLI does
        c.add_session({"name": "main", "cmd": "claude"})
        c.append_transcript("main", {"ts": "2026-01-01T00:00:00Z", "role": "user", "text": "hi"})
        for n in c.subscribe(transcripts=["main"]):   # an iterator of notifications
            print(n.method, n.params)

connect() finds the socket by the rule the CLI and the Go client use: an explicit socket >
$HERRSCHER_STATE_SOCKET > the socket recorded by the live server of the state file
(<dir>/.herrscher-state/<base>.serving.json) > the per-user shared server's socket
(`serve --shared`, SHARED_SOCKET_NAME) when it exists > $XDG_RUNTIME_DIR/herrscher-state/, else
$TMPDIR/herrscher-state-<uid>/, holding herrscher-state[-<instance>].sock; the shared socket is
in that folder too. Before anything is sent the socket is checked: ours, in a folder of ours no
one else may write to. A client for a state names it in `initialize` (the shared server serves
every state a client names; a dedicated server only its own).

Every method of the server is a method here (the section between the `generated` markers is
written by `npm run schema` from the contract, src/protocol); Client.call(method, **params)
reaches any. Params are the wire's (session dicts, entry dicts); results are the wire's dicts.
A server error raises the StateError subclass of its code (SessionExists, Conflict, …) with
.code, .message and .data. A Client is safe to share between threads.
"""

from __future__ import annotations

import errno
import json
import os
import queue
import random
import re
import socket as _socket
import stat
import subprocess
import sys
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

# The npm package's version (package.json), written here by `npm run schema`.
__version__ = "0.1.0"

__all__ = [
    "Client", "Notification", "Subscription", "connect", "spawn", "find_socket", "check_socket",
    "shared_socket_path", "SHARED_SOCKET_NAME",
    "StateError", "ConnectionClosed", "StartError", "UntrustedSocket", "NoServer", "ERRORS_BY_CODE",
    "__version__",
]


class StateError(Exception):
    """An error answered by the server. Subclasses name each code (SessionExists, Conflict…)."""

    code = 0

    def __init__(self, method: str, code: int, message: str, data: Any = None):
        super().__init__("%s: %s (%d)%s" % (method, message, code, "" if data is None else " " + json.dumps(data)))
        self.method = method
        self.code = code
        self.message = message
        self.data = data


class ConnectionClosed(ConnectionError):
    """The connection ended (the server exited, the socket closed, the peer sent what no server
    sends) before an answer came. An OSError (ConnectionError), as a socket's own failures are."""


class StartError(ConnectionClosed):
    """A spawned server exited before it answered anything: it could not start (a state.json that
    is not JSON, a folder it may not use, a lock another process holds). Every call, pending or
    later, raises it. .exit_code is the server's exit code (negative: the signal that ended it;
    None: it never ran), .stderr the last lines it wrote to stderr (which say why); the message
    repeats the last of them."""

    def __init__(self, message: str, exit_code: Optional[int], stderr: Sequence[str]):
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr = list(stderr)


def _closed_error(cause: Any, prefix: str = "") -> ConnectionClosed:
    """The error of a call on a connection that ended with cause: a start failure stays one."""
    if isinstance(cause, StartError):
        return StartError(str(cause), cause.exit_code, cause.stderr)
    return ConnectionClosed(prefix + str(cause))


class UntrustedSocket(Exception):
    """The socket, or its folder, could have been put there by another user: nothing was sent."""


class NoServer(ConnectionClosed):
    """connect() reached no server: nothing answers at the socket found, or, with state=, no
    server of that state (another state's may answer there). An OSError, so `except OSError`
    catches it with a socket's own errors."""


class _NothingListensThere(NoServer):
    """What is at the socket path is no socket (a regular file, a folder): a wrong path that no
    server will ever replace, so connect(wait=True) does not wait on it."""


# <generated:errors> written by `npm run schema` from src/protocol/errors.ts; do not edit.
class ParseError(StateError):
    """-32700: The message was not valid JSON."""
    code = -32700


class InvalidRequest(StateError):
    """-32600: The message was not a valid JSON-RPC request."""
    code = -32600


class MethodNotFound(StateError):
    """-32601: No such method; data.suggestions lists the nearest method names."""
    code = -32601


class InvalidParams(StateError):
    """-32602: The params do not match the method schema; data.issues lists them."""
    code = -32602


class InternalError(StateError):
    """-32603: An internal error."""
    code = -32603


class SessionExists(StateError):
    """-32010: A session with that name exists."""
    code = -32010


class UnknownSession(StateError):
    """-32011: No session row has that name."""
    code = -32011


class StorageFailure(StateError):
    """-32020: The file system refused the write; data.code is the errno name."""
    code = -32020


class ShuttingDown(StateError):
    """-32030: The server is shutting down and accepts no more writes."""
    code = -32030


class MessageTooLarge(StateError):
    """-32040: The message exceeds the size limit or its Content-Length is invalid."""
    code = -32040


class Conflict(StateError):
    """-32050: The incarnation (state/save: the revision) given is not the current one; data.incarnation (data.revision) is."""
    code = -32050


class StateLocked(StateError):
    """-32060: Another process holds this state's single-writer lock; data.socket, when present, is its server's socket."""
    code = -32060


class NotThisState(StateError):
    """-32061: This server does not serve the state named in initialize."""
    code = -32061


class RequestCancelled(StateError):
    """-32800: A read cancelled by $/cancelRequest before it was answered (writes are never cancelled)."""
    code = -32800


ERRORS_BY_CODE = {
    -32700: ParseError,
    -32600: InvalidRequest,
    -32601: MethodNotFound,
    -32602: InvalidParams,
    -32603: InternalError,
    -32010: SessionExists,
    -32011: UnknownSession,
    -32020: StorageFailure,
    -32030: ShuttingDown,
    -32040: MessageTooLarge,
    -32050: Conflict,
    -32060: StateLocked,
    -32061: NotThisState,
    -32800: RequestCancelled,
}
# </generated:errors>


# The server's default message limit (serve --max-message-bytes): the longest reply line read.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class _ProtocolError(Exception):
    """The peer sent what no herrscher-state server sends: the connection cannot be trusted on."""


def _quote(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 200 else s[:200] + "..."


def _encode(msg: Dict[str, Any], method: str = "") -> bytes:
    """One NDJSON line; NaN and Infinity (which JSON has no word for) raise ValueError, as does
    any value json cannot write, before anything is sent."""
    try:
        return (json.dumps(msg, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
    except ValueError as e:
        raise ValueError("%s: params not sent: %s (JSON has no NaN or Infinity)" % (method or msg.get("method", "?"), e)) from None
    except TypeError as e:
        raise ValueError("%s: params not sent: %s" % (method or msg.get("method", "?"), e)) from None


def _close_streams(*streams: Any) -> None:
    for stream in streams:
        try:
            stream.close()
        except (OSError, ValueError):
            pass  # already closed by the peer: the connection is over either way


def _parse_message(body: bytes) -> Dict[str, Any]:
    """A JSON-RPC message object, or _ProtocolError (not JSON, too deep to read, not an object)."""
    try:
        msg = json.loads(body)
    except (ValueError, RecursionError) as e:
        raise _ProtocolError("not JSON: %s" % _quote(str(e))) from None
    if not isinstance(msg, dict):
        raise _ProtocolError("JSON that is not an object: %s" % _quote(body[:200].decode("utf-8", "replace")))
    return msg


class Notification:
    """One notification of the change feed: method (transcript/didAppend…) and its params."""

    __slots__ = ("method", "params")

    def __init__(self, method: str, params: Dict[str, Any]):
        self.method = method
        self.params = params

    def __repr__(self) -> str:
        return "Notification(%r, %r)" % (self.method, self.params)


_END = object()


class Subscription:
    """An iterator of one subscription's notifications, in commit order. It ends after a
    watch/overflow notification (the server dropped the subscription: subscribe and read
    again), when the connection ends for good, or after close(). With a client that reconnects
    it stays open across a server restart: it is made again with `since` and goes on with what
    the server sent meanwhile, each change once, under the same id."""

    def __init__(self, client: "Client", sid: str, revision: int, filt: Dict[str, Any]):
        self.id = sid  # the first subscription's id, kept across reconnections
        self.revision = revision
        self._client = client
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._done = False
        # What a reconnection needs: the server's current id, the subscribe params without
        # since, and what was seen (the epoch, the last state revision, the last seq per name).
        self._current = sid
        self._filter = filt
        self._epoch: Optional[str] = None
        self._revision: Optional[int] = None
        self._seqs: Dict[str, int] = {}

    def __iter__(self) -> "Subscription":
        return self

    def __next__(self) -> Notification:
        return self.next()

    def next(self, timeout: Optional[float] = None) -> Notification:
        """The next notification; raises queue.Empty after timeout seconds (None: wait)."""
        if self._done:
            raise StopIteration
        item = self._queue.get(timeout=timeout)
        if item is _END:
            self._done = True
            raise StopIteration
        if item.method == "watch/overflow":
            self._client._drop(self)
            self._queue.put(_END)
        return item

    def close(self) -> None:
        """Ends the subscription (watch/unsubscribe) and the iteration."""
        live = self._client._drop(self)
        self._queue.put(_END)
        if live and self._client.closed is None:
            self._client.call("watch/unsubscribe", subscription=self._current)

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _saw(self, n: Notification) -> Notification:
        """Notes what n tells (called under the client's lock) and gives it under this id."""
        p = n.params
        if n.method == "transcript/didAppend":
            if isinstance(p.get("name"), str) and isinstance(p.get("seq"), int):
                self._seqs[p["name"]] = p["seq"]
        elif n.method == "state/resync":
            if isinstance(p.get("revision"), int):
                self._revision = p["revision"]
            if isinstance(p.get("epoch"), str):
                self._epoch = p["epoch"]
        elif isinstance(p.get("revision"), int) and not isinstance(p.get("revision"), bool):
            self._revision = max(p["revision"], -1 if self._revision is None else self._revision)
        if p.get("subscription") != self.id:
            n = Notification(n.method, dict(p, subscription=self.id))
        return n


# session/add's name rule: the watch of every session leaves out a legacy row that breaks it.
# <generated:session-name> written by `npm run schema` from src/protocol; do not edit.
_SESSION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
# </generated:session-name>

# How a client reconnects by default: the wait before the first attempt and the longest wait
# (seconds), doubling between; attempts (None: until close()). The TypeScript client's too.
RECONNECT_DEFAULTS = {"initial_delay": 0.1, "max_delay": 5.0, "max_attempts": None}


class Client:
    """A connection to a server over a socket or a spawned server's stdio (JSON-RPC 2.0,
    newline-delimited JSON). Use connect() or spawn() to make one."""

    def __init__(self, reader: Any, writer: Any, on_close: Any = None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, call_timeout: Optional[float] = None,
                 dial: Any = None, reconnect: Optional[Dict[str, Any]] = None, on_connect: Any = None,
                 explain_early_end: Any = None):
        self._reader = reader
        # A spawned server's: called with the cause when the connection ends before the peer sent
        # anything, and returns the cause to give instead (a StartError).
        self._explain = explain_early_end
        self._heard = False
        self._ended = threading.Event()
        self._writer = writer
        self._max = max_message_bytes
        # The bound of a call that names none (seconds; None: wait for the reply or the end).
        self.call_timeout = call_timeout
        self._abandoned: set = set()
        self._on_close = on_close
        self._wlock = threading.Lock()
        self._lock = threading.Lock()
        self._next_id = 0
        self._pending: Dict[int, List[Any]] = {}
        self._subs: Dict[str, Subscription] = {}  # by the server's current subscription id
        # Every open subscription of a client that reconnects (made again on each connection).
        self._tracked: Dict[int, Subscription] = {}
        self._early: Dict[str, List[Notification]] = {}
        self._subscribing = 0
        self.closed: Optional[BaseException] = None
        self.process: Optional[subprocess.Popen] = None
        # The state file a client made for one state (connect(state=), spawn) names in an
        # initialize its caller sends without a state of its own.
        self.state_file: Optional[str] = None
        # Reconnection: dial() opens a new (reader, writer); on_connect(client) checks it first.
        self._dial = dial
        self._reconnect = None if reconnect is None else dict(RECONNECT_DEFAULTS, **reconnect)
        self._on_connect = on_connect
        self._gen = 0  # which connection is current: a reader of an older one is ignored
        self._reconnecting = False
        self._ready = threading.Event()  # set while a connection is up (or the client closed)
        self._ready.set()
        self._lost_by: Optional[BaseException] = None
        self._user_closed = False
        self._wake = threading.Event()
        self._start_reader()

    # -- the connection ---------------------------------------------------------------------

    def _start_reader(self) -> None:
        args = (self._reader, self._writer, self._gen)
        threading.Thread(target=self._read, args=args, name="herrscher-state-reader", daemon=True).start()

    def _read(self, reader: Any, writer: Any, gen: int) -> None:
        # Whatever happens here ends the connection with a reason: the reader never dies silently,
        # and a broken peer (garbage, an endless line, a reply no call waits for) never leaves a
        # call waiting or the buffer growing.
        cause: BaseException = ConnectionClosed("the server closed the connection")
        broken = True
        try:
            while True:
                # At most the limit + "\r\n": a longer line is refused before it is all read.
                line = reader.readline(self._max + 2)
                if not line:
                    broken = False
                    break
                if not line.endswith(b"\n") and len(line) > self._max:
                    raise _ProtocolError("a reply line over the message limit of %d bytes" % self._max)
                body = line.rstrip(b"\r\n")
                if len(body) > self._max:
                    raise _ProtocolError("a reply line over the message limit of %d bytes" % self._max)
                if body.strip():
                    self._dispatch(_parse_message(body))
        except _ProtocolError as e:
            cause = ConnectionClosed("the server sent a malformed reply: %s" % e)
        except Exception as e:  # noqa: BLE001 - any failure of the reader is the connection's end
            cause = ConnectionClosed("the connection failed: %s: %s" % (type(e).__name__, e))
        if broken:
            _close_streams(writer, reader)  # nothing more is read from, or sent to, a peer we cannot trust
        if self._explain is not None and not self._heard:
            try:
                cause = self._explain(cause)
            except Exception:  # noqa: BLE001 - the plain cause is still an answer
                pass
        self._lost(gen, cause, writer, reader)

    def _dispatch(self, msg: Dict[str, Any]) -> None:
        self._heard = True
        if "method" in msg:
            if not isinstance(msg["method"], str):
                raise _ProtocolError("a method that is not a string: %s" % _quote(msg["method"]))
            if "id" not in msg:
                params = msg.get("params")
                self._notification(Notification(msg["method"], params if isinstance(params, dict) else {}))
            return  # a request from the server: this client serves none
        mid = msg.get("id")
        if not isinstance(mid, int) or isinstance(mid, bool):
            err = msg.get("error")
            why = " (it says: %s)" % _quote(err.get("message")) if isinstance(err, dict) else ""
            raise _ProtocolError("a reply whose id is %s, not one of ours%s" % (_quote(mid), why))
        # Checked before the call is taken from _pending, so the connection's end still ends it:
        # a reply without a result was answered None (a write's caller was told it was done),
        # and an error that is not {code: int, message: str} raised AttributeError or TypeError.
        err = msg.get("error")
        if err is None and "result" not in msg:
            raise _ProtocolError("a reply to id %d with neither a result nor an error: %s" % (mid, _quote(msg)))
        if err is not None and not (isinstance(err, dict) and isinstance(err.get("code"), int)
                                    and not isinstance(err.get("code"), bool) and isinstance(err.get("message"), str)):
            raise _ProtocolError("a reply to id %d whose error is not {code: integer, message: string}: %s" % (mid, _quote(err)))
        with self._lock:
            slot = self._pending.pop(mid, None)
            abandoned = slot is None and mid in self._abandoned
            self._abandoned.discard(mid)
        if slot is None:
            if abandoned:
                return  # the caller gave up (timeout); the answer is dropped
            raise _ProtocolError("a reply to id %d, which no call waits for" % mid)
        slot[1] = msg
        slot[0].set()

    def _notification(self, n: Notification) -> None:
        sid = n.params.get("subscription")
        with self._lock:
            sub = self._subs.get(sid) if isinstance(sid, str) else None
            if sub is None:
                if self._subscribing and isinstance(sid, str):
                    self._early.setdefault(sid, []).append(n)
                return
            self._deliver(sub, n)

    def _deliver(self, sub: Subscription, n: Notification) -> None:
        """Queues n for sub (under the lock, so held and live notifications keep their order)."""
        sub._queue.put(sub._saw(n))
        if n.method == "watch/overflow":
            self._forget(sub)  # the server dropped it: nothing to make again

    def _lost(self, gen: int, cause: BaseException, writer: Any, reader: Any) -> None:
        """A connection ended: its calls fail; then the client reconnects, or is closed."""
        with self._lock:
            if gen != self._gen or self.closed is not None:
                return
            again = self._reconnect is not None and self._dial is not None and not self._user_closed
            if again:
                pending, self._pending = self._pending, {}
                self._abandoned.clear()
                self._lost_by = cause
                self._ready.clear()
                start = not self._reconnecting
                self._reconnecting = True
        if not again:
            self._fail(cause)
            return
        _close_streams(writer, reader)
        for slot in pending.values():
            slot[2] = cause
            slot[0].set()
        if start:
            threading.Thread(target=self._retry, args=(cause,), name="herrscher-state-reconnect", daemon=True).start()

    def _retry(self, last: BaseException) -> None:
        """Dials again with backoff until a connection is up and every subscription made again."""
        o = self._reconnect or RECONNECT_DEFAULTS
        attempt = 0
        while o["max_attempts"] is None or attempt < o["max_attempts"]:
            attempt += 1
            base = min(o["max_delay"], o["initial_delay"] * 2 ** min(attempt - 1, 30))
            # ±20 %: the clients of one restarted server do not all come back at once.
            self._wake.wait(base * (0.8 + random.random() * 0.4))
            if self._user_closed:
                return
            try:
                reader, writer = self._dial()
            except Exception as e:  # noqa: BLE001 - each failed attempt is retried
                last = e
                continue
            with self._lock:
                if self._user_closed:
                    _close_streams(writer, reader)
                    return
                self._gen += 1
                gen = self._gen
                self._reader, self._writer = reader, writer
            self._start_reader()
            try:
                if self._on_connect is not None:
                    self._on_connect(self)
                self._resubscribe()
                with self._lock:
                    if gen != self._gen or self.closed is not None:
                        raise ConnectionClosed("the connection ended while subscribing again")
                    self._reconnecting = False
                    self._lost_by = None
                    self._ready.set()
                return
            except Exception as e:  # noqa: BLE001 - the attempt failed: drop it and try again
                last = e
                with self._lock:
                    if gen == self._gen:
                        self._gen += 1  # its reader's end is no news
                _close_streams(writer, reader)
        self._fail(ConnectionClosed("the server did not come back: %s" % last))

    def _resubscribe(self) -> None:
        with self._lock:
            subs = list(self._tracked.values())
            self._subs.clear()
        for sub in subs:
            with self._lock:
                if id(sub) not in self._tracked:
                    continue  # closed meanwhile
            since: Dict[str, Any] = {}
            if sub._epoch is not None:
                since["epoch"] = sub._epoch
            if sub._filter.get("sessions") is True and sub._revision is not None:
                since["revision"] = sub._revision  # 0 too: nothing committed yet in that run
            seqs = dict(sub._seqs)
            if sub._filter.get("transcripts") == "*":
                # A session the subscriber saw nothing of was made after it subscribed (_track read
                # where every one there then stood), so all its entries are new to it: -1. Without
                # this, what was appended to it while the subscriber was away was never sent.
                for name in self._session_names(None, ready=False):
                    seqs.setdefault(name, -1)
            if seqs:
                since["transcripts"] = seqs
            self._subscribe_on(dict(sub._filter, since=since), sub, None, ready=False)

    def _fail(self, cause: BaseException) -> None:
        with self._lock:
            if self.closed is not None:
                return
            self.closed = cause
            self._ended.set()
            pending, self._pending = self._pending, {}
            subs = dict((id(s), s) for s in self._subs.values())
            subs.update(self._tracked)
            self._subs, self._tracked = {}, {}
        self._ready.set()
        self._wake.set()
        for slot in pending.values():
            slot[2] = cause
            slot[0].set()
        for sub in subs.values():
            sub._queue.put(_END)

    def _drop(self, sub: Subscription) -> bool:
        """Forgets sub; True when the server still has it (so it is worth unsubscribing)."""
        with self._lock:
            live = self._subs.get(sub._current) is sub and not self._reconnecting
            self._forget(sub)
            return live

    def _forget(self, sub: Subscription) -> None:
        if self._subs.get(sub._current) is sub:
            del self._subs[sub._current]
        self._tracked.pop(id(sub), None)

    def _send(self, msg: Dict[str, Any]) -> None:
        data = _encode(msg)
        with self._wlock:
            self._writer.write(data)
            flush = getattr(self._writer, "flush", None)
            if flush is not None:
                flush()

    def call(self, method: str, _timeout: Optional[float] = None, **params: Any) -> Any:
        """Calls method with params (None values are left out) and returns its result. Raises the
        StateError subclass of the answer's code, ConnectionClosed when the connection ends first,
        TimeoutError after _timeout seconds (the server is sent $/cancelRequest). While a client
        that reconnects is reconnecting, a call waits for the new connection (within _timeout)."""
        params = {k: v for k, v in params.items() if v is not None}
        if method == "initialize" and self.state_file is not None and "state" not in params:
            params["state"] = self.state_file
        return self._call(method, params, self.call_timeout if _timeout is None else _timeout)

    def _call(self, method: str, params: Dict[str, Any], timeout: Optional[float], ready: bool = True) -> Any:
        _encode({"params": params}, method)  # NaN, Infinity, a non-JSON value: refused before an id is taken
        deadline = None if timeout is None else time.monotonic() + timeout
        if ready and not self._ready.wait(timeout):
            raise TimeoutError("%s: no connection within %ss (reconnecting after: %s)" % (method, timeout, self._lost_by))
        if deadline is not None:
            timeout = max(0.0, deadline - time.monotonic())
        event = threading.Event()
        slot: List[Any] = [event, None, None]
        with self._lock:
            if self.closed is not None:
                raise _closed_error(self.closed)
            if ready and self._reconnecting:
                raise ConnectionClosed("%s: the connection was lost: %s" % (method, self._lost_by))
            self._next_id += 1
            mid = self._next_id
            self._pending[mid] = slot
        try:
            self._send({"jsonrpc": "2.0", "id": mid, "method": method, "params": params})
        except (OSError, ValueError) as e:  # ValueError: a file closed by the reader meanwhile
            with self._lock:
                self._pending.pop(mid, None)
            if self._explain is not None and not self._heard and self._ended.wait(_START_EXPLAIN_WAIT):
                raise _closed_error(self.closed, "%s: " % method) from e  # why a server that never answered ended
            raise ConnectionClosed("%s: cannot send: %s" % (method, e)) from e
        if not event.wait(timeout):
            with self._lock:
                waiting = self._pending.pop(mid, None) is not None
                if waiting:
                    self._abandoned.add(mid)
            if waiting:
                # A read not yet answered is cancelled; a write already queued is still applied.
                try:
                    self.notify("$/cancelRequest", id=mid)
                except (OSError, ValueError):
                    pass  # the connection ended meanwhile: nothing is left to cancel
                raise TimeoutError("%s: no answer within %ss" % (method, timeout))
        reply = slot[1]
        if reply is None:
            raise _closed_error(slot[2] or self.closed, "%s: " % method)
        if "error" in reply:
            err = reply["error"]
            cls = ERRORS_BY_CODE.get(err.get("code"), StateError)
            raise cls(method, err.get("code"), err.get("message", ""), err.get("data"))
        return reply.get("result")

    def notify(self, method: str, **params: Any) -> None:
        """Sends a notification (no answer): exit, $/cancelRequest."""
        if self.closed is not None:
            raise _closed_error(self.closed)
        self._send({"jsonrpc": "2.0", "method": method, "params": {k: v for k, v in params.items() if v is not None}})

    def subscribe(self, sessions: Optional[bool] = None, transcripts: Any = None, participants: Any = None,
                  timeout: Optional[float] = None) -> Subscription:
        """Subscribes to the change feed and returns an iterator of its notifications.
        transcripts and participants are a list of session names or "*" for all."""
        filt = {k: v for k, v in (("sessions", sessions), ("transcripts", transcripts), ("participants", participants)) if v is not None}
        t = self.call_timeout if timeout is None else timeout
        sub, r = self._subscribe_on(filt, None, t)
        if self._reconnect is not None:
            self._track(sub, r, t)
        return sub

    def _subscribe_on(self, params: Dict[str, Any], sub: Optional[Subscription], timeout: Optional[float],
                      ready: bool = True) -> Any:
        """watch/subscribe; the notifications that come before its reply is handled are held,
        then queued first, in order."""
        with self._lock:
            self._subscribing += 1
        try:
            r = self._call("watch/subscribe", params, timeout, ready)
            with self._lock:
                if sub is None:
                    filt = {k: v for k, v in params.items() if k != "since"}
                    sub = Subscription(self, r["subscription"], r["revision"], filt)
                    if self._reconnect is not None and self.closed is None:
                        self._tracked[id(sub)] = sub
                sub._current = r["subscription"]
                if self.closed is None:
                    self._subs[sub._current] = sub
                for n in self._early.pop(sub._current, []):
                    self._deliver(sub, n)
            if self.closed is not None:
                sub._queue.put(_END)
            return sub, r
        finally:
            with self._lock:
                self._subscribing -= 1
                if not self._subscribing:
                    self._early.clear()

    def _track(self, sub: Subscription, r: Dict[str, Any], timeout: Optional[float]) -> None:
        """What a reconnection will ask for: this run's epoch and revision, and where each listed
        transcript stands now (a later entry is notified, and a seq only moves forward)."""
        with self._lock:
            if sub._epoch is None:
                sub._epoch = r.get("epoch")
            if isinstance(r.get("revision"), int):
                sub._revision = max(r["revision"], -1 if sub._revision is None else sub._revision)
        names = sub._filter.get("transcripts")
        if names == "*":
            try:
                names = self._session_names(timeout)
            except StateError:
                names = []
        for name in names if isinstance(names, list) else []:
            try:
                page = self.read_page(name, limit=1, timeout=timeout)
            except StateError:
                continue  # no such session yet: its entries will all be new
            seq = page["firstSeq"] + len(page["entries"]) - 1
            with self._lock:
                if sub._seqs.get(name, -2) < seq:
                    sub._seqs[name] = seq

    def _session_names(self, timeout: Optional[float], ready: bool = True) -> List[str]:
        """The names of the session rows (session/list) that follow session/add's rule. A legacy
        row's name outside it may not name a file the server reads, and one such name in since
        would end the subscription (watch/overflow), so it is left out."""
        r = self._call("session/list", {}, timeout, ready)
        rows = r.get("sessions") if isinstance(r, dict) else None
        return [x["name"] for x in rows or [] if isinstance(x, dict) and isinstance(x.get("name"), str)
                and _SESSION_NAME.fullmatch(x["name"])]

    def close(self) -> None:
        """Ends the connection; for a spawned server, shutdown, exit, then wait for it."""
        self._user_closed = True
        self._wake.set()
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()
        with self._lock:
            writer, reader = self._writer, self._reader
        _close_streams(writer, reader)
        self._fail(ConnectionClosed("closed by the client"))

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def read_transcript(self, name: str, limit: int = 0) -> List[Dict[str, Any]]:
        """The newest limit entries of a transcript in file order (all when limit <= 0), as the
        Go state package's ReadTranscript; read_page pages further back by seq."""
        return self.read_page(name, limit=limit if limit > 0 else None)["entries"]

    # -- one method per wire method ---------------------------------------------------------

    # <generated:methods> written by `npm run schema` from src/protocol; do not edit.
    def initialize(self, processId=None, rootUri=None, capabilities=None, clientInfo=None, state=None, timeout=None) -> Any:
        """Optional handshake: who the server is, which state file it serves, which methods (and which params of each) it has. Accepts any client params, as LSP does: unknown keys are ignored, so a newer client never breaks an older server. (initialize)"""
        return self.call("initialize", _timeout=timeout, processId=processId, rootUri=rootUri, capabilities=capabilities, clientInfo=clientInfo, state=state)

    def shutdown(self, timeout=None) -> Any:
        """Finishes every pending write, then refuses writes with -32030; send `exit` next. (shutdown)"""
        return self.call("shutdown", _timeout=timeout)

    def exit(self) -> None:
        """Notification: the server exits (0 after shutdown, 1 without). (exit)"""
        self.notify("exit")

    def discover(self, timeout=None) -> Any:
        """The OpenRPC 1.3.2 document of this server (schema/openrpc.json). (rpc.discover)"""
        return self.call("rpc.discover", _timeout=timeout)

    def status(self, timeout=None) -> Any:
        """The server's identity, load and storage health; `healthy` is false while a checkpoint is failing, after a storage error in the last minute, while state.json, changed by another process, cannot be loaded (every write is refused until it is fixed), or once `shutdown` was received (`stopping`). (status)"""
        return self.call("status", _timeout=timeout)

    def backup(self, dest, timeout=None) -> Any:
        """Writes a consistent copy of the state dir into `dest` (an absolute path that does not exist or is an empty folder, outside the state dir): state.json, transcripts/ and participants/ as they stood at one revision (every write answered before it, none after), fsynced, with backup-manifest.json (revision, epoch, sha256 and size of each file). Writes wait only while the copy is fixed (hard links), not while it is written; reads go on. (backup)"""
        return self.call("backup", _timeout=timeout, dest=dest)

    def state(self, persisted=None, timeout=None) -> Any:
        """The state document as committed, with config defaults (state/applyDefaults) overlaid unless persisted is true. (state/get)"""
        return self.call("state/get", _timeout=timeout, persisted=persisted)

    def state_save(self, state, revision, epoch=None, writer=None, timeout=None) -> Any:
        """Replaces the whole document as Go's Save writes it (row order, every field, unknown fields), if revision is still the current one; else -32050 with data.revision. (state/save)"""
        return self.call("state/save", _timeout=timeout, state=state, revision=revision, epoch=epoch, writer=writer)

    def apply_defaults(self, home=None, workspace=None, source=None, timeout=None) -> Any:
        """Seeds home, workspace and source where the file has none, as an overlay that is never written to state.json. (state/applyDefaults; returns its state)"""
        return self.call("state/applyDefaults", _timeout=timeout, home=home, workspace=workspace, source=source)["state"]

    def set_home(self, home, timeout=None) -> Any:
        """Sets the home (category or forum) sessions are created under. (state/setHome; returns its changed)"""
        return self.call("state/setHome", _timeout=timeout, home=home)["changed"]

    def set_workspace(self, workspace, timeout=None) -> Any:
        """Sets the workspace root ("" removes it). (state/setWorkspace; returns its changed)"""
        return self.call("state/setWorkspace", _timeout=timeout, workspace=workspace)["changed"]

    def set_source(self, source, timeout=None) -> Any:
        """Sets the Herrscher source checkout ("" removes it). (state/setSource; returns its changed)"""
        return self.call("state/setSource", _timeout=timeout, source=source)["changed"]

    def set_status_message_id(self, statusMessageID, timeout=None) -> Any:
        """Sets the id of the status message. (state/setStatusMessageID; returns its changed)"""
        return self.call("state/setStatusMessageID", _timeout=timeout, statusMessageID=statusMessageID)["changed"]

    def set_instance_id(self, instanceID, timeout=None) -> Any:
        """Sets the instance id used in socket names and qualified names. (state/setInstanceID; returns its changed)"""
        return self.call("state/setInstanceID", _timeout=timeout, instanceID=instanceID)["changed"]

    def workspace_root(self, timeout=None) -> Any:
        """The workspace, else the legacy repo field, else "". (state/workspaceRoot; returns its workspaceRoot)"""
        return self.call("state/workspaceRoot", _timeout=timeout)["workspaceRoot"]

    def source_dir(self, timeout=None) -> Any:
        """The source checkout, or "". (state/sourceDir; returns its sourceDir)"""
        return self.call("state/sourceDir", _timeout=timeout)["sourceDir"]

    def qualified_name(self, name, timeout=None) -> Any:
        """<instanceID>__<name>, or the name alone when there is no instance id. (state/qualifiedName; returns its qualifiedName)"""
        return self.call("state/qualifiedName", _timeout=timeout, name=name)["qualifiedName"]

    def add_session(self, session, writer=None, timeout=None) -> Any:
        """Adds a session; assigns its id (s_<name>[_N]) when absent and always a fresh incarnation. (session/add; returns its session)"""
        return self.call("session/add", _timeout=timeout, session=session, writer=writer)["session"]

    def remove_session(self, name, purge=None, incarnation=None, timeout=None) -> Any:
        """Removes every row with that name; with purge, its transcript and journal too. (session/remove; returns its removed)"""
        return self.call("session/remove", _timeout=timeout, name=name, purge=purge, incarnation=incarnation)["removed"]

    def find_session(self, name, timeout=None) -> Any:
        """The first row with that name, or null. (session/find; returns its session)"""
        return self.call("session/find", _timeout=timeout, name=name)["session"]

    def snapshot_sessions(self, timeout=None) -> Any:
        """Every session row, in file order. (session/list; returns its sessions)"""
        return self.call("session/list", _timeout=timeout)["sessions"]

    def set_resume_token(self, name, resumeToken, incarnation=None, writer=None, timeout=None) -> Any:
        """Sets the backend resume token. (session/setResumeToken)"""
        return self.call("session/setResumeToken", _timeout=timeout, name=name, resumeToken=resumeToken, incarnation=incarnation, writer=writer)

    def set_paused_reason(self, name, paused_reason, incarnation=None, writer=None, timeout=None) -> Any:
        """Sets why the budget gate paused the session ("" clears it). (session/setPausedReason)"""
        return self.call("session/setPausedReason", _timeout=timeout, name=name, paused_reason=paused_reason, incarnation=incarnation, writer=writer)

    def set_budget(self, name, cost_cap, token_cap, cohort_cost_cap, cohort_token_cap, paused_reason, incarnation=None, writer=None, timeout=None) -> Any:
        """Sets the four caps and the paused reason at once (0 means no cap). (session/setBudget)"""
        return self.call("session/setBudget", _timeout=timeout, name=name, cost_cap=cost_cap, token_cap=token_cap, cohort_cost_cap=cohort_cost_cap, cohort_token_cap=cohort_token_cap, paused_reason=paused_reason, incarnation=incarnation, writer=writer)

    def set_backend_target(self, name, vendor, cmd, modelId, incarnation=None, writer=None, timeout=None) -> Any:
        """Switches vendor, cmd and model, and clears the resume token (it belonged to the old backend). (session/setBackendTarget)"""
        return self.call("session/setBackendTarget", _timeout=timeout, name=name, vendor=vendor, cmd=cmd, modelId=modelId, incarnation=incarnation, writer=writer)

    def set_archived(self, name, archived, incarnation=None, writer=None, timeout=None) -> Any:
        """Archives or resumes a session (row, transcript and journal are kept). (session/setArchived)"""
        return self.call("session/setArchived", _timeout=timeout, name=name, archived=archived, incarnation=incarnation, writer=writer)

    def infos(self, timeout=None) -> Any:
        """Every session with its last activity and usage, in one call, from memory (what a session list needs). (session/infos; returns its sessions)"""
        return self.call("session/infos", _timeout=timeout)["sessions"]

    def append_transcript(self, name, entry, incarnation=None, requireSession=None, writer=None, timeout=None) -> Any:
        """Appends one entry; answered once the line is in the file. The session row must exist unless requireSession is false. (transcript/append; returns its seq)"""
        return self.call("transcript/append", _timeout=timeout, name=name, entry=entry, incarnation=incarnation, requireSession=requireSession, writer=writer)["seq"]

    def read_page(self, name, limit=None, before=None, timeout=None) -> Any:
        """The newest `limit` entries with seq < `before`, in file order (all when limit is absent or 0); page back with before = firstSeq. (transcript/read)"""
        return self.call("transcript/read", _timeout=timeout, name=name, limit=limit, before=before)

    def last_transcript_timestamp(self, name, timeout=None) -> Any:
        """The ts of the newest entry, or "" (served from memory after the first call). (transcript/last; returns its ts)"""
        return self.call("transcript/last", _timeout=timeout, name=name)["ts"]

    def usage(self, name, timeout=None) -> Any:
        """Spend and token sums over every entry ever appended, including those compaction removed; O(1). (transcript/usage)"""
        return self.call("transcript/usage", _timeout=timeout, name=name)

    def remove_transcript(self, name, timeout=None) -> Any:
        """Deletes the transcript file; removed is false when there was none. (transcript/remove; returns its removed)"""
        return self.call("transcript/remove", _timeout=timeout, name=name)["removed"]

    def append_participant(self, name, userId, incarnation=None, requireSession=None, timeout=None) -> Any:
        """Adds a user id (trimmed; non-empty, no CR/LF, at most 256 chars) unless present. The session row must exist unless requireSession is false. (participants/append; returns its added)"""
        return self.call("participants/append", _timeout=timeout, name=name, userId=userId, incarnation=incarnation, requireSession=requireSession)["added"]

    def read_participants(self, name, timeout=None) -> Any:
        """Every user id, in first-seen order. (participants/read; returns its userIds)"""
        return self.call("participants/read", _timeout=timeout, name=name)["userIds"]

    def remove_participants(self, name, timeout=None) -> Any:
        """Deletes the journal; removed is false when there was none. (participants/remove; returns its removed)"""
        return self.call("participants/remove", _timeout=timeout, name=name)["removed"]
    # </generated:methods>


# -- finding and reaching a server ---------------------------------------------------------


def default_state_path(env: Optional[Dict[str, str]] = None) -> str:
    """Where Herrscher keeps its state when none is named."""
    env = os.environ if env is None else env
    d = env.get("HERRSCHER_STATE_DIR")
    if d:
        return os.path.abspath(os.path.join(d, "state.json"))
    return os.path.join(os.path.expanduser("~"), ".config", "herrscher", "state.json")


def default_socket_folder(env: Optional[Dict[str, str]] = None) -> str:
    """$XDG_RUNTIME_DIR/herrscher-state, else $TMPDIR/herrscher-state-<uid>."""
    env = os.environ if env is None else env
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(os.path.abspath(runtime), "herrscher-state")
    tmp = env.get("TMPDIR") or "/tmp"
    return os.path.join(os.path.abspath(tmp), "herrscher-state-%d" % os.getuid())


# The file name of the per-user shared server's socket (`serve --shared`) in default_socket_folder().
# <generated:shared-socket> written by `npm run schema` from src/transport/socket.ts; do not edit.
SHARED_SOCKET_NAME = "herrscher-state-shared.sock"
# </generated:shared-socket>


def shared_socket_path(env: Optional[Dict[str, str]] = None) -> str:
    """Where the per-user shared server (`serve --shared`) listens: SHARED_SOCKET_NAME in
    default_socket_folder()."""
    return os.path.join(default_socket_folder(env), SHARED_SOCKET_NAME)


def server_record_path(state: str) -> str:
    """The file a serving process records its socket in, beside the state file it serves."""
    abs_state = os.path.abspath(state)
    return os.path.join(os.path.dirname(abs_state), ".herrscher-state", os.path.basename(abs_state) + ".serving.json")


def read_server_record(state: str) -> Optional[Dict[str, Any]]:
    """The record of the live server of state, or None (no file, no record, a dead pid)."""
    try:
        fd = os.open(server_record_path(state), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as e:
        # Absent: no server recorded itself. ELOOP: a symlink is no record of ours. ENOTDIR,
        # EACCES: a state dir we cannot read has no record for us either.
        if e.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.EACCES):
            return None
        raise
    with os.fdopen(fd, "rb") as f:
        try:
            r = json.loads(f.read())
        except ValueError:
            return None  # a torn or foreign file: records are written atomically, so not ours
    if not isinstance(r, dict) or not isinstance(r.get("pid"), int) or r["pid"] <= 0 or not r.get("socket"):
        return None
    try:
        os.kill(r["pid"], 0)
    except PermissionError:
        pass  # alive, another user's
    except OSError:
        return None
    return r


def find_socket(socket: Optional[str] = None, state: Optional[str] = None, instance: Optional[str] = None,
                env: Optional[Dict[str, str]] = None) -> str:
    """The socket to connect to, by the discovery rule (see the module doc)."""
    return _find_socket(socket, state, instance, env)[0]


def _find_socket(socket: Optional[str], state: Optional[str], instance: Optional[str],
                 env: Optional[Dict[str, str]]) -> Tuple[str, str]:
    """The socket the rule finds and the step that chose it: explicit, env, record, shared or
    default (the names of the TypeScript client's SocketSource)."""
    env = os.environ if env is None else env
    if socket:
        return os.path.abspath(socket), "explicit"
    if env.get("HERRSCHER_STATE_SOCKET"):
        return os.path.abspath(env["HERRSCHER_STATE_SOCKET"]), "env"
    record = read_server_record(state or default_state_path(env))
    if record is not None:
        return str(record["socket"]), "record"
    shared = shared_socket_path(env)
    if os.path.lexists(shared):
        return shared, "shared"
    name = "herrscher-state-%s.sock" % instance if instance else "herrscher-state.sock"
    return os.path.join(default_socket_folder(env), name), "default"


_SOURCES = {
    "explicit": "given",
    "env": "from $HERRSCHER_STATE_SOCKET",
    "record": "recorded by the server of the state file",
    "shared": "the per-user shared server; no server recorded itself for the state file",
    "default": "the default; no server recorded itself for the state file and no shared server runs",
}


def _lock_holders_socket(e: BaseException) -> Optional[str]:
    """The socket of the server that holds a state's lock, as a StateLocked answer names it."""
    if not isinstance(e, StateLocked) or not isinstance(e.data, dict):
        return None
    sock = e.data.get("socket")
    return sock if isinstance(sock, str) and sock else None


def check_socket(path: str) -> None:
    """Raises UntrustedSocket unless path is a socket of ours in a folder of ours that no one
    else may write to; NoServer, saying what is there, for a regular file or a folder (a wrong
    path, not an attack). A missing socket passes (connecting then fails)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return
    uid = os.getuid()

    def refuse(why: str) -> UntrustedSocket:
        return UntrustedSocket("refusing socket %s: %s; another user may be impersonating the server, nothing was sent" % (path, why))

    if not stat.S_ISSOCK(st.st_mode):
        # A wrong path, not an attack: say what is there instead of suspecting another user.
        what = "a regular file" if stat.S_ISREG(st.st_mode) else "a folder" if stat.S_ISDIR(st.st_mode) else "not a socket"
        raise _NothingListensThere("no server at %s: it is %s, not a server's socket (is the socket path right? `serve` makes "
                       "the socket itself); nothing was sent" % (path, what))
    if st.st_uid != uid:
        raise refuse("it belongs to uid %d, not to us (uid %d)" % (st.st_uid, uid))
    folder = os.path.dirname(real)
    d = os.stat(folder)
    if d.st_uid != uid:
        raise refuse("its folder %s belongs to uid %d, not to us (uid %d)" % (folder, d.st_uid, uid))
    if d.st_mode & 0o022:
        raise refuse("its folder %s is writable by others (mode %o)" % (folder, d.st_mode & 0o777))


def connect(socket: Optional[str] = None, state: Optional[str] = None, instance: Optional[str] = None,
            env: Optional[Dict[str, str]] = None, timeout: Optional[float] = 5.0,
            call_timeout: Optional[float] = None, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
            reconnect: Any = False, wait: bool = False) -> Client:
    """Connects to a running server found by find_socket(), after check_socket(). Nothing
    answering raises NoServer. With state named, connect() names it in initialize before
    anything else is sent: the shared server binds the connection to it; a dedicated server of
    another state (NotThisState, or an answer naming another file: real paths compared) raises
    NoServer, so a state with no live server never falls through to another state's server.
    Found through the shared server's socket with no state named, the client names its default
    state (default_state_path(env)). The shared server's StateLocked naming the socket of the
    server that holds the state's lock (data["socket"]): that socket is dialled instead, once;
    without one (a holder that is no server) StateLocked is raised, its data kept, as any other
    error the server answers initialize with. timeout bounds the connect; call_timeout bounds
    each call that passes no timeout= of its own (None: a call waits for its reply or the
    connection's end); a reply line longer than max_message_bytes (the server's default limit)
    ends the connection.

    reconnect=True (or a dict of initial_delay, max_delay in seconds, max_attempts; see
    RECONNECT_DEFAULTS) rides over a server restart: calls in flight when the connection is lost
    raise ConnectionClosed, later calls wait for the new connection (within their timeout),
    and every open subscription is made again with `since`, so its iterator goes on with each
    change once. Default off, as the TypeScript client's.

    wait=True: when no server answers (no socket yet, connection refused, with state=: not that
    state's server, or StateLocked without a server's socket: one that is starting), try again,
    50 ms doubling to 1 s apart, until one does or `timeout` has passed (None: no end); for a
    program started beside the server, as Go's DialOptions.Wait. A socket check_socket refuses,
    and a path that holds no socket, are never waited on."""
    # Where the last dial went, and (once) the socket a StateLocked answer named: the next dial's.
    where: Dict[str, Any] = {"path": None, "source": None, "named": None, "redirect": None, "redirected": False}

    def dial() -> Any:
        redirected = where["redirect"] is not None
        if redirected:
            path, source = where["redirect"], "record"
            where["redirect"] = None
        else:
            path, source = _find_socket(socket, state, instance, env)
        # The state named stays the one of the first dial: a redirect goes to that state's server.
        named = where["named"] if redirected else os.path.abspath(state) if state else default_state_path(env) if source == "shared" else None
        where.update(path=path, source=source, named=named, redirected=redirected)
        check_socket(path)
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(path)
        except OSError as e:
            s.close()
            start = "herrscher-state serve --shared" if source == "shared" else \
                "herrscher-state serve --state %s" % state if state else "herrscher-state serve --socket %s" % path
            if state:
                raise NoServer("no server for %s: nothing answers at %s (%s): %s; start one with `%s`" % (state, path, _SOURCES[source], e, start)) from e
            raise NoServer("no server at %s (%s): %s; start one with `%s`" % (path, _SOURCES[source], e, start)) from e
        s.settimeout(None)
        return s.makefile("rb"), _SocketWriter(s)

    def check_state(client: Client) -> None:
        # The socket found may be another state's server (the default socket, a stale record
        # whose pid was reused): name the state before anything else is sent.
        named, at = where["named"], "%s (%s)" % (where["path"], _SOURCES[where["source"]])
        if named is None:
            return
        try:
            served = client._call("initialize", {"state": named}, timeout, ready=False)["statePath"]
        except NotThisState as e:
            raise NoServer("no server for %s: the server at %s serves another state (%s); nothing but initialize was sent to it" % (named, at, e.message)) from e
        except StateError as e:
            # The server cannot serve this state (its lock is held, its file is damaged): its
            # code and data stay, for a caller that decides by the code.
            raise type(e)("initialize", e.code, "%s: the server at %s cannot serve it: %s" % (named, at, e.message), e.data) from e
        except (ConnectionClosed, TimeoutError, OSError, KeyError, TypeError) as e:
            raise NoServer("no server for %s: the server at %s did not say which state it serves: %s" % (named, at, e)) from e
        if _real_state_path(served) != _real_state_path(named):
            raise NoServer("no server for %s: the server at %s serves %s; nothing but initialize was sent to it; start one with `herrscher-state serve --state %s`" % (named, at, served, named))

    def check_and_follow(client: Client) -> None:
        # A StateLocked naming the lock holder's socket: the next dial goes there (once).
        try:
            check_state(client)
        except StateLocked as e:
            holder = _lock_holders_socket(e)
            if holder is not None and not where["redirected"]:
                where["redirect"] = holder
            raise

    if reconnect is True:
        options: Optional[Dict[str, Any]] = {}
    elif reconnect:
        options = dict(reconnect)
        unknown = set(options) - set(RECONNECT_DEFAULTS)
        if unknown:
            raise TypeError("connect: unknown reconnect options %s (known: %s)" % (sorted(unknown), sorted(RECONNECT_DEFAULTS)))
    else:
        options = None

    def attempt() -> Client:
        reader, writer = dial()
        client = Client(reader, writer, max_message_bytes=max_message_bytes, call_timeout=call_timeout,
                        dial=dial, reconnect=options, on_connect=check_and_follow)
        try:
            check_and_follow(client)
        except (NoServer, StateError):
            client.close()
            raise
        if state:
            client.state_file = os.path.abspath(state)
        return client

    def once() -> Client:
        try:
            return attempt()
        except StateLocked:
            if where["redirect"] is None:
                raise
            return attempt()  # the lock holder's own server; its answer is final

    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.05
    while True:
        try:
            return once()
        except (NoServer, StateLocked) as e:
            # Something at the path that is no socket is not waited on: a server never replaces it.
            # A lock holder that named its server was dialled: its answer is final.
            if not wait or isinstance(e, _NothingListensThere) or _lock_holders_socket(e) is not None:
                raise
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise
            time.sleep(delay if left is None else min(delay, left))
            delay = min(delay * 2, 1.0)


def _real_state_path(file: str) -> str:
    """A state file's path as the kernel resolves it (its folder's, when not written yet)."""
    return os.path.realpath(os.path.abspath(file))


class _SocketWriter:
    def __init__(self, s: _socket.socket):
        self._s = s

    def write(self, data: bytes) -> None:
        self._s.sendall(data)

    def close(self) -> None:
        try:
            self._s.shutdown(_socket.SHUT_RDWR)
        except OSError:
            pass  # the peer is already gone
        self._s.close()


# How many of a failed server's last stderr lines a StartError keeps.
START_ERROR_STDERR_LINES = 20
# Seconds a server whose output ended may take to exit (and close its stderr) before the start
# failure is reported without its exit code; a send that failed waits as long for that report.
_START_EXPLAIN_WAIT = 5.0


def server_command() -> List[str]:
    """How spawn() runs herrscher-state, as the Go drop-in does: $HERRSCHER_STATE_BIN (an
    executable, or a checkout's dist/src/cli.js, run with node), else herrscher-state on PATH."""
    bin_ = os.environ.get("HERRSCHER_STATE_BIN", "")
    if not bin_:
        return ["herrscher-state"]
    if bin_.endswith(".js"):
        return ["node", bin_]
    return [bin_]


class _StderrTail:
    """A spawned server's stderr: passed on to ours as it comes (its log), its last lines kept."""

    def __init__(self, stream: Any, forward: Any):
        self._lines: List[str] = []
        self._lock = threading.Lock()
        self.done = threading.Event()
        threading.Thread(target=self._pump, args=(stream, forward), name="herrscher-state-stderr", daemon=True).start()

    def _pump(self, stream: Any, forward: Any) -> None:
        try:
            for raw in iter(stream.readline, b""):
                if forward is not None:
                    try:
                        forward.write(raw.decode("utf-8", "replace"))
                        forward.flush()
                    except (OSError, ValueError):
                        forward = None  # ours is closed: keep reading, so the server never blocks
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                with self._lock:
                    self._lines.append(line[:2000])
                    del self._lines[:-START_ERROR_STDERR_LINES]
        except (OSError, ValueError):
            pass  # the pipe broke: the lines so far are what there is
        finally:
            self.done.set()
            try:
                stream.close()
            except OSError:
                pass

    def lines(self) -> List[str]:
        with self._lock:
            return [l for l in self._lines if l.strip()]


def _start_error(proc: subprocess.Popen, tail: Optional[_StderrTail], cause: BaseException) -> BaseException:
    """The StartError of a server that ended before it answered, or cause while it still runs."""
    try:
        code = proc.wait(_START_EXPLAIN_WAIT)
    except subprocess.TimeoutExpired:
        return cause  # still running: the connection broke, not the start
    lines: List[str] = []
    if tail is not None:
        tail.done.wait(1.0)
        lines = tail.lines()
    how = "was killed by signal %d" % -code if code < 0 else "exited with code %d" % code
    said = ": " + lines[-1] if lines else " and wrote nothing to stderr"
    return StartError("herrscher-state serve %s before it answered%s" % (how, said), code, lines)


def spawn(state: str, command: Optional[Sequence[str]] = None, lock_fd: Optional[int] = None,
          args: Sequence[str] = (), env: Optional[Dict[str, str]] = None, stderr: Any = None,
          shutdown_timeout: float = 10.0) -> Client:
    """Starts `herrscher-state serve --stdio --state STATE` and speaks to it over its stdio, as
    the host does. command: the server's argv before `serve` (default server_command():
    $HERRSCHER_STATE_BIN, else herrscher-state on PATH). lock_fd: an open fd of the state's lock
    file on which the caller holds the flock; it is handed to the server (--lock-fd). stderr: where
    the server's log goes (default: passed on to sys.stderr, its last lines kept for StartError).
    A server that exits before it answers makes every call raise StartError (its exit code and
    last stderr lines). An initialize sent without a state names STATE (the server refuses
    another). close() sends shutdown and exit, then waits."""
    argv = list(command if command is not None else server_command()) + ["serve", "--stdio", "--state", state]
    pass_fds: Sequence[int] = ()
    if lock_fd is not None:
        argv += ["--lock-fd", str(lock_fd)]
        pass_fds = (lock_fd,)
    argv += list(args)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE if stderr is None else stderr, env=env, pass_fds=pass_fds)
    except OSError as e:
        hint = "; set HERRSCHER_STATE_BIN to its path or put herrscher-state on PATH" if command is None else ""
        raise StartError("herrscher-state serve could not be started (%s): %s%s" % (argv[0], e, hint), None, []) from e
    tail = _StderrTail(proc.stderr, sys.stderr) if stderr is None else None
    client: Client

    def on_close() -> None:
        if client.closed is None:
            try:
                client.call("shutdown", _timeout=shutdown_timeout)
                client.notify("exit")
            except (StateError, ConnectionClosed, TimeoutError, OSError):
                pass  # the server is already going: stdin EOF below ends it either way
        try:
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass  # already closed: the server exited
        try:
            proc.wait(shutdown_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    client = Client(proc.stdout, proc.stdin, on_close, explain_early_end=lambda cause: _start_error(proc, tail, cause))
    client.process = proc
    client.state_file = os.path.abspath(state)
    return client
