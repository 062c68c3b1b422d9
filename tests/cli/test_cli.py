"""``irc compile``, ``run``, ``bench``, ``show`` and the command's edges (version, help,
errors, closed pipes, non-UTF-8 files), driven as a user does: in a subprocess."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import irc_env, run_irc

import irc


def test_version_and_help():
    r = run_irc("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"irc {irc.__version__}"
    r = run_irc("--help")
    assert r.returncode == 0
    for command in ("compile", "run", "bench", "show", "tune", "records"):
        assert command in r.stdout


def _parsers(parser, path=("irc",)):
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, (*path, name))


def test_every_option_and_command_has_help_text():
    from irc.cli import build_parser

    seen = set()
    for path, parser in _parsers(build_parser()):
        seen.add(" ".join(path))
        for action in parser._actions:
            if action.dest == "help":
                continue
            assert action.help, f"{' '.join(path)}: {action.option_strings or action.dest} " \
                                "has no help text"
    assert {"irc compile", "irc run", "irc bench", "irc show", "irc tune",
            "irc records"} <= seen


def test_python_dash_m_is_the_same_command():
    r = subprocess.run([sys.executable, "-m", "irc", "--version"], env=irc_env(),
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.startswith("irc ")


def test_run_needs_inputs_or_random(example):
    r = run_irc("run", example)
    assert r.returncode == 1
    assert r.stderr.startswith("irc: error: main takes data, conv1_weight")
    assert "--random" in r.stderr and "Traceback" not in r.stderr


def test_compile_then_run_with_inputs_from_files(example, tmp_path):
    out = tmp_path / "convnet.ircx"
    r = run_irc("compile", example, "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.exists() and f"wrote {out}" in r.stdout
    rng = np.random.default_rng(3)
    ex = irc.vm.Executable.load(str(out))
    params = ex.functions["main"].params
    arrays = {p: a.astype(np.float32) for p, a in
              zip(params, (rng.uniform(-1, 1, x.shape) for x in ex.random_inputs("main")))}
    np.save(tmp_path / "data.npy", arrays["data"])
    np.savez(tmp_path / "weights.npz", **{k: v for k, v in arrays.items() if k != "data"})
    result = tmp_path / "out.npz"
    r = run_irc("run", out, "--input", f"data={tmp_path / 'data.npy'}", "--input",
                tmp_path / "weights.npz", "--output", result)
    assert r.returncode == 0, r.stderr
    assert "on inputs from files" in r.stdout
    with np.load(result) as z:
        got = z["output0"]
    vm = irc.vm.VirtualMachine(ex)
    want = vm["main"](*[arrays[p] for p in params]).numpy()
    np.testing.assert_array_equal(got, want)


def test_run_input_errors(example, tmp_path):
    np.save(tmp_path / "x.npy", np.zeros(3, "float32"))
    r = run_irc("run", example, "--input", f"nope={tmp_path / 'x.npy'}", "--random")
    assert r.returncode == 1 and "does not take" in r.stderr
    r = run_irc("run", example, "--input", f"data={tmp_path / 'missing.npy'}")
    assert r.returncode == 1 and "no input file" in r.stderr
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    r = run_irc("run", example, "--input", f"data={tmp_path / 'junk.npy'}", "--random")
    assert r.returncode == 1 and "cannot read" in r.stderr and "Traceback" not in r.stderr
    r = run_irc("run", example, "--input", f"data={tmp_path / 'x.npy'}", "--random")
    assert r.returncode == 1 and "Traceback" not in r.stderr  # a wrong shape


def test_bench_prints_statistics(example):
    r = run_irc("bench", example, "--repeat", "5", "--warmup", "1", "--threads", "1")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("irc  "))
    for word in ("median", "p90", "min", "std", "samples/s"):
        assert word in line
    assert "-num-cores=1" in r.stdout


def test_bench_against_onnxruntime(tmp_path):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    r = run_irc("bench", path, "--repeat", "5", "--compare", "onnxruntime")
    assert r.returncode == 0, r.stderr
    assert "onnxruntime    median" in r.stdout and "irc / onnxruntime (median)" in r.stdout


def test_show_after_every_pass(example):
    r = run_irc("show", example, "--pipeline", "default", "--print-after-all")
    assert r.returncode == 0, r.stderr
    assert "# after LegalizeOps" in r.stdout and "# after FuseOps" in r.stdout


def test_python_module_model(tmp_path):
    (tmp_path / "mymodel.py").write_text(textwrap.dedent('''
        import irc

        TEXT = """
        @I.ir_module
        class Module:
            @R.function
            def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
                with R.dataflow():
                    y = R.nn.relu(x)
                    R.output(y)
                return y
        """

        def build():
            return irc.parse(TEXT)
        '''))
    r = run_irc("run", f"{tmp_path / 'mymodel.py'}:build", "--random")
    assert r.returncode == 0, r.stderr
    assert "tensor (2, 3) float32" in r.stdout
    r = run_irc("run", f"{tmp_path / 'mymodel.py'}:nothing", "--random")
    assert r.returncode == 1 and "has no attribute 'nothing'" in r.stderr


def test_closed_pipe_is_quiet(example):
    """``irc show x.ir | head -1``: the reader leaves early; no traceback."""
    p = subprocess.Popen([sys.executable, "-m", "irc", "show", str(example), "--pipeline",
                          "default", "--print-after-all"], env=irc_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=300)
    assert "Traceback" not in err and "Exception ignored" not in err
    assert p.returncode in (0, 141)


def test_non_utf8_and_missing_files(tmp_path):
    bad = tmp_path / "binary.ir"
    bad.write_bytes(b"# model\n\xff\xfe\x00garbage")
    r = run_irc("show", bad)
    assert r.returncode == 1
    assert "is not UTF-8 text: byte 0xff at line 2" in r.stderr
    r = run_irc("compile", tmp_path / "absent.ir")
    assert r.returncode == 1 and "No such file" in r.stderr
    r = run_irc("run", tmp_path / "model.weird")
    assert r.returncode == 1 and "irc: error:" in r.stderr
