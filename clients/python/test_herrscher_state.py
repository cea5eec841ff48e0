"""Tests of herrscher_state.py against the real built server ($HERRSCHER_STATE_CLI, else the
checkout's dist/src/cli.js; `npm run build` makes it). Run: python3 -m unittest -v
test_herrscher_state (npm test runs them through test/clients/python-client.test.ts)."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import herrscher_state as hs

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.environ.get("HERRSCHER_STATE_CLI") or os.path.join(HERE, "..", "..", "dist", "src", "cli.js")
COMMAND = ["node", CLI]
# Every server the tests start answers a write once write(2) returned (as Go's state package
# writes) instead of after an fdatasync: these tests check the client and the wire, not the
# flush (the store's own tests check each durability mode). A server killed with SIGKILL still
# leaves what it acknowledged in the page cache, where the restarted one reads it.
SERVE_ARGS = ["--durability", "write"]
ENTRY = {"ts": "2026-01-02T03:04:05Z", "role": "user", "text": "h\u00e9llo \u2028 <py>"}


def add_cleanup(owner, fn, *args):
    """Runs fn(*args) when owner ends: a test, or the module (unittest itself) for what its
    tests share."""
    if owner is unittest:
        unittest.addModuleCleanup(fn, *args)
    else:
        owner.addCleanup(fn, *args)


def private_dir(owner):
    d = tempfile.mkdtemp()
    os.chmod(d, 0o700)
    add_cleanup(owner, shutil.rmtree, d, True)  # ignore_errors, as rm -rf (no process per dir)
    return d


def server_env(owner):
    env = dict(os.environ)
    env["XDG_RUNTIME_DIR"] = private_dir(owner)
    env.pop("HERRSCHER_STATE_SOCKET", None)
    return env


class SocketServer:
    """A `serve --socket` on a state file of its own, stopped when owner (a test, or the
    module) ends."""

    def __init__(self, owner):
        if not os.path.exists(CLI):
            raise RuntimeError("the built server is missing at %s: run npm run build first" % CLI)
        self.dir = private_dir(owner)
        self.state = os.path.join(self.dir, "state.json")
        self.socket = os.path.join(self.dir, "s.sock")
        self.env = server_env(owner)
        add_cleanup(owner, self.stop)
        self.start()

    def restart(self):
        """Kills the server (SIGKILL: what it acknowledged is on disk) and starts another."""
        self.stop()
        self.start()

    def start(self, at=None):
        """Serves the state file on its socket, or on the socket `at` (one its clients do not dial)."""
        at = at or self.socket
        self.proc = subprocess.Popen(COMMAND + ["serve", "--state", self.state, "--socket", at] + SERVE_ARGS,
                                     stderr=subprocess.PIPE, env=self.env)
        deadline = time.monotonic() + 20
        while True:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(at)
                s.close()
                if hs.read_server_record(self.state) is not None:  # recorded after it listens
                    return
            except OSError:
                s.close()
            if self.proc.poll() is not None:
                raise RuntimeError("the server exited: %s" % self.proc.stderr.read().decode())
            if time.monotonic() > deadline:
                raise RuntimeError("the server never listened")
            time.sleep(0.02)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait()
        self.proc.stderr.close()


def exercise(test, c, state):
    """Every method once, checked; returns the names called."""
    called = set()

    def m(name):
        called.add(name)
        return getattr(c, name)

    init = m("initialize")(clientInfo={"name": "py-test"})
    test.assertEqual(init["serverInfo"]["name"], "herrscher-state")
    test.assertEqual(init["statePath"], state)
    test.assertEqual(m("discover")()["openrpc"], "1.3.2")
    st = m("status")()
    test.assertEqual((st["statePath"], st["healthy"]), (state, True))
    test.assertTrue(m("set_home")({"id": "987", "type": "category"}))
    dest = os.path.join(private_dir(test), "backup")
    bk = m("backup")(dest)
    test.assertEqual((bk["dest"], bk["files"], bk["revision"]), (dest, 1, 1))
    test.assertTrue(os.path.isfile(os.path.join(dest, "backup-manifest.json")))
    m("set_workspace")("/w")
    m("set_source")("/src")
    m("set_status_message_id")("m-1")
    m("set_instance_id")("alice")
    test.assertEqual(m("workspace_root")(), "/w")
    test.assertEqual(m("source_dir")(), "/src")
    test.assertEqual(m("qualified_name")("main"), "alice__main")
    test.assertEqual(m("apply_defaults")(workspace="/other")["workspace"], "/w")
    s = m("add_session")({"name": "py", "cmd": "python3 bridge.py"})
    test.assertRegex(s["incarnation"], r"^inc_[A-Z2-7]{26}$")
    test.assertEqual(s, {"id": "s_py", "incarnation": s["incarnation"], "name": "py", "channelID": "", "type": "", "cmd": "python3 bridge.py"})
    test.assertEqual(m("find_session")("py"), s)
    test.assertIsNone(c.find_session("nope"))
    test.assertEqual([x["name"] for x in m("snapshot_sessions")()], ["py"])
    st = m("state")()
    test.assertEqual(st["state"]["home"], {"id": "987", "type": "category"})
    persisted = c.state(persisted=True)
    with test.assertRaises(hs.Conflict) as stale:
        m("state_save")(persisted["state"], persisted["revision"] - 1)
    test.assertEqual(stale.exception.data, {"revision": persisted["revision"]})
    saved = c.state_save(dict(persisted["state"], source="/src2"), persisted["revision"])
    test.assertEqual(saved, {"revision": persisted["revision"] + 1, "changed": True})
    test.assertEqual(c.source_dir(), "/src2")
    test.assertEqual(m("set_resume_token")("py", "sid", incarnation=s["incarnation"]), {"found": True, "changed": True})
    m("set_paused_reason")("py", "cost")
    m("set_budget")("py", 20, 1000, 30, 2000, "")
    m("set_backend_target")("py", "codex", "codex", "m")
    test.assertEqual(m("set_archived")("ghost", True), {"found": False, "changed": False})
    test.assertEqual(m("append_transcript")("py", ENTRY), 0)
    test.assertEqual(c.append_transcript("py", dict(ENTRY, role="assistant", cost=0.5, tokens_out=5)), 1)
    with test.assertRaises(hs.UnknownSession):
        c.append_transcript("loose", ENTRY)
    test.assertEqual(c.append_transcript("loose", ENTRY, requireSession=False), 0)
    test.assertTrue(c.append_participant("loose", "u9", requireSession=False))
    test.assertEqual(m("read_transcript")("py"), [ENTRY, dict(ENTRY, role="assistant", cost=0.5, tokens_out=5)])
    test.assertEqual(m("read_page")("py", limit=1, before=1), {"entries": [ENTRY], "firstSeq": 0})
    test.assertEqual(m("last_transcript_timestamp")("py"), ENTRY["ts"])
    u = m("usage")("py")
    test.assertEqual((u["entries"], u["cost"], u["tokens_out"]), (2, 0.5, 5))
    test.assertEqual(m("infos")()[0]["usage"]["entries"], 2)
    test.assertTrue(m("append_participant")("py", " u1 "))
    test.assertFalse(c.append_participant("py", "u1"))
    test.assertEqual(m("read_participants")("py"), ["u1"])
    sub = m("subscribe")(sessions=True)
    test.assertTrue(m("remove_participants")("py"))
    test.assertTrue(m("remove_transcript")("py"))
    test.assertTrue(m("remove_session")("py", purge=True))
    n = sub.next(timeout=10)
    test.assertEqual((n.method, n.params["kind"], n.params["name"]), ("session/didChange", "removed", "py"))
    sub.close()
    test.assertEqual(list(sub), [])
    return called


def the_server_killed_mid_call_raises_connection_closed(test, srv):
    """The server killed while a call waits: it raises ConnectionClosed, and so does the next;
    a subscription of another connection, without reconnect, ends with the server."""
    c = hs.connect(socket=srv.socket)
    test.addCleanup(c.close)
    c.add_session({"name": "k"})
    watcher = hs.connect(socket=srv.socket)
    test.addCleanup(watcher.close)
    sub = watcher.subscribe(transcripts="*")
    srv.proc.send_signal(signal.SIGSTOP)
    result = []

    def call():
        try:
            c.append_transcript("k", ENTRY)
            result.append(None)
        except Exception as e:  # the test asserts its type
            result.append(e)

    th = threading.Thread(target=call)
    th.start()
    while not c._pending:
        time.sleep(0.005)
    srv.proc.kill()
    th.join(20)
    test.assertFalse(th.is_alive(), "the call hangs")
    test.assertIsInstance(result[0], hs.ConnectionClosed)
    with test.assertRaises(hs.ConnectionClosed):
        c.snapshot_sessions()
    with test.assertRaises(StopIteration):
        sub.next(timeout=30)
    test.assertIsInstance(watcher.closed, hs.ConnectionClosed)


# Methods of Client that are not wire methods, or are covered elsewhere (shutdown, exit).
NOT_WIRE = {"call", "notify", "close", "shutdown", "exit"}


class EveryMethod(unittest.TestCase):
    def check_all_called(self, called):
        public = {n for n in dir(hs.Client) if not n.startswith("_") and callable(getattr(hs.Client, n))}
        self.assertEqual(sorted(public - NOT_WIRE - called), [])

    def test_every_method_over_the_socket_then_the_server_killed_mid_call(self):
        """One server of its own: every method on its fresh state, then it is killed."""
        srv = SocketServer(self)
        with hs.connect(socket=srv.socket) as c:
            self.check_all_called(exercise(self, c, srv.state))
        the_server_killed_mid_call_raises_connection_closed(self, srv)

    def test_every_method_over_a_spawned_stdio_then_shutdown_and_exit(self):
        d = private_dir(self)
        state = os.path.join(d, "state.json")
        c = hs.spawn(state, command=COMMAND, args=SERVE_ARGS, env=server_env(self), stderr=subprocess.DEVNULL)
        self.check_all_called(exercise(self, c, state))
        self.assertIsNone(c.shutdown())
        with self.assertRaises(hs.ShuttingDown):
            c.add_session({"name": "late"})
        c.close()
        self.assertEqual(c.process.returncode, 0)


class LockHandover(unittest.TestCase):
    def test_a_host_holding_the_lock_spawns_the_server_with_its_lock_fd(self):
        import fcntl
        d = private_dir(self)
        state = os.path.join(d, "state.json")
        fd = os.open(os.path.join(d, ".state.json.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        self.addCleanup(os.close, fd)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        c = hs.spawn(state, command=COMMAND, lock_fd=fd, args=["--no-socket"] + SERVE_ARGS, env=server_env(self), stderr=subprocess.DEVNULL)
        c.add_session({"name": "locked"})
        c.close()
        self.assertEqual(c.process.returncode, 0)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # still ours: the server never unlocks it


_shared = []


def shared_server():
    """One server for the tests that need a server but not a state of their own (Behaviour's,
    Discovery's): each uses session names of its own, and one at a time may pause the server
    (SIGSTOP, then SIGCONT). Started by the first test that asks, stopped when the module ends."""
    if not _shared:
        _shared.append(SocketServer(unittest))
    return _shared[0]


def tearDownModule():
    """Runs the module cleanups (the shared server and its folders). unittest runs them after this
    anyway; pytest calls this but not them, and left the server running with its folders."""
    unittest.case.doModuleCleanups()


class Behaviour(unittest.TestCase):
    def test_threads_share_one_client_and_keep_their_order(self):
        srv = shared_server()
        with hs.connect(socket=srv.socket) as c:
            for t in ("a", "b"):
                c.add_session({"name": t})
            errors = []

            def run(g):
                try:
                    last = -1
                    for i in range(15):
                        seq = c.append_transcript("ab"[g % 2], dict(ENTRY, text="g%d-%d" % (g, i)))
                        assert seq > last, (g, seq, last)
                        last = seq
                except Exception as e:  # reported below: a thread cannot fail the test itself
                    errors.append(e)

            threads = [threading.Thread(target=run, args=(g,)) for g in range(8)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            self.assertEqual(errors, [])
            for t in ("a", "b"):
                texts = [e["text"] for e in c.read_transcript(t)]
                self.assertEqual(len(texts), 60)
                for g in range(8):
                    mine = [x for x in texts if x.startswith("g%d-" % g)]
                    self.assertEqual(mine, ["g%d-%d" % (g, i) for i in range(15)] if "ab"[g % 2] == t else [])

    def test_subscribe_sees_each_append_once_in_seq_order(self):
        srv = shared_server()
        with hs.connect(socket=srv.socket) as c, hs.connect(socket=srv.socket) as writer:
            c.add_session({"name": "w"})
            c.add_session({"name": "x"})
            with c.subscribe(transcripts=["w"]) as sub:
                for i in range(50):
                    writer.append_transcript("x", ENTRY)
                    writer.append_transcript("w", dict(ENTRY, text=str(i)))
                got = [sub.next(timeout=10) for _ in range(50)]
                self.assertEqual([(n.params["seq"], n.params["entry"]["text"]) for n in got], [(i, str(i)) for i in range(50)])
                self.assertTrue(all(n.method == "transcript/didAppend" and n.params["name"] == "w" for n in got))

    def test_a_timed_out_call_returns_and_the_connection_stays_usable(self):
        srv = shared_server()
        with hs.connect(socket=srv.socket) as c:
            c.add_session({"name": "t"})
            srv.proc.send_signal(signal.SIGSTOP)
            try:
                with self.assertRaises(TimeoutError):
                    c.call("transcript/read", _timeout=0.2, name="t")
            finally:
                srv.proc.send_signal(signal.SIGCONT)
            self.assertEqual(c.find_session("t")["name"], "t")

    def test_the_servers_errors_raise_their_class_with_data(self):
        srv = shared_server()
        with hs.connect(socket=srv.socket) as c:
            s = c.add_session({"name": "e"})
            with self.assertRaises(hs.SessionExists):
                c.add_session({"name": "e"})
            with self.assertRaises(hs.UnknownSession):
                c.append_transcript("ghost", ENTRY)
            with self.assertRaises(hs.Conflict) as cm:
                c.set_resume_token("e", "t", incarnation="inc_AAAAAAAAAAAAAAAAAAAAAAAAAA")
            self.assertEqual(cm.exception.data, {"incarnation": s["incarnation"]})
            with self.assertRaises(hs.InvalidParams) as ip:
                c.call("session/find", name=5)
            self.assertTrue(ip.exception.data["issues"])
            with self.assertRaises(hs.MethodNotFound):
                c.call("no/such")

    def test_every_error_code_maps_to_its_class(self):
        a, b = socket.socketpair()
        c = hs.Client(a.makefile("rb"), hs._SocketWriter(a))
        self.addCleanup(c.close)
        self.addCleanup(b.close)

        def serve():
            r = b.makefile("rb")
            for code in hs.ERRORS_BY_CODE:
                req = json.loads(r.readline())
                b.sendall((json.dumps({"jsonrpc": "2.0", "id": req["id"], "error": {"code": code, "message": "m", "data": {"c": code}}}) + "\n").encode())

        threading.Thread(target=serve, daemon=True).start()
        for code, cls in hs.ERRORS_BY_CODE.items():
            with self.assertRaises(cls) as cm:
                c.call("x/y")
            self.assertIs(type(cm.exception), cls)
            self.assertEqual((cm.exception.code, cm.exception.data, cm.exception.method), (code, {"c": code}, "x/y"))


class Discovery(unittest.TestCase):
    def test_the_rule_takes_the_first_step_that_applies(self):
        d = private_dir(self)
        state = os.path.join(d, "state.json")
        env = {"XDG_RUNTIME_DIR": "/run/user/7", "HERRSCHER_STATE_DIR": d}
        self.assertEqual(hs.find_socket(env=env), "/run/user/7/herrscher-state/herrscher-state.sock")
        self.assertEqual(hs.find_socket(env=env, instance="alice"), "/run/user/7/herrscher-state/herrscher-state-alice.sock")
        self.assertEqual(hs.find_socket(env={"TMPDIR": "/tmp/x", "HERRSCHER_STATE_DIR": d}),
                         "/tmp/x/herrscher-state-%d/herrscher-state.sock" % os.getuid())
        rec = hs.server_record_path(state)
        os.makedirs(os.path.dirname(rec), mode=0o700)
        with open(rec, "w") as f:
            json.dump({"pid": os.getpid(), "socket": "/x/recorded.sock", "state": state}, f)
        self.assertEqual(hs.find_socket(env=env), "/x/recorded.sock")
        with open(rec, "w") as f:
            json.dump({"pid": 1 << 22, "socket": "/x/recorded.sock", "state": state}, f)
        self.assertEqual(hs.find_socket(env=env), "/run/user/7/herrscher-state/herrscher-state.sock")
        env["HERRSCHER_STATE_SOCKET"] = "/e/env.sock"
        self.assertEqual(hs.find_socket(env=env), "/e/env.sock")
        self.assertEqual(hs.find_socket(socket="/given.sock", env=env), "/given.sock")

    def test_a_socket_in_a_folder_others_can_write_is_refused(self):
        d = private_dir(self)
        path = os.path.join(d, "s.sock")
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.listen()
        self.addCleanup(s.close)
        hs.check_socket(path)
        os.chmod(d, 0o777)
        with self.assertRaisesRegex(hs.UntrustedSocket, "writable by others"):
            hs.connect(socket=path)
        os.chmod(d, 0o700)
        plain = os.path.join(d, "plain")
        open(plain, "w").close()
        # A regular file or a folder is a wrong path, not an attack: NoServer, said as such.
        for where, what in ((plain, "a regular file"), (d, "a folder")):
            with self.assertRaisesRegex(hs.NoServer, "it is %s, not a server's socket" % what) as cm:
                hs.check_socket(where)
            self.assertNotIn("impersonat", str(cm.exception))
            with self.assertRaisesRegex(hs.NoServer, what):
                hs.connect(socket=where)

    def test_connect_finds_the_server_of_a_state_file_through_its_record(self):
        srv = shared_server()
        with hs.connect(state=srv.state, env={"XDG_RUNTIME_DIR": private_dir(self)}) as c:
            self.assertEqual(c.status()["socket"], srv.socket)

    def test_connect_follows_the_environment(self):
        srv = shared_server()
        with hs.connect(env={"HERRSCHER_STATE_SOCKET": srv.socket}) as c:
            self.assertEqual(c.initialize()["statePath"], srv.state)

    def test_connect_naming_a_state_reaches_that_states_server_or_none(self):
        srv = shared_server()
        other = os.path.join(private_dir(self), "state.json")
        # The socket found (here through the environment, as the default socket would be) is
        # another state's server: NoServer, and nothing but initialize reaches it.
        with self.assertRaisesRegex(hs.NoServer, "no server for %s: .*serves %s" % (re.escape(other), re.escape(srv.state))):
            hs.connect(state=other, env={"HERRSCHER_STATE_SOCKET": srv.socket})
        with self.assertRaisesRegex(hs.NoServer, "no server for"):
            hs.connect(state=other, socket=os.path.join(private_dir(self), "none.sock"))
        link = os.path.join(private_dir(self), "b")
        os.symlink(srv.dir, link)
        with hs.connect(state=os.path.join(link, "state.json"), env={"HERRSCHER_STATE_SOCKET": srv.socket}) as c:
            self.assertEqual(c.status()["statePath"], srv.state)

    def test_connect_with_wait_reaches_a_server_started_later(self):
        d = private_dir(self)
        state, sock = os.path.join(d, "state.json"), os.path.join(d, "s.sock")
        with self.assertRaises(hs.NoServer):
            hs.connect(socket=sock, state=state)  # without wait: at once
        with self.assertRaises(hs.NoServer):
            hs.connect(socket=sock, state=state, wait=True, timeout=0.3)  # waited, then gave up
        got = {}

        def dial():
            try:
                got["client"] = hs.connect(socket=sock, state=state, wait=True, timeout=120)
            except Exception as e:  # reported below
                got["error"] = e

        waiter = threading.Thread(target=dial, daemon=True)
        waiter.start()
        waiter.join(0.3)
        self.assertTrue(waiter.is_alive(), "connect(wait=True) returned before any server started: %r" % got)
        proc = subprocess.Popen(COMMAND + ["serve", "--state", state, "--socket", sock] + SERVE_ARGS,
                                stderr=subprocess.DEVNULL, env=server_env(self))
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        waiter.join(120)
        self.assertNotIn("error", got)
        with got["client"] as c:
            self.assertEqual(c.status()["statePath"], state)

    def test_connect_with_wait_does_not_wait_on_a_path_that_holds_no_socket(self):
        d = private_dir(self)
        plain = os.path.join(d, "plain")
        open(plain, "w").close()
        got = {}

        def dial():
            try:
                hs.connect(socket=plain, wait=True, timeout=None)
            except Exception as e:  # reported below
                got["error"] = e

        waiter = threading.Thread(target=dial, daemon=True)
        waiter.start()
        waiter.join(60)
        self.assertFalse(waiter.is_alive(), "connect(wait=True) waits on a regular file, which no server replaces")
        self.assertIsInstance(got.get("error"), hs.NoServer)
        self.assertIn("a regular file", str(got["error"]))


class PerUserSharedServer(unittest.TestCase):
    """The per-user shared server (`serve --shared`), found by the rule's shared step: each
    client names its state in initialize and sees that state alone."""

    def start_shared(self):
        """A shared server on the shared socket of a private environment; returns (env, socket,
        process, folder for states)."""
        root = private_dir(self)
        env = dict(os.environ)
        env.pop("HERRSCHER_STATE_SOCKET", None)
        env["XDG_RUNTIME_DIR"] = os.path.join(root, "run")
        env["HERRSCHER_STATE_DIR"] = os.path.join(root, "default")
        os.mkdir(env["XDG_RUNTIME_DIR"], 0o700)
        os.mkdir(env["HERRSCHER_STATE_DIR"], 0o700)
        sock = hs.shared_socket_path(env)
        proc = subprocess.Popen(COMMAND + ["serve", "--shared"] + SERVE_ARGS, stderr=subprocess.PIPE, env=env)

        def stop():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stderr.close()

        self.addCleanup(stop)
        deadline = time.monotonic() + 20
        while True:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(sock)
                s.close()
                break
            except OSError:
                s.close()
            if proc.poll() is not None:
                raise RuntimeError("the shared server exited: %s" % proc.stderr.read().decode())
            if time.monotonic() > deadline:
                raise RuntimeError("the shared server never listened")
            time.sleep(0.02)
        return env, sock, proc, root

    def state_in(self, root, name):
        d = os.path.join(root, name)
        os.mkdir(d, 0o700)
        return os.path.join(d, "state.json")

    def test_the_rule_takes_the_shared_socket_after_the_record_and_before_the_default(self):
        root = private_dir(self)
        env = {"XDG_RUNTIME_DIR": root, "HERRSCHER_STATE_DIR": root}
        folder = os.path.join(root, "herrscher-state")
        os.mkdir(folder, 0o700)
        shared = os.path.join(folder, hs.SHARED_SOCKET_NAME)
        self.assertEqual(hs.find_socket(env=env), os.path.join(folder, "herrscher-state.sock"))
        open(shared, "w").close()
        self.assertEqual(hs.find_socket(env=env), shared)
        self.assertEqual(hs.find_socket(env=env, state="/elsewhere/state.json"), shared)
        rec = hs.server_record_path(os.path.join(root, "state.json"))
        os.makedirs(os.path.dirname(rec), mode=0o700)
        with open(rec, "w") as f:
            json.dump({"pid": os.getpid(), "socket": "/x/recorded.sock"}, f)
        self.assertEqual(hs.find_socket(env=env), "/x/recorded.sock")
        self.assertEqual(hs.find_socket(env=env, state="/elsewhere/state.json"), shared)

    def test_two_states_each_see_their_own_through_the_shared_socket(self):
        env, sock, proc, root = self.start_shared()
        a, b = self.state_in(root, "a"), self.state_in(root, "b")
        self.assertEqual(hs.find_socket(state=a, env=env), sock)
        with hs.connect(state=a, env=env) as ca, hs.connect(state=b, env=env) as cb:
            ca.add_session({"name": "alpha"})
            cb.add_session({"name": "beta"})
            self.assertIsNone(cb.find_session("alpha"))
            self.assertIsNone(ca.find_session("beta"))
            sa, sb = ca.status(), cb.status()
            self.assertEqual((sa["statePath"], sb["statePath"]), (a, b))
            self.assertEqual((sa["socket"], sa["pid"], sb["pid"]), (sock, proc.pid, proc.pid))
            # An initialize sent without a state names the client's.
            self.assertEqual(ca.initialize()["statePath"], a)
        # No state named: the client names its own default state, not the server's.
        with hs.connect(env=env) as c:
            self.assertEqual(c.status()["statePath"], hs.default_state_path(env))

    def test_connect_with_wait_reaches_a_shared_server_started_later(self):
        root = private_dir(self)
        env = dict(os.environ, XDG_RUNTIME_DIR=root, HERRSCHER_STATE_DIR=root)
        env.pop("HERRSCHER_STATE_SOCKET", None)
        state = self.state_in(root, "w")
        with self.assertRaises(hs.NoServer):
            hs.connect(state=state, env=env)  # nothing yet; without wait: at once
        got = {}

        def dial():
            try:
                got["client"] = hs.connect(state=state, env=env, wait=True, timeout=120)
            except Exception as e:  # reported below
                got["error"] = e

        waiter = threading.Thread(target=dial, daemon=True)
        waiter.start()
        proc = subprocess.Popen(COMMAND + ["serve", "--shared"] + SERVE_ARGS, stderr=subprocess.DEVNULL, env=env)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        waiter.join(120)
        self.assertNotIn("error", got)
        with got["client"] as c:
            st = c.status()
            self.assertEqual((st["statePath"], st["pid"]), (state, proc.pid))

    def test_a_state_held_by_its_own_server_is_reached_there_and_a_holder_that_is_no_server_raises_state_locked(self):
        env, sock, proc, root = self.start_shared()
        own = SocketServer(self)  # recorded: the shared server names its socket
        with hs.connect(socket=sock, state=own.state, env=env) as c:
            st = c.status()
            self.assertEqual((st["pid"], st["statePath"]), (own.proc.pid, own.state))
        d = self.state_in(root, "d")
        holder = hs.spawn(d, command=COMMAND, args=["--no-socket"] + SERVE_ARGS, stderr=subprocess.DEVNULL)
        self.addCleanup(holder.close)
        self.assertEqual(holder.status()["statePath"], d)  # up: it holds the lock
        with self.assertRaises(hs.StateLocked) as cm:
            hs.connect(state=d, env=env)
        self.assertTrue(str(cm.exception).startswith("initialize: %s: the server at %s" % (d, sock)), str(cm.exception))
        with self.assertRaises(hs.StateLocked):
            hs.connect(state=d, env=env, wait=True, timeout=0.3)
        # spawn's client names its state in initialize: told another, the server refuses it.
        self.assertEqual(holder.initialize()["statePath"], d)
        holder.state_file = self.state_in(root, "other")
        with self.assertRaises(hs.NotThisState):
            holder.initialize()


# The checkout's broken server; HERRSCHER_STATE_FAKE_SERVER names it when this file runs from
# elsewhere (CI runs it beside an installed package, out of the checkout).
FAKE_SERVER = os.environ.get("HERRSCHER_STATE_FAKE_SERVER") or os.path.join(HERE, "..", "..", "test", "fixtures", "fake-server.mjs")


class FakeServer:
    """test/fixtures/fake-server.mjs --dir: one process serving every mode, each on its own
    socket, each socket a server that misbehaves in that one way."""

    def __init__(self, owner):
        self.dir = private_dir(owner)
        self.proc = subprocess.Popen(["node", FAKE_SERVER, "--dir", self.dir], stdout=subprocess.PIPE)
        add_cleanup(owner, self.stop)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("listening"):
            raise RuntimeError("the fake server did not start: %r" % line)

    def socket(self, mode):
        return os.path.join(self.dir, mode + ".sock")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait()
        self.proc.stdout.close()


_fakes = []


def fake_socket(mode):
    """The socket of the fake server in mode: one process for the module's tests, each with
    connections of its own; started by the first test that asks, stopped when the module ends."""
    if not _fakes:
        _fakes.append(FakeServer(unittest))
    return _fakes[0].socket(mode)


class BrokenPeer(unittest.TestCase):
    """A broken server never hangs a call nor grows the client without bound: the connection
    ends, every pending call raises ConnectionClosed, closed says why."""

    def _calls_fail_and_the_connection_ends(self, mode):
        c = hs.connect(socket=fake_socket(mode))
        self.addCleanup(c.close)
        errors = []

        def one():
            try:
                c.status(timeout=60)
                errors.append(None)
            except Exception as e:  # the test asserts its type
                errors.append(e)

        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
            self.assertFalse(t.is_alive(), "%s: a call hangs" % mode)
        self.assertEqual(len(errors), 2)
        for e in errors:
            self.assertIsInstance(e, hs.ConnectionClosed, "%s: %r" % (mode, e))
        self.assertIsInstance(c.closed, hs.ConnectionClosed)
        with self.assertRaises(hs.ConnectionClosed):
            c.status(timeout=5)
        return c

    def test_garbage(self):
        c = self._calls_fail_and_the_connection_ends("garbage")
        self.assertIn("malformed", str(c.closed))

    def test_a_reply_line_over_the_message_limit(self):
        c = self._calls_fail_and_the_connection_ends("huge")
        self.assertIn("message limit", str(c.closed))

    def test_json_that_is_not_an_object(self):
        for mode in ("non-object", "array"):
            with self.subTest(mode=mode):
                c = self._calls_fail_and_the_connection_ends(mode)
                self.assertIn("not an object", str(c.closed))

    def test_ids_no_call_waits_for(self):
        for mode in ("wrong-id", "null-id", "list-id"):
            with self.subTest(mode=mode):
                c = self._calls_fail_and_the_connection_ends(mode)
                self.assertIn("id", str(c.closed))

    def test_a_100k_deep_array(self):
        c = self._calls_fail_and_the_connection_ends("deep-array")
        self.assertIn("not JSON", str(c.closed))

    def test_a_reply_that_is_neither_a_result_nor_an_error(self):
        # Answered None before (a write's caller was told it was done), or AttributeError.
        for mode, says in (("no-result", "neither"), ("null-error", "neither"),
                           ("string-error", "error"), ("bad-error-code", "error")):
            with self.subTest(mode=mode):
                c = self._calls_fail_and_the_connection_ends(mode)
                self.assertIn(says, str(c.closed))

    def test_a_close_mid_reply(self):
        self._calls_fail_and_the_connection_ends("close-mid-reply")

    def test_a_server_that_never_answers_times_the_call_out(self):
        with hs.connect(socket=fake_socket("silent"), call_timeout=0.2) as c:
            with self.assertRaises(TimeoutError):
                c.status()
            with self.assertRaises(TimeoutError):
                c.status(timeout=0.1)
            self.assertIsNone(c.closed)

    def test_a_late_answer_to_a_timed_out_call_is_dropped(self):
        srv = shared_server()
        with hs.connect(socket=srv.socket) as c:
            srv.proc.send_signal(signal.SIGSTOP)
            try:
                with self.assertRaises(TimeoutError):
                    c.find_session("late-never-added", timeout=0.2)
            finally:
                srv.proc.send_signal(signal.SIGCONT)
            # The next call gets its own answer, not session/find's late one.
            self.assertEqual(c.status(timeout=20)["statePath"], srv.state)
            self.assertIsNone(c.closed)

    def test_nan_and_infinity_are_refused_before_sending(self):
        with hs.connect(socket=fake_socket("echo")) as c:
            for bad in (float("nan"), float("inf"), float("-inf")):
                with self.assertRaisesRegex(ValueError, "transcript/append: params not sent"):
                    c.append_transcript("x", {"ts": "t", "role": "user", "text": "", "cost": bad})
            self.assertEqual(c._next_id, 0)  # no id was taken: nothing was sent
            self.assertEqual(c.status(timeout=20), {})
            self.assertIsNone(c.closed)


class NoServerError(unittest.TestCase):
    def test_nothing_listening_raises_no_server_an_oserror(self):
        missing = os.path.join(private_dir(self), "none.sock")
        with self.assertRaises(hs.NoServer) as cm:
            hs.connect(socket=missing)
        self.assertIsInstance(cm.exception, OSError)
        self.assertIsInstance(cm.exception, hs.ConnectionClosed)
        self.assertIn(missing, str(cm.exception))
        self.assertTrue(str(cm.exception).endswith("; start one with `herrscher-state serve --socket %s`" % missing), str(cm.exception))
        self.assertTrue(issubclass(hs.ConnectionClosed, OSError))


class StartFailure(unittest.TestCase):
    def test_a_server_that_cannot_start_raises_start_error_with_its_exit_code_and_words(self):
        state = os.path.join(private_dir(self), "state.json")
        with open(state, "w") as f:
            f.write("{not json")
        c = hs.spawn(state, command=COMMAND, args=SERVE_ARGS, env=server_env(self), stderr=None)
        self.addCleanup(c.close)
        with self.assertRaises(hs.StartError) as cm:
            c.snapshot_sessions()
        e = cm.exception
        self.assertIsInstance(e, hs.ConnectionClosed)
        self.assertEqual(e.exit_code, 1)
        self.assertRegex(e.stderr[-1], r"cannot open the state .*state\.json: state\.json: invalid JSON")
        self.assertRegex(str(e), r"^herrscher-state serve exited with code 1 before it answered: herrscher-state: cannot open the state .*invalid JSON.*; fix ")
        with self.assertRaises(hs.StartError) as later:
            c.status()
        self.assertEqual((later.exception.exit_code, later.exception.stderr), (1, e.stderr))

    def test_spawn_runs_herrscher_state_bin_as_the_go_drop_in_does(self):
        env = server_env(self)
        old = os.environ.get("HERRSCHER_STATE_BIN")
        self.addCleanup(lambda: os.environ.pop("HERRSCHER_STATE_BIN", None) if old is None else os.environ.__setitem__("HERRSCHER_STATE_BIN", old))
        os.environ["HERRSCHER_STATE_BIN"] = CLI
        self.assertEqual(hs.server_command(), ["node", CLI])
        c = hs.spawn(os.path.join(private_dir(self), "state.json"), args=SERVE_ARGS + ["--no-socket"], env=env, stderr=subprocess.DEVNULL)
        with c:
            self.assertEqual(c.snapshot_sessions(), [])
        missing = os.path.join(private_dir(self), "no-such-herrscher-state")
        os.environ["HERRSCHER_STATE_BIN"] = missing
        with self.assertRaises(hs.StartError) as cm:
            hs.spawn(os.path.join(private_dir(self), "state.json"), env=env)
        self.assertIsNone(cm.exception.exit_code)
        self.assertIn(missing, str(cm.exception))
        self.assertIn("HERRSCHER_STATE_BIN", str(cm.exception))


class Reconnect(unittest.TestCase):
    def test_a_subscriber_sees_every_acknowledged_append_once_in_order_across_a_restart(self):
        srv = SocketServer(self)
        fast = {"initial_delay": 0.05, "max_delay": 0.5}
        w = hs.connect(socket=srv.socket, reconnect=fast, call_timeout=30)
        self.addCleanup(w.close)
        r = hs.connect(socket=srv.socket, reconnect=fast, call_timeout=30)
        self.addCleanup(r.close)
        w.add_session({"name": "r"})
        w.append_transcript("r", dict(ENTRY, text="before"))
        sub = r.subscribe(sessions=True, transcripts=["r"])
        acked = []
        stop = threading.Event()

        def write():
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    w.append_transcript("r", dict(ENTRY, text="e%d" % i))
                    acked.append("e%d" % i)
                except (hs.ConnectionClosed, TimeoutError):
                    pass  # in flight when the server went: perhaps applied, not acknowledged

        th = threading.Thread(target=write)
        th.start()
        try:
            self._wait(lambda: len(acked) >= 20)
            srv.restart()
            after = len(acked)
            self._wait(lambda: len(acked) >= after + 20)
        finally:
            stop.set()
            th.join(30)
        self.assertFalse(th.is_alive(), "the writer hangs")
        self.assertIsNone(w.closed)
        in_file = [e["text"] for e in w.read_transcript("r")][1:]  # "before" was there at subscribe
        seen = []
        while len(seen) < len(in_file):
            n = sub.next(timeout=30)
            self.assertEqual(n.params["subscription"], sub.id)
            if n.method == "transcript/didAppend":
                seen.append((n.params["seq"], n.params["entry"]["text"]))
        seqs = [q for q, _ in seen]
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))), "a gap or a duplicate")
        self.assertEqual([t for _, t in seen], in_file)
        self.assertEqual([t for _, t in seen if t in set(acked)], acked)
        # Nothing more: the next append notified is one made now (the feed is in commit order).
        w.append_transcript("r", dict(ENTRY, text="marker"))
        n = sub.next(timeout=30)
        while n.method != "transcript/didAppend":
            n = sub.next(timeout=30)
        self.assertEqual(n.params["entry"]["text"], "marker", "one more append than the file holds")

    def test_a_subscriber_of_every_session_gets_what_sessions_it_saw_nothing_of_got_while_it_was_away(self):
        # Its since named only the sessions it had seen a notification of: what was appended to
        # the others (one made after it subscribed, one it saw no append of) was never sent.
        srv = SocketServer(self)
        with hs.connect(socket=srv.socket) as setup:
            setup.add_session({"name": "old"})
            for i in range(3):
                setup.append_transcript("old", dict(ENTRY, text="before%d" % i))
        r = hs.connect(socket=srv.socket, reconnect={"initial_delay": 0.02, "max_delay": 0.1}, call_timeout=30)
        self.addCleanup(r.close)
        sub = r.subscribe(transcripts="*")
        srv.stop()
        self._wait(lambda: r._reconnecting)
        # A run on a socket the subscriber does not dial: the writer appends while it is away.
        away = os.path.join(srv.dir, "away.sock")
        srv.start(at=away)
        with hs.connect(socket=away) as w:
            w.add_session({"name": "c"})
            w.append_transcript("c", dict(ENTRY, text="while-away"))
            w.append_transcript("old", dict(ENTRY, text="old-while-away"))
        srv.stop()
        srv.start()
        r.snapshot_sessions()  # a call waits until the client has subscribed again
        with hs.connect(socket=srv.socket) as w:
            w.append_transcript("old", dict(ENTRY, text="marker"))
        # Each session's appends come in order; across sessions the catch-up of c may come after
        # old's marker, so reading goes on until both missed appends and the marker came (a
        # missing one fails at next()'s bound).
        seen = []
        while "old#4:marker" not in seen or len(seen) < 3:
            n = sub.next(timeout=30)
            if n.method == "transcript/didAppend":
                seen.append("%s#%d:%s" % (n.params["name"], n.params["seq"], n.params["entry"]["text"]))
        self.assertEqual(sorted(seen), ["c#0:while-away", "old#3:old-while-away", "old#4:marker"], "each missed append once")
        old = [x for x in seen if x.startswith("old#")]
        self.assertEqual(old, ["old#3:old-while-away", "old#4:marker"], "old's in order")

    def test_a_subscriber_that_saw_revision_0_gets_the_state_a_later_run_has(self):
        # Subscribed before anything was committed: its since carries revision 0, which a server
        # of another run answers with state/resync (the document); with no revision, no state part.
        srv = SocketServer(self)
        r = hs.connect(socket=srv.socket, reconnect={"initial_delay": 0.02, "max_delay": 0.1}, call_timeout=30)
        self.addCleanup(r.close)
        sub = r.subscribe(sessions=True)
        self.assertEqual(sub.revision, 0)
        srv.stop()
        self._wait(lambda: r._reconnecting)
        # A run on a socket the subscriber does not dial: the change is made while it is away.
        srv.start(at=os.path.join(srv.dir, "away.sock"))
        with hs.connect(socket=os.path.join(srv.dir, "away.sock")) as w:
            w.add_session({"name": "while-away"})
        srv.stop()
        srv.start()
        r.snapshot_sessions()  # a call waits until the client has subscribed again
        with hs.connect(socket=srv.socket) as w:
            w.add_session({"name": "marker"})
        notes = [sub.next(timeout=30)]
        while notes[-1].method != "session/didChange":
            notes.append(sub.next(timeout=30))
        self.assertEqual([n.method for n in notes], ["state/resync", "session/didChange"])
        self.assertEqual([x["name"] for x in notes[0].params["state"]["sessions"]], ["while-away"])
        self.assertEqual(notes[1].params["name"], "marker")

    @staticmethod
    def _wait(cond, limit=60):
        deadline = time.monotonic() + limit
        while not cond():
            if time.monotonic() > deadline:
                raise AssertionError("timed out")
            time.sleep(0.01)


if __name__ == "__main__":
    unittest.main()
