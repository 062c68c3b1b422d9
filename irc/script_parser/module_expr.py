"""Expressions at the top level of a script: module-level ``n = TypeVar("n")``
declarations and the ``metadata`` section (``metadata["relax.expr.Constant"][i]``),
evaluated by :class:`ModuleEvaluator`, which the graph-level evaluator extends.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from ..core import dtype as dt
from ..ir.expr import Constant
from ..ir.printer import MetadataRef
from ..ir.struct_info import TensorStructInfo, shape_of
from . import syntax as syn
from .context import SuppliedObject, TypeVarDecl, describe, located, parse_error
from .tir_expr import ExprEvaluator


class Metadata:
    """The value of the name ``metadata``: ``metadata[kind][index]``."""

    def __init__(self, tables: dict[str, list[Any]] | None):
        self.tables = tables

    def get(self, kind: str, index: int, node: Any) -> Any:
        if self.tables is None or kind not in self.tables:
            ref = MetadataRef(kind=kind, index=index)
            if kind == "relax.expr.Constant":
                raise parse_error(f"{ref.metadata_text()} is not in this text: it was printed "
                                  "without show_meta=True; print it with show_meta=True or "
                                  "pass metadata= to irc.parse", node)
            return ref
        table = self.tables[kind]
        if not 0 <= index < len(table):
            raise parse_error(f"metadata[{kind!r}] has {len(table)} entries; index {index} is "
                              "out of range", node)
        value = table[index]
        if kind == "relax.expr.Constant":
            return _as_constant(value, node)
        return value if isinstance(value, MetadataRef) else SuppliedObject(value)


def _as_constant(value: Any, node: Any) -> Any:
    if isinstance(value, Constant):
        return value
    if isinstance(value, np.ndarray):
        with located(node):
            return Constant.from_numpy(value)
    raise parse_error(f"metadata constants must be arrays, got {describe(value)}", node)


class MetadataTable:
    """``metadata["kind"]`` before it is indexed."""

    __slots__ = ("metadata", "kind")

    def __init__(self, metadata: Metadata, kind: str):
        self.metadata, self.kind = metadata, kind


class ModuleEvaluator(ExprEvaluator):
    """Expression evaluation with module-level names (``metadata``, TypeVars)."""

    def eval_Index(self, node: syn.Index) -> Any:
        base = self.eval(node.value)
        if isinstance(base, (Metadata, MetadataTable)):
            if len(node.items) != 1 or isinstance(node.items[0], syn.Slice):
                raise parse_error("metadata is indexed as metadata[\"kind\"][i]", node)
            key = self.eval(node.items[0])
            if isinstance(base, Metadata):
                if not isinstance(key, str):
                    raise parse_error("metadata[...] needs a kind string such as "
                                      "\"relax.expr.Constant\"", node)
                return MetadataTable(base, key)
            if isinstance(key, bool) or not isinstance(key, int):
                raise parse_error("metadata[kind][...] needs an integer index", node)
            return base.metadata.get(base.kind, key, node)
        if isinstance(base, TypeVarDecl):
            raise parse_error(f"TypeVar '{base.name}' cannot be indexed", node)
        return super().eval_Index(node)


def decode_metadata(value: Any, node: Any) -> dict[str, list[Any]]:
    """The ``metadata = {...}`` section: constants are dicts with dtype, shape and base64
    data (exact for every dtype, NaN and infinities included)."""
    if not isinstance(value, dict):
        raise parse_error("metadata must be a dict of lists", node)
    out: dict[str, list[Any]] = {}
    for kind, items in value.items():
        if not isinstance(kind, str) or not isinstance(items, list):
            raise parse_error("metadata must map kind strings to lists", node)
        decoded = []
        for item in items:
            if isinstance(item, dict) and set(item) == {"dtype", "shape", "base64"}:
                decoded.append(_decode_array(item, node))
            else:
                decoded.append(item)
        out[kind] = decoded
    return out


def _decode_array(item: dict, node: Any) -> Any:
    dtype, shape, data = item["dtype"], item["shape"], item["base64"]
    if not isinstance(dtype, str) or not isinstance(data, str) or \
            not isinstance(shape, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise parse_error("a metadata constant needs dtype (string), shape (list of ints) "
                          "and base64 (string)", node)
    with located(node):
        np_dtype = dt.to_numpy(dt.check(dtype))
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise parse_error("metadata constant data is not valid base64", node) from None
    count = 1
    for s in shape:
        count *= s
    if len(raw) != count * np_dtype.itemsize:
        raise parse_error(f"metadata constant of shape {tuple(shape)} and dtype {dtype} needs "
                          f"{count * np_dtype.itemsize} bytes, got {len(raw)}", node)
    data = np.frombuffer(raw, dtype=np_dtype).reshape(shape).copy()
    return Constant(data=data, struct_info=TensorStructInfo(shape=shape_of(shape), dtype=dtype))
