"""FuseOpsByPattern: turn the subgraphs that match dispatch patterns into composite
functions (library dispatch, ``irc.dispatch``).

Algorithm: for each dataflow block of each graph function (not already a composite or
codegen function), the patterns are tried in the order given (earlier patterns win);
each match (:func:`irc.dispatch.pattern.find_matches`: non-overlapping, and an
intermediate value used outside the match keeps its subgraph from matching) whose table
entry's check function accepts it becomes a private graph function with attributes
``Composite`` (the pattern's name) and ``Primitive``; with ``annotate_codegen`` also
``Codegen`` (the backend: the name's part before the first dot, ``blas`` for
``blas.matmul_transposed_bias_relu``) and ``global_symbol`` (the name
:class:`RunCodegen` gives the library call). The function's parameters are the match's
inputs (each once, in order of first use); with ``bind_constants`` (the default)
constants stay inside the function, else they become parameters too. The matched
bindings are replaced by one call of the function, where the match's root was bound.

Functions are named ``fused_`` + the matched operators (``fused_permute_dims_matmul_add_
nn_relu``), made unique in the module.

Preconditions: graph functions in A-normal form with operator calls (before
legalization). Postconditions: the program computes the same values; every created
function's body is one dataflow block of the matched bindings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..core.module import IRModule
from ..core.transform import Pass, PassContext
from ..dispatch.pattern import PatternMatch, external_uses, find_matches
from ..dispatch.table import PatternCheckContext, PatternEntry, as_entry
from ..ir.expr import (
    Binding,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    GlobalVar,
    Op,
    SeqExpr,
    Var,
    VarBinding,
)
from ..ir.struct_info import FuncStructInfo
from ._graph_utils import NameSupply, map_dataflow_blocks, substitute_vars

_MAX_NAME = 64


def _fused_name(bindings: Sequence[Binding]) -> str:
    name = "fused"
    for b in bindings:
        v = b.value
        if isinstance(v, Call) and isinstance(v.op, Op):
            part = v.op.name.replace(".", "_")
            if len(name) + 1 + len(part) > _MAX_NAME:
                break
            name += "_" + part
    return name


class _Fuser:
    def __init__(self, mod: IRModule, entries: list[PatternEntry], bind_constants: bool,
                 annotate_codegen: bool):
        self.mod = mod
        self.entries = entries
        self.bind_constants = bind_constants
        self.annotate_codegen = annotate_codegen
        self.names = NameSupply(mod.names())
        self.created: list[tuple[GlobalVar, Function]] = []

    def run(self, func: Function) -> Function:
        return map_dataflow_blocks(func, lambda block: self._block(func, block))

    def _block(self, func: Function, block: DataflowBlock) -> DataflowBlock:
        used_outside = external_uses(func, block)
        taken: set[int] = set()  # ids of the bindings already in a match
        replaced: dict[int, list[Binding]] = {}  # root binding id -> its replacement
        dropped: set[int] = set()
        for entry in self.entries:
            def accept(m: PatternMatch, entry: PatternEntry = entry) -> bool:
                return entry.check is None or bool(entry.check(PatternCheckContext(m, entry)))
            for m in find_matches(entry.pattern, block, used_outside, accept=accept,
                                  exclude=frozenset(taken)):
                ids = {id(b) for b in m.bindings}
                taken |= ids
                root = next(b for b in m.bindings if b.var is m.root)
                replaced[id(root)] = [self._make_composite(entry, m)]
                dropped |= ids - {id(root)}
        if not replaced:
            return block
        out: list[Binding] = []
        for b in block.bindings:
            if id(b) in replaced:
                out.extend(replaced[id(b)])
            elif id(b) not in dropped:
                out.append(b)
        return block.replace(bindings=tuple(out))

    def _make_composite(self, entry: PatternEntry, m: PatternMatch) -> Binding:
        inputs = [e for e in m.inputs
                  if not (self.bind_constants and isinstance(e, Constant))]
        mapping: dict[int, Expr] = {}
        params = []
        for e in inputs:
            name = e.name_hint if isinstance(e, Var) else "const"
            p = Var(name_hint=name, struct_info=e.struct_info)
            params.append(p)
            mapping[id(e)] = p
        new_bindings: list[Binding] = []
        for b in m.bindings:
            cls = Var if b.var is m.root else DataflowVar
            nv = cls(name_hint=b.var.name_hint, struct_info=b.var.struct_info)
            new_bindings.append(VarBinding(var=nv, value=substitute_vars(b.value, mapping)))
            mapping[id(b.var)] = nv
        result = mapping[id(m.root)]
        ret = m.root.struct_info
        name = self.names.fresh(_fused_name(m.bindings))
        attrs: dict[str, Any] = {"Composite": entry.name, "Primitive": True}
        if self.annotate_codegen:
            attrs["Codegen"] = entry.backend
            attrs["global_symbol"] = f"{name}_{entry.backend}"
        body = SeqExpr(blocks=(DataflowBlock(bindings=tuple(new_bindings)),), body=result,
                       struct_info=ret)
        fsinfo = FuncStructInfo(params=tuple(p.struct_info for p in params), ret=ret,
                                purity=True)
        fn = Function(params=tuple(params), body=body, ret_struct_info=ret, is_pure=True,
                      attrs=attrs, struct_info=fsinfo)
        gv = GlobalVar(name_hint=name)
        self.created.append((gv, fn))
        return VarBinding(var=m.root, value=Call(op=gv, args=tuple(inputs), struct_info=ret))


@dataclass(frozen=True, init=False)
class FuseOpsByPattern(Pass):
    """Wrap the subgraphs matching ``patterns`` (table entries, pattern names, or
    ``(name, pattern[, annotations[, check]])`` tuples; earlier ones win) into composite
    functions; see the module docstring."""

    patterns: tuple[PatternEntry, ...] = field(default=())
    bind_constants: bool = True
    annotate_codegen: bool = False

    def __init__(self, patterns: Sequence[Any], bind_constants: bool = True,
                 annotate_codegen: bool = False):
        if isinstance(patterns, (str, PatternEntry)):
            patterns = [patterns]
        entries = tuple(as_entry(p) for p in patterns)
        object.__setattr__(self, "patterns", entries)
        object.__setattr__(self, "bind_constants", bool(bind_constants))
        object.__setattr__(self, "annotate_codegen", bool(annotate_codegen))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if not self.patterns:
            return mod
        fuser = _Fuser(mod, list(self.patterns), self.bind_constants, self.annotate_codegen)
        out = mod.map_functions(
            fuser.run, Function,
            where=lambda f: "Composite" not in f.attrs and "Codegen" not in f.attrs)
        if not fuser.created:
            return mod
        funcs = dict(out.functions)
        for gv, f in fuser.created:
            funcs[gv] = f
        return IRModule(functions=funcs, attrs=out.attrs)

