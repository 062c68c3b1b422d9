"""FuseOps: group the ``call_tir`` bindings of dataflow blocks into fused functions.

Algorithm: each dataflow block of each graph function becomes a graph of its bindings
(see ``_fusion_graph.py``): a ``call_tir`` binding has the ``op_pattern`` of its loop
function (``AnnotateTIROpPattern``), a tuple literal the TUPLE pattern, a tuple
projection INJECTIVE, anything else (other calls, casts, ``call_tir`` with extra integer
arguments) OPAQUE. The classic post-dominator partition groups them: injective chains,
an elementwise/broadcast node with its injective or reduction consumer, and a
convolution or matmul (out-elementwise-fusable) with its elementwise epilogue, up to
``max_fuse_depth`` nodes. Every group of two or more nodes becomes a private graph
function with attribute ``Primitive`` named ``fused_`` + its loop functions' names
(``fused_conv2d_add_relu``) whose parameters are the group's inputs (variables and
constants, each once) and whose result is the group's output (a tuple when several of its
values are used outside it). The group's bindings are replaced by one call of that
function, placed where the group's last binding was (bindings are reordered
topologically when a group's inputs are computed after its first member).

Preconditions: the module is normalized (A-normal form) and legalized; loop functions
carry ``op_pattern`` (those without it are not fused).
Postconditions: the program computes the same values; each created function's body is a
single dataflow block of ``call_tir`` bindings (plus tuple literals and projections);
``FuseTIR`` turns them into single loop functions. Groups whose symbolic dimensions are
not all defined by their inputs' shapes are left unfused.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from ..core.diagnostics import IRCError
from ..core.functor import Visitor
from ..core.module import IRModule
from ..core.transform import Pass, PassContext
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
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.op import BROADCAST, ELEMWISE, INJECTIVE, OPAQUE
from ..ir.op import TUPLE as TUPLE_PATTERN
from ..ir.struct_info import FuncStructInfo, TensorStructInfo, TupleStructInfo
from ..ir.struct_info_analysis import get_defining_shape_vars, get_shape_vars, prove_equal
from ..tir.stmt import PrimFunc
from ._fusion_graph import GraphNode, GraphPartitioner
from ._graph_utils import NameSupply, collect_names, map_dataflow_blocks, substitute_vars

_MAX_NAME = 64


class _Refs(Visitor):
    """Graph variables and constants an expression reads, in order of first use."""

    def __init__(self) -> None:
        self.items: list[Expr] = []
        self._seen: set[int] = set()

    def _add(self, e: Expr) -> None:
        if id(e) not in self._seen:
            self._seen.add(id(e))
            self.items.append(e)

    def visit_Var(self, v: Var) -> None:
        self._add(v)

    visit_DataflowVar = visit_Var

    def visit_Constant(self, c: Constant) -> None:
        self._add(c)

    def visit_Function(self, f: Function) -> None:
        return None

    def visit_StructInfo(self, s: Any) -> None:
        return None


def _refs(e: Expr) -> list[Expr]:
    r = _Refs()
    r.visit(e)
    return r.items


def binding_pattern(b: Binding, mod: IRModule) -> int:
    """The fusion pattern of one binding (see the module docstring)."""
    if not isinstance(b, VarBinding):
        return OPAQUE
    value = b.value
    if isinstance(value, Tuple):
        return TUPLE_PATTERN
    if isinstance(value, TupleGetItem):
        return INJECTIVE
    if isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == "call_tir":
        if len(value.args) > 2:
            return OPAQUE
        gv = value.args[0]
        callee = mod.get(gv.name_hint) if isinstance(gv, GlobalVar) else None
        if not isinstance(callee, PrimFunc):
            return OPAQUE
        pattern = callee.attrs.get("op_pattern")
        return int(pattern) if isinstance(pattern, int) else OPAQUE
    return OPAQUE


def _edge_pattern(consumer: int, producer_sinfo: Any, consumer_sinfo: Any) -> int:
    # A broadcast whose operand already has the output's shape is elementwise there.
    if consumer == BROADCAST and isinstance(producer_sinfo, TensorStructInfo) and \
            isinstance(consumer_sinfo, TensorStructInfo) and producer_sinfo.shape is not None \
            and consumer_sinfo.shape is not None and \
            len(producer_sinfo.shape) == len(consumer_sinfo.shape) and \
            all(prove_equal(a, b) for a, b in zip(producer_sinfo.shape, consumer_sinfo.shape)):
        return ELEMWISE
    return consumer


class _BlockFuser:
    """Fuses one dataflow block; collects the created functions."""

    def __init__(self, fuser: _FunctionFuser, block: DataflowBlock):
        self.f = fuser
        self.block = block
        self.bindings = block.bindings
        self.refs = [_refs(b.value) for b in self.bindings]
        # id(var or constant) -> indices of the bindings that read it
        self.readers: dict[int, set[int]] = {}
        for i, refs in enumerate(self.refs):
            for r in refs:
                self.readers.setdefault(id(r), set()).add(i)

    def run(self) -> DataflowBlock:
        bindings = self.bindings
        index_of = {id(b.var): i for i, b in enumerate(bindings)}
        nodes = [GraphNode(index=i, pattern=binding_pattern(b, self.f.mod),
                           extern_ref=not isinstance(b.var, DataflowVar))
                 for i, b in enumerate(bindings)]
        for i, node in enumerate(nodes):
            computed = {id(r) for r in self.refs[i] if id(r) in index_of}
            node.joins = node.pattern == INJECTIVE and len(computed) >= 2
        deps: list[list[int]] = []
        for i, b in enumerate(bindings):
            producers: list[int] = []
            for ref in self.refs[i]:
                j = index_of.get(id(ref))
                if j is not None and j not in producers:
                    producers.append(j)
                    edge = _edge_pattern(nodes[i].pattern, bindings[j].var.struct_info,
                                         b.var.struct_info)
                    nodes[j].outputs.append((i, edge))
            deps.append(producers)
        roots = GraphPartitioner(nodes, self.f.max_fuse_depth).partition()
        members: dict[int, list[int]] = {}
        for i, g in enumerate(roots):
            members.setdefault(id(g), []).append(i)
        units: list[list[int]] = []
        for idx in members.values():
            if len(idx) > 1 and self._fusable(idx):
                units.append(idx)
            else:
                units.extend([i] for i in idx)
        if len(units) == len(bindings):
            return self.block
        return self.block.replace(bindings=tuple(self._emit(units, deps)))

    def _fusable(self, idx: list[int]) -> bool:
        bs = [self.bindings[i] for i in idx]
        if not any(_is_call_tir(b.value) for b in bs):
            return False
        inputs, outputs = self._interface(idx)
        if sum(_tensor_count(e.struct_info) for e in inputs) + len(outputs) > _MAX_ARGS:
            return False  # a native call takes at most ~1,000 arguments
        defined: set[int] = set()
        for e in inputs:
            defined.update(id(v) for v in get_defining_shape_vars(e.struct_info))
        return all(id(v) in defined for b in bs for v in get_shape_vars(b.var.struct_info))

    def _interface(self, idx: list[int]) -> tuple[list[Expr], list[int]]:
        """The group's inputs (variables and constants bound outside it) and outputs
        (members used outside it or leaving the block)."""
        member_vars = {id(self.bindings[i].var) for i in idx}
        inputs: list[Expr] = []
        seen: set[int] = set()
        for i in idx:
            for ref in self.refs[i]:
                if id(ref) not in member_vars and id(ref) not in seen:
                    seen.add(id(ref))
                    inputs.append(ref)
        in_group = set(idx)
        outputs = [i for i in idx
                   if self.readers.get(id(self.bindings[i].var), set()) - in_group
                   or not isinstance(self.bindings[i].var, DataflowVar)]
        return inputs, outputs

    def _emit(self, units: list[list[int]], deps: list[list[int]]) -> list[Binding]:
        unit_of = {}
        for u, idx in enumerate(units):
            for i in idx:
                unit_of[i] = u
        waiting = [0] * len(units)
        users: list[set[int]] = [set() for _ in units]
        for u, idx in enumerate(units):
            needs = {unit_of[j] for i in idx for j in deps[i]} - {u}
            waiting[u] = len(needs)
            for n in needs:
                users[n].add(u)
        ready = [(max(idx), u) for u, idx in enumerate(units) if waiting[u] == 0]
        heapq.heapify(ready)
        out: list[Binding] = []
        emitted = 0
        while ready:
            _, u = heapq.heappop(ready)
            emitted += 1
            idx = units[u]
            if len(idx) == 1:
                out.append(self.bindings[idx[0]])
            else:
                out.extend(self._make_group(idx))
            for v in users[u]:
                waiting[v] -= 1
                if waiting[v] == 0:
                    heapq.heappush(ready, (max(units[v]), v))
        if emitted < len(units):
            raise IRCError("FuseOps: the fused groups depend on each other in a cycle; "
                           "this is a bug in the partitioner")
        return out

    def _make_group(self, idx: list[int]) -> list[Binding]:
        # An element taken from a tuple made outside the group is taken before the call:
        # the group gets that element, not the whole tuple (a split into n parts whose
        # parts feed n groups would give each group all n).
        member_vars = {id(self.bindings[i].var) for i in idx}
        hoisted = [i for i in idx if isinstance(self.bindings[i].value, TupleGetItem)
                   and id(self.bindings[i].value.tuple_value) not in member_vars]
        if hoisted:
            rest = [i for i in idx if i not in set(hoisted)]
            before = [self.bindings[i] for i in hoisted]
            if len(rest) <= 1:
                return before + [self.bindings[i] for i in rest]
            return before + self._make_group(rest)
        bs = [self.bindings[i] for i in idx]
        inputs, outputs = self._interface(idx)
        mapping: dict[int, Expr] = {}
        params = []
        for e in inputs:
            name = e.name_hint if isinstance(e, Var) else "c"
            p = Var(name_hint=name, struct_info=e.struct_info)
            params.append(p)
            mapping[id(e)] = p
        new_bindings: list[Binding] = []
        out_set = set(outputs)
        for i, b in zip(idx, bs):
            cls = Var if i in out_set else DataflowVar
            nv = cls(name_hint=b.var.name_hint, struct_info=b.var.struct_info)
            value = substitute_vars(b.value, mapping)
            new_bindings.append(VarBinding(var=nv, value=value))
            mapping[id(b.var)] = nv
        out_vars = [mapping[id(self.bindings[i].var)] for i in outputs]
        if len(out_vars) == 1:
            result: Expr = out_vars[0]
            ret = out_vars[0].struct_info
        else:
            ret = TupleStructInfo(fields=tuple(v.struct_info for v in out_vars))
            result = Tuple(fields=tuple(out_vars), struct_info=ret)
        body = SeqExpr(blocks=(DataflowBlock(bindings=tuple(new_bindings)),), body=result,
                       struct_info=ret)
        fsinfo = FuncStructInfo(params=tuple(p.struct_info for p in params), ret=ret,
                                purity=True)
        func = Function(params=tuple(params), body=body, ret_struct_info=ret, is_pure=True,
                        attrs={"Primitive": True}, struct_info=fsinfo)
        gv = self.f.add_function(self._name(bs), func)
        call = Call(op=gv, args=tuple(inputs), struct_info=ret)
        if len(outputs) == 1:
            return [VarBinding(var=self.bindings[outputs[0]].var, value=call)]
        tv = DataflowVar(name_hint=self.f.names.fresh("lv"), struct_info=ret)
        out: list[Binding] = [VarBinding(var=tv, value=call)]
        for k, i in enumerate(outputs):
            var = self.bindings[i].var
            out.append(VarBinding(var=var, value=TupleGetItem(tuple_value=tv, index=k,
                                                              struct_info=var.struct_info)))
        return out

    @staticmethod
    def _name(bs: list[Binding]) -> str:
        parts = []
        for b in bs:
            if _is_call_tir(b.value):
                parts.append(b.value.args[0].name_hint)
        name = "fused"
        for p in parts:
            if len(name) + 1 + len(p) > _MAX_NAME:
                break
            name += "_" + p
        return name


# The most tensors a fused group may read and write: its kernel takes each as an argument.
_MAX_ARGS = 512


def _tensor_count(sinfo: Any) -> int:
    if isinstance(sinfo, TupleStructInfo):
        return sum(_tensor_count(f) for f in sinfo.fields)
    return 1


def _is_call_tir(e: Expr) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "call_tir"


class _FunctionFuser:
    """Fuses the dataflow blocks of one graph function."""

    def __init__(self, mod: IRModule, created: dict[str, tuple[GlobalVar, Function]],
                 taken: set[str], max_fuse_depth: int):
        self.mod = mod
        self.created = created
        self.taken = taken
        self.max_fuse_depth = max_fuse_depth
        self.names = NameSupply()

    def add_function(self, base: str, func: Function) -> GlobalVar:
        name, i = base, 0
        while name in self.taken:
            i += 1
            name = f"{base}{i}"
        self.taken.add(name)
        gv = GlobalVar(name_hint=name)
        self.created[name] = (gv, func)
        return gv

    def run(self, func: Function) -> Function:
        self.names = NameSupply(collect_names(func))
        return map_dataflow_blocks(func, lambda block: _BlockFuser(self, block).run())


@dataclass(frozen=True)
class FuseOps(Pass):
    """Group fusable ``call_tir`` bindings into ``Primitive`` graph functions.

    ``fuse_opt_level`` (default: the PassContext's ``opt_level``) below 1 disables
    fusion; ``max_fuse_depth`` bounds the number of bindings in one group."""

    fuse_opt_level: int = -1
    max_fuse_depth: int = 256

    def __post_init__(self) -> None:
        for what in ("fuse_opt_level", "max_fuse_depth"):
            v = getattr(self, what)
            if not isinstance(v, int) or isinstance(v, bool):
                raise IRCError(f"FuseOps: {what} must be an int, got {v!r}")

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        level = ctx.opt_level if self.fuse_opt_level < 0 else self.fuse_opt_level
        if level < 1 or self.max_fuse_depth < 2:
            return mod
        created: dict[str, tuple[GlobalVar, Function]] = {}
        taken = set(mod.names())
        fused = mod.map_functions(
            lambda f: _FunctionFuser(mod, created, taken, self.max_fuse_depth).run(f),
            Function, where=lambda f: not f.attrs.get("Primitive") and "Codegen" not in f.attrs)
        if fused is mod:
            return mod
        funcs = dict(fused.functions)
        for gv, f in created.values():
            funcs[gv] = f
        return IRModule(functions=funcs, attrs=mod.attrs)


__all__ = ["FuseOps", "binding_pattern"]
