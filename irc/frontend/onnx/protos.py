"""ONNX protos in irc's terms: the ``onnx`` package, element types as irc dtypes, value
names as irc identifiers, the opset a model or function imports for a domain, and the
subgraphs nodes hold in their attributes."""

from __future__ import annotations

import keyword
import re
from typing import Any

from ...core.diagnostics import IRCError, UnsupportedOperatorError, require
from .registry import STRING_TENSORS

# ONNX TensorProto element types irc has a dtype for.
DTYPES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16",
    17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2", 20: "float8_e5m2fnuz",
    21: "uint4", 22: "int4", 23: "float4_e2m1fn", 24: "float8_e8m0fnu", 25: "uint2",
    26: "int2",
}
# The ONNX element type of each irc dtype ONNX has.
ELEM_TYPES = {v: k for k, v in DTYPES.items()}
_TYPE_NAMES = {8: "string", 14: "complex64", 15: "complex128"}


def onnx_module() -> Any:
    """The ``onnx`` package, or an install hint."""
    return require("onnx", "onnx", purpose="the ONNX importer")


def onnx_dtype(elem_type: int, what: str) -> str:
    """irc's dtype of an ONNX element type (an IRCError naming ``what`` otherwise; an
    :class:`~irc.UnsupportedOperatorError` for strings, which irc leaves out)."""
    if elem_type in DTYPES:
        return DTYPES[elem_type]
    if elem_type == 8:
        raise UnsupportedOperatorError(f"{what}: {STRING_TENSORS}")
    name = _TYPE_NAMES.get(elem_type, f"type {elem_type}")
    raise IRCError(f"{what}: irc has no {name} tensors")


def valid_name(name: str, fallback: str = "v") -> str:
    """``name`` made a valid irc identifier (``input.1`` -> ``input_1``)."""
    s = re.sub(r"\W", "_", name).strip("_") or fallback
    if s[0].isdigit() or keyword.iskeyword(s) or s in ("R", "T", "I"):
        s = f"{fallback}_{s}"
    return s


def imported_opset(proto: Any, *domains: str) -> int | None:
    """The version of the first entry of ``proto``'s ``opset_import`` (a model's or a
    function's) for one of ``domains``; None when it imports none of them."""
    for imp in proto.opset_import:
        if imp.domain in domains:
            return int(imp.version)
    return None


def subgraphs(attr: Any) -> list[Any]:
    """The graphs an ``AttributeProto`` holds (a ``GRAPH`` or ``GRAPHS`` attribute)."""
    return ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)


def all_nodes(graph: Any) -> list[Any]:
    """The nodes of ``graph`` and, depth first, of the subgraphs in their attributes."""
    out = []
    for node in graph.node:
        out.append(node)
        for a in node.attribute:
            for g in subgraphs(a):
                out.extend(all_nodes(g))
    return out


def free_names(graph: Any) -> list[str]:
    """The value names ``graph`` (and its subgraphs) read without defining them, in order
    of first use: what a subgraph captures from the enclosing scopes."""
    defined = {vi.name for vi in graph.input} | {t.name for t in graph.initializer}
    seen: dict[str, None] = {}
    for node in graph.node:
        reads = list(node.input)
        for a in node.attribute:
            for g in subgraphs(a):
                reads.extend(free_names(g))
        for nm in reads:
            if nm and nm not in defined:
                seen.setdefault(nm, None)
        defined.update(o for o in node.output if o)
    return list(seen)
