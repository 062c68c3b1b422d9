"""irc.core.parallel.fork_map: pieces of work in forked processes, with the calling
process redoing any piece a child could not deliver."""

import os
import sys
import threading

import pytest

import irc
from irc.core import parallel

linux = pytest.mark.skipif(not sys.platform.startswith("linux"),
                           reason="fork_map forks only on Linux")


@linux
def test_results_come_back_in_order_from_children():
    here = os.getpid()
    got = parallel.fork_map(lambda x: (x * x, os.getpid() != here), [1, 2, 3, 4])
    assert [v for v, _ in got] == [1, 4, 9, 16]
    assert got[0][1] is False  # the first piece runs in this process
    assert all(forked for _, forked in got[1:])  # the others in children


@linux
def test_a_failing_child_piece_is_done_again_here():
    here = os.getpid()

    def piece(x):
        if os.getpid() != here and x == 2:
            os._exit(3)  # a child that dies without a word
        if os.getpid() != here and x == 3:
            return lambda: None  # a result that does not pickle
        return x + 10

    assert parallel.fork_map(piece, [1, 2, 3]) == [11, 12, 13]


@linux
def test_an_error_is_raised_here_as_without_children():
    def piece(x):
        if x == 1:
            raise irc.IRCError(f"bad piece {x}")
        return x

    with pytest.raises(irc.IRCError, match="bad piece 1"):
        parallel.fork_map(piece, [0, 1])


def test_no_fork_while_other_threads_run():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not parallel.can_fork()
        here = os.getpid()
        assert parallel.fork_map(lambda x: os.getpid() == here, [1, 2]) == [True, True]
    finally:
        stop.set()
        t.join()


def test_worker_count_from_environment(monkeypatch):
    monkeypatch.setenv("IRC_COMPILE_JOBS", "3")
    assert parallel.worker_count() == 3
    monkeypatch.delenv("IRC_COMPILE_JOBS")
    assert parallel.worker_count() >= 1
    for bad in ("two", "0", "-1"):
        monkeypatch.setenv("IRC_COMPILE_JOBS", bad)
        with pytest.raises(irc.IRCError, match="IRC_COMPILE_JOBS"):
            parallel.worker_count()
