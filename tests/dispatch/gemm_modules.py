"""Graph modules of matrix products for the dispatch tests, and helpers to dispatch them
and read the result."""

from __future__ import annotations

import numpy as np

import irc
from irc import passes
from irc.testing.models.reference_ops import gelu

# numpy forms of the activations (float64)
NUMPY_ACTS = {
    "": lambda v: v,
    "relu": lambda v: np.maximum(v, 0),
    "gelu": gelu,
    "gelu_tanh": lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3))),
    "silu": lambda v: v / (1 + np.exp(-v)),
}


def dense_reference(args, transposed, act):
    """numpy's ``act(x @ w(.T) + b)`` in float64 for the inputs of :func:`dense_module`."""
    x, w = (a.astype(np.float64) for a in args[:2])
    y = x @ (w.T if transposed else w)
    if len(args) > 2:
        y = y + args[2].astype(np.float64)
    return NUMPY_ACTS[act](y)

ACTS = {"": None, "relu": "R.nn.relu", "gelu": "R.nn.gelu", "gelu_tanh": "R.nn.gelu_tanh",
        "silu": "R.nn.silu"}


def tensor_type(shape, dtype="float32"):
    return f'R.Tensor(({", ".join(map(str, shape))}{"," if len(shape) == 1 else ""}), ' \
           f'dtype="{dtype}")'


def dense_module(x_shape, n, transposed, bias_shape, act, dtype="float32", out_dtype=None):
    """``act(matmul(x, w or permute_dims(w)) + b)`` as a module (``out_dtype``: the
    product's dtype when it is not ``dtype``; the bias has it)."""
    k = x_shape[-1]
    w_shape = (n, k) if transposed else (k, n)
    odt = out_dtype or dtype
    out = tuple(x_shape[:-1]) + (n,)
    if bias_shape is not None:
        out = np.broadcast_shapes(out, bias_shape)
    params = [f"x: {tensor_type(x_shape, dtype)}", f"w: {tensor_type(w_shape, dtype)}"]
    lines = []
    rhs = "w"
    if transposed:
        lines.append("wt = R.permute_dims(w, axes=None)")
        rhs = "wt"
    lines.append(f'y = R.matmul(x, {rhs}, out_dtype="{out_dtype or "void"}")')
    if bias_shape is not None:
        params.append(f"b: {tensor_type(bias_shape, odt)}")
        lines.append("y1 = R.add(y, b)")
        lines.append("y = y1")
    if act:
        lines.append(f"y2 = {ACTS[act]}(y)")
        lines.append("y = y2")
    lines.append("gv = y")
    body = "\n".join(f"            {ln}" for ln in lines)
    return irc.parse(f"""
@I.ir_module
class Module:
    @R.function
    def main({", ".join(params)}) -> {tensor_type(out, odt)}:
        with R.dataflow():
{body}
            R.output(gv)
        return gv
""")


def batch_matmul_module(a_shape, b_shape, dtype="float32", out_dtype=None):
    """``matmul(a, b)`` of two rank-3 tensors as a module."""
    out = (a_shape[0], a_shape[1], b_shape[2])
    return irc.parse(f"""
@I.ir_module
class Module:
    @R.function
    def main(a: {tensor_type(a_shape, dtype)},
             b: {tensor_type(b_shape, dtype)}) -> {tensor_type(out, out_dtype or dtype)}:
        with R.dataflow():
            gv = R.matmul(a, b, out_dtype="{out_dtype or "void"}")
            R.output(gv)
        return gv
""")


def random_inputs(mod, rng):
    f = mod["main"]
    out = []
    for p in f.params:
        shape = [int(d.value) for d in p.struct_info.shape]
        if p.struct_info.dtype == "int8":
            out.append(rng.integers(-8, 8, shape).astype("int8"))
        else:
            out.append(rng.standard_normal(shape).astype(p.struct_info.dtype))
    return out


def dispatch(mod, patterns, bind_constants=True):
    mod = passes.FuseOpsByPattern(patterns, bind_constants=bind_constants,
                                  annotate_codegen=True)(mod)
    return passes.RunCodegen()(mod)


def packed_calls(mod):
    """The symbols of the module's ``R.call_dps_packed`` calls, as printed."""
    return [line.split('R.call_dps_packed("')[1].split('"')[0]
            for line in mod.script().splitlines() if "R.call_dps_packed(" in line]


def run_main(mod, args, params=None):
    """``main`` of ``mod`` compiled for the CPU and run by the VM on ``args``: numpy."""
    ex = irc.compile(mod, target="llvm", params=params)
    return irc.vm.VirtualMachine(ex, irc.cpu())["main"](*[irc.tensor(a) for a in args]).numpy()
