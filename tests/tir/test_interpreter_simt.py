"""The interpreter runs GPU kernels (kernel form: ``thread_extent`` launches) with SIMT
semantics: threads of a block in lock-step between barriers, shared memory per block,
local memory per thread, and data races and barrier divergence reported as errors."""

import numpy as np
import pytest

import irc
from irc.tir.interpreter import InterpreterError, compile_func, run
from irc.tir.interpreter.simt import Launch, Shadow

LAUNCH = 'with T.attr(T.iter_var({v}, {n}, "opaque", "{tag}"), "thread_extent", {n}):'


def kernel(params: str, body: str, grid: int = 1, block: int = 32, extra: str = "",
           name: str = "main") -> irc.tir.PrimFunc:
    """A PrimFunc of one kernel: ``grid`` blocks (blockIdx_x) of ``block`` threads
    (threadIdx_x) running ``body`` (indented by 12 spaces); ``extra`` is text before the
    kernel (symbolic shapes)."""
    return irc.parse(f'''
@T.prim_func
def {name}({params}):
{extra}    {LAUNCH.format(v="blockIdx_x", n=grid, tag="blockIdx.x")}
        {LAUNCH.format(v="threadIdx_x", n=block, tag="threadIdx.x")}
{body}''')


def drop_barriers(text: str) -> str:
    """``text`` without its ``T.tvm_storage_sync`` lines."""
    return "".join(line for line in text.splitlines(True) if "tvm_storage_sync" not in line)


REVERSE = '''\
            S = T.allocate([32], "float32", "shared")
            S_1 = T.Buffer((32,), data=S, scope="shared")
            S_1[threadIdx_x] = A[blockIdx_x * 32 + threadIdx_x]
            T.tvm_storage_sync("shared")
            B[blockIdx_x * 32 + threadIdx_x] = S_1[31 - threadIdx_x]
'''
REVERSE_PARAMS = 'A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")'


def reversal_args():
    return np.arange(128, dtype="float32"), np.zeros(128, "float32")


def test_shared_memory_reversal_with_a_barrier_matches_numpy():
    a, b = reversal_args()
    run(kernel(REVERSE_PARAMS, REVERSE, grid=4), a, b)
    np.testing.assert_array_equal(b, a.reshape(4, 32)[:, ::-1].reshape(-1))


def test_missing_barrier_is_a_data_race():
    # The planted bug: the same kernel without its barrier. Thread 31 runs first and
    # reads S[0] before thread 0 writes it.
    func = kernel(REVERSE_PARAMS, drop_barriers(REVERSE),
                  grid=4)
    assert "tvm_storage_sync" not in func.script()
    a, b = reversal_args()
    with pytest.raises(InterpreterError, match=(
            r"data race on shared memory S\[\d+\] in kernel main_kernel, block \(3, 0, 0\): "
            r"thread \(\d+, 0, 0\) (reads|writes) it and thread \(\d+, 0, 0\) (reads|writes) "
            r"it with no barrier in between \(a missing T.tvm_storage_sync\)")):
        run(func, a, b)


def test_missing_barrier_race_names_the_writer_and_the_reader():
    # Threads run in reverse order: thread 16 reads S[15] (unwritten, no race yet), then
    # thread 15 writes it in the same epoch.
    func = kernel(REVERSE_PARAMS, drop_barriers(REVERSE),
                  grid=1)
    with pytest.raises(InterpreterError, match=r"S\[15\] .*thread \(16, 0, 0\) reads it and "
                                               r"thread \(15, 0, 0\) writes it"):
        run(func, *reversal_args())


def test_tree_reduction_in_shared_memory_matches_numpy():
    func = kernel('A: T.Buffer((256,), "float32"), B: T.Buffer((8,), "float32")', '''\
            S = T.allocate([32], "float32", "shared")
            S_1 = T.Buffer((32,), data=S, scope="shared")
            S_1[threadIdx_x] = A[blockIdx_x * 32 + threadIdx_x]
            T.tvm_storage_sync("shared")
            for k in range(5):
                if threadIdx_x < T.shift_right(16, k):
                    S_1[threadIdx_x] = S_1[threadIdx_x] + S_1[threadIdx_x + T.shift_right(16, k)]
                T.tvm_storage_sync("shared")
            if threadIdx_x == 0:
                B[blockIdx_x] = S_1[0]
''', grid=8)
    a = np.random.default_rng(0).standard_normal(256).astype("float32")
    b = np.zeros(8, "float32")
    run(func, a, b)
    np.testing.assert_allclose(b, a.reshape(8, 32).sum(axis=1), rtol=1e-5)


def test_tree_reduction_without_the_loop_barrier_races():
    func = kernel('A: T.Buffer((32,), "float32"), B: T.Buffer((1,), "float32")', '''\
            S = T.allocate([32], "float32", "shared")
            S_1 = T.Buffer((32,), data=S, scope="shared")
            S_1[threadIdx_x] = A[threadIdx_x]
            T.tvm_storage_sync("shared")
            for k in range(5):
                if threadIdx_x < T.shift_right(16, k):
                    S_1[threadIdx_x] = S_1[threadIdx_x] + S_1[threadIdx_x + T.shift_right(16, k)]
            if threadIdx_x == 0:
                B[0] = S_1[0]
''')
    with pytest.raises(InterpreterError, match="data race on shared memory S"):
        run(func, np.ones(32, "float32"), np.zeros(1, "float32"))


MATMUL = '''
@T.prim_func
def matmul(A: T.Buffer((3072,), "float32"), B: T.Buffer((1536,), "float32"),
           C: T.Buffer((2048,), "float32")):
    with T.attr(T.iter_var(ty, 16, "opaque", "threadIdx.y"), "thread_extent", 16):
        with T.attr(T.iter_var(tx, 8, "opaque", "threadIdx.x"), "thread_extent", 8):
            acc = T.allocate([16], "float32", "local")
            acc_1 = T.Buffer((16,), data=acc, scope="local")
            As = T.allocate([1024], "float32", "shared")
            As_1 = T.Buffer((1024,), data=As, scope="shared")
            Bs = T.allocate([512], "float32", "shared")
            Bs_1 = T.Buffer((512,), data=Bs, scope="shared")
            for i, j in T.grid(4, 4):
                acc_1[i * 4 + j] = T.float32(0)
            for ko in range(3):
                T.tvm_storage_sync("shared")
                for f in range(8):
                    l: T.int32 = f * 128 + ty * 8 + tx
                    As_1[l] = A[l // 16 * 48 + ko * 16 + l % 16]
                for f in range(4):
                    Bs_1[f * 128 + ty * 8 + tx] = B[ko * 512 + f * 128 + ty * 8 + tx]
                T.tvm_storage_sync("shared")
                for ki, i, j in T.grid(16, 4, 4):
                    acc_1[i * 4 + j] = acc_1[i * 4 + j] + (As_1[ty * 64 + i * 16 + ki]
                                                           * Bs_1[ki * 32 + tx * 4 + j])
            for i, j in T.grid(4, 4):
                C[ty * 128 + i * 32 + tx * 4 + j] = acc_1[i * 4 + j]
'''


def matmul_args():
    rng = np.random.default_rng(0)
    return (rng.standard_normal(3072).astype("float32"),
            rng.standard_normal(1536).astype("float32"), np.zeros(2048, "float32"))


def test_tiled_matmul_kernel_with_shared_tiles_matches_numpy():
    # The shape of the GPU Matmul rule's kernel: a 64x32 tile per block of 16x8 threads,
    # 4x4 outputs per thread, k in steps of 16 through shared memory.
    a, b, c = matmul_args()
    run(irc.parse(MATMUL), a, b, c)
    want = a.reshape(64, 48).astype("float64") @ b.reshape(48, 32)
    np.testing.assert_allclose(c.reshape(64, 32), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("barrier", [0, 1])
def test_tiled_matmul_without_either_barrier_races(barrier):
    # Without the first barrier, the next k step overwrites tiles that slower threads
    # still read; without the second, threads read tiles others have not written yet.
    lines = MATMUL.splitlines(True)
    syncs = [n for n, line in enumerate(lines) if "tvm_storage_sync" in line]
    del lines[syncs[barrier]]
    with pytest.raises(InterpreterError, match=r"data race on shared memory (As|Bs)\[\d+\] in "
                                               r"kernel matmul_kernel, block \(0, 0, 0\)"):
        run(irc.parse("".join(lines)), *matmul_args())


def test_barrier_under_a_thread_condition_is_barrier_divergence():
    func = kernel('A: T.Buffer((32,), "float32")', '''\
            A[threadIdx_x] = T.float32(1)
            if threadIdx_x < 16:
                T.tvm_storage_sync("shared")
''')
    with pytest.raises(InterpreterError, match=(
            r"barrier divergence in kernel main_kernel, block \(0, 0, 0\): threads "
            r"\(16, 0, 0\), \(17, 0, 0\), \(18, 0, 0\), \(19, 0, 0\) and 12 more finished "
            r"while threads \(0, 0, 0\), .* wait at barrier #1")):
        run(func, np.zeros(32, "float32"))


def test_threads_at_different_barriers_is_barrier_divergence():
    func = kernel('A: T.Buffer((32,), "float32")', '''\
            if threadIdx_x < 16:
                T.tvm_storage_sync("shared")
            else:
                T.tvm_storage_sync("shared")
            A[threadIdx_x] = T.float32(1)
''')
    with pytest.raises(InterpreterError, match=r"thread \(31, 0, 0\) waits at barrier #2 "
                                               r"while thread \(15, 0, 0\) waits at barrier #1"):
        run(func, np.zeros(32, "float32"))


def test_local_memory_is_private_to_each_thread():
    # Every thread writes L[0], waits, then reads it back: one shared L would race (and
    # hold one thread's value); per-thread L keeps each thread's own.
    func = kernel(REVERSE_PARAMS, '''\
            L = T.allocate([1], "float32", "local")
            L_1 = T.Buffer((1,), data=L, scope="local")
            L_1[0] = A[blockIdx_x * 32 + threadIdx_x]
            T.tvm_storage_sync("shared")
            B[blockIdx_x * 32 + threadIdx_x] = L_1[0] * T.float32(2)
''', grid=4)
    a, b = reversal_args()
    run(func, a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_shared_memory_is_fresh_for_every_block():
    # Thread 0 of each block reads S[0] before writing it: fresh memory reads NaN in
    # every block, memory kept from the previous block would read its value.
    func = kernel('A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")', '''\
            S = T.allocate([1], "float32", "shared")
            S_1 = T.Buffer((1,), data=S, scope="shared")
            if threadIdx_x == 0:
                B[blockIdx_x] = S_1[0]
                S_1[0] = A[blockIdx_x]
''', grid=4)
    b = np.zeros(4, "float32")
    run(func, np.arange(4, dtype="float32"), b)
    assert np.isnan(b).all()


def test_uninitialized_shared_memory_reads_as_nan_or_a_sentinel():
    func = kernel('A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32"), '
                  'C: T.Buffer((32,), "int32"), D: T.Buffer((32,), "float32")', '''\
            L = T.allocate([1], "float32", "local")
            L_1 = T.Buffer((1,), data=L, scope="local")
            D[threadIdx_x] = L_1[0]
            S = T.allocate([32], "float32", "shared")
            S_1 = T.Buffer((32,), data=S, scope="shared")
            Q = T.allocate([32], "int32", "shared")
            Q_1 = T.Buffer((32,), "int32", data=Q, scope="shared")
            if threadIdx_x < 31:
                S_1[threadIdx_x] = A[threadIdx_x]
                Q_1[threadIdx_x] = threadIdx_x
            T.tvm_storage_sync("shared")
            B[threadIdx_x] = S_1[threadIdx_x]
            C[threadIdx_x] = Q_1[threadIdx_x]
''')
    a = np.arange(32, dtype="float32")
    b, c, d = np.zeros(32, "float32"), np.zeros(32, "int32"), np.zeros(32, "float32")
    run(func, a, b, c, d)
    assert np.isnan(d).all()
    np.testing.assert_array_equal(b[:31], a[:31])
    assert np.isnan(b[31])
    np.testing.assert_array_equal(c[:31], np.arange(31))
    assert c[31] == np.iinfo("int32").max


def test_blocks_writing_the_same_global_element_race():
    func = kernel('B: T.Buffer((32,), "float32")', '''\
            B[threadIdx_x] = T.Cast("float32", blockIdx_x)
''', grid=2)
    with pytest.raises(InterpreterError, match=(
            r"data race on global memory B\[\d+\] in kernel main_kernel: thread \(\d+, 0, 0\) "
            r"of block \(1, 0, 0\) writes it and thread \(\d+, 0, 0\) of block \(0, 0, 0\) "
            r"writes it; blocks cannot synchronise within a kernel")):
        run(func, np.zeros(32, "float32"))


def test_a_block_reading_what_another_block_writes_races():
    # Block 1 (run first) reads B[0..31], which block 0 writes later: the write races
    # with the earlier read of another block, whatever the barriers.
    func = kernel('B: T.Buffer((64,), "float32")', '''\
            if blockIdx_x == 1:
                B[32 + threadIdx_x] = B[threadIdx_x]
            T.tvm_storage_sync("shared")
            if blockIdx_x == 0:
                B[threadIdx_x] = T.float32(1)
''', grid=2)
    with pytest.raises(InterpreterError, match=r"global memory B\[\d+\] .* of block \(1, 0, 0\) "
                                               r"reads it and .* of block \(0, 0, 0\) writes it"):
        run(func, np.zeros(64, "float32"))


def test_threads_of_a_block_need_a_barrier_between_global_write_and_read():
    body = '''\
            if threadIdx_x == 0:
                B[0] = A[0] * T.float32(3)
            T.tvm_storage_sync("shared")
            C[threadIdx_x] = B[0] + A[threadIdx_x]
'''
    params = ('A: T.Buffer((32,), "float32"), B: T.Buffer((1,), "float32"), '
              'C: T.Buffer((32,), "float32")')
    a = np.arange(32, dtype="float32") + 1
    b, c = np.zeros(1, "float32"), np.zeros(32, "float32")
    run(kernel(params, body), a, b, c)  # every thread reads A[0]: many readers are fine
    np.testing.assert_array_equal(c, a + 3)
    racy = kernel(params, drop_barriers(body))
    with pytest.raises(InterpreterError, match=r"global memory B\[0\] in kernel main_kernel, "
                                               r"block \(0, 0, 0\): thread \(\d+, 0, 0\) reads "
                                               r"it and thread \(0, 0, 0\) writes it"):
        run(racy, a, b, c)


def test_a_thread_reads_and_writes_its_own_elements_freely():
    func = kernel('B: T.Buffer((32,), "float32")', '''\
            for k in range(3):
                B[threadIdx_x] = B[threadIdx_x] + T.float32(1)
''')
    b = np.zeros(32, "float32")
    run(func, b)
    np.testing.assert_array_equal(b, np.full(32, 3, "float32"))


def test_a_write_after_two_readers_races_whichever_reader_wrote():
    # The shadow does not depend on the scheduler's order: thread 0 reads, thread 1
    # reads, then thread 0 writes (threads of a block never interleave like this inside
    # an epoch in the interpreter, but the check holds for any order).
    launch = Launch("k", (("threadIdx.x", 4),))
    launch.epoch, launch.first, launch.end = 1, 0, 4
    shadow = Shadow(launch, "S", False)
    shadow.rd(3, 0)
    shadow.rd(3, 1)
    with pytest.raises(InterpreterError, match=r"S\[3\] in kernel k, block \(0, 0, 0\): "
                                               r"thread \(1, 0, 0\) reads it and thread "
                                               r"\(0, 0, 0\) writes it"):
        shadow.wr(3, 0)
    launch.epoch = 2  # after a barrier the same accesses are fine
    shadow.rd(5, 0)
    shadow.rd(5, 1)
    launch.epoch = 3
    assert shadow.wr(5, 0) == 5


def test_warp_barriers_are_not_modeled():
    func = kernel('A: T.Buffer((32,), "float32")', '''\
            A[threadIdx_x] = T.float32(1)
            T.tvm_storage_sync("warp")
''')
    with pytest.raises(InterpreterError, match=r'T.tvm_storage_sync\("warp"\) in kernel '
                                               "main_kernel is not modeled"):
        run(func, np.zeros(32, "float32"))


def test_symbolic_grid_from_a_shape_variable():
    func = kernel("a: T.handle, b: T.handle", '''\
            if blockIdx_x * 32 + threadIdx_x < n:
                B[blockIdx_x * 32 + threadIdx_x] = A[blockIdx_x * 32 + threadIdx_x] + T.float32(1)
''', grid="(n + 31) // 32", extra='''\
    n = T.int32()
    A = T.match_buffer(a, (n,))
    B = T.match_buffer(b, (n,))
''')
    for n in (1, 70):
        a = np.arange(n, dtype="float32")
        b = np.zeros(n, "float32")
        run(func, a, b)
        np.testing.assert_array_equal(b, a + 1)


def test_two_dimensional_block_transposes_a_tile_through_shared_memory():
    func = irc.parse('''
@T.prim_func
def transpose(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    with T.attr(T.iter_var(threadIdx_y, 8, "opaque", "threadIdx.y"), "thread_extent", 8):
        S = T.allocate([64], "float32", "shared")
        S_1 = T.Buffer((64,), data=S, scope="shared")
        with T.attr(T.iter_var(threadIdx_x, 8, "opaque", "threadIdx.x"), "thread_extent", 8):
            S_1[threadIdx_y * 8 + threadIdx_x] = A[threadIdx_y * 8 + threadIdx_x]
            T.tvm_storage_sync("shared")
            B[threadIdx_y * 8 + threadIdx_x] = S_1[threadIdx_x * 8 + threadIdx_y]
''')
    a = np.arange(64, dtype="float32")
    b = np.zeros(64, "float32")
    run(func, a, b)
    np.testing.assert_array_equal(b.reshape(8, 8), a.reshape(8, 8).T)
    racy = irc.parse(func.script().replace('T.tvm_storage_sync("shared")', "T.evaluate(0)"))
    with pytest.raises(InterpreterError, match=r"shared memory S\[\d+\] in kernel "
                                               r"transpose_kernel, block \(0, 0, 0\): thread "
                                               r"\(\d, \d, 0\) \w+ it and thread \(\d, \d, 0\)"):
        run(racy, a, b)


def test_a_kernel_inside_a_host_loop_and_two_kernels_in_one_function():
    # Kernel 1 writes B, kernel 2 reads it: a kernel boundary orders their accesses.
    func = irc.parse('''
@T.prim_func
def main(A: T.Buffer((4, 32), "float32"), B: T.Buffer((128,), "float32"),
         C: T.Buffer((128,), "float32")):
    for i in range(4):
        with T.attr(T.iter_var(threadIdx_x, 32, "opaque", "threadIdx.x"), "thread_extent", 32):
            B[i * 32 + threadIdx_x] = A[i, threadIdx_x] * T.float32(2)
    with T.attr(T.iter_var(blockIdx_x, 4, "opaque", "blockIdx.x"), "thread_extent", 4):
        with T.attr(T.iter_var(threadIdx_x_1, 32, "opaque", "threadIdx.x"), "thread_extent", 32):
            C[blockIdx_x * 32 + threadIdx_x_1] = B[blockIdx_x * 32 + 31 - threadIdx_x_1]
''')
    a = np.arange(128, dtype="float32").reshape(4, 32)
    b, c = np.zeros(128, "float32"), np.zeros(128, "float32")
    run(func, a, b, c)
    np.testing.assert_array_equal(c, (a[:, ::-1] * 2).reshape(-1))
    assert "main_kernel_1" in compile_func(func).source


def test_vector_accesses_are_checked_lane_by_lane():
    params = 'A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")'
    ok = kernel(params, '''\
            B[T.Ramp(threadIdx_x * 4, 1, 4)] = A[T.Ramp(threadIdx_x * 4, 1, 4)]
''')
    a, b = reversal_args()
    run(ok, a, b)
    np.testing.assert_array_equal(b, a)
    overlapping = kernel(params, '''\
            B[T.Ramp(threadIdx_x * 3, 1, 4)] = A[T.Ramp(threadIdx_x * 4, 1, 4)]
''')
    with pytest.raises(InterpreterError, match=r"global memory B\[\d+\] in kernel main_kernel, "
                                               r"block \(0, 0, 0\)"):
        run(overlapping, a, b)


def test_barriers_inside_deep_loop_nests():
    # More loops than one Python function may nest: the inner part of the nest becomes a
    # nested generator, resumed with `yield from`.
    depth = 17
    loops = "".join("    " * (3 + d) + f"for k{d} in range(1):\n" for d in range(depth))
    pad = "    " * (3 + depth)
    func = kernel(REVERSE_PARAMS, f'''\
            S = T.allocate([32], "float32", "shared")
            S_1 = T.Buffer((32,), data=S, scope="shared")
{loops}{pad}S_1[threadIdx_x] = A[threadIdx_x]
{pad}T.tvm_storage_sync("shared")
{pad}B[threadIdx_x] = S_1[31 - threadIdx_x]
''')
    a, b = reversal_args()
    run(func, a, b)
    np.testing.assert_array_equal(b[:32], a[:32][::-1])


def test_launch_extent_defined_inside_the_kernel_is_an_error():
    func = irc.parse('''
@T.prim_func
def main(A: T.Buffer((32,), "float32")):
    with T.attr(T.iter_var(threadIdx_x, 32, "opaque", "threadIdx.x"), "thread_extent", 32):
        m: T.int32 = threadIdx_x + 1
        with T.attr(T.iter_var(blockIdx_x, m, "opaque", "blockIdx.x"), "thread_extent", m):
            A[threadIdx_x] = T.float32(0)
''')
    with pytest.raises(InterpreterError, match="the extent of blockIdx.x in kernel main_kernel "
                                               "uses m, which is defined inside the kernel"):
        run(func, np.zeros(32, "float32"))


def test_an_axis_launched_twice_needs_the_same_extent():
    func = irc.parse('''
@T.prim_func
def main(A: T.Buffer((32,), "float32")):
    with T.attr(T.iter_var(threadIdx_x, 32, "opaque", "threadIdx.x"), "thread_extent", 32):
        A[threadIdx_x] = T.float32(0)
        with T.attr(T.iter_var(threadIdx_x_1, 16, "opaque", "threadIdx.x"), "thread_extent", 16):
            A[threadIdx_x_1] = T.float32(1)
''')
    with pytest.raises(InterpreterError, match=r"kernel main_kernel launches threadIdx.x twice "
                                               r"with different extents \(32 and 16\)"):
        run(func, np.zeros(32, "float32"))


def test_global_allocation_inside_a_kernel_is_an_error():
    func = kernel('A: T.Buffer((32,), "float32")', '''\
            G = T.allocate([32], "float32", "global")
            G_1 = T.Buffer((32,), data=G)
            G_1[threadIdx_x] = T.float32(1)
            A[threadIdx_x] = G_1[threadIdx_x]
''')
    with pytest.raises(InterpreterError, match="kernel main_kernel allocates G in global memory, "
                                               "which a CUDA kernel cannot do"):
        run(func, np.zeros(32, "float32"))


def test_an_error_inside_a_kernel_names_the_thread():
    func = kernel('A: T.Buffer((32,), "float32")', '''\
            A[threadIdx_x + 1] = T.float32(1)
''', grid=2)
    with pytest.raises(InterpreterError, match=r"out-of-bounds access A\[32\].*\(in kernel "
                                               r"main_kernel, thread \(31, 0, 0\) of block "
                                               r"\(1, 0, 0\)\)"):
        run(func, np.zeros(32, "float32"))


def test_host_code_and_thread_loops_outside_kernels_run_as_before():
    # A host allocation used by a kernel is global memory; a virtual-thread attribute in
    # the kernel is a serial loop.
    func = irc.parse('''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    H = T.allocate([64], "float32", "global")
    H_1 = T.Buffer((64,), data=H)
    for i in range(64):
        H_1[i] = A[i] + T.float32(1)
    with T.attr(T.iter_var(threadIdx_x, 32, "opaque", "threadIdx.x"), "thread_extent", 32):
        with T.attr(T.iter_var(vt, 2, "opaque", "vthread"), "virtual_thread", 2):
            B[vt * 32 + threadIdx_x] = H_1[vt * 32 + threadIdx_x]
''')
    a = np.arange(64, dtype="float32")
    b = np.zeros(64, "float32")
    run(func, a, b)
    np.testing.assert_array_equal(b, a + 1)
