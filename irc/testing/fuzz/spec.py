"""The table of operators the model generator draws from: one ``OpSpec`` per ONNX
operator type, registered by the family modules (``ops_math``, ``ops_tensor``,
``ops_nn``) with a builder that adds one use of the operator to a growing graph.

A builder draws the operator's form (attributes, optional inputs, the shapes and
dtypes of its operands) from the graph's random generator, takes operands from the
values the graph has when their concrete values suit it, else fresh inputs or
constants, and adds the node (and the constants or shape computations its shape inputs
need). It raises :class:`Reject` when the form it drew does not fit (no operand of the
right kind, a result out of range): the generator undoes what it added and draws
another operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


class Reject(Exception):
    """The operator cannot be added to this graph in the form drawn; the generator undoes
    the builder's nodes and draws another operator."""


@dataclass(frozen=True)
class OpSpec:
    """One operator of the generator: the ONNX ``name``, its ``family`` (for ``--ops``
    and the coverage report), the first and last opsets of the form its builder makes
    (``since``, ``until``: None for the newest), the dtypes its data operands take
    (``dtypes``: the generator uses it when one of them is allowed) and the ``build``
    function."""

    name: str
    family: str
    build: Callable[[Any], None]
    since: int = 7
    dtypes: tuple[str, ...] = ("float32", "float16", "bfloat16")
    until: int | None = None

    def fits(self, opset: int) -> bool:
        """Whether the builder's form is valid at ``opset``."""
        return self.since <= opset and (self.until is None or opset <= self.until)


OPS: dict[str, OpSpec] = {}


def register(name: str, family: str, since: int = 7,
             dtypes: tuple[str, ...] = ("float32", "float16", "bfloat16"),
             until: int | None = None) -> Callable[[Callable], Callable]:
    """Register the decorated builder as the generator's ``name`` operator."""

    def deco(fn: Callable) -> Callable:
        if name in OPS:
            raise ValueError(f"two model-generator builders for {name}")
        OPS[name] = OpSpec(name, family, fn, since, dtypes, until)
        return fn

    return deco


def families() -> dict[str, list[str]]:
    """Family name -> the operator types registered in it."""
    out: dict[str, list[str]] = {}
    for spec in OPS.values():
        out.setdefault(spec.family, []).append(spec.name)
    return out


__all__ = ["OPS", "OpSpec", "Reject", "families", "register"]
