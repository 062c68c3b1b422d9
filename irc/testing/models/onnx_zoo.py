"""Real models as ONNX files, for the ONNX importer's tests and ``benchmarks/onnx_models.py``:
each written by PyTorch's exporter (``torch.onnx.export``, the TorchScript exporter) from
the plain modules of :mod:`irc.testing.models.torch_nets`, with seeded random weights.

=================  ==========================================================================
``resnet18``       basic blocks, batch norm folded into the convolutions by the exporter
``resnet50``       bottleneck blocks
``mobilenet_v2``   depthwise convolutions, ReLU6 as ``Clip``
``bert``           a BERT-style encoder: embeddings (``Gather``), attention with a padding
                   mask, ``LayerNormalization``, GELU through ``Erf``, the tanh pooler
``gpt_decoder``    a GPT-2-style decoder with a symbolic sequence length ``seq`` (causal mask
                   and positions computed from it through ``Shape``/``Range``), tanh GELU
``lstm``           two stacked ``LSTM`` layers and a linear head on every step
``if_branch``      a data-dependent ``If`` (scripted)
``loop_rnn``       an RNN as a ``Loop`` whose trip count is the input's symbolic length
``qdq_cnn``        a small CNN quantized by ONNX Runtime's ``quantize_static`` (QDQ format,
                   int8 per-channel weights, uint8 activations, min-max calibration)
=================  ==========================================================================

The committed versions (``python -m irc.testing.models.onnx_zoo --out tests/data/onnx``)
have reduced widths and inputs (a few MB in all); ``build(name, full=True)`` gives the
published widths and 224x224 images for the CNNs. Building needs PyTorch (imported only
then); reading the committed files and making inputs (:func:`random_inputs`) need only
numpy. Files are reproducible: the same versions of torch and onnxruntime write the same
bytes.

>>> proto = build("resnet18")                                  # needs torch
>>> feeds = random_inputs("gpt_decoder", seed=0, seq=5)        # {"input_ids": int64 (1, 5)}
"""

from __future__ import annotations

import argparse
import importlib
import io
import logging
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ...core.diagnostics import IRCError, MissingDependencyError, require
from ...frontend.onnx.importer import onnx_module

OPSET = 17


@dataclass(frozen=True)
class InputSpec:
    """One graph input: its name, dtype, shape (a str is a symbolic dimension, given a size
    by :func:`random_inputs`) and what values it takes: ``"normal"`` (standard normal
    floats), ``"ids"`` (integers in ``[0, high)``) or ``"mask"`` (ones, the last quarter
    zeros: padding)."""

    name: str
    dtype: str
    shape: tuple[int | str, ...]
    kind: str = "normal"
    high: int = 0


@dataclass(frozen=True)
class ZooEntry:
    """A zoo model: its inputs, the sizes of their symbolic dimensions by default, the
    outputs' names, and how to build it (``make(torch_nets, full) -> (module, inputs of
    the full or reduced model, scripted)``)."""

    name: str
    inputs: tuple[InputSpec, ...]
    outputs: tuple[str, ...]
    make: Callable[[Any, bool], tuple[Any, tuple[InputSpec, ...], bool]]
    dims: dict[str, int] = field(default_factory=dict)
    full_size: bool = False  # build(name, full=True) gives the published widths
    # The inputs of the full-size model (default: a 224x224 image).
    full_inputs: tuple[InputSpec, ...] | None = None


def _image(size: int) -> tuple[InputSpec, ...]:
    return (InputSpec("x", "float32", (1, 3, size, size)),)


def _resnet18(nets: Any, full: bool) -> tuple[Any, tuple[InputSpec, ...], bool]:
    if full:
        return nets.ResNet(18), _image(224), False
    return nets.ResNet(18, base=8, num_classes=10), _image(64), False


def _resnet50(nets: Any, full: bool) -> tuple[Any, tuple[InputSpec, ...], bool]:
    if full:
        return nets.ResNet(50), _image(224), False
    return nets.ResNet(50, base=4, num_classes=10), _image(64), False


def _mobilenet_v2(nets: Any, full: bool) -> tuple[Any, tuple[InputSpec, ...], bool]:
    if full:
        return nets.MobileNetV2(), _image(224), False
    return nets.MobileNetV2(width=0.25, num_classes=10), _image(64), False


_VOCAB = 100
_BERT_INPUTS = (InputSpec("input_ids", "int64", (1, 16), "ids", _VOCAB),
                InputSpec("attention_mask", "int64", (1, 16), "mask"))
_GPT_INPUTS = (InputSpec("input_ids", "int64", (1, "seq"), "ids", _VOCAB),)
_LSTM_INPUTS = (InputSpec("x", "float32", (6, 1, 16)),)
_LOOP_INPUTS = (InputSpec("x", "float32", ("seq", 1, 8)),)


# BERT-base: 12 layers of width 768, 12 heads, FFN 3072, WordPiece's 30,522 tokens;
# sequence 128.
_BERT_BASE_INPUTS = (InputSpec("input_ids", "int64", (1, 128), "ids", 30522),
                     InputSpec("attention_mask", "int64", (1, 128), "mask"))


def _bert(nets: Any, full: bool) -> tuple[Any, tuple[InputSpec, ...], bool]:
    if full:
        return nets.BertEncoder(30522, 768, 12, 12, 3072, 512), _BERT_BASE_INPUTS, False
    return nets.BertEncoder(_VOCAB, 32, 2, 4, 64, 32), _BERT_INPUTS, False


def _gpt(nets: Any, full: bool) -> tuple[Any, tuple[InputSpec, ...], bool]:
    return nets.GPTDecoder(_VOCAB, 32, 2, 4, 128, 64), _GPT_INPUTS, False


def _lstm(nets: Any, full: bool) -> tuple[Any, tuple[InputSpec, ...], bool]:
    return nets.LSTMTagger(16, 24, 5), _LSTM_INPUTS, False


def _if(nets: Any, full: bool) -> tuple[Any, tuple[InputSpec, ...], bool]:
    return nets.Branch(8), (InputSpec("x", "float32", (2, 8)),), True


def _loop(nets: Any, full: bool) -> tuple[Any, tuple[InputSpec, ...], bool]:
    return nets.Recurrence(8, 16, 4), _LOOP_INPUTS, True


def _qdq(nets: Any, full: bool) -> tuple[Any, tuple[InputSpec, ...], bool]:
    return nets.SmallCNN(16, 10), _image(32), False


ZOO: dict[str, ZooEntry] = {e.name: e for e in (
    ZooEntry("resnet18", _image(64), ("logits",), _resnet18, full_size=True),
    ZooEntry("resnet50", _image(64), ("logits",), _resnet50, full_size=True),
    ZooEntry("mobilenet_v2", _image(64), ("logits",), _mobilenet_v2, full_size=True),
    ZooEntry("bert", _BERT_INPUTS, ("last_hidden_state", "pooled"), _bert, full_size=True,
             full_inputs=_BERT_BASE_INPUTS),
    ZooEntry("gpt_decoder", _GPT_INPUTS, ("logits",), _gpt, dims={"seq": 8}),
    ZooEntry("lstm", _LSTM_INPUTS, ("y",), _lstm),
    ZooEntry("if_branch", (InputSpec("x", "float32", (2, 8)),), ("y",), _if),
    ZooEntry("loop_rnn", _LOOP_INPUTS, ("y",), _loop, dims={"seq": 5}),
    ZooEntry("qdq_cnn", _image(32), ("logits",), _qdq),
)}


def random_inputs(name: str, seed: int = 0, full: bool = False, **dims: int
                  ) -> dict[str, np.ndarray]:
    """Seeded inputs of zoo model ``name`` by input name; ``dims`` sizes its symbolic
    dimensions (default: the entry's ``dims``). ``full``: the inputs of ``build(name,
    full=True)``."""
    entry = _entry(name)
    specs = _full_inputs(entry) if full else entry.inputs
    sizes = {**entry.dims, **dims}
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in specs:
        missing = [d for d in spec.shape if isinstance(d, str) and d not in sizes]
        if missing:
            raise IRCError(f"random_inputs({name!r}): give the size of dimension "
                           f"{missing[0]!r} (e.g. {missing[0]}=8)")
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in spec.shape)
        if spec.kind == "ids":
            feeds[spec.name] = rng.integers(0, spec.high, shape).astype(spec.dtype)
        elif spec.kind == "mask":
            mask = np.ones(shape, spec.dtype)
            mask[..., shape[-1] - shape[-1] // 4:] = 0
            feeds[spec.name] = mask
        else:
            feeds[spec.name] = rng.standard_normal(shape).astype(spec.dtype)
    return feeds


def _full_inputs(entry: ZooEntry) -> tuple[InputSpec, ...]:
    if not entry.full_size:
        raise IRCError(f"zoo model {entry.name!r} has no full-size version (those with one: "
                       f"{', '.join(n for n, e in ZOO.items() if e.full_size)})")
    return entry.full_inputs or _image(224)


def _entry(name: str) -> ZooEntry:
    if name not in ZOO:
        raise IRCError(f"no zoo model {name!r}; the models are {', '.join(ZOO)}")
    return ZOO[name]


def _torch_nets() -> Any:
    # PyTorch is needed only to (re)generate the models, never to read them, so it is
    # imported here rather than with this module.
    try:
        return importlib.import_module("irc.testing.models.torch_nets")
    except ImportError as err:
        if err.name != "torch":
            raise
        raise MissingDependencyError(
            "building the ONNX zoo needs PyTorch (the CPU wheel is enough: pip install torch "
            "--index-url https://download.pytorch.org/whl/cpu); the committed models in "
            "tests/data/onnx need no PyTorch") from None


def _randomize(torch: Any, module: Any, seed: int) -> None:
    """Batch-norm statistics and layer-norm scales that are not the identity (else folding
    them, or the exporter sharing equal initializers, would hide mistakes)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
            elif isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)


def build(name: str, full: bool = False, seed: int = 0) -> Any:
    """Zoo model ``name`` as an ``onnx.ModelProto`` (needs PyTorch; ``qdq_cnn`` also
    onnxruntime). ``full``: the published widths, with 224x224 images for the CNNs and
    BERT-base at sequence 128."""
    onnx = onnx_module()
    entry = _entry(name)
    nets = _torch_nets()
    torch = nets.torch
    torch.manual_seed(seed)
    module, specs, scripted = entry.make(nets, full)
    if full:
        specs = _full_inputs(entry)
    _randomize(torch, module, seed)
    module.eval()
    feeds = random_inputs(name, seed=seed, full=full)
    args = tuple(torch.from_numpy(feeds[s.name]) for s in specs)
    dynamic = {s.name: {i: d for i, d in enumerate(s.shape) if isinstance(d, str)}
               for s in specs}
    dynamic = {k: v for k, v in dynamic.items() if v}
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(torch.jit.script(module) if scripted else module, args, buf,
                          dynamo=False, opset_version=OPSET,
                          input_names=[s.name for s in specs],
                          output_names=list(entry.outputs), dynamic_axes=dynamic or None)
    model = onnx.load_from_string(buf.getvalue())
    if name == "qdq_cnn":
        model = _quantize(onnx, model, entry, seed)
    onnx.helper.set_model_props(model, {"irc.onnx_zoo": f"{name}{' (full size)' if full else ''}"
                                        f", seed {seed}: python -m irc.testing.models.onnx_zoo"})
    onnx.checker.check_model(model)
    return model


def _quantize(onnx: Any, model: Any, entry: ZooEntry, seed: int) -> Any:
    """``model`` quantized by ONNX Runtime's static quantization in QDQ format, calibrated
    on 8 seeded inputs."""
    q = require("onnxruntime.quantization", "onnx", purpose="making the QDQ model",
                package="onnxruntime's quantization tool")

    class Reader(q.CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([random_inputs(entry.name, seed=seed + 1 + i)
                                 for i in range(8)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "qdq.onnx")
        onnx.save(model, src)
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # quantize_static's advice to pre-process the model
        try:
            q.quantize_static(src, dst, Reader(), quant_format=q.QuantFormat.QDQ,
                              per_channel=True, activation_type=q.QuantType.QUInt8,
                              weight_type=q.QuantType.QInt8,
                              calibrate_method=q.CalibrationMethod.MinMax)
        finally:
            root.setLevel(level)
        return onnx.load(dst)


def write_all(out_dir: str, names: list[str] | None = None) -> list[tuple[str, int]]:
    """Build the reduced zoo models (all, or ``names``) into ``out_dir/<name>.onnx``;
    returns (path, bytes) per file."""
    onnx = onnx_module()
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name in names or list(ZOO):
        _entry(name)
        path = os.path.join(out_dir, f"{name}.onnx")
        onnx.save(build(name), path)
        written.append((path, os.path.getsize(path)))
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m irc.testing.models.onnx_zoo --out DIR [NAME ...]``."""
    p = argparse.ArgumentParser(description="Write irc's ONNX zoo models (needs PyTorch).")
    p.add_argument("--out", required=True, help="directory for <name>.onnx")
    p.add_argument("names", nargs="*", help=f"models (default: all of {', '.join(ZOO)})")
    args = p.parse_args(argv)
    total = 0
    for path, size in write_all(args.out, args.names or None):
        total += size
        print(f"{path}: {size / 1024:.1f} KiB")
    print(f"total {total / 1024:.1f} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
