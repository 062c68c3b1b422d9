"""Structural equality and hashing of IR (both levels).

Two IR values are structurally equal when they have the same node types and field values,
with variables and buffers compared by binding position: the first time a variable of
the left side meets one of the right side they are paired, and every later occurrence
must meet its partner (names do not matter). Pairs made inside a function last until
the function ends (variables are local to the function that binds them).
``structural_hash`` agrees with ``structural_equal`` and is stable across processes (it
keys tuning records).
"""

from __future__ import annotations

import difflib
import hashlib
import math
import struct
from typing import Any

import numpy as np

from .diagnostics import IRCError
from .dtype import FLOAT_FORMATS
from .expr import GlobalVar
from .node import Node, node_fields


class _Mismatch(Exception):
    def __init__(self, path: str, lhs: Any, rhs: Any, reason: str):
        super().__init__(path)
        self.path = path
        self.lhs = lhs
        self.rhs = rhs
        self.reason = reason


class _Equal:
    def __init__(self, record_path: bool):
        self.lmap: dict[int, Any] = {}
        self.rmap: dict[int, Any] = {}
        self.keep: list[Any] = []  # keep mapped objects alive so ids stay unique
        self.record_path = record_path

    def fail(self, path: list[str] | None, a: Any, b: Any, reason: str) -> bool:
        if self.record_path:
            raise _Mismatch("".join(path or ["<root>"]), a, b, reason)
        return False

    def eq(self, a: Any, b: Any, path: list[str] | None) -> bool:
        if isinstance(a, Node):
            if type(a) is not type(b):
                return self.fail(path, a, b, f"node types differ: {type(a).__name__} vs "
                                             f"{type(b).__name__}")
            cls = type(a)
            if cls._sequal_binding:
                mapped = self.lmap.get(id(a))
                if mapped is not None:
                    return mapped is b or self.fail(path, a, b, "variables bound at different "
                                                                "places")
                if id(b) in self.rmap:
                    return self.fail(path, a, b, "variables bound at different places")
                # Map first so self-references (a buffer's data var) stay consistent.
                self.lmap[id(a)] = b
                self.rmap[id(b)] = a
                self.keep.append((a, b))
                return self.fields_eq(a, b, path)
            if a is b:
                return True
            if cls._sequal_scope:
                lmap, rmap = dict(self.lmap), dict(self.rmap)
                try:
                    return self.fields_eq(a, b, path)
                finally:
                    self.lmap, self.rmap = lmap, rmap
            return self.fields_eq(a, b, path)
        if isinstance(a, (tuple, list)):
            if not isinstance(b, (tuple, list)) or len(a) != len(b):
                return self.fail(path, a, b, f"lengths differ: {len(a)} vs "
                                             f"{len(b) if isinstance(b, (tuple, list)) else b!r}")
            for i, (x, y) in enumerate(zip(a, b)):
                if not self.eq(x, y, path + [f"[{i}]"] if path is not None else None):
                    return False
            return True
        if isinstance(a, dict):
            if not isinstance(b, dict) or len(a) != len(b):
                return self.fail(path, a, b, "dictionaries differ in size")
            if all(isinstance(k, str) for k in a):
                if set(a) != set(b):
                    return self.fail(path, a, b, f"keys differ: {sorted(a)} vs {sorted(b)}")
                for k in a:
                    sub = path + [f"[{k!r}]"] if path is not None else None
                    if not self.eq(a[k], b[k], sub):
                        return False
                return True
            for i, ((ka, va), (kb, vb)) in enumerate(zip(_ordered(a), _ordered(b))):
                sub = path + [f".items()[{i}]"] if path is not None else None
                if not self.eq(ka, kb, sub) or not self.eq(va, vb, sub):
                    return False
            return True
        if _is_ndarray(a):
            if not _is_ndarray(b) or a.dtype != b.dtype or a.shape != b.shape:
                return self.fail(path, a, b, "constant arrays differ in dtype or shape")
            if not np.array_equal(a, b, equal_nan=_has_nan(a.dtype)):
                return self.fail(path, a, b, "constant arrays differ in value")
            return True
        if type(a) is not type(b):
            return self.fail(path, a, b, f"value types differ: {type(a).__name__} vs "
                                         f"{type(b).__name__}")
        if isinstance(a, float):
            if a == b or (math.isnan(a) and math.isnan(b)):
                return True
            return self.fail(path, a, b, f"{a!r} != {b!r}")
        if a == b:
            return True
        return self.fail(path, a, b, f"{a!r} != {b!r}")

    def fields_eq(self, a: Node, b: Node, path: list[str] | None) -> bool:
        ignore = type(a)._sequal_ignore
        for f in node_fields(type(a)):
            if f in ignore:
                continue
            sub = path + [f".{f}"] if path is not None else None
            if not self.eq(getattr(a, f), getattr(b, f), sub):
                return False
        return True


def _ordered(d: dict) -> list:
    """Items in a canonical order: by key for names, by name for module functions
    (GlobalVar keys), else insertion order (buffer maps follow parameter order)."""
    if all(isinstance(k, str) for k in d):
        return sorted(d.items())
    if all(isinstance(k, GlobalVar) for k in d):
        return sorted(d.items(), key=lambda kv: kv[0].name_hint)
    return list(d.items())


def _has_nan(dtype: np.dtype) -> bool:
    """Whether arrays of ``dtype`` can hold NaN (numpy's floats and ml_dtypes' narrow
    floats and bfloat16, whose kind is "V"), so equal constants may hold NaNs."""
    return dtype.kind in "fc" or dtype.name in FLOAT_FORMATS or dtype.name == "bfloat16"


def _is_ndarray(x: Any) -> bool:
    return type(x).__name__ == "ndarray" and type(x).__module__ == "numpy"


def structural_equal(lhs: Any, rhs: Any) -> bool:
    """True when ``lhs`` and ``rhs`` are the same IR up to variable names."""
    return _Equal(record_path=False).eq(lhs, rhs, None)


def assert_structural_equal(lhs: Any, rhs: Any) -> None:
    """Raise :class:`StructuralMismatchError` naming the first differing path and showing
    both sides (printed) when ``lhs`` and ``rhs`` are not structurally equal."""
    try:
        _Equal(record_path=True).eq(lhs, rhs, [])
    except _Mismatch as m:
        raise StructuralMismatchError(m.path, m.lhs, m.rhs, m.reason, lhs, rhs) from None


class StructuralMismatchError(IRCError, AssertionError):
    """Raised by :func:`assert_structural_equal`."""

    def __init__(self, path: str, lhs_part: Any, rhs_part: Any, reason: str,
                 lhs: Any, rhs: Any):
        self.path = path
        msg = [f"IR differs at {path}: {reason}",
               f"  lhs: {_short(lhs_part)}",
               f"  rhs: {_short(rhs_part)}"]
        if isinstance(lhs, Node) and isinstance(rhs, Node):
            msg.append(_diff(lhs, rhs))
        super().__init__("\n".join(msg))


def _short(x: Any) -> str:
    try:
        text = repr(x)
    except Exception:  # noqa: BLE001 - reporting must not fail
        text = object.__repr__(x)
    return text if len(text) < 400 else text[:400] + " ..."


def _diff(lhs: Node, rhs: Node) -> str:
    try:
        a = lhs.script().splitlines()
        b = rhs.script().splitlines()
    except Exception:  # noqa: BLE001 - the printer may not handle every fragment
        return ""
    diff = list(difflib.unified_diff(a, b, "lhs", "rhs", lineterm="", n=2))
    return "\n".join(diff[:200])


# ---------------------------------------------------------------------------------
# Hashing
# ---------------------------------------------------------------------------------


class _Hasher:
    """Hashes the stream of tokens, each followed by a NUL byte, and raw bytes. Tokens
    are collected and hashed in one update (the digest is that of the same stream: the
    workload keys of tuning records must not change)."""

    def __init__(self) -> None:
        self._h = hashlib.blake2b(digest_size=16)
        self._tokens: list[str] = []
        self.tok = self._tokens.append
        self.index: dict[int, int] = {}
        self.keep: list[Any] = []

    def raw(self, data: bytes) -> None:
        self._flush()
        self._h.update(data)

    def _flush(self) -> None:
        if self._tokens:
            self._tokens.append("")  # the last token's NUL
            self._h.update("\x00".join(self._tokens).encode())
            self._tokens.clear()

    def digest(self) -> bytes:
        self._flush()
        return self._h.digest()

    def hexdigest(self) -> str:
        self._flush()
        return self._h.hexdigest()

    def visit(self, x: Any) -> None:
        tok = self.tok
        if isinstance(x, Node):
            cls = type(x)
            info = _HASH_INFO.get(cls)
            if info is None:
                info = _HASH_INFO[cls] = _hash_info(cls)
            name, binding, scope, fields = info
            if binding:
                idx = self.index.get(id(x))
                if idx is not None:
                    tok(f"@{idx}")
                    return
                self.index[id(x)] = len(self.index)
                self.keep.append(x)
                tok("def:" + name)
            else:
                tok(name)
            saved = dict(self.index) if scope else None
            visit = self.visit
            for f in fields:
                visit(getattr(x, f))
            if saved is not None:
                self.index = saved  # as equality forgets a function's pairs at its end
            tok(")")
        elif isinstance(x, (tuple, list)):
            tok(f"[{len(x)}")
            visit = self.visit
            for v in x:
                visit(v)
        elif x is None or isinstance(x, (bool, int, str)):
            tok(f"{type(x).__name__}:{x}")
        elif isinstance(x, dict):
            tok(f"{{{len(x)}")
            items = _ordered(x)
            for k, v in items:
                self.visit(k)
                self.visit(v)
        elif _is_ndarray(x):
            tok(f"nd:{x.dtype}:{x.shape}")
            self.raw(x.tobytes())
        elif isinstance(x, float):
            tok("f")
            self.raw(struct.pack("<d", x))
        else:
            tok(f"{type(x).__name__}:{x!r}")


_HASH_INFO: dict[type, tuple[str, bool, bool, tuple[str, ...]]] = {}


def _hash_info(cls: type) -> tuple[str, bool, bool, tuple[str, ...]]:
    """What the hasher needs of a node class: its name, whether it binds (hashed by
    definition position), whether it opens a scope, and the fields it hashes."""
    ignore = cls._sequal_ignore
    return (cls.__name__, bool(cls._sequal_binding), bool(cls._sequal_scope),
            tuple(f for f in node_fields(cls) if f not in ignore))


def structural_hash(x: Any) -> int:
    """A 64-bit hash consistent with :func:`structural_equal`, stable across processes."""
    h = _Hasher()
    h.visit(x)
    return int.from_bytes(h.digest()[:8], "little")


def structural_hash_hex(x: Any) -> str:
    """A 128-bit hex digest consistent with :func:`structural_equal` (workload keys)."""
    h = _Hasher()
    h.visit(x)
    return h.hexdigest()
