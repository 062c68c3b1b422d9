"""GPU lowering: LowerThreadBinding's kernels in launch form, ThreadSync's barriers, and
buffer compaction per thread / per block, checked on dlight-scheduled kernels under the
barrier-faithful interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import irc
from irc.core.diagnostics import LoweringError
from irc.target import Target
from irc.tir.expr import IntImm
from irc.tir.functor.stmt_util import map_stmt_children
from irc.tir.interpreter import InterpreterError, compile_func
from irc.tir.stmt import Evaluate, PrimFunc
from irc.tir.transform import lower_primfunc_for_gpu
from irc.tir.transform.thread_sync import is_barrier

sys.path.insert(0, str(Path(__file__).parent.parent / "dlight"))
from dlight_helpers import graph, kernels, random_args

from irc import dlight as dl


def _scheduled(params, body, out) -> tuple[PrimFunc, PrimFunc]:
    ks = kernels(graph(params, body, out))
    before = next(f for f in ks.values() if "T.init()" in f.script())
    t = Target("cuda")
    for rule in dl.gpu.default_rules():
        sch = rule.apply(before, t)
        if sch is not None:
            return before, sch.mod["main"]
    raise AssertionError("no rule applied")


GEMV = ({"x": (1, 256), "w": (256, 10)}, 'gv = R.matmul(x, w, out_dtype="void")', (1, 10))
MATMUL = ({"x": (64, 48), "w": (48, 32)}, 'gv = R.matmul(x, w, out_dtype="void")', (64, 32))
SOFTMAX = ({"x": (4, 100)}, "gv = R.nn.softmax(x, axis=-1)", (4, 100))


def _drop_barriers(func: PrimFunc) -> PrimFunc:
    """``func`` with every barrier replaced by a no-op."""

    def fix(s):
        if is_barrier(s):
            return Evaluate(value=IntImm(dtype="int32", value=0))
        return map_stmt_children(s, fix)

    return func.with_body(fix(func.body))


def _run(func, args):
    arrays = [a.copy() for a in args]
    compile_func(func)(*arrays)
    return arrays[-1]


@pytest.mark.parametrize("case", [GEMV, MATMUL, SOFTMAX], ids=["gemv", "matmul", "softmax"])
def test_kernel_form_matches_and_has_barriers(case):
    before, after = _scheduled(*case)
    low = lower_primfunc_for_gpu(after)
    text = low.script()
    assert '"thread_extent"' in text and "T.thread_binding" not in text
    assert "T.tvm_storage_sync" in text
    args = random_args(before)
    np.testing.assert_allclose(_run(low, args), _run(before, args), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", [GEMV, MATMUL, SOFTMAX], ids=["gemv", "matmul", "softmax"])
def test_a_planted_missing_barrier_is_caught(case):
    before, after = _scheduled(*case)
    broken = _drop_barriers(lower_primfunc_for_gpu(after))
    assert "T.tvm_storage_sync" not in broken.script()
    with pytest.raises(InterpreterError, match="data race"):
        _run(broken, random_args(before))


def test_unbound_axes_run_once():
    # The GEMV's combining nest binds only threadIdx.x in a 10 x 16 block: guarded to y == 0.
    _, after = _scheduled(*GEMV)
    text = lower_primfunc_for_gpu(after).script()
    assert "threadIdx_y == T.int64(0)" in text


def test_local_buffers_hold_one_threads_tile():
    _, after = _scheduled(*MATMUL)
    text = lower_primfunc_for_gpu(after).script()
    local = [ln for ln in text.splitlines() if '"local")' in ln and "T.allocate" in ln]
    assert local and all("T.int64(16)" in ln for ln in local), local


def test_a_barrier_in_divergent_code_is_a_lowering_error():
    func = irc.parse('''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    S = T.alloc_buffer((64,), scope="shared")
    for bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            if A[tx] > T.float32(0):
                S[tx] = A[tx]
                B[tx] = S[63 - tx]
''')
    with pytest.raises(LoweringError, match="only some of them run"):
        lower_primfunc_for_gpu(func)
