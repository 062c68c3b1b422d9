"""What irc's results are judged against: ONNX Runtime (CPU, graph optimizations off, so
that it computes the operators as written) and ONNX's reference evaluator
(``onnx.reference``, with :func:`reference_ops` in place of its operators that are
wrong), with the sensitivity of the expected results to rounding.

ONNX Runtime is the primary reference; where it refuses a model (no kernel for a dtype,
an attribute form it does not implement), ONNX Runtime on the model computed in float32
(a model of half floats, :func:`widened`) or else the reference evaluator takes its
place. A model no reference runs is not valid. Where irc differs from the primary, the
other opinions (:data:`OPINIONS`) settle it: each reference is wrong somewhere (a
half-float sum stalls in the reference evaluator; ONNX Runtime's cubic resampling and
requantization differ from ONNX's definition), so irc is judged right when it matches
one of them, and a note says which (:mod:`.evaluate`).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .compare import perturbed, sensitivity
from .values import dtype_name, np_dtype

# Perturbed runs of the primary reference per model (each with its own perturbation).
PERTURBED_RUNS = 2


class PeerRefused(Exception):
    """A reference cannot run the model (its message says why)."""


def first_line(err: BaseException) -> str:
    """The first non-empty line of ``err``'s message, at most 300 characters."""
    text = str(err).strip()
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return (line or type(err).__name__)[:300]


def run_onnxruntime(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The outputs of ``model`` in ONNX Runtime's CPU provider, one thread, no graph
    optimizations; :class:`PeerRefused` when it cannot load or run the model."""
    import onnxruntime as ort

    ort.set_default_logger_severity(4)  # its warnings are not what the run is about
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    try:
        sess = ort.InferenceSession(model.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        return [np.asarray(a) for a in sess.run(None, {n: feeds[n] for n in names})]
    except Exception as err:  # noqa: BLE001 - ONNX Runtime's errors are of many types
        raise PeerRefused(f"onnxruntime: {first_line(err)}") from None


def _same_pads(sizes, kernel, strides, dilations, lower: bool) -> list[int]:
    """Explicit pads of ``auto_pad`` SAME_UPPER/SAME_LOWER: output size ceil(size /
    stride), the odd cell of padding at the end (at the start for SAME_LOWER)."""
    n = len(sizes)
    strides = list(strides or [1] * n)
    dilations = list(dilations or [1] * n)
    heads, tails = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        total = max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
        head = total - total // 2 if lower else total // 2
        heads.append(head)
        tails.append(total - head)
    return heads + tails


@functools.lru_cache(maxsize=None)
def reference_ops() -> list[type]:
    """Operator implementations the reference evaluator lacks or gets wrong: ``Loop``,
    whose scan outputs the evaluator concatenates (``np.vstack``) where ONNX stacks
    them, and which takes an absent condition for false where ONNX takes it for true;
    ``LRN``, whose window runs over the batch axis's extent instead of the channels';
    ``MaxPool``, whose indices output is not where the maxima are and whose windows
    under SAME_LOWER padding with strides are misplaced (the padding is made explicit
    first); ``LpNormalization``,
    which divides by the 2-norm whatever ``p``;
    ``Unique`` along an axis unsorted, whose slices it takes along axis 0; ``GlobalLpPool``
    and the deprecated ``Scatter`` (ScatterElements without reductions), which it does
    not implement."""
    from onnx.reference.op_run import OpRun
    from onnx.reference.ops.op_loop import Loop as ReferenceLoop
    from onnx.reference.ops.op_max_pool import MaxPool as ReferenceMaxPool
    from onnx.reference.ops.op_scatter_elements import ScatterElements

    class Loop(ReferenceLoop):
        def _run(self, M, cond, *args, context=None, body=None, attributes=None,
                 bindings=None):
            names = self.body.input_names
            values = dict(context or {})
            carried = list(args)
            go = np.array(True) if cond is None else cond
            scans: list[list[np.ndarray]] = [[] for _ in range(self.K)]
            it = 0
            while bool(go) and (M is None or it < int(M)):
                values.update(zip(names, [np.array(it, np.int64), go, *carried]))
                out = self._run_body(values, attributes=attributes, bindings=bindings)
                go, carried = out[0], list(out[1:1 + self.N])
                for k in range(self.K):
                    scans[k].append(np.asarray(out[1 + self.N + k]))
                it += 1
            stacked = [np.stack(s) if s else np.zeros((0,), np.float32) for s in scans]
            return self._check_and_fix_outputs(tuple(carried + stacked))

    class GlobalLpPool(OpRun):
        def _run(self, x, p=None):
            axes = tuple(range(2, x.ndim))
            p = 2 if p is None else p
            y = (np.abs(np.asarray(x, np.float64)) ** p).sum(axis=axes, keepdims=True)
            return (np.asarray(y ** (1.0 / p)).astype(x.dtype),)

    class LRN(OpRun):
        def _run(self, x, alpha=None, beta=None, bias=None, size=None):
            channels = x.shape[1]
            before, after = (size - 1) // 2, -(-(size - 1) // 2)
            squares = np.asarray(x, np.float64) ** 2
            window = np.stack([squares[:, max(0, c - before):min(channels, c + after + 1)]
                               .sum(axis=1) for c in range(channels)], axis=1)
            y = np.asarray(x, np.float64) / (bias + alpha / size * window) ** beta
            return (y.astype(x.dtype),)

    class MaxPool(ReferenceMaxPool):
        def _run(self, x, auto_pad=None, ceil_mode=None, dilations=None,
                 kernel_shape=None, pads=None, storage_order=None, strides=None):
            if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
                pads = _same_pads(x.shape[2:], kernel_shape, strides, dilations,
                                  auto_pad == "SAME_LOWER")
                auto_pad = "NOTSET"
            out = super()._run(x, auto_pad=auto_pad, ceil_mode=ceil_mode,
                               dilations=dilations, kernel_shape=kernel_shape, pads=pads,
                               storage_order=storage_order, strides=strides)
            if len(out) == 1:
                return out
            return out[0], _max_pool_indices(x, out[0].shape, kernel_shape, strides,
                                             dilations, pads, auto_pad, storage_order)

    class LpNormalization(OpRun):
        def _run(self, x, axis=None, p=None):
            axis = -1 if axis is None else axis
            p = 2 if p is None else p
            wide = np.asarray(x, np.float64)
            norm = (np.abs(wide) ** p).sum(axis=axis, keepdims=True) ** (1.0 / p)
            return (np.asarray(wide / norm).astype(x.dtype),)

    class Scatter(ScatterElements):
        def _run(self, data, indices, updates, axis=None):
            return super()._run(data, indices, updates, axis=axis)

    class Unique(OpRun):
        def _run(self, x, axis=None, sorted=None):
            ax = None if axis is None else axis % x.ndim
            y, first, inverse, counts = np.unique(
                x.reshape(-1) if ax is None else x, return_index=True, return_inverse=True,
                return_counts=True, axis=ax)
            inverse = inverse.reshape(-1)
            if sorted == 0:  # in order of first occurrence
                order = np.argsort(first, kind="stable")
                rank = np.empty_like(order)
                rank[order] = np.arange(len(order))
                y = np.take(y, order, axis=0 if ax is None else ax)
                first, counts, inverse = first[order], counts[order], rank[inverse]
            return (y, first.astype(np.int64), inverse.astype(np.int64),
                    counts.astype(np.int64))

    return [Loop, LRN, MaxPool, LpNormalization, GlobalLpPool, Scatter, Unique]


def _max_pool_indices(x: np.ndarray, out_shape: tuple[int, ...], kernel: Sequence[int],
                      strides: Sequence[int] | None, dilations: Sequence[int] | None,
                      pads: Sequence[int] | None, auto_pad: str | None,
                      storage_order: int | None) -> np.ndarray:
    """MaxPool's indices output: per output element, the flat index in ``x`` (spatial
    axes column-major with ``storage_order`` 1) of the first largest value of its
    window."""
    nd = len(kernel)
    strides = list(strides or [1] * nd)
    dilations = list(dilations or [1] * nd)
    spatial = x.shape[2:]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = _same_pads(spatial, kernel, strides, dilations, auto_pad == "SAME_LOWER")
    begin = [0 if auto_pad == "VALID" or not pads else int(pads[i]) for i in range(nd)]
    order = "F" if storage_order == 1 else "C"
    values = np.asarray(x, np.float64)
    out = np.empty(out_shape, np.int64)
    for pos in np.ndindex(*out_shape):
        n, c, where = pos[0], pos[1], pos[2:]
        best, at = -np.inf, None
        for offs in np.ndindex(*kernel):
            p = tuple(where[i] * strides[i] - begin[i] + offs[i] * dilations[i]
                      for i in range(nd))
            if all(0 <= p[i] < spatial[i] for i in range(nd)) and \
                    (at is None or values[(n, c, *p)] > best):
                best, at = values[(n, c, *p)], p
        flat = int(np.ravel_multi_index(at, spatial, order=order)) if at is not None else 0
        out[pos] = (n * x.shape[1] + c) * int(np.prod(spatial)) + flat
    return out


def run_reference(model: Any, feeds: dict[str, np.ndarray],
                  names: Sequence[str] | None = None) -> list[np.ndarray]:
    """The outputs of ``model`` (or its values ``names``) by ONNX's reference evaluator
    (with :func:`reference_ops`); :class:`PeerRefused` when it cannot evaluate the
    model."""
    from onnx.reference import ReferenceEvaluator

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            evaluator = ReferenceEvaluator(model, new_ops=reference_ops())
            wanted = [i.name for i in model.graph.input]
            out = evaluator.run(list(names) if names is not None else None,
                                {n: feeds[n] for n in wanted})
        return [np.asarray(a) for a in out]
    except Exception as err:  # noqa: BLE001 - the evaluator's errors are of many types
        raise PeerRefused(f"the ONNX reference evaluator: {first_line(err)}") from None


# ONNX element types of the half floats, and of float32.
_HALF = (10, 16)  # FLOAT16, BFLOAT16
_FLOAT = 1


def widened(model: Any) -> Any | None:
    """``model`` with every float16 and bfloat16 tensor made float32 (inputs, outputs,
    initializers, constants, casts, in subgraphs too), or None when it has none or
    reinterprets bits (``BitCast``). ONNX's reference evaluator computes a half-float
    operator in that dtype (a sum of a thousand bfloat16 values stalls at 256 or 1024),
    where irc and ONNX Runtime accumulate in float32; the widened model says what such a
    result should be, within the half float's tolerance."""
    from onnx import numpy_helper

    copy = type(model)()
    copy.CopyFrom(model)
    found = False

    def tensor(t: Any) -> None:
        nonlocal found
        if t.data_type in _HALF:
            found = True
            arr = numpy_helper.to_array(t).astype(np.float32)
            t.CopyFrom(numpy_helper.from_array(arr, t.name))

    def value_info(vi: Any) -> None:
        nonlocal found
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type in _HALF:
            found = True
            vi.type.tensor_type.elem_type = _FLOAT

    def graph(g: Any) -> bool:
        nonlocal found
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            value_info(vi)
        for t in g.initializer:
            tensor(t)
        for node in g.node:
            if node.op_type == "BitCast":
                return False
            for attr in node.attribute:
                if attr.name in ("to", "dtype", "output_dtype") and attr.i in _HALF:
                    found = True
                    attr.i = _FLOAT
                if attr.HasField("t"):
                    tensor(attr.t)
                for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    if not graph(sub):
                        return False
        return True

    return copy if graph(copy.graph) and found else None


def run_widened(model: Any, feeds: dict[str, np.ndarray],
                run: Callable[[Any, dict[str, np.ndarray]], list[np.ndarray]]
                ) -> list[np.ndarray]:
    """The outputs of :func:`widened` ``model`` by ``run`` (:func:`run_onnxruntime` or
    :func:`run_reference`), rounded to the outputs' own dtypes; :class:`PeerRefused`
    when there is no widened model or ``run`` refuses it."""
    wide = widened(model)
    if wide is None:
        raise PeerRefused("no half-float tensor to widen")
    names = {i.name for i in model.graph.input}
    out = run(wide, {k: np.asarray(v, np.float32) if k in names and
                     dtype_name(v) in ("float16", "bfloat16") else v
                     for k, v in feeds.items()})
    kinds = [o.type.tensor_type.elem_type for o in model.graph.output]
    return [np.asarray(a).astype(_half_dtype(k)) if k in _HALF else a
            for a, k in zip(out, kinds)]


def _half_dtype(kind: int) -> np.dtype:
    return np_dtype("float16" if kind == 10 else "bfloat16")


ONNXRUNTIME = "onnxruntime"
REFERENCE = "the reference evaluator"
# The second opinions, in the order they are asked: the other reference, then both on
# the model computed in float32 (:func:`widened`).
OPINIONS: tuple[tuple[str, Callable[[Any, dict[str, np.ndarray]], list[np.ndarray]]],
                ...] = (
    (ONNXRUNTIME, run_onnxruntime),
    (REFERENCE, run_reference),
    (f"{ONNXRUNTIME} on the model computed in float32",
     lambda m, f: run_widened(m, f, run_onnxruntime)),
    (f"{REFERENCE} on the model computed in float32",
     lambda m, f: run_widened(m, f, run_reference)),
)


@dataclass
class Expected:
    """The expected outputs of a model on ``feeds``: ``outputs`` from the primary
    reference (``primary``, the name of one of :data:`OPINIONS`: :data:`ONNXRUNTIME`
    unless it refused the model, ``ort_refused`` saying why), and their sensitivity to
    rounding
    (``sens``, see :func:`.compare.sensitivity`). :meth:`opinions` gives the outputs of
    the other references, for a result that differs from the primary's."""

    model: Any
    feeds: dict[str, np.ndarray]
    outputs: list[np.ndarray]
    sens: list[np.ndarray | None]
    primary: str
    ort_refused: str = ""
    _asked: dict[str, list[np.ndarray] | None] = field(default_factory=dict, repr=False)

    def opinions(self) -> Iterator[tuple[str, list[np.ndarray]]]:
        """``(name, outputs)`` of each reference of :data:`OPINIONS` but the primary that
        runs the model, each computed once, when first asked."""
        for name, run in OPINIONS:
            if name == self.primary:
                continue
            if name not in self._asked:
                try:
                    self._asked[name] = run(self.model, self.feeds)
                except PeerRefused:
                    self._asked[name] = None
            got = self._asked[name]
            if got is not None:
                yield name, got


def expected(model: Any, feeds: dict[str, np.ndarray], perturb: Sequence[str],
             seed: int = 0) -> Expected:
    """The expected outputs of ``model`` on ``feeds`` by the primary reference — ONNX
    Runtime, or where it refuses the model, ONNX Runtime on the model computed in float32
    (a half-float model), else the reference evaluator — with their sensitivity measured
    by rerunning it with the tensors ``perturb`` perturbed (:func:`.compare.perturbed`);
    :class:`PeerRefused` when no reference runs the model."""
    refusals: list[str] = []
    chosen = None
    for name, run in (OPINIONS[0], OPINIONS[2], OPINIONS[1]):
        try:
            chosen = name, run, run(model, feeds)
            break
        except PeerRefused as err:
            refusals.append(str(err))
    if chosen is None:
        raise PeerRefused("; ".join(refusals))
    primary, run, base = chosen
    ort_refused = refusals[0] if refusals else ""
    moved = []
    for k in range(PERTURBED_RUNS):
        m, f = perturbed(model, feeds, perturb, seed * PERTURBED_RUNS + k + 1)
        try:
            moved.append(run(m, f))
        except PeerRefused:
            continue
    sens = sensitivity(base, moved) if moved else \
        [np.zeros(np.shape(b)) for b in base]
    result = Expected(model, feeds, base, sens, primary, ort_refused)
    result._asked[primary] = base
    return result


__all__ = ["Expected", "ONNXRUNTIME", "OPINIONS", "PERTURBED_RUNS", "PeerRefused", "REFERENCE",
           "expected", "first_line", "reference_ops", "run_onnxruntime", "run_reference",
           "run_widened", "widened"]
