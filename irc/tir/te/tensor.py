"""Tensor expressions: placeholders, compute stages and reductions.

A :class:`Tensor` is the output of an :class:`Operation`: a :class:`PlaceholderOp`
(an input) or a :class:`ComputeOp` (``te.compute``: one expression per output element,
possibly a :class:`~irc.tir.expr.Reduce`). Indexing a tensor, ``A[i, k]``, gives a
``BufferLoad`` of the tensor's own buffer; :func:`create_prim_func` later replaces those
buffers by the function's parameters and intermediate allocations.
"""

from __future__ import annotations

import inspect
import weakref
from typing import Any, Callable, Sequence

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ...core.functor import post_order_visit
from ..buffer import Buffer, decl_buffer, load
from ..expr import (
    BufferLoad,
    ExprLike,
    IntImm,
    IterVar,
    PrimExpr,
    Range,
    Reduce,
    Var,
    const,
    convert,
)
from ..expr import max_ as _max
from ..expr import min_ as _min

# Buffers of live tensors, so that a BufferLoad inside a compute body can be traced back
# to the tensor (and operation) that produces it.
_TENSOR_OF_BUFFER: dict[int, weakref.ref] = {}


def _forget(key: int, ref: weakref.ref) -> None:
    if _TENSOR_OF_BUFFER.get(key) is ref:
        del _TENSOR_OF_BUFFER[key]


def tensor_of_buffer(buffer: Buffer) -> Tensor | None:
    """The te tensor whose buffer is ``buffer``, or None."""
    ref = _TENSOR_OF_BUFFER.get(id(buffer))
    t = ref() if ref is not None else None
    return t if t is not None and t.buffer is buffer else None


class Tensor:
    """A multi-dimensional value produced by an operation (``op.output(value_index)``).

    ``A[i, j]`` (or ``A(i, j)``) is a load usable in ``te.compute`` bodies; arithmetic
    between tensors (``conv + bias``) builds broadcasting ``topi`` stages.
    """

    __slots__ = ("op", "shape", "dtype", "name", "buffer", "value_index", "__weakref__")

    def __init__(self, op: Operation, shape: tuple[PrimExpr, ...], dtype: str, name: str,
                 value_index: int = 0):
        self.op = op
        self.shape = shape
        self.dtype = dtype
        self.name = name
        self.value_index = value_index
        self.buffer = decl_buffer(shape, dtype, name)
        key = id(self.buffer)
        _TENSOR_OF_BUFFER[key] = weakref.ref(self, lambda _ref: _forget(key, _ref))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices: Any) -> PrimExpr:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise IRTypeError(
                f"tensor {self.name} has {self.ndim} dimensions but is indexed with "
                f"{len(indices)} indices"
            )
        idx = []
        for i, s in zip(indices, self.shape):
            if isinstance(i, IterVar):
                i = i.var
            if isinstance(i, slice):
                raise IRTypeError(f"tensor {self.name}: slices are not supported in te "
                                  "expressions; index every dimension with an expression")
            idx.append(convert(i, s.dtype))
        return load(self.buffer, idx)

    def __call__(self, *indices: Any) -> PrimExpr:
        if len(indices) == 1 and isinstance(indices[0], (tuple, list)):
            indices = tuple(indices[0])
        return self[tuple(indices)]

    # Arithmetic on whole tensors broadcasts, like topi's binary operators. topi builds
    # on te, so it registers those operators here (register_tensor_operator) instead of
    # te importing topi.
    def _topi(self, name: str, a: Any, b: Any) -> Tensor:
        return _tensor_operator(name)(a, b)

    def __add__(self, other: Any) -> Tensor:
        return self._topi("add", self, other)

    def __radd__(self, other: Any) -> Tensor:
        return self._topi("add", other, self)

    def __sub__(self, other: Any) -> Tensor:
        return self._topi("subtract", self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return self._topi("subtract", other, self)

    def __mul__(self, other: Any) -> Tensor:
        return self._topi("multiply", self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return self._topi("multiply", other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return self._topi("divide", self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return self._topi("divide", other, self)

    def __neg__(self) -> Tensor:
        return _tensor_operator("negative")(self)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        shape = ", ".join(str(_shape_repr(s)) for s in self.shape)
        return f"Tensor(shape=[{shape}], op.name={self.name}, dtype={self.dtype})"


def _shape_repr(s: PrimExpr) -> Any:
    return s.value if isinstance(s, IntImm) else s


class Operation:
    """Base of te operations; ``output(0)`` is the produced tensor."""

    __slots__ = ("name", "tag", "attrs", "_output", "__weakref__")

    def __init__(self, name: str, tag: str, attrs: dict[str, Any] | None):
        self.name = name
        self.tag = tag
        self.attrs = dict(attrs or {})
        self._output: Tensor | None = None

    def output(self, index: int = 0) -> Tensor:
        if index != 0 or self._output is None:
            raise IRTypeError(f"operation {self.name} has one output; asked for #{index}")
        return self._output

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def input_tensors(self) -> list[Tensor]:
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class PlaceholderOp(Operation):
    """An input of a tensor expression (``te.placeholder``)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, name: str, shape: tuple[PrimExpr, ...], dtype: str):
        super().__init__(name, "", None)
        self.shape = shape
        self.dtype = dtype


class ComputeOp(Operation):
    """A stage defined element by element: ``body`` in terms of ``axis`` (one IterVar per
    output dimension) and, for reductions, ``reduce_axis``."""

    __slots__ = ("axis", "reduce_axis", "body", "_inputs")

    def __init__(self, name: str, tag: str, attrs: dict[str, Any] | None,
                 axis: tuple[IterVar, ...], body: PrimExpr):
        super().__init__(name, tag, attrs)
        self.axis = axis
        self.body = body
        self.reduce_axis: tuple[IterVar, ...] = body.axis if isinstance(body, Reduce) else ()
        self._inputs = _collect_inputs(body, name)

    @property
    def input_tensors(self) -> list[Tensor]:
        return list(self._inputs)


def is_reduce_free(e: PrimExpr) -> bool:
    """True when no ``Reduce`` node occurs in ``e``."""
    found = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, Reduce) else None)
    return not found


def _collect_inputs(body: PrimExpr, stage: str) -> tuple[Tensor, ...]:
    """The tensors ``body`` reads, in post order of first appearance."""
    found: list[Tensor] = []
    seen: set[int] = set()

    def visit(n: Any) -> None:
        if isinstance(n, BufferLoad) and id(n.buffer) not in seen:
            seen.add(id(n.buffer))
            t = tensor_of_buffer(n.buffer)
            if t is None:
                raise IRTypeError(
                    f"te.compute {stage!r} reads buffer {n.buffer.name}, which is not a te "
                    "tensor; read te.placeholder / te.compute tensors only", node=n)
            found.append(t)

    post_order_visit(body, visit)
    return tuple(found)


# ---------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------


def _index(value: ExprLike, what: str) -> PrimExpr:
    if isinstance(value, IterVar):
        value = value.var
    if type(value).__module__ == "numpy" and hasattr(value, "dtype") and \
            value.dtype.kind in "iu":
        value = int(value)  # numpy integers are plain sizes, not int64 expressions
    e = convert(value)
    if not dt.is_integer(e.dtype):
        raise IRTypeError(f"{what} must be an integer, got {e!r} of dtype {e.dtype}")
    return e


def _shape(shape: Any, what: str) -> tuple[PrimExpr, ...]:
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise IRTypeError(f"{what}: shape must be a tuple of integers, got {shape!r}") from None
    out = []
    for s in dims:
        e = _index(s, f"{what}: shape dimension")
        if isinstance(e, IntImm) and e.value < 0:
            raise IRTypeError(f"{what}: shape dimension {e.value} is negative")
        out.append(e)
    return tuple(out)


def placeholder(shape: Any, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of ``shape`` and ``dtype``."""
    dims = _shape(shape, f"te.placeholder {name!r}")
    op = PlaceholderOp(name, dims, dt.check(dtype))
    op._output = Tensor(op, dims, dtype, name)
    return op._output


def _axis_names(fcompute: Callable, ndim: int, name: str) -> list[str]:
    try:
        spec = inspect.getfullargspec(fcompute)
    except TypeError:
        return [f"i{k}" for k in range(ndim)]
    args = list(spec.args)
    if inspect.ismethod(fcompute) and args:
        args = args[1:]
    if spec.varargs is not None:
        return args + [f"i{k}" for k in range(len(args), ndim)]
    if len(args) != ndim:
        raise IRTypeError(f"te.compute {name!r}: the function takes {len(args)} index "
                          f"arguments but the shape has {ndim} dimension(s)")
    return args


def compute(shape: Any, fcompute: Callable[..., Any], name: str = "compute", tag: str = "",
            attrs: dict[str, Any] | None = None, *,
            axis_names: Sequence[str] | None = None) -> Tensor:
    """A tensor of ``shape`` whose element at ``(i, j, ...)`` is ``fcompute(i, j, ...)``.

    ``fcompute`` returns a PrimExpr or a reduction (``te.sum(..., axis=k)``); the loop
    variables take the names of its parameters (``i0, i1, ...`` for ``*args``) unless
    ``axis_names`` is given. ``attrs`` become block annotations (except
    ``layout_free_placeholders``, which :func:`create_prim_func` turns into a function
    attribute). Example: ``te.compute((n, m), lambda i, j: A[i, j] + 1.0, name="B")``.
    """
    dims = _shape(shape, f"te.compute {name!r}")
    names = list(axis_names) if axis_names is not None else _axis_names(fcompute, len(dims), name)
    if len(names) != len(dims):
        raise IRTypeError(f"te.compute {name!r}: {len(names)} axis names for {len(dims)} "
                          "dimensions")
    axis = tuple(
        IterVar(var=Var(name=n, dtype=d.dtype), dom=Range(min=const(0, d.dtype), extent=d),
                iter_type="spatial")
        for n, d in zip(names, dims)
    )
    body = fcompute(*[a.var for a in axis])
    if isinstance(body, (list, tuple)):
        if len(body) != 1:
            raise IRTypeError(f"te.compute {name!r}: several outputs per stage are not "
                              "supported; define one te.compute per output")
        body = body[0]
    if isinstance(body, Tensor):
        raise IRTypeError(f"te.compute {name!r}: the function returned a whole tensor; "
                          "return one element, e.g. A[i, j]")
    if isinstance(body, IterVar):
        body = body.var
    body = convert(body)
    _check_body(body, name)
    op = ComputeOp(name, tag, attrs, axis, body)
    op._output = Tensor(op, dims, body.dtype, name)
    return op._output


def _check_body(body: PrimExpr, name: str) -> None:
    if isinstance(body, Reduce):
        inner = [body.source] + ([body.condition] if body.condition is not None else [])
        for e in inner:
            if not is_reduce_free(e):
                raise IRTypeError(f"te.compute {name!r}: a reduction inside a reduction; "
                                  "compute the inner one in its own stage")
        for ax in body.axis:
            if ax.iter_type != "reduce":
                raise IRTypeError(f"te.compute {name!r}: reduction axis {ax.var.name} is not "
                                  "a te.reduce_axis")
    elif not is_reduce_free(body):
        raise IRTypeError(f"te.compute {name!r}: a reduction (te.sum/max/...) must be the "
                          "whole body of its stage; move the surrounding arithmetic into "
                          "another te.compute")


class ReduceAxis(IterVar):
    """A reduction IterVar (from :func:`reduce_axis`) that also works in arithmetic:
    ``yy * 2 + ry`` uses its variable."""

    __slots__ = ()

    def __add__(self, o: Any) -> PrimExpr:
        return self.var + _unwrap(o)

    def __radd__(self, o: Any) -> PrimExpr:
        return _unwrap(o) + self.var

    def __sub__(self, o: Any) -> PrimExpr:
        return self.var - _unwrap(o)

    def __rsub__(self, o: Any) -> PrimExpr:
        return _unwrap(o) - self.var

    def __mul__(self, o: Any) -> PrimExpr:
        return self.var * _unwrap(o)

    def __rmul__(self, o: Any) -> PrimExpr:
        return _unwrap(o) * self.var

    def __floordiv__(self, o: Any) -> PrimExpr:
        return self.var // _unwrap(o)

    def __mod__(self, o: Any) -> PrimExpr:
        return self.var % _unwrap(o)

    def __neg__(self) -> PrimExpr:
        return -self.var

    def __lt__(self, o: Any) -> PrimExpr:
        return self.var < _unwrap(o)

    def __le__(self, o: Any) -> PrimExpr:
        return self.var <= _unwrap(o)

    def __gt__(self, o: Any) -> PrimExpr:
        return self.var > _unwrap(o)

    def __ge__(self, o: Any) -> PrimExpr:
        return self.var >= _unwrap(o)

    def astype(self, dtype: str) -> PrimExpr:
        return self.var.astype(dtype)


def _unwrap(o: Any) -> Any:
    return o.var if isinstance(o, IterVar) else o


def reduce_axis(dom: Any, name: str = "k") -> ReduceAxis:
    """A reduction axis over ``dom`` = ``(lo, hi)`` (half open) or a Range."""
    if isinstance(dom, Range):
        rng = dom
    else:
        try:
            lo, hi = dom
        except (TypeError, ValueError):
            raise IRTypeError(f"te.reduce_axis {name!r}: dom must be (low, high), got "
                              f"{dom!r}") from None
        lo_e, hi_e = _index(lo, "reduce axis bound"), _index(hi, "reduce axis bound")
        if lo_e.dtype != hi_e.dtype:
            common = "int64" if "int64" in (lo_e.dtype, hi_e.dtype) else lo_e.dtype
            lo_e, hi_e = convert_index(lo_e, common), convert_index(hi_e, common)
        rng = Range(min=lo_e, extent=hi_e - lo_e)
    dtype = rng.extent.dtype
    return ReduceAxis(var=Var(name=name, dtype=dtype), dom=rng, iter_type="reduce")


def convert_index(e: ExprLike, dtype: str) -> PrimExpr:
    """``e`` as an index expression of ``dtype`` (constants re-typed, others cast)."""
    if isinstance(e, IterVar):
        e = e.var
    if isinstance(e, IntImm):
        return const(e.value, dtype)
    if isinstance(e, PrimExpr):
        return e if e.dtype == dtype else e.astype(dtype)
    return convert(e, dtype)


def _axes(axis: Any) -> tuple[IterVar, ...] | None:
    if isinstance(axis, IterVar):
        return (axis,)
    if isinstance(axis, (list, tuple)) and axis and all(isinstance(a, IterVar) for a in axis):
        return tuple(axis)
    return None


def _make_reducer(kind: str, combine: Callable[[PrimExpr, PrimExpr], PrimExpr]):
    def reducer(expr: ExprLike, axis: Any = None, where: ExprLike | None = None,
                init: ExprLike | None = None) -> PrimExpr:
        axes = _axes(axis)
        if axes is None:
            if axis is None:
                raise IRTypeError(f"te.{kind} needs axis=... (a te.reduce_axis or a list of "
                                  "them), or a second operand for the elementwise form")
            if isinstance(axis, (list, tuple)):
                raise IRTypeError(f"te.{kind}: axis must be a te.reduce_axis or a non-empty "
                                  f"list of them, got {list(axis)!r}")
            return combine(_unwrap(expr), _unwrap(axis))
        source = convert(_unwrap(expr))
        cond = None
        if where is not None:
            cond = convert(_unwrap(where), "bool")
            if not dt.is_bool(cond.dtype):
                raise IRTypeError(f"te.{kind}: where= must be a boolean condition, got dtype "
                                  f"{cond.dtype}")
        init_e = None if init is None else convert(init, source.dtype)
        return Reduce(dtype=source.dtype, kind=kind, source=source, axis=axes,
                      condition=cond, init=init_e)

    reducer.__name__ = kind
    reducer.__doc__ = (f"The {kind} of ``expr`` over ``axis`` (a reduce axis or a list) where "
                       f"``where`` holds; with a second operand instead of an axis, the "
                       f"elementwise {kind} of the two.")
    return reducer


sum = _make_reducer("sum", lambda a, b: convert(a) + b)
prod = _make_reducer("prod", lambda a, b: convert(a) * b)
max = _make_reducer("max", lambda a, b: _max(a, b))
min = _make_reducer("min", lambda a, b: _min(a, b))


_TENSOR_OPERATORS: dict[str, Callable[..., Tensor]] = {}


def register_tensor_operator(name: str, fn: Callable[..., Tensor]) -> None:
    """Make ``fn`` the implementation of a Tensor operator (``"add"``, ``"subtract"``,
    ``"multiply"``, ``"divide"``, ``"negative"``); ``irc.tir.topi`` registers them."""
    _TENSOR_OPERATORS[name] = fn


def _tensor_operator(name: str) -> Callable[..., Tensor]:
    fn = _TENSOR_OPERATORS.get(name)
    if fn is None:
        raise IRTypeError(f"tensor operator {name!r} is not available: import irc.tir.topi, "
                          "which defines it")
    return fn
