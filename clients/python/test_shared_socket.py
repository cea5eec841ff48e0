"""The shared server's socket path: SHARED_SOCKET_NAME (generated from the TypeScript side) in the
default socket folder."""
import os
import unittest

import herrscher_state as hs


class SharedSocketPath(unittest.TestCase):
    def test_in_the_runtime_folder(self):
        self.assertEqual(hs.shared_socket_path({"XDG_RUNTIME_DIR": "/run/user/1000"}),
                         "/run/user/1000/herrscher-state/herrscher-state-shared.sock")

    def test_in_the_tmpdir_folder(self):
        env = {"TMPDIR": "/var/tmp"}
        self.assertEqual(hs.shared_socket_path(env), os.path.join(hs.default_socket_folder(env), hs.SHARED_SOCKET_NAME))
        self.assertTrue(hs.shared_socket_path(env).startswith("/var/tmp/herrscher-state-"))


if __name__ == "__main__":
    unittest.main()
