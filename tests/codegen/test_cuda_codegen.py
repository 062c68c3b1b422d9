"""CUDA C generation without a GPU: the dlight GPU rules over the model zoo's kernels,
and the tuner's GPU candidates (one sample of every sketch: multi-level tiling with
shared-memory staging and local accumulators, cross-thread reductions through shared
memory), give CUDA that NVRTC compiles for sm_90 and, in kernel form, computes what the
unscheduled functions compute under the barrier-faithful interpreter."""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest

import irc
from irc import dlight as dl
from irc import passes
from irc.codegen import nvrtc
from irc.codegen.cuda import codegen_cuda, float_literal
from irc.core.diagnostics import CodegenError
from irc.core.module import IRModule
from irc.core.structural import structural_hash_hex
from irc.target import Target
from irc.testing.models import get_model
from irc.tir.interpreter import run as interpret
from irc.tir.stmt import PrimFunc
from irc.tir.transform import lower_primfunc_for_gpu
from irc.tune.space import SpaceGenerator

ZOO = {
    "resnet18": {"image_size": 32},
    "resnet50": {"image_size": 32},
    "mobilenet_v2": {"image_size": 32},
    "bert": {"seq_len": 8, "hidden": 32, "num_layers": 1, "num_heads": 2, "ffn": 64,
             "vocab_size": 50},
}


# ResNet-50's kernels are ResNet-18's kinds at more shapes: the default run checks the
# other models and leaves ResNet-50 (about 100 s here) to the slow run.
# ResNet-50 and MobileNet-V2 (36 s and 15 s here) run with -m slow: ResNet-18 and BERT
# keep every kernel kind in the default run.
# The CNNs' kernels take 20 s and more each to compile and to interpret (CI time): bert's
# cover the default run, the others run with -m slow.
FAST_ZOO = [pytest.param(m, marks=pytest.mark.slow) if m != "bert" else m for m in ZOO]


@functools.cache
def _zoo_kernels(name: str) -> dict[str, tuple[PrimFunc, PrimFunc]]:
    """The distinct loop functions of a zoo model: unscheduled, and scheduled by the
    dlight GPU rules (shared by the tests of this module)."""
    m = get_model(name, **ZOO[name])
    mod = passes.get_pipeline("default")(m.mod)
    seen, out = set(), {}
    for gv, f in mod.functions.items():
        if isinstance(f, PrimFunc):
            key = structural_hash_hex(f)
            if key not in seen:
                seen.add(key)
                out[gv.name_hint] = (f, _gpu_schedule(f))
    return out


def _gpu_schedule(func: PrimFunc) -> PrimFunc:
    target = Target("cuda")
    with target:
        mod = dl.ApplyDefaultSchedule(*dl.gpu.default_rules())(
            IRModule(functions={"main": func}))
    return mod["main"]


def _work(func: PrimFunc) -> int:
    """Iterations of the unscheduled function's loops (a cost estimate)."""
    total = 0
    for b in func.buffers:
        n = 1
        for s in b.shape:
            n *= int(s)
        total = max(total, n)
    red = 1
    text = func.script()
    for token in text.split("T.axis.reduce(")[1:]:
        red *= int(token.split(",")[0].replace("T.int64(", "").replace(")", ""))
    return total * red


@pytest.mark.parametrize("model", FAST_ZOO)
def test_zoo_kernels_compile_with_nvrtc(model):
    ks = _zoo_kernels(model)
    scheduled = {n: after.with_attr("global_symbol", n) for n, (_, after) in ks.items()}
    built = irc.build(IRModule(functions=scheduled), target="cuda")
    assert built.cubin[:4] == b"\x7fELF"
    src = built.imported_modules[0].get_source()
    assert src.count("__global__") >= len(ks)


def _check_under_the_interpreter(model: str, max_work: int) -> None:
    rng = np.random.default_rng(0)
    checked = 0
    for name, (before, scheduled) in _zoo_kernels(model).items():
        if _work(before) > max_work:
            continue
        after = lower_primfunc_for_gpu(scheduled)
        args = [rng.uniform(-1, 1, [int(s) for s in b.shape]).astype(b.dtype)
                if not b.dtype.startswith("int") else
                rng.integers(0, 4, [int(s) for s in b.shape]).astype(b.dtype)
                for b in before.buffers]
        want = [a.copy() for a in args]
        interpret(before, *want)
        got = [a.copy() for a in args]
        interpret(after, *got)
        np.testing.assert_allclose(got[-1], want[-1], rtol=1e-4, atol=1e-4, err_msg=name)
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("model", FAST_ZOO)
def test_zoo_kernels_match_under_the_simt_interpreter(model):
    # The smaller kernels of each model (the interpreter runs every GPU thread in Python).
    _check_under_the_interpreter(model, 20_000)


@pytest.mark.slow
@pytest.mark.parametrize("model", list(ZOO))
def test_zoo_kernels_match_under_the_simt_interpreter_larger(model):
    _check_under_the_interpreter(model, 300_000)


def test_float_literals_are_exact():
    assert float_literal(1.5, "float32") == "1.5f"
    big = float(np.float32(-3.4028234663852886e38))
    text = float_literal(big, "float32")
    assert text.endswith("f") and float.fromhex(text[:-1]) == big
    assert "0x7f800000" in float_literal(float("inf"), "float32")
    assert float_literal(0.1, "float64") == "0.1"


def test_host_code_outside_kernels_is_an_error():
    func = irc.parse('''
@T.prim_func
def main(A: T.Buffer((8,), "float32")):
    for i in range(8):
        A[i] = T.float32(1)
''')
    with pytest.raises(CodegenError, match="outside any GPU kernel"):
        codegen_cuda({"main": lower_primfunc_for_gpu(func)})


def test_compile_error_names_the_generated_line():
    with pytest.raises(CodegenError, match=r"irc_kernels\.cu:\d+"):
        nvrtc.compile_cuda('extern "C" __global__ void k(float* a) { a[0] = undefined_name; }')


# -- the tuner's GPU candidates -------------------------------------------------------


def _candidates(model: str, max_work: int) -> list[tuple[str, PrimFunc, PrimFunc]]:
    """(name, unscheduled, candidate) for one sample of each sketch of each kernel."""
    gen = SpaceGenerator("cuda")
    rng = random.Random(0)
    out = []
    for name, (before, _) in _zoo_kernels(model).items():
        if _work(before) > max_work:
            continue
        for sk in gen.generate(before):
            for _ in range(4):  # the postprocessors may reject a sample (too many threads)
                cand = gen.sample(before, sk, rng)
                if cand is not None:
                    out.append((f"{name}/sketch{sk.index}", before, cand.func))
                    break
    return out


def _arguments(func: PrimFunc, rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.integers(0, 4, [int(s) for s in b.shape]).astype(b.dtype)
            if b.dtype.startswith("int") else
            rng.uniform(-1, 1, [int(s) for s in b.shape]).astype(b.dtype)
            for b in func.buffers]


def _kinds(func: PrimFunc) -> set[str]:
    text = func.script()
    kinds = set()
    if 'scope="shared"' in text and "meta_schedule.tiling_structure" in text:
        kinds.add("shared-memory tiling")
    if "_rf" in text and 'scope="shared"' in text:
        kinds.add("cross-thread reduction")
    return kinds


def _check(model: str, max_work: int) -> set[str]:
    cands = _candidates(model, max_work)
    assert cands
    # Every candidate compiles: one module, one NVRTC call.
    funcs = {f"k{i}": c.with_attr("global_symbol", f"k{i}") for i, (_, _, c) in
             enumerate(cands)}
    built = irc.build(IRModule(functions=funcs), target="cuda")
    assert built.cubin[:4] == b"\x7fELF"
    rng = np.random.default_rng(0)
    kinds: set[str] = set()
    for name, before, cand in cands:
        lowered = lower_primfunc_for_gpu(cand)
        args = _arguments(before, rng)
        want = [a.copy() for a in args]
        interpret(before, *want)
        got = [a.copy() for a in args]
        interpret(lowered, *got)
        np.testing.assert_allclose(got[-1], want[-1], rtol=1e-4, atol=1e-4, err_msg=name)
        kinds |= _kinds(cand)
    return kinds


@pytest.mark.slow  # 26 s; test_gpu_seed003 covers cross-thread reductions by default
def test_bert_candidates_compile_and_match():
    # Small BERT (hidden 32, sequence 8): matmuls tiled through shared memory, layer
    # norms reduced across threads.
    kinds = _check("bert", 2_000)  # (the larger ones: -m slow, below)
    assert kinds == {"shared-memory tiling", "cross-thread reduction"}


def test_resnet_candidates_compile_and_match():
    # The smaller kernels, the 1x1 downsampling convolution among them.
    kinds = _check("resnet18", 10_000)
    assert "shared-memory tiling" in kinds


@pytest.mark.slow
@pytest.mark.parametrize("model", list(ZOO))
def test_zoo_candidates_compile_and_match_larger(model):
    _check(model, 300_000)


def test_narrow_dtypes_compile_with_nvrtc_and_match_under_the_interpreter():
    """float8/int4 kernels: LowerNarrowDTypes leaves bytes, integer and float32 code (its
    Let bindings become immediately called lambdas, its bit casts CUDA's intrinsics)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from irc import te

    A = te.placeholder((64,), "float32", name="A")
    B = te.placeholder((64,), "float8_e4m3fn", name="B")
    C = te.compute((64,), lambda i: (A[i].astype("float8_e4m3fn") + B[i]).astype(
        "float8_e5m2"), name="C")
    D = te.compute((64,), lambda i: (C[i].astype("float32") * 3).astype("int4"), name="D")
    func = te.create_prim_func([A, B, D])
    mod = IRModule(functions={"main": func})
    with Target("cuda"):
        scheduled = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)["main"]
    built = irc.build(IRModule(functions={"narrow": scheduled.with_attr(
        "global_symbol", "narrow")}), target="cuda")
    assert built.cubin[:4] == b"\x7fELF"
    a = np.linspace(-3, 3, 64).astype("float32")
    b = (np.linspace(2, -2, 64).astype("float32")).astype(ml_dtypes.float8_e4m3fn)
    got = np.zeros(64, ml_dtypes.int4)
    interpret(scheduled, a, b, got)
    f8 = (a.astype(ml_dtypes.float8_e4m3fn).astype("float32") + b.astype("float32")).astype(
        ml_dtypes.float8_e4m3fn).astype("float32").astype(ml_dtypes.float8_e5m2)
    want = (f8.astype("float32") * 3).astype(ml_dtypes.int4)
    np.testing.assert_array_equal(got.astype("int32"), want.astype("int32"))


def test_kernel_resources_report_registers_and_local_memory():
    from irc.codegen.nvrtc import kernel_resources

    source = """
extern "C" __global__ void plain(float* a) { a[threadIdx.x] *= 2.0f; }
extern "C" __global__ void local_array(float* a, int n) {
  float buf[1024];
  for (int i = 0; i < 1024; ++i) buf[i] = a[i * n];
  a[threadIdx.x] = buf[(n * threadIdx.x) & 1023];
}
"""
    res = kernel_resources(source, "sm_90")
    assert set(res) == {"plain", "local_array"}
    assert res["plain"].registers > 0 and res["plain"].stack_bytes == 0
    assert res["local_array"].stack_bytes >= 4096  # the array indexed at run time
    with pytest.raises(irc.IRCError, match="CUDA compilation failed"):
        kernel_resources("extern \"C\" __global__ void broken( {}")
