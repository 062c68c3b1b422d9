"""Well-formedness of loop IR: scoping, definitions and dtypes.

:func:`check_prim_func` raises :class:`~irc.ir.IRWellFormedError` naming the offending
variable, buffer or node when:

- a variable is used where it is not defined (a loop variable after its loop, a block
  iteration variable outside its block, a variable nobody defines) or a buffer is used
  without being declared (parameter, ``alloc_buffer``, ``match_buffer``, ``DeclBuffer``,
  or a view whose data pointer is defined);
- a variable or buffer is defined twice;
- a block with iteration variables uses a loop variable from outside the block, or binds
  an iteration variable to an expression of an enclosing block's iteration variables;
- dtypes disagree: operands of arithmetic or comparisons, conditions that are not bool,
  a stored value of another dtype than the buffer, non-integer indices, loop bounds or
  block bindings of another dtype than their variable, calls that do not match the
  intrinsic table;
- a buffer is indexed with the wrong number of indices.
"""

from __future__ import annotations

from typing import Any

from ..core import dtype as dt
from ..core.diagnostics import IRTypeError, IRWellFormedError
from ..core.node import Node, node_fields
from .buffer import Buffer, BufferRegion
from .expr import (
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    CmpOp,
    IterVar,
    Let,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Reduce,
    Select,
    Var,
)
from .intrin import check_call
from .stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    DeclBuffer,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    Stmt,
    While,
)


class _Scope:
    """Where a variable was defined: its kind and the block nesting depth."""

    __slots__ = ("kind", "depth", "owner")

    def __init__(self, kind: str, depth: int, owner: str = ""):
        self.kind = kind
        self.depth = depth
        self.owner = owner


class WellFormedChecker:
    """Walks one PrimFunc keeping the variables and buffers in scope."""

    def __init__(self, func: PrimFunc):
        self.func = func
        self.scope: dict[int, _Scope] = {}
        self.ever: dict[int, str] = {}
        self.retired: dict[int, str] = {}
        self.buffers: set[int] = set()
        self.blocks: list[Block] = []
        self.binding_block: Block | None = None
        self.keep: list[Any] = []

    # -- errors and definitions ---------------------------------------------------
    def fail(self, message: str, node: Any = None) -> None:
        name = self.func.attrs.get("global_symbol", "")
        where = f"in function {name}: " if name else ""
        raise IRWellFormedError(where + message, node=node)

    def define(self, v: Var, kind: str, owner: str = "") -> None:
        if id(v) in self.scope or id(v) in self.ever:
            self.fail(f"variable {v.name} is defined twice (as {self.ever.get(id(v), kind)} "
                      f"and as {kind})", v)
        self.scope[id(v)] = _Scope(kind, len(self.blocks), owner)
        self.ever[id(v)] = kind
        self.keep.append(v)

    def bind_shape_var(self, v: Var) -> None:
        # Variables in parameter/match buffer shapes are defined by their first use.
        if id(v) not in self.scope:
            self.define(v, "shape variable")

    def undefine(self, v: Var, how: str) -> None:
        self.scope.pop(id(v), None)
        self.retired[id(v)] = how

    def declare(self, b: Buffer, kind: str) -> None:
        if id(b) in self.buffers:
            self.fail(f"buffer {b.name} is declared twice (again as {kind})", b)
        self.buffers.add(id(b))
        self.keep.append(b)

    # -- expressions --------------------------------------------------------------
    def use(self, v: Var) -> None:
        info = self.scope.get(id(v))
        if info is None:
            how = self.retired.get(id(v))
            if how is not None:
                self.fail(f"variable {v.name} is used outside its scope ({how})", v)
            self.fail(f"variable {v.name} is used but never defined", v)
        if self.blocks and info.kind in ("loop variable", "block iteration variable"):
            block = self.blocks[-1]
            if block.iter_vars and info.depth < len(self.blocks):
                self.fail(f"{info.kind} {v.name} is defined outside block {block.name!r} but "
                          f"used inside it; use the block's iteration variables", v)
        if self.binding_block is not None and info.kind == "block iteration variable" \
                and info.depth == len(self.blocks) and self.blocks:
            self.fail(f"block {self.binding_block.name!r} binds an iteration variable to an "
                      f"expression of {v.name}, an iteration variable of the enclosing block "
                      f"{self.blocks[-1].name!r}; bind it to loop variables", v)

    def expr(self, e: Any) -> None:
        if isinstance(e, Var):
            self.use(e)
            return
        if isinstance(e, BinaryOp):
            self.expr(e.a)
            self.expr(e.b)
            if not (e.a.dtype == e.b.dtype == e.dtype):
                self.fail(f"{type(e).__name__} mixes dtypes: {e.a.dtype} and {e.b.dtype} "
                          f"(result {e.dtype}); cast one operand", e)
            return
        if isinstance(e, CmpOp):
            self.expr(e.a)
            self.expr(e.b)
            if e.a.dtype != e.b.dtype:
                self.fail(f"{type(e).__name__} compares {e.a.dtype} with {e.b.dtype}; cast one "
                          "operand", e)
            self.need_bool(e, f"result of {type(e).__name__}", lanes=dt.lanes(e.a.dtype))
            return
        if isinstance(e, (And, Or)):
            self.expr(e.a)
            self.expr(e.b)
            self.need_bool(e.a, f"operand of {type(e).__name__}")
            self.need_bool(e.b, f"operand of {type(e).__name__}")
            return
        if isinstance(e, Not):
            self.expr(e.a)
            self.need_bool(e.a, "operand of Not")
            return
        if isinstance(e, Select):
            for x in (e.condition, e.true_value, e.false_value):
                self.expr(x)
            self.need_bool(e.condition, "condition of Select")
            if not (e.true_value.dtype == e.false_value.dtype == e.dtype):
                self.fail(f"Select branches have dtypes {e.true_value.dtype} and "
                          f"{e.false_value.dtype} (result {e.dtype})", e)
            return
        if isinstance(e, Let):
            self.expr(e.value)
            if e.var.dtype != e.value.dtype:
                self.fail(f"Let binds {e.var.name} of dtype {e.var.dtype} to a value of dtype "
                          f"{e.value.dtype}", e)
            self.define(e.var, "let variable")
            self.expr(e.body)
            self.undefine(e.var, "a Let expression's variable after its body")
            return
        if isinstance(e, BufferLoad):
            self.access(e.buffer, e.indices, e)
            lanes = max([dt.lanes(i.dtype) for i in e.indices] + [1])
            want = e.buffer.dtype if lanes == 1 else dt.with_lanes(e.buffer.dtype, lanes)
            if e.dtype != want and dt.lanes(e.buffer.dtype) == 1:
                self.fail(f"load of buffer {e.buffer.name} has dtype {e.dtype}, expected "
                          f"{want}", e)
            return
        if isinstance(e, Call):
            for a in e.args:
                self.expr(a)
            try:
                check_call(e)
            except IRTypeError as err:
                self.fail(f"call of {e.op}: {err.message}", e)
            return
        if isinstance(e, Ramp):
            self.expr(e.base)
            self.expr(e.stride)
            if e.base.dtype != e.stride.dtype or e.dtype != dt.with_lanes(e.base.dtype, e.lanes):
                self.fail(f"Ramp of dtype {e.dtype} has base {e.base.dtype} and stride "
                          f"{e.stride.dtype}", e)
            return
        if isinstance(e, Broadcast):
            self.expr(e.value)
            if e.dtype != dt.with_lanes(e.value.dtype, e.lanes):
                self.fail(f"Broadcast of dtype {e.dtype} repeats a {e.value.dtype} value", e)
            return
        if isinstance(e, Reduce):
            self.fail("a te reduction (Reduce) cannot appear in a PrimFunc", e)
        if isinstance(e, Node):
            for f in node_fields(type(e)):
                if f != "span":
                    self.expr_field(getattr(e, f))

    def expr_field(self, v: Any) -> None:
        if isinstance(v, PrimExpr):
            self.expr(v)
        elif isinstance(v, (tuple, list)):
            for x in v:
                self.expr_field(x)

    def need_bool(self, e: PrimExpr, what: str, lanes: int | None = None) -> None:
        if not dt.is_bool(e.dtype):
            self.fail(f"{what} must be bool, got {e.dtype}", e)
        if lanes is not None and dt.lanes(e.dtype) != lanes:
            self.fail(f"{what} has {dt.lanes(e.dtype)} lanes, expected {lanes}", e)

    def need_int(self, e: PrimExpr, what: str) -> None:
        if not dt.is_integer(e.dtype):
            self.fail(f"{what} must be an integer, got {e!r} of dtype {e.dtype}", e)

    def buffer_usable(self, b: Buffer, node: Any) -> None:
        if id(b) in self.buffers:
            return
        if id(b.data) in self.scope:
            return  # a view of defined memory (lowered form)
        self.fail(f"buffer {b.name} is used but not declared (no parameter, alloc_buffer, "
                  "match_buffer or DeclBuffer defines it or its data pointer)", node)

    def access(self, b: Buffer, indices: tuple[PrimExpr, ...], node: Any) -> None:
        self.buffer_usable(b, node)
        if len(indices) != b.ndim:
            self.fail(f"buffer {b.name} has {b.ndim} dimensions but is indexed with "
                      f"{len(indices)} indices", node)
        for i in indices:
            self.expr(i)
            self.need_int(i, f"index of buffer {b.name}")

    def region(self, r: BufferRegion) -> None:
        self.buffer_usable(r.buffer, r)
        if len(r.region) != r.buffer.ndim:
            self.fail(f"region of buffer {r.buffer.name} has {len(r.region)} ranges for "
                      f"{r.buffer.ndim} dimensions", r)
        for rng in r.region:
            self.expr(rng.min)
            self.expr(rng.extent)

    # -- buffers ------------------------------------------------------------------
    def buffer_defs(self, b: Buffer) -> None:
        for s in list(b.shape) + list(b.strides) + ([b.elem_offset] if b.elem_offset is not
                                                      None else []):
            if isinstance(s, Var):
                self.bind_shape_var(s)
            else:
                self.expr(s)

    # -- statements ---------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        handler = getattr(self, "s_" + type(s).__name__, None)
        if handler is not None:
            handler(s)
            return
        for f in node_fields(type(s)):
            v = getattr(s, f)
            if isinstance(v, Stmt):
                self.stmt(v)
            elif isinstance(v, PrimExpr):
                self.expr(v)

    def s_SeqStmt(self, s: Any) -> None:
        for x in s.seq:
            self.stmt(x)

    def s_Evaluate(self, s: Any) -> None:
        self.expr(s.value)

    def s_BufferStore(self, s: BufferStore) -> None:
        self.access(s.buffer, s.indices, s)
        self.expr(s.value)
        lanes = max([dt.lanes(i.dtype) for i in s.indices] + [1])
        want = s.buffer.dtype if lanes == 1 else dt.with_lanes(s.buffer.dtype, lanes)
        if s.value.dtype != want:
            self.fail(f"store into buffer {s.buffer.name} ({s.buffer.dtype}) of a value of "
                      f"dtype {s.value.dtype}; cast the value to {want}", s)

    def s_For(self, s: For) -> None:
        self.expr(s.min)
        self.expr(s.extent)
        for what, e in (("start", s.min), ("extent", s.extent)):
            if e.dtype != s.loop_var.dtype:
                self.fail(f"loop {s.loop_var.name}: {what} has dtype {e.dtype} but the loop "
                          f"variable is {s.loop_var.dtype}", s)
        self.need_int(s.loop_var, f"loop variable {s.loop_var.name}")
        self.define(s.loop_var, "loop variable")
        self.stmt(s.body)
        self.undefine(s.loop_var, f"loop variable {s.loop_var.name} after its loop")

    def s_While(self, s: While) -> None:
        self.expr(s.condition)
        self.need_bool(s.condition, "condition of While", lanes=1)
        self.stmt(s.body)

    def s_IfThenElse(self, s: IfThenElse) -> None:
        self.expr(s.condition)
        self.need_bool(s.condition, "condition of IfThenElse", lanes=1)
        self.stmt(s.then_case)
        if s.else_case is not None:
            self.stmt(s.else_case)

    def s_LetStmt(self, s: LetStmt) -> None:
        self.expr(s.value)
        if s.var.dtype != s.value.dtype:
            self.fail(f"LetStmt binds {s.var.name} of dtype {s.var.dtype} to a value of dtype "
                      f"{s.value.dtype}", s)
        self.define(s.var, "let variable")
        self.stmt(s.body)
        self.undefine(s.var, f"let variable {s.var.name} after its LetStmt")

    def s_AssertStmt(self, s: AssertStmt) -> None:
        self.expr(s.condition)
        self.need_bool(s.condition, "condition of AssertStmt", lanes=1)
        self.stmt(s.body)

    def s_AttrStmt(self, s: AttrStmt) -> None:
        self.expr(s.value)
        if isinstance(s.node, IterVar) and s.key in ("thread_extent", "virtual_thread"):
            v = s.node.var
            if id(v) in self.scope:
                self.stmt(s.body)  # a second launch of the same thread axis
                return
            self.define(v, "loop variable")
            self.stmt(s.body)
            self.undefine(v, f"thread variable {v.name} after its launch")
            return
        self.stmt(s.body)

    def s_Allocate(self, s: Allocate) -> None:
        for e in s.extents:
            self.expr(e)
            self.need_int(e, f"extent of allocation {s.buffer_var.name}")
        self.define(s.buffer_var, "allocation")
        self.stmt(s.body)
        self.undefine(s.buffer_var, f"allocation {s.buffer_var.name} after its scope")

    def s_DeclBuffer(self, s: DeclBuffer) -> None:
        b = s.buffer
        if id(b.data) not in self.scope:
            self.fail(f"DeclBuffer {b.name}: its data pointer {b.data.name} is not defined", s)
        for e in list(b.shape) + list(b.strides):
            self.expr(e)
        self.declare(b, "DeclBuffer")
        self.stmt(s.body)
        self.buffers.discard(id(b))

    def s_BlockRealize(self, s: BlockRealize) -> None:
        block = s.block
        self.binding_block = block
        for v in s.iter_values:
            self.expr(v)
        self.binding_block = None
        self.expr(s.predicate)
        self.need_bool(s.predicate, f"predicate of block {block.name!r}", lanes=1)
        for iv, v in zip(block.iter_vars, s.iter_values):
            if iv.var.dtype != v.dtype:
                self.fail(f"block {block.name!r}: iteration variable {iv.var.name} "
                          f"({iv.var.dtype}) is bound to a value of dtype {v.dtype}", s)
        self.block(block)

    def s_Block(self, s: Block) -> None:
        if s.iter_vars:
            self.fail(f"block {s.name!r} has iteration variables but no BlockRealize binds "
                      "them", s)
        self.block(s)

    def block(self, b: Block) -> None:
        for iv in b.iter_vars:
            self.expr(iv.dom.min)
            self.expr(iv.dom.extent)
        self.blocks.append(b)
        for iv in b.iter_vars:
            self.define(iv.var, "block iteration variable", b.name)
        declared = []
        for buf in b.alloc_buffers:
            self.declare(buf, f"alloc_buffer of block {b.name!r}")
            self.define(buf.data, f"data of buffer {buf.name}")
            for e in buf.shape:
                self.expr(e)
            declared.append(buf)
        for mb in b.match_buffers:
            self.region(mb.source)
            self.declare(mb.buffer, f"match_buffer of block {b.name!r}")
            self.define(mb.buffer.data, f"data of buffer {mb.buffer.name}")
            self.buffer_defs(mb.buffer)
            declared.append(mb.buffer)
        for r in b.reads + b.writes:
            self.region(r)
        if b.init is not None:
            self.stmt(b.init)
        self.stmt(b.body)
        for buf in declared:
            self.buffers.discard(id(buf))
            self.undefine(buf.data, f"data of buffer {buf.name} outside block {b.name!r}")
        for iv in b.iter_vars:
            self.undefine(iv.var, f"iteration variable of block {b.name!r}, outside that block")
        self.blocks.pop()

    # -- function -----------------------------------------------------------------
    def run(self) -> None:
        f = self.func
        for p in f.params:
            self.define(p, "parameter")
        for p in f.params:
            b = f.buffer_map.get(p)
            if b is None:
                continue
            if b.data is not p:
                self.define(b.data, f"data of parameter buffer {b.name}")
            self.declare(b, "parameter buffer")
            self.buffer_defs(b)
        self.stmt(f.body)


def check_prim_func(func: PrimFunc) -> None:
    """Raise IRWellFormedError if ``func`` breaks a loop-IR invariant (see the module
    docstring); return None otherwise."""
    if not isinstance(func, PrimFunc):
        raise IRWellFormedError(f"check_prim_func takes a PrimFunc, got {type(func).__name__}")
    WellFormedChecker(func).run()


def is_well_formed(func: PrimFunc) -> bool:
    """True when :func:`check_prim_func` finds nothing wrong."""
    try:
        check_prim_func(func)
    except IRWellFormedError:
        return False
    return True
