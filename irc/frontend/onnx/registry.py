"""The converter table: ONNX operator type -> converters, each valid from an opset version.

A converter is a function ``f(node) -> Expr | Sequence[Expr]`` (``node`` an
:class:`~irc.frontend.onnx.importer.Node`: its inputs as irc expressions, its attributes,
the graph it belongs to) registered with :func:`converter` for the opset version where the
operator took the form it handles. The importer picks, for a model importing opset ``v``,
the converter registered with the greatest version ``<= v``; so ``Reshape`` registered at 5
(the target shape as an input) serves every model from opset 5 on, and a model at opset 1
(the shape as an attribute) gets a clear "unsupported" error. Converters of another
domain (``ai.onnx.preview``) name it, and are picked by the model's opset of that domain.

What irc deliberately does not convert is listed in :data:`REFUSED` (operator types) and
:data:`REFUSED_DOMAINS` (whole domains), each with the reason; the importer's
"unsupported" errors and the support table (``irc.testing.onnx_node_cases --table``)
both give it from there.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Callable

# The oldest opset irc imports (ONNX's broadcasting became numpy's in opset 7).
MIN_OPSET = 7


@dataclass(frozen=True)
class Converter:
    op_type: str
    since: int
    fn: Callable[[Any], Any]
    domain: str = ""


_TABLE: dict[str, list[Converter]] = {}


def _domain(domain: str) -> str:
    return "" if domain == "ai.onnx" else domain


def converter(*op_types: str, since: int = 1, domain: str = ""
              ) -> Callable[[Callable], Callable]:
    """Register the decorated function as the converter of ``op_types`` (of ``domain``,
    the default one unless given) from opset ``since`` of that domain on."""
    domain = _domain(domain)

    def register(fn: Callable) -> Callable:
        for op in op_types:
            entries = _TABLE.setdefault(op, [])
            if any(c.since == since and c.domain == domain for c in entries):
                raise ValueError(f"two ONNX converters for {op} since opset {since}")
            bisect.insort(entries, Converter(op, since, fn, domain), key=lambda c: c.since)
        return fn

    return register


def lookup(op_type: str, opset: int, domain: str = "") -> Converter | None:
    """The converter of ``op_type`` (of ``domain``) for a model importing ``opset`` of
    that domain, or None."""
    domain = _domain(domain)
    best = None
    for c in _TABLE.get(op_type, []):
        if c.since <= opset and c.domain == domain:
            best = c
    return best


_STRINGS = ("string tensors are not supported: irc compiles numeric tensor programs "
            "(tokenize and encode text before the model)")
_RANDOM = ("random sampling is not supported: a compiled irc function is deterministic, "
           "and ONNX leaves the generator unspecified (its test data are numpy's draws)")

# Operator types irc deliberately does not convert (default domain), with the reason.
REFUSED: dict[str, str] = {
    "StringConcat": _STRINGS,
    "StringNormalizer": _STRINGS,
    "StringSplit": _STRINGS,
    "RegexFullMatch": _STRINGS,
    "Bernoulli": _RANDOM,
    "Multinomial": _RANDOM,
    "RandomNormal": _RANDOM,
    "RandomNormalLike": _RANDOM,
    "RandomUniform": _RANDOM,
    "RandomUniformLike": _RANDOM,
    "ImageDecoder": "decoding image files (JPEG, PNG, WebP, TIFF, ...) is not supported: it "
                    "is file-format parsing, not tensor computation (decode before the "
                    "model)",
}

DROPOUT_TRAINING = ("training mode (training_mode=1 with a ratio above 0) is not supported: "
                    "it draws a random mask; irc compiles Dropout for inference")
STRING_TENSORS = _STRINGS

# Uses irc refuses of what it otherwise converts (raised by the converters and the
# importer), with the reason.
REFUSED_USES: dict[str, str] = {
    "Dropout in training mode": DROPOUT_TRAINING,
    "string tensors (graph inputs, outputs, initializers, Cast)": STRING_TENSORS,
}

# Operator domains irc deliberately does not convert, with the reason.
REFUSED_DOMAINS: dict[str, str] = {
    "ai.onnx.ml": "the ai.onnx.ml domain's classical machine-learning operators (tree "
                  "ensembles, label encoders, ...) are not supported: irc compiles "
                  "deep-learning tensor programs (of that domain it converts the tensor "
                  "arithmetic: Binarizer, ArrayFeatureExtractor)",
    "ai.onnx.preview.training": "the ai.onnx.preview.training domain (gradients and "
                                "optimizer steps) is not supported: irc compiles "
                                "inference",
}


def refusal(op_type: str, domain: str = "") -> str | None:
    """Why irc deliberately does not convert ``op_type`` of ``domain``, or None."""
    domain = _domain(domain)
    if domain in REFUSED_DOMAINS:
        converted = any(c.domain == domain for c in _TABLE.get(op_type, ()))
        return None if converted else REFUSED_DOMAINS[domain]
    return REFUSED.get(op_type) if domain == "" else None


def supported_ops() -> dict[str, list[int]]:
    """Every operator type with a converter, and the opset versions (of its domain) its
    converters start at (sorted)."""
    return {op: [c.since for c in entries] for op, entries in sorted(_TABLE.items())}
