"""Auto-tuning: find fast schedules for loop functions by search and measurement.

This package holds the tuning infrastructure; the search (sketch rules, sketches,
mutators, postprocessors, evolutionary search) and the front doors (``irc.tune.ms``,
``irc.tune.auto_scheduler``) are built on it. The pieces and how they connect:

**Workloads and records** (:mod:`irc.tune.record`). A :class:`Workload` is an unscheduled
loop function keyed by :func:`workload_key` (its structural hash, ignoring the
``global_symbol``). A candidate is ``(workload, trace)`` where ``trace`` is the JSON of an
``irc.tir.schedule.Trace`` (decisions included); ``trace=None`` is the unscheduled
function, the default schedule. :func:`trace_key` identifies a candidate. A
:class:`TuningRecord` is one measurement: seconds per repeat or a
:class:`MeasureErrorKind` (``BUILD_ERROR``, ``BUILD_TIMEOUT``, ``RUN_ERROR``,
``RUN_TIMEOUT``, ``WRONG_RESULT``) with its message, plus target, hardware fingerprint,
irc version, seed and time.

**Databases** (:mod:`irc.tune.database`). :class:`JSONDatabase` (append-only JSON lines,
workloads in a sibling ``*.workloads.json``) and :class:`SQLiteDatabase` share the
:class:`Database` interface: ``commit_workload(func)``, ``commit_record(s)``,
``records_of(w)``, ``get_top_k(w, k)``, ``best_record(w)``, ``has_measured(w, trace)``,
``workload_keys()``, ``get_workload(key)``. :func:`open_database` opens either by file
suffix and resumes from existing files; opened with a ``target``, a database skips
records of other hardware. :func:`distill` keeps the best record per workload and target.

**Measuring** (:mod:`irc.tune.measure`, :mod:`irc.tune.builder`,
:mod:`irc.tune.runner`). ``MeasureInput(workload, trace, target, func=None)``;
:class:`LocalBuilder` compiles inputs in parallel worker processes (replaying the trace
there with :func:`apply_trace`) into :class:`BuildResult` s; :class:`LocalRunner` times
them one at a time in an isolated process (crash → ``RUN_ERROR``, hang → ``RUN_TIMEOUT``
counted from kernel start, optional correctness check → ``WRONG_RESULT``);
:class:`ProgramMeasurer` does both and calls callbacks such as :class:`RecordToDatabase`.
Failures are results, never exceptions. Worker processes are forked from a zygote that
imported irc once (:mod:`irc.tune.worker_pool`), so replacing a crashed one costs
milliseconds.

**Features and cost models** (:mod:`irc.tune.features`, :mod:`irc.tune.cost_model`).
:func:`extract_features(func) <irc.tune.features.extract_features>` gives a
``(num_stores, NUM_FEATURES)`` array for a scheduled function (hundreds of candidates per
second). Cost models score candidates (higher = faster): ``predict_features(list of
arrays)`` / ``predict(inputs)``, learn with ``update(inputs, results)`` /
``update_features(features, workload_keys, seconds)`` / ``update_from_file(path)``, and
``save``/``load``. :class:`XGBModel` ranks with boosted trees (needs xgboost, the ``tune``
extra); :class:`NumpyModel` is the pure-numpy fallback; :class:`RandomModel` the baseline;
:func:`create_cost_model` ``("auto")`` picks.

**Tasks and the task scheduler** (:mod:`irc.tune.task`, :mod:`irc.tune.task_scheduler`).
:func:`extract_tasks(mod, target, params) <irc.tune.task.extract_tasks>` gives one
:class:`TuneTask` per distinct loop function of a graph module (weight = call sites;
``desc``, ``workload``, ``workload_key``, ``flop_count``, ``compute_dag``).
:class:`TaskScheduler` allocates trial rounds among tasks (gradient-based or round-robin)
by driving a :class:`TaskTuner` — the search implements ``tune_round(task_id, n)`` and
``measure_default(task_id)``; a tuner whose ``rounds_in_flight`` is above 1 measures in
the background, its rounds started with ``start_round`` and collected with
``finish_rounds`` — and prints the progress table; its :class:`TuneSummary` carries
:class:`TuningCounts` (what failed during the run).

**Search and front doors.** :class:`SpaceGenerator` (:mod:`irc.tune.space`: sketch
rules, sketches, postprocessors, trace mutators); the search-strategy seam
(:mod:`irc.tune.strategy`: a :class:`SearchStrategy` makes a :class:`TaskSearch` per task
from a :class:`SearchContext`) and its default implementation,
:class:`EvolutionaryStrategy` / :class:`EvolutionarySearch` (:mod:`irc.tune.search`, sized
by :class:`SearchOptions`); :class:`TuningEngine` (:mod:`irc.tune.engine`, the engine
both front doors use) run by :func:`tune_tasks` (:mod:`irc.tune.tuner`), configured by
:class:`TuneConfig` and :class:`TuneComponents` from :mod:`irc.tune.options`;
:mod:`irc.tune.apply` and :mod:`irc.tune.graph` (tuned schedules back into functions and
graph modules); the front doors :mod:`irc.tune.ms` and :mod:`irc.tune.auto_scheduler`
are imported as submodules.

**Logging.** What the tuner decides on its own — a failed candidate, a record that cannot
be replayed, a default rule that fails, a search worker that fails, a task left with its
default schedule — is logged on the ``irc.tune`` logger (and ``irc.dlight`` for default
rules); ``logging.basicConfig(level=logging.INFO)`` shows it.

Importing irc (or this package) never imports xgboost.
"""

from .apply import LayoutRewriteOption, schedule_from_record, with_transform_stage
from .builder import LocalBuilder
from .cost_model import (
    CostModel,
    NumpyModel,
    RandomModel,
    XGBModel,
    create_cost_model,
    xgboost_available,
)
from .database import (
    Database,
    JSONDatabase,
    LoadReport,
    SQLiteDatabase,
    distill,
    open_database,
)
from .engine import TuningEngine
from .features import FEATURE_NAMES, NUM_FEATURES, extract_features, lower_for_features
from .measure import (
    Builder,
    BuildResult,
    MeasureInput,
    MeasureResult,
    ProgramMeasurer,
    RecordToDatabase,
    Runner,
    RunResult,
    apply_trace,
)
from .options import SearchOptions, TuneComponents, TuneConfig
from .record import MeasureErrorKind, TuningRecord, Workload, trace_key, workload_key
from .runner import LocalRunner
from .search import EvolutionarySearch, EvolutionaryStrategy
from .space import SpaceGenerator
from .strategy import SearchContext, SearchStrategy, TaskSearch
from .task import BlockDAG, TuneTask, extract_tasks, flop_count
from .task_scheduler import FinishedRound, TaskScheduler, TaskTuner, TuneSummary, TuningCounts
from .tuner import tune_tasks
