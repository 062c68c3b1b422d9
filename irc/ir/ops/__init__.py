"""Graph-level operators: registrations (struct-info inference and fusion pattern) by
family, and Python builder functions returning un-normalized calls.

``irc.ir.ops.add(x, y)``, ``irc.ir.ops.nn.conv2d(x, w, strides=2)``,
``irc.ir.ops.call_tir(gvar, [x], out_sinfo)`` build ``Call`` nodes through
:func:`irc.ir.op.make_call`; ``BlockBuilder.emit``/``normalize`` fills in their struct
info. Importing this package registers every operator (``irc.ir.op`` does it lazily).
"""

from . import (
    binary,
    call,
    create,
    image,
    index,  # registers the indexing operators
    integer,
    linalg,
    linear_algebra,
    manipulate,
    nn,
    nn_conv,
    nn_nd,
    quantization,
    reduce,
    selection,
    unary,
)
from .binary import (
    add,
    divide,
    equal,
    floor_divide,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_or,
    maximum,
    minimum,
    multiply,
    not_equal,
    power,
    subtract,
    where,
)
from .call import (
    VM_NATIVE,
    call_dps_packed,
    call_pure_packed,
    call_tir,
    shape_of,
    tensor_to_shape,
)
from .create import arange, full, full_like, ones, ones_like, zeros, zeros_like
from .linear_algebra import linear, matmul
from .manipulate import (
    broadcast_to,
    concat,
    expand_dims,
    flatten,
    permute_dims,
    repeat,
    reshape,
    split,
    squeeze,
    strided_slice,
    take,
    tile,
)
from .reduce import argmax, argmin, mean, prod, variance
from .reduce import max as max
from .reduce import min as min
from .reduce import sum as sum
from .unary import abs as abs
from .unary import (
    acosh,
    asinh,
    astype,
    atanh,
    ceil,
    clip,
    cos,
    cosh,
    erf,
    exp,
    expm1,
    floor,
    log,
    log1p,
    logical_not,
    negative,
    rsqrt,
    sigmoid,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
)
from .unary import round as round

__all__ = [
    "binary", "call", "create", "image", "linalg", "linear_algebra", "manipulate", "nn",
    "nn_conv", "nn_nd", "reduce", "selection", "unary",
    "add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "where",
    "call_tir", "call_dps_packed", "call_pure_packed", "shape_of", "tensor_to_shape",
    "VM_NATIVE",
    "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange",
    "matmul", "linear",
    "reshape", "permute_dims", "expand_dims", "squeeze", "flatten", "concat", "split",
    "strided_slice", "take", "broadcast_to", "tile", "repeat",
    "sum", "mean", "max", "min", "prod", "variance", "argmax", "argmin",
    "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos", "abs", "negative",
    "tan", "sinh", "cosh", "asinh", "acosh", "atanh", "log1p", "expm1",
    "floor", "ceil", "round", "clip", "astype", "logical_not",
]
