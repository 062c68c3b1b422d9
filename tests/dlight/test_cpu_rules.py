"""The CPU rules: every kind of kernel the default pipeline makes is scheduled by the
expected rule, and the compiled model still matches numpy."""

import numpy as np
import pytest
from dlight_helpers import (
    compiled_output,
    graph,
    interpreted_output,
    kernels,
    loop_kinds,
    random_args,
    schedule,
)

import irc
from irc import dlight as dl
from irc import te, topi
from irc.target import Target
from irc.testing import ref
from irc.tir import Schedule


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# (id, params, body, output shape, numpy reference, rule expected for the main kernel)
CASES = [
    ("dense_bias_relu_gemv", {"x": (1, 96), "w": (48, 96), "b": (48,)}, """
        wt = R.permute_dims(w, axes=None)
        mm = R.matmul(x, wt, out_dtype="void")
        ad = R.add(mm, b)
        gv = R.nn.relu(ad)
     """, (1, 48), lambda x, w, b: np.maximum(x @ w.T + b, 0), "Matmul"),
    ("matmul_relu", {"x": (64, 80), "w": (80, 48)}, """
        mm = R.matmul(x, w, out_dtype="void")
        gv = R.nn.relu(mm)
     """, (64, 48), lambda x, w: np.maximum(x @ w, 0), "Matmul"),
    ("matmul_odd_shapes", {"x": (13, 37), "w": (37, 21)}, """
        gv = R.matmul(x, w, out_dtype="void")
     """, (13, 21), lambda x, w: x @ w, "Matmul"),
    ("batch_matmul", {"x": (2, 24, 40), "w": (2, 40, 32)}, """
        gv = R.matmul(x, w, out_dtype="void")
     """, (2, 24, 32), lambda x, w: x @ w, "Matmul"),
    ("conv_nchw_bias_relu", {"x": (1, 8, 14, 14), "w": (16, 8, 3, 3), "b": (1, 16, 1, 1)}, """
        c = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1])
        a = R.add(c, b)
        gv = R.nn.relu(a)
     """, (1, 16, 14, 14),
     lambda x, w, b: np.maximum(ref.conv2d_nchw(x, w, padding=1) + b, 0), "Matmul"),
    ("conv_nchw_stride2", {"x": (1, 4, 17, 17), "w": (8, 4, 3, 3)}, """
        gv = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1])
     """, (1, 8, 9, 9), lambda x, w: ref.conv2d_nchw(x, w, strides=2, padding=1), "Matmul"),
    ("conv_nhwc", {"x": (1, 10, 10, 8), "w": (3, 3, 8, 32)}, """
        gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], data_layout="NHWC", kernel_layout="HWIO")
     """, (1, 10, 10, 32), lambda x, w: ref.conv2d_nhwc(x, w, padding=1), "Matmul"),
    ("conv_nhwc_oihw_kernel", {"x": (1, 9, 9, 8), "w": (32, 8, 3, 3)}, """
        gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], data_layout="NHWC")
     """, (1, 9, 9, 32), lambda x, w: ref.conv2d_nhwc(x, w.transpose(2, 3, 1, 0), padding=1),
     "Matmul"),
    ("conv_depthwise", {"x": (1, 8, 12, 12), "w": (8, 1, 3, 3)}, """
        gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], groups=8)
     """, (1, 8, 12, 12), lambda x, w: ref.conv2d_nchw(x, w, padding=1, groups=8), "Matmul"),
    ("max_pool_padded", {"x": (1, 8, 16, 16)}, """
        gv = R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
     """, (1, 8, 8, 8), lambda x: ref.pool2d_nchw(x, 3, 2, padding=1), "Reduction"),
    ("avg_pool", {"x": (1, 4, 12, 12)}, """
        gv = R.nn.avg_pool2d(x, pool_size=[2, 2], strides=[2, 2])
     """, (1, 4, 6, 6), lambda x: ref.pool2d_nchw(x, 2, 2, kind="avg"), "Reduction"),
    ("adaptive_avg_pool", {"x": (1, 8, 6, 6)}, """
        gv = R.nn.adaptive_avg_pool2d(x, output_size=[1, 1])
     """, (1, 8, 1, 1), lambda x: ref.adaptive_avg_pool2d_nchw(x, 1), "Reduction"),
    ("softmax", {"x": (4, 100)}, """
        gv = R.nn.softmax(x, axis=-1)
     """, (4, 100), lambda x: ref.softmax(x), "Reduction"),
    ("layer_norm", {"x": (2, 8, 96), "g": (96,), "b": (96,)}, """
        gv = R.nn.layer_norm(x, g, b, axes=[-1])
     """, (2, 8, 96), lambda x, g, b: ref.layer_norm(x, g, b), "Reduction"),
    ("mean_middle_axis", {"x": (4, 16, 40)}, """
        gv = R.mean(x, axis=[1])
     """, (4, 40), lambda x: x.mean(axis=1), "Reduction"),
    ("sum_last_axis", {"x": (6, 70)}, """
        gv = R.sum(x, axis=[1])
     """, (6,), lambda x: x.sum(axis=1), "Reduction"),
    ("elementwise_chain", {"x": (3, 50), "y": (3, 50)}, """
        a = R.add(x, y)
        m = R.multiply(a, x)
        gv = R.sigmoid(m)
     """, (3, 50), lambda x, y: _sigmoid((x + y) * x), "Elementwise"),
    ("transpose", {"x": (40, 24)}, """
        gv = R.permute_dims(x, axes=None)
     """, (24, 40), lambda x: x.T, "Elementwise"),
    ("big_elementwise", {"x": (64, 1024), "y": (1024,)}, """
        gv = R.add(x, y)
     """, (64, 1024), lambda x, y: x + y, "Elementwise"),
]


def _first_rule(func) -> str | None:
    t = Target("llvm")
    for rule in dl.cpu.default_rules():
        try:
            sch = rule.apply(func, t)
        except irc.IRCError:
            sch = None
        if sch is not None:
            return rule.name
    return None


def _main_kernel(ks: dict):
    # The kernel that reduces (or the only one).
    for name, f in ks.items():
        if "T.init" in f.script() or "init()" in f.script():
            return name, f
    return next(iter(ks.items()))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rule_choice_and_numerics(case):
    _, params, body, out, fn, rule = case
    text = graph(params, body, out)
    name, func = _main_kernel(kernels(text))
    assert _first_rule(func) == rule, name
    ex = irc.compile(irc.parse(text), "llvm")
    vm = irc.vm.VirtualMachine(ex)
    rng = np.random.default_rng(3)
    args = [rng.uniform(-1, 1, s).astype("float32") for s in params.values()]
    got = vm["main"](*args).numpy()
    np.testing.assert_allclose(got, fn(*args), rtol=1e-4, atol=1e-5)


def test_every_kernel_of_the_pipeline_is_scheduled():
    text = graph({"x": (1, 8, 14, 14), "w": (16, 8, 3, 3)}, """
        c = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
        r = R.nn.relu(c)
        p = R.nn.max_pool2d(r, pool_size=[2, 2], strides=[2, 2])
        gv = R.nn.softmax(p, axis=-1)
    """, (1, 16, 7, 7))
    with Target("llvm"):
        mod = irc.passes.get_pipeline("default")(irc.parse(text))
    prims = [f for f in mod.functions.values() if isinstance(f, irc.tir.PrimFunc)]
    assert prims and all(f.attrs.get("tir.is_scheduled") for f in prims)


def test_matmul_tile_is_register_blocked_vectorized_and_parallel():
    ks = kernels(graph({"x": (256, 256), "w": (256, 256)}, """
        gv = R.matmul(x, w, out_dtype="void")
    """, (256, 256)))
    before = next(iter(ks.values()))
    after = schedule(before, dl.cpu.Matmul(), "llvm -num-cores 2")
    kinds = loop_kinds(after)
    assert "parallel" in kinds and "vectorized" in kinds and "unrolled" in kinds
    # The accumulator lives in a local buffer written back per tile.
    assert 'scope="local"' in after.script()
    args = random_args(before)
    np.testing.assert_allclose(compiled_output(after, args), args[0] @ args[1], rtol=1e-4,
                               atol=1e-4)


def test_small_kernels_stay_on_one_core():
    ks = kernels(graph({"x": (3, 50), "y": (3, 50)}, "gv = R.add(x, y)", (3, 50)))
    after = schedule(next(iter(ks.values())), dl.cpu.Elementwise(), "llvm -num-cores 2")
    assert "parallel" not in loop_kinds(after)
    assert "vectorized" in loop_kinds(after)


def test_single_core_target_never_parallelizes():
    ks = kernels(graph({"x": (64, 1024), "y": (1024,)}, "gv = R.add(x, y)", (64, 1024)))
    after = schedule(next(iter(ks.values())), dl.cpu.Elementwise(), "llvm -num-cores 1")
    assert "parallel" not in loop_kinds(after)


def test_nchw_padding_stays_a_stage_and_nhwc_padding_is_inlined():
    nchw = kernels(graph({"x": (1, 8, 14, 14), "w": (16, 8, 3, 3)}, """
        gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
    """, (1, 16, 14, 14)))
    nhwc = kernels(graph({"x": (1, 10, 10, 16), "w": (3, 3, 16, 32)}, """
        gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], data_layout="NHWC", kernel_layout="HWIO")
    """, (1, 10, 10, 32)))
    stem = kernels(graph({"x": (1, 10, 10, 3), "w": (7, 7, 3, 32)}, """
        gv = R.nn.conv2d(x, w, padding=[3, 3, 3, 3], data_layout="NHWC", kernel_layout="HWIO")
    """, (1, 10, 10, 32)))
    a = schedule(next(iter(nchw.values())), dl.cpu.Matmul(), "llvm")
    b = schedule(next(iter(nhwc.values())), dl.cpu.Matmul(), "llvm")
    c = schedule(next(iter(stem.values())), dl.cpu.Matmul(), "llvm")
    # The NCHW guard varies along the vectorized output row: padding stays a stage.
    assert 'T.block("pad_temp")' in a.script()
    assert 'T.block("pad_temp")' not in b.script()
    # A 7 x 7 window does over 512 multiply-adds per padded input element: the guards
    # would outnumber a padded copy's accesses.
    assert 'T.block("pad_temp")' in c.script()
    args = random_args(next(iter(stem.values())))
    want = ref.conv2d_nhwc(args[0], args[1], padding=3)
    np.testing.assert_allclose(compiled_output(c, args), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rule", [dl.cpu.Matmul(), dl.cpu.Reduction()])
def test_reduction_rules_decline_elementwise_functions(rule):
    ks = kernels(graph({"x": (3, 50)}, "gv = R.nn.relu(x)", (3, 50)))
    assert schedule(next(iter(ks.values())), rule, "llvm") is None


def test_elementwise_declines_reductions():
    ks = kernels(graph({"x": (6, 70)}, "gv = R.sum(x, axis=[1])", (6,)))
    assert schedule(next(iter(ks.values())), dl.cpu.Elementwise(), "llvm") is None


SYMBOLIC = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 40), dtype="float32"),
             w: R.Tensor((40, 32), dtype="float32")) -> R.Tensor(("n", 32), dtype="float32"):
        with R.dataflow():
            lv = R.matmul(x, w, out_dtype="void")
            gv = R.nn.relu(lv)
            R.output(gv)
        return gv
'''


def test_symbolic_batch_matmul():
    vm = irc.vm.VirtualMachine(irc.compile(irc.parse(SYMBOLIC), "llvm"))
    rng = np.random.default_rng(0)
    w = rng.standard_normal((40, 32)).astype("float32")
    for n in (1, 7, 33):
        x = rng.standard_normal((n, 40)).astype("float32")
        np.testing.assert_allclose(vm["main"](x, w).numpy(), np.maximum(x @ w, 0),
                                   rtol=1e-4, atol=1e-5)


def test_strided_weights_are_packed_once_per_call():
    # NHWC data with an OIHW kernel: along the output channels (the vector loop) the
    # kernel is strided, so the rule copies it with the output channel innermost.
    ks = kernels(graph({"x": (1, 9, 9, 8), "w": (32, 8, 3, 3)}, """
        gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], data_layout="NHWC")
    """, (1, 9, 9, 32)))
    after = schedule(next(iter(ks.values())), dl.cpu.Matmul(), "llvm")
    text = after.script()
    assert "p1_global = T.alloc_buffer((T.int64(8), T.int64(3), T.int64(3), T.int64(32)))" \
        in text


def test_compute_at_keeps_the_predicate_of_a_partial_split():
    # rfactor after a split that does not divide leaves a T.where on the partial
    # block; moving it under the consumer's row must keep it (core fix).
    a = te.placeholder((4, 100), name="A")
    s_ = topi.sum(a, axis=1)
    c = te.compute((4, 100), lambda i, j: a[i, j] / s_[i], name="C")
    before = te.create_prim_func([a, c])
    sch = Schedule(before)
    red = sch.get_block("A_red")
    _, k = sch.get_loops(red)
    _, k1 = sch.split(k, [None, 64])
    rf = sch.rfactor(k1, 1)
    row = sch.get_loops(sch.get_block("C"))[0]
    sch.compute_at(red, row)
    sch.compute_at(rf, row)
    assert "T.where" in sch.mod["main"].script()
    args = random_args(before)
    np.testing.assert_allclose(compiled_output(sch.mod["main"], args),
                               args[0] / args[0].sum(axis=1, keepdims=True), rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("registers", [16, 32])
def test_micro_kernel_tile_fits_the_targets_vector_registers(registers):
    # The accumulators, the tile's vector operands and a broadcast must fit the target's
    # registers: a 4 x 4 tile on a 16-register CPU (AVX2) spilled in every step.
    from irc.dlight.cpu.tiling import plan_output_tile
    from irc.tir.schedule.block_info import get_block_infos

    ks = kernels(graph({"x": (96, 256), "w": (256, 384)}, """
        gv = R.matmul(x, w, out_dtype="void")
    """, (96, 384)))
    target = Target(f"llvm -num-cores 2 -vector-width 256 -vector-registers {registers}")
    sch = Schedule(next(iter(ks.values())))
    info = next(b for b in get_block_infos(sch) if b.block.init is not None)
    plan = plan_output_tile(info, target)
    acc = plan.mr * plan.nvec
    assert acc + plan.nvec + 1 <= registers
    assert acc == (12 if registers == 16 else 16)  # the register file is used, not wasted
    assert target.vector_registers() == registers


def test_micro_tile_choice_takes_a_partial_row_tile_only_where_it_pays():
    from irc.dlight.cpu.tiling import choose_micro_tile

    # AVX2 (16 registers), 8 vectors of output channels.
    assert choose_micro_tile(7, 8, 16, allow_row_tail=True) == (4, 2, True)
    assert choose_micro_tile(49, 8, 16, allow_row_tail=True) == (5, 2, True)
    # 14 output columns: 5 + 5 + 4 rows of two vectors (10 accumulators) beat 7 exact
    # tiles of 2 x 4 (8, which a 4.5-cycle FMA latency leaves short of busy) ...
    assert choose_micro_tile(14, 32, 16, allow_row_tail=True) == (5, 2, True)
    # ... but not where each row is guarded (a padded convolution).
    assert choose_micro_tile(14, 32, 16, allow_row_tail=True, guarded=True) == (2, 4, False)
    # A tail that is a small part of the rows costs little: 56 = 9 x 6 + 2.
    assert choose_micro_tile(56, 8, 16, allow_row_tail=True) == (6, 2, True)
    # Where 4 x 3 fits exactly (12 accumulators), it wins.
    assert choose_micro_tile(28, 12, 16, allow_row_tail=True) == (4, 3, False)
    assert choose_micro_tile(7, 8, 16, allow_row_tail=False)[2] is False
    # AVX-512 (32 registers): 7 rows of two vectors fit exactly.
    assert choose_micro_tile(7, 4, 32, allow_row_tail=True) == (7, 2, False)


def test_micro_tile_ties_go_to_more_rows_unless_the_rows_are_guarded():
    from irc.dlight.cpu.tiling import choose_micro_tile

    # 28 output columns, 16 vectors of output channels: 2 x 4 and 4 x 2 are estimated
    # alike; the narrower panel wins, but padding guards cost one select per row.
    assert choose_micro_tile(28, 16, 16, allow_row_tail=False) == (4, 2, False)
    assert choose_micro_tile(28, 16, 16, allow_row_tail=False, guarded=True) == (2, 4, False)


def _nhwc_conv(hw, cin, cout, k, stride):
    """The kernel of a square NHWC convolution padded to keep its size at stride 1, and
    the padding."""
    pad = k // 2
    out = (hw + 2 * pad - k) // stride + 1
    attrs = (f'strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}], '
             'data_layout="NHWC", kernel_layout="HWIO"')
    ks = kernels(graph({"x": (1, hw, hw, cin), "w": (k, k, cin, cout)},
                       f"gv = R.nn.conv2d(x, w, {attrs})", (1, out, out, cout)))
    return next(iter(ks.values())), pad


@pytest.mark.parametrize("hw,cin,cout,k,stride", [(7, 64, 64, 1, 1), (13, 24, 48, 3, 1),
                                                  (14, 32, 32, 3, 2)])
def test_partial_row_tiles_compute_the_right_convolution(hw, cin, cout, k, stride):
    # A 16-register target takes 4 + 3 rows for 7 output columns (and so on): the
    # partial tile is cut off at lowering (LoopPartition) and must not write past the row.
    func, pad = _nhwc_conv(hw, cin, cout, k, stride)
    target = "llvm -num-cores 2 -vector-width 256 -vector-registers 16"
    after = schedule(func, dl.cpu.Matmul(), target)
    assert after is not None and "T.where" in after.script()
    args = random_args(func)
    want = ref.conv2d_nhwc(args[0], args[1], strides=stride, padding=pad)
    np.testing.assert_allclose(compiled_output(after, args, target), want, rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("k,n", [(1280, 1000), (37, 200), (64, 24)])
def test_matrix_vector_products_take_several_accumulators(k, n):
    # One row: each accumulator is a chain of dependent FMAs, so a 1000-wide classifier
    # (125 vectors of 8 lanes) takes 5 vectors per micro-kernel instead of 1.
    from irc.dlight.cpu.tiling import MAX_ROW_VECTORS, choose_micro_tile, plan_output_tile
    from irc.tir.schedule.block_info import get_block_infos

    assert choose_micro_tile(1, 125, 16, allow_row_tail=False,
                             max_nvec=MAX_ROW_VECTORS) == (1, 5, False)
    assert choose_micro_tile(1, 125, 16, allow_row_tail=False) == (1, 1, False)
    ks = kernels(graph({"x": (1, k), "w": (k, n)}, 'gv = R.matmul(x, w, out_dtype="void")',
                       (1, n)))
    func = next(iter(ks.values()))
    target = "llvm -num-cores 2 -vector-width 256 -vector-registers 16"
    sch = Schedule(func)
    info = next(b for b in get_block_infos(sch) if b.block.init is not None)
    plan = plan_output_tile(info, Target(target))
    assert plan.mr == 1 and plan.nvec == {1000: 5, 200: 5, 24: 3}[n]
    after = schedule(func, dl.cpu.Matmul(), target)
    args = random_args(func)
    np.testing.assert_allclose(compiled_output(after, args, target), args[0] @ args[1],
                               rtol=1e-4, atol=1e-4)


def test_a_mid_sized_depthwise_convolution_runs_on_both_cores():
    # 7 x 7 x 960 depthwise (MobileNet-V2's last): 0.4M multiply-adds, each loading both
    # operands, so it counts as 4x that against the threshold for going parallel.
    attrs = ('padding=[1, 1, 1, 1], groups=960, data_layout="NHWC", '
             'kernel_layout="HWIO"')
    ks = kernels(graph({"x": (1, 7, 7, 960), "w": (3, 3, 1, 960)},
                       f"gv = R.nn.conv2d(x, w, {attrs})", (1, 7, 7, 960)))
    func = next(iter(ks.values()))
    target = "llvm -num-cores 2 -vector-width 256 -vector-registers 16"
    after = schedule(func, dl.cpu.Matmul(), target)
    assert "parallel" in loop_kinds(after)
    args = random_args(func)
    want = ref.conv2d_nhwc(args[0], args[1], padding=1, groups=960)
    np.testing.assert_allclose(compiled_output(after, args, target), want, rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("hw,cin,cout,k,stride,grp_macro", [(14, 512, 512, 1, 1, 2),
                                                            (9, 192, 40, 3, 1, 3)])
def test_output_rows_join_the_macro_tile_of_narrow_images(hw, cin, cout, k, stride, grp_macro):
    # 14 output columns make a small macro tile: two output rows share each panel of a
    # blocked reduction; 9 columns (8 + a partial tile) take three rows.
    from irc.dlight.cpu.tiling import plan_output_tile
    from irc.tir.schedule.block_info import get_block_infos

    func, pad = _nhwc_conv(hw, cin, cout, k, stride)
    target = "llvm -num-cores 2 -vector-width 256 -vector-registers 16"
    info = next(b for b in get_block_infos(Schedule(func)) if b.block.init is not None)
    plan = plan_output_tile(info, Target(target))
    assert plan.grp == 1 and plan.grp_macro == grp_macro  # the output rows
    after = schedule(func, dl.cpu.Matmul(), target)
    args = random_args(func)
    want = ref.conv2d_nhwc(args[0], args[1], strides=stride, padding=pad)
    np.testing.assert_allclose(compiled_output(after, args, target), want, rtol=1e-4,
                               atol=1e-4)


def _depthwise(hw, c, k, stride, dilation):
    """An NHWC depthwise convolution's kernel (square, "same"-style padding) and its
    padding."""
    pad = dilation * (k // 2)
    out = (hw + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    attrs = (f'strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}], '
             f'dilation=[{dilation}, {dilation}], groups={c}, data_layout="NHWC", '
             'kernel_layout="HWIO"')
    ks = kernels(graph({"x": (1, hw, hw, c), "w": (k, k, 1, c)},
                       f"gv = R.nn.conv2d(x, w, {attrs})", (1, out, out, c)))
    return next(iter(ks.values())), pad


def _check_depthwise(func, after, target, stride, pad, dilation, c):
    args = random_args(func)
    want = ref.conv2d_nhwc(args[0], args[1], strides=stride, padding=pad,
                           dilation=dilation, groups=c)
    np.testing.assert_allclose(compiled_output(after, args, target), want, rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("hw,c,k,stride,dilation", [(13, 20, 3, 1, 1), (13, 20, 3, 2, 1),
                                                     (11, 12, 3, 1, 2), (9, 7, 5, 2, 1)])
def test_depthwise_padding_guards_are_unswitched_and_match_at_the_border(hw, c, k, stride,
                                                                        dilation):
    # Tiles inside the image take a copy without the guards (UnswitchGuards); odd sizes,
    # channels not a multiple of the vector width, stride 2 and dilation cross the border.
    from irc.tir.transform import lower_primfunc

    func, pad = _depthwise(hw, c, k, stride, dilation)
    target = "llvm -num-cores 2 -vector-width 256 -vector-registers 16"
    after = schedule(func, dl.cpu.Matmul(), target)
    assert "irc.unswitch_guards" in after.script()
    lowered = lower_primfunc(after)
    assert "irc.unswitch_guards" not in lowered.script()
    _check_depthwise(func, after, target, stride, pad, dilation, c)


def test_a_transposing_copy_runs_on_both_cores():
    # BERT's key transpose (128 x 768 into 12 x 64 x 128): 98k elements, each a load of
    # its own row, count as 8 operations each against the threshold for going parallel.
    ks = kernels(graph({"x": (128, 12, 64)}, "gv = R.permute_dims(x, axes=[1, 2, 0])",
                       (12, 64, 128)))
    func = next(iter(ks.values()))
    target = "llvm -num-cores 2 -vector-width 256 -vector-registers 16"
    after = schedule(func, dl.cpu.Elementwise(), target)
    assert "parallel" in loop_kinds(after)
    args = random_args(func)
    np.testing.assert_allclose(compiled_output(after, args, target),
                               args[0].transpose(1, 2, 0))


def test_parallel_row_reductions_keep_vectorized_stages_and_one_init():
    # Attention's softmax (12 heads x 128 rows): its rows run in parallel, and each row's
    # elementwise stages are still vectorized and each reduction initialized once before
    # its loop (fusing the row loops first used to hide the rows from those steps).
    ks = kernels(graph({"x": (1, 12, 128, 128)}, "gv = R.nn.softmax(x, axis=-1)",
                       (1, 12, 128, 128)))
    func = next(iter(ks.values()))
    target = "llvm -num-cores 2 -vector-width 256 -vector-registers 16"
    after = schedule(func, dl.cpu.Reduction(), target)
    kinds = loop_kinds(after)
    assert "parallel" in kinds and "vectorized" in kinds
    assert "T.init()" not in after.script()
    args = random_args(func)
    np.testing.assert_allclose(compiled_output(after, args, target), ref.softmax(args[0]),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("hw,c,k,stride,dilation,partial", [
    (13, 20, 3, 1, 1, True), (17, 48, 3, 1, 1, True), (11, 7, 5, 1, 1, True),
    (13, 20, 3, 2, 1, False), (11, 12, 3, 1, 2, False)])
@pytest.mark.parametrize("bits,registers", [(256, 16), (512, 32)])
def test_stride_one_depthwise_convolutions_get_a_register_tile_of_output_columns(
        hw, c, k, stride, dilation, partial, bits, registers):
    # A depthwise convolution reads its input and weight along the channels (no loop
    # reuses both), but its output columns share each weight load and, with stride 1
    # and no dilation, the next column's input at the neighbouring tap: those get a
    # register tile of columns (`TilePlan.partial`); strided or dilated windows do not.
    from irc.dlight.cpu.tiling import plan_output_tile
    from irc.tir.schedule.block_info import get_block_infos

    func, pad = _depthwise(hw, c, k, stride, dilation)
    target = f"llvm -num-cores 2 -vector-width {bits} -vector-registers {registers}"
    sch = Schedule(func)
    sch = dl.cpu.matmul.inline_producers(sch, "group_conv2d_nhwc", varying_guard=False)
    info = next(b for b in get_block_infos(sch) if b.block.init is not None)
    plan = plan_output_tile(info, Target(target))
    assert plan.partial is partial
    if partial:
        assert plan.reg == 2 and plan.mr > 1  # output columns, several per tile
        assert plan.mr * plan.nvec + plan.nvec + 1 <= registers
    else:
        assert plan.reg is None
    after = schedule(func, dl.cpu.Matmul(), target)
    assert "irc.unswitch_guards" in after.script()
    _check_depthwise(func, after, target, stride, pad, dilation, c)


@pytest.mark.parametrize("hw,cin,cout,k,stride", [(13, 3, 32, 3, 2), (15, 5, 20, 3, 2),
                                                  (11, 24, 48, 3, 1)])
@pytest.mark.parametrize("bits,registers", [(256, 16), (512, 32)])
def test_register_tiles_of_padded_convolutions_unswitch_their_guards(hw, cin, cout, k,
                                                                     stride, bits, registers):
    # A dense convolution that reads its padding through a guard (one per broadcast)
    # has its tile loop versioned too: tiles inside the image run without the guards.
    # Odd sizes, channels not a multiple of the vector width, stride 2, partial tiles.
    from irc.tir.transform import lower_primfunc

    func, pad = _nhwc_conv(hw, cin, cout, k, stride)
    target = f"llvm -num-cores 2 -vector-width {bits} -vector-registers {registers}"
    after = schedule(func, dl.cpu.Matmul(), target)
    assert "T.if_then_else" in after.script()  # the padding is read through a guard
    assert "irc.unswitch_guards" in after.script()
    assert "irc.unswitch_guards" not in lower_primfunc(after).script()
    args = random_args(func)
    want = ref.conv2d_nhwc(args[0], args[1], strides=stride, padding=pad)
    np.testing.assert_allclose(compiled_output(after, args, target), want, rtol=1e-4,
                               atol=1e-4)


def _anchor_info(func):
    from irc.tir.schedule.block_info import get_block_infos

    return next(b for b in get_block_infos(Schedule(func)) if b.block.init is not None)


def test_plan_knobs_at_their_defaults_give_the_default_plan():
    from irc.dlight.cpu.tiling import PlanKnobs, plan_output_tile

    func, _ = _nhwc_conv(14, 64, 96, 3, 1)
    target = Target("llvm -num-cores 2 -vector-width 256 -vector-registers 16")
    info = _anchor_info(func)
    assert plan_output_tile(info, target, knobs=PlanKnobs()) == plan_output_tile(info, target)


def test_a_micro_tile_knob_that_does_not_fit_gives_no_plan():
    from irc.dlight.cpu.tiling import PlanKnobs, plan_output_tile

    func, _ = _nhwc_conv(14, 64, 96, 3, 1)  # 14 output columns, 12 vectors of 8 channels
    target = Target("llvm -num-cores 2 -vector-width 256 -vector-registers 16")
    info = _anchor_info(func)
    assert plan_output_tile(info, target, knobs=PlanKnobs(micro=(4, 4))) is None  # spills
    assert plan_output_tile(info, target, knobs=PlanKnobs(micro=(2, 5))) is None  # 12 % 5
    assert plan_output_tile(info, target, knobs=PlanKnobs(micro=(15, 1))) is None  # > 14
    plan = plan_output_tile(info, target, knobs=PlanKnobs(micro=(3, 2)))
    assert (plan.mr, plan.nvec, plan.row_tail) == (3, 2, True)


@pytest.mark.parametrize("registers", [16, 32])
def test_plan_variants_differ_from_the_default_and_from_each_other(registers):
    from irc.dlight.cpu.tiling import fits_registers, plan_output_tile, plan_variants

    func, _ = _nhwc_conv(14, 512, 512, 1, 1)
    target = Target(f"llvm -num-cores 2 -vector-width 512 -vector-registers {registers}")
    info = _anchor_info(func)
    default = plan_output_tile(info, target)
    found = plan_variants(info, target)
    plans = [p for _, p in found]
    assert len(found) >= 6 and default not in plans
    assert all(a != b for i, a in enumerate(plans) for b in plans[i + 1:])
    assert all(fits_registers(p.mr, p.nvec, registers) for p in plans)
    # Other micro-kernels first, then the other knobs (blocking off among them).
    assert found[0][0].micro is not None
    assert any(p.kc is None for p in plans) and default.kc is not None


@pytest.mark.parametrize("cin,wide", [(256, True), (128, True), (512, False), (1024, False)])
def test_a_small_weight_panel_takes_several_column_tiles(cin, wide):
    # A 1 x 1 convolution's weight panel under a 256-column macro tile: 256 input
    # channels make 256 KB (WIDE_PANEL_BYTES), several column tiles share the rows'
    # input; 512 make 512 KB, one column tile reused by every row tile.
    from irc.dlight.cpu.tiling import WIDE_PANEL_BYTES, PlanKnobs, plan_output_tile

    func, _ = _nhwc_conv(14, cin, 1024, 1, 1)
    target = Target("llvm -num-cores 2 -vector-width 512 -vector-registers 32")
    info = _anchor_info(func)
    plan = plan_output_tile(info, target)
    assert (cin * 256 * 4 <= WIDE_PANEL_BYTES) == wide
    assert (plan.vec_macro > 1) == wide
    # The knob overrides the choice either way.
    assert plan_output_tile(info, target, knobs=PlanKnobs(wide=False)).vec_macro == 1
    assert plan_output_tile(info, target, knobs=PlanKnobs(wide=True)).vec_macro > 1


def test_a_wide_macro_tile_computes_the_same_result():
    # A 5 x 5 image, 96 input channels, 200 output channels (25 vectors of 8: the
    # macro tile spans all 25 column tiles, each of one vector).
    from irc.dlight.cpu.tiling import plan_output_tile

    func, pad = _nhwc_conv(5, 96, 200, 1, 1)
    target = "llvm -num-cores 2 -vector-width 256 -vector-registers 16"
    assert plan_output_tile(_anchor_info(func), Target(target)).vec_macro > 1
    after = schedule(func, dl.cpu.Matmul(), target)
    args = random_args(func)
    want = ref.conv2d_nhwc(args[0], args[1], strides=1, padding=pad)
    np.testing.assert_allclose(compiled_output(after, args, target), want, rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("shape", [
    ("conv", (13, 24, 40, 3, 1)),   # odd image, channels not a multiple of the vector
    ("conv", (14, 32, 48, 3, 2)),   # stride 2, padded
    ("conv", (7, 64, 96, 1, 1)),    # a 1 x 1 convolution with 7 output columns
    ("matmul", (37, 101, 72)),      # prime rows and reduction
    ("depthwise", (11, 40, 3, 1)),  # a partial register loop
])
def test_every_plan_variant_computes_the_same_result(shape):
    from irc.dlight.cpu.matmul import anchor_variants

    kind, dims = shape
    target = "llvm -num-cores 2 -vector-width 256 -vector-registers 16"
    if kind == "conv":
        func, _ = _nhwc_conv(*dims)
    elif kind == "depthwise":
        func, _ = _depthwise(*dims, dilation=1)
    else:
        m, k, n = dims
        func = next(iter(kernels(graph({"x": (m, k), "w": (k, n)},
                                       'gv = R.matmul(x, w, out_dtype="void")',
                                       (m, n))).values()))
    t = Target(target)
    with t:
        variants = anchor_variants(Schedule(func), t, need_multiply=True, need_reuse=False,
                                   limit=16)
        default = dl.cpu.Matmul().apply(func, t).mod["main"].script()
    assert variants
    scripts = [v.mod["main"].script() for v in variants]
    assert default not in scripts and len(set(scripts)) == len(scripts)
    args = random_args(func)
    want = interpreted_output(func, args)
    for v in variants:
        np.testing.assert_allclose(compiled_output(v.mod["main"], args, target), want,
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows", [0, 1, 7, 33])
def test_matmul_of_symbolic_rows_is_streamed_vectorized_and_matches(rows):
    # Rows of symbolic count (a dynamic batch or sequence): tiles of 4 rows (the last
    # guarded) and 4 vectors of columns per reduction step, the epilogue after it.
    n = te.var("n")
    a = te.placeholder((n, 48), "float32", "a")
    w = te.placeholder((48, 64), "float32", "w")
    b = te.placeholder((64,), "float32", "b")
    k = te.reduce_axis((0, 48), "k")
    c = te.compute((n, 64), lambda i, j: te.sum(a[i, k] * w[k, j], axis=k), "c")
    d = te.compute((n, 64), lambda i, j: te.max(c[i, j] + b[j], te.const(0.0, "float32")),
                   "d")
    func = te.create_prim_func([a, w, b, d])
    after = schedule(func, dl.cpu.Matmul(), "llvm -num-cores=2")
    assert after is not None
    kinds = loop_kinds(after)
    assert "parallel" in kinds and "vectorized" in kinds
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 48)).astype("float32")
    wv = rng.standard_normal((48, 64)).astype("float32")
    bv = rng.standard_normal(64).astype("float32")
    mod = irc.build(after.with_attr("global_symbol", "main"), target="llvm")
    out = irc.tensor(np.zeros((rows, 64), "float32"))
    mod["main"](irc.tensor(x), irc.tensor(wv), irc.tensor(bv), out)
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ wv + bv, 0), rtol=1e-5,
                               atol=1e-5)


def test_batched_product_of_symbolic_length_is_streamed_and_matches():
    # Attention's probabilities times values: batch and reduction both symbolic.
    s = te.var("s")
    p = te.placeholder((2, s, s), "float32", "p")
    v = te.placeholder((2, s, 32), "float32", "v")
    k = te.reduce_axis((0, s), "k")
    o = te.compute((2, s, 32), lambda h, i, j: te.sum(p[h, i, k] * v[h, k, j], axis=k), "o")
    func = te.create_prim_func([p, v, o])
    after = schedule(func, dl.cpu.Matmul(), "llvm -num-cores=2")
    assert after is not None and "vectorized" in loop_kinds(after)
    mod = irc.build(after.with_attr("global_symbol", "main"), target="llvm")
    rng = np.random.default_rng(0)
    for length in (1, 5, 12):
        pv = rng.standard_normal((2, length, length)).astype("float32")
        vv = rng.standard_normal((2, length, 32)).astype("float32")
        out = irc.tensor(np.zeros((2, length, 32), "float32"))
        mod["main"](irc.tensor(pv), irc.tensor(vv), out)
        np.testing.assert_allclose(out.numpy(), pv @ vv, rtol=1e-5, atol=1e-5)
