"""Blocks of ``@T.prim_func`` text: ``with T.block(...)`` with its header statements.

A block's header is the run of statements at the start of its body that describe it:
``T.axis.spatial/reduce/remap`` (iteration variables and their bindings), ``T.where``,
``T.reads``/``T.writes`` (detected with ``detect_block_access_regions`` when left out),
``T.block_attr``, ``T.alloc_buffer``, ``T.match_buffer`` and ``with T.init():``. The
first other statement starts the block's body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core import dtype as dt
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.analysis import detect_block_access_regions
from ..tir.buffer import Buffer, BufferRegion, MatchBufferRegion
from . import syntax as syn
from .context import (
    bind_args,
    describe,
    expect_dtype,
    expect_str,
    located,
    parse_error,
    target_names,
    type_error,
)
from .tir_expr import extent_of

BLOCK_ATTR_NAMES = ("T.block_attr", "T.sblock_attr")
ALLOC_NAMES = ("T.alloc_buffer", "T.sblock_alloc_buffer")
HEADER_ONLY = ("T.reads", "T.writes", "T.where", *BLOCK_ATTR_NAMES)
_AXIS_KINDS = {"spatial": "spatial", "S": "spatial", "reduce": "reduce", "R": "reduce",
               "opaque": "opaque", "scan": "ordered"}
_REMAP_KINDS = {"S": "spatial", "R": "reduce", "O": "opaque"}


def _call_name(node: Any) -> str | None:
    if isinstance(node, syn.Call):
        return syn.dotted_name(node.func)
    return None


def _is_docstring(s: Any) -> bool:
    return isinstance(s, syn.ExprStmt) and isinstance(s.value, syn.Const) and \
        isinstance(s.value.value, str)


@dataclass
class _BlockFrame:
    name: str
    iter_vars: list = field(default_factory=list)
    iter_values: list = field(default_factory=list)
    reads: list | None = None
    writes: list | None = None
    predicate: Any = None
    init: Any = None
    alloc_buffers: list = field(default_factory=list)
    match_buffers: list = field(default_factory=list)
    annotations: dict = field(default_factory=dict)


class BlockBuilderMixin:
    """Block building for :class:`~irc.script_parser.tir_builder.PrimFuncBuilder` (which
    provides ``ev``, ``scopes``, ``depth``, ``loop_dom``, ``body``, ``nested``,
    ``make_buffer`` and ``annotations``)."""

    ev: Any
    scopes: Any
    depth: int
    loop_dom: dict

    def block(self, call: syn.Call, s: syn.With) -> S.Stmt:
        values, kw = self.ev.args(call)
        a = bind_args(call, "T.block", ["name_hint"], 0, values, kw)
        name = expect_str(a.get("name_hint", ""), "the block name", call)
        frame = _BlockFrame(name=name)
        self.depth += 1
        try:
            with self.scopes.scope():
                stmts = list(s.body)
                i = 0
                while i < len(stmts) and self.block_header(frame, stmts[i]):
                    i += 1
                body = self.body(stmts[i:])
        finally:
            self.depth -= 1
        with located(call):
            block = S.Block(name=name, iter_vars=tuple(frame.iter_vars),
                             reads=tuple(frame.reads or ()), writes=tuple(frame.writes or ()),
                             body=body, init=frame.init,
                             alloc_buffers=tuple(frame.alloc_buffers),
                             match_buffers=tuple(frame.match_buffers),
                             annotations=frame.annotations, span=s.span)
            if frame.reads is None or frame.writes is None:
                block = self.detect_regions(block, frame, call)
            pred = frame.predicate if frame.predicate is not None else E.const(True)
            return S.BlockRealize(iter_values=tuple(frame.iter_values), predicate=pred,
                                   block=block, span=s.span)

    def detect_regions(self, block: S.Block, frame: _BlockFrame, node: Any) -> S.Block:
        reads, writes = detect_block_access_regions(block)
        return block.replace(reads=tuple(reads) if frame.reads is None else block.reads,
                             writes=tuple(writes) if frame.writes is None else block.writes)

    def block_header(self, frame: _BlockFrame, s: Any) -> bool:
        """Apply ``s`` to the block being built if it is a header statement."""
        if _is_docstring(s):
            return True
        if isinstance(s, syn.With) and len(s.items) == 1 and _call_name(s.items[0][0]) == \
                "T.init":
            if frame.init is not None:
                raise parse_error("a block has at most one T.init()", s)
            if s.items[0][0].args or s.items[0][0].kwargs:
                raise parse_error("T.init() takes no arguments", s.items[0][0])
            frame.init = self.nested(s.body)
            return True
        if isinstance(s, syn.ExprStmt):
            name = _call_name(s.value)
            if name not in HEADER_ONLY:
                return False
            with located(s):
                self.block_call(frame, name, s.value)
            return True
        if isinstance(s, syn.Assign) and s.annotation is None and s.value is not None:
            name = _call_name(s.value)
            with located(s):
                if name is not None and name.startswith("T.axis."):
                    self.axis(frame, name, s)
                    return True
                if name in ALLOC_NAMES and isinstance(s.target, syn.Name):
                    buf = self.make_buffer(s.target.id, s.value, name)
                    self.scopes.define(s.target.id, buf, s.target)
                    frame.alloc_buffers.append(buf)
                    return True
                if name == "T.match_buffer" and isinstance(s.target, syn.Name):
                    frame.match_buffers.append(self.match_region(s.target, s.value))
                    return True
        return False

    def block_call(self, frame: _BlockFrame, name: str, call: syn.Call) -> None:
        if name in ("T.reads", "T.writes"):
            regions = []
            items = call.args
            if len(items) == 1 and isinstance(items[0], (syn.ListExpr, syn.TupleExpr)):
                items = items[0].elts
            if call.kwargs:
                raise parse_error(f"{name} takes no keyword arguments", call)
            for item in items:
                regions.append(self.region(item))
            attr = "reads" if name == "T.reads" else "writes"
            if getattr(frame, attr) is not None:
                raise parse_error(f"{name} given twice in one block", call)
            setattr(frame, attr, regions)
            return
        values, kw = self.ev.args(call)
        if name == "T.where":
            a = bind_args(call, "T.where", ["predicate"], 1, values, kw)
            if frame.predicate is not None:
                raise parse_error("T.where given twice in one block", call)
            frame.predicate = self.ev.condition(a["predicate"], call)
            return
        a = bind_args(call, name, ["attrs"], 1, values, kw)
        frame.annotations.update(self.annotations(a["attrs"], call))

    def region(self, node: Any) -> BufferRegion:
        """``A[i, 0:16]`` in T.reads/T.writes/T.match_buffer: one Range per dimension."""
        if isinstance(node, syn.Index):
            buf = self.ev.eval(node.value)
            if isinstance(buf, Buffer):
                items = node.items
                if len(items) == 1 and isinstance(items[0], syn.TupleExpr) and not \
                        items[0].elts:
                    items = []
                if len(items) != len(buf.shape):
                    raise type_error(f"buffer '{buf.name}' has {len(buf.shape)} dimension(s) "
                                     f"but the region has {len(items)}", node)
                ranges = []
                for item, dim in zip(items, buf.shape):
                    if isinstance(item, syn.Slice):
                        if item.step is not None:
                            raise parse_error("a buffer region cannot have a step", item)
                        lo = self.ev.eval(item.lo) if item.lo is not None else 0
                        lo_e = self.ev.operand(lo, dim.dtype, item) if not isinstance(
                            lo, E.PrimExpr) else lo
                        hi = self.ev.eval(item.hi) if item.hi is not None else dim
                        ranges.append(E.Range(min=lo_e, extent=extent_of(self.ev, lo_e, hi,
                                                                          item)))
                    else:
                        e = self.ev.prim(self.ev.eval(item), item)
                        ranges.append(E.Range(min=e, extent=E.IntImm(dtype=e.dtype, value=1)))
                return BufferRegion(buffer=buf, region=tuple(ranges))
        value = self.ev.eval(node)
        if isinstance(value, Buffer):
            return BufferRegion.full(value)
        raise parse_error(f"expected a buffer region such as A[i, 0:16], got {describe(value)}",
                          node)

    def match_region(self, target: syn.Name, call: syn.Call) -> MatchBufferRegion:
        if not call.args:
            raise parse_error("T.match_buffer needs the region it views", call)
        source = self.region(call.args[0])
        buf = self.make_buffer(target.id, call, "T.match_buffer", skip_first=True)
        self.scopes.define(target.id, buf, target)
        return MatchBufferRegion(buffer=buf, source=source)

    def axis(self, frame: _BlockFrame, name: str, s: syn.Assign) -> None:
        call = s.value
        kind = name[len("T.axis."):]
        if kind == "remap":
            values, kw = self.ev.args(call)
            a = bind_args(call, "T.axis.remap", ["kinds", "bindings"], 2, values, kw)
            kinds = expect_str(a["kinds"], "the kinds of T.axis.remap", call)
            bindings = a["bindings"]
            if not isinstance(bindings, (list, tuple)):
                raise parse_error("T.axis.remap needs a list of loop variables", call)
            targets = target_names(s.target, "the targets of T.axis.remap")
            if not (len(kinds) == len(bindings) == len(targets)):
                raise parse_error(f"T.axis.remap: {len(kinds)} kinds, {len(bindings)} loop "
                                  f"variables and {len(targets)} names must agree", call)
            for ch, b, (tname, tnode) in zip(kinds, bindings, targets):
                if ch not in _REMAP_KINDS:
                    raise parse_error(f"T.axis.remap kind {ch!r} must be S, R or O", call)
                dom = self.loop_dom.get(id(b)) if isinstance(b, E.Var) else None
                if dom is None or dom[2] is not b:
                    raise parse_error("T.axis.remap binds loop variables of enclosing loops; "
                                      f"got {describe(b)}", call)
                self.iter_var(frame, tname, tnode, E.Range(min=dom[0], extent=dom[1]),
                              _REMAP_KINDS[ch], b)
            return
        if kind not in _AXIS_KINDS:
            raise parse_error(f"unknown axis kind T.axis.{kind}; use spatial, reduce, opaque, "
                              "scan or remap", call)
        if not isinstance(s.target, syn.Name):
            raise parse_error(f"T.axis.{kind} binds one name", s.target)
        values, kw = self.ev.args(call)
        a = bind_args(call, f"T.axis.{kind}", ["dom", "binding", "dtype", "thread_tag"], 2,
                      values, kw)
        binding = self.ev.prim(a["binding"], call)
        dom = a["dom"]
        ref = binding.dtype
        var_dtype = None if "dtype" not in a else expect_dtype(a["dtype"], "dtype=", call)
        if isinstance(dom, (tuple, list)):
            if len(dom) != 2:
                raise parse_error("an axis domain is an extent or a (min, max) pair", call)
            lo = self.ev.operand(dom[0], ref, call)
            rng = E.Range(min=lo, extent=extent_of(self.ev, lo, dom[1], call))
        else:
            ext = self.ev.operand(dom, ref, call)
            rng = E.Range(min=E.IntImm(dtype=ext.dtype, value=0) if dt.is_integer(ext.dtype)
                           else ext, extent=ext)
        if not dt.is_integer(rng.extent.dtype) or rng.min.dtype != rng.extent.dtype:
            raise type_error("an axis domain must be integers of one dtype", call)
        tag = expect_str(a.get("thread_tag", ""), "thread_tag=", call)
        self.iter_var(frame, s.target.id, s.target, rng, _AXIS_KINDS[kind], binding,
                      dtype=var_dtype, thread_tag=tag)

    def iter_var(self, frame: _BlockFrame, name: str, node: Any, dom: E.Range, kind: str,
                 binding: E.PrimExpr, dtype: str | None = None, thread_tag: str = "") -> None:
        """Define block iteration variable ``name`` over ``dom`` bound to ``binding``."""
        var = E.Var(name=name, dtype=dtype or dom.extent.dtype, span=node.span)
        self.scopes.define(name, var, node)
        frame.iter_vars.append(E.IterVar(var=var, dom=dom, iter_type=kind,
                                          thread_tag=thread_tag))
        frame.iter_values.append(binding)


