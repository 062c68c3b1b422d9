"""``irc records``: show (tables, top records, failures, filters), best/distill, merge,
plot, the task table, damaged or missing databases, and the older entry point
``python -m irc.tune.database``.

Databases are written directly through the database API (no tuning). Most tests drive
the sub-commands in-process through :func:`irc.cli.records.register`; a few run
``python -m irc records`` and ``python -m irc.tune.database`` as subprocesses.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from irc import te
from irc.cli import records
from irc.core.diagnostics import IRCError, MissingDependencyError, TuningError
from irc.target import Target
from irc.tune import JSONDatabase, SQLiteDatabase, TuningRecord, Workload, trace_key
from irc.tune.database.__main__ import main as database_main
from irc.tune.plot import default_record, plot_tuning, tuning_curves
from irc.tune.task import default_schedule_trace, flop_count
from irc.tune.task_table import load_task_table, save_task_table, task_table_path

ROOT = Path(__file__).resolve().parents[2]
TARGET = Target("llvm")
FINGERPRINT = TARGET.fingerprint()
OTHER_MACHINE = "cpu|Other CPU|znver9|feat:000000000000|cores:64"
T0 = 1_767_225_600.0


def matmul(n: int):
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    r = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return te.create_prim_func([a, b, c])


def add_one(n: int):
    a = te.placeholder((n,), name="A")
    return te.create_prim_func([a, te.compute((n,), lambda i: a[i] + 1.0, name="B")])


MM = Workload.from_func(matmul(64), name="matmul")
ADD = Workload.from_func(add_one(1024), name="add_one")


def default_trace(wl: Workload):
    return default_schedule_trace(wl.func, TARGET, log=False)[0]


def rec(wl: Workload, trace, ms=None, at=0.0, error="", msg="", fingerprint=FINGERPRINT,
        build=0.25) -> TuningRecord:
    return TuningRecord(workload_key=wl.key, trace=trace,
                        run_secs=None if ms is None else [ms * 1e-3], target=str(TARGET),
                        fingerprint=fingerprint, error_kind=error, error_msg=msg,
                        timestamp=T0 + at, build_secs=build, task_name=wl.name)


def fill(db) -> None:
    """matmul: default 4 ms, then 2 ms, a failure, 1 ms; add_one: default 0.5 ms,
    0.25 ms, a build failure."""
    db.commit_workload(MM)
    db.commit_workload(ADD)
    db.commit_records([
        rec(MM, default_trace(MM), 4.0, at=0),
        rec(ADD, default_trace(ADD), 0.5, at=1),
        rec(MM, ["tile", 8], 2.0, at=10),
        rec(ADD, ["tile", 4], 0.25, at=15),
        rec(ADD, ["tile", 2], at=16, error="BUILD_ERROR", msg="LoweringError: bad split\nmore"),
        rec(MM, ["tile", 4], at=20, error="RUN_ERROR", msg="kernel crashed (SIGSEGV)"),
        rec(MM, ["tile", 16], 1.0, at=30),
    ])


@pytest.fixture(autouse=True)
def _plain_output(monkeypatch):
    # rich treats FORCE_COLOR/TTY_COMPATIBLE as a terminal; these tests check plain text.
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def log(tmp_path) -> str:
    path = str(tmp_path / "log.json")
    with JSONDatabase(path) as db:
        fill(db)
    return path


@pytest.fixture
def work_dir(tmp_path) -> str:
    path = str(tmp_path / "run")
    with JSONDatabase.from_work_dir(path) as db:
        fill(db)
    save_task_table(path, str(TARGET), [
        {"name": "matmul", "workload_key": MM.key, "weight": 2, "flops": flop_count(MM.func)},
        {"name": "add_one", "workload_key": ADD.key, "weight": 3, "flops": -1}])
    return path


def run_records(argv: list[str]) -> int:
    """``irc records ARGV`` in-process, as the ``irc`` command will dispatch it."""
    parser = argparse.ArgumentParser(prog="irc")
    records.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["records", *argv])
    return args.func(args)


def run_module(*argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


# -- show ---------------------------------------------------------------------------------


def test_show_lists_workloads_as_plain_text(log, capsys):
    assert run_records(["show", log]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" not in out and "━" not in out  # no escape codes or box drawing in a pipe
    assert f"{log}: 7 records of 2 workloads on 1 target" in out
    assert f"target {TARGET} ({FINGERPRINT})" in out
    assert "task" in out and "best (ms)" in out and "GFLOPS" in out
    mm_row = next(line for line in out.splitlines() if line.startswith("matmul"))
    gflops = flop_count(MM.func) / 1e-3 / 1e9
    assert mm_row.split() == ["matmul", MM.key[:12], "4", "3", "1", "1.0000", f"{gflops:.2f}"]
    add_row = next(line for line in out.splitlines() if line.startswith("add_one"))
    assert add_row.split()[2:6] == ["3", "2", "1", "0.2500"]


def test_show_top_and_errors(log, capsys):
    assert run_records(["show", log, "--top", "2", "--errors"]) == 0
    out = capsys.readouterr().out
    section = out[out.index(f"fastest 2 of matmul ({MM.key[:12]})"):]
    rows = [line.split() for line in section.splitlines()[3:5]]
    assert [r[:2] for r in rows] == [["1", "1.0000"], ["2", "2.0000"]]
    assert rows[0][5:] == ["0.25", trace_key(["tile", 16])[:12]]
    errors = out[out.index("failed records: 2 of 7"):]
    assert "BUILD_ERROR" in errors and "RUN_ERROR" in errors
    assert "add_one: LoweringError: bad split" in errors and "more" not in errors
    assert "matmul: kernel crashed (SIGSEGV)" in errors


def test_show_errors_when_nothing_failed(tmp_path, capsys):
    path = str(tmp_path / "clean.json")
    with JSONDatabase(path) as db:
        db.commit_workload(MM)
        db.commit_records([rec(MM, default_trace(MM), 4.0), rec(MM, ["tile", 8], 2.0)])
    assert run_records(["show", path, "--errors"]) == 0
    out = capsys.readouterr().out
    assert "failed records:" not in out and "sample message" not in out  # no empty table
    assert out.rstrip().endswith("no failed records (of 2)")


def test_show_filters(log, capsys):
    assert run_records(["show", log, "--workload", "add"]) == 0
    out = capsys.readouterr().out
    assert "add_one" in out and "matmul" not in out
    assert run_records(["show", log, "--workload", MM.key[:8]]) == 0
    out = capsys.readouterr().out
    assert "matmul" in out and "add_one" not in out
    assert run_records(["show", log, "--target", "no-such-cpu"]) == 0
    assert "no records match --target 'no-such-cpu'" in capsys.readouterr().out


def test_show_groups_targets_and_filters_by_fingerprint(tmp_path, capsys):
    path = str(tmp_path / "two.db")
    with SQLiteDatabase(path) as db:
        fill(db)
        db.commit_record(rec(MM, ["tile", 32], 0.5, fingerprint=OTHER_MACHINE))
    assert run_records(["show", path]) == 0
    out = capsys.readouterr().out
    assert "on 2 targets" in out and f"({OTHER_MACHINE})" in out
    assert run_records(["show", path, "--target", "znver9"]) == 0
    out = capsys.readouterr().out
    assert f"({OTHER_MACHINE})" in out and f"({FINGERPRINT})" not in out
    assert not os.path.exists(path + "-wal") and not os.path.exists(path + "-shm")


def test_show_a_work_directory(work_dir, capsys):
    assert run_records(["show", work_dir]) == 0
    assert "7 records of 2 workloads" in capsys.readouterr().out


# -- best / distill -----------------------------------------------------------------------


def test_best_writes_beside_the_database(log, capsys):
    assert run_records(["best", log]) == 0
    out = capsys.readouterr().out
    best = log.replace("log.json", "log.best.json")
    assert "distilled 7 records to 2 best (2 new)" in out and best in out
    with JSONDatabase(best) as db:
        assert sorted(r.mean_cost for r in db.get_all_records()) == [0.25e-3, 1e-3]
        assert db.get_workload(MM.key).name == "matmul"


def test_distill_to_sqlite_and_not_into_itself(log, tmp_path, capsys):
    out_db = str(tmp_path / "best.db")
    assert run_records(["distill", log, "-o", out_db]) == 0
    assert out_db in capsys.readouterr().out
    with SQLiteDatabase(out_db) as db:
        assert len(db) == 2
    with pytest.raises(TuningError, match="into itself"):
        run_records(["best", log, "-o", log])


# -- merge --------------------------------------------------------------------------------


def test_merge_same_machine_skips_duplicates(tmp_path, capsys):
    a, b, out = (str(tmp_path / name) for name in ("a.json", "b.db", "all.json"))
    with JSONDatabase(a) as db:
        db.commit_workload(MM)
        db.commit_records([rec(MM, None, 4.0), rec(MM, ["t", 1], 2.0)])
    with SQLiteDatabase(b) as db:
        db.commit_workload(MM)
        db.commit_workload(ADD)
        db.commit_records([rec(MM, ["t", 1], 2.1), rec(ADD, None, 0.5)])
    assert run_records(["merge", a, b, "-o", out]) == 0
    assert f"merged 4 records of 2 databases into {out}: 3 written, 1 duplicates " \
           "skipped" in capsys.readouterr().out
    with JSONDatabase(out) as db:
        assert len(db) == 3 and db.get_workload(ADD.key) is not None
    assert run_records(["merge", a, b, "-o", out]) == 0
    assert "0 written, 4 duplicates skipped" in capsys.readouterr().out


def test_merge_refuses_other_hardware(tmp_path, capsys):
    a, b, out = (str(tmp_path / name) for name in ("a.json", "b.json", "all.json"))
    with JSONDatabase(a) as db:
        db.commit_records([rec(MM, None, 4.0)])
    with JSONDatabase(b) as db:
        db.commit_records([rec(MM, None, 3.0, fingerprint=OTHER_MACHINE)])
    with pytest.raises(TuningError) as err:
        run_records(["merge", a, b, "-o", out])
    assert FINGERPRINT in str(err.value) and OTHER_MACHINE in str(err.value)
    assert "--allow-mixed" in str(err.value) and not os.path.exists(out)
    assert run_records(["merge", a, b, "-o", out, "--allow-mixed"]) == 0
    assert "2 written" in capsys.readouterr().out
    with pytest.raises(TuningError, match="into itself"):
        run_records(["merge", a, b, "-o", a])


# -- missing and damaged databases --------------------------------------------------------


def test_missing_paths_are_errors_and_create_nothing(tmp_path):
    for name in ("typo.db", "typo.json", "no_dir/"):
        path = str(tmp_path / name)
        with pytest.raises(TuningError, match="no such file or directory"):
            run_records(["show", path])
        assert not os.path.exists(path.rstrip("/"))
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(TuningError, match="without database_tuning_record.json"):
        run_records(["show", str(tmp_path / "empty_dir")])
    assert os.listdir(tmp_path / "empty_dir") == []
    with pytest.raises(TuningError, match="no such file"):
        run_records(["best", str(tmp_path / "typo.json")])
    assert not os.path.exists(tmp_path / "typo.best.json")


def test_damaged_databases(tmp_path, log, capsys):
    garbage = tmp_path / "garbage.json"
    garbage.write_text("not json\n{\"also\": \"not a record\"}\n")
    with pytest.raises(TuningError, match=r"garbage.json is not a tuning record file: none "
                                          r"of its 2 lines"):
        run_records(["show", str(garbage)])
    sqlite_as_json = tmp_path / "named_wrong.json"
    with SQLiteDatabase(str(tmp_path / "real.db")) as db:
        db.commit_records([rec(MM, None, 1.0)])
    sqlite_as_json.write_bytes((tmp_path / "real.db").read_bytes())
    with pytest.raises(TuningError, match="is an SQLite database, not a JSON record file"):
        run_records(["show", str(sqlite_as_json)])
    not_sqlite = tmp_path / "bad.db"
    not_sqlite.write_text("this is not sqlite")
    with pytest.raises(TuningError, match=r"cannot read the tuning database .*bad.db: file "
                                          r"is not a database"):
        run_records(["show", str(not_sqlite)])
    other_sqlite = tmp_path / "other.db"
    conn = sqlite3.connect(other_sqlite)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    with pytest.raises(TuningError, match="not a tuning database: it has no records and no "
                                          "workloads table"):
        run_records(["show", str(other_sqlite)])
    # Some unreadable lines: a warning with the load report, and the rest is shown.
    with open(log, "a") as f:
        f.write("{torn\n")
    assert run_records(["show", log]) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and "1 unreadable entries skipped (line 8)" \
        in captured.err
    assert "7 records of 2 workloads" in captured.out


# -- task table ---------------------------------------------------------------------------


def test_task_table_round_trip_and_errors(tmp_path, work_dir):
    assert task_table_path(work_dir) == os.path.join(work_dir, "tasks.json")
    assert task_table_path(str(tmp_path / "log.json")) == str(tmp_path / "log.json.tasks.json")
    table = load_task_table(work_dir)
    assert table["format"] == "irc-tune-tasks/1" and table["target"] == str(TARGET)
    assert [(t["name"], t["weight"]) for t in table["tasks"]] == [("matmul", 2.0),
                                                                   ("add_one", 3.0)]
    assert load_task_table(str(tmp_path / "log.json")) is None
    assert [p for p in os.listdir(work_dir) if p.endswith(".tmp")] == []
    with pytest.raises(TuningError, match="needs a number 'weight'"):
        save_task_table(work_dir, "llvm", [{"name": "x", "workload_key": "k", "flops": 1}])
    with pytest.raises(TuningError, match="task.workload.key"):
        save_task_table(work_dir, "llvm", [{"name": "x", "workload_key": '["k", [4]]',
                                            "weight": 1, "flops": 1}])
    Path(task_table_path(work_dir)).write_text('{"format": "irc-tune-tasks/1", "tasks": [')
    with pytest.raises(TuningError, match=r"tasks.json:1:\d+: the task table is not valid "
                                          r"JSON"):
        load_task_table(work_dir)
    Path(task_table_path(work_dir)).write_text('{"format": "something-else"}')
    with pytest.raises(TuningError, match="is not a task table"):
        load_task_table(work_dir)


# -- plot ---------------------------------------------------------------------------------


def test_curves_and_figure(work_dir):
    with JSONDatabase.from_work_dir(work_dir) as db:
        all_records = db.get_all_records()
        curves = tuning_curves(db, all_records, load_task_table(work_dir))
        # The default (dlight) record is recognised by its trace even when not first.
        mm = db.records_of(MM)
        assert default_record(db, [mm[1], mm[0]]) is mm[0]
    total = curves.total
    # sum(weight * best): matmul x2, add_one x3, from when both have a valid record.
    assert total.latency_ms == pytest.approx([9.5, 5.5, 4.75, 4.75, 4.75, 2.75])
    assert total.seconds == [1, 10, 15, 16, 20, 30]
    assert total.default_ms == pytest.approx(2 * 4.0 + 3 * 0.5)
    # add_one's FLOP count comes from its stored function (the table says -1).
    assert [c.name for c in curves.tasks] == ["matmul", "add_one"]
    assert curves.tasks[0].trials == [1, 2, 3, 4]
    assert curves.tasks[0].gflops == pytest.approx(
        [flop_count(MM.func) / s / 1e9 for s in (4e-3, 2e-3, 2e-3, 1e-3)])

    fig = plot_tuning(curves, "both", title="run")
    tasks_ax, total_ax = fig.axes
    assert (tasks_ax.get_xlabel(), tasks_ax.get_ylabel()) == ("trials", "best GFLOPS")
    assert (total_ax.get_xlabel(), total_ax.get_ylabel()) == ("tuning time (s)",
                                                              "estimated latency (ms)")
    assert tasks_ax.get_title() and total_ax.get_title()
    assert [t.get_text() for t in tasks_ax.get_legend().get_texts()] == ["matmul", "add_one"]
    reference = [line for line in total_ax.get_lines()
                 if line.get_label().startswith("default build")]
    assert len(reference) == 1 and list(reference[0].get_ydata()) == [pytest.approx(9.5)] * 2
    assert len(plot_tuning(curves, "total").axes) == 1


def test_plot_png_and_svg(work_dir, tmp_path, capsys):
    import matplotlib.image

    png = str(tmp_path / "run.png")
    assert run_records(["plot", work_dir, "-o", png]) == 0
    assert f"wrote {png}: 2 tasks, 7 records" in capsys.readouterr().out
    assert matplotlib.image.imread(png).shape[:2] == (480, 1280)
    assert run_records(["plot", work_dir, "--kind", "tasks"]) == 0  # default: run.png
    assert matplotlib.image.imread(str(tmp_path / "run.png")).shape[:2] == (480, 640)
    svg = tmp_path / "total.svg"
    assert run_records(["plot", work_dir, "-o", str(svg), "--kind", "total"]) == 0
    assert "<svg" in svg.read_text()[:1000]
    with pytest.raises(IRCError, match="must end in .png, .svg, .pdf"):  # before reading
        run_records(["plot", work_dir, "-o", str(tmp_path / "run.jpeg")])


def test_plot_without_task_table(log, tmp_path, capsys):
    with pytest.raises(TuningError, match=r"no task table at .*log.json.tasks.json.*irc "
                                          r"tune writes there"):
        run_records(["plot", log, "--kind", "total", "-o", str(tmp_path / "t.png")])
    assert not os.path.exists(tmp_path / "t.png")
    assert run_records(["plot", log]) == 0
    out = capsys.readouterr().out
    assert "note: no task table" in out and "plotting the tasks only" in out
    import matplotlib.image

    assert matplotlib.image.imread(str(tmp_path / "log.png")).shape[:2] == (480, 640)


def test_plot_needs_matplotlib(work_dir, monkeypatch):
    with JSONDatabase.from_work_dir(work_dir) as db:
        curves = tuning_curves(db, db.get_all_records(), None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'irc\[plot\]'"):
        plot_tuning(curves, "tasks")


# -- the older entry point and the irc command as processes -------------------------------


def test_old_entry_point(tmp_path, log, capsys):
    typo = str(tmp_path / "typo.db")
    assert database_main(["show", "-i", typo]) == 1
    assert "no such file or directory" in capsys.readouterr().err
    assert not os.path.exists(typo)
    assert database_main(["show", "-i", log]) == 0
    assert "matmul" in capsys.readouterr().out
    assert database_main(["distill", "-i", str(tmp_path / "missing.json")]) == 1
    assert "0 records" not in capsys.readouterr().out
    proc = run_module("irc.tune.database", "distill", "-i", log)
    assert proc.returncode == 0, proc.stderr
    assert "distilled 7 records to 2 best" in proc.stdout
    assert os.path.exists(tmp_path / "log.best.json")


def test_irc_records_show_and_best(log, tmp_path):
    proc = run_module("irc", "records", "show", log, "--top", "1", "--errors")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stdout and "fastest 1 of matmul" in proc.stdout
    proc = run_module("irc", "records", "best", log, "-o", str(tmp_path / "b.json"))
    assert proc.returncode == 0 and "2 best" in proc.stdout


def test_irc_records_merge_and_plot(log, work_dir, tmp_path):
    out = str(tmp_path / "merged.json")
    proc = run_module("irc", "records", "merge", log, "-o", out)
    assert proc.returncode == 0 and "7 written" in proc.stdout, proc.stderr
    proc = run_module("irc", "records", "plot", work_dir, "-o", str(tmp_path / "p.svg"))
    assert proc.returncode == 0 and os.path.exists(tmp_path / "p.svg"), proc.stderr


@pytest.mark.parametrize("case", ["missing", "corrupt"])
def test_irc_records_errors(tmp_path, case):
    path = tmp_path / "db.db"
    if case == "corrupt":
        path.write_text("not sqlite")
    proc = run_module("irc", "records", "show", str(path))
    assert proc.returncode == 1
    assert proc.stderr.count("irc: error:") == 1 and "Traceback" not in proc.stderr
    assert str(path) in proc.stderr
    assert (case == "corrupt") == path.exists()

