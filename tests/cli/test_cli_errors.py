"""The ``irc`` command on wrong or awkward input: every case ends as ``irc: error: ...``
(status 1) or an argparse usage error (status 2) naming the option and the cause, checked
before any compile or run — and the awkward cases that should simply work (shared
symbolic dimensions, a module's only function, lone loop functions, index inputs)."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import irc_env, irc_in_process, run_irc, save_onnx

import irc
from irc.cli import run as cli_run

# -- item 8: no tracebacks from option values ------------------------------------------------


def _no_traceback(err: str) -> None:
    assert "Traceback" not in err and "Error:" not in err.replace("irc: error:", "")


def test_negative_seed_and_dimension_are_usage_errors(capsys, example, onnx_add):
    status, _, err = irc_in_process(capsys, "run", example, "--random", "--seed", "-1")
    assert status == 2 and "argument --seed: expected 0 or more, got -1" in err
    status, _, err = irc_in_process(capsys, "run", onnx_add, "--random", "--shape", "n=-2")
    assert status == 2 and "argument --shape: n: a dimension is 1 or more, got -2" in err


def test_random_inputs_larger_than_memory_name_the_size(capsys, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    f = onnx.TensorProto.FLOAT
    huge = save_onnx(tmp_path / "huge.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                     [("x", f, [1000000, 1000000])], [("y", f, [1000000, 1000000])])
    status, _, err = irc_in_process(capsys, "run", huge, "--random")
    assert status == 1 and err.startswith("irc: error: the random inputs of main would take "
                                          "3.64 TiB (x (1000000, 1000000) float32: 3.64 TiB)")
    assert "memory available" in err
    _no_traceback(err)


def test_dimensions_of_two_to_the_40(capsys, onnx_add):
    status, _, err = irc_in_process(capsys, "run", onnx_add, "--random", "--shape",
                                    f"n={2 ** 40}", "--shape", "m=1")
    assert status == 1 and "would take 8.00 TiB" in err and "(1099511627776, 1)" in err
    _no_traceback(err)


def test_memory_check_of_random_inputs_before_allocating():
    from irc.vm.random_inputs import random_arguments

    ex = irc.vm.compile(irc.parse(textwrap.dedent('''
        @I.ir_module
        class Module:
            @R.function
            def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
                with R.dataflow():
                    y = R.nn.relu(x)
                    R.output(y)
                return y
        ''')))
    fn = ex.functions["main"]
    assert random_arguments(fn, 0, {"n": 2}, available=1000)[0].shape == (2, 4)
    with pytest.raises(irc.IRCError, match=r"would take 16.00 KiB \(x \(1024, 4\) float32: "
                                           r"16.00 KiB\), more than the 1000 B"):
        random_arguments(fn, 0, {"n": 1024}, available=1000)


# -- item 9: symbolic dimensions shared by parameters -----------------------------------------


def test_random_inputs_share_a_symbolic_dimension(capsys, onnx_add, tmp_path):
    status, out, err = irc_in_process(capsys, "run", onnx_add, "--random", "--shape", "n=2",
                                      "--shape", "m=3")
    assert status == 0, err
    assert "main(a, b) on random inputs (seed 0)" in out and "tensor (2, 3) float32" in out
    # A compiled executable keeps its symbolic dimensions: --shape sizes its random inputs.
    ircx = tmp_path / "add.ircx"
    assert irc_in_process(capsys, "compile", onnx_add, "-o", ircx)[0] == 0
    status, out, err = irc_in_process(capsys, "run", ircx, "--random", "--shape", "n=2",
                                      "--shape", "m=3")
    assert status == 0 and "tensor (2, 3) float32" in out, err
    status, _, err = irc_in_process(capsys, "run", ircx, "--random", "--shape", "n=2")
    assert status == 1 and "need the size of its symbolic dimension m" in err
    assert "--shape m=INT" in err


def test_missing_and_unknown_dimensions_are_named(capsys, onnx_add, monkeypatch):
    monkeypatch.setattr(cli_run, "compile_model", _must_not_compile)
    status, _, err = irc_in_process(capsys, "run", onnx_add, "--random")
    assert status == 1 and "symbolic dimensions n, m" in err
    assert "--shape n=INT --shape m=INT" in err
    status, _, err = irc_in_process(capsys, "run", onnx_add, "--random", "--shape", "n=2",
                                    "--shape", "M=3", "--shape", "x=1")
    assert status == 1
    assert "--shape M, x: the parameters of main have no symbolic dimension of these names; " \
           "they have n, m (did you mean m?)" in err
    status, _, err = irc_in_process(capsys, "run", onnx_add, "--random", "--shape", "n=2",
                                    "--shape", "n=3")
    assert status == 1 and "--shape gives n twice (2 and 3)" in err


def test_the_vm_names_every_missing_dimension(onnx_add):
    from irc.frontend.onnx import from_onnx

    ex = irc.vm.compile(from_onnx(str(onnx_add)))
    with pytest.raises(irc.IRCError, match="symbolic dimensions n, m without a value"):
        ex.random_inputs("main")
    with pytest.raises(irc.IRCError, match=r"nn: no symbolic dimension .* they have n, m "
                                           r"\(did you mean n\?\)"):
        ex.random_inputs("main", shapes={"nn": 2, "m": 2})
    a, b = ex.random_inputs("main", shapes={"n": 5, "m": 7})
    assert a.shape == b.shape == (5, 7)


# -- item 10: irc tune says why there is nothing to tune, and tunes lone loop functions -------


def test_tune_a_symbolic_model_says_what_is_needed(onnx_add, tmp_path):
    r = run_irc("tune", onnx_add, "--records", tmp_path / "r.json", "--trials", "1")
    assert r.returncode == 1
    assert "symbolic shapes" in r.stderr and "symbolic dimensions are n, m" in r.stderr
    assert "--shape n=INT --shape m=INT" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "r.json").exists()
    r = run_irc("tune", onnx_add, "--records", tmp_path / "r.json", "--trials", "1",
                "--shape", "n=16", "--shape", "m=32", "-q")
    assert r.returncode == 0, r.stderr
    assert "tuning done" in r.stdout and "records: 1 in" in r.stdout


LONE_LOOP_FUNCTION = '''
@T.prim_func
def main(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"),
         C: T.Buffer((32, 32), "float32")):
    for i, j, k in T.grid(32, 32, 32):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''


def test_tune_a_lone_loop_function(tmp_path):
    model = tmp_path / "matmul.ir"
    model.write_text(LONE_LOOP_FUNCTION)
    records = tmp_path / "mm.json"
    r = run_irc("tune", model, "--records", records, "--trials", "2")
    assert r.returncode == 0, r.stderr
    assert "1 tasks" in r.stdout and "tuning done (trial budget spent): 2 trials" in r.stdout
    lines = [json.loads(x) for x in records.read_text().splitlines() if x.strip()]
    assert len([x for x in lines if "trace" in x]) == 2


# -- item 13: options checked before any work ---------------------------------------------


def _must_not_compile(*args, **kwargs):
    raise AssertionError("the command compiled before refusing an option")


def test_bad_output_refused_before_compiling(capsys, example, tmp_path, monkeypatch):
    monkeypatch.setattr(cli_run, "compile_model", _must_not_compile)
    status, _, err = irc_in_process(capsys, "run", example, "--random", "--output",
                                    tmp_path / "out.txt")
    assert status == 1 and "--output" in err and "must end in .npz" in err
    status, _, err = irc_in_process(capsys, "run", example, "--random", "--output",
                                    tmp_path / "no" / "out.npz")
    assert status == 1 and "there is no directory" in err
    status, _, err = irc_in_process(capsys, "compile", example, "-o", tmp_path / "x.bin")
    assert status == 1 and "-o" in err and "must end in .ircx" in err
    status, _, err = irc_in_process(capsys, "run", example, "--random", "--target", "llvm -foo")
    assert status == 1 and "--target 'llvm -foo'" in err and "unknown option -foo" in err
    status, _, err = irc_in_process(capsys, "bench", example, "--threads", "1000")
    assert status == 2 and "1000 threads: this machine has" in err and "cores" in err
    status, _, err = irc_in_process(capsys, "run", example, "--random", "--target",
                                    "llvm -num-cores 100000")
    assert status == 1 and "this machine has" in err


def test_build_options_refused_for_a_compiled_executable(capsys, onnx_add, tmp_path):
    ircx = tmp_path / "add.ircx"
    assert irc_in_process(capsys, "compile", onnx_add, "-o", ircx)[0] == 0
    for option in (["--target", "llvm"], ["--pipeline", "zero"], ["--check-bounds"]):
        status, _, err = irc_in_process(capsys, "run", ircx, "--random", "--shape", "n=1",
                                        "--shape", "m=1", *option)
        assert status == 1 and f"{option[0]} applies when compiling a model" in err
        assert "compiled already" in err
    status, _, err = irc_in_process(capsys, "bench", ircx, "--threads", "1")
    assert status == 1 and "--threads" in err and "compiled already" in err


def test_records_merge_takes_its_output_with_dash_o(capsys, tmp_path):
    from test_records import MM, rec

    from irc.tune import JSONDatabase

    a = tmp_path / "a.json"
    with JSONDatabase(str(a)) as db:
        db.commit_workload(MM)
        db.commit_records([rec(MM, None, 4.0)])
    size = a.stat().st_size
    status, _, err = irc_in_process(capsys, "records", "merge", a, tmp_path / "b.json")
    assert status == 1 and "needs the database to write: -o OUT" in err
    assert a.stat().st_size == size and not (tmp_path / "b.json").exists()
    status, out, err = irc_in_process(capsys, "records", "merge", a, "-o", tmp_path / "m.json")
    assert status == 0 and "1 written" in out, err
    status, _, err = irc_in_process(capsys, "records", "merge", a, "-o", tmp_path / "m.txt")
    assert status == 1 and "must end in .json" in err


def test_module_attribute_from_the_current_directory(tmp_path):
    (tmp_path / "mymod.py").write_text(textwrap.dedent('''
        import irc

        mod = irc.parse("""
        @I.ir_module
        class Module:
            @R.function
            def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
                with R.dataflow():
                    y = R.nn.relu(x)
                    R.output(y)
                return y
        """)
        '''))
    # As the installed ``irc`` script runs: a file elsewhere, so the current directory is
    # not on the path by itself (``python -m`` would put it there).
    launcher = tmp_path / "bin" / "irc_command.py"
    launcher.parent.mkdir()
    launcher.write_text("import sys\nfrom irc.cli import main\nsys.exit(main())\n")
    r = subprocess.run([sys.executable, str(launcher), "run", "mymod:mod", "--random"],
                       cwd=tmp_path, env=irc_env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "tensor (2,) float32" in r.stdout


def test_an_input_given_twice_is_an_error(capsys, example, tmp_path, monkeypatch):
    monkeypatch.setattr(cli_run, "compile_model", _must_not_compile)
    np.save(tmp_path / "a.npy", np.zeros((1, 3, 32, 32), "float32"))
    np.save(tmp_path / "b.npy", np.ones((1, 3, 32, 32), "float32"))
    status, _, err = irc_in_process(capsys, "run", example, "--random", "--input",
                                    f"data={tmp_path / 'a.npy'}", "--input",
                                    f"data={tmp_path / 'b.npy'}")
    assert status == 1 and "--input gives data twice" in err and "b.npy" in err
    np.savez(tmp_path / "both.npz", data=np.zeros((1, 3, 32, 32), "float32"))
    status, _, err = irc_in_process(capsys, "run", example, "--random", "--input",
                                    tmp_path / "both.npz", "--input",
                                    f"data={tmp_path / 'a.npy'}")
    assert status == 1 and "--input gives data twice" in err


def test_records_path_with_another_suffix_is_refused(capsys, example, tmp_path):
    status, _, err = irc_in_process(capsys, "tune", example, "--records",
                                    tmp_path / "r.txt", "--trials", "1")
    assert status == 1 and "--records" in err and "not a record file or a work directory" in err
    assert ".json" in err and not (tmp_path / "r.txt").exists()


# -- item 15b: the one graph function there is --------------------------------------------------

FORWARD_ONLY = '''
@I.ir_module
class Module:
    @R.function
    def forward(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            y = R.nn.relu(x)
            R.output(y)
        return y
'''

TWO_FUNCTIONS = FORWARD_ONLY + '''
    @R.function
    def backward(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            y = R.negative(x)
            R.output(y)
        return y
'''


def test_run_the_only_graph_function(capsys, tmp_path):
    model = tmp_path / "fwd.ir"
    model.write_text(FORWARD_ONLY)
    status, out, err = irc_in_process(capsys, "run", model, "--random")
    assert status == 0, err
    assert "forward(x) on random inputs" in out
    status, out, err = irc_in_process(capsys, "bench", model, "--repeat", "2", "--warmup", "0")
    assert status == 0 and "median" in out, err


def test_several_graph_functions_and_no_main(capsys, tmp_path):
    model = tmp_path / "two.ir"
    model.write_text(TWO_FUNCTIONS)
    status, _, err = irc_in_process(capsys, "run", model, "--random")
    assert status == 1
    assert "has no function 'main' but several others: forward, backward" in err
    assert "--function NAME" in err
    status, out, err = irc_in_process(capsys, "run", model, "--random", "--function",
                                      "backward")
    assert status == 0 and "backward(x) on random inputs" in out, err
    status, _, err = irc_in_process(capsys, "run", model, "--random", "--function", "forwrd")
    assert status == 1 and "did you mean 'forward'?" in err


def test_nn_module_export_runs(capsys, tmp_path):
    (tmp_path / "net.py").write_text(textwrap.dedent('''
        from irc.frontend import nn

        class Net(nn.Module):
            def __init__(self):
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(x)

        def export():
            return Net().export_ir({"forward": {"x": nn.spec.Tensor((3, 4), "float32")}})
        '''))
    status, out, err = irc_in_process(capsys, "run", f"{tmp_path / 'net.py'}:export",
                                      "--random")
    assert status == 0, err
    assert "forward(" in out and "tensor (3, 2) float32" in out


# -- item 14b: irc show --show-meta parses back ---------------------------------------------------


def test_show_meta_parses_back(capsys, onnx_gather):
    from irc.core.structural import structural_equal
    from irc.frontend.onnx import from_onnx

    status, out, err = irc_in_process(capsys, "show", onnx_gather)
    assert status == 0 and "Metadata omitted" in out, err
    status, out, err = irc_in_process(capsys, "show", onnx_gather, "--show-meta")
    assert status == 0, err
    assert "metadata = {" in out
    assert structural_equal(irc.parse(out), from_onnx(str(onnx_gather)))


# -- item 2b: random indices within the table they index ----------------------------------------


def test_random_indices_stay_within_the_table(capsys, onnx_gather, tmp_path):
    from irc.frontend.onnx import from_onnx

    ex = irc.vm.compile(from_onnx(str(onnx_gather)))
    assert ex.functions["main"].index_extents == {"ids": 3}
    for seed in range(3):
        (ids,) = ex.random_inputs("main", seed)
        assert ids.shape == (4096,) and ids.min() == 0 and ids.max() == 2
    ircx = tmp_path / "gather.ircx"
    ex.save(str(ircx))
    assert irc.vm.Executable.load(str(ircx)).functions["main"].index_extents == {"ids": 3}
    out = tmp_path / "out.npz"
    status, text, err = irc_in_process(capsys, "run", onnx_gather, "--random", "--output", out)
    assert status == 0, err
    with np.load(out) as z:
        rows = z["output0"]
    table = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert rows.shape == (4096, 4) and all(any((r == t).all() for t in table) for r in rows)
