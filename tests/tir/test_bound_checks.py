"""Bounds-checked builds (``check_bounds=True``): an index outside its buffer stops the
kernel with an irc error naming the function, the buffer and the index, where the
unchecked build reads or writes past the buffer silently."""

import subprocess
import sys

import numpy as np
import pytest

import irc
from irc.runtime import KernelAssertionError
from irc.tir import stmt as S
from irc.tir.transform import lower_primfunc

OFF_BY_ONE = '''
@T.prim_func
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((17,), "float32")):
    for i in range(17):
        B[i] = A[i] * 2.0
'''

NEGATIVE = '''
@T.prim_func
def shift(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    for i, j in T.grid(4, 8):
        B[i, j] = A[i, j - 1]
'''

GUARDED = '''
@T.prim_func
def pad(A: T.Buffer((8,), "float32"), B: T.Buffer((10,), "float32")):
    for i in range(10):
        B[i] = T.if_then_else(1 <= i and i < 9, A[i - 1], T.float32(0))
'''


def _asserts(func) -> list:
    found = []

    def walk(s):
        if isinstance(s, S.AssertStmt):
            found.append(s)
        for f in ("body", "then_case", "else_case"):
            child = getattr(s, f, None)
            if isinstance(child, S.Stmt):
                walk(child)
        if isinstance(s, S.SeqStmt):
            for x in s.seq:
                walk(x)

    walk(func.body)
    return found


def test_an_off_by_one_loop_is_caught():
    f = irc.parse(OFF_BY_ONE)
    a, b = np.arange(16, dtype="float32"), np.zeros(17, "float32")
    irc.build(f, target="llvm")["main"](a, b)  # unchecked: reads past A silently
    checked = irc.build(f, target="llvm", check_bounds=True)
    with pytest.raises(KernelAssertionError,
                       match=r"main: index out of bounds in function main: A\[i\] outside "
                             r"the buffer's shape \(16\)"):
        checked["main"](a, b)


def test_a_negative_index_in_block_form_is_caught():
    f = irc.parse(NEGATIVE)
    checked = irc.build(f, target="llvm", check_bounds=True)
    with pytest.raises(KernelAssertionError, match=r"A\[i, j - 1\]"):
        checked["shift"](np.ones((4, 8), "float32"), np.zeros((4, 8), "float32"))


def test_guarded_loads_and_proven_accesses_are_not_checked():
    f = irc.parse(GUARDED)
    lowered = lower_primfunc(f.with_attr("tir.check_bounds", True))
    assert _asserts(lowered) == []  # the guard and the loop range prove every access
    a, b = np.arange(1, 9, dtype="float32"), np.zeros(10, "float32")
    irc.build(f, target="llvm", check_bounds=True)["pad"](a, b)
    np.testing.assert_array_equal(b, np.concatenate([[0], a, [0]]))
    plain = lower_primfunc(irc.parse(OFF_BY_ONE))
    assert _asserts(plain) == []  # without check_bounds nothing is inserted


@pytest.mark.parametrize("name, kw", [
    pytest.param("resnet18", {"image_size": 32}, marks=pytest.mark.slow),  # 40 s here
    ("bert", {"seq_len": 8, "hidden": 32, "num_layers": 1, "num_heads": 2, "ffn": 64})])
def test_models_run_unchanged_when_checked(name, kw):
    """No false alarms in the default build of real models (padding guards, Winograd,
    packed weights, partial tiles), and the same outputs."""
    from irc.testing.models import get_model

    model = get_model(name, **kw)
    params = model.bound_params()
    x = model.random_input(0) if hasattr(model, "random_input") else None
    if x is None:
        rng = np.random.default_rng(0)
        x = (rng.integers(0, 100, model.input_shape) if model.input_dtype == "int64"
             else rng.standard_normal(model.input_shape)).astype(model.input_dtype)
    outs = []
    for check in (False, True):
        ex = irc.compile(model.mod, "llvm", params=params, check_bounds=check)
        outs.append(irc.vm.VirtualMachine(ex)["forward"](x).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])


def test_the_bundled_example_runs_unchanged_when_checked():
    """Padded convolutions, pooling and a dense layer: no false alarm, same outputs."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    mod = irc.parse((root / "examples" / "convnet.ir").read_text())
    outs = []
    for check in (False, True):
        ex = irc.compile(mod, "llvm", check_bounds=check)
        outs.append(irc.vm.VirtualMachine(ex)["main"](*ex.random_inputs("main")).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])


GRAPH = '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def gather(A: T.Buffer((8,), "float32"), idx: T.Buffer((4,), "int64"),
               B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[idx[i]]

    @R.function
    def main(a: R.Tensor((8,), dtype="float32"), idx: R.Tensor((4,), dtype="int64")
             ) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            b = R.call_tir(cls.gather, (a, idx), out_sinfo=R.Tensor((4,), dtype="float32"))
            R.output(b)
        return b
'''


def test_compile_and_the_command_line_check_a_data_dependent_index(tmp_path):
    mod = irc.parse(GRAPH)
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm", check_bounds=True))
    a = np.arange(8, dtype="float32")
    np.testing.assert_array_equal(vm["main"](a, np.array([0, 7, 2, 3])).numpy(),
                                  [0, 7, 2, 3])
    with pytest.raises(KernelAssertionError, match=r"gather: .*A\[idx\[i\]\]"):
        vm["main"](a, np.array([0, 8, 2, 3]))
    path = tmp_path / "gather.ir"
    path.write_text(GRAPH)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "idx.npy", np.array([0, 1, 2, 9]))
    r = subprocess.run([sys.executable, "-m", "irc", "run", str(path), "--check-bounds",
                        "--input", f"a={tmp_path / 'a.npy'}", "--input",
                        f"idx={tmp_path / 'idx.npy'}"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1
    assert "irc: error: gather: index out of bounds in function gather" in r.stderr
