"""Before/after pairs for the statement-level passes: FlattenBuffer, VectorizeLoop,
UnrollLoop, Simplify, RemoveNoOp."""

from __future__ import annotations

import pytest

from irc import LoweringError
from irc.ir import assert_structural_equal
from irc.script_parser import parse
from irc.tir import transform as T


def check(passes, before: str, expected: str):
    f = parse(before)
    for p in passes if isinstance(passes, (list, tuple)) else [passes]:
        f = p(f)
    assert_structural_equal(f, parse(expected))


# -- FlattenBuffer ------------------------------------------------------------------------

def test_flatten_buffer_params_and_allocations():
    check([T.FlattenBuffer(), T.Simplify()], '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(4):
        B = T.allocate([4, 16], "float32", "global")
        B_1 = T.Buffer((4, 16), data=B)
        for j, k in T.grid(4, 16):
            B_1[j, k] = A[i * 4 + j, k] * T.float32(2)
        for j, k in T.grid(4, 16):
            C[i * 4 + j, k] = B_1[j, k]
''', '''
@T.prim_func
def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    A_1 = T.Buffer((256,), data=A.data)
    C_1 = T.Buffer((256,), data=C.data)
    for i in range(4):
        B = T.allocate([64], "float32", "global")
        B_1 = T.Buffer((64,), data=B)
        for j, k in T.grid(4, 16):
            B_1[j * 16 + k] = A_1[i * 64 + j * 16 + k] * T.float32(2)
        for j, k in T.grid(4, 16):
            C_1[i * 64 + j * 16 + k] = B_1[j * 16 + k]
''')


def test_flatten_buffer_strided_and_unused_params():
    check([T.FlattenBuffer(), T.Simplify()], '''
@T.prim_func
def main(A: T.Buffer((4, 4), "float32", strides=(8, 1)), B: T.Buffer((4, 4), "float32"),
         C: T.Buffer((16,), "float32")):
    for i, j in T.grid(4, 4):
        C[i * 4 + j] = A[i, j]
''', '''
@T.prim_func
def main(A: T.Buffer((4, 4), "float32", strides=(8, 1)), B: T.Buffer((4, 4), "float32"),
         C: T.Buffer((16,), "float32")):
    A_1 = T.Buffer((32,), data=A.data)
    for i, j in T.grid(4, 4):
        C[i * 4 + j] = A_1[i * 8 + j]
''')


def test_flatten_buffer_rejects_blocks():
    with pytest.raises(LoweringError, match="LowerOpaqueBlock"):
        T.FlattenBuffer()(parse('''
@T.prim_func
def main(A: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("A"):
            vi = T.axis.spatial(4, i)
            A[vi] = T.float32(0)
'''))


# -- VectorizeLoop ------------------------------------------------------------------------

def test_vectorize_elementwise():
    check([T.VectorizeLoop(), T.Simplify()], '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(4):
        for j in T.vectorized(16):
            B[i * 16 + j] = A[i * 16 + j] * T.float32(2) + T.Cast("float32", i)
''', '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(4):
        B[i * 16:i * 16 + 16] = (A[i * 16:i * 16 + 16] * T.Broadcast(T.float32(2), 16)
                                 + T.Broadcast(T.Cast("float32", i), 16))
''')


def test_vectorize_gather_scalar_guard_and_math():
    check([T.VectorizeLoop(), T.Simplify()], '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"),
         Idx: T.Buffer((64,), "int32")):
    for i in range(4):
        for j in T.vectorized(16):
            if i < 2:
                B[i * 16 + j] = A[Idx[i * 16 + j]] + T.if_then_else(i > 0, A[j], T.float32(0))
            else:
                B[i * 16 + j] = T.exp(A[j * 4])
''', '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"),
         Idx: T.Buffer((64,), "int32")):
    for i in range(4):
        if i < 2:
            B[i * 16:i * 16 + 16] = A[Idx[i * 16:i * 16 + 16]] + T.if_then_else(
                0 < i, A[0:16], T.Broadcast(T.float32(0), 16))
        else:
            B[i * 16:i * 16 + 16] = T.exp(A[T.Ramp(0, 4, 16)])
''')


@pytest.mark.parametrize("body", [
    # loop-carried reduction: the store does not move with j
    "B[i] = B[i] + A[i * 16 + j]",
    # guard that varies with j
    "B[i * 16 + j] = T.if_then_else(j < 8, A[j], T.float32(0))",
    # store at a gathered index
    "B[(j * 7) % 16] = A[j]",
])
def test_vectorize_falls_back_to_serial(body):
    text = '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(4):
        for j in T.{kind}(16):
            {body}
'''
    check(T.VectorizeLoop(), text.format(kind="vectorized", body=body),
          text.format(kind="serial", body=body))


def test_vectorize_non_constant_extent_is_serial():
    check(T.VectorizeLoop(), '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for j in T.vectorized(n):
        A[j] = T.float32(0)
''', '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for j in range(n):
        A[j] = T.float32(0)
''')


# -- UnrollLoop ----------------------------------------------------------------------------

def test_unroll_auto_max_step():
    check([T.UnrollLoop(), T.Simplify()], '''
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for i in T.serial(4, annotations={"pragma_auto_unroll_max_step": 8}):
        for j in range(2):
            for k in range(2):
                A[i * 16 + j * 2 + k] = T.float32(0)
        for j in range(16):
            A[i * 16 + j] = T.float32(1)
''', '''
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for i in range(4):
        A[i * 16] = T.float32(0)
        A[i * 16 + 1] = T.float32(0)
        A[i * 16 + 2] = T.float32(0)
        A[i * 16 + 3] = T.float32(0)
        for j in range(16):
            A[i * 16 + j] = T.float32(1)
''')


def test_unroll_explicit_kind_and_implicit_pragma():
    check([T.UnrollLoop(), T.Simplify()], '''
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for i in T.unroll(2):
        for j in range(2):
            A[i * 2 + j] = T.float32(0)
    for i in T.serial(4, annotations={"pragma_auto_unroll_max_step": 16,
                                      "pragma_unroll_explicit": False}):
        A[i] = T.float32(0)
''', '''
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for j in range(2):
        A[j] = T.float32(0)
    for j in range(2):
        A[j + 2] = T.float32(0)
    for i in T.unroll(4):
        A[i] = T.float32(0)
''')


def test_unroll_gives_each_copy_fresh_variables():
    f = T.UnrollLoop()(parse('''
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for i in T.unroll(2):
        for j in range(4):
            A[i * 4 + j] = T.float32(0)
'''))
    first, second = f.body.seq
    assert first.loop_var is not second.loop_var



def test_unroll_copies_only_the_branch_a_constant_condition_takes():
    # A select or if_then_else decided by the unrolled variable keeps the branch taken
    # (Winograd transforms pick one of six sums so); one that depends on another
    # variable stays whole, unless the constant part alone decides it.
    check(T.UnrollLoop(), '''
@T.prim_func
def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"),
         C: T.Buffer((4,), "float32"), X: T.Buffer((16,), "float32"), n: T.int32):
    for i in T.unroll(3):
        A[i] = T.Select(i == 0 or i == 2, X[0], T.Select(not i < 1 and i <= 1, X[1], X[2]))
        B[i] = T.if_then_else(i != 1, X[3], X[4]) + T.if_then_else(i < n, X[5], X[6])
        C[i] = T.Select(i == 1 and n > 0, X[7], X[8])
''', '''
@T.prim_func
def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"),
         C: T.Buffer((4,), "float32"), X: T.Buffer((16,), "float32"), n: T.int32):
    A[0] = X[0]
    B[0] = X[3] + T.if_then_else(0 < n, X[5], X[6])
    C[0] = X[8]
    A[1] = X[1]
    B[1] = X[4] + T.if_then_else(1 < n, X[5], X[6])
    C[1] = T.Select(1 == 1 and n > 0, X[7], X[8])
    A[2] = X[0]
    B[2] = X[3] + T.if_then_else(2 < n, X[5], X[6])
    C[2] = X[8]
''')


# -- Simplify and RemoveNoOp ---------------------------------------------------------------

def test_simplify_statements():
    check(T.Simplify(), '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for i in range(16):
        if i < 16:
            A[i // 4 * 4 + i % 4] = T.float32(0)
        else:
            A[i] = T.float32(1)
        if i < 8:
            if i < 12:
                A[i * 2] = T.float32(2)
            else:
                A[0] = T.float32(3)
        t: T.int32 = i + 1
        A[t] = T.float32(4)
    for j in range(0):
        A[j] = T.float32(5)
    for j in range(n):
        A[T.min(j, n)] = T.float32(6)
''', '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), n: T.int32):
    for i in range(16):
        A[i] = T.float32(0)
        if i < 8:
            A[i * 2] = T.float32(2)
        t: T.int32 = i + 1
        A[t] = T.float32(4)
    for j in range(n):
        A[j] = T.float32(6)
''')


def test_simplify_uses_block_predicate():
    check(T.Simplify(), '''
@T.prim_func
def main(A: T.Buffer((10,), "float32")):
    for io, ii in T.grid(3, 4):
        with T.block("A"):
            T.where(io * 4 + ii < 10)
            T.reads()
            T.writes(A[io * 4 + ii])
            A[T.min(io * 4 + ii, 9)] = T.float32(1)
''', '''
@T.prim_func
def main(A: T.Buffer((10,), "float32")):
    for io, ii in T.grid(3, 4):
        with T.block("A"):
            T.where(io * 4 + ii < 10)
            T.reads()
            T.writes(A[io * 4 + ii])
            A[io * 4 + ii] = T.float32(1)
''')


def test_remove_no_op():
    check(T.RemoveNoOp(), '''
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for i in range(4):
        T.evaluate(0)
    for i in range(4):
        A[i] = A[i]
        A[i + 4] = T.float32(1)
    for i in range(4):
        if i < 2:
            T.evaluate(0)
        else:
            A[i] = T.float32(2)
''', '''
@T.prim_func
def main(A: T.Buffer((64,), "float32")):
    for i in range(4):
        A[i + 4] = T.float32(1)
    for i in range(4):
        if not i < 2:
            A[i] = T.float32(2)
''')
