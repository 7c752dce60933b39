"""A lock peer on kazoo's own recipes, driven line by line for baton's interop tests
(test/harness/interop-peers.ts). Run it with Debian's /usr/bin/python3 (python3-kazoo).

Usage: /usr/bin/python3 kazoo_peer.py CONNECT_STRING PATH RECIPE ID
RECIPE: mutex | read | write | election | observe

stdin, one command a line: acquire | release | leader | exit (EOF: exit).
stdout, one event a line, flushed: ready | granted | released | leader ID | error MESSAGE
(and, for information, "state STATE" on every change of the connection's state).

`release` gives up whatever the peer has: the lock if held, the pending acquire if waiting (its node
is deleted); `released` is printed once the peer's node is gone (at once when idle). `leader` answers
with the first of kazoo's contenders() for the path (the read/write view for read and write, Lock's
otherwise), or nothing after "leader " when there is none.
"""

import logging
import sys
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import CancelledError
from kazoo.retry import KazooRetry

SESSION_TIMEOUT_S = 4.0
BOUND_S = 10.0
RECIPES = ("mutex", "read", "write", "election", "observe")

_out = threading.Lock()


def emit(line):
    with _out:
        sys.stdout.write(line.replace("\n", " ") + "\n")
        sys.stdout.flush()


def describe(error):
    return "%s %s" % (type(error).__name__, error)


class Peer(object):
    def __init__(self, client, path, recipe, ident):
        self.client = client
        self.path = path
        self.recipe = recipe
        self.ident = ident
        self.mutex = threading.Lock()
        self.state = "idle"  # idle | acquiring | held
        self.release_requested = False
        self.lock = None
        self.election = None
        self.leadership_over = None
        self.thread = None

    # ---- acquire ----

    def acquire(self):
        with self.mutex:
            if self.state != "idle":
                emit("error acquire while %s" % self.state)
                return
            if self.recipe == "observe":
                emit("error an observer does not acquire")
                return
            self.state = "acquiring"
            self.release_requested = False
            # A fresh recipe object for every acquire: a kazoo Lock that was cancelled once stays so.
            if self.recipe == "election":
                self.election = self.client.Election(self.path, self.ident)
                self.leadership_over = threading.Event()
                target = self._run_election
            else:
                make = {"mutex": self.client.Lock, "read": self.client.ReadLock, "write": self.client.WriteLock}
                self.lock = make[self.recipe](self.path, self.ident)
                target = self._acquire_lock
            self.thread = threading.Thread(target=target, name="kazoo-peer-acquire", daemon=True)
            self.thread.start()

    def _acquire_lock(self):
        lock = self.lock
        try:
            gotten = lock.acquire()
        except CancelledError:
            # Cancelled by `release`: kazoo deleted the node on its way out.
            self._released()
            return
        except Exception as error:  # noqa: BLE001 - reported to the driver
            self._failed("acquire", error)
            return
        if not gotten:
            self._failed("acquire", RuntimeError("not acquired"))
            return
        with self.mutex:
            self.state = "held"
            if not self.release_requested:
                emit("granted")
                return
        # A release asked for while the grant was on its way: give it up, `released` all the same.
        self._release_lock()

    def _run_election(self):
        election = self.election
        over = self.leadership_over

        def lead():
            with self.mutex:
                self.state = "held"
                if not self.release_requested:
                    emit("granted")
            over.wait()

        try:
            # Returns once `lead` has returned and the lock's node is deleted, or once cancelled
            # (the node deleted too).
            election.run(lead)
        except Exception as error:  # noqa: BLE001 - reported to the driver
            self._failed("election", error)
            return
        self._released()

    def _released(self):
        with self.mutex:
            self.state = "idle"
            self.release_requested = False
        emit("released")

    def _failed(self, what, error):
        with self.mutex:
            self.state = "idle"
        emit("error %s: %s" % (what, describe(error)))

    # ---- release ----

    def release(self):
        with self.mutex:
            state = self.state
            if state == "idle":
                emit("released")
                return
            self.release_requested = True
        if self.recipe == "election":
            # A leader's function returns; a candidate's acquire is cancelled. Either way run() returns.
            self.leadership_over.set()
            self.election.cancel()
        elif state == "acquiring":
            self.lock.cancel()
        else:
            threading.Thread(target=self._release_lock, name="kazoo-peer-release", daemon=True).start()

    def _release_lock(self):
        try:
            self.lock.release()
        except Exception as error:  # noqa: BLE001 - reported to the driver
            self._failed("release", error)
            return
        self._released()

    # ---- leader ----

    def leader(self):
        try:
            if self.client.exists(self.path) is None:
                emit("leader ")
                return
            view = self.client.WriteLock if self.recipe in ("read", "write") else self.client.Lock
            contenders = view(self.path).contenders()
            emit("leader %s" % (contenders[0] if contenders else ""))
        except Exception as error:  # noqa: BLE001 - reported to the driver
            emit("error leader: %s" % describe(error))

    # ---- exit ----

    def exit(self):
        with self.mutex:
            busy = self.state != "idle"
        if busy:
            self.release()
            thread = self.thread
            if thread is not None:
                thread.join(BOUND_S)
        try:
            self.client.stop()
            self.client.close()
        except Exception as error:  # noqa: BLE001 - reported to the driver
            emit("error close: %s" % describe(error))


def main(argv):
    if len(argv) != 5:
        sys.stderr.write("usage: kazoo_peer.py CONNECT_STRING PATH mutex|read|write|election|observe ID\n")
        return 2
    connect, path, recipe, ident = argv[1:]
    if recipe not in RECIPES:
        emit("error unknown recipe %s" % recipe)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    client = KazooClient(
        hosts=connect,
        timeout=SESSION_TIMEOUT_S,
        connection_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0),
        command_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0),
    )
    client.add_listener(lambda state: emit("state %s" % state))
    try:
        client.start(timeout=BOUND_S)
    except Exception as error:  # noqa: BLE001 - reported to the driver
        emit("error not connected to %s: %s" % (connect, describe(error)))
        return 1
    peer = Peer(client, path, recipe, ident)
    emit("ready")
    for line in sys.stdin:
        command = line.strip()
        if command == "acquire":
            peer.acquire()
        elif command == "release":
            peer.release()
        elif command == "leader":
            peer.leader()
        elif command == "exit":
            break
        elif command:
            emit("error unknown command %s" % command)
    peer.exit()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
