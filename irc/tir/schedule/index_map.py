"""Index maps: ``lambda i, j: (i // 4, j, i % 4)`` as loop-IR expressions and as text.

Schedules take an index map as a Python callable over index variables (or its text);
traces store the text. Text is parsed with :mod:`ast` (not evaluated): only parameter
names, integer constants, ``+``, ``-``, ``*``, ``//``, ``%`` and unary minus are
allowed, which is also what the printer produces.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any, Callable

from ...core.diagnostics import ScheduleError
from ..expr import (
    Add,
    FloorDiv,
    FloorMod,
    IntImm,
    Mul,
    PrimExpr,
    Sub,
    Var,
    const,
    convert,
    floordiv,
    floormod,
)
from ..functor.substitute import substitute


class IndexMap:
    """A map from ``params`` (index variables) to ``outputs`` (new indices)."""

    __slots__ = ("params", "outputs")

    def __init__(self, params: list[Var], outputs: list[PrimExpr]):
        self.params = params
        self.outputs = outputs

    @staticmethod
    def from_callable(fn: Callable, ndim: int | None = None,
                      dtype: str = "int32") -> IndexMap:
        """Call ``fn`` on fresh variables named after its parameters."""
        try:
            names = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            raise ScheduleError("the index map must be a Python function (lambda)") from None
        if ndim is not None and len(names) != ndim:
            raise ScheduleError(f"the index map takes {len(names)} indices but the buffer "
                                f"has {ndim} dimensions")
        params = [Var(name=n, dtype=dtype) for n in names]
        result = fn(*params)
        if not isinstance(result, (list, tuple)):
            result = [result]
        outputs = []
        for x in result:
            try:
                outputs.append(convert(x, dtype))
            except Exception:  # noqa: BLE001 - report as a schedule error
                raise ScheduleError(f"the index map returned {x!r}, not an index "
                                    "expression") from None
        return IndexMap(params, outputs)

    @staticmethod
    def parse(text: str, dtype: str = "int32") -> IndexMap:
        """The index map of ``lambda ...: (...)`` text."""
        try:
            tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as err:
            raise ScheduleError(f"index map text {text!r} is not valid Python: {err.msg}"
                                ) from None
        if not isinstance(tree, ast.Lambda):
            raise ScheduleError(f"index map text {text!r} must be a lambda")
        names = [a.arg for a in tree.args.args]
        params = [Var(name=n, dtype=dtype) for n in names]
        env = dict(zip(names, params))
        body = tree.body
        items = body.elts if isinstance(body, (ast.Tuple, ast.List)) else [body]
        return IndexMap(params, [_convert(x, env, text, dtype) for x in items])

    @staticmethod
    def of(value: Any, ndim: int | None = None, dtype: str = "int32") -> IndexMap:
        """An IndexMap from a callable, text or IndexMap."""
        if isinstance(value, IndexMap):
            return value
        if isinstance(value, str):
            m = IndexMap.parse(value, dtype)
            if ndim is not None and len(m.params) != ndim:
                raise ScheduleError(f"the index map takes {len(m.params)} indices but the "
                                    f"buffer has {ndim} dimensions")
            return m
        if callable(value):
            return IndexMap.from_callable(value, ndim, dtype)
        raise ScheduleError(f"expected an index map (a lambda or its text), got {value!r}")

    def text(self) -> str:
        """``lambda i, j: (...)`` (a trailing comma keeps one output a tuple)."""
        outs = ", ".join(to_python(e) for e in self.outputs)
        if len(self.outputs) == 1:
            outs += ","
        return f"lambda {', '.join(p.name for p in self.params)}: ({outs})"

    def apply(self, indices, simplify=None) -> list[PrimExpr]:
        """The new indices for ``indices`` (simplified when ``simplify`` is given)."""
        vmap = {id(p): i for p, i in zip(self.params, indices)}
        out = [substitute(e, lambda v: vmap.get(id(v))) for e in self.outputs]
        return [simplify(e) for e in out] if simplify else out


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.FloorDiv: floordiv, ast.Mod: floormod}


def _convert(node: ast.AST, env: dict[str, Var], text: str, dtype: str) -> PrimExpr:
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, int) \
            and not isinstance(node.value, bool):
        return const(node.value, dtype)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_convert(node.left, env, text, dtype),
                                      _convert(node.right, env, text, dtype))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _convert(node.operand, env, text, dtype)
        return const(0, dtype) - inner
    raise ScheduleError(f"index map text {text!r}: {ast.unparse(node)!r} is not allowed; "
                        "use the index names, integers, +, -, *, // and %")


_PREC = {Add: 1, Sub: 1, Mul: 2, FloorDiv: 2, FloorMod: 2}
_SYM = {Add: "+", Sub: "-", Mul: "*", FloorDiv: "//", FloorMod: "%"}


def to_python(e: PrimExpr, parent: int = 0) -> str:
    """``e`` as Python source using only the operators the parser accepts."""
    t = type(e)
    if t is Var:
        return e.name
    if t is IntImm:
        return str(e.value) if e.value >= 0 or parent == 0 else f"({e.value})"
    prec = _PREC.get(t)
    if prec is None:
        raise ScheduleError(f"the index map uses {t.__name__} ({e}); only +, -, *, // and % "
                            "are supported")
    left = to_python(e.a, prec)
    right = to_python(e.b, prec + 1)
    text = f"{left} {_SYM[t]} {right}"
    return f"({text})" if prec < parent else text
