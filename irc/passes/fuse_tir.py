"""FuseTIR: turn each ``Primitive`` graph function into one loop function.

Algorithm: for every graph function marked ``Primitive`` (made by ``FuseOps``) that is
called, one block-form PrimFunc of the same name is built by walking its bindings:

- its tensor parameters (tuple parameters flattened field by field) become buffer
  parameters ``p_<name>`` whose shapes are the graph-level shapes (symbolic dimensions
  are the graph's own variables, so the shapes of the call's arguments define them);
- each ``R.call_tir(f, args)`` inlines the body of ``f``: ``f``'s parameter buffers are
  replaced by the buffers of the arguments and by new buffers for its outputs, ``f``'s
  symbolic dimensions by the argument shapes, every variable, loop, block iteration
  variable and buffer ``f`` defines is copied fresh (the same ``f`` may be called twice),
  ``f``'s root-block allocations move to the new root block, and block names are made
  unique (``T_add``, ``T_add_1``);
- tuple literals, projections and aliases only route buffers;
- the buffers of the function's result become output parameters; the other call outputs
  are ``alloc_buffer``s of the root block (named ``<name>_intermediate``).

Every call of the graph function is replaced by ``R.call_tir`` of the new PrimFunc with
the flattened arguments (projections of tuple arguments are bound first); the graph
functions marked ``Primitive`` and the loop functions only they used are removed.

Preconditions: loop functions called inside fused functions are in block form, without
extra integer arguments, and their buffers are compact (no strides or offsets).
Postconditions: no ``Primitive`` graph function remains; every fused group is one PrimFunc
called through ``call_tir``, so the VM runs each group as a single kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.diagnostics import IRCError
from ..core.functor import Mutator, Visitor
from ..core.module import IRModule, unique_name
from ..core.structural import structural_equal, structural_hash_hex
from ..core.transform import Pass, PassContext
from ..ir.expr import (
    Binding,
    Call,
    Constant,
    DataflowBlock,
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
from ..ir.ops import call_tir
from ..ir.struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ..tir import expr as E
from ..tir.buffer import Buffer
from ..tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    For,
    LetStmt,
    PrimFunc,
    seq,
)
from ._graph_utils import NameSupply, collect_names, referenced_globals

# A value of the fused function: one buffer, or a tuple of values.
_Value = Any


def _flatten(v: _Value) -> list[Buffer]:
    if isinstance(v, Buffer):
        return [v]
    out: list[Buffer] = []
    for x in v:
        out.extend(_flatten(x))
    return out


class _Definitions(Visitor):
    """Variables and buffers a statement defines (they are copied fresh when inlined)."""

    def __init__(self) -> None:
        self.vars: dict[int, E.Var] = {}
        self.buffers: dict[int, Buffer] = {}

    def visit_For(self, s: For) -> None:
        self.vars[id(s.loop_var)] = s.loop_var
        self.generic_visit(s)

    def visit_IterVar(self, iv: E.IterVar) -> None:
        self.vars[id(iv.var)] = iv.var
        self.generic_visit(iv)

    def visit_LetStmt(self, s: LetStmt) -> None:
        self.vars[id(s.var)] = s.var
        self.generic_visit(s)

    def visit_Let(self, e: E.Let) -> None:
        self.vars[id(e.var)] = e.var
        self.generic_visit(e)

    def visit_Allocate(self, s: Allocate) -> None:
        self.vars[id(s.buffer_var)] = s.buffer_var
        self.generic_visit(s)

    def visit_Block(self, b: Block) -> None:
        for buf in b.alloc_buffers:
            self.buffers[id(buf)] = buf
        for m in b.match_buffers:
            self.buffers[id(m.buffer)] = m.buffer
        self.generic_visit(b)


class _Names(NameSupply):
    """Unique names with TVM's ``_1`` suffix style."""

    def unique(self, base: str) -> str:
        name = unique_name(base, self.taken, "_")
        self.taken.add(name)
        return name


class _Inline(Mutator):
    """Copies a loop function body with buffers and variables replaced (seeded into the
    memo, so every reference to one object maps to the same replacement)."""

    def __init__(self, block_names: _Names):
        super().__init__()
        self.block_names = block_names

    def seed(self, old: Any, new: Any) -> None:
        """Replace ``old`` (a variable or buffer) by ``new`` everywhere."""
        self._memo[id(old)] = (old, new)

    def seeded(self, old: Any) -> bool:
        return id(old) in self._memo

    def visit_Block(self, b: Block) -> Block:
        new = self.generic_visit(b)
        name = self.block_names.unique(b.name)
        return new.replace(name=name) if name != new.name else new


class _FusedBuilder:
    """Builds the PrimFunc of one Primitive graph function."""

    def __init__(self, mod: IRModule, name: str, func: Function):
        self.mod = mod
        self.name = name
        self.func = func
        self.block_names = _Names()
        self.buffer_names = _Names()
        self.params: list[E.Var] = []
        self.buffer_map: dict[E.Var, Buffer] = {}
        self.allocs: list[Buffer] = []
        self.bodies: list[Any] = []
        self.values: dict[int, _Value] = {}

    def error(self, what: str) -> IRCError:
        return IRCError(f"FuseTIR: cannot fuse @{self.name}: {what}", node=self.func)

    # -- buffers ----------------------------------------------------------------------------
    def new_buffer(self, sinfo: StructInfo, name: str) -> Buffer:
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None or not sinfo.dtype:
            raise self.error(f"a value has struct info {sinfo!r}; tensors of known rank and "
                             "dtype are needed")
        name = self.buffer_names.unique(name)
        return Buffer(name=name, shape=tuple(sinfo.shape), dtype=sinfo.dtype,
                      data=E.Var(name=name, dtype="handle"))

    def add_param(self, buf: Buffer) -> None:
        handle = E.Var(name=buf.name, dtype="handle")
        self.params.append(handle)
        self.buffer_map[handle] = buf

    def param_value(self, sinfo: StructInfo, name: str) -> _Value:
        if isinstance(sinfo, TupleStructInfo):
            return [self.param_value(f, f"{name}_{i}") for i, f in enumerate(sinfo.fields)]
        buf = self.new_buffer(sinfo, name)
        self.add_param(buf)
        return buf

    # -- construction -------------------------------------------------------------------------
    def build(self) -> PrimFunc:
        f = self.func
        for p in f.params:
            self.values[id(p)] = self.param_value(p.struct_info, f"p_{p.name_hint}")
        self.result_vars = self._result_vars(f.body)
        body = f.body
        if not isinstance(body, SeqExpr):
            raise self.error("its body is not a sequence of bindings (run Normalize)")
        for block in body.blocks:
            for b in block.bindings:
                self.binding(b)
        result = self.value_of(body.body)
        outputs = _flatten(result)
        seen: set[int] = set()
        for buf in outputs:
            if id(buf) in seen or not any(buf is a for a in self.allocs):
                raise self.error("its result repeats a value or returns an input unchanged; "
                                 "only values computed inside can be outputs")
            seen.add(id(buf))
        self.allocs = [a for a in self.allocs if id(a) not in seen]
        for buf in outputs:
            self.add_param(buf)
        root = Block(name="root", iter_vars=(), reads=(), writes=(),
                     body=seq(*self.bodies), alloc_buffers=tuple(self.allocs))
        realize = BlockRealize(iter_values=(), predicate=E.IntImm(dtype="bool", value=1),
                               block=root)
        return PrimFunc(params=tuple(self.params), buffer_map=dict(self.buffer_map),
                        body=realize, attrs={"tir.noalias": True})

    @staticmethod
    def _result_vars(body: Expr) -> set[int]:
        e = body.body if isinstance(body, SeqExpr) else body
        if isinstance(e, Tuple):
            return {id(f) for f in e.fields if isinstance(f, Var)}
        return {id(e)} if isinstance(e, Var) else set()

    def value_of(self, e: Expr) -> _Value:
        if isinstance(e, (Var, Constant)):
            v = self.values.get(id(e))
            if v is None:
                raise self.error(f"{e!r} is not a parameter or a value computed inside")
            return v
        if isinstance(e, Tuple):
            return [self.value_of(x) for x in e.fields]
        if isinstance(e, TupleGetItem):
            t = self.value_of(e.tuple_value)
            if isinstance(t, Buffer):
                raise self.error("a tuple projection of a tensor")
            return t[e.index]
        raise self.error(f"a {type(e).__name__} expression is not a buffer value")

    def binding(self, b: Binding) -> None:
        if not isinstance(b, VarBinding):
            raise self.error("it contains a match_cast")
        value = b.value
        if isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == "call_tir":
            self.values[id(b.var)] = self.inline_call(value, b.var)
        elif isinstance(value, (Var, Tuple, TupleGetItem)):
            self.values[id(b.var)] = self.value_of(value)
        else:
            raise self.error(f"binding {b.var.name_hint} is not a call_tir, a tuple or a "
                             "projection")

    def inline_call(self, call: Call, var: Var) -> _Value:
        gv = call.args[0]
        callee = self.mod.get(gv.name_hint) if isinstance(gv, GlobalVar) else None
        if not isinstance(callee, PrimFunc):
            raise self.error(f"R.call_tir of {gv!r}, which is not a PrimFunc of the module")
        if len(call.args) > 2:
            raise self.error(f"R.call_tir of {gv.name_hint} passes extra integer arguments")
        args = call.args[1]
        ins = _flatten(self.value_of(args))
        sinfos = list(call.sinfo_args)
        if len(sinfos) == 1 and isinstance(sinfos[0], TupleStructInfo):
            sinfos = list(sinfos[0].fields)
        callee_bufs = [callee.buffer_map.get(p) for p in callee.params]
        if any(b is None for b in callee_bufs):
            raise self.error(f"{gv.name_hint} has scalar parameters")
        if len(callee_bufs) != len(ins) + len(sinfos):
            raise self.error(f"{gv.name_hint} takes {len(callee_bufs)} buffers but is called "
                             f"with {len(ins)} inputs and {len(sinfos)} outputs")
        is_result = id(var) in self.result_vars
        outs = []
        for buf, s in zip(callee_bufs[len(ins):], sinfos):
            name = buf.name if is_result else f"{buf.name}_intermediate"
            outs.append(self.new_buffer(s, name))
        inliner = _Inline(self.block_names)
        for old, new in zip(callee_bufs, ins + outs):
            if old.strides or old.elem_offset is not None:
                raise self.error(f"{gv.name_hint}: buffer {old.name} has strides or an offset")
            if len(old.shape) != len(new.shape):
                raise self.error(f"{gv.name_hint}: buffer {old.name} has rank "
                                 f"{len(old.shape)} but its value has rank {len(new.shape)}")
            inliner.seed(old, new)
            for d_old, d_new in zip(old.shape, new.shape):
                if isinstance(d_old, E.Var) and not inliner.seeded(d_old):
                    inliner.seed(d_old, d_new)
        body = callee.body
        defs = _Definitions()
        defs.visit(body)
        for v in defs.vars.values():
            if not inliner.seeded(v):
                inliner.seed(v, E.Var(name=v.name, dtype=v.dtype))
        for buf in defs.buffers.values():
            inliner.seed(buf.data, E.Var(name=buf.data.name, dtype=buf.data.dtype))
        if isinstance(body, BlockRealize) and body.block.name == "root" and \
                not body.block.iter_vars:
            for a in body.block.alloc_buffers:
                new = inliner.visit(a)
                renamed = self.buffer_names.unique(a.name)
                if renamed != new.name:
                    new = new.replace(name=renamed)
                inliner.seed(a, new)
                self.allocs.append(new)
            self.bodies.append(inliner.visit(body.block.body))
        else:
            self.bodies.append(inliner.visit(body))
        self.allocs.extend(outs)
        if isinstance(call.struct_info, TupleStructInfo):
            return outs
        return outs[0]


def _flatten_args(call: Call, primitive: Function, names: NameSupply | None,
                  dataflow: bool) -> tuple[list[Expr], list[Binding]]:
    """The call's arguments flattened to tensors, with bindings of tuple projections
    (inline projections when ``names`` is None)."""
    flat: list[Expr] = []
    pre: list[Binding] = []

    def add(e: Expr, sinfo: StructInfo) -> None:
        if not isinstance(sinfo, TupleStructInfo):
            flat.append(e)
            return
        if isinstance(e, Tuple):
            for f, s in zip(e.fields, sinfo.fields):
                add(f, s)
            return
        for i, s in enumerate(sinfo.fields):
            item = TupleGetItem(tuple_value=e, index=i, struct_info=s)
            if isinstance(s, TupleStructInfo) or names is None:
                add(item, s)
                continue
            v = names.var(item, dataflow)
            pre.append(VarBinding(var=v, value=item))
            flat.append(v)

    for a, p in zip(call.args, primitive.params):
        add(a, p.struct_info)
    return flat, pre


class _CallRewriter(Mutator):
    """Replaces calls of Primitive functions by ``call_tir`` of their fused PrimFuncs."""

    def __init__(self, mod: IRModule, fused: dict[str, GlobalVar], names: NameSupply):
        super().__init__()
        self.mod = mod
        self.fused = fused
        self.names = names
        self.dataflow = False

    def visit_SeqExpr(self, e: SeqExpr) -> Expr:
        blocks = []
        changed = False
        for block in e.blocks:
            self.dataflow = isinstance(block, DataflowBlock)
            out: list[Binding] = []
            for b in block.bindings:
                new = self.rewrite_binding(b, out)
                changed |= new is not b
                out.append(new)
            blocks.append(block.replace(bindings=tuple(out)))
        body = self.visit(e.body)
        if not changed and body is e.body:
            return e
        return e.replace(blocks=tuple(blocks), body=body)

    def rewrite_binding(self, b: Binding, out: list[Binding]) -> Binding:
        value = b.value
        if isinstance(value, Call) and isinstance(value.op, GlobalVar) and \
                value.op.name_hint in self.fused:
            callee = self.mod[value.op.name_hint]
            args, pre = _flatten_args(value, callee, self.names, self.dataflow)
            out.extend(pre)
            return b.replace(value=self.make_call(value, args))
        new_value = self.visit(value)
        return b if new_value is value else b.replace(value=new_value)

    def visit_Call(self, call: Call) -> Expr:
        call = self.generic_visit(call)
        if isinstance(call.op, GlobalVar) and call.op.name_hint in self.fused:
            callee = self.mod[call.op.name_hint]
            # Outside a binding there is nowhere to bind projections: they stay inline.
            args, _ = _flatten_args(call, callee, None, self.dataflow)
            return self.make_call(call, args)
        return call

    def make_call(self, call: Call, args: list[Expr]) -> Call:
        gv = self.fused[call.op.name_hint]
        s = call.struct_info
        out_sinfo = list(s.fields) if isinstance(s, TupleStructInfo) else s
        new = call_tir(gv, list(args), out_sinfo)
        arg_tuple = new.args[1]
        if isinstance(arg_tuple, Tuple) and arg_tuple.struct_info is None:
            arg_tuple = arg_tuple.replace(struct_info=TupleStructInfo(
                fields=tuple(a.struct_info for a in arg_tuple.fields)))
            new = new.replace(args=(new.args[0], arg_tuple) + new.args[2:])
        return new.replace(struct_info=s, span=call.span)


def _in_call_order(mod: IRModule, primitive: dict[str, Function], called: set[str]) -> \
        list[str]:
    """The called Primitive functions in order of their first call (so a shared kernel
    takes the name of the first group), then by name."""
    order: list[str] = []

    class _Calls(Visitor):
        def visit_GlobalVar(self, g: GlobalVar) -> None:
            if g.name_hint in called and g.name_hint not in order:
                order.append(g.name_hint)

        def visit_StructInfo(self, s: Any) -> None:
            return None

    for f in mod.functions.values():
        if isinstance(f, Function) and not f.attrs.get("Primitive"):
            _Calls().visit(f.body)
    return order + sorted(called - set(order))


@dataclass(frozen=True)
class FuseTIR(Pass):
    """Merge every ``Primitive`` graph function into one loop function called by
    ``call_tir`` (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        primitive = {gv.name_hint: f for gv, f in mod.functions.items()
                     if isinstance(f, Function) and f.attrs.get("Primitive")}
        if not primitive:
            return mod
        callers = {gv: f for gv, f in mod.functions.items()
                   if isinstance(f, Function) and gv.name_hint not in primitive}
        called = set()
        for f in callers.values():
            called |= referenced_globals(f) & set(primitive)
        before = set()
        for f in primitive.values():
            before |= referenced_globals(f)
        # Groups that fuse to the same loop function (repeated blocks of a network) share
        # one kernel, under the first name.
        fused_gvs: dict[str, GlobalVar] = {}
        new_prims: dict[str, PrimFunc] = {}
        by_hash: dict[str, GlobalVar] = {}
        for name in _in_call_order(mod, primitive, called):
            pf = _FusedBuilder(mod, name, primitive[name]).build()
            key = structural_hash_hex(pf)
            if key in by_hash and structural_equal(new_prims[by_hash[key].name_hint], pf):
                fused_gvs[name] = by_hash[key]
                continue
            fused_gvs[name] = by_hash.setdefault(key, GlobalVar(name_hint=name))
            new_prims[name] = pf
        funcs: dict[Any, Any] = {}
        for gv, f in mod.functions.items():
            if gv.name_hint in primitive:
                continue
            if isinstance(f, Function):
                rewriter = _CallRewriter(mod, fused_gvs, NameSupply(collect_names(f)))
                f = rewriter.visit(f)
            funcs[gv] = f
        for name, pf in new_prims.items():
            funcs[fused_gvs[name]] = pf
        still = set()
        for f in funcs.values():
            still |= referenced_globals(f)
        return IRModule(functions={gv: f for gv, f in funcs.items()
                                   if not (gv.name_hint in before and
                                           gv.name_hint not in still and
                                           isinstance(f, PrimFunc) and
                                           "global_symbol" not in f.attrs)},
                        attrs=mod.attrs)


__all__ = ["FuseTIR"]
