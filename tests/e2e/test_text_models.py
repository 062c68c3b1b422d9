"""Models written as text compile with irc.compile and match numpy references."""

import numpy as np
import pytest

import irc
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
    import pathlib

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
    from irc.cli import main

    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    assert main(["run", str(root / EXAMPLE), "--repeat", "3"]) == 0
    printed = capsys.readouterr().out
    assert "tensor (1, 10) float32" in printed
    assert "latency: median" in printed


def test_cli_reports_errors_without_traceback(tmp_path, capsys):
    from irc.cli import main

    bad = tmp_path / "bad.ir"
    bad.write_text("@I.ir_module\nclass Module:\n    @R.function\n    def main(x):\n")
    assert main(["run", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("irc: error:") and "bad.ir" in err
