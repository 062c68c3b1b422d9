"""The values of ``irc.frontend.nn``: :class:`Tensor` (a symbolic graph value seen by
``forward`` during export), :class:`Parameter` (a weight with a shape, a dtype and,
optionally, numpy data) and the export context they emit into.

A model is exported method by method (see :mod:`.export`). While a method runs, an
:class:`ExportFrame` is current: it holds the :class:`~irc.ir.BlockBuilder` of the graph
function being built, the graph parameter of every :class:`Parameter`, and the stack of
layers being called (so that an operator error names the layer it came from). Every
operation on a :class:`Tensor` emits one binding through that builder.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from ...core import dtype as dt
from ...core.diagnostics import IRCError, SourceFile, Span
from ...ir.block_builder import BlockBuilder
from ...ir.expr import Constant, Expr, Tuple, Var
from ...ir.struct_info import TensorStructInfo
from ...ir.struct_info_analysis import format_sinfo
from ...tir.expr import IntImm, PrimExpr


class NNError(IRCError):
    """A model built with ``irc.frontend.nn`` is used wrongly: a spec that does not match
    ``forward``, a parameter without data where data is needed, a mismatched state dict,
    a Tensor used outside the export that created it."""


# ---------------------------------------------------------------------------------
# The export context
# ---------------------------------------------------------------------------------

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_state = threading.local()


def _frames() -> list[ExportFrame]:
    frames = getattr(_state, "frames", None)
    if frames is None:
        frames = _state.frames = []
    return frames


def current_frame(what: str) -> ExportFrame:
    """The export in progress; ``what`` (e.g. ``"nn.op.add"``) names the caller in the
    error raised when there is none."""
    frames = _frames()
    if not frames:
        raise NNError(f"{what} can only be used while a model is exported: call it inside "
                      "a Module's forward (or another exported method) and export with "
                      "model.export_ir({\"forward\": {\"x\": nn.spec.Tensor(shape, dtype)}})")
    return frames[-1]


def in_export() -> bool:
    """True while a method of a model is being exported."""
    return bool(_frames())


class ExportFrame:
    """The state of one method's export: its builder, the graph parameter of each model
    :class:`Parameter`, the module paths (for messages) and the layers being called."""

    def __init__(self, bb: BlockBuilder, method: str, param_vars: dict[int, Var],
                 module_paths: dict[int, str], debug: bool):
        self.bb = bb
        self.method = method
        self.param_vars = param_vars
        self.module_paths = module_paths
        self.debug = debug
        self.layers: list[str] = []
        self._sources: dict[str, SourceFile] = {}

    @contextmanager
    def activate(self) -> Iterator[ExportFrame]:
        """Make this frame current for the duration of the block."""
        frames = _frames()
        frames.append(self)
        try:
            yield self
        finally:
            frames.pop()

    def describe_module(self, module: Any, root: bool = False) -> str:
        """How a message names ``module``: ``layer 'fc1' (Linear)``, or the method of the
        exported model itself."""
        cls = type(module).__name__
        if root:
            return f"{cls}.{self.method}"
        path = self.module_paths.get(id(module))
        if path is None:
            return f"layer {cls} (not an attribute of the exported model)"
        return f"layer '{path}' ({cls})"

    @contextmanager
    def layer(self, module: Any, root: bool = False) -> Iterator[None]:
        """Run a layer's forward; an irc error raised inside gets the layer's name (only
        the innermost layer is named: that is where the failing operator was emitted)."""
        where = self.describe_module(module, root)
        self.layers.append(where)
        try:
            yield
        except IRCError as err:
            if getattr(err, "_nn_layer", None) is not None:
                raise
            try:
                new = type(err)(f"in {where}: {err.message}", span=err.span, node=err.node,
                                hint=err.hint)
            except TypeError:  # an error class with another constructor: keep it as is
                err._nn_layer = where  # type: ignore[attr-defined]
                raise err from None
            new._nn_layer = where  # type: ignore[attr-defined]
            raise new from err
        finally:
            self.layers.pop()

    def user_span(self) -> Span | None:
        """The line of model code (outside this package) that is emitting a binding; used
        in debug exports so that later errors point at the model's source."""
        frame = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if not os.path.abspath(filename).startswith(_PACKAGE_DIR):
                break
            frame = frame.f_back
        if frame is None:
            return None
        filename = frame.f_code.co_filename
        source = self._sources.get(filename)
        if source is None:
            lines = linecache.getlines(filename)
            source = self._sources[filename] = SourceFile(name=filename, text="".join(lines))
        text = source.line(frame.f_lineno)
        column = len(text) - len(text.lstrip()) + 1 if text else 1
        return Span(source=source, line=frame.f_lineno, column=column)

    def emit(self, expr: Expr, name: str) -> Tensor:
        """Bind ``expr`` (normalized, struct info inferred) in the current dataflow block
        under ``name`` and wrap the variable as a :class:`Tensor`."""
        if self.debug:
            span = self.user_span()
            if span is not None:
                expr = expr.replace(span=span)
        var = self.bb.emit(expr, name)
        return Tensor(_expr=var, _frame=self)


# ---------------------------------------------------------------------------------
# Tensor
# ---------------------------------------------------------------------------------


def _dim(d: PrimExpr) -> int | PrimExpr:
    return d.value if isinstance(d, IntImm) else d


class Tensor:
    """A symbolic tensor flowing through ``forward`` during export: it wraps a graph
    variable bound by the builder, and every operation on it emits a new binding.

    Tensors are created by the export (inputs from the spec, results of operations), not
    by hand; ``Tensor.from_const(array)`` embeds a numpy constant. ``shape`` gives ints
    for static dimensions and int64 ``tir`` variables/expressions for symbolic ones.
    """

    def __init__(self, *, _expr: Expr, _frame: ExportFrame | None):
        self._expr = _expr
        self._frame = _frame

    # -- the graph value ------------------------------------------------------------
    def expr_in(self, frame: ExportFrame) -> Expr:
        """The graph expression of this tensor in ``frame``'s function; a tensor made
        while exporting another method raises."""
        if self._frame is not None and self._frame is not frame:
            raise NNError(f"a Tensor created while exporting method '{self._frame.method}' "
                          f"is used while exporting '{frame.method}': tensors live only in "
                          "the method that created them; recompute it in this method")
        return self._expr

    @property
    def expr(self) -> Expr:
        """The graph expression (a variable of the function being built)."""
        return self.expr_in(current_frame("Tensor.expr"))

    @property
    def struct_info(self) -> TensorStructInfo:
        """The tensor's struct info (shape and dtype as the graph IR knows them)."""
        s = self._expr.sinfo
        if not isinstance(s, TensorStructInfo):
            raise NNError(f"this value is not a tensor: it has struct info {format_sinfo(s)}")
        return s

    @property
    def shape(self) -> tuple[int | PrimExpr, ...]:
        """The dimensions: ints where static, int64 expressions where symbolic."""
        s = self.struct_info
        if s.shape is None:
            raise NNError(f"the shape of this tensor is unknown ({format_sinfo(s)})")
        return tuple(_dim(d) for d in s.shape)

    @property
    def ndim(self) -> int:
        """The rank (-1 when unknown)."""
        return self.struct_info.ndim

    @property
    def dtype(self) -> str:
        """The element type, e.g. ``"float32"``."""
        return self.struct_info.dtype

    @staticmethod
    def from_const(value: Any, dtype: str | None = None) -> Tensor:
        """A constant tensor (a numpy array, list or number) embedded in the graph; it may
        be used in any method."""
        arr = np.asarray(value)
        if dtype is not None:
            dtype = dt.check(dtype)
            return Tensor(_expr=Constant.from_numpy(dt.storage(arr, dtype), dtype), _frame=None)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)  # Python floats mean float32, as in the graph IR
        return Tensor(_expr=Constant.from_numpy(arr), _frame=None)

    def __repr__(self) -> str:
        s = self._expr.struct_info
        shown = format_sinfo(s) if s is not None else "?"
        return f"nn.Tensor({getattr(self._expr, 'name_hint', 'const')}: {shown})"

    # -- operators: the functions of nn.op, which builds on this module and registers them
    # here (register_tensor_operator) -------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        return _operator("add")(self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _operator("add")(other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _operator("subtract")(self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _operator("subtract")(other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _operator("multiply")(self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _operator("multiply")(other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _operator("divide")(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _operator("divide")(other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return _operator("matmul")(self, other)

    def __neg__(self) -> Tensor:
        return _operator("negative")(self)

    def reshape(self, *shape: Any) -> Tensor:
        """``x.reshape(2, -1)`` or ``x.reshape((2, -1))``: a tensor of the new shape."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _operator("reshape")(self, shape)

    def permute_dims(self, *axes: int) -> Tensor:
        """``x.permute_dims(1, 0)``; no axes reverses the dimensions."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _operator("permute_dims")(self, list(axes) if axes else None)

    def astype(self, dtype: str) -> Tensor:
        """The tensor converted to ``dtype``."""
        return _operator("astype")(self, dtype)


_TENSOR_OPERATORS: dict[str, Any] = {}


def register_tensor_operator(name: str, fn: Any) -> None:
    """Make ``fn`` (a function of :mod:`irc.frontend.nn.op`) what Tensor's operator or
    method ``name`` calls."""
    _TENSOR_OPERATORS[name] = fn


def _operator(name: str) -> Any:
    fn = _TENSOR_OPERATORS.get(name)
    if fn is None:
        raise NNError(f"Tensor operator {name!r} is not available: import irc.frontend.nn.op, "
                      "which defines it")
    return fn


# ---------------------------------------------------------------------------------
# Parameter
# ---------------------------------------------------------------------------------

_INITS = ("uniform", "normal", "zeros", "ones")


def _check_shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise NNError(f"a Parameter's shape must be a tuple of ints, got {shape!r}")
    out = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
            raise NNError(f"a Parameter's shape must be non-negative ints, got {tuple(shape)!r}"
                          " (symbolic dimensions belong in the input spec, not in weights)")
        out.append(int(d))
    return tuple(out)


class Parameter(Tensor):
    """A model weight: a fixed ``shape`` and ``dtype``, and numpy ``data`` once set
    (``param.data = array``, ``Module.load_state_dict`` or ``Module.init_random``).

    In an exported function every parameter is a graph parameter after the user inputs;
    ``init`` (``"uniform"``, ``"normal"``, ``"zeros"``, ``"ones"``) says how
    ``init_random`` fills it (``"uniform"``: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as
    PyTorch initializes linear and convolution layers).
    """

    def __init__(self, shape: Sequence[int] | int, dtype: str = "float32",
                 init: str = "uniform"):
        # No super().__init__: a parameter has no fixed graph value; expr_in looks it up
        # in the export in progress.
        self._frame = None
        self._shape = _check_shape(shape)
        try:
            self._dtype = dt.check(dtype)
        except IRCError:
            raise NNError(f"a Parameter's dtype must be a dtype such as 'float32', got "
                          f"{dtype!r}") from None
        if init not in _INITS:
            raise NNError(f"Parameter init must be one of {', '.join(_INITS)}, got {init!r}")
        self.init = init
        self._data: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        """The dimensions (static ints)."""
        return self._shape

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self._shape)

    @property
    def dtype(self) -> str:
        """The element type."""
        return self._dtype

    @property
    def struct_info(self) -> TensorStructInfo:
        """``R.Tensor(shape, dtype)`` of the parameter."""
        return TensorStructInfo(shape=tuple(IntImm(dtype="int64", value=d) for d in self._shape),
                                dtype=self._dtype)

    @property
    def data(self) -> np.ndarray | None:
        """The numpy value, or None when not initialized."""
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        if value is None:
            self._data = None
            return
        arr = np.asarray(value)
        if tuple(arr.shape) != self._shape:
            raise NNError(f"cannot set a Parameter of shape {self._shape} to an array of shape "
                          f"{tuple(arr.shape)}")
        want = dt.to_numpy(self._dtype)
        if self._dtype == "bfloat16":
            # Values, except a uint16 array: the bits. Kept as the arrays the VM takes.
            bits = arr.view(np.uint16) if arr.dtype.name in ("uint16", "bfloat16") else \
                dt.storage(arr, "bfloat16")
            arr = bits.view(dt.user_numpy("bfloat16"))
        elif arr.dtype != want:
            if arr.dtype.kind in "fc" and np.dtype(want).kind in "iub":
                raise NNError(f"cannot set a {self._dtype} Parameter from a {arr.dtype} array "
                              "(it would truncate); convert it explicitly")
            arr = arr.astype(want)
        self._data = np.asarray(arr, order="C")

    def numpy(self) -> np.ndarray:
        """The value as a numpy array; raises when the parameter has no data yet."""
        if self._data is None:
            raise NNError(f"this Parameter {self._shape} {self._dtype} has no data: set "
                          "param.data = array, or call model.init_random(seed) or "
                          "model.load_state_dict(state)")
        return self._data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # The numpy protocol: np.asarray(param) is its value (how irc.tune reads weights).
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def expr_in(self, frame: ExportFrame) -> Expr:
        """The graph parameter standing for this weight in ``frame``'s function."""
        var = frame.param_vars.get(id(self))
        if var is None:
            raise NNError(f"a Parameter {self._shape} {self._dtype} is used in "
                          f"'{frame.method}' but is not an attribute of the exported model "
                          "(or of one of its submodules): assign it (self.w = nn.Parameter(...))"
                          " so that it becomes a parameter of the exported function")
        return var

    def to_dtype(self, dtype: str) -> None:
        """Change the dtype, converting the data when there is some."""
        old, self._dtype = self._dtype, dt.check(dtype)
        if self._data is not None:
            self.data = dt.storage(dt.values_of(self._data, old), dtype)

    def __repr__(self) -> str:
        state = "initialized" if self._data is not None else "no data"
        return f"nn.Parameter({self._shape}, {self._dtype!r}, {state})"


def output_expr(value: Any, frame: ExportFrame, method: str) -> Expr:
    """The graph expression of what an exported method returned: a Tensor, or a
    (nested) tuple/list of Tensors."""
    if isinstance(value, Tensor):
        return value.expr_in(frame)
    if isinstance(value, (tuple, list)) and value:
        return Tuple(fields=tuple(output_expr(v, frame, method) for v in value))
    raise NNError(f"method '{method}' must return an nn.Tensor or a non-empty tuple of them, "
                  f"got {type(value).__name__}")


__all__ = ["NNError", "Tensor", "Parameter", "ExportFrame", "current_frame", "in_export",
           "output_expr"]
