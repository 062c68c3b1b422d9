"""irc.core.parallel.fork_map and fork_pull: pieces of work in forked processes, with
the calling process redoing any piece a child could not deliver."""

import os
import sys
import threading
import time

import pytest

import irc
from irc.core import parallel
from irc.core.settings import Settings

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


@linux
def test_pulled_pieces_come_back_in_order_and_are_shared_out():
    here = os.getpid()
    sizes = [40, 30, 20, 10, 10, 5, 5, 1, 1, 1, 1]

    def piece(ms):
        time.sleep(ms / 1000)
        return ms * 2, os.getpid()

    got = parallel.fork_pull(piece, sizes, jobs=2)
    assert [v for v, _ in got] == [2 * s for s in sizes]
    pids = {p for _, p in got}
    assert here in pids and len(pids) == 2  # this process and one child took pieces


@linux
def test_pulled_pieces_of_a_dead_child_are_done_here():
    here = os.getpid()

    def piece(x):
        if os.getpid() != here and x == 3:
            os._exit(9)  # the child dies with the pieces it took
        time.sleep(0.005)
        return x + 100

    assert parallel.fork_pull(piece, list(range(12)), jobs=3) == [100 + x for x in range(12)]


@linux
def test_a_pulled_piece_error_is_raised_here():
    def piece(x):
        if x == 5:
            raise irc.IRCError(f"bad piece {x}")
        return x

    with pytest.raises(irc.IRCError, match="bad piece 5"):
        parallel.fork_pull(piece, list(range(9)), jobs=2)


def test_pull_runs_serially_where_it_cannot_share():
    here = os.getpid()
    assert parallel.fork_pull(lambda x: os.getpid() == here, [1, 2], jobs=1) == [True, True]
    assert parallel.fork_pull(lambda x: x, [], jobs=2) == []


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


def test_worker_count_from_the_settings():
    with irc.settings(compile_jobs=3):
        assert parallel.worker_count() == 3
    with irc.settings(compile_jobs=None):
        assert parallel.worker_count() >= 1
    assert Settings.from_environment({"IRC_COMPILE_JOBS": "3"}).worker_count() == 3
    for bad in ("two", "0", "-1"):
        with pytest.raises(irc.IRCError, match="IRC_COMPILE_JOBS"):
            Settings.from_environment({"IRC_COMPILE_JOBS": bad})


def test_settings_override_nests_per_thread_and_round_trips_the_environment(tmp_path):
    base = irc.core.settings.current()
    with irc.settings(compile_jobs=2, cache_dir=tmp_path) as outer:
        assert irc.core.settings.current() is outer
        with irc.settings(cache=False) as inner:
            assert (inner.compile_jobs, inner.cache_dir, inner.cache) == (2, tmp_path, False)
            seen = []
            t = threading.Thread(target=lambda: seen.append(irc.core.settings.current()))
            t.start()
            t.join()
            assert seen == [base]  # another thread keeps the process's settings
            assert Settings.from_environment(inner.environment()) == inner
        assert irc.core.settings.current() is outer
    assert irc.core.settings.current() is base
    with pytest.raises(irc.IRCError, match="unknown setting 'jobs'"):
        with irc.settings(jobs=2):
            pass
    with pytest.raises(irc.IRCError, match="compile_jobs"):
        with irc.settings(compile_jobs=0):
            pass
