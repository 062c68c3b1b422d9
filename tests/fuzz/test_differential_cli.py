"""``irc fuzz``: its options reach the campaign, a wrong value is an irc error (status
1) or a usage error (status 2) before any model is made, and the exit status says
whether a model was wrong or crashed."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("ml_dtypes")

import irc.testing.fuzz.campaign as campaign
from irc.cli import main
from irc.cli import options as cli_options
from irc.testing.fuzz.evaluate import OK, WRONG, Outcome


def _run(args, capsys):
    try:
        status = main(["fuzz", *args])
    except SystemExit as exc:  # argparse's usage errors
        status = exc.code
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.fixture
def captured(monkeypatch):
    """Stand in for the campaign: record its configuration, report one ok model."""
    seen = []

    def fake(config, progress=None):
        seen.append(config)
        return campaign.Summary(config, outcomes=[Outcome(OK, seed=config.seed)])

    monkeypatch.setattr(campaign, "run_campaign", fake)
    return seen


def test_the_options_reach_the_campaign(captured, capsys, tmp_path):
    status, out, err = _run(["--models", "7", "--seed", "5", "--time-limit", "1m30s",
                             "--max-nodes", "2", "--ops", "Relu, unary", "--dtypes",
                             "float16,int8", "--out", str(tmp_path / "found"), "--jobs", "1",
                             "--dispatch", "auto", "--tuned", "--no-minimize"], capsys)
    assert status == 0, err
    (config,) = captured
    assert (config.models, config.seed, config.time_limit, config.jobs) == (7, 5, 90.0, 1)
    assert config.fuzz.max_nodes == 2 and config.fuzz.min_nodes == 2
    assert config.fuzz.ops == ("Relu", "unary") and config.fuzz.dtypes == ("float16", "int8")
    assert config.options.builds == ("default", "auto", "tuned")
    assert config.out == str(tmp_path / "found") and not config.minimise
    assert "ok 1" in out


def test_the_defaults(captured, capsys):
    status, _, err = _run(["--time-limit", "10m"], capsys)
    assert status == 0, err
    (config,) = captured
    assert config.models is None and config.time_limit == 600.0 and config.seed == 0
    assert config.options.builds == ("default",) and config.minimise and config.out is None
    assert config.fuzz.ops == () and config.fuzz.dtypes == () and config.fuzz.max_nodes == 12


@pytest.mark.parametrize("args, message", [
    ([], "give --models N, --time-limit DURATION, or both"),
    (["--models", "1", "--ops", "Nope"], "unknown operator or family 'Nope'"),
    (["--models", "1", "--ops", ","], "give one or more names"),
    (["--models", "1", "--dtypes", "float64"], "does not generate float64"),
    (["--models", "1", "--ops", "Not", "--dtypes", "float32"], "none of these operators"),
])
def test_wrong_values_are_irc_errors_before_any_model(captured, capsys, args, message):
    status, _, err = _run(args, capsys)
    assert status == 1 and err.startswith("irc: error: ") and message in err, err
    assert not captured


def test_an_output_directory_that_cannot_be_made_is_refused(captured, capsys, tmp_path):
    (tmp_path / "file").write_text("x")
    for out, message in ((tmp_path / "file", "is a file"),
                         (tmp_path / "no" / "dir", "there is no directory")):
        status, _, err = _run(["--models", "1", "--out", str(out)], capsys)
        assert status == 1 and message in err, err
    assert not captured


@pytest.mark.parametrize("args", [
    ["--models", "0"], ["--models", "1", "--jobs", "0"],
    ["--models", "1", "--jobs", str(cli_options.cores() + 1)],
    ["--models", "1", "--time-limit", "soon"], ["--models", "1", "--dispatch", "blas"],
    ["--models", "1", "--max-nodes", "x"]])
def test_malformed_values_are_usage_errors(captured, capsys, args):
    status, _, err = _run(args, capsys)
    assert status == 2 and "usage: irc" in err, err


def test_a_missing_dependency_names_the_extra(captured, capsys, monkeypatch):
    import irc.cli.fuzz as cli_fuzz

    real = cli_fuzz.importlib.util.find_spec
    monkeypatch.setattr(cli_fuzz.importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    status, _, err = _run(["--models", "1"], capsys)
    assert status == 1 and "needs onnxruntime" in err and "irc[onnx]" in err, err


def test_a_wrong_model_makes_the_exit_status_1(monkeypatch, capsys):
    def fake(config, progress=None):
        return campaign.Summary(config, outcomes=[
            Outcome(OK, seed=0), Outcome(WRONG, "output 0: 1 of 4 values differ", "default",
                                         "values", seed=1)])

    monkeypatch.setattr(campaign, "run_campaign", fake)
    status, out, err = _run(["--models", "2"], capsys)
    assert status == 1 and "1 wrong and 0 crashed of 2 models" in err, err
    assert "wrong 1" in out


def test_a_tiny_campaign_runs(capsys, tmp_path):
    status, out, err = _run(["--models", "1", "--max-nodes", "1", "--ops", "Relu",
                             "--dtypes", "float32", "--out", str(tmp_path)], capsys)
    assert status == 0, err
    assert "irc fuzz: 1 model (seed 0)" in out and "ok 1" in out and "Relu 1/1/1" in out
    assert "not generated in this run:" in out
    assert (tmp_path / "failures.txt").read_text() == ""
