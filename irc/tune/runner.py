"""LocalRunner: time each candidate in an isolated, persistent process, one at a time.

The runner process loads a candidate's module, fills its buffers with random data (the
same data for every candidate of a workload), and, when the kernel is about to start,
tells the tuner, whose ``timeout`` clock starts only then: waiting, loading and computing
reference outputs do not count (they have their own ``setup_timeout``). Timing follows
``time_evaluator``: ``number`` runs per repeat, ``repeat`` repeats, each repeat at least
``min_repeat_ms`` long; with ``enable_cpu_cache_flush`` the caches are flushed before each
repeat (then ``min_repeat_ms`` is not used). With ``check_correctness`` the candidate's
outputs are first compared with those of the unscheduled function (compiled with LLVM and
run once per workload in the runner process) on the same random inputs.

Outcomes: a crash (segfault, abort) kills only the runner process → ``RUN_ERROR`` with the
signal and the process's last output, and a fresh process serves the next candidate; a
kernel running past ``timeout`` → ``RUN_TIMEOUT`` (the process is killed); a run-time check
failing inside the kernel → ``RUN_ERROR``; different outputs → ``WRONG_RESULT``.

Layout-rewritten weights (``Schedule.layout_rewrite``, seed 002's layout-free
placeholders): when a candidate's function records a rewrite (attribute
``layout_rewrite``), the random inputs are made in the original layout (the unscheduled
function's) and the rewritten parameters are packed into the candidate's layout before
each call, so every candidate of a workload sees the same data and can be checked
against the reference.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from ..codegen import build
from ..core import dtype as dt
from ..core.diagnostics import IRCError, TuningError
from ..core.functor import Visitor
from ..core.target import Target
from ..dlight import default_rules_for, schedule_func
from ..runtime import cuda_program
from ..runtime.cuda_backend import CUDAError
from ..runtime.device import cuda as cuda_device
from ..runtime.module import Module
from ..runtime.ndarray import aligned_empty, tensor
from ..runtime.timer import time_evaluator
from ..tir import expr as E
from ..tir.schedule.index_map import IndexMap
from ..tir.stmt import PrimFunc
from ._worker import TaskFailure, notify
from .builder import serialize_for_runner
from .measure import (
    RUN_ERROR,
    RUN_TIMEOUT,
    WRONG_RESULT,
    BuildResult,
    MeasureInput,
    Runner,
    RunResult,
)
from .worker_pool import WorkerDied, WorkerProcess, WorkerTimeout

_REFERENCE_CACHE_SIZE = 4
# Enough to evict a 32 MiB last-level cache (twice its size).
_FLUSH_BYTES = 64 << 20


# ---------------------------------------------------------------------------------------
# Which parameters a function writes
# ---------------------------------------------------------------------------------------


class _WrittenBuffers(Visitor):
    def __init__(self) -> None:
        self.data_vars: set[int] = set()

    def visit_BufferStore(self, s: Any) -> None:
        self.data_vars.add(id(s.buffer.data))
        self.generic_visit(s)

    def visit_Block(self, b: Any) -> None:
        for region in b.writes:
            self.data_vars.add(id(region.buffer.data))
        self.generic_visit(b)


def output_params(func: PrimFunc) -> list[int]:
    """Positions of the parameters whose buffers ``func`` writes (its outputs)."""
    v = _WrittenBuffers()
    v.visit(func.body)
    out = []
    for i, p in enumerate(func.params):
        buf = func.buffer_map.get(p)
        if buf is not None and id(buf.data) in v.data_vars:
            out.append(i)
    return out


# ---------------------------------------------------------------------------------------
# Worker side
# ---------------------------------------------------------------------------------------


class _Reference:
    """Random inputs of a workload and the unscheduled function's outputs on them."""

    def __init__(self, arrays: list[np.ndarray], expected: dict[int, np.ndarray] | None):
        self.arrays = arrays
        self.expected = expected


_references: OrderedDict[str, _Reference] = OrderedDict()
_flush_buffer: np.ndarray | None = None


def _buffer_specs_of(function: Any, shapes: dict[int, tuple] | None = None
                     ) -> list[tuple[str, tuple]]:
    """``(dtype, shape)`` of each parameter of a compiled CPU function (``shapes``
    overrides some positions: the original layout of layout-rewritten parameters)."""
    sig = function.signature
    if sig.scalars or sig.shape_vars:
        raise TaskFailure(RUN_ERROR, f"{sig.name} has scalar parameters or symbolic shapes; "
                                     "only functions of static-shape buffers can be measured")
    return [(sig.buffers[i].dtype, (shapes or {}).get(pos, tuple(sig.buffers[i].shape)))
            for pos, (_, i) in enumerate(sig.order)]


def buffer_specs(func: PrimFunc) -> list[tuple[str, tuple]]:
    """``(dtype, shape)`` of each parameter of ``func`` (the tuner sends these for GPU
    candidates, whose compiled form has no CPU signature); an IRCError when a parameter
    is a scalar or a shape is symbolic."""
    specs = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None or not all(isinstance(d, E.IntImm) for d in buf.shape):
            raise TuningError(f"{p.name} is a scalar parameter or has a symbolic shape; only "
                              "functions of static-shape buffers can be measured")
        specs.append((str(buf.dtype), tuple(int(d.value) for d in buf.shape)))
    return specs


def _random_arrays(specs: list[tuple[str, tuple]], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for dtype, shape in specs:
        np_dtype = dt.to_numpy(dtype)
        arr = aligned_empty(tuple(shape), np_dtype)
        if dt.is_float(dtype) and dtype != "bfloat16":
            arr[...] = rng.uniform(0.0, 1.0, size=arr.shape).astype(np_dtype)
        elif np_dtype.kind == "b":
            arr[...] = rng.integers(0, 2, size=arr.shape).astype(bool)
        else:
            # Small integers: index inputs (gather, one-hot) stay in range.
            arr[...] = rng.integers(0, 2, size=arr.shape).astype(np_dtype)
        arrays.append(arr)
    return arrays


def _load_function(artifact: bytes) -> Any:
    try:
        module = Module.deserialize(artifact)
        return module.get_function(module.entry_name)
    except IRCError as err:
        raise TaskFailure(RUN_ERROR, f"cannot load the compiled candidate: {err}") from None


def _call(function: Any, arrays: list[np.ndarray]) -> None:
    try:
        function(*arrays)
    except IRCError as err:
        raise TaskFailure(RUN_ERROR, f"the kernel failed: {err}") from None


def _reference(key: str, ref_artifact: bytes | None, specs: Any, outputs: list[int],
               seed: int, check: bool) -> _Reference:
    """The random inputs of workload ``key`` (``specs``: ``(dtype, shape)`` per
    parameter, or a callable giving them) and, with ``check``, the outputs of the
    reference (``ref_artifact``, a CPU module: the unscheduled function, or for GPU
    candidates the workload with its CPU default schedule) on them."""
    ref = _references.get(key)
    if ref is not None and (ref.expected is not None or not check):
        _references.move_to_end(key)
        return ref
    arrays = ref.arrays if ref is not None else \
        _random_arrays(specs() if callable(specs) else specs, seed)
    expected = None
    if check:
        if ref_artifact is None:
            raise TaskFailure(RUN_ERROR, "the runner process has no reference for this workload")
        notify("reference")
        ref_fn = _load_function(ref_artifact)
        work = [a.copy() for a in arrays]
        try:
            ref_fn(*work)
        except IRCError as err:
            raise TaskFailure(RUN_ERROR, "the unscheduled function failed while computing "
                                         f"reference outputs: {err}") from None
        expected = {i: work[i] for i in (outputs or range(len(work)))}
    ref = _Reference(arrays, expected)
    _references[key] = ref
    while len(_references) > _REFERENCE_CACHE_SIZE:
        _references.popitem(last=False)
    return ref


def _compare(names: list[str], got: list[np.ndarray], expected: dict[int, np.ndarray],
             rtol: float, atol: float) -> None:
    for i, want in expected.items():
        have = got[i]
        if have.dtype.kind in "fc":
            ok = np.allclose(have, want, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(have, want)
        if ok:
            continue
        diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
        diff = np.where(np.isnan(diff), np.inf, diff)
        where = np.unravel_index(int(np.argmax(diff)), diff.shape)
        bad = int(np.count_nonzero(~np.isclose(have, want, rtol=rtol, atol=atol,
                                               equal_nan=True))) if have.dtype.kind in "fc" \
            else int(np.count_nonzero(have != want))
        raise TaskFailure(WRONG_RESULT,
                          f"output {names[i]!r} differs from the unscheduled function's at "
                          f"{bad} of {have.size} elements; largest difference at index "
                          f"{tuple(int(x) for x in where)}: expected {want[where].item()!r}, got "
                          f"{have[where].item()!r} (rtol={rtol:g}, atol={atol:g})")


def _index_value(e: Any, env: dict[int, np.ndarray]) -> Any:
    """An index-map expression evaluated elementwise on integer grids."""
    t = type(e)
    if t is E.Var:
        return env[id(e)]
    if t is E.IntImm:
        return np.int64(e.value)
    ops = {E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply, E.FloorDiv: np.floor_divide,
           E.FloorMod: np.mod}
    if t not in ops:
        raise TaskFailure(RUN_ERROR, f"cannot evaluate {t.__name__} in a layout rewrite map")
    return ops[t](_index_value(e.a, env), _index_value(e.b, env))


def _pack_arrays(function: Any, arrays: list[np.ndarray], rewrites: list) -> list[np.ndarray]:
    """``arrays`` (original layouts) with each layout-rewritten parameter packed into the
    layout the candidate expects."""
    sig = function.signature
    out = [_aligned_copy(a) for a in arrays]
    for rw in rewrites:
        pos = int(rw["param"])
        src = arrays[pos]
        if tuple(src.shape) != tuple(rw["original_shape"]):
            raise TaskFailure(RUN_ERROR, f"parameter {pos} has shape {list(src.shape)}, but "
                                         f"its layout rewrite expects {rw['original_shape']}")
        imap = IndexMap.parse(rw["index_map"])
        grids = np.indices(src.shape, dtype=np.int64)
        env = {id(p): g for p, g in zip(imap.params, grids)}
        new_idx = tuple(np.broadcast_to(_index_value(o, env), src.shape) for o in imap.outputs)
        dst = aligned_empty(tuple(sig.buffers[sig.order[pos][1]].shape), src.dtype)
        dst[new_idx] = src
        out[pos] = dst
    return out


def _aligned_copy(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` whose data is aligned as kernels want it (a plain copy of a large
    array is not, and the kernel call would stage it into another copy)."""
    out = aligned_empty(a.shape, a.dtype)
    np.copyto(out, a)
    return out


def _flush_cpu_cache() -> None:
    global _flush_buffer
    if _flush_buffer is None:
        _flush_buffer = np.zeros(_FLUSH_BYTES // 8, dtype=np.int64)
    _flush_buffer += 1


# A cold-cache sample more than this many times the fastest of its candidate's samples
# is taken again (up to ``repeat`` extra samples in all): on a shared 2-core
# machine about 3% of single runs caught a stall of 2-5 ms (a kernel thread waiting
# for its core), and one such sample in the mean of three made a 0.5 ms kernel look
# 2-4x slower than it runs; defaults and candidates alike were mis-ranked by it.
STALL_RATIO = 1.5


def _time_flushing(function: Any, arrays: list[np.ndarray], number: int, repeat: int,
                   cooldown_ms: float) -> list[float]:
    """Seconds per run of ``repeat`` samples of ``number`` runs, each after a cache
    flush; a sample that caught a stall (see ``STALL_RATIO``) is replaced by a new one
    while the extra samples last."""
    # ``staged`` holds the aligned copies of misaligned arrays that ``native`` points
    # to: it must stay referenced while the kernel runs (a loop variable named ``_``
    # once rebound it, and candidates wrote into freed memory).
    native, staged = function.prepare(tuple(arrays))
    c = function.c_function
    if c(*native):
        raise TaskFailure(RUN_ERROR, "the kernel reported an error")

    def sample() -> float:
        _flush_cpu_cache()
        t0 = time.perf_counter()
        failed = 0
        for _run in range(number):
            failed |= c(*native)
        elapsed = time.perf_counter() - t0
        if failed:
            raise TaskFailure(RUN_ERROR, "the kernel reported an error")
        if cooldown_ms > 0:
            time.sleep(cooldown_ms / 1e3)
        return elapsed / number

    results = [sample() for _rep in range(repeat)]
    extra = repeat if repeat > 1 else 0
    while extra > 0:
        worst = max(range(repeat), key=results.__getitem__)
        if results[worst] <= STALL_RATIO * min(results):
            break
        results[worst] = sample()
        extra -= 1
    del staged
    return results


def run_candidate(spec: dict) -> list[float]:
    """Worker side of :class:`LocalRunner`: load, check and time one candidate; returns
    seconds per run of each repeat (raises TaskFailure with an error kind on failure)."""
    if spec.get("device") is not None:
        return _run_on_gpu(spec)
    function = _load_function(spec["artifact"])
    check = spec["check"]
    rewrites = spec.get("layout_rewrites")
    shapes = {int(rw["param"]): tuple(rw["original_shape"]) for rw in rewrites or ()}
    ref = _reference(spec["key"], spec.get("ref_artifact"),
                     lambda: _buffer_specs_of(function, shapes), spec["outputs"],
                     spec["seed"], check)
    if rewrites:
        arrays = _pack_arrays(function, ref.arrays, rewrites)
    else:
        arrays = [_aligned_copy(a) for a in ref.arrays]
    notify("started")
    if check:
        _call(function, arrays)
        _compare(function.signature.param_names(), arrays, ref.expected, spec["rtol"],
                 spec["atol"])
    number, repeat = spec["number"], spec["repeat"]
    if spec["flush"]:
        return _time_flushing(function, arrays, number, repeat, spec["cooldown_ms"])
    evaluator = time_evaluator(function, None, number=number, repeat=repeat,
                               min_repeat_ms=spec["min_repeat_ms"],
                               cooldown_interval_ms=spec["cooldown_ms"])
    try:
        return list(evaluator(*arrays).results)
    except IRCError as err:
        raise TaskFailure(RUN_ERROR, f"the kernel failed: {err}") from None


def _run_on_gpu(spec: dict) -> list[float]:
    """:func:`run_candidate` for a CUDA candidate: the inputs (made and checked on the
    CPU, as for CPU candidates) are copied to GPU ``spec["device"]``, the candidate runs
    there and is timed with CUDA events. A CUDA error fails the candidate; one that
    leaves the CUDA context unusable (an illegal address, a launch failure) also ends
    this process, so the next candidate gets a fresh one."""
    try:
        module = cuda_program.CUDAProgramModule.deserialize(spec["artifact"])
        function = module.get_function(module.entry_name)
    except IRCError as err:
        raise TaskFailure(RUN_ERROR, f"cannot load the compiled candidate: {err}") from None
    check = spec["check"]
    ref = _reference(spec["key"], spec.get("ref_artifact"), spec["buffers"], spec["outputs"],
                     spec["seed"], check)
    dev = cuda_device(int(spec["device"]))
    try:
        tensors = [tensor(a, dev) for a in ref.arrays]
        dev.sync()
        notify("started")
        if check:
            function(*tensors)
            dev.sync()
            # As the CPU arrays' storage dtype (Tensor.numpy() gives bfloat16 as ml_dtypes').
            _compare(spec["names"], [t.numpy().view(a.dtype) for t, a in zip(tensors, ref.arrays)],
                     ref.expected, spec["rtol"], spec["atol"])
        evaluator = time_evaluator(function, dev, number=spec["number"],
                                   repeat=spec["repeat"], min_repeat_ms=spec["min_repeat_ms"],
                                   cooldown_interval_ms=spec["cooldown_ms"])
        return list(evaluator(*tensors).results)
    except CUDAError as err:
        raise TaskFailure(RUN_ERROR, f"the kernel failed: {err}",
                          restart=err.sticky) from None
    except IRCError as err:
        raise TaskFailure(RUN_ERROR, f"the kernel failed: {err}") from None


# ---------------------------------------------------------------------------------------
# Tuner side
# ---------------------------------------------------------------------------------------


def _layout_rewrites_of(inp: MeasureInput) -> list[dict]:
    """The layout rewrites of a candidate's scheduled function (``[]`` when none); the
    trace is replayed only when it contains a LayoutRewrite instruction."""
    if inp.func is None:
        trace = inp.trace
        insts = trace[0] if isinstance(trace, list) and trace else ()
        if not any(isinstance(i, list) and i and i[0] == "LayoutRewrite" for i in insts):
            return []
    func = inp.scheduled_func()
    return [dict(e) for e in func.attrs.get("layout_rewrite", [])]



class LocalRunner(Runner):
    """Measure candidates one at a time in a persistent, isolated runner process.

    Parameters follow Ansor's LocalRunner: ``timeout`` (seconds a kernel may run,
    counted from its start; default 10), ``number`` (runs per repeat, default 3),
    ``repeat`` (default 1), ``min_repeat_ms`` (default 100), ``cooldown_interval_ms``,
    ``enable_cpu_cache_flush``; plus ``check_correctness`` (compare outputs with the
    unscheduled function on random inputs; ``rtol``/``atol`` for floats),
    ``setup_timeout`` (loading and computing reference outputs), ``seed`` (of the random
    inputs) and ``log_dir`` (keep the process's output there).

    CUDA candidates (built for a ``cuda`` target) run on GPU ``device_index`` with CUDA
    events as the clock; their reference outputs come from the unscheduled function
    compiled for the CPU; ``enable_cpu_cache_flush`` does not apply to them. A CUDA
    error is a ``RUN_ERROR`` record; after one that breaks the CUDA context (an illegal
    address, a launch failure) the runner process is replaced.
    """

    def __init__(self, timeout: float = 10.0, number: int = 3, repeat: int = 1,
                 min_repeat_ms: float = 100.0, cooldown_interval_ms: float = 0.0,
                 enable_cpu_cache_flush: bool = False, check_correctness: bool = False,
                 rtol: float = 1e-3, atol: float = 1e-3, setup_timeout: float = 120.0,
                 seed: int = 0, log_dir: str | None = None, device_index: int = 0):
        if timeout <= 0 or setup_timeout <= 0:
            raise TuningError("LocalRunner timeouts must be positive")
        if number < 1 or repeat < 1 or min_repeat_ms < 0:
            raise TuningError(f"LocalRunner needs number >= 1, repeat >= 1 and min_repeat_ms "
                              f">= 0, got number={number}, repeat={repeat}, "
                              f"min_repeat_ms={min_repeat_ms}")
        if not enable_cpu_cache_flush and min_repeat_ms * repeat / 1e3 >= timeout:
            raise TuningError(f"LocalRunner: {repeat} repeat(s) of at least {min_repeat_ms:g} ms "
                              f"cannot finish within the timeout of {timeout:g} s",
                              hint="raise timeout or lower min_repeat_ms/repeat")
        self.timeout = float(timeout)
        self.number = int(number)
        self.repeat = int(repeat)
        self.min_repeat_ms = float(min_repeat_ms)
        self.cooldown_interval_ms = float(cooldown_interval_ms)
        self.enable_cpu_cache_flush = bool(enable_cpu_cache_flush)
        self.check_correctness = bool(check_correctness)
        self.rtol, self.atol = float(rtol), float(atol)
        self.setup_timeout = float(setup_timeout)
        self.seed = int(seed)
        self.device_index = int(device_index)
        self._worker = WorkerProcess("runner", log_dir)
        self._references: OrderedDict[str, bytes] = OrderedDict()
        self._outputs: dict[str, list[int]] = {}
        # (worker generation, keys whose reference the process holds), in the process's
        # own least-recently-used order, so a key it has evicted is sent again.
        self._sent: tuple[int, OrderedDict[str, None]] = (0, OrderedDict())
        self.restarts = 0

    def start(self) -> None:
        """Start the runner process now (otherwise the first run starts it)."""
        if not self._worker.alive:
            self._worker.start()

    def _reference_artifact(self, inp: MeasureInput) -> bytes:
        key = inp.workload.key
        blob = self._references.get(key)
        if blob is None:
            func = inp.workload.func
            target = Target.canon(inp.target)
            if target.host is not None:
                # GPU candidates are checked on the CPU, against the workload with the
                # CPU's default schedule: unscheduled, a 4096^3 matmul would take minutes.
                target = target.host
                func = schedule_func(func, target, default_rules_for(target)) or func
            blob = serialize_for_runner(build(func, target=target, name="main"))
            self._references[key] = blob
            while len(self._references) > _REFERENCE_CACHE_SIZE:
                self._references.popitem(last=False)
        return blob

    def _spec(self, inp: MeasureInput, build: BuildResult) -> dict:
        key = inp.workload.key
        outputs = self._outputs.get(key)
        if outputs is None:
            outputs = self._outputs[key] = output_params(inp.workload.func)
        spec = {"artifact": build.artifact, "key": key, "outputs": outputs,
                "check": self.check_correctness, "seed": self.seed, "rtol": self.rtol,
                "atol": self.atol, "number": self.number, "repeat": self.repeat,
                "min_repeat_ms": self.min_repeat_ms, "cooldown_ms": self.cooldown_interval_ms,
                "flush": self.enable_cpu_cache_flush}
        if Target.canon(inp.target).kind.name == "cuda":
            func = inp.workload.func
            spec["device"] = self.device_index
            spec["buffers"] = buffer_specs(func)
            spec["names"] = [p.name for p in func.params]
        else:
            rewrites = _layout_rewrites_of(inp)
            if rewrites:
                spec["layout_rewrites"] = rewrites
        if self.check_correctness:
            gen, sent = self._sent
            if gen != self._worker.generation:
                sent = OrderedDict()
                self._sent = (self._worker.generation, sent)
            if key in sent:
                sent.move_to_end(key)
            else:
                spec["ref_artifact"] = self._reference_artifact(inp)
                sent[key] = None
                while len(sent) > _REFERENCE_CACHE_SIZE:
                    sent.popitem(last=False)
        return spec

    def run(self, inputs: Sequence[MeasureInput], builds: Sequence[BuildResult]
            ) -> list[RunResult]:
        if len(inputs) != len(builds):
            raise TuningError("LocalRunner.run needs one build result per input")
        return [self._run_one(inp, b) for inp, b in zip(inputs, builds)]

    def _run_one(self, inp: MeasureInput, build: BuildResult) -> RunResult:
        if build.error_kind or build.artifact is None:
            return RunResult(None, build.error_kind or RUN_ERROR,
                             build.error_msg or "the candidate was not built")
        t_start = time.monotonic()
        w = self._worker
        try:
            w.wait_ready()
            spec = self._spec(inp, build)
        except IRCError as err:
            return RunResult(None, RUN_ERROR, f"cannot prepare the measurement: {err}",
                             time.monotonic() - t_start)
        phase = "setup"
        try:
            w.send_call(__name__, "run_candidate", (spec,))
            deadline = time.monotonic() + self.setup_timeout
            while True:
                msg = w.recv(deadline)
                if msg[0] == "note":
                    phase = msg[1]
                    if phase == "started":
                        deadline = time.monotonic() + self.timeout
                    continue
                break
        except WorkerTimeout:
            self.restarts += 1
            wall = time.monotonic() - t_start
            if phase == "started":
                return RunResult(None, RUN_TIMEOUT, f"the kernel ran longer than the run "
                                                    f"timeout of {self.timeout:g} s", wall)
            what = ("computing reference outputs with the unscheduled function"
                    if phase == "reference" else "loading the candidate")
            return RunResult(None, RUN_ERROR, f"{what} took longer than {self.setup_timeout:g} s",
                             wall)
        except WorkerDied as err:
            self.restarts += 1
            wall = time.monotonic() - t_start
            where = {"started": "the kernel crashed: ",
                     "reference": "the unscheduled function crashed while computing "
                                  "reference outputs: "}.get(phase, "")
            return RunResult(None, RUN_ERROR, where + err.message, wall)
        wall = time.monotonic() - t_start
        if msg[0] == "ok":
            return RunResult(tuple(float(s) for s in msg[1]), run_wall_secs=wall)
        if len(msg) > 3 and msg[3]:
            # The process's state is broken (a faulted CUDA context); it has exited.
            self.restarts += 1
            w.kill()
        return RunResult(None, msg[1] or RUN_ERROR, msg[2], wall)

    def close(self) -> None:
        self._worker.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
