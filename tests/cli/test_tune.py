"""``irc tune``: plain lines when piped, a live display refreshing in place on a terminal,
resume numbering, Ctrl-C keeping every record, the task table for plots."""

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest
from conftest import irc_env, run_irc

from irc.cli.tune import parse_duration

TRIALS = "8"


def _records(work_dir) -> list[dict]:
    path = work_dir / "database_tuning_record.json"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_plain_lines_when_piped_then_resume_numbers_on(example, tmp_path):
    work = tmp_path / "work"
    r = run_irc("tune", example, "--records", work, "--trials", TRIALS)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "\x1b[" not in out  # no terminal escapes in a pipe
    assert out.splitlines()[1].startswith("cost model: ")
    assert "trial 1 (1/8 this run)" in out and "trial 8 (8/8 this run)" in out
    assert "estimated total latency:" in out.splitlines()[2]  # from the first trial on
    assert "tuning done (trial budget spent): 8 trials" in out
    assert len(_records(work)) == 8
    table = json.loads((work / "tasks.json").read_text())
    assert table["tasks"] and {"name", "workload_key", "weight", "flops"} <= \
        set(table["tasks"][0])
    r = run_irc("tune", example, "--records", work, "--trials", "4")
    assert r.returncode == 0, r.stderr
    assert "resuming from 8 records" in r.stdout
    assert "trial 9 (1/4 this run)" in r.stdout and "trial 12 (4/4 this run)" in r.stdout
    assert len(_records(work)) == 12
    log = (work / "logs" / "tune.log").read_text()  # the run's log, numbered on as well
    assert " trial 1: " in log and " trial 8: " in log and " trial 12: " in log
    assert log.count(" start: ") == 2 and "Tuning done: 4 trials" in log


@pytest.mark.parametrize("name", ["db.json", "db.db"])
def test_quiet_prints_the_summary_only(example, tmp_path, name):
    """A record file of either kind (the summary of an SQLite one read the closed
    database and crashed)."""
    r = run_irc("tune", example, "--records", tmp_path / name, "--trials", "6", "-q")
    assert r.returncode == 0, r.stderr
    assert "trial 1 " not in r.stdout and "tuning done" in r.stdout
    assert "records: 6 in" in r.stdout
    assert (tmp_path / f"{name}.tasks.json").exists()


def _interruptible() -> None:
    # A test run started in the background of a shell without job control inherits an
    # ignored SIGINT, which Python keeps: the child must take Ctrl-C as a user's does.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_keeps_the_records(example, tmp_path):
    work = tmp_path / "work"
    p = subprocess.Popen([sys.executable, "-m", "irc", "tune", str(example), "--records",
                          str(work), "--trials", "40"], env=irc_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_interruptible)
    try:
        while True:
            line = p.stdout.readline()
            assert line, "irc tune ended before its fourth trial"
            if line.startswith("trial 4 "):  # a line every 2 trials of 40
                break
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    kept = len(_records(work))
    assert kept >= 4
    assert f"records kept: {kept} in" in out
    r = run_irc("tune", example, "--records", work, "--trials", "2")
    assert r.returncode == 0 and f"resuming from {kept} records" in r.stdout


def test_live_display_refreshes_in_place_on_a_terminal(example, tmp_path):
    """Under a pseudo-terminal the display redraws itself (cursor-up escapes) instead of
    printing a line per trial."""
    main_fd, child_fd = pty.openpty()
    env = irc_env()
    env["COLUMNS"], env["TERM"] = "120", "xterm-256color"
    p = subprocess.Popen([sys.executable, "-m", "irc", "tune", str(example), "--records",
                          str(tmp_path / "work"), "--trials", TRIALS],
                         stdin=child_fd, stdout=child_fd, stderr=child_fd, env=env)
    os.close(child_fd)
    chunks = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main_fd], [], [], 1.0)
        if ready:
            try:
                data = os.read(main_fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif p.poll() is not None:
            break
    p.wait(timeout=60)
    os.close(main_fd)
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert p.returncode == 0, screen[-2000:]
    assert "\x1b[1A" in screen or "\x1b[2K" in screen  # redrawn in place
    assert "trial 1 (" not in screen  # not the plain lines
    assert "best ms" in screen and "ETA" in screen and "tuning done" in screen


@pytest.mark.parametrize("text, secs", [("90", 90), ("90s", 90), ("10m", 600),
                                        ("1h30m", 5400), ("2m30s", 150)])
def test_durations(text, secs):
    assert parse_duration(text) == secs


def test_bad_arguments_are_errors(example, tmp_path):
    r = run_irc("tune", example, "--records", tmp_path / "w", "--time-budget", "soon")
    assert r.returncode == 2 and "expected a duration" in r.stderr
    r = run_irc("tune", example, "--records", tmp_path / "w", "--trials", "0")
    assert r.returncode == 2 and "expected 1 or more" in r.stderr
    (tmp_path / "file.txt").write_text("x")
    r = run_irc("tune", example, "--records", tmp_path / "file.txt", "--trials", "1")
    assert r.returncode == 1 and "not a record file or a work directory" in r.stderr


def test_runner_resource_needs_a_cluster(example, tmp_path):
    r = run_irc("tune", example, "--records", tmp_path / "w", "--runner-resource", "gpu_box")
    assert r.returncode == 1
    assert "irc: error: --runner-resource places runners on a cluster; it needs --cluster" \
        in r.stderr
    r = run_irc("tune", example, "--records", tmp_path / "w", "--cluster", "127.0.0.1:1")
    assert r.returncode == 1
    assert "irc: error: nothing answers at the cluster address 127.0.0.1:1" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow
def test_tune_on_a_local_ray_cluster_then_resume(example, tmp_path):
    """``--cluster local`` (a Ray instance on this machine, one runner per node): the
    same records as a local run, resumable without ``--cluster``."""
    work = tmp_path / "work"
    r = run_irc("tune", example, "--records", work, "--trials", TRIALS, "--cluster", "local")
    assert r.returncode == 0, r.stderr
    assert "tuning done (trial budget spent): 8 trials" in r.stdout
    assert len(_records(work)) == 8
    r = run_irc("tune", example, "--records", work, "--trials", "4")
    assert r.returncode == 0, r.stderr
    assert "resuming from 8 records" in r.stdout
    keys = [(x["workload"], json.dumps(x["trace"])) for x in _records(work)]
    assert len(keys) == 12 and len(set(keys)) == 12
