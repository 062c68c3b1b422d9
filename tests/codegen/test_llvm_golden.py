"""Golden dumps: the LLVM IR generated for a small fixed corpus stays as recorded.

A change to the code generator that alters these files shows up as a diff here; if the
change is intended, regenerate them with ``python tests/codegen/test_llvm_golden.py``
and review the diff of ``tests/codegen/golden/``.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from golden_files import assert_matches_golden, write_golden
from llvm_kernels import bcast, buf, func, loop, ramp, store

from irc import tir
from irc.codegen import codegen_llvm
from irc.tir import stmt as S

GOLDEN_DIR = os.path.join(os.path.dirname(__file__), "golden")
# A fixed target: the text must not depend on the machine running the tests.
TARGET = "llvm -mcpu=x86-64-v3 -num-cores=4 -vector-width=256"


def _elementwise():
    a, b, c = buf("a", (64,)), buf("b", (64,)), buf("c", (64,))
    i = tir.var("i")
    return func([a, b, c], loop(i, 64, store(c, i, a[i] * b[i] + 1.0)))


def _reduction():
    a, s = buf("a", (8, 32)), buf("s", (8,))
    i, k = tir.var("i"), tir.var("k")
    return func([a, s], loop(i, 8, tir.seq(store(s, i, 0.0),
                                           loop(k, 32, store(s, i, s[i] + a[i, k])))))


def _parallel():
    n = tir.var("n")
    a, b = buf("a", (n,), "int32"), buf("b", (n,), "int32")
    i = tir.var("i")
    return func([a, b], loop(i, n, store(b, i, tir.floordiv(a[i], 4) + tir.floormod(a[i], 3)),
                             kind="parallel"))


def _vectors():
    a, b = buf("a", (64,)), buf("b", (64,))
    i = tir.var("i")
    body = store(b, ramp(i * 8, 8), a[ramp(i * 8, 8)] + a[ramp(i, 8, 8)] * bcast(
        tir.const(0.5, "float32"), 8))
    return func([a, b], loop(i, 8, body))


def _local_unrolled_f16():
    a, b = buf("a", (4,), "float16"), buf("b", (1,), "float16")
    t = tir.var("t", "handle")
    tb = tir.decl_buffer((4,), "float16", "t", data=t, scope="local")
    i, j = tir.var("i"), tir.var("j")
    body = tir.seq(loop(i, 4, store(tb, i, a[i] * a[i]), kind="unrolled"),
                   store(b, 0, tir.const(0.0, "float16")),
                   loop(j, 4, store(b, 0, b[0] + tb[j]), kind="unrolled"))
    return func([a, b], S.Allocate(buffer_var=t, dtype="float16", extents=(tir.const(4),),
                                   scope="local", body=body))


def _guarded_pad():
    a, b = buf("a", (6,)), buf("b", (8,))
    i = tir.var("i")
    val = tir.if_then_else(tir.all(i >= 1, i < 7), a[i - 1], tir.const(0.0, "float32"))
    body = S.AssertStmt(condition=a[0] == a[0], message="a[0] is NaN", body=store(b, i, val))
    return func([a, b], loop(i, 8, body))


CORPUS = {
    "elementwise": _elementwise, "reduction": _reduction, "parallel": _parallel,
    "vectors": _vectors, "local_unrolled_f16": _local_unrolled_f16,
    "guarded_pad": _guarded_pad,
}


def _generate(name: str) -> str:
    return codegen_llvm({name: CORPUS[name]()}, TARGET, module_name=name).text


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_golden_llvm_ir(name):
    assert_matches_golden(os.path.join(GOLDEN_DIR, f"{name}.ll"), _generate(name),
                          "generated LLVM IR", __file__)


if __name__ == "__main__":
    write_golden(GOLDEN_DIR, CORPUS, _generate, ".ll")
