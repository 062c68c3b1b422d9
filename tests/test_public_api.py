"""The public API promised in DESIGN.md ("The public API"), line by line, as a user writes it.

The tuning lines (``irc.tune``) and ``irc.dispatch``/``irc.dlight`` are tested with those
packages; everything else in that section is exercised here on the CPU.
"""

import subprocess
import sys

import numpy as np
import pytest

import irc
from irc import passes, te, tir, topi
from irc.frontend import nn
from irc.target import Target

# Every pass these lines run is checked by print -> parse -> equal (tests/conftest.py).

TEXT = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")
             ) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            s = R.add(x, y)
            r = R.nn.relu(s)
            R.output(r)
        return r
'''


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 8)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(8, 4, bias=False)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


@pytest.fixture(scope="module")
def mlp():
    return MLP().export_ir({"forward": {"x": nn.spec.Tensor((1, 16), "float32")}})


# -- text -------------------------------------------------------------------------------


def test_parse_script_show_and_print_round_trip(capsys):
    mod = irc.parse(TEXT)
    assert isinstance(mod, irc.IRModule)
    text = mod.script()
    assert "@I.ir_module" in text and "R.nn.relu" in text
    assert irc.ir.structural_equal(irc.parse(text), mod)
    assert irc.ir.structural_equal(irc.IRModule.from_script(text), mod)
    mod.show()
    assert capsys.readouterr().out == text + "\n"
    assert str(mod) == text  # print(mod) prints the IR text
    assert repr(mod) == "IRModule(main)"


# -- nn export --------------------------------------------------------------------------


def test_nn_export_gives_a_module_and_named_parameters(mlp):
    mod, params = mlp
    assert mod.names() == ["forward"]
    assert [name for name, _ in params] == ["fc1_weight", "fc1_bias", "fc2_weight"]
    assert [(p.shape, p.dtype) for _, p in params] == [
        ((8, 16), "float32"), ((8,), "float32"), ((4, 8), "float32")]
    assert irc.ir.structural_equal(irc.parse(mod.script()), mod)


# -- passes -----------------------------------------------------------------------------


def test_sequential_with_a_named_pipeline_and_a_module_pass_class(mlp):
    mod, _ = mlp
    seen = []

    @passes.module_pass(opt_level=0, name="RecordFunctions")
    class RecordFunctions:
        def transform_module(self, mod, ctx):
            seen.append(sorted(mod.names()))
            return mod

    out = passes.Sequential([passes.get_pipeline("zero"), RecordFunctions()])(mod)
    assert isinstance(out, irc.IRModule)
    # The custom pass ran after the pipeline legalized the operators to loop functions.
    assert len(seen) == 1 and "forward" in seen[0] and len(seen[0]) > 1
    assert any(isinstance(f, tir.PrimFunc) for f in out.functions.values())
    assert RecordFunctions().info.name == "RecordFunctions"


# -- compile and run --------------------------------------------------------------------


def test_compile_and_run_an_exported_model_on_the_vm(mlp):
    mod, params = mlp
    ex = irc.compile(mod, target="llvm")
    assert isinstance(ex, irc.vm.Executable)
    vm = irc.vm.VirtualMachine(ex, irc.cpu())
    rng = np.random.default_rng(0)
    x = rng.random((1, 16), dtype=np.float32)
    weights = [rng.random(p.shape, dtype=np.float32) for _, p in params]
    y = vm["forward"](irc.tensor(x), *[irc.tensor(w) for w in weights]).numpy()
    w1, b1, w2 = weights
    np.testing.assert_allclose(y, np.maximum(x @ w1.T + b1, 0) @ w2.T, rtol=1e-5)


def test_compile_accepts_target_objects_and_device_spellings():
    mod = irc.parse(TEXT)
    ex = irc.compile(mod, target=Target("llvm"))
    x = np.array([[1, -2, 3], [-4, 5, -6]], "float32")
    for dev in (irc.cpu(), irc.cpu(0), irc.device("cpu", 0), "cpu"):
        vm = irc.vm.VirtualMachine(ex, dev)
        out = vm["main"](irc.runtime.tensor(x, dev), irc.tensor(x, dev))
        np.testing.assert_allclose(out.numpy(), np.maximum(2 * x, 0))


# -- te, schedules, lower and build -----------------------------------------------------


def _matmul_add(n, dtype="float32"):
    a = te.placeholder((n, n), name="A", dtype=dtype)
    b = te.placeholder((n, n), name="B", dtype=dtype)
    c = te.placeholder((n, n), name="C", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    matmul = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="matmul")
    out = te.compute((n, n), lambda i, j: matmul[i, j] + c[i, j], name="out")
    return [a, b, c, out]


def test_schedule_lower_and_build_match_numpy():
    args = _matmul_add(32)
    sch = tir.Schedule(te.create_prim_func(args))
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    i0, i1 = sch.split(i, factors=[None, 8])
    sch.reorder(i0, j, i1, k)
    lowered = irc.lower(sch, args)
    assert isinstance(lowered, irc.IRModule)
    printed = str(lowered)  # print(irc.lower(sch, args)) shows the loop IR
    assert "@T.prim_func" in printed and "for " in printed

    f = irc.build(sch, args, target="llvm")
    rng = np.random.default_rng(1)
    a, b, c = (rng.random((32, 32), dtype=np.float32) for _ in range(3))
    out = irc.tensor(np.zeros((32, 32), "float32"))
    f(irc.tensor(a), irc.tensor(b), irc.tensor(c), out)
    np.testing.assert_allclose(out.numpy(), a @ b + c, rtol=1e-5)
    result = f.time_evaluator(f.entry_name, irc.cpu(), number=1, repeat=1)(
        irc.tensor(a), irc.tensor(b), irc.tensor(c), out)
    assert result.mean > 0


def test_topi_definitions_are_reachable_from_irc():
    x = te.placeholder((4, 8), name="x")
    y = topi.nn.relu(x)
    f = irc.build(te.create_prim_func([x, y]), target="llvm")
    data = np.linspace(-1, 1, 32, dtype="float32").reshape(4, 8)
    out = np.zeros_like(data)
    f(data, out)
    np.testing.assert_allclose(out, np.maximum(data, 0))


# -- targets and devices ----------------------------------------------------------------


def test_targets_parse_detect_and_enter_with_with():
    host = Target("llvm")
    assert host.mcpu and host.num_cores >= 1
    explicit = Target("llvm -mcpu=znver4 -num-cores 2")
    assert str(explicit) == "llvm -mcpu=znver4 -num-cores=2"
    assert explicit.num_cores == 2 and explicit == "llvm -mcpu=znver4 -num-cores=2"
    assert Target("cuda").arch == "sm_90"
    with Target("cuda") as gpu:  # the current target for passes that need one
        assert Target.current() is gpu
    assert Target.from_device(irc.cpu()).kind.name == "llvm"


def test_devices():
    assert irc.cpu().device_type == "cpu" and irc.cpu(0) == irc.device("cpu")
    assert irc.cuda(1).device_type == "cuda" and irc.cuda(1).index == 1
    assert irc.device("cuda:1") == irc.cuda(1)
    with pytest.raises(irc.IRCError, match="unknown device type"):
        irc.device("tpu")


# -- errors and import weight -----------------------------------------------------------


def test_every_error_class_is_an_irc_error():
    for name in ("BuildError", "CodegenError", "IRParseError", "IRTypeError",
                 "IRWellFormedError", "LegalizeError", "LoweringError",
                 "MissingDependencyError", "RuntimeShapeError", "ScheduleError", "TuningError",
                 "UnsupportedOperatorError", "VMError"):
        assert issubclass(getattr(irc, name), irc.IRCError)
    for name in ("RuntimeShapeError", "RuntimeDTypeError", "RuntimeArgumentCountError",
                 "RuntimeArgumentTypeError", "RuntimeDeviceError", "RuntimeReadOnlyError"):
        assert issubclass(getattr(irc, name), irc.RuntimeArgumentError)
        assert getattr(irc.core, name) is getattr(irc, name)
    assert issubclass(irc.RuntimeArgumentError, irc.VMError)


def test_unsupported_op_error_is_a_deprecated_name_of_unsupported_operator_error():
    with pytest.warns(DeprecationWarning, match="use that"):
        assert irc.UnsupportedOpError is irc.UnsupportedOperatorError
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        irc.NoSuchThing  # noqa: B018


def test_the_docs_name_only_files_the_repository_has():
    import re
    from pathlib import Path

    root = Path(irc.__file__).resolve().parents[1]
    texts = {"README.md": (root / "README.md").read_text(),
             "ARCHITECTURE.md": (root / "ARCHITECTURE.md").read_text(),
             "irc/__init__.py": (root / "irc" / "__init__.py").read_text()}
    for where, text in texts.items():
        for name in set(re.findall(r"[\w./-]+\.md\b", text)):
            assert (root / name).is_file(), f"{where} names {name}, which is not in the repository"
    assert "print(vm.profile(" in texts["README.md"]  # it returns the report; printed, a table


def test_importing_irc_stays_light():
    code = ("import sys, irc; heavy = [m for m in ('xgboost', 'onnx', 'onnxruntime', 'cuda', "
            "'llvmlite') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
