"""Workloads and checks shared by the schedule tests."""

from __future__ import annotations

import numpy as np
import pytest

import irc
from irc import te, tir
from irc.ir import assert_structural_equal
from irc.tir import Schedule, Trace
from irc.tir.interpreter import run
from irc.tir.schedule import pack_params


def matmul_add(n=16, m=24, k=32):
    """``D = A @ B + 1`` (a reduction block C and an elementwise block D)."""
    A = te.placeholder((n, k), "float32", name="A")
    B = te.placeholder((k, m), "float32", name="B")
    kk = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, kk] * B[kk, j], axis=kk), name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] + 1.0, name="D")
    return te.create_prim_func([A, B, D])


def three_stage(n=16, m=24, k=32):
    """``D = relu((2 * A) @ W + 1)``: elementwise B, reduction C (W layout-free), D."""
    A = te.placeholder((n, k), "float32", name="A")
    W = te.placeholder((k, m), "float32", name="W")
    B = te.compute((n, k), lambda i, j: A[i, j] * 2.0, name="B")
    kk = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(B[i, kk] * W[kk, j], axis=kk), name="C",
                   attrs={"layout_free_placeholders": [W]})
    D = te.compute((n, m), lambda i, j: te.max(C[i, j] + 1.0, tir.const(0.0, "float32")),
                   name="D")
    return te.create_prim_func([A, W, D])


def elementwise3(n=16, m=32):
    """``D = (2 * A + 1) ** 2`` in three elementwise blocks B, C, D."""
    A = te.placeholder((n, m), "float32", name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1.0, name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] * C[i, j], name="D")
    return te.create_prim_func([A, D])


def row_max(n=8, m=64):
    """``B[i] = max_k A[i, k]`` (a max reduction)."""
    A = te.placeholder((n, m), "float32", name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.max(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B])


def _inputs(func, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal([int(s.value) for s in b.shape]).astype(b.dtype)
            for b in func.buffers]


def check_numeric(orig, scheduled, packed=False, rtol=1e-4):
    """Run both functions in the interpreter on the same random inputs and compare
    every buffer (outputs are the buffers written)."""
    args0 = _inputs(orig)
    args1 = [a.copy() for a in args0]
    if packed:
        args1 = pack_params(scheduled, *args1)
    run(orig, *args0)
    run(scheduled, *args1)
    np.testing.assert_allclose(args0[-1], args1[-1], rtol=rtol, atol=rtol)


def check_llvm(orig, scheduled, packed=False, rtol=1e-4):
    """Compile the scheduled function with LLVM and compare with the interpreter run
    of the unscheduled one."""
    args0 = _inputs(orig)
    args1 = [a.copy() for a in args0]
    if packed:
        args1 = pack_params(scheduled, *args1)
    run(orig, *args0)
    mod = irc.build(scheduled, target="llvm")
    tensors = [irc.tensor(a) for a in args1]
    mod["main"](*tensors)
    np.testing.assert_allclose(args0[-1], tensors[-1].numpy(), rtol=rtol, atol=rtol)


def assert_ir(func, expected_text: str):
    """``func`` is structurally equal to the parsed ``expected_text`` (a @T.prim_func)."""
    expected = irc.parse(expected_text)
    if isinstance(expected, irc.IRModule):
        expected = expected["main"]
    assert_structural_equal(func, expected)


def assert_print_roundtrip(func):
    """The printed function parses back to a structurally equal one."""
    assert_structural_equal(irc.parse(func.script()), func)


def verify_trace_roundtrip(sch: Schedule, orig):
    """JSON -> replay and printed Python -> exec both reproduce ``sch.func``."""
    text = sch.trace.to_json_str()
    replayed = Schedule(orig)
    Trace.from_json(text).apply_to_schedule(replayed)
    assert_structural_equal(replayed.func, sch.func)
    executed = Schedule(orig)
    exec(sch.trace.as_python(), {"sch": executed})  # noqa: S102 - code printed by the trace
    assert_structural_equal(executed.func, sch.func)
    assert executed.trace.to_json() == sch.trace.to_json()


def schedule_error(fn, *words):
    """Call ``fn`` expecting a ScheduleError whose message contains every word."""
    with pytest.raises(irc.ScheduleError) as info:
        fn()
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} not in error message: {msg}"
    return info.value


def scale(n=16, m=32):
    """``B = A * 2`` (one block)."""
    A = te.placeholder((n, m), "float32", name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    return te.create_prim_func([A, B])


def parse_func(text: str):
    """The PrimFunc of ``@T.prim_func`` text."""
    f = irc.parse(text)
    return f["main"] if isinstance(f, irc.IRModule) else f
