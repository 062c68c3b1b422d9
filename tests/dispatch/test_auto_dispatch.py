"""``irc.compile(..., dispatch="auto")``: each matched subgraph is measured through its
library and through irc's own build, the faster is kept, decisions are cached per shape
on disk, and a refused match lets a smaller pattern be measured in its place."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from gemm_modules import dense_module, packed_calls, random_inputs, run_main

import irc
from irc.core.target import Target
from irc.vm import auto_dispatch as auto

pytest.importorskip("scipy_openblas32", reason="needs the scipy-openblas32 wheel (irc[blas])")


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, irc_settings):
    irc_settings(cache_dir=tmp_path)
    return tmp_path


def _only_blas(monkeypatch):
    blas = irc.dispatch.get_patterns_with_prefix("blas")
    monkeypatch.setattr(auto, "candidate_patterns", lambda target: blas)


def test_auto_measures_each_shape_once_and_keeps_the_faster(cache_dir, monkeypatch):
    _only_blas(monkeypatch)
    mod = dense_module((64, 256), 256, True, (256,), "relu")
    args = random_inputs(mod, np.random.default_rng(0))
    report: list = []
    out = auto.auto_dispatch(mod, Target("llvm"), irc.compile, report)
    # The whole dense layer first; where irc won, the smaller patterns inside it next.
    assert report[0]["pattern"] == "blas.matmul_transposed_bias_relu"
    for decision in report:
        assert decision["library_s"] > 0 and decision["irc_s"] > 0
        library = decision["library_s"] < decision["irc_s"]
        assert decision["choice"] == ("library" if library else "irc")
    assert all(d["choice"] == "irc" for d in report[:-1])
    want_library = report[-1]["choice"] == "library"
    assert bool(packed_calls(out)) == want_library
    np.testing.assert_allclose(run_main(out, args), run_main(mod, args), rtol=1e-4,
                               atol=1e-4)
    cache = json.loads((cache_dir / "dispatch.json").read_text())
    assert sorted(d["pattern"] for d in cache.values()) == sorted(d["pattern"] for d in report)

    # The second compile reads the cache: nothing is measured again.
    def no_measuring(*a, **k):
        raise AssertionError("measured again")
    monkeypatch.setattr(auto, "_measure", no_measuring)
    again: list = []
    out2 = auto.auto_dispatch(mod, Target("llvm"), irc.compile, again)
    assert again == report
    assert packed_calls(out2) == packed_calls(out)
    # irc.compile takes the same path.
    ex = irc.compile(mod, target="llvm", dispatch="auto")
    assert bool(ex.external) == want_library
    got = irc.vm.VirtualMachine(ex, irc.cpu())["main"](*[irc.tensor(a) for a in args]).numpy()
    np.testing.assert_allclose(got, run_main(mod, args), rtol=1e-4, atol=1e-4)


def test_a_refused_match_lets_smaller_patterns_be_measured(monkeypatch, irc_settings):
    _only_blas(monkeypatch)
    mod = dense_module((4, 32), 8, True, (8,), "relu")
    seen = []

    def irc_always(func, pattern, *rest):
        seen.append(pattern)
        return {"pattern": pattern, "library_s": 2.0, "irc_s": 1.0, "choice": "irc"}
    monkeypatch.setattr(auto, "_measure", irc_always)
    out = auto.auto_dispatch(mod, Target("llvm"), irc.compile)
    assert not packed_calls(out)
    # relu(matmul + b) lost, then matmul + b, then the bare product: all measured.
    assert seen == ["blas.matmul_transposed_bias_relu", "blas.matmul_transposed_bias",
                    "blas.matmul_transposed"]

    def library_always(func, pattern, *rest):
        return {"pattern": pattern, "library_s": 1.0, "irc_s": 2.0, "choice": "library"}
    monkeypatch.setattr(auto, "_measure", library_always)
    irc_settings(cache_dir=str(auto.cache_path()) + ".other")
    assert packed_calls(auto.auto_dispatch(mod, Target("llvm"), irc.compile)) == [
        "fused_permute_dims_matmul_add_nn_relu_blas"]


def test_a_damaged_cache_is_ignored_with_a_warning(cache_dir, monkeypatch):
    _only_blas(monkeypatch)
    (cache_dir / "dispatch.json").write_text("{not json")
    monkeypatch.setattr(auto, "_measure", lambda func, pattern, *rest: {
        "pattern": pattern, "library_s": 1.0, "irc_s": 2.0, "choice": "library"})
    with pytest.warns(UserWarning, match="ignoring the dispatch cache"):
        out = auto.auto_dispatch(dense_module((4, 32), 8, False, None, None), Target("llvm"),
                                 irc.compile)
    assert packed_calls(out)
    assert json.loads((cache_dir / "dispatch.json").read_text())  # rewritten, valid


def test_nothing_to_measure_on_a_missing_gpu(monkeypatch):
    if irc.cuda(0).exist:
        pytest.skip("a GPU is present: auto measures there")
    monkeypatch.setattr(auto, "candidate_patterns",
                        lambda target: irc.dispatch.get_patterns_with_prefix("cublas"))
    mod = dense_module((4, 32), 8, False, None, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = auto.auto_dispatch(mod, Target("cuda -arch=sm_90"), irc.compile)
    assert out is mod
    assert any("needs the GPU" in str(w.message) for w in caught)


def test_candidates_are_the_installed_libraries():
    names = [e.name for e in auto.candidate_patterns(Target("llvm"))]
    assert "blas.matmul" in names
    assert all(n.split(".")[0] in ("dnnl", "blas") for n in names)
    if irc.runtime.dnnl.available():
        assert names[0].startswith("dnnl.")  # oneDNN first: it has the convolutions
