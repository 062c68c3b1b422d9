"""The ``blas`` dispatch backend end to end: FuseOpsByPattern makes composite functions,
RunCodegen turns them into an OpenBLAS library module called with ``call_dps_packed``,
and the VM's results match irc's own build of the same graph, for every pattern, with
weights as parameters and as bound constants; executables with library modules save and
load.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gemm_modules import (
    ACTS,
    batch_matmul_module,
    dense_module,
    dense_reference,
    dispatch,
    packed_calls,
    random_inputs,
    run_main,
    tensor_type,
)

import irc
from irc import passes
from irc.core.diagnostics import IRCError
from irc.dispatch import get_pattern, get_patterns_with_prefix
from irc.ir.expr import Function
from irc.runtime.blas_module import BlasModule
from irc.vm.executable import Executable

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytest.importorskip("scipy_openblas32", reason="needs the scipy-openblas32 wheel (irc[blas])")



CASES = [(x_shape, transposed, bias, act)
         for x_shape in [(5, 24), (2, 3, 24)]
         for transposed in (True, False)
         for bias in (None, "vector", "row")
         for act in ACTS
         if not (bias is None and act)]


@pytest.mark.parametrize("x_shape,transposed,bias,act", CASES,
                         ids=[f"{len(c[0])}d-{'T' if c[1] else 'N'}-{c[2]}-{c[3] or 'none'}"
                              for c in CASES])
def test_every_dense_pattern_matches_irc_numerics(x_shape, transposed, bias, act):
    n = 16
    bias_shape = {None: None, "vector": (n,), "row": (1, n)}[bias]
    mod = dense_module(x_shape, n, transposed, bias_shape, act)
    args = random_inputs(mod, np.random.default_rng(1))
    want = run_main(mod, args)
    name = "blas.matmul" + ("_transposed" if transposed else "") + \
        ("_bias" if bias else "") + (f"_{act}" if act else "")
    out = dispatch(mod, [get_pattern(name)])
    assert len(packed_calls(out)) == 1, out.script()
    (ext,) = out.attrs["external_mods"]
    assert isinstance(ext, BlasModule)
    got = run_main(out, args)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, dense_reference(args, transposed, act), rtol=1e-4,
                               atol=1e-4)
    # The whole table picks the same (most specific) pattern.
    out_all = dispatch(mod, get_patterns_with_prefix("blas"))
    assert packed_calls(out_all) == packed_calls(out)


@pytest.mark.parametrize("bind_constants", [True, False])
def test_bound_weights_stay_in_the_library_module_or_become_arguments(bind_constants):
    mod = dense_module((4, 32), 8, True, (8,), "relu")
    rng = np.random.default_rng(2)
    x, w, b = random_inputs(mod, rng)
    want = run_main(mod, [x, w, b])
    bound = passes.BindParams("main", {"w": w, "b": b})(mod)
    out = dispatch(bound, get_patterns_with_prefix("blas"), bind_constants=bind_constants)
    (ext,) = out.attrs["external_mods"]
    assert (len(ext.constants) == 2) == bind_constants
    np.testing.assert_allclose(run_main(out, [x]), want, rtol=1e-5, atol=1e-5)


def test_batch_matmul_with_and_without_a_broadcast_batch():
    for b_batch in (3, 1):
        mod = batch_matmul_module((3, 4, 8), (b_batch, 8, 5))
        args = random_inputs(mod, np.random.default_rng(3))
        out = dispatch(mod, [get_pattern("blas.batch_matmul")])
        assert packed_calls(out), out.script()
        np.testing.assert_allclose(run_main(out, args), args[0] @ args[1], rtol=1e-5,
                                   atol=1e-5)


def test_float64_runs_and_unsupported_inputs_are_left_alone():
    mod = dense_module((3, 8), 4, True, (4,), "relu", dtype="float64")
    args = random_inputs(mod, np.random.default_rng(4))
    out = dispatch(mod, get_patterns_with_prefix("blas"))
    assert packed_calls(out)
    np.testing.assert_allclose(run_main(out, args), run_main(mod, args), rtol=1e-12)
    # float16: no dispatch.
    half = dense_module((3, 8), 4, True, (4,), "relu", dtype="float16")
    assert not packed_calls(dispatch(half, get_patterns_with_prefix("blas")))
    # A bias that broadcasts the product to a larger output: only the product goes to BLAS.
    wide = dense_module((3, 8), 4, True, (3, 1, 4), "")
    out = dispatch(wide, get_patterns_with_prefix("blas"))
    assert packed_calls(out) == ["fused_permute_dims_matmul_blas"]
    args = random_inputs(wide, np.random.default_rng(4))
    np.testing.assert_allclose(run_main(out, args), run_main(wide, args), rtol=1e-5)


def test_symbolic_shapes_are_left_to_irc():
    mod = irc.parse(f"""
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32"),
             w: {tensor_type((8, 4))}) -> R.Tensor(("n", 4), dtype="float32"):
        with R.dataflow():
            gv = R.matmul(x, w, out_dtype="void")
            R.output(gv)
        return gv
""")
    assert not packed_calls(dispatch(mod, get_patterns_with_prefix("blas")))


def test_composite_functions_carry_their_pattern_and_backend():
    mod = dense_module((1, 64), 32, True, (32,), "relu")
    fused = passes.FuseOpsByPattern([get_pattern("blas.matmul_transposed_bias_relu")],
                                    annotate_codegen=True)(mod)
    composites = {gv.name_hint: f for gv, f in fused.functions.items()
                  if isinstance(f, Function) and "Composite" in f.attrs}
    assert list(composites) == ["fused_permute_dims_matmul_add_nn_relu"]
    f = composites["fused_permute_dims_matmul_add_nn_relu"]
    assert f.attrs["Composite"] == "blas.matmul_transposed_bias_relu"
    assert f.attrs["Codegen"] == "blas"
    assert f.attrs["global_symbol"] == "fused_permute_dims_matmul_add_nn_relu_blas"
    assert [p.name_hint for p in f.params] == ["w", "x", "b"]
    # Without annotate_codegen: a composite function irc compiles itself.
    plain = passes.FuseOpsByPattern([get_pattern("blas.matmul_transposed_bias_relu")])(mod)
    (g,) = [f for f in plain.functions.values()
            if isinstance(f, Function) and "Composite" in f.attrs]
    assert "Codegen" not in g.attrs
    args = random_inputs(mod, np.random.default_rng(5))
    np.testing.assert_allclose(run_main(plain, args), run_main(mod, args), rtol=1e-6)


def test_an_intermediate_used_elsewhere_is_not_swallowed():
    mod = irc.parse(f"""
@I.ir_module
class Module:
    @R.function
    def main(x: {tensor_type((2, 8))}, w: {tensor_type((8, 4))},
             b: {tensor_type((4,))}) -> R.Tuple({tensor_type((2, 4))}, {tensor_type((2, 4))}):
        with R.dataflow():
            mm = R.matmul(x, w, out_dtype="void")
            ad = R.add(mm, b)
            gv = (ad, mm)
            R.output(gv)
        return gv
""")
    out = dispatch(mod, get_patterns_with_prefix("blas"))
    # matmul + add would hide mm, which the tuple reads: only the matmul is dispatched.
    assert packed_calls(out) == ["fused_matmul_blas"]
    args = random_inputs(mod, np.random.default_rng(6))
    ex = irc.compile(out, target="llvm")
    got = irc.vm.VirtualMachine(ex, irc.cpu())["main"](*[irc.tensor(a) for a in args])
    np.testing.assert_allclose(got[0].numpy(), args[0] @ args[1] + args[2], rtol=1e-5)
    np.testing.assert_allclose(got[1].numpy(), args[0] @ args[1], rtol=1e-5)


def test_executables_with_library_modules_save_and_load(tmp_path):
    mod = dense_module((2, 16), 8, True, (8,), "gelu")
    args = random_inputs(mod, np.random.default_rng(7))
    ex = irc.compile(dispatch(mod, get_patterns_with_prefix("blas")), target="llvm")
    assert [m.kind for m in ex.external] == ["blas"]
    path = str(tmp_path / "dense.ircx")
    ex.save(path)
    back = Executable.load(path)
    assert isinstance(back.external[0], BlasModule)
    assert back.external[0].specs == ex.external[0].specs
    run = lambda e: irc.vm.VirtualMachine(e, irc.cpu())["main"](
        *[irc.tensor(a) for a in args]).numpy()
    np.testing.assert_array_equal(run(back), run(ex))


def test_seed003_dispatch_example_runs():
    # Seed 003's flow on the CPU: BLAS by pattern, MetaSchedule tuning for the rest, the VM.
    res = subprocess.run([sys.executable, str(EXAMPLES / "seed003_dispatch.py"), "--trials",
                          "2"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert 'R.call_dps_packed("fused_permute_dims_matmul_add_nn_relu_blas", (fc1_weight, ' \
           'x, fc1_bias)' in res.stdout
    assert 'I.module_attrs({"external_mods": [metadata["runtime.Module"][0]]})' in res.stdout
    assert "matches numpy" in res.stdout


def test_compile_dispatches_the_libraries_it_is_told():
    mod = dense_module((3, 32), 8, True, (8,), "relu")
    args = random_inputs(mod, np.random.default_rng(8))
    want = run_main(mod, args)
    for dispatch_ in ("blas", ["blas.matmul_transposed_bias_relu"], ("blas.matmul", "blas")):
        ex = irc.compile(mod, target="llvm", dispatch=dispatch_)
        assert [m.kind for m in ex.external] == ["blas"]
        got = irc.vm.VirtualMachine(ex, irc.cpu())["main"](*[irc.tensor(a) for a in args])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    # A full name means that pattern alone: blas.matmul leaves the bias and relu to irc.
    ex = irc.compile(mod, target="llvm", dispatch="blas.matmul_transposed")
    (ext,) = ex.external
    assert [s["epilogue"] for s in ext.specs.values()] == [None]
    assert not irc.compile(mod, target="llvm", dispatch="none").external
    with pytest.raises(IRCError, match="dispatch='auto' stands alone"):
        irc.compile(mod, target="llvm", dispatch=["auto", "blas"])
    with pytest.raises(IRCError, match="no dispatch pattern named 'blsa'"):
        irc.compile(mod, target="llvm", dispatch="blsa")
    with pytest.raises(IRCError, match="dispatch must be 'none', a pattern name"):
        irc.compile(mod, target="llvm", dispatch=3)


def test_library_errors_are_irc_errors():
    with pytest.raises(IRCError, match="no code generator for the dispatch backend 'blsa'"):
        irc.dispatch.get_codegen("blsa")
    with pytest.raises(IRCError, match="did you mean blas.matmul_bias"):
        get_pattern("blas.matmul_bais")
    ext = BlasModule({}, {}, None)
    with pytest.raises(IRCError, match="has no function 'f'"):
        ext.get_function("f")
