"""The third-party zoo (:mod:`irc.testing.models.thirdparty`): its tiny models, committed
in ``tests/data/thirdparty`` (torchvision, timm and transformers classes at tiny widths,
written by both PyTorch exporters), compile and match ONNX Runtime; the zoo's table
names its architectures and variants consistently. ``benchmarks/zoo.py`` times the
full-size models."""

from __future__ import annotations

import os

import numpy as np
import pytest

import irc
from irc.frontend.onnx import from_onnx
from irc.testing.models import thirdparty as tp

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "thirdparty")


def _compare(model, feeds):
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), "llvm"), irc.cpu())
    out = vm["main"](*[feeds[i.name] for i in model.graph.input if i.name in feeds])
    got = [o.numpy() for o in out] if isinstance(out, (list, tuple)) else [out.numpy()]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        scale = max(float(np.abs(w).max()), 1e-30)
        assert float(np.abs(g.astype("float64") - w).max()) / scale < 1e-4


# In the default run, one model per family the others share mechanisms with (grouped
# convolutions, dense concatenation, a vision transformer, an encoder, a decoder); the
# rest run with -m slow.
_IN_CI = {"tiny_regnet", "tiny_densenet", "tiny_vit", "tiny_bert", "tiny_llama"}


@pytest.mark.parametrize("v", [v if v.arch.name in _IN_CI else
                               pytest.param(v, marks=pytest.mark.slow)
                               for v in tp.tiny_variants()], ids=lambda v: v.arch.name)
def test_tiny_thirdparty_model_matches_onnxruntime(v):
    path = tp.path_of(v, DATA)
    assert os.path.exists(path), f"{path} is missing: python -m irc.testing.models." \
                                 f"thirdparty --tiny --cache tests/data/thirdparty"
    _compare(onnx.load(path), tp.random_inputs(v, seed=3))


@pytest.mark.parametrize("v", tp.tiny_dynamic_variants(), ids=lambda v: v.arch.name)
def test_tiny_model_with_dynamic_axes_compiles_once_and_runs_every_length(v):
    # Exported with symbolic batch and sequence axes (the dynamo exporter gives each
    # input's axes symbols of their own): imported symbolically, compiled once, run at
    # lengths other than the exported one, with padding in the mask.
    path = tp.path_of(v, DATA)
    assert os.path.exists(path), f"{path} is missing: python -m irc.testing.models." \
                                 f"thirdparty --tiny --cache tests/data/thirdparty"
    model = onnx.load(path)
    dims = [d for i in model.graph.input for d in i.type.tensor_type.shape.dim]
    assert dims and all(d.dim_param for d in dims)
    vm = irc.vm.VirtualMachine(irc.compile(from_onnx(model), "llvm"), irc.cpu())
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(5)
    for batch, length in ((1, 5), (3, 11), (2, 16)):
        ids = rng.integers(0, v.arch.vocab, (batch, length)).astype("int64")
        mask = np.ones((batch, length), "int64")
        mask[0, length - 2:] = 0
        want = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        got = vm["main"](ids, mask)
        got = (got[0] if isinstance(got, (list, tuple)) else got).numpy()
        assert got.shape == want.shape
        assert float(np.abs(got - want).max()) / float(np.abs(want).max()) < 1e-4


def test_zoo_has_25_architectures_from_three_libraries_at_two_sizes():
    sources = {a.source for a in tp.ARCHS.values()}
    assert len(tp.ARCHS) >= 25 and sources == {"torchvision", "timm", "transformers"}
    vs = tp.variants()
    assert {v.exporter for v in vs} == {"legacy", "dynamo"}
    for v in vs:
        assert tp.variant(v.name) == v
    # Sizes other than 224 and 128, odd ones among them.
    sizes = {v.size for v in vs}
    assert any(isinstance(s, tuple) and s[0] % 2 for s in sizes)
    assert any(isinstance(s, int) and s % 2 for s in sizes)


def test_variant_names_are_checked():
    with pytest.raises(irc.IRCError, match="expected 'arch@HxW/exporter'"):
        tp.variant("vit_tiny")
    with pytest.raises(irc.IRCError, match="no third-party zoo architecture 'nope'"):
        tp.variant("nope@224x224/legacy")
    with pytest.raises(irc.IRCError, match="takes an image size"):
        tp.variant("vit_tiny@224/legacy")
    with pytest.raises(irc.IRCError, match="'legacy' or 'dynamo'"):
        tp.variant("bert@128/onnxscript")


@pytest.mark.slow
def test_generator_builds_a_tiny_model_that_matches_onnxruntime(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    v = tp.Variant(tp.TINY["tiny_bert"], 11, "legacy")
    model = tp.load(v, str(tmp_path))
    assert os.path.exists(tp.path_of(v, str(tmp_path)))
    _compare(model, tp.random_inputs(v, seed=1))
