"""``irc.tune.auto_scheduler``: the Ansor-style front door (seeds 000, 002 and 004).

::

    @auto_scheduler.register_workload
    def matmul_add(N, L, M, dtype): ...           # te.placeholder / te.compute

    task = auto_scheduler.SearchTask(func=matmul_add, args=(1024, 1024, 1024, "float32"),
                                     target="llvm")
    print(task.compute_dag)
    task.tune(auto_scheduler.TuningOptions(
        num_measure_trials=64, measure_callbacks=[auto_scheduler.RecordToFile("matmul.json")]))
    sch, args = task.apply_best("matmul.json")
    f = irc.build(sch, args, target="llvm")
    print(task.print_best("matmul.json", print_mode="schedule"))

Everything runs on irc's one tuning engine (:mod:`irc.tune.tuner`): the record file of
``RecordToFile`` is the tuning database (JSON lines), so **resuming is the default** — a
run pointed at an existing file continues from it and never measures a candidate twice.

Layout-free weights (``attrs={"layout_free_placeholders": [B]}``) may be packed by the
tuned schedule. ``apply_best`` returns by default a schedule whose function takes the
weight in its original layout and packs it in a first stage
(``LayoutRewriteOption.INSERT_TRANSFORM_STAGE``), so seed 002's build-run-compare flow
works unchanged; ``layout_rewrite_option=REWRITE_FOR_PRE_TRANSFORMED`` returns the kernel
that takes the packed weight (its ``layout_rewrite`` attribute says how; pack with
:meth:`SearchTask.pack_weights`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from typing import Any, Callable, Sequence

from ..codegen import build
from ..core.diagnostics import TuningError
from ..core.target import Target
from ..tir.schedule import Trace, pack_params
from ..tir.stmt import PrimFunc
from ..tir.te import ComputeDAG
from ..vm import link
from .apply import LayoutRewriteOption, replay_best
from .builder import LocalBuilder
from .cluster import RayRunner, RunnerPool
from .cost_model import CostModel, RandomModel, XGBModel
from .database import Database, open_database
from .graph import apply_database, default_schedules, graph_tasks, prepare_graph
from .measure import RecordToDatabase, measuring_hardware
from .options import SearchOptions, TuneComponents, TuneConfig
from .runner import LocalRunner
from .search import EvolutionaryStrategy, banner
from .task import BlockDAG, TuneTask
from .tuner import tune_tasks

# ---------------------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------------------

WORKLOAD_FUNC_REGISTRY: dict[str, Callable] = {}


def register_workload(func_name: Any = None, f: Callable | None = None,
                      override: bool = False) -> Any:
    """Register a function returning te tensors (inputs and outputs) as a workload, by
    its name. Use as ``@register_workload``, ``@register_workload("name")`` or
    ``register_workload("name", f)``."""

    def register(name: str, fn: Callable) -> Callable:
        if not callable(fn):
            raise TuningError(f"register_workload: {fn!r} is not a function")
        if name in WORKLOAD_FUNC_REGISTRY and not override and \
                WORKLOAD_FUNC_REGISTRY[name] is not fn:
            raise TuningError(f"a workload named {name!r} is already registered",
                              hint="pass override=True to replace it")
        WORKLOAD_FUNC_REGISTRY[name] = fn
        return fn

    if callable(func_name) and f is None:
        return register(func_name.__name__, func_name)
    if isinstance(func_name, str):
        if f is not None:
            return register(func_name, f)
        return lambda fn: register(func_name, fn)
    raise TuningError("register_workload takes a function or a name")


def _json_args(args: Sequence[Any]) -> list:
    def conv(x: Any) -> Any:
        if isinstance(x, (list, tuple)):
            return [conv(y) for y in x]
        if isinstance(x, (int, float, str, bool)) or x is None:
            return x
        raise TuningError(f"workload argument {x!r} is not a number, string or tuple; "
                          "search task arguments must be JSON values")
    return [conv(a) for a in args]


# ---------------------------------------------------------------------------------------
# Options, measurement, callbacks
# ---------------------------------------------------------------------------------------


class RecordToFile:
    """Record every measured candidate to a JSON-lines file (the task's tuning database;
    its workloads go to ``<file>.workloads.json``)."""

    def __init__(self, filename: str):
        self.filename = os.fspath(filename)


class LocalRPCMeasureContext:
    """Measurement in an isolated local process (seed 000): ``.runner`` is a
    :class:`~irc.tune.LocalRunner` with these options; deleting the context (or
    :meth:`close`) stops the process."""

    def __init__(self, priority: int = 1, n_parallel: int = 1, timeout: float = 10,
                 number: int = 3, repeat: int = 1, min_repeat_ms: float = 0,
                 cooldown_interval: float = 0.0, enable_cpu_cache_flush: bool = False,
                 device: int = 0, check_correctness: bool = True):
        del priority, n_parallel, device  # one local device; kept for compatibility
        self.runner = LocalRunner(timeout=timeout, number=number, repeat=repeat,
                                  min_repeat_ms=min_repeat_ms,
                                  cooldown_interval_ms=cooldown_interval * 1e3,
                                  enable_cpu_cache_flush=enable_cpu_cache_flush,
                                  check_correctness=check_correctness)

    def close(self) -> None:
        """Stop the measurement process."""
        self.runner.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class TuningOptions:
    """Options of a tuning run: ``num_measure_trials`` (the budget; 0 measures
    nothing), ``early_stopping`` (stop a task after that many trials without
    improvement), ``num_measures_per_round`` (None: a size that lets the cost model learn
    early), ``verbose`` (0 silent, 1 the search log, 2 also progress marks),
    ``builder``/``runner`` ("local" or objects), ``measure_callbacks`` (e.g.
    :class:`RecordToFile`), and ``time_budget`` seconds (irc's addition)."""

    def __init__(self, num_measure_trials: int = 0, early_stopping: int | None = None,
                 num_measures_per_round: int | None = None, verbose: int = 1,
                 builder: Any = "local", runner: Any = "local",
                 measure_callbacks: Sequence[Any] | None = None,
                 time_budget: float | None = None, seed: int = 0):
        if not isinstance(num_measure_trials, int) or num_measure_trials < 0:
            raise TuningError(f"num_measure_trials must be a non-negative integer, got "
                              f"{num_measure_trials!r}")
        if num_measures_per_round is not None and num_measures_per_round < 1:
            raise TuningError("num_measures_per_round must be at least 1")
        if early_stopping is not None and early_stopping < 1:
            raise TuningError("early_stopping must be a positive number of trials")
        for name, value in (("builder", builder), ("runner", runner)):
            if isinstance(value, str) and value != "local":
                raise TuningError(f"TuningOptions {name}={value!r}: only 'local' (or a "
                                  f"{name} object) is supported")
        self.num_measure_trials = num_measure_trials
        self.early_stopping = early_stopping
        self.num_measures_per_round = num_measures_per_round
        self.verbose = int(verbose)
        self.builder = builder
        self.runner = runner
        self.measure_callbacks = list(measure_callbacks or [])
        self.time_budget = time_budget
        self.seed = seed

    def record_files(self) -> list[str]:
        """The files of the RecordToFile callbacks."""
        return [cb.filename for cb in self.measure_callbacks if isinstance(cb, RecordToFile)]


class PreloadMeasuredStates:
    """An init-search callback: the search starts from the records of ``filename``
    (never measuring them again; its cost model learns from them)."""

    def __init__(self, filename: str):
        self.filename = os.fspath(filename)


class SketchPolicy:
    """The search policy of a task: sketch generation and evolutionary search with
    ``program_cost_model`` (default: XGBoost when installed);
    ``init_search_callbacks`` run before searching (:class:`PreloadMeasuredStates`).
    ``params`` may set ``population_size``, ``num_iters``, ``eps_greedy``, ... (the
    fields of :class:`irc.tune.options.SearchOptions`, or Ansor's names for them)."""

    def __init__(self, task: SearchTask, program_cost_model: Any = None,
                 params: dict | None = None, seed: int | None = None, verbose: int = 1,
                 init_search_callbacks: Sequence[Any] | None = None):
        self.task = task
        self.cost_model = program_cost_model
        self.params = dict(params or {})
        self.seed = seed
        self.verbose = verbose
        self.init_search_callbacks = list(init_search_callbacks or [])


# ---------------------------------------------------------------------------------------
# Search tasks
# ---------------------------------------------------------------------------------------


class SearchTask:
    """A workload to tune for a target.

    Either ``func`` (a registered workload function or its name) with ``args``, whose te
    tensors form :attr:`compute_dag`; or ``prim_func`` (a loop function, as
    :func:`extract_tasks` makes). ``layout_rewrite_option`` sets how :meth:`apply_best`
    hands back layout-rewritten weights (default ``INSERT_TRANSFORM_STAGE``).
    """

    def __init__(self, func: Any = None, args: Sequence[Any] | None = None,
                 compute_dag: Any = None, workload_key: str | None = None,
                 target: Any = None, target_host: Any = None, hardware_params: Any = None,
                 layout_rewrite_option: int | None = None, task_inputs: Any = None,
                 desc: str = "", prim_func: PrimFunc | None = None, weight: int = 1):
        del target_host, hardware_params, task_inputs  # host CPU only; kept for compatibility
        self.target = Target.canon(target if target is not None else
                                   (Target.current() or "llvm"))
        self.layout_rewrite_option = LayoutRewriteOption.INSERT_TRANSFORM_STAGE \
            if layout_rewrite_option is None else layout_rewrite_option
        self.tensors: list | None = None
        self._dag = None
        if prim_func is not None:
            if not isinstance(prim_func, PrimFunc):
                raise TuningError(f"prim_func must be a PrimFunc, got {type(prim_func).__name__}")
            self.func = prim_func
            self.name = desc or str(prim_func.attrs.get("global_symbol", "main"))
            self._dag = BlockDAG(prim_func)
            self._workload_key = workload_key or self._dag.workload_key()
        else:
            if compute_dag is not None:
                dag = compute_dag
                name = desc or "compute_dag"
                key_args = None
            else:
                if func is None:
                    raise TuningError("SearchTask needs func= (a registered workload) with "
                                      "args=, a compute_dag=, or a prim_func=")
                if isinstance(func, str):
                    fn = WORKLOAD_FUNC_REGISTRY.get(func)
                    if fn is None:
                        raise TuningError(f"no workload named {func!r} is registered",
                                          hint="decorate it with "
                                               "@auto_scheduler.register_workload")
                    name = func
                else:
                    fn = func
                    name = getattr(func, "__name__", "workload")
                    if WORKLOAD_FUNC_REGISTRY.get(name) is not fn:
                        register_workload(name, fn, override=True)
                args = tuple(args or ())
                tensors = fn(*args)
                if not isinstance(tensors, (list, tuple)):
                    raise TuningError(f"workload {name!r} must return a list of te tensors "
                                      "(inputs and outputs)")
                dag = ComputeDAG(list(tensors))
                key_args = _json_args(args)
            self._dag = dag
            self.tensors = list(dag.tensors)
            self.func = dag.create_prim_func()
            self.name = desc or name
            self._workload_key = workload_key or (json.dumps([name, *key_args])
                                                  if key_args is not None
                                                  else dag.workload_key())
        self.desc = desc or self.name
        self.weight = weight
        self.tune_task = TuneTask(self.func, self.target, name=self.name, weight=weight)

    # -- description ----------------------------------------------------------------------
    @property
    def compute_dag(self) -> Any:
        """The computation, printed one stage per line (seed 002's ``Computational
        DAG``)."""
        return self._dag

    @property
    def workload_key(self) -> str:
        """``["name", args...]`` for registered workloads, ``["<hash>", shapes...]`` for
        extracted ones."""
        return self._workload_key

    @property
    def flop_ct(self) -> float:
        """Floating-point operations of one run."""
        return self.tune_task.flop_count

    def __repr__(self) -> str:
        return f"SearchTask({self.workload_key}, target={self.target})"

    # -- tuning ---------------------------------------------------------------------------
    def tune(self, tuning_options: TuningOptions, search_policy: SketchPolicy | None = None
             ) -> None:
        """Search and measure up to ``num_measure_trials`` candidates, recording them."""
        _tune([self], None, tuning_options, search_policy)

    # -- results --------------------------------------------------------------------------
    def _best(self, log_file: str, option: int | None = None) -> tuple[Any, Any]:
        """``(record, schedule)`` of the fastest record in ``log_file`` that replays
        (records that cannot be replayed are skipped with a warning)."""
        if not os.path.exists(log_file):
            raise TuningError(f"no tuning records at {log_file}", hint="tune the task first")
        db = open_database(log_file, self.target)
        try:
            best = replay_best(self.func, db,
                               self.layout_rewrite_option if option is None else option,
                               self.tune_task.name, self.tune_task.workload.key)
        finally:
            db.close()
        if best is None:
            raise TuningError(f"{log_file} has no valid record of {self.workload_key} for "
                              f"{self.target} that can be replayed",
                              hint="tune the task (more trials) first")
        return best

    def apply_best(self, log_file: str, include_compatible: bool = False,
                   layout_rewrite_option: int | None = None) -> tuple[Any, list]:
        """``(sch, args)``: an ``irc.tir.Schedule`` of the fastest record in
        ``log_file`` (that can be replayed) and the tensors of the function's signature,
        for ``irc.lower(sch, args)`` and ``irc.build(sch, args, target)``."""
        del include_compatible
        _, sch = self._best(os.fspath(log_file), layout_rewrite_option)
        args = self.tensors if self.tensors is not None else list(sch.mod["main"].buffers)
        return sch, args

    def pack_weights(self, sch: Any, *arrays: Any) -> list:
        """The call arguments of ``sch``'s function from arrays in their original layouts
        (layout-rewritten weights packed; see ``REWRITE_FOR_PRE_TRANSFORMED``)."""
        return pack_params(sch.mod["main"], *arrays)

    def print_best(self, log_file: str, print_mode: str = "schedule") -> str:
        """The best schedule as Python (``print_mode="schedule"``), the generated LLVM IR
        (``"llvm"``, CPU tasks) or CUDA C (``"cuda"``, CUDA tasks)."""
        if print_mode not in ("schedule", "llvm", "cuda"):
            raise TuningError(f"unknown print_mode {print_mode!r}; use 'schedule', 'llvm' "
                              "or 'cuda'")
        kind = self.target.kind.name
        if print_mode in ("llvm", "cuda") and print_mode != kind:
            raise TuningError(f"print_mode={print_mode!r} prints code for the "
                              f"{print_mode} target, but this task is for {self.target}",
                              hint="use print_mode='llvm' for CPU tasks and 'cuda' for GPU "
                                   "tasks")
        rec, sch = self._best(os.fspath(log_file))
        if print_mode == "llvm":
            return build(sch.mod, target=self.target).llvm_ir
        if print_mode == "cuda":
            return build(sch.mod, target=self.target).get_source("cuda")
        if rec.is_default:
            return "# the unscheduled function is the fastest measured: no schedule\n"
        return Trace.from_json(rec.trace).as_python() + "\n"


def RPCRunner(key: str, host: str, port: int, priority: int = 1, n_parallel: int = 1,
              timeout: float = 10, number: int = 3, repeat: int = 1,
              min_repeat_ms: float = 0, cooldown_interval: float = 0.0,
              enable_cpu_cache_flush: bool = False, check_correctness: bool = False
              ) -> Any:
    """Measurement on remote devices (seed 004's tip for users with several devices).
    irc's "tracker" is a Ray cluster (:mod:`irc.tune.cluster`): ``host:port`` is its head
    node's address and ``key`` the custom resource the measuring machines were started
    with (``ray start --address HOST:PORT --resources='{"KEY": 1}'``); one runner per
    unit of that resource, each measuring one candidate at a time. Returns a
    :class:`~irc.tune.cluster.RayRunner` to pass as ``TuningOptions(runner=...)``; the
    builds run on this machine's :class:`LocalBuilder` (or pass the cluster's builder,
    ``irc.tune.cluster.RayBuilder``, to build there too). ``priority`` and
    ``n_parallel`` have no equivalent (Ray schedules; the runners of ``key`` measure in
    parallel) and are accepted for compatibility."""
    del priority, n_parallel
    if not isinstance(key, str) or not key:
        raise TuningError(f"RPCRunner's key names the measuring machines' Ray resource, "
                          f"got {key!r}")
    return RayRunner(f"{host}:{int(port)}", [RunnerPool({key: 1})], timeout=timeout,
                     number=number, repeat=repeat, min_repeat_ms=min_repeat_ms,
                     cooldown_interval_ms=cooldown_interval * 1e3,
                     enable_cpu_cache_flush=enable_cpu_cache_flush,
                     check_correctness=check_correctness)


# ---------------------------------------------------------------------------------------
# Tuning (one task or many)
# ---------------------------------------------------------------------------------------


def _make_builder(value: Any) -> Any:
    if value is None or value == "local":
        return None
    return value


def _preload(engine: Any, sources: Sequence[str], tasks: Sequence[SearchTask],
             verbose: int, out: Any) -> None:
    """Warm the engine's searches and cost model from other record files."""
    if not sources:
        return
    if verbose:
        print(banner("Call init-search callbacks"), file=out, flush=True)
    for path in sources:
        if not os.path.exists(path):
            raise TuningError(f"PreloadMeasuredStates: no record file at {path}")
        db = open_database(path, engine.target)
        try:
            for i, t in enumerate(tasks):
                records = db.records_of(t.tune_task.workload)
                if verbose:
                    print(f"SearchPolicy: Loaded {len(records)} measurement records from "
                          f"{path} for {t.workload_key}", file=out, flush=True)
                own = engine.database.location
                if records and (not own or os.path.abspath(path) != os.path.abspath(own)):
                    engine.preload(i, db)
        finally:
            db.close()


def _tune(tasks: Sequence[SearchTask], weights: Sequence[float] | None,
          options: TuningOptions, policy: SketchPolicy | None,
          load_log_file: str | None = None, strategy: str = "gradient") -> Any:
    if not isinstance(options, TuningOptions):
        raise TuningError(f"tune() takes auto_scheduler.TuningOptions, got "
                          f"{type(options).__name__}")
    files = options.record_files()
    out = sys.stdout
    others = [cb for cb in options.measure_callbacks if not isinstance(cb, RecordToFile)]
    for cb in others:
        if not callable(cb):
            raise TuningError(f"measure callback {cb!r} is not callable; use RecordToFile or "
                              "a function (inputs, results)")
    # Every option is checked before a file or directory is opened, so bad options leave
    # nothing open behind them.
    cost_model: CostModel | str = "auto"
    search_options: dict = {}
    seed = options.seed
    preload = [load_log_file] if load_log_file else []
    if policy is not None:
        if policy.cost_model is not None:
            cost_model = policy.cost_model
        search_options.update(policy.params)
        if policy.seed is not None:
            seed = policy.seed
        for cb in policy.init_search_callbacks:
            if isinstance(cb, PreloadMeasuredStates):
                preload.append(cb.filename)
            else:
                raise TuningError(f"unsupported init-search callback {cb!r}; use "
                                  "PreloadMeasuredStates")
    runner = options.runner if not isinstance(options.runner, str) else None
    config = TuneConfig(options.num_measure_trials,
                        num_trials_per_iter=options.num_measures_per_round,
                        time_budget=options.time_budget,
                        early_stopping=options.early_stopping,
                        task_weights=None if weights is None else tuple(weights),
                        task_scheduling=strategy, seed=seed, verbose=options.verbose, out=out)
    strategy_object = EvolutionaryStrategy(SearchOptions.from_dict(search_options))
    components = TuneComponents(builder=_make_builder(options.builder), runner=runner,
                                cost_model=cost_model, search_strategy=strategy_object,
                                callbacks=tuple(others))
    tmp = None
    extra: list[RecordToDatabase] = []
    db = None
    try:
        if files:
            db_path = files[0]
        else:
            tmp = tempfile.TemporaryDirectory(prefix="irc-tune-")
            db_path = os.path.join(tmp.name, "records.json")
        for f in files[1:]:
            extra.append(RecordToDatabase(f))
        db = open_database(db_path, measuring_hardware(components.runner, tasks[0].target))
        components = dataclasses.replace(components, callbacks=(*extra, *others))
        summary, engine = tune_tasks(
            [t.tune_task for t in tasks], db, config, components,
            before=lambda eng: _preload(eng, preload, tasks, options.verbose, out))
    finally:
        for cb in extra:
            cb.database.close()
        if db is not None:
            db.close()
        if tmp is not None:
            tmp.cleanup()
    return summary, engine


class TaskScheduler:
    """Tunes several tasks under one budget, giving trials to the task that most
    reduces the estimated end-to-end latency ``sum(weight * latency)`` (seed 004's
    table is printed after each round). ``load_log_file`` resumes from a record file."""

    def __init__(self, tasks: Sequence[SearchTask], task_weights: Sequence[float] | None = None,
                 objective_func: Any = None, strategy: str = "gradient",
                 load_model_file: str | None = None, load_log_file: str | None = None,
                 alpha: float = 0.2, beta: float = 2, gamma: float = 0.5,
                 backward_window_size: int = 3, callbacks: Any = None):
        del objective_func, load_model_file, alpha, beta, gamma, backward_window_size, callbacks
        self.tasks = list(tasks)
        if not self.tasks:
            raise TuningError("TaskScheduler needs at least one task")
        self.task_weights = list(task_weights) if task_weights is not None else \
            [t.weight for t in self.tasks]
        self.strategy = strategy
        self.load_log_file = load_log_file
        self.summary = None  # the task scheduler's TuneSummary after tune()
        self.engine = None  # the (closed) TuningEngine, with its counters

    def tune(self, tuning_options: TuningOptions, search_policy: Any = "default",
             search_policy_params: dict | None = None, adaptive_training: bool = False,
             per_task_early_stopping: int | None = None) -> None:
        """Tune every task within ``tuning_options.num_measure_trials`` trials."""
        del adaptive_training
        policy = None
        if search_policy_params:
            policy = SketchPolicy(self.tasks[0], params=search_policy_params)
        if per_task_early_stopping is not None and tuning_options.early_stopping is None:
            tuning_options.early_stopping = per_task_early_stopping
        self.summary, self.engine = _tune(self.tasks, self.task_weights, tuning_options,
                                          policy, load_log_file=self.load_log_file,
                                          strategy=self.strategy)


# ---------------------------------------------------------------------------------------
# Networks
# ---------------------------------------------------------------------------------------


def extract_tasks(mod: Any, params: Any = None, target: Any = None,
                  include_simple_tasks: bool = False, **kwargs: Any
                  ) -> tuple[list[SearchTask], list[int]]:
    """The search tasks of a graph module (``mod`` or ``mod["main"]``) with ``params``
    bound, and their weights (calls per run): one task per distinct fused loop function
    of the module ``irc.compile`` would build."""
    del kwargs
    t = Target.canon(target if target is not None else (Target.current() or "llvm"))
    prepared = prepare_graph(mod, params, t)
    tasks = graph_tasks(prepared, t, include_simple=include_simple_tasks)
    search_tasks = [SearchTask(prim_func=tt.func, target=t, desc=tt.name, weight=tt.weight)
                    for tt in tasks]
    return search_tasks, [tt.weight for tt in tasks]


class ApplyHistoryBest:
    """The best records of a log file (or Database), applied to graph modules:
    ``compile(mod, target, params)`` builds an ``irc.vm.Executable`` with them;
    ``apply(mod)`` (or calling the object) returns a prepared module with the tuned
    schedules in place. Also a context manager: inside ``with ApplyHistoryBest(log):``,
    :func:`compile` uses it."""

    _stack: list[ApplyHistoryBest] = []

    def __init__(self, records: Any):
        if isinstance(records, (str, os.PathLike)) and not os.path.exists(records):
            raise TuningError(f"ApplyHistoryBest: no record file at {os.fspath(records)}")
        self.records = records

    def _db(self, target: Any) -> Database:
        if isinstance(self.records, Database):
            return self.records
        return open_database(self.records, target)

    def apply(self, mod: Any, params: Any = None, target: Any = None) -> Any:
        """``mod`` prepared for ``target`` (weights bound, default pipeline) with the best
        schedules in place."""
        t = Target.canon(target if target is not None else (Target.current() or "llvm"))
        db = self._db(t)
        try:
            return apply_database(prepare_graph(mod, params, t), db, t)
        finally:
            if db is not self.records:
                db.close()

    __call__ = apply

    def compile(self, mod: Any, target: Any = "llvm", params: Any = None) -> Any:
        """Build ``mod`` with the best schedules: an ``irc.vm.Executable``."""
        t = Target.canon(target)
        return link(default_schedules(self.apply(mod, params, t), t), t)

    def __enter__(self) -> ApplyHistoryBest:
        ApplyHistoryBest._stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        ApplyHistoryBest._stack.remove(self)


def compile(mod: Any, target: Any = "llvm", params: Any = None) -> Any:
    """``irc.compile`` with the schedules of the innermost ``ApplyHistoryBest`` context
    (seed 004's ``with ApplyHistoryBest(log): build(...)``)."""
    if not ApplyHistoryBest._stack:
        raise TuningError("auto_scheduler.compile needs an ApplyHistoryBest context",
                          hint="with auto_scheduler.ApplyHistoryBest(log_file): "
                               "ex = auto_scheduler.compile(mod, target, params)")
    return ApplyHistoryBest._stack[-1].compile(mod, target, params)


__all__ = [
    "ApplyHistoryBest", "LayoutRewriteOption", "LocalBuilder", "LocalRPCMeasureContext",
    "LocalRunner", "PreloadMeasuredStates", "RPCRunner", "RandomModel", "RecordToFile",
    "SearchTask", "SketchPolicy", "TaskScheduler", "TuningOptions", "WORKLOAD_FUNC_REGISTRY",
    "XGBModel", "compile", "extract_tasks", "register_workload",
]
