"""decompose_reduction and rfactor."""

from schedule_helpers import (
    assert_ir,
    check_llvm,
    check_numeric,
    matmul_add,
    row_max,
    schedule_error,
    verify_trace_roundtrip,
)

from irc.tir import Schedule


def test_decompose_reduction():
    f = row_max()
    sch = Schedule(f, debug_mask="all")
    b = sch.get_block("B")
    i, k = sch.get_loops(b)
    k0, k1 = sch.split(k, factors=[None, 16])
    init = sch.decompose_reduction(b, k0)
    assert sch.get(init).name == "B_init"
    assert_ir(sch.func, '''
@T.prim_func
def main(A: T.Buffer((8, 64), "float32"), B: T.Buffer((8,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i in range(8):
        with T.block("B_init"):
            v_i_init = T.axis.spatial(8, i)
            T.reads()
            T.writes(B[v_i_init])
            B[v_i_init] = T.float32("-inf")
        for k_0, k_1 in T.grid(4, 16):
            with T.block("B"):
                v_i = T.axis.spatial(8, i)
                v_k = T.axis.reduce(64, k_0 * 16 + k_1)
                T.reads(A[v_i, v_k], B[v_i])
                T.writes(B[v_i])
                B[v_i] = T.max(B[v_i], A[v_i, v_k])
''')
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_decompose_reduction_copies_spatial_loops():
    f = matmul_add()
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i, j0, k, j1)
    sch.vectorize(j1)
    init = sch.decompose_reduction(c, k)
    init_loops = [sch.get(x) for x in sch.get_loops(init)]
    assert [lp.loop_var.name for lp in init_loops] == ["i", "j_0", "j_1_init"]
    assert init_loops[-1].kind == "vectorized"
    assert sch.get(c).init is None
    check_numeric(f, sch.func)
    check_llvm(f, sch.func)


def test_decompose_reduction_keeps_a_guard_on_a_shape_variable():
    # A symbolic row loop split by 4: the init runs under the same guard (i < n) as the
    # update, else it writes past the last row (heap corruption at run time).
    import numpy as np

    import irc
    from irc import te
    from irc.core.functor import post_order_visit
    from irc.core.module import IRModule
    from irc.tir.expr import LT
    from irc.tir.stmt import BlockRealize

    n = te.var("n")
    a = te.placeholder((n, 8), "float32", "a")
    k = te.reduce_axis((0, 8), "k")
    c = te.compute((n, 8), lambda i, j: te.sum(a[i, k] * a[k % 1, j], axis=k), "c")
    sch = Schedule(te.create_prim_func([a, c]))
    b = sch.get_block("c")
    i, j, kk = sch.get_loops(b)
    i0, i1 = sch.split(i, [None, 4])
    sch.reorder(i0, j, kk, i1)
    init = sch.decompose_reduction(b, kk)
    guards = []
    post_order_visit(sch.func.body, lambda x: guards.append(x.predicate)
                     if isinstance(x, BlockRealize) and x.block.name == sch.get(init).name
                     else None)
    assert len(guards) == 1 and isinstance(guards[0], LT)
    mod = irc.build(IRModule(functions={"main": sch.func}), target="llvm")
    x = np.arange(7 * 8, dtype="float32").reshape(7, 8)
    out = irc.tensor(np.zeros((7, 8), "float32"))
    mod["main"](irc.tensor(x), out)
    np.testing.assert_allclose(out.numpy(), x.sum(1, keepdims=True) * x[0], rtol=1e-6)


def test_decompose_reduction_errors():
    f = matmul_add()
    sch = Schedule(f)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    di, dj = sch.get_loops(sch.get_block("D"))
    schedule_error(lambda: sch.decompose_reduction(sch.get_block("D"), di),
                   "block 'D' has no init")
    schedule_error(lambda: sch.decompose_reduction(c, di), "does not enclose block 'C'")
    sch.reorder(k, i)
    schedule_error(lambda: sch.decompose_reduction(c, i), "loop 'k' above loop 'i'",
                   "reduction")


def test_rfactor():
    f = row_max()
    sch = Schedule(f, debug_mask="all")
    b = sch.get_block("B")
    i, k = sch.get_loops(b)
    k0, k1 = sch.split(k, factors=[None, 16])
    rf = sch.rfactor(k1, factor_axis=1)
    assert sch.get(rf).name == "B_rf"
    assert_ir(sch.func, '''
@T.prim_func
def main(A: T.Buffer((8, 64), "float32"), B: T.Buffer((8,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    B_rf = T.alloc_buffer((8, 16))
    for i, k_0, k_1 in T.grid(8, 4, 16):
        with T.block("B_rf"):
            vk_1, v_i, vk_0 = T.axis.remap("SSR", [k_1, i, k_0])
            T.reads(A[v_i, vk_0 * 16 + vk_1])
            T.writes(B_rf[v_i, vk_1])
            with T.init():
                B_rf[v_i, vk_1] = T.float32("-inf")
            B_rf[v_i, vk_1] = T.max(B_rf[v_i, vk_1], A[v_i, vk_0 * 16 + vk_1])
    for i, k_1 in T.grid(8, 16):
        with T.block("B"):
            v_i, vk_1 = T.axis.remap("SR", [i, k_1])
            T.reads(B_rf[v_i, vk_1])
            T.writes(B[v_i])
            with T.init():
                B[v_i] = T.float32("-inf")
            B[v_i] = T.max(B[v_i], B_rf[v_i, vk_1])
''')
    check_numeric(f, sch.func)
    verify_trace_roundtrip(sch, f)


def test_rfactor_then_vectorize_the_factored_loop():
    f = matmul_add(8, 8, 64)
    sch = Schedule(f, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    k0, k1 = sch.split(k, factors=[None, 8])
    schedule_error(lambda: sch.vectorize(k1), "reduction")
    rf = sch.rfactor(k1, factor_axis=0)
    rf_loops = sch.get_loops(rf)
    sch.reorder(rf_loops[0], rf_loops[1], rf_loops[2], rf_loops[3])
    sch.vectorize(rf_loops[3])  # k_1 is spatial in the factored block
    check_numeric(f, sch.func)
    check_llvm(f, sch.func)


def test_rfactor_errors():
    f = matmul_add()
    sch = Schedule(f)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    schedule_error(lambda: sch.rfactor(j, 0), "rfactor", "loop 'j' is not a reduction loop")
    schedule_error(lambda: sch.rfactor(k, 5), "factor_axis 5 is out of range")
    di, dj = sch.get_loops(sch.get_block("D"))
    schedule_error(lambda: sch.rfactor(dj, 0), "block 'D' is not a reduction block")
    f2 = row_max()
    s2 = Schedule(f2)
    b = s2.get_block("B")
    i, k = s2.get_loops(b)
    s2.decompose_reduction(b, i)
    schedule_error(lambda: s2.rfactor(k, 0), "not a reduction block")


def test_rfactor_after_a_non_divisible_split():
    """A guard from a non-divisible split is fine as long as no slice of the factored loop
    is empty; a split whose factors overshoot leaves an empty last slice whose partial
    result would never be initialized, and is refused (found by the random-schedule
    test)."""
    f = matmul_add()
    extent = None
    sch = Schedule(f)
    c = sch.get_block("C")
    k = sch.get_loops(c)[-1]
    extent = sch.get(k).extent.value
    k0, _ = sch.split(k, [None, extent // 2 + 1])  # ceil division: last slice partial
    sch.rfactor(k0, 0)
    check_numeric(f, sch.func)

    sch = Schedule(f)
    k = sch.get_loops(sch.get_block("C"))[-1]
    k0, _ = sch.split(k, [3, extent // 2])  # 3 slices of extent/2: the last is empty
    schedule_error(lambda: sch.rfactor(k0, 0), "rfactor",
                   "masks every iteration of the last slice")
