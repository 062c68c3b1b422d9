"""The task table: the tasks of a tuning run, saved next to its database.

Records alone do not say how often a network calls each kernel; the estimated
end-to-end latency (``sum(weight * best latency)``, what the task scheduler minimizes)
needs the task weights. ``irc tune`` saves them with :func:`save_task_table` and
``irc records plot`` reads them back with :func:`load_task_table`. The file is
``<work dir>/tasks.json`` for a work directory, else ``<record file>.tasks.json``::

    {"format": "irc-tune-tasks/1", "target": "llvm -mcpu=znver3 -num-cores=2",
     "tasks": [{"name": "fused_conv2d_relu", "workload_key": "3b90...",
                "weight": 2.0, "flops": 231211008.0}, ...]}

A task's ``workload_key`` is the database key of its function (``task.workload.key``,
the key records carry); ``flops`` is the FLOP count of one call (-1 when unknown).
Other fields of a task are kept as they are.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from typing import Any

from ..core.diagnostics import TuningError

TASK_TABLE_FORMAT = "irc-tune-tasks/1"


def task_table_path(db_path: str) -> str:
    """Where the task table of the database at ``db_path`` lives: ``<dir>/tasks.json``
    when ``db_path`` is a directory (a work directory; an existing one, or a path
    ending in a separator), else ``<db_path>.tasks.json``."""
    path = os.fspath(db_path)
    if os.path.isdir(path) or path.endswith(("/", os.sep)):
        return os.path.join(path, "tasks.json")
    return path + ".tasks.json"


def save_task_table(db_path: str, target: str, tasks: list[dict]) -> str:
    """Write the task table of the database at ``db_path`` (replacing the file in one
    step: a reader never sees half of it) and return its path. Each task is a dict with
    ``name``, ``workload_key``, ``weight`` and ``flops``."""
    path = task_table_path(db_path)
    checked = _checked_tasks(tasks, "save_task_table")
    if not isinstance(target, str):
        target = str(target)  # a Target object
    text = json.dumps({"format": TASK_TABLE_FORMAT, "target": target, "tasks": checked},
                      indent=1) + "\n"
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tasks-", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file private; the table is as readable as the records.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
        tmp = None
    except OSError as err:
        raise TuningError(f"cannot write the task table {path}: {err.strerror}") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return path


def load_task_table(db_path: str) -> dict | None:
    """The task table of the database at ``db_path`` as saved by :func:`save_task_table`
    (``{"format", "target", "tasks"}``), None when there is none; TuningError naming the
    file when it cannot be read."""
    path = task_table_path(db_path)
    hint = "irc tune writes this file; run it again or remove the file"
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
        raise TuningError(f"cannot read the task table {path}: {reason}") from None
    try:
        table = json.loads(text)
    except json.JSONDecodeError as err:
        raise TuningError(f"{path}:{err.lineno}:{err.colno}: the task table is not valid "
                          f"JSON: {err.msg}", hint=hint) from None
    if not isinstance(table, dict) or table.get("format") != TASK_TABLE_FORMAT:
        found = table.get("format") if isinstance(table, dict) else None
        raise TuningError(f"{path} is not a task table of format {TASK_TABLE_FORMAT!r} "
                          f"(format: {found!r})", hint=hint)
    if not isinstance(table.get("target"), str):
        raise TuningError(f"the task table {path} has no target string", hint=hint)
    try:
        table["tasks"] = _checked_tasks(table.get("tasks"), "the task table")
    except TuningError as err:
        raise TuningError(f"{path}: {err.message}", hint=hint) from None
    return table


def _checked_tasks(tasks: Any, where: str) -> list[dict]:
    if not isinstance(tasks, list):
        raise TuningError(f"{where} needs a list of tasks, got {type(tasks).__name__}")
    out = []
    for n, task in enumerate(tasks):
        if not isinstance(task, dict):
            raise TuningError(f"{where}: task #{n} is a {type(task).__name__}, not an object")
        for name in ("name", "workload_key"):
            if not isinstance(task.get(name), str) or not task[name]:
                raise TuningError(f"{where}: task #{n} needs a string {name!r}")
        if task["workload_key"].startswith("["):
            raise TuningError(f"{where}: task #{n} ({task['name']}) has the auto-scheduler's "
                              "workload key (TuneTask.workload_key, a JSON list); records "
                              "carry the database key, task.workload.key")
        task = dict(task)
        for name in ("weight", "flops"):
            value = task.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise TuningError(f"{where}: task #{n} ({task['name']}) needs a number "
                                  f"{name!r}, got {value!r}")
            task[name] = float(value)
        if task["weight"] < 0:
            raise TuningError(f"{where}: task #{n} ({task['name']}) has a negative weight")
        out.append(task)
    return out


__all__ = ["TASK_TABLE_FORMAT", "load_task_table", "save_task_table", "task_table_path"]
