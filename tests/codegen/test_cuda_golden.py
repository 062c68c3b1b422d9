"""Golden dumps: the CUDA C and host plans generated for a small fixed corpus of
GPU-scheduled kernels stay as recorded.

Each corpus entry is defined with ``te``, scheduled by the default GPU rules
(``dlight.gpu``), lowered for the GPU and passed to the CUDA code generator; the dump is
the kernel source followed by the host plan's steps. A change to the rules, the lowering
or the code generator that alters these files shows up as a diff here; if the change is
intended, regenerate them with ``python tests/codegen/test_cuda_golden.py`` and review
the diff of ``tests/codegen/golden_cuda/``.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from golden_files import assert_matches_golden, write_golden

from irc import dlight as dl
from irc import te, topi
from irc.codegen.cuda import codegen_cuda
from irc.core.module import IRModule
from irc.target import Target
from irc.tir.transform import lower_primfunc_for_gpu

GOLDEN_DIR = os.path.join(os.path.dirname(__file__), "golden_cuda")


def _add_relu():
    a = te.placeholder((1000,), "float32", "a")
    b = te.placeholder((1000,), "float32", "b")
    c = te.compute((1000,), lambda i: te.max(a[i] + b[i], te.const(0.0, "float32")), "c")
    return te.create_prim_func([a, b, c])


def _row_sum():
    a = te.placeholder((64, 300), "float32", "a")
    k = te.reduce_axis((0, 300), "k")
    s = te.compute((64,), lambda i: te.sum(a[i, k], axis=k), "s")
    return te.create_prim_func([a, s])


def _softmax():
    a = te.placeholder((16, 128), "float32", "a")
    return te.create_prim_func([a, topi.nn.softmax(a, axis=1)])


def _matmul():
    a = te.placeholder((128, 96), "float32", "a")
    b = te.placeholder((96, 64), "float32", "b")
    k = te.reduce_axis((0, 96), "k")
    c = te.compute((128, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), "c")
    return te.create_prim_func([a, b, c])


def _symbolic_scale():
    n = te.var("n")
    a = te.placeholder((n, 32), "float32", "a")
    c = te.compute((n, 32), lambda i, j: a[i, j] * te.const(2.0, "float32"), "c")
    return te.create_prim_func([a, c])


CORPUS = {"add_relu": _add_relu, "row_sum": _row_sum, "softmax": _softmax,
          "matmul": _matmul, "symbolic_scale": _symbolic_scale}


def _generate(name: str) -> str:
    func = CORPUS[name]().with_attr("global_symbol", name)
    with Target("cuda"):
        scheduled = dl.ApplyDefaultSchedule(*dl.gpu.default_rules())(
            IRModule(functions={name: func}))[name]
    program = codegen_cuda({name: lower_primfunc_for_gpu(scheduled)})
    lines = [program.source.rstrip("\n"), "", f"// host plan of {name}"]
    for step in program.plans[name].steps:
        lines.append("// " + _step_text(step))
    return "\n".join(lines) + "\n"


def _step_text(step) -> str:
    if step.kind == "launch":
        k = step.kernel
        return (f"launch {k.name} grid=({', '.join(str(g) for g in k.grid)}) "
                f"block={k.block} shared.dyn={k.dyn_shared_bytes} "
                f"params=({', '.join(p.name for p in k.params)})")
    if step.kind == "let":
        return f"let {step.var.name} = {step.value}"
    if step.kind == "assert":
        return f"assert {step.value}: {step.message}"
    if step.kind == "alloc":
        return f"alloc {step.var.name}: {step.extent} x {step.dtype}"
    return f"{step.kind} {step.var.name if step.var is not None else ''}".rstrip()


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_golden_cuda(name):
    assert_matches_golden(os.path.join(GOLDEN_DIR, f"{name}.cu"), _generate(name),
                          "generated CUDA", __file__)


if __name__ == "__main__":
    write_golden(GOLDEN_DIR, CORPUS, _generate, ".cu")
