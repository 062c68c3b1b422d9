"""Apache TVM's metadata section: ``metadata = tvm.ir.load_json(\"\"\"{...}\"\"\")``, which
TVM's ``script(show_meta=True)`` prints after a module that has constants.

The JSON is TVM's serialized node graph: ``{"root": i, "nodes": [...], "b64ndarrays":
[...]}``. Each node has a ``type_key`` and, by kind, ``attrs`` (fields as strings: node
indices for objects), ``keys``/``data`` (a map: string keys and value indices, or
alternating key and value indices), ``data`` (an array's element indices) or
``repr_str``/``repr_b64`` (objects stored as bytes, such as strings and, in recent TVM
versions, tensors). The root is a map from kinds (``"relax.expr.Constant"``) to arrays of
nodes; ``metadata["relax.expr.Constant"][i]`` in the module text names the i-th.

irc reads the constants: a ``relax.expr.Constant`` node's ``data`` field names its tensor,
either an index into ``b64ndarrays`` (TVM up to 0.19) or a tensor node stored as bytes
(later versions). A tensor's bytes are TVM's binary tensor format: magic number,
reserved word, device, rank, dtype (code, bits, lanes), shape and data, little-endian;
base64 of bytes stored through a node's ``repr_b64`` carry an 8-byte length first.
Entries of other kinds are kept as opaque references (as when the section is missing).
Anything malformed is an IRParseError naming what and where.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from typing import Any

import numpy as np

from ..core import dtype as dt
from ..ir.expr import Constant
from ..ir.printer import MetadataRef
from ..ir.struct_info import TensorStructInfo, shape_of
from .context import parse_error

#: The first eight bytes of a serialized TVM tensor.
TENSOR_MAGIC = 0xDD5E40F096B4A13F
_ARRAY_KEYS = ("Array", "ffi.Array")
_MAP_KEYS = ("Map", "ffi.Map")
_TENSOR_KEYS = ("runtime.NDArray", "ffi.NDArray", "ffi.Tensor", "runtime.Tensor")
# DLPack type codes: int, uint, float, (handle), bfloat, complex, bool.
_DL_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 6: "bool"}


def decode_tvm_json(text: Any, node: Any) -> dict[str, list[Any]]:
    """The metadata tables of a ``tvm.ir.load_json`` string (see the module docstring);
    ``node`` locates errors."""
    if not isinstance(text, str):
        raise parse_error("tvm.ir.load_json takes the JSON text as one string", node)
    try:
        graph = json.loads(text)
    except json.JSONDecodeError as err:
        raise parse_error(f"the metadata JSON is malformed: {err.msg} at line {err.lineno}, "
                          f"column {err.colno} of the string", node) from None
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list) or \
            not isinstance(graph.get("root"), int):
        raise parse_error("the metadata JSON is not a TVM node graph (an object with 'root' "
                          "and 'nodes')", node)
    return _Graph(graph, node).tables()


class _Graph:
    def __init__(self, graph: dict, node: Any):
        self.nodes: list = graph["nodes"]
        self.root: int = graph["root"]
        self.b64: list = graph.get("b64ndarrays") or []
        self.where = node

    def error(self, text: str) -> Exception:
        return parse_error(f"metadata JSON: {text}", self.where)

    def node(self, index: Any) -> dict:
        try:
            i = int(index)
        except (TypeError, ValueError):
            raise self.error(f"{index!r} is not a node index") from None
        if not 0 <= i < len(self.nodes) or not isinstance(self.nodes[i], dict):
            raise self.error(f"node {i} does not exist (the graph has {len(self.nodes)} "
                             "nodes)")
        return self.nodes[i]

    def string(self, index: Any) -> str:
        n = self.node(index)
        if "repr_str" in n:
            return str(n["repr_str"])
        if "repr_b64" in n:
            return self._repr_bytes(n).decode("utf-8", errors="replace")
        raise self.error(f"node {index} ({n.get('type_key')!r}) is not a string")

    def tables(self) -> dict[str, list[Any]]:
        root = self.node(self.root)
        if root.get("type_key") not in _MAP_KEYS:
            raise self.error(f"the root is a {root.get('type_key')!r}, not a map from kinds "
                             "to lists")
        data = root.get("data") or []
        if "keys" in root:
            keys = root["keys"]
            if len(keys) != len(data):
                raise self.error("the root map has different numbers of keys and values")
            pairs = list(zip(keys, data))
        else:
            if len(data) % 2:
                raise self.error("the root map has an odd number of entries")
            pairs = [(self.string(data[i]), data[i + 1]) for i in range(0, len(data), 2)]
        out: dict[str, list[Any]] = {}
        for kind, index in pairs:
            items = self.node(index)
            if items.get("type_key") not in _ARRAY_KEYS:
                raise self.error(f"metadata[{kind!r}] is a {items.get('type_key')!r}, not "
                                 "a list")
            elements = items.get("data") or []
            if kind == "relax.expr.Constant":
                out[kind] = [self.constant(e) for e in elements]
            else:
                out[kind] = [MetadataRef(kind=str(kind), index=i)
                             for i in range(len(elements))]
        return out

    def constant(self, index: Any) -> Constant:
        n = self.node(index)
        if n.get("type_key") != "relax.expr.Constant":
            raise self.error(f"metadata['relax.expr.Constant'] holds a "
                             f"{n.get('type_key')!r} (node {index})")
        attrs = n.get("attrs") or {}
        if "data" not in attrs or attrs["data"] in (None, "null"):
            raise self.error(f"constant node {index} has no data")
        ref = attrs["data"]
        blob = None
        try:
            target = self.nodes[int(ref)]
        except (TypeError, ValueError, IndexError):
            target = None
        if isinstance(target, dict) and target.get("type_key") in _TENSOR_KEYS:
            blob = self._repr_bytes(target)
        else:
            try:
                blob = self._b64(self.b64[int(ref)])
            except (TypeError, ValueError, IndexError):
                raise self.error(f"constant node {index} names tensor {ref!r}, which is "
                                 f"neither a tensor node nor one of the "
                                 f"{len(self.b64)} b64ndarrays") from None
        array = self.tensor(blob, f"the tensor of constant node {index}")
        sinfo = TensorStructInfo(shape=shape_of(list(array.shape)), dtype=str(array.dtype)
                                 if array.dtype != np.bool_ else "bool")
        return Constant(data=array, struct_info=sinfo)

    def _b64(self, text: Any) -> bytes:
        if not isinstance(text, str):
            raise self.error("a tensor's data is not a base64 string")
        try:
            return base64.b64decode(text.encode("ascii"), validate=False)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            raise self.error("a tensor's data is not valid base64") from None

    def _repr_bytes(self, n: dict) -> bytes:
        if "repr_b64" in n:
            raw = self._b64(n["repr_b64"])
            # Bytes written as a length-prefixed string.
            if len(raw) >= 8:
                (size,) = struct.unpack_from("<Q", raw)
                if size == len(raw) - 8:
                    return raw[8:]
            return raw
        if "repr_str" in n:
            return str(n["repr_str"]).encode("latin-1", errors="replace")
        raise self.error(f"a {n.get('type_key')!r} node has no bytes")

    def tensor(self, blob: bytes, what: str) -> np.ndarray:
        if len(blob) >= 16 and struct.unpack_from("<Q", blob, 8)[0] == TENSOR_MAGIC and \
                struct.unpack_from("<Q", blob)[0] == len(blob) - 8:
            blob = blob[8:]
        head = "<QQiiiBBH"
        if len(blob) < struct.calcsize(head):
            raise self.error(f"{what} is truncated ({len(blob)} bytes)")
        magic, _, _, _, ndim, code, bits, lanes = struct.unpack_from(head, blob)
        if magic != TENSOR_MAGIC:
            raise self.error(f"{what} is not a TVM tensor (magic {magic:#x})")
        if lanes != 1 or code not in _DL_CODES:
            raise self.error(f"{what} has an unsupported dtype (code {code}, {bits} bits, "
                             f"{lanes} lanes)")
        name = _DL_CODES[code]
        if name == "bool" or (name == "uint" and bits == 1):
            name, bits = "bool", 8
        dtype = "bool" if name == "bool" else f"{name}{bits}"
        try:
            np_dtype = dt.to_numpy(dt.check(dtype))
        except Exception:  # noqa: BLE001 - an irc dtype error, reworded here
            raise self.error(f"{what} has dtype {dtype}, which irc does not have") from None
        pos = struct.calcsize(head)
        if not 0 <= ndim <= 32 or len(blob) < pos + 8 * ndim + 8:
            raise self.error(f"{what} is truncated or has a bad rank ({ndim})")
        shape = struct.unpack_from(f"<{ndim}q", blob, pos)
        pos += 8 * ndim
        (nbytes,) = struct.unpack_from("<q", blob, pos)
        pos += 8
        count = 1
        for s in shape:
            if s < 0:
                raise self.error(f"{what} has a negative dimension {s}")
            count *= s
        if nbytes != count * np_dtype.itemsize or len(blob) < pos + nbytes:
            raise self.error(f"{what} of shape {list(shape)} and dtype {dtype} needs "
                             f"{count * np_dtype.itemsize} bytes; the data has "
                             f"{min(nbytes, len(blob) - pos)}")
        return np.frombuffer(blob, dtype=np_dtype, count=count, offset=pos).reshape(
            shape).copy()


def encode_tvm_tensor(array: np.ndarray) -> bytes:
    """An array in TVM's binary tensor format (for tests and tools that write TVM's
    metadata); the inverse of what :func:`decode_tvm_json` reads."""
    kind = array.dtype.kind
    code = {"i": 0, "u": 1, "f": 2, "b": 6}.get(kind)
    if code is None:
        raise ValueError(f"no TVM type code for {array.dtype}")
    bits = 8 if kind == "b" else array.dtype.itemsize * 8
    data = np.asarray(array, order="C").tobytes()
    return struct.pack("<QQiiiBBH", TENSOR_MAGIC, 0, 1, 0, array.ndim, code, bits, 1) + \
        struct.pack(f"<{array.ndim}q", *array.shape) + struct.pack("<q", len(data)) + data


__all__ = ["TENSOR_MAGIC", "decode_tvm_json", "encode_tvm_tensor"]
