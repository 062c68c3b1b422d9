"""FoldBatchNormToConv2D: fold an inference batch norm into the convolution before it.

Algorithm: for every binding ``bn = R.nn.batch_norm(c, gamma, beta, mean, var, axis, eps)``
whose input ``c`` is bound to ``R.nn.conv2d(x, W)`` (optionally followed by a constant
per-channel bias, ``c = R.add(R.nn.conv2d(x, W), b)``), where ``W``, ``b`` and the four
batch-norm vectors are constants, ``axis`` is the convolution's output channel axis and
``c`` (and the convolution under a bias) is used by the batch norm alone::

    s  = gamma / sqrt(var + eps)          # (C,)  (1 when scale=False)
    W' = W * s along W's output-channel axis
    t  = (b - mean) * s + beta            # (C,)  (b = 0 without a bias; beta = 0 when
                                          #        center=False)
    bn = (R.add(R.nn.conv2d(x, W'), t), mean, var)

so the network computes ``conv2d + bias`` where it computed ``conv2d, multiply, add``:
one multiply fewer per output element in irc's kernels, and the form libraries take as
a convolution with a bias (``dnnl.conv2d_bias*``, what ``irc.compile(dispatch=...)``
matches). The arithmetic is done in float64 and the results cast to ``W``'s dtype. Uses
of ``bn[0]`` then read the add; the statistics ``bn[1]``, ``bn[2]`` are the constants
they were (inference leaves them unchanged). The result is normalized, its trivial
bindings canonicalized and the unused convolution removed.

This is the usual inference folding (TVM's ``FoldBatchnormToConv2D``, ONNX Runtime's
Conv+BatchNormalization fusion). It changes rounding slightly (the product ``W * s`` is
rounded once to float32), within float32 tolerance of the unfolded network.

Preconditions: the module is normalized; weights are bound as constants
(``BindParams``), otherwise nothing folds. Postconditions: no batch norm whose input is a
foldable convolution remains; the program computes the same values at inference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import dtype as dt
from ..core.functor import Mutator
from ..core.module import IRModule
from ..core.transform import Pass, PassContext, Sequential
from ..ir import ops
from ..ir.expr import Call, Constant, Expr, Function, Op, Tuple, Var
from ..ir.struct_info import TensorStructInfo
from ._graph_utils import iter_bindings, used_vars
from .canonicalize_bindings import CanonicalizeBindings
from .dead_code_elimination import DeadCodeElimination
from .normalize import normalize_function


def _op_call(e: Any, name: str) -> Call | None:
    if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name:
        return e
    return None


def _float_const(e: Expr) -> np.ndarray | None:
    if isinstance(e, Constant) and dt.is_float(str(e.struct_info.dtype)):
        return np.asarray(e.data, dtype="float64")
    return None


def _channel_vector(arr: np.ndarray, axis: int, c: int) -> np.ndarray | None:
    """``arr``, an operand that broadcasts (numpy's rules) to a rank-4 tensor of ``c``
    channels along ``axis`` only, as a (C,) vector; or None."""
    if arr.ndim > 4:
        return None
    padded = arr.reshape((1,) * (4 - arr.ndim) + arr.shape)
    if any(n != 1 for i, n in enumerate(padded.shape) if i != axis) or \
            padded.shape[axis] not in (1, c):
        return None
    return np.broadcast_to(padded.reshape(-1), (c,))


class _Folder(Mutator):
    def __init__(self, func: Function):
        super().__init__()
        self.values: dict[int, Expr] = {}
        self.uses: dict[int, int] = {}
        for _, b in iter_bindings(func):
            if hasattr(b, "var") and hasattr(b, "value"):
                self.values[id(b.var)] = b.value
                for u in used_vars(b.value):
                    self.uses[u] = self.uses.get(u, 0) + 1
        if hasattr(func.body, "body"):
            for u in used_vars(func.body.body):
                self.uses[u] = self.uses.get(u, 0) + 1
        self.changed = False

    def _bound(self, e: Expr, name: str) -> Call | None:
        """The ``name`` call ``e`` is a variable bound to, when only one place reads it."""
        if isinstance(e, Var) and self.uses.get(id(e), 0) == 1:
            return _op_call(self.values.get(id(e)), name)
        return None

    def visit_Call(self, call: Call) -> Expr:
        call = self.generic_visit(call)
        if _op_call(call, "nn.batch_norm") is None:
            return call
        folded = self.fold(call)
        if folded is None:
            return call
        self.changed = True
        return folded

    def fold(self, bn: Call) -> Expr | None:
        data, gamma, beta, mean, var = bn.args
        conv, bias = self._bound(data, "nn.conv2d"), None
        if conv is None:
            add = self._bound(data, "add")
            if add is None:
                return None
            conv = self._bound(add.args[0], "nn.conv2d")
            bias = _float_const(add.args[1])
            if conv is None or bias is None:
                return None
        out = conv.struct_info
        w = _float_const(conv.args[1])
        if w is None or not isinstance(out, TensorStructInfo) or out.ndim != 4:
            return None
        a = conv.attrs
        axis = (a["out_layout"] or a["data_layout"]).index("C")
        o_axis = a["kernel_layout"].index("O")
        c = w.shape[o_axis]
        if bn.attrs["axis"] % 4 != axis:
            return None
        vecs = [_float_const(v) for v in (gamma, beta, mean, var)]
        if any(v is None for v in vecs):
            return None
        if any(x.shape != (c,) for x in vecs):  # batch norm's vectors are (C,)
            return None
        g, be, m, v = vecs
        b = np.zeros(c) if bias is None else _channel_vector(bias, axis, c)
        if b is None:
            return None
        s = 1.0 / np.sqrt(v + float(bn.attrs["epsilon"]))
        if bn.attrs["scale"]:
            s = s * g
        shift = (b - m) * s + (be if bn.attrs["center"] else 0.0)
        w_dtype = str(conv.args[1].struct_info.dtype)
        scale = s.reshape([-1 if i == o_axis else 1 for i in range(w.ndim)])
        new_w = Constant.from_numpy(w * scale, w_dtype)
        t = shift.reshape((-1,) + (1,) * (3 - axis))  # broadcasts along the channel axis
        new_conv = conv.replace(args=(conv.args[0], new_w), struct_info=None)
        result = ops.add(new_conv, Constant.from_numpy(t, str(out.dtype)))
        return Tuple(fields=(result, mean, var))

    def visit_StructInfo(self, s: Any) -> Any:
        return s


@dataclass(frozen=True)
class FoldBatchNormToConv2D(Pass):
    """Fold inference batch norms into the constant-weight convolutions before them (see
    the module docstring), in every graph function."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        funcs: dict[Any, Any] = {}
        changed = False
        for gv, f in mod.functions.items():
            if isinstance(f, Function):
                folder = _Folder(f)
                new = folder.visit(f)
                if folder.changed:
                    f = normalize_function(new, mod)
                    changed = True
            funcs[gv] = f
        if not changed:
            return mod
        out = IRModule(functions=funcs, attrs=mod.attrs)
        return Sequential([CanonicalizeBindings(), DeadCodeElimination()],
                          name="FoldBatchNormToConv2D.cleanup")(out)


__all__ = ["FoldBatchNormToConv2D"]
