"""Models written as text compile with irc.compile and match numpy references."""

import pathlib

import numpy as np
import pytest

import irc
from irc.cli import main
from irc.frontend import nn
from irc.testing import ref

EXAMPLE = "examples/convnet.ir"


def _convnet_reference(data, w1, b1, w2, fw, fb):
    y = ref.relu(ref.conv2d_nchw(data, w1, padding=1) + b1)
    y = ref.pool2d_nchw(y, 2, 2, kind="max")
    y = ref.relu(ref.conv2d_nchw(y, w2, padding=1))
    y = ref.adaptive_avg_pool2d_nchw(y, 1).reshape(1, 16)
    return ref.softmax(y @ fw.T + fb)


@pytest.fixture(scope="module")
def convnet_vm():
    root = pathlib.Path(__file__).resolve().parents[2]
    text = (root / EXAMPLE).read_text()
    mod = irc.parse(text, source_name=EXAMPLE)
    return mod, irc.vm.VirtualMachine(irc.compile(mod, "llvm"))


def test_example_convnet_matches_numpy(convnet_vm):
    mod, vm = convnet_vm
    rng = np.random.default_rng(1)
    args = [rng.uniform(-1, 1, p.struct_info.static_shape).astype("float32")
            for p in mod["main"].params]
    out = vm["main"](*args).numpy()
    expected = _convnet_reference(*args)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6)


def test_cli_runs_the_bundled_example(capsys):
    root = pathlib.Path(__file__).resolve().parents[2]
    assert main(["run", str(root / EXAMPLE), "--random"]) == 0
    printed = capsys.readouterr().out
    assert "output0: tensor (1, 10) float32" in printed
    assert "on random inputs (seed 0)" in printed


def test_cli_reports_errors_without_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.ir"
    bad.write_text("@I.ir_module\nclass Module:\n    @R.function\n    def main(x):\n")
    assert main(["run", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("irc: error:") and "bad.ir" in err


SYMBOLIC = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"),
             w: R.Tensor((4, 3), dtype="float32")) -> R.Tensor(("n", 3), dtype="float32"):
        with R.dataflow():
            lv = R.matmul(x, w, out_dtype="void")
            gv = R.nn.relu(lv)
            R.output(gv)
        return gv
'''


def test_symbolic_batch_through_the_whole_pipeline():
    vm = irc.vm.VirtualMachine(irc.compile(irc.parse(SYMBOLIC), "llvm"))
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype("float32")
    for n in (1, 5, 16):
        x = rng.standard_normal((n, 4)).astype("float32")
        np.testing.assert_allclose(vm["main"](x, w).numpy(), np.maximum(x @ w, 0), rtol=1e-5,
                                   atol=1e-6)
    with pytest.raises(irc.RuntimeShapeError,
                       match=r"parameter x \(#0\) expects R.Tensor\(\(n, 4\), 'float32'\), got "
                             r"a tensor of shape \(2, 5\).*bound so far: \{'n': 2\}"):
        vm["main"](np.zeros((2, 5), "float32"), w)


def test_padded_conv_with_symbolic_batch():
    """Regression: the padded intermediate of a conv with a symbolic batch once got a
    wrong (overflowed) allocation size."""
    mod, _ = nn.Conv2D(3, 8, 3, padding=1, bias=False).export_ir(
        {"forward": {"x": nn.spec.Tensor(("n", 3, 8, 8), "float32")}})
    vm = irc.vm.VirtualMachine(irc.compile(mod, "llvm"))
    rng = np.random.default_rng(0)
    w = rng.random((8, 3, 3, 3), dtype=np.float32)
    for n in (1, 2, 5):
        x = rng.random((n, 3, 8, 8), dtype=np.float32)
        np.testing.assert_allclose(vm["forward"](x, w).numpy(),
                                   ref.conv2d_nchw(x, w, padding=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pipeline", ["zero", "default"])
def test_pipeline_output_prints_and_parses_back(convnet_vm, pipeline):
    mod, _ = convnet_vm
    out = irc.passes.get_pipeline(pipeline)(mod)
    irc.ir.assert_structural_equal(irc.parse(out.script()), out)
