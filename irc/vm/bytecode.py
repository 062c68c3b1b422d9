"""The VM's bytecode: instructions of a register machine, serializable to JSON.

A VM function has ``num_regs`` registers; parameters arrive in registers ``0..n-1``.
Instructions (each a tuple whose first item is the opcode):

=========================================  ===================================================
``("const", dst, index)``                  load constant ``index`` of the executable
``("alloc", dst, alloc_index)``            a tensor for a kernel output (see ``AllocSpec``)
``("kernel", name, args)``                 call compiled kernel ``name`` (destination passing:
                                           outputs are among ``args``)
``("packed", name, args, dst)``            call a registered runtime function (``dst`` may be
                                           -1 when the result is unused)
``("call", func, args, dst)``              call VM function ``func``
``("tuple", dst, regs)``                   make a tuple
``("getitem", dst, src, index)``           tuple item
``("shape", dst, expr_indices)``           a shape tuple from symbolic expressions
``("prim", dst, expr_index)``              an int from a symbolic expression
``("match", src, check_index, label)``     check a value against a struct info and bind its
                                           symbolic dimensions (``label`` names it in errors)
``("if", cond, else_pc)``                  jump to ``else_pc`` when ``cond`` is false
``("goto", pc)``                           jump
``("move", dst, src)``                     copy a register
``("ret", src)``                           return
=========================================  ===================================================

Symbolic shape expressions are stored once per function (``exprs``) in a small JSON form
(``int``, ``["var", slot]``, ``[op, a, b]``) and evaluated over the function's *shape heap*,
one slot per symbolic variable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

SymExpr = Union[int, list]

BINARY_OPS = ("add", "sub", "mul", "floordiv", "floormod", "min", "max")


@dataclass
class AllocSpec:
    """A kernel output allocation: ``shape`` (ints or expression indices into the
    function's ``exprs`` when symbolic), ``dtype``, and ``storage``: the index of the
    statically planned storage block it lives in, or -1 for a fresh allocation per call
    (symbolic shapes, and tensors that escape the function)."""

    shape: list[Any]
    dtype: str
    storage: int = -1
    static: bool = True

    def to_json(self) -> dict:
        return {"shape": self.shape, "dtype": self.dtype, "storage": self.storage,
                "static": self.static}

    @staticmethod
    def from_json(d: dict) -> AllocSpec:
        return AllocSpec(shape=list(d["shape"]), dtype=d["dtype"], storage=d["storage"],
                         static=d["static"])


@dataclass
class ValueCheck:
    """What a value must be: ``kind`` tensor/tuple/shape/prim/object, with ``dtype``,
    ``ndim``, ``dims`` (per dimension: an int, ``["bind", slot]`` the first time a
    symbolic variable is seen, or ``["expr", index]`` to compare with an expression),
    ``fields`` for tuples."""

    kind: str
    dtype: str = ""
    ndim: int = -1
    dims: list[Any] | None = None
    fields: list[ValueCheck] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"kind": self.kind, "dtype": self.dtype, "ndim": self.ndim, "dims": self.dims,
                "fields": [f.to_json() for f in self.fields]}

    @staticmethod
    def from_json(d: dict) -> ValueCheck:
        return ValueCheck(kind=d["kind"], dtype=d["dtype"], ndim=d["ndim"], dims=d["dims"],
                          fields=[ValueCheck.from_json(f) for f in d["fields"]])

    def describe(self, slot_names: list[str], exprs: list[SymExpr]) -> str:
        """The check as struct-info text, e.g. ``R.Tensor((n, 784), "float32")``."""
        if self.kind == "tensor":
            if self.dims is None:
                inner = f"ndim={self.ndim}" if self.ndim >= 0 else ""
                sep = ", " if inner and self.dtype else ""
                return f"R.Tensor({inner}{sep}{self.dtype!r})" if self.dtype else \
                    f"R.Tensor({inner})"
            dims = [_describe_dim(d, slot_names, exprs) for d in self.dims]
            text = ", ".join(dims) + ("," if len(dims) == 1 else "")
            return f"R.Tensor(({text}), {self.dtype!r})" if self.dtype else \
                f"R.Tensor(({text}))"
        if self.kind == "tuple":
            return "R.Tuple(" + ", ".join(f.describe(slot_names, exprs)
                                           for f in self.fields) + ")"
        if self.kind == "shape":
            if self.dims is not None:
                return "R.Shape([" + ", ".join(_describe_dim(d, slot_names, exprs)
                                              for d in self.dims) + "])"
            return f"R.Shape(ndim={self.ndim})"
        if self.kind == "prim":
            return f"R.Prim({self.dtype!r})"
        return "R.Object"


def _describe_dim(d: Any, slot_names: list[str], exprs: list[SymExpr]) -> str:
    if isinstance(d, int):
        return str(d)
    if d[0] == "bind":
        return slot_names[d[1]]
    return format_expr(exprs[d[1]], slot_names)


def format_expr(e: SymExpr, slot_names: list[str]) -> str:
    """A shape expression of the bytecode as text (slots by name)."""
    if isinstance(e, int):
        return str(e)
    if e[0] == "var":
        return slot_names[e[1]]
    sym = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%"}.get(e[0])
    a, b = format_expr(e[1], slot_names), format_expr(e[2], slot_names)
    return f"({a} {sym} {b})" if sym else f"{e[0]}({a}, {b})"


def expr_to_python(e: SymExpr) -> str:
    """Python source of ``e`` over a list ``h`` (the shape heap)."""
    if isinstance(e, int):
        return repr(e)
    if e[0] == "var":
        return f"h[{int(e[1])}]"
    if e[0] not in BINARY_OPS:
        raise ValueError(f"unknown shape operator {e[0]!r}")
    a, b = expr_to_python(e[1]), expr_to_python(e[2])
    if e[0] in ("min", "max"):
        return f"{e[0]}({a}, {b})"
    op = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%"}[e[0]]
    return f"({a} {op} {b})"


@dataclass
class VMFunction:
    """One compiled graph function."""

    name: str
    params: list[str]
    num_regs: int
    code: list[tuple]
    param_checks: list[ValueCheck]
    checks: list[ValueCheck]
    allocs: list[AllocSpec]
    exprs: list[SymExpr]
    slot_names: list[str]
    storage_sizes: list[int]
    num_input: int | None = None
    intermediate_bytes: int = 0
    # Integer parameter -> the extent its values index (passes.AnnotateIndexExtents):
    # random inputs of it are drawn in [0, extent).
    index_extents: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "name": self.name, "params": self.params, "num_regs": self.num_regs,
            "code": [list(i) for i in self.code],
            "param_checks": [c.to_json() for c in self.param_checks],
            "checks": [c.to_json() for c in self.checks],
            "allocs": [a.to_json() for a in self.allocs], "exprs": self.exprs,
            "slot_names": self.slot_names, "storage_sizes": self.storage_sizes,
            "num_input": self.num_input, "intermediate_bytes": self.intermediate_bytes,
            "index_extents": self.index_extents,
        }

    @staticmethod
    def from_json(d: dict) -> VMFunction:
        return VMFunction(
            name=d["name"], params=list(d["params"]), num_regs=d["num_regs"],
            code=[tuple(i) for i in d["code"]],
            param_checks=[ValueCheck.from_json(c) for c in d["param_checks"]],
            checks=[ValueCheck.from_json(c) for c in d["checks"]],
            allocs=[AllocSpec.from_json(a) for a in d["allocs"]], exprs=d["exprs"],
            slot_names=list(d["slot_names"]), storage_sizes=list(d["storage_sizes"]),
            num_input=d.get("num_input"), intermediate_bytes=d.get("intermediate_bytes", 0),
            index_extents={str(k): int(v) for k, v in d.get("index_extents", {}).items()},
        )

    def as_text(self) -> str:
        """Human-readable bytecode listing."""
        lines = [f"vm function {self.name}({', '.join(self.params)}) "
                 f"regs={self.num_regs} storage={self.storage_sizes}"]
        for pc, ins in enumerate(self.code):
            lines.append(f"  {pc:4d}: {ins[0]:<8} " + " ".join(str(x) for x in ins[1:]))
        return "\n".join(lines)
