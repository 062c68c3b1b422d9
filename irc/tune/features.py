"""Features of scheduled loop functions for the cost model: one fixed-length vector per
store statement (in the spirit of Ansor's per-store features); a function is the set of
its stores' vectors, an array of shape ``(num_stores, NUM_FEATURES)``.

The function is first lowered up to (not including) vectorization and unrolling
(:func:`lower_for_features`): blocks are gone, buffers are flat and compacted, but
vectorized, unrolled and parallel loops are still loops whose kinds and extents the
features describe. A fully lowered function (with vector expressions) is accepted too.
For each ``BufferStore`` the features are, with ``P`` the product of the enclosing loop
extents (a loop pinned by an ``if v == 0`` guard, as reduction inits are, counts once):

- **computation** (16): operations of the stored expression, its loads' and its own index
  arithmetic, by type, times ``P`` and the vector lanes: float mad/add-sub/mul/div-mod/
  compare/math-function/other-function, the same seven for integers, boolean ops, selects;
- **loop kinds** (3 x 8): for vectorized, unrolled and parallel loops: how many, the
  product of their extents, the innermost one's extent, and its position (none, innermost,
  middle, outermost, several) as a one-hot; vector lanes of the store count as vectorized;
- **GPU** (8): extents bound to blockIdx.x/y/z, threadIdx.x/y/z, vthread, and is-GPU;
- **memory** (5 buffers x 18): for the five buffers with the most cache lines (the stored
  one and the loaded ones): access kind (read/write/read-write one-hot), bytes accessed,
  unique bytes, cache lines, unique lines, reuse kind (loop-carried read / serial
  read-write / none one-hot), reuse distance in iterations and bytes, reuse count, the
  four size features divided by the reuse count, and the innermost loop's stride;
- **arithmetic intensity curve** (10): float operations per touched byte for the loop
  nest cut at each level, sampled at ten points from innermost to outermost;
- **allocation** (4): for a store into a local allocation: its bytes, how many times it is
  allocated, the loop product outside and inside it;
- **other** (3): ``P``, the loop depth, the ``pragma_auto_unroll_max_step`` in effect.

Counts and sizes are ``log2(1 + x)``; one-hots are 0/1. Extraction is linear in the size
of the lowered function and never prints or parses IR.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import IRCError, TuningError
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.arith.affine import approximate_coefficients
from ..tir.stmt import PrimFunc
from ..tir.transform import LOWERING_PASSES

if TYPE_CHECKING:  # measure builds on this module
    from .measure import MeasureInput

logger = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------
# Layout of a feature vector
# ---------------------------------------------------------------------------------------

_OP_KINDS = ("mad", "addsub", "mul", "divmod", "cmp", "math_func", "other_func")
_POSITIONS = ("none", "inner", "middle", "outer", "mixed")
_LOOP_KINDS = ("vec", "unroll", "parallel")
_GPU = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
        "threadIdx.z", "vthread")
_BUFFER_FEATURES = ("acc_read", "acc_write", "acc_readwrite", "bytes", "unique_bytes",
                    "lines", "unique_lines", "reuse_loop", "reuse_serial", "reuse_none",
                    "reuse_dis_iter", "reuse_dis_bytes", "reuse_ct", "bytes_d_reuse_ct",
                    "unique_bytes_d_reuse_ct", "lines_d_reuse_ct",
                    "unique_lines_d_reuse_ct", "stride")
NUM_BUFFERS = 5
NUM_CURVE_POINTS = 10


def _names() -> tuple[str, ...]:
    names = [f"float_{k}" for k in _OP_KINDS] + [f"int_{k}" for k in _OP_KINDS]
    names += ["bool_op", "select_op"]
    for kind in _LOOP_KINDS:
        names += [f"{kind}_num", f"{kind}_prod", f"{kind}_len"]
        names += [f"{kind}_pos_{p}" for p in _POSITIONS]
    names += [f"gpu_{g}" for g in _GPU] + ["is_gpu"]
    for b in range(NUM_BUFFERS):
        names += [f"B{b}.{f}" for f in _BUFFER_FEATURES]
    names += [f"arith_intensity_{i}" for i in range(NUM_CURVE_POINTS)]
    names += ["alloc_size", "alloc_prod", "alloc_outer_prod", "alloc_inner_prod"]
    names += ["outer_prod", "num_loops", "auto_unroll_max_step"]
    return tuple(names)


FEATURE_NAMES: tuple[str, ...] = _names()
"""The name of each position of a feature vector."""
NUM_FEATURES = len(FEATURE_NAMES)
_INDEX = {n: i for i, n in enumerate(FEATURE_NAMES)}
_OP_BASE = 0
_LOOP_BASE = _INDEX["vec_num"]
_LOOP_STRIDE = 3 + len(_POSITIONS)
_GPU_BASE = _INDEX["gpu_blockIdx.x"]
_BUF_BASE = _INDEX["B0.acc_read"]
_CURVE_BASE = _INDEX["arith_intensity_0"]
_ALLOC_BASE = _INDEX["alloc_size"]
_OTHER_BASE = _INDEX["outer_prod"]
# Positions that are one-hot flags (not log-scaled).
_ONE_HOT = np.zeros(NUM_FEATURES, dtype=bool)
for _i, _n in enumerate(FEATURE_NAMES):
    if "_pos_" in _n or _n == "is_gpu" or _n.split(".")[-1] in (
            "acc_read", "acc_write", "acc_readwrite", "reuse_loop", "reuse_serial",
            "reuse_none"):
        _ONE_HOT[_i] = True

_CACHE_LINE = 64
_MATH_FUNCS = frozenset({
    "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
    "tanh", "sigmoid", "erf", "pow", "sin", "cos", "tan", "sinh", "cosh", "asin", "acos",
    "atan", "atan2", "asinh", "acosh", "atanh", "fabs", "floor", "ceil", "round",
    "nearbyint", "trunc", "fmod", "hypot", "copysign", "isnan", "isinf", "isfinite",
    "popcount"})


# ---------------------------------------------------------------------------------------
# Lowering for features
# ---------------------------------------------------------------------------------------

def _feature_passes() -> tuple:
    passes = []
    for p in LOWERING_PASSES:
        if type(p).__name__ in ("VectorizeLoop", "UnrollLoop"):
            break
        passes.append(p)
    return tuple(passes)


_PASSES: tuple | None = None


def lower_for_features(func: PrimFunc) -> PrimFunc:
    """``func`` lowered by the lowering pipeline's passes before ``VectorizeLoop`` (flat
    buffers, no blocks, loops with their kinds)."""
    global _PASSES
    if _PASSES is None:
        _PASSES = _feature_passes()
    for p in _PASSES:
        func = p.transform_function(func)
    return func


# ---------------------------------------------------------------------------------------
# Expression analysis
# ---------------------------------------------------------------------------------------

_DTYPE_INFO: dict[str, tuple[bool, bool, int]] = {}


def _dtype_info(dtype: str) -> tuple[bool, bool, int]:
    """(is float, is bool, lanes) of a dtype, cached."""
    info = _DTYPE_INFO.get(dtype)
    if info is None:
        if dtype == "handle" or dtype == "void":
            info = (False, False, 1)
        else:
            d = dt.parse(dtype)
            info = (d.code in ("float", "bfloat"), d.code == "bool", d.lanes)
        _DTYPE_INFO[dtype] = info
    return info


class _Access:
    """One buffer access of a store: buffer data var, element bytes, lanes, coefficients
    of loop variables (by id) in the flat index, read or write."""

    __slots__ = ("data", "elem_bytes", "lanes", "lane_stride", "coefs", "write")

    def __init__(self, data: Any, elem_bytes: int, lanes: int, lane_stride: float,
                 coefs: dict[int, float], write: bool):
        self.data = data
        self.elem_bytes = elem_bytes
        self.lanes = lanes
        self.lane_stride = lane_stride
        self.coefs = coefs
        self.write = write


class _OpCounter:
    """Counts operations of an expression by type and collects its buffer loads."""

    __slots__ = ("counts", "accesses")

    def __init__(self) -> None:
        self.counts = np.zeros(len(_OP_KINDS) * 2 + 2)
        self.accesses: list[tuple[Any, Any, bool]] = []  # (buffer, index, is_write)

    def add(self, kind: int, e: Any) -> None:
        is_float, is_bool, lanes = _dtype_info(e.dtype)
        if is_bool and kind >= 0:
            self.counts[14] += lanes
        else:
            self.counts[kind + (0 if is_float else 7)] += lanes

    def visit(self, e: Any) -> None:
        t = type(e)
        if t is E.Var or t is E.IntImm or t is E.FloatImm or t is E.StringImm:
            return
        if t is E.BufferLoad:
            for i in e.indices:
                self.visit(i)
            self.accesses.append((e.buffer, e.indices, False))
            return
        if t is E.Add or t is E.Sub:
            a, b = e.a, e.b
            if type(a) is E.Mul and a.dtype == e.dtype:
                self.add(0, e)
                self.visit(a.a)
                self.visit(a.b)
                self.visit(b)
                return
            if type(b) is E.Mul and b.dtype == e.dtype:
                self.add(0, e)
                self.visit(a)
                self.visit(b.a)
                self.visit(b.b)
                return
            self.add(1, e)
        elif t is E.Mul:
            self.add(2, e)
        elif t in (E.Div, E.Mod, E.FloorDiv, E.FloorMod):
            self.add(3, e)
        elif t in (E.Min, E.Max) or isinstance(e, E.CmpOp):
            if isinstance(e, E.CmpOp):
                _, _, lanes = _dtype_info(e.dtype)
                is_float = _dtype_info(e.a.dtype)[0]
                self.counts[4 + (0 if is_float else 7)] += lanes
            else:
                self.add(4, e)
        elif t is E.And or t is E.Or or t is E.Not:
            self.counts[14] += _dtype_info(e.dtype)[2]
        elif t is E.Select:
            self.counts[15] += _dtype_info(e.dtype)[2]
        elif t is E.Call:
            if e.op == "if_then_else":
                self.counts[15] += _dtype_info(e.dtype)[2]
            elif e.op in _MATH_FUNCS:
                self.add(5, e)
            elif e.op != "likely":
                self.add(6, e)
        # Cast, Ramp, Broadcast, Let and the rest: count their operands only.
        for f in _CHILDREN.get(t, ()):
            child = getattr(e, f)
            if isinstance(child, tuple):
                for c in child:
                    self.visit(c)
            elif child is not None:
                self.visit(child)


_CHILDREN: dict[type, tuple[str, ...]] = {}
for _cls in (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max,
             E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE, E.And, E.Or):
    _CHILDREN[_cls] = ("a", "b")
_CHILDREN.update({E.Not: ("a",), E.Cast: ("value",), E.Select: ("condition", "true_value",
                                                                  "false_value"),
                  E.Ramp: ("base", "stride"), E.Broadcast: ("value",),
                  E.Let: ("value", "body"), E.Call: ("args",)})


def _pinned_vars(cond: Any) -> list[Any]:
    """Variables fixed to one value by a guard ``expr == 0`` where ``expr`` is a sum of
    non-negative multiples of variables (how lowered reduction inits look)."""
    if type(cond) is E.And:
        return _pinned_vars(cond.a) + _pinned_vars(cond.b)
    if type(cond) is E.EQ and type(cond.b) is E.IntImm and cond.b.value == 0:
        coefs: dict[int, float] = {}
        approximate_coefficients(cond.a, coefs, 1.0)
        if coefs and all(c > 0 for c in coefs.values()):
            out: list[Any] = []
            _collect_vars(cond.a, out)
            return out
    return []


def _collect_vars(e: Any, out: list[Any]) -> None:
    if type(e) is E.Var:
        out.append(e)
        return
    for f in _CHILDREN.get(type(e), ()):
        child = getattr(e, f)
        if isinstance(child, tuple):
            for c in child:
                _collect_vars(c, out)
        elif child is not None:
            _collect_vars(child, out)


# ---------------------------------------------------------------------------------------
# The statement walk
# ---------------------------------------------------------------------------------------


class _Loop:
    __slots__ = ("var", "extent", "kind", "tag", "unroll_step")

    def __init__(self, var: Any, extent: int, kind: str, tag: str, unroll_step: int):
        self.var = var
        self.extent = extent
        self.kind = kind
        self.tag = tag
        self.unroll_step = unroll_step


def _const_extent(e: Any) -> int:
    if type(e) is E.IntImm:
        return max(1, e.value)
    # A symbolic or data-dependent extent: one iteration is the neutral guess.
    return 1


class _Extractor:
    """Walks a lowered function and emits one feature row per store."""

    def __init__(self) -> None:
        self.loops: list[_Loop] = []
        self.pinned: dict[int, int] = {}  # id(var) -> nesting count of guards pinning it
        self.allocs: dict[int, tuple[float, float]] = {}  # id(data) -> (bytes, outer prod)
        self.rows: list[np.ndarray] = []

    # -- statements -------------------------------------------------------------------
    def visit(self, s: Any) -> None:
        t = type(s)
        if t is S.SeqStmt:
            for x in s.seq:
                self.visit(x)
        elif t is S.For:
            step = s.annotations.get("pragma_auto_unroll_max_step", 0) if s.annotations else 0
            kind = s.kind
            extent = _const_extent(s.extent)
            if kind == "thread_binding" and any(lp.tag == s.thread_tag for lp in self.loops):
                extent = 1  # shares the enclosing loop's thread index (a cooperative copy)
            self.loops.append(_Loop(s.loop_var, extent, kind,
                                    s.thread_tag, int(step) if isinstance(step, int) else 0))
            self.visit(s.body)
            self.loops.pop()
        elif t is S.BufferStore:
            self.store(s)
        elif t is S.IfThenElse:
            pins = _pinned_vars(s.condition)
            for v in pins:
                self.pinned[id(v)] = self.pinned.get(id(v), 0) + 1
            self.visit(s.then_case)
            for v in pins:
                self.pinned[id(v)] -= 1
            if s.else_case is not None:
                self.visit(s.else_case)
        elif t is S.Allocate:
            size = dt.itemsize(s.dtype)
            for ext in s.extents:
                size *= _const_extent(ext)
            outer = 1.0
            for lp in self.loops:
                outer *= lp.extent
            self.allocs[id(s.buffer_var)] = (float(size), outer)
            self.visit(s.body)
        elif t is S.AttrStmt:
            if s.key in ("thread_extent", "virtual_thread") and isinstance(s.node, E.IterVar):
                tag = s.node.thread_tag or ("vthread" if s.key == "virtual_thread" else "")
                self.loops.append(_Loop(s.node.var, _const_extent(s.value), "thread_binding",
                                        tag, 0))
                self.visit(s.body)
                self.loops.pop()
            else:
                self.visit(s.body)
        elif t is S.While:
            self.visit(s.body)
        elif t is S.BlockRealize:
            self.visit(s.block.body)
        elif t is S.Block:
            if s.init is not None:
                self.visit(s.init)
            self.visit(s.body)
        elif t in (S.LetStmt, S.AssertStmt, S.DeclBuffer):
            self.visit(s.body)
        # Evaluate (extern calls, no-ops): no store, no row.

    # -- one store --------------------------------------------------------------------
    def store(self, s: S.BufferStore) -> None:
        row = np.zeros(NUM_FEATURES)
        loops = self.loops
        extents = [1 if self.pinned.get(id(lp.var)) else lp.extent for lp in loops]
        prod = float(math.prod(extents))
        counter = _OpCounter()
        counter.visit(s.value)
        for i in s.indices:
            counter.visit(i)
        counter.accesses.append((s.buffer, s.indices, True))
        row[_OP_BASE:_OP_BASE + 16] = counter.counts * prod
        store_lanes = _dtype_info(s.value.dtype)[2]
        self._loop_features(row, loops, extents, store_lanes)
        accesses = self._accesses(counter.accesses)
        loop_ids = {id(lp.var): k for k, lp in enumerate(loops)}
        per_level_flops = float(counter.counts[:7].sum())
        self._memory_features(row, accesses, loops, extents, loop_ids, per_level_flops,
                              store_lanes)
        alloc = self.allocs.get(id(s.buffer.data))
        if alloc is not None:
            size, outer = alloc
            row[_ALLOC_BASE:_ALLOC_BASE + 4] = (size, outer, outer, prod / max(outer, 1.0))
        row[_OTHER_BASE] = prod
        row[_OTHER_BASE + 1] = len(loops)
        row[_OTHER_BASE + 2] = max((lp.unroll_step for lp in loops), default=0)
        self.rows.append(row)

    def _loop_features(self, row: np.ndarray, loops: list[_Loop], extents: list[int],
                       store_lanes: int) -> None:
        n = len(loops)
        kinds = {"vectorized": 0, "unrolled": 1, "parallel": 2}
        found: list[list[int]] = [[], [], []]
        for k, lp in enumerate(loops):
            slot = kinds.get(lp.kind)
            if slot is not None:
                found[slot].append(k)
            elif lp.kind == "thread_binding" and lp.tag:
                tag = "vthread" if lp.tag.startswith("vthread") else lp.tag
                if tag in _GPU:
                    row[_GPU_BASE + _GPU.index(tag)] = extents[k]
                    row[_GPU_BASE + len(_GPU)] = 1.0
        for slot, levels in enumerate(found):
            base = _LOOP_BASE + slot * _LOOP_STRIDE
            num = len(levels)
            prod = float(math.prod(extents[k] for k in levels)) if levels else 0.0
            inner = float(extents[levels[-1]]) if levels else 0.0
            if slot == 0 and store_lanes > 1:
                # Code that is already vector: its lanes are an innermost vector loop.
                num += 1
                prod = (prod or 1.0) * store_lanes
                inner = float(store_lanes)
                levels = levels + [n]
            row[base] = num
            row[base + 1] = prod
            row[base + 2] = inner
            if not levels:
                pos = 0
            elif len(levels) > 1:
                pos = 4
            elif levels[0] >= n - 1:
                pos = 1
            elif levels[0] == 0:
                pos = 3
            else:
                pos = 2
            row[base + 3 + pos] = 1.0

    @staticmethod
    def _accesses(raw: list[tuple[Any, Any, bool]]) -> list[_Access]:
        out = []
        for buf, indices, write in raw:
            elem = _dtype_info(buf.dtype)
            elem_bytes = max(1, dt.bits(dt.element_of(buf.dtype)) // 8) * elem[2]
            coefs: dict[int, float] = {}
            lanes, lane_stride = 1, 0.0
            if len(indices) == 1:
                idx = indices[0]
                if type(idx) is E.Ramp:
                    lanes = idx.lanes
                    stride = idx.stride
                    lane_stride = float(stride.value) if type(stride) is E.IntImm else 1.0
                    idx = idx.base
                approximate_coefficients(idx, coefs, 1.0)
            else:
                # Not flattened (a partly lowered function): row-major strides from the shape.
                mult = 1.0
                for idx, dim in zip(reversed(indices), reversed(buf.shape)):
                    approximate_coefficients(idx, coefs, mult)
                    mult *= _const_extent(dim)
            out.append(_Access(buf.data, elem_bytes, lanes, lane_stride, coefs, write))
        return out

    def _memory_features(self, row: np.ndarray, accesses: list[_Access], loops: list[_Loop],
                         extents: list[int], loop_ids: dict[int, int], flops: float,
                         store_lanes: int) -> None:
        # Group the accesses by buffer.
        groups: dict[int, list[_Access]] = {}
        for a in accesses:
            groups.setdefault(id(a.data), []).append(a)
        n = len(loops)
        # Levels from innermost (0) outward; a vector access adds a lane level below 0.
        level_ext = [float(extents[n - 1 - lvl]) for lvl in range(n)]
        prod_all = float(math.prod(level_ext)) if level_ext else 1.0
        stats = []
        touched_per_level = np.zeros(n + 1)
        for accs in groups.values():
            eb = accs[0].elem_bytes
            lanes = max(a.lanes for a in accs)
            lane_stride = max(abs(a.lane_stride) for a in accs)
            coef = [0.0] * n
            for a in accs:
                for vid, c in a.coefs.items():
                    k = loop_ids.get(vid)
                    if k is not None:
                        lvl = n - 1 - k
                        coef[lvl] = max(coef[lvl], abs(c))
            # Unique elements touched by the loops up to each level (inclusive).
            unique = []
            span = 1.0 + lane_stride * (lanes - 1)
            count = float(lanes) if lane_stride else 1.0
            unique_inner = min(count, span)
            for lvl in range(n):
                c = coef[lvl]
                if c:
                    span += c * (level_ext[lvl] - 1)
                    count *= level_ext[lvl]
                unique.append(min(count, span))
            touched_per_level[0] += unique_inner * eb
            for lvl in range(n):
                touched_per_level[lvl + 1] += unique[lvl] * eb
            stats.append((accs, eb, lanes, lane_stride, coef, unique, unique_inner))
        buf_rows = []
        for accs, eb, lanes, lane_stride, coef, unique, unique_inner in stats:
            reads = any(not a.write for a in accs)
            writes = any(a.write for a in accs)
            f = np.zeros(len(_BUFFER_FEATURES))
            f[0 if not writes else (1 if not reads else 2)] = 1.0
            total_bytes = prod_all * lanes * eb * len(accs)
            unique_bytes = (unique[-1] if unique else unique_inner) * eb
            # Cache lines: the innermost level that moves the address decides.
            inner = next((lvl for lvl in range(n) if coef[lvl]), None)
            if inner is None:
                lines = float(max(1, math.ceil(unique_inner * eb / _CACHE_LINE)))
            else:
                step = coef[inner] * eb
                outer = float(math.prod(level_ext[inner + 1:]))
                width = max(1.0, lanes * lane_stride * eb) if lanes > 1 else eb
                if step >= _CACHE_LINE:
                    lines = outer * level_ext[inner] * max(1, math.ceil(width / _CACHE_LINE))
                else:
                    lines = outer * max(1, math.ceil((level_ext[inner] * step + width)
                                                     / _CACHE_LINE))
            min_step = min((c for c in coef if c), default=lane_stride or 1.0) * eb
            unique_lines = math.ceil(unique_bytes / _CACHE_LINE) if min_step < _CACHE_LINE \
                else (unique[-1] if unique else 1.0)
            # Reuse: the innermost loop that does not move this access.
            reuse_lvl = next((lvl for lvl in range(n) if not coef[lvl] and level_ext[lvl] > 1),
                             None)
            if reuse_lvl is not None:
                f[7] = 1.0
                reuse_ct = level_ext[reuse_lvl]
                dis_iter = float(math.prod(level_ext[:reuse_lvl]))
                dis_bytes = touched_per_level[reuse_lvl]
            elif reads and writes:
                f[8] = 1.0
                reuse_ct, dis_iter, dis_bytes = 1.0, 1.0, float(eb * lanes)
            else:
                f[9] = 1.0
                reuse_ct, dis_iter, dis_bytes = 0.0, 0.0, 0.0
            div = max(1.0, reuse_ct)
            f[3:7] = (total_bytes, unique_bytes, lines, unique_lines)
            f[10:13] = (dis_iter, dis_bytes, reuse_ct)
            f[13:17] = (total_bytes / div, unique_bytes / div, lines / div, unique_lines / div)
            f[17] = lane_stride if lanes > 1 else (coef[0] if n else 0.0)
            buf_rows.append((lines, f))
        buf_rows.sort(key=lambda x: -x[0])
        for b, (_, f) in enumerate(buf_rows[:NUM_BUFFERS]):
            base = _BUF_BASE + b * len(_BUFFER_FEATURES)
            row[base:base + len(_BUFFER_FEATURES)] = f
        # Arithmetic intensity of the nest cut at each level, sampled at fixed points.
        if n:
            flops_lvl = flops * store_lanes * np.cumprod([1.0] + level_ext)
            intensity = flops_lvl / np.maximum(touched_per_level, 1.0)
            xs = np.linspace(0, n, NUM_CURVE_POINTS)
            row[_CURVE_BASE:_CURVE_BASE + NUM_CURVE_POINTS] = np.interp(
                xs, np.arange(n + 1), intensity)


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------

_LOG_MASK = ~_ONE_HOT


def extract_features(func: PrimFunc, lowered: bool = False) -> np.ndarray:
    """Per-store features of ``func``: a float32 array ``(num_stores, NUM_FEATURES)``.

    ``func`` is a scheduled block-form function (lowered here with
    :func:`lower_for_features`) or, with ``lowered=True``, one already lowered.
    """
    if not isinstance(func, PrimFunc):
        raise TuningError(f"features are extracted from a PrimFunc, got {type(func).__name__}")
    if not lowered:
        func = lower_for_features(func)
    ex = _Extractor()
    ex.visit(func.body)
    if not ex.rows:
        return np.zeros((0, NUM_FEATURES), dtype=np.float32)
    rows = np.stack(ex.rows)
    rows[:, _LOG_MASK] = np.log2(1.0 + np.maximum(rows[:, _LOG_MASK], 0.0))
    return rows.astype(np.float32)


def extract_features_batch(funcs: Sequence[PrimFunc], lowered: bool = False
                           ) -> list[np.ndarray]:
    """:func:`extract_features` of each function."""
    return [extract_features(f, lowered=lowered) for f in funcs]


def features_of_inputs(inputs: Sequence[MeasureInput]) -> list[np.ndarray]:
    """Features of measure inputs: each input's cached ``features`` when the search set
    them, else extracted from its scheduled function (and cached on the input). A
    candidate whose schedule cannot be replayed or lowered gets an empty feature set (the
    cost model learns nothing from it), and a DEBUG line on the ``irc.tune`` logger."""
    out = []
    for inp in inputs:
        feats = inp.features
        if feats is None:
            try:
                feats = extract_features(inp.scheduled_func())
            except IRCError as err:
                logger.debug("no features for a candidate of %s: %s", inp.workload.name,
                             err.message)
                feats = np.zeros((0, NUM_FEATURES), dtype=np.float32)
            inp.features = feats
        out.append(np.asarray(feats, dtype=np.float32))
    return out


def feature_index(name: str) -> int:
    """The position of feature ``name`` (see :data:`FEATURE_NAMES`)."""
    try:
        return _INDEX[name]
    except KeyError:
        raise TuningError(f"no feature named {name!r}") from None


__all__ = ["FEATURE_NAMES", "NUM_FEATURES", "extract_features", "extract_features_batch",
           "feature_index", "features_of_inputs", "lower_for_features"]
