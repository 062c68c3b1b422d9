"""Functional operators on :class:`~.core.Tensor` (``nn.op.relu(x)``, ``nn.op.matmul(a,
b)``, ...): a thin layer over :mod:`irc.ir.ops` that emits one binding per call through
the export in progress.

Every function takes a ``name`` (the binding's name hint, by default the operator's
name: ``matmul``, then ``matmul1``, ...). Binary operators accept a Python number on
either side; it becomes a rank-0 constant of the other operand's dtype. Shape and dtype
errors come from the operator's struct-info inference; the layer being called adds its
name to the message.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...core import dtype as dt
from ...ir import ops
from ...ir.expr import Constant, Expr, TupleGetItem
from .core import ExportFrame, NNError, Tensor, current_frame, register_tensor_operator

# ---------------------------------------------------------------------------------
# Operand conversion
# ---------------------------------------------------------------------------------


def _frame(op: str) -> ExportFrame:
    return current_frame(f"nn.op.{op}")


def _tensor(frame: ExportFrame, x: Any, op: str, what: str = "x") -> Expr:
    if isinstance(x, Tensor):
        return x.expr_in(frame)
    raise NNError(f"nn.op.{op}: {what} must be an nn.Tensor, got {type(x).__name__} {x!r}")


def _scalar(value: Any, dtype: str, op: str) -> Expr:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise NNError(f"nn.op.{op}: operands must be nn.Tensors or numbers, got "
                      f"{type(value).__name__} {value!r}")
    if dtype and not dt.is_float(dtype) and not float(value).is_integer():
        raise NNError(f"nn.op.{op}: the number {value!r} does not fit the {dtype} tensor it is "
                      "combined with; convert the tensor first (x.astype('float32'))")
    return Constant.from_numpy(np.asarray(value), dtype or "float32")


def _binary_operands(frame: ExportFrame, a: Any, b: Any, op: str) -> tuple[Expr, Expr]:
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a.expr_in(frame), b.expr_in(frame)
    if isinstance(a, Tensor):
        return a.expr_in(frame), _scalar(b, a.dtype, op)
    if isinstance(b, Tensor):
        return _scalar(a, b.dtype, op), b.expr_in(frame)
    raise NNError(f"nn.op.{op}: at least one operand must be an nn.Tensor, got "
                  f"{type(a).__name__} and {type(b).__name__}")


def _emit_tuple(frame: ExportFrame, call: Expr, name: str, count: int) -> tuple[Tensor, ...]:
    tup = frame.emit(call, name)
    return tuple(frame.emit(TupleGetItem(tuple_value=tup.expr_in(frame), index=i),
                            f"{name}_{i}") for i in range(count))


# ---------------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------------


def _binary(op_name: str, builder: Any, doc: str):
    def fn(a: Any, b: Any, name: str = op_name) -> Tensor:
        frame = _frame(op_name)
        x, y = _binary_operands(frame, a, b, op_name)
        return frame.emit(builder(x, y), name)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = f"Elementwise {doc} with numpy broadcasting (``R.{op_name}``)."
    return fn


add = _binary("add", ops.add, "a + b")
subtract = _binary("subtract", ops.subtract, "a - b")
multiply = _binary("multiply", ops.multiply, "a * b")
divide = _binary("divide", ops.divide, "a / b")
power = _binary("power", ops.power, "a ** b")
maximum = _binary("maximum", ops.maximum, "max(a, b)")
minimum = _binary("minimum", ops.minimum, "min(a, b)")
equal = _binary("equal", ops.equal, "a == b (bool result)")
less = _binary("less", ops.less, "a < b (bool result)")
greater = _binary("greater", ops.greater, "a > b (bool result)")


def _unary(op_name: str, builder: Any, doc: str):
    def fn(x: Tensor, name: str = op_name) -> Tensor:
        frame = _frame(op_name)
        return frame.emit(builder(_tensor(frame, x, op_name)), name)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = f"Elementwise {doc}."
    return fn


relu = _unary("relu", ops.nn.relu, "max(x, 0) (``R.nn.relu``)")
silu = _unary("silu", ops.nn.silu, "x * sigmoid(x) (``R.nn.silu``)")
sigmoid = _unary("sigmoid", ops.sigmoid, "1 / (1 + exp(-x)) (``R.sigmoid``)")
tanh = _unary("tanh", ops.tanh, "tanh(x) (``R.tanh``)")
exp = _unary("exp", ops.exp, "exp(x) (``R.exp``)")
log = _unary("log", ops.log, "natural logarithm (``R.log``)")
sqrt = _unary("sqrt", ops.sqrt, "square root (``R.sqrt``)")
rsqrt = _unary("rsqrt", ops.rsqrt, "1 / sqrt(x) (``R.rsqrt``)")
erf = _unary("erf", ops.erf, "error function (``R.erf``)")
negative = _unary("negative", ops.negative, "-x (``R.negative``)")


def gelu(x: Tensor, approximate: str = "none", name: str = "gelu") -> Tensor:
    """GELU: ``x * Phi(x)``; ``approximate="tanh"`` uses the tanh approximation
    (``R.nn.gelu`` / ``R.nn.gelu_tanh``)."""
    frame = _frame("gelu")
    if approximate not in ("none", "tanh"):
        raise NNError(f"nn.op.gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    builder = ops.nn.gelu if approximate == "none" else ops.nn.gelu_tanh
    return frame.emit(builder(_tensor(frame, x, "gelu")), name)


def where(condition: Tensor, a: Any, b: Any, name: str = "where") -> Tensor:
    """Elementwise ``a if condition else b`` (``R.where``)."""
    frame = _frame("where")
    x, y = _binary_operands(frame, a, b, "where")
    return frame.emit(ops.where(_tensor(frame, condition, "where", "condition"), x, y), name)


def astype(x: Tensor, dtype: str, name: str = "astype") -> Tensor:
    """``x`` converted to ``dtype`` (``R.astype``)."""
    frame = _frame("astype")
    return frame.emit(ops.astype(_tensor(frame, x, "astype"), dtype), name)


# ---------------------------------------------------------------------------------
# Linear algebra and shapes
# ---------------------------------------------------------------------------------


def matmul(a: Tensor, b: Tensor, out_dtype: str | None = None, name: str = "matmul") -> Tensor:
    """Matrix product with batch broadcasting (``R.matmul``); ``out_dtype`` None keeps the
    operands' dtype."""
    frame = _frame("matmul")
    return frame.emit(ops.matmul(_tensor(frame, a, "matmul", "a"),
                                 _tensor(frame, b, "matmul", "b"), out_dtype=out_dtype), name)


def permute_dims(x: Tensor, axes: Sequence[int] | None = None,
                 name: str = "permute_dims") -> Tensor:
    """Axes permuted (``R.permute_dims``); None reverses them (a matrix transpose)."""
    frame = _frame("permute_dims")
    return frame.emit(ops.permute_dims(_tensor(frame, x, "permute_dims"), axes), name)


def reshape(x: Tensor, shape: Sequence[Any], name: str = "reshape") -> Tensor:
    """``x`` with a new shape (one entry may be -1; int64 expressions allowed)."""
    frame = _frame("reshape")
    return frame.emit(ops.reshape(_tensor(frame, x, "reshape"), tuple(shape)), name)


def expand_dims(x: Tensor, axis: int | Sequence[int], name: str = "expand_dims") -> Tensor:
    """Size-1 dimensions inserted at ``axis`` (``R.expand_dims``)."""
    frame = _frame("expand_dims")
    return frame.emit(ops.expand_dims(_tensor(frame, x, "expand_dims"), axis), name)


def squeeze(x: Tensor, axis: int | Sequence[int] | None = None,
            name: str = "squeeze") -> Tensor:
    """Size-1 dimensions removed (``R.squeeze``)."""
    frame = _frame("squeeze")
    return frame.emit(ops.squeeze(_tensor(frame, x, "squeeze"), axis), name)


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1, name: str = "reshape") -> Tensor:
    """Dimensions ``start_dim`` to ``end_dim`` merged into one (as ``torch.flatten``),
    emitted as a reshape; dimensions outside the range must be known."""
    frame = _frame("flatten")
    expr = _tensor(frame, x, "flatten")
    ndim = x.ndim
    if ndim < 0:
        raise NNError("nn.op.flatten: the rank of the input is unknown")
    if ndim == 0:
        return frame.emit(ops.reshape(expr, (1,)), name)
    start = start_dim + ndim if start_dim < 0 else start_dim
    end = end_dim + ndim if end_dim < 0 else end_dim
    if not 0 <= start <= end < ndim:
        raise NNError(f"nn.op.flatten: start_dim {start_dim} and end_dim {end_dim} do not "
                      f"select a range of the {ndim} dimensions of {x!r}")
    dims = list(x.shape)
    merged: Any = 1
    for d in dims[start:end + 1]:
        merged = merged * d
    return frame.emit(ops.reshape(expr, (*dims[:start], merged, *dims[end + 1:])), name)


def concat(tensors: Sequence[Tensor], axis: int = 0, name: str = "concat") -> Tensor:
    """Tensors joined along ``axis`` (``R.concat``)."""
    frame = _frame("concat")
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise NNError("nn.op.concat needs a non-empty list of nn.Tensors")
    exprs = [_tensor(frame, t, "concat", f"tensors[{i}]") for i, t in enumerate(tensors)]
    return frame.emit(ops.concat(exprs, axis), name)


def split(x: Tensor, indices_or_sections: int | Sequence[int], axis: int = 0,
          name: str = "split") -> tuple[Tensor, ...]:
    """``x`` split along ``axis`` into equal sections or at indices (``R.split``); returns
    a tuple of tensors."""
    frame = _frame("split")
    call = ops.split(_tensor(frame, x, "split"), indices_or_sections, axis)
    count = indices_or_sections if isinstance(indices_or_sections, int) else \
        len(indices_or_sections) + 1
    return _emit_tuple(frame, call, name, count)


def take(x: Tensor, indices: Tensor, axis: int | None = None, mode: str = "raise",
         name: str = "take") -> Tensor:
    """Elements of ``x`` at integer ``indices`` along ``axis`` (``R.take``). With the
    default ``mode="raise"`` a negative index counts from the end and any index outside
    ``[-extent, extent)`` fails the run, naming it; see ``R.take`` for the other modes."""
    frame = _frame("take")
    return frame.emit(ops.take(_tensor(frame, x, "take"),
                               _tensor(frame, indices, "take", "indices"), axis, mode),
                      name)


def broadcast_to(x: Tensor, shape: Sequence[Any], name: str = "broadcast_to") -> Tensor:
    """``x`` broadcast to ``shape`` (``R.broadcast_to``)."""
    frame = _frame("broadcast_to")
    return frame.emit(ops.broadcast_to(_tensor(frame, x, "broadcast_to"), tuple(shape)), name)


def strided_slice(x: Tensor, axes: Sequence[int], begin: Sequence[int], end: Sequence[int],
                  strides: Sequence[int] | None = None, name: str = "strided_slice") -> Tensor:
    """Numpy-style slicing of the listed axes (``R.strided_slice``)."""
    frame = _frame("strided_slice")
    return frame.emit(ops.strided_slice(_tensor(frame, x, "strided_slice"), axes, begin, end,
                                        strides), name)


def _reduction(op_name: str, builder: Any, doc: str):
    def fn(x: Tensor, axis: int | Sequence[int] | None = None, keepdims: bool = False,
           name: str = op_name) -> Tensor:
        frame = _frame(op_name)
        return frame.emit(builder(_tensor(frame, x, op_name), axis, keepdims), name)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = f"The {doc} over ``axis`` (all axes when None) (``R.{op_name}``)."
    return fn


sum = _reduction("sum", ops.sum, "sum")
mean = _reduction("mean", ops.mean, "mean")
max = _reduction("max", ops.max, "maximum")
min = _reduction("min", ops.min, "minimum")


def zeros(shape: Sequence[Any], dtype: str = "float32", name: str = "zeros") -> Tensor:
    """A tensor of zeros (``R.zeros``)."""
    return _frame("zeros").emit(ops.zeros(tuple(shape), dtype), name)


def ones(shape: Sequence[Any], dtype: str = "float32", name: str = "ones") -> Tensor:
    """A tensor of ones (``R.ones``)."""
    return _frame("ones").emit(ops.ones(tuple(shape), dtype), name)


# ---------------------------------------------------------------------------------
# Neural-network operators
# ---------------------------------------------------------------------------------


def softmax(x: Tensor, axis: int = -1, name: str = "softmax") -> Tensor:
    """Softmax along ``axis`` (``R.nn.softmax``)."""
    frame = _frame("softmax")
    return frame.emit(ops.nn.softmax(_tensor(frame, x, "softmax"), axis), name)


def log_softmax(x: Tensor, axis: int = -1, name: str = "log_softmax") -> Tensor:
    """Log of softmax along ``axis`` (``R.nn.log_softmax``)."""
    frame = _frame("log_softmax")
    return frame.emit(ops.nn.log_softmax(_tensor(frame, x, "log_softmax"), axis), name)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1, data_layout: str = "NCHW",
           kernel_layout: str = "OIHW", name: str = "conv2d") -> Tensor:
    """2-D convolution (``R.nn.conv2d``), plus ``bias`` (one value per output channel)
    reshaped to broadcast over the layout's channel axis."""
    frame = _frame("conv2d")
    out = frame.emit(ops.nn.conv2d(_tensor(frame, x, "conv2d"),
                                   _tensor(frame, weight, "conv2d", "weight"), strides=stride,
                                   padding=padding, dilation=dilation, groups=groups,
                                   data_layout=data_layout, kernel_layout=kernel_layout), name)
    if bias is None:
        return out
    shape = [1, 1, 1, 1]
    shape[data_layout.index("C") if "C" in data_layout else 1] = -1
    return add(out, reshape(bias, shape))


def _pool(op_name: str, builder: Any, x: Tensor, name: str, **attrs: Any) -> Tensor:
    frame = _frame(op_name)
    return frame.emit(builder(_tensor(frame, x, op_name), **attrs), name)


def max_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, layout: str = "NCHW",
               name: str = "max_pool2d") -> Tensor:
    """2-D max pooling (``R.nn.max_pool2d``); ``stride`` None means ``kernel_size``."""
    return _pool("max_pool2d", ops.nn.max_pool2d, x, name, pool_size=kernel_size,
                 strides=kernel_size if stride is None else stride, padding=padding,
                 dilation=dilation, ceil_mode=ceil_mode, layout=layout)


def avg_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True, layout: str = "NCHW",
               name: str = "avg_pool2d") -> Tensor:
    """2-D average pooling (``R.nn.avg_pool2d``); ``stride`` None means ``kernel_size``;
    padding counts in the average by default, as in PyTorch."""
    return _pool("avg_pool2d", ops.nn.avg_pool2d, x, name, pool_size=kernel_size,
                 strides=kernel_size if stride is None else stride, padding=padding,
                 ceil_mode=ceil_mode, count_include_pad=count_include_pad, layout=layout)


def adaptive_avg_pool2d(x: Tensor, output_size: Any, layout: str = "NCHW",
                        name: str = "adaptive_avg_pool2d") -> Tensor:
    """Average pooling to ``output_size`` (``R.nn.adaptive_avg_pool2d``)."""
    return _pool("adaptive_avg_pool2d", ops.nn.adaptive_avg_pool2d, x, name,
                 output_size=output_size, layout=layout)


def batch_norm(x: Tensor, weight: Tensor, bias: Tensor, running_mean: Tensor,
               running_var: Tensor, axis: int = 1, eps: float = 1e-5,
               name: str = "batch_norm") -> Tensor:
    """Inference batch normalization with the running statistics (``R.nn.batch_norm``
    with ``training=False``; its normalized output)."""
    frame = _frame("batch_norm")
    operands = [_tensor(frame, t, "batch_norm", w) for t, w in
                ((x, "x"), (weight, "weight"), (bias, "bias"), (running_mean, "running_mean"),
                 (running_var, "running_var"))]
    call = ops.nn.batch_norm(*operands, axis=axis, epsilon=eps, training=False)
    tup = frame.emit(call, "lv")
    return frame.emit(TupleGetItem(tuple_value=tup.expr_in(frame), index=0), name)


def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, axes: int | Sequence[int],
               eps: float = 1e-5, name: str = "layer_norm") -> Tensor:
    """Layer normalization over ``axes`` with affine ``weight``/``bias`` of those axes'
    shape (``R.nn.layer_norm``)."""
    frame = _frame("layer_norm")
    return frame.emit(ops.nn.layer_norm(_tensor(frame, x, "layer_norm"),
                                        _tensor(frame, weight, "layer_norm", "weight"),
                                        _tensor(frame, bias, "layer_norm", "bias"), axes,
                                        epsilon=eps), name)


def group_norm(x: Tensor, num_groups: int, weight: Tensor, bias: Tensor, eps: float = 1e-5,
               channel_axis: int = 1, axes: Sequence[int] | None = None,
               name: str = "group_norm") -> Tensor:
    """Group normalization (``R.nn.group_norm``): channels in ``num_groups`` groups,
    normalized over ``axes`` (default: every axis after the channel axis)."""
    frame = _frame("group_norm")
    expr = _tensor(frame, x, "group_norm")
    if axes is None:
        if x.ndim < 0:
            raise NNError("nn.op.group_norm: the rank of the input is unknown; pass axes")
        axes = list(range(channel_axis + 1, x.ndim)) if channel_axis >= 0 else \
            list(range(x.ndim + channel_axis + 1, x.ndim))
    return frame.emit(ops.nn.group_norm(expr, _tensor(frame, weight, "group_norm", "weight"),
                                        _tensor(frame, bias, "group_norm", "bias"),
                                        num_groups=num_groups, channel_axis=channel_axis,
                                        axes=axes, epsilon=eps), name)


def pad(x: Tensor, pad_width: Sequence[int], mode: str = "constant", value: float = 0.0,
        name: str = "pad") -> Tensor:
    """``x`` padded by (before, after) widths per axis, flattened (``R.nn.pad``)."""
    frame = _frame("pad")
    return frame.emit(ops.nn.pad(_tensor(frame, x, "pad"), pad_width, mode, value), name)


for _name in ("add", "subtract", "multiply", "divide", "matmul", "negative", "reshape",
              "permute_dims", "astype"):
    register_tensor_operator(_name, globals()[_name])  # Tensor's operators and methods

__all__ = [
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "equal", "less",
    "greater", "where", "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt",
    "rsqrt", "erf", "negative", "astype", "matmul", "permute_dims", "reshape", "expand_dims",
    "squeeze", "flatten", "concat", "split", "take", "broadcast_to", "strided_slice", "sum",
    "mean", "max", "min", "zeros", "ones", "softmax", "log_softmax", "conv2d", "max_pool2d",
    "avg_pool2d", "adaptive_avg_pool2d", "batch_norm", "layer_norm", "group_norm", "pad",
]
