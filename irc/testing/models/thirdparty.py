"""A zoo of third-party models: architectures written by others (torchvision, timm, Hugging
Face transformers), built from their constructors and configs with seeded random weights,
exported to ONNX by PyTorch's two exporters, at more than one input size. The models irc's
own rules were not designed around, for ``benchmarks/zoo.py`` and the zoo's tests.

Every architecture has two *variants*: its first input size exported by the TorchScript
exporter (``torch.onnx.export(..., dynamo=False)``, opset 17) and its second size, often
odd, exported by the dynamo exporter (``dynamo=True``, opset 18) where that exporter takes
the model (else the TorchScript one again). A variant is named ``arch@size/exporter``,
e.g. ``squeezenet1_1@200x176/dynamo``; :func:`variants` lists them.

Building needs PyTorch and the model's library (``pip install torch torchvision timm
transformers onnxscript``; none of them is a dependency of irc); reading a built file
and making its inputs need only numpy and onnx. Files are cached in ``~/.cache/irc/zoo``
(``IRC_ZOO_CACHE`` or ``--cache`` elsewhere), never in git. :data:`TINY` holds the
same libraries' classes at tiny widths, whose files are committed in
``tests/data/thirdparty`` for CI.

>>> v = variant("vit_tiny@224/legacy")
>>> proto = load(v)                      # builds and caches it the first time
>>> feeds = random_inputs(v, seed=0)     # {"x": float32 (1, 3, 224, 224)}

``python -m irc.testing.models.thirdparty [--cache DIR] [NAME ...]`` builds the files
(all, or the architectures or variants named) and prints one line per file.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...core.diagnostics import IRCError, MissingDependencyError, require
from ...frontend.onnx.protos import onnx_module

CACHE = os.environ.get("IRC_ZOO_CACHE") or os.path.join(
    os.path.expanduser("~"), ".cache", "irc", "zoo")

# The small text models: four layers of width 256, as a user would try an architecture on
# a laptop first; a vocabulary of 8,000 tokens keeps the files small (a Gather's cost does
# not depend on it).
_VOCAB, _WIDTH, _LAYERS, _HEADS, _FFN = 8000, 256, 4, 4, 1024


@dataclass(frozen=True)
class Arch:
    """One third-party architecture: where it comes from, what family of layers it
    stands for, how to build it at an input size, and its two sizes (``(H, W)`` of an
    image, or a text's sequence length). ``dynamo``: whether PyTorch's dynamo exporter
    takes it (else its second variant is exported like the first)."""

    name: str
    source: str  # torchvision | timm | transformers
    family: str
    kind: str  # image | text | audio
    sizes: tuple[Any, Any]
    make: Callable[[Any], Any]  # size -> torch.nn.Module
    dynamo: bool = True
    vocab: int = _VOCAB  # a text model's token ids are below this


@dataclass(frozen=True)
class Variant:
    """An architecture at one input size through one exporter."""

    arch: Arch
    size: Any
    exporter: str  # legacy | dynamo
    dynamic: bool = False  # a text model exported with symbolic batch and sequence axes

    @property
    def name(self) -> str:
        size = (f"{self.size[0]}x{self.size[1]}" if isinstance(self.size, tuple)
                else str(self.size))
        return f"{self.arch.name}@{size}/{self.exporter}{'+dynamic' if self.dynamic else ''}"

    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        """The model's inputs by name, with their shapes."""
        if self.arch.kind == "image":
            return {"x": (1, 3, *self.size)}
        if self.arch.kind == "audio":
            return {"input_features": (1, 80, self.size)}
        return {"input_ids": (1, self.size), "attention_mask": (1, self.size)}


# -- builders ------------------------------------------------------------------------------


def _tv(name: str, **kw: Any) -> Callable[[Any], Any]:
    def make(size: Any) -> Any:
        import torchvision.models as tvm
        return tvm.get_model(name, weights=None, **kw)
    return make


def _timm(name: str, fixed_size: bool = False, **kw: Any) -> Callable[[Any], Any]:
    """A timm model; ``fixed_size``: its layers depend on the image size (position
    embeddings, attention biases), which the constructor is given."""
    def make(size: Any) -> Any:
        import timm
        extra = {"img_size": size} if fixed_size else {}
        return timm.create_model(name, pretrained=False, **extra, **kw)
    return make


class _LastHidden:
    """Wraps a transformers model so that the exported graph has one output: the last
    hidden state (a ``ModelOutput`` is a dict the exporters flatten differently)."""

    def __new__(cls, model: Any, audio: bool = False) -> Any:
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *args: Any) -> Any:
                if audio:
                    return self.model(input_features=args[0]).last_hidden_state
                return self.model(input_ids=args[0],
                                  attention_mask=args[1]).last_hidden_state
        return Wrapped()


def _hf(config_name: str, model_name: str, part: str = "", **kw: Any
        ) -> Callable[[Any], Any]:
    """A transformers model from its config, or its submodule ``part`` (an encoder)."""
    def make(size: Any) -> Any:
        import transformers
        config = getattr(transformers, config_name)(**kw)
        model = getattr(transformers, model_name)(config)
        if part:
            model = getattr(model, part)
        return _LastHidden(model, audio=config_name == "WhisperConfig")
    return make


_BERT_LIKE = dict(vocab_size=_VOCAB, hidden_size=_WIDTH, num_hidden_layers=_LAYERS,
                  num_attention_heads=_HEADS, intermediate_size=_FFN,
                  max_position_embeddings=512)

ARCHS: dict[str, Arch] = {a.name: a for a in (
    # torchvision: CNNs of every family.
    Arch("squeezenet1_1", "torchvision", "fire modules: 1x1 squeeze, 1x1 and 3x3 expand "
         "concatenated", "image", ((224, 224), (200, 176)), _tv("squeezenet1_1")),
    Arch("shufflenet_v2_x0_5", "torchvision", "channel split, shuffle (reshape/transpose), "
         "depthwise", "image", ((224, 224), (192, 160)), _tv("shufflenet_v2_x0_5")),
    Arch("densenet121", "torchvision", "dense concatenation", "image",
         ((224, 224), (161, 161)), _tv("densenet121")),
    Arch("mobilenet_v3_small", "torchvision", "inverted residuals, squeeze-excite, "
         "hard-swish", "image", ((224, 224), (257, 193)), _tv("mobilenet_v3_small")),
    Arch("efficientnet_b0", "torchvision", "inverted residuals, squeeze-excite, SiLU",
         "image", ((224, 224), (199, 199)), _tv("efficientnet_b0")),
    Arch("regnet_y_400mf", "torchvision", "grouped convolutions, squeeze-excite", "image",
         ((224, 224), (176, 240)), _tv("regnet_y_400mf")),
    Arch("mnasnet0_5", "torchvision", "inverted residuals with 5x5 depthwise", "image",
         ((224, 224), (183, 183)), _tv("mnasnet0_5")),
    Arch("googlenet", "torchvision", "inception branches concatenated", "image",
         ((224, 224), (181, 203)), _tv("googlenet", aux_logits=False, init_weights=True)),
    Arch("resnext50_32x4d", "torchvision", "grouped bottlenecks (32 groups)", "image",
         ((160, 160), (131, 131)), _tv("resnext50_32x4d")),
    # timm: transformers, hybrids, and CNN variants.
    Arch("vit_tiny", "timm", "vision transformer (patches, class token, attention)",
         "image", ((224, 224), (160, 160)), _timm("vit_tiny_patch16_224", fixed_size=True)),
    Arch("deit_tiny", "timm", "vision transformer", "image", ((224, 224), (192, 192)),
         _timm("deit_tiny_patch16_224", fixed_size=True)),
    Arch("convnext_atto", "timm", "7x7 depthwise, channels-last layer norm, GELU MLP",
         "image", ((224, 224), (176, 208)), _timm("convnext_atto")),
    Arch("resnet18d", "timm", "ResNet variant: deep stem, average-pool shortcut", "image",
         ((224, 224), (195, 195)), _timm("resnet18d")),
    Arch("mobilevit_xxs", "timm", "hybrid: convolutions and transformer blocks on "
         "unfolded patches", "image", ((256, 256), (192, 192)), _timm("mobilevit_xxs")),
    Arch("levit_128s", "timm", "hybrid: convolutional stem, attention with learned biases "
         "and hard-swish", "image", ((224, 224), (192, 192)),
         _timm("levit_128s", fixed_size=True)),
    Arch("ghostnet_050", "timm", "ghost modules (cheap depthwise features concatenated)",
         "image", ((224, 224), (177, 177)), _timm("ghostnet_050")),
    Arch("lcnet_050", "timm", "depthwise separable, hard-swish, large 5x5 kernels", "image",
         ((224, 224), (250, 190)), _timm("lcnet_050")),
    Arch("mixnet_s", "timm", "mixed depthwise kernel sizes (channel split, concatenation)",
         "image", ((224, 224), (185, 185)), _timm("mixnet_s")),
    Arch("regnetx_002", "timm", "grouped convolutions (group width 8)", "image",
         ((224, 224), (163, 219)), _timm("regnetx_002")),
    Arch("edgenext_xx_small", "timm", "hybrid: depthwise convolutions and transposed "
         "(channel) attention", "image", ((256, 256), (192, 192)),
         _timm("edgenext_xx_small")),
    # transformers: text encoders and decoders of several kinds, and one audio encoder.
    Arch("bert", "transformers", "encoder: post-norm, GELU, padding mask", "text",
         (128, 77), _hf("BertConfig", "BertModel", **_BERT_LIKE)),
    Arch("distilbert", "transformers", "encoder: no token types, 6-layer style", "text",
         (128, 61), _hf("DistilBertConfig", "DistilBertModel", vocab_size=_VOCAB,
                        dim=_WIDTH, n_layers=_LAYERS, n_heads=_HEADS, hidden_dim=_FFN)),
    Arch("albert", "transformers", "encoder: factorized embedding, one layer shared", "text",
         (128, 93), _hf("AlbertConfig", "AlbertModel", embedding_size=128, **_BERT_LIKE)),
    Arch("roberta", "transformers", "encoder: position ids from the padding mask", "text",
         (128, 100), _hf("RobertaConfig", "RobertaModel", pad_token_id=1,
                         **{**_BERT_LIKE, "max_position_embeddings": 514})),
    Arch("gpt2", "transformers", "decoder: pre-norm, causal mask, tanh GELU, Conv1D "
         "projections", "text", (128, 71),
         _hf("GPT2Config", "GPT2Model", vocab_size=_VOCAB, n_embd=_WIDTH, n_layer=_LAYERS,
             n_head=_HEADS, n_positions=512, bos_token_id=0, eos_token_id=0,
             use_cache=False)),
    Arch("t5_encoder", "transformers", "encoder: RMS norm, relative position buckets, "
         "ReLU", "text", (128, 83),
         _hf("T5Config", "T5EncoderModel", vocab_size=_VOCAB, d_model=_WIDTH, d_kv=64,
             d_ff=_FFN, num_layers=_LAYERS, num_heads=_HEADS)),
    Arch("llama", "transformers", "decoder: RMS norm, rotary positions, SiLU-gated MLP, "
         "grouped-query attention", "text", (128, 67),
         _hf("LlamaConfig", "LlamaModel", vocab_size=_VOCAB, hidden_size=_WIDTH,
             intermediate_size=688, num_hidden_layers=_LAYERS, num_attention_heads=_HEADS,
             num_key_value_heads=2, max_position_embeddings=512, use_cache=False)),
    Arch("whisper_encoder", "transformers", "audio encoder: 1-D convolutions, sinusoidal "
         "positions, pre-norm attention", "audio", (400, 400),
         _hf("WhisperConfig", "WhisperModel", "encoder", num_mel_bins=80, d_model=_WIDTH,
             encoder_layers=_LAYERS, encoder_attention_heads=_HEADS, encoder_ffn_dim=_FFN,
             decoder_layers=1, decoder_attention_heads=_HEADS,
             max_source_positions=200)),
)}



def _tiny(make: Callable[[], Any]) -> Callable[[Any], Any]:
    return lambda size: make()


def _tv_regnet() -> Any:
    from torchvision.models.regnet import BlockParams, RegNet
    return RegNet(BlockParams.from_init_params(depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=4,
                                               se_ratio=0.25), num_classes=10)


def _tv_densenet() -> Any:
    from torchvision.models.densenet import DenseNet
    return DenseNet(growth_rate=4, block_config=(2, 2), num_init_features=8, bn_size=2,
                    num_classes=10)


def _tv_shufflenet() -> Any:
    from torchvision.models.shufflenetv2 import ShuffleNetV2
    return ShuffleNetV2([1, 1, 1], [8, 16, 32, 64, 128], num_classes=10)


def _timm_convnext() -> Any:
    from timm.models.convnext import ConvNeXt
    return ConvNeXt(depths=(1, 1, 1, 1), dims=(8, 16, 32, 64), num_classes=10)


def _timm_vit() -> Any:
    from timm.models.vision_transformer import VisionTransformer
    return VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2,
                             num_classes=10)


_TINY_VOCAB = 100
_TINY_TEXT = dict(vocab_size=_TINY_VOCAB, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)

# The same libraries' classes at tiny widths, whose ONNX files are small enough to commit
# (``tests/data/thirdparty``, a few hundred KB in all): CI checks them against ONNX
# Runtime without PyTorch. Each has one size and one exporter (both exporters appear).
TINY: dict[str, Arch] = {a.name: a for a in (
    Arch("tiny_regnet", "torchvision", "grouped convolutions (group width 4), "
         "squeeze-excite", "image", ((32, 32), (32, 32)), _tiny(_tv_regnet)),
    Arch("tiny_densenet", "torchvision", "dense concatenation", "image",
         ((33, 33), (33, 33)), _tiny(_tv_densenet)),
    Arch("tiny_shufflenet", "torchvision", "channel split and shuffle", "image",
         ((48, 40), (48, 40)), _tiny(_tv_shufflenet)),
    Arch("tiny_convnext", "timm", "7x7 depthwise, channels-last layer norm", "image",
         ((32, 40), (32, 40)), _tiny(_timm_convnext)),
    Arch("tiny_vit", "timm", "vision transformer", "image", ((32, 32), (32, 32)),
         _tiny(_timm_vit)),
    Arch("tiny_bert", "transformers", "encoder: post-norm, GELU, padding mask", "text",
         (16, 16), _hf("BertConfig", "BertModel", **_TINY_TEXT), vocab=_TINY_VOCAB),
    Arch("tiny_gpt2", "transformers", "decoder: causal mask, tanh GELU", "text", (12, 12),
         _hf("GPT2Config", "GPT2Model", vocab_size=_TINY_VOCAB, n_embd=32, n_layer=2,
             n_head=2, n_positions=64, bos_token_id=0, eos_token_id=0, use_cache=False),
         vocab=_TINY_VOCAB),
    Arch("tiny_llama", "transformers", "decoder: RMS norm, rotary positions, grouped-query "
         "attention", "text", (10, 10),
         _hf("LlamaConfig", "LlamaModel", vocab_size=_TINY_VOCAB, hidden_size=32,
             intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64, use_cache=False),
         vocab=_TINY_VOCAB),
    Arch("tiny_t5_encoder", "transformers", "encoder: RMS norm, relative position buckets",
         "text", (9, 9), _hf("T5Config", "T5EncoderModel", vocab_size=_TINY_VOCAB,
                             d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4),
         vocab=_TINY_VOCAB),
)}
# The tiny text models also committed with symbolic batch and sequence axes (what
# exporters write for serving), by the exporter named.
TINY_DYNAMIC = {"tiny_bert": "legacy", "tiny_gpt2": "dynamo"}
# Which exporter writes each tiny model's committed file.
TINY_EXPORTER = {"tiny_regnet": "legacy", "tiny_densenet": "dynamo", "tiny_shufflenet": "dynamo",
                 "tiny_convnext": "legacy", "tiny_vit": "dynamo", "tiny_bert": "legacy",
                 "tiny_gpt2": "dynamo", "tiny_llama": "legacy", "tiny_t5_encoder": "dynamo"}


def tiny_variants() -> list[Variant]:
    """The tiny models as committed: one variant each."""
    return [Variant(a, a.sizes[0], TINY_EXPORTER[a.name]) for a in TINY.values()]


def tiny_dynamic_variants() -> list[Variant]:
    """The tiny text models committed with symbolic batch and sequence axes."""
    return [Variant(TINY[n], TINY[n].sizes[0], e, dynamic=True)
            for n, e in TINY_DYNAMIC.items()]



def variants(names: list[str] | None = None) -> list[Variant]:
    """The variants of the architectures ``names`` (all by default); a name may also be a
    variant's (``arch@size/exporter``)."""
    out = []
    for name in names or list(ARCHS):
        if "@" in name:
            out.append(variant(name))
            continue
        arch = _arch(name)
        out.append(Variant(arch, arch.sizes[0], "legacy"))
        if arch.sizes[1] != arch.sizes[0] or arch.dynamo:
            out.append(Variant(arch, arch.sizes[1], "dynamo" if arch.dynamo else "legacy"))
    return out


def variant(name: str) -> Variant:
    """The variant named ``arch@size/exporter`` (any size and either exporter; a text
    model's exporter may end in ``+dynamic``: symbolic batch and sequence axes)."""
    try:
        arch_name, rest = name.split("@", 1)
        size_text, exporter = rest.split("/", 1)
        size: Any = (tuple(int(s) for s in size_text.split("x")) if "x" in size_text
                     else int(size_text))
    except ValueError:
        raise IRCError(f"zoo variant {name!r}: expected 'arch@HxW/exporter' or "
                       f"'arch@length/exporter', e.g. 'squeezenet1_1@200x176/dynamo'") from None
    arch = _arch(arch_name)
    exporter, plus, flag = exporter.partition("+")
    if exporter not in ("legacy", "dynamo") or (plus and flag != "dynamic"):
        raise IRCError(f"zoo variant {name!r}: the exporter is 'legacy' or 'dynamo', "
                       f"optionally followed by '+dynamic'")
    if isinstance(size, tuple) != (arch.kind == "image"):
        raise IRCError(f"zoo variant {name!r}: {arch.name} takes "
                       f"{'an image size HxW' if arch.kind == 'image' else 'a length'}")
    return Variant(arch, size, exporter, dynamic=bool(plus))


def _arch(name: str) -> Arch:
    arch = ARCHS.get(name) or TINY.get(name)
    if arch is None:
        raise IRCError(f"no third-party zoo architecture {name!r}; they are "
                       f"{', '.join(ARCHS)} (and the tiny {', '.join(TINY)})")
    return arch


def random_inputs(v: Variant, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs of variant ``v``: standard normal images and audio features; token
    ids below the vocabulary, and an attention mask whose last quarter is padding for
    encoders (all ones for decoders, which are not given padding on the right)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape in v.input_shapes().items():
        if name == "input_ids":
            feeds[name] = rng.integers(0, v.arch.vocab, shape).astype("int64")
        elif name == "attention_mask":
            mask = np.ones(shape, "int64")
            if v.arch.family.startswith("encoder"):
                mask[..., shape[-1] - shape[-1] // 4:] = 0
            feeds[name] = mask
        else:
            feeds[name] = rng.standard_normal(shape).astype("float32")
    return feeds


def _torch() -> Any:
    return require("torch", purpose="building the third-party zoo",
                   package="PyTorch and the model libraries",
                   install="pip install torch torchvision timm transformers onnxscript (the "
                           "files, once built, need none of them)")


def randomize_norms(torch: Any, module: Any, seed: int) -> None:
    """Batch-norm statistics and norm scales that are not the identity (else folding them,
    or an exporter sharing equal initializers, would hide mistakes)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in module.modules():
            running_var = getattr(m, "running_var", None)
            if isinstance(running_var, torch.Tensor):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(running_var.shape, generator=gen) + 0.5)
            weight, bias = getattr(m, "weight", None), getattr(m, "bias", None)
            if "Norm" in type(m).__name__ and isinstance(weight, torch.Tensor):
                weight.copy_(torch.rand(weight.shape, generator=gen) + 0.5)
                if isinstance(bias, torch.Tensor):
                    bias.copy_(torch.randn(bias.shape, generator=gen) * 0.1)


def build(v: Variant, seed: int = 0) -> Any:
    """Variant ``v`` as an ``onnx.ModelProto``: its module built with seed ``seed``,
    exported by its exporter with fixed input shapes (with ``v.dynamic``, a text model's
    batch and sequence axes symbolic: ``batch`` and ``sequence``)."""
    onnx = onnx_module()
    torch = _torch()
    torch.manual_seed(seed)
    try:
        module = v.arch.make(v.size)
    except ImportError as err:
        raise MissingDependencyError(
            f"zoo architecture {v.arch.name} is built with {v.arch.source}, which is not "
            f"installed ({err}): pip install {v.arch.source}") from None
    except Exception as err:  # a library constructor failed: say which
        raise IRCError(f"zoo variant {v.name}: building it with {v.arch.source} failed: "
                       f"{type(err).__name__}: {err}") from err
    randomize_norms(torch, module, seed)
    module.eval()
    feeds = random_inputs(v, seed)
    args = tuple(torch.from_numpy(a) for a in feeds.values())
    if v.dynamic and v.arch.kind != "text":
        raise IRCError(f"zoo variant {v.name}: only text models are exported with dynamic "
                       f"axes (batch and sequence)")
    root = logging.getLogger()
    level = root.level
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        root.setLevel(logging.ERROR)
        try:
            if v.exporter == "dynamo":
                # AUTO: the exporter finds each axis's range (a sequence is bounded
                # by the model's position table).
                dims = ({0: torch.export.Dim.AUTO, 1: torch.export.Dim.AUTO}
                        if v.dynamic else None)
                program = torch.onnx.export(module, args, dynamo=True, opset_version=18,
                                            input_names=list(feeds), output_names=["y"],
                                            verbose=False,  # forward(*args):
                                            dynamic_shapes=(tuple(dims for _ in args),)
                                            if dims else None)
                model = program.model_proto
            else:
                buf = io.BytesIO()
                axes = ({n: {0: "batch", 1: "sequence"} for n in feeds} if v.dynamic
                        else None)
                torch.onnx.export(module, args, buf, dynamo=False, opset_version=17,
                                  input_names=list(feeds), output_names=["y"],
                                  dynamic_axes=axes)
                model = onnx.load_from_string(buf.getvalue())
        except Exception as err:  # an exporter failed: name it for the user
            raise IRCError(f"zoo variant {v.name}: PyTorch's {v.exporter} exporter failed: "
                           f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                           ) from err
        finally:
            root.setLevel(level)
    onnx.helper.set_model_props(model, {"irc.thirdparty": f"{v.name}, seed {seed}: "
                                        f"python -m irc.testing.models.thirdparty"})
    return model


def path_of(v: Variant, cache: str = CACHE, seed: int = 0) -> str:
    """Where variant ``v``'s file is cached (a tiny model's: ``<name>.onnx``, the name of
    its committed file)."""
    if v.arch.name in TINY:
        return os.path.join(cache, f"{v.arch.name}{'_dynamic' if v.dynamic else ''}.onnx")
    safe = v.name.replace("@", "_").replace("/", "_")
    return os.path.join(cache, f"{safe}_s{seed}.onnx")


def load(v: Variant, cache: str = CACHE, seed: int = 0) -> Any:
    """Variant ``v``'s model, built and cached the first time."""
    onnx = onnx_module()
    path = path_of(v, cache, seed)
    if not os.path.exists(path):
        model = build(v, seed)
        os.makedirs(cache, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        onnx.save(model, tmp)
        os.replace(tmp, path)
    return onnx.load(path)


def main(argv: list[str] | None = None) -> int:
    """``python -m irc.testing.models.thirdparty [--cache DIR] [NAME ...]``."""
    p = argparse.ArgumentParser(description="Build and cache the third-party zoo's ONNX "
                                            "files (needs PyTorch and the model libraries).")
    p.add_argument("--cache", default=CACHE, help=f"where the files go (default {CACHE})")
    p.add_argument("--list", action="store_true", help="list the variants and exit")
    p.add_argument("--tiny", action="store_true",
                   help="the tiny models instead (python -m irc.testing.models.thirdparty "
                        "--tiny --cache tests/data/thirdparty writes the committed files)")
    p.add_argument("names", nargs="*", help="architectures or variants (default: all)")
    args = p.parse_args(argv)
    chosen = (tiny_variants() + tiny_dynamic_variants() if args.tiny
              else variants(args.names or None))
    for v in chosen:
        if args.list:
            print(f"{v.name:40s} {v.arch.source:12s} {v.arch.family}")
            continue
        try:
            load(v, args.cache)
        except IRCError as err:
            print(f"{v.name}: {str(err).splitlines()[0]}", file=sys.stderr)
            continue
        path = path_of(v, args.cache)
        print(f"{path}: {os.path.getsize(path) / 2**20:.1f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
