"""The function being scheduled and the lookup tables every primitive needs.

IR nodes are immutable, so a primitive builds new statements and the function is rebuilt
along the path from the changed statements to the root. :class:`FuncIndex` is the
schedule's view of one version of the function (TensorIR's "sref tree"): the parent of
every statement, every block by name and every loop by its loop variable. Handles stay
valid across versions because blocks are identified by their (unique) names and loops
by their loop variables, which primitives keep when they keep a loop.
"""

from __future__ import annotations

from typing import Iterator

from ...core.diagnostics import ScheduleError
from ...core.node import node_fields
from ..expr import PrimExpr, Var
from ..functor.stmt_util import flat_seq
from ..stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    DeclBuffer,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    While,
    no_op,
)

# Statement fields holding child statements, per statement class.
_CHILDREN: dict[type, tuple[str, ...]] = {
    For: ("body",),
    BlockRealize: ("block",),
    Block: ("init", "body"),
    IfThenElse: ("then_case", "else_case"),
    LetStmt: ("body",),
    AttrStmt: ("body",),
    AssertStmt: ("body",),
    DeclBuffer: ("body",),
    Allocate: ("body",),
    While: ("body",),
}

_REMOVED = object()


class FuncIndex:
    """Parent links, blocks by name and loops by variable of one PrimFunc version."""

    __slots__ = ("func", "parent", "blocks", "loops", "_param_buffers")

    def __init__(self, func: PrimFunc):
        self.func = func
        self.parent: dict[int, Stmt | None] = {}
        self.blocks: dict[str, BlockRealize] = {}
        self.loops: dict[int, For] = {}
        self._param_buffers: set[int] | None = None
        parent = self.parent
        blocks = self.blocks
        loops = self.loops
        stack: list[tuple[Stmt, Stmt | None]] = [(func.body, None)]
        while stack:
            s, p = stack.pop()
            parent[id(s)] = p
            t = type(s)
            if t is For:
                loops[id(s.loop_var)] = s
                stack.append((s.body, s))
            elif t is SeqStmt:
                for c in reversed(s.seq):
                    stack.append((c, s))
            elif t is BlockRealize:
                stack.append((s.block, s))
            elif t is Block:
                if s.name in blocks:
                    raise ScheduleError(
                        f"block name {s.name!r} appears twice in the function; a schedule "
                        "identifies blocks by name, so names must be unique",
                        hint="rename one of the blocks before scheduling")
                blocks[s.name] = p  # type: ignore[assignment]
                stack.append((s.body, s))
                if s.init is not None:
                    stack.append((s.init, s))
            else:
                fields = _CHILDREN.get(t)
                if fields:
                    for f in fields:
                        c = getattr(s, f)
                        if c is not None:
                            stack.append((c, s))

    # -- queries ----------------------------------------------------------------------
    @property
    def root(self) -> BlockRealize:
        """The root block realize (the function body in block form)."""
        body = self.func.body
        if type(body) is not BlockRealize:
            raise ScheduleError("the function is not in block form (its body is not a root "
                                "block); schedule a function from te.create_prim_func, the "
                                "parser or legalization, before lowering")
        return body

    def ancestors(self, s: Stmt) -> Iterator[Stmt]:
        """The statements enclosing ``s``, innermost first."""
        p = self.parent.get(id(s))
        while p is not None:
            yield p
            p = self.parent.get(id(p))

    def scope_realize(self, s: Stmt) -> BlockRealize:
        """The realize of the nearest block enclosing ``s`` (its scope root)."""
        for a in self.ancestors(s):
            if type(a) is Block:
                return self.parent[id(a)]  # type: ignore[return-value]
        return self.root

    def loops_above(self, s: Stmt) -> list[For]:
        """The loops between ``s`` and its scope root, outermost first."""
        out = []
        for a in self.ancestors(s):
            t = type(a)
            if t is Block:
                break
            if t is For:
                out.append(a)
        out.reverse()
        return out

    def is_ancestor(self, outer: Stmt, inner: Stmt) -> bool:
        """True when ``outer`` encloses ``inner`` (strictly)."""
        return any(a is outer for a in self.ancestors(inner))

    def removal_root(self, s: Stmt) -> Stmt:
        """The outermost statement that would be empty without ``s``: ``s`` or the loop
        nest (each loop with a single child) that holds only ``s``."""
        cur = s
        p = self.parent.get(id(cur))
        while type(p) is For:
            cur = p
            p = self.parent.get(id(cur))
        return cur

    def param_buffer_ids(self) -> set[int]:
        """Ids of the buffers of the function's parameters."""
        if self._param_buffers is None:
            self._param_buffers = {id(b) for b in self.func.buffer_map.values()}
        return self._param_buffers

    def all_names(self) -> set[str]:
        """Every block name of the function."""
        return set(self.blocks)

    # -- rebuilding -------------------------------------------------------------------
    def rebuild(self, replacements: dict[int, Stmt | None]) -> PrimFunc:
        """The function with the statements whose ids are keys replaced by the values
        (None removes a statement from its sequence)."""
        anc: set[int] = set()
        parent = self.parent
        for k in replacements:
            if k not in parent:
                raise ScheduleError("internal: replaced statement is not in the function")
            p = parent[k]
            while p is not None and id(p) not in anc:
                anc.add(id(p))
                p = parent.get(id(p))
        body = _rebuild(self.func.body, replacements, anc)
        if body is None:
            body = no_op()
        return self.func.replace(body=body)


def _rebuild(s: Stmt, repl: dict[int, Stmt | None], anc: set[int]) -> Stmt | None:
    k = id(s)
    if k in repl:
        return repl[k]
    if k not in anc:
        return s
    t = type(s)
    if t is SeqStmt:
        items = [_rebuild(c, repl, anc) for c in s.seq]
        return flat_seq([c for c in items if c is not None])
    if t is For:
        body = _rebuild(s.body, repl, anc)
        return s.replace(body=no_op() if body is None else body)
    if t is BlockRealize:
        return s.replace(block=_rebuild(s.block, repl, anc))
    if t is Block:
        body = _rebuild(s.body, repl, anc)
        init = None if s.init is None else _rebuild(s.init, repl, anc)
        return s.replace(body=no_op() if body is None else body, init=init)
    changes = {}
    for f in _CHILDREN.get(t, ()):
        c = getattr(s, f)
        if c is not None:
            nc = _rebuild(c, repl, anc)
            if nc is not c:
                changes[f] = no_op() if nc is None and f != "else_case" else nc
    return s.replace(**changes) if changes else s


# ---------------------------------------------------------------------------------
# Small helpers shared by the primitives
# ---------------------------------------------------------------------------------


def child_blocks(s: Stmt) -> list[BlockRealize]:
    """The block realizes directly under ``s`` (not inside other blocks), in execution
    order. For a BlockRealize, those of its block's body."""
    out: list[BlockRealize] = []
    if type(s) is BlockRealize:
        s = s.block.body
    elif type(s) is Block:
        s = s.body
    stack = [s]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is BlockRealize:
            out.append(x)
        elif t is SeqStmt:
            stack.extend(reversed(x.seq))
        elif t is For:
            stack.append(x.body)
        else:
            fields = _CHILDREN.get(t)
            if fields:
                for f in reversed(fields):
                    c = getattr(x, f)
                    if c is not None:
                        stack.append(c)
    return out


def var_ids(e: object, out: set[int] | None = None) -> set[int]:
    """Ids of the variables used in an expression (or tuple of expressions)."""
    if out is None:
        out = set()
    stack = [e]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is Var:
            out.add(id(x))
        elif t is tuple or t is list:
            stack.extend(x)
        elif isinstance(x, PrimExpr):
            for f in _expr_fields(t):
                v = getattr(x, f)
                if v is not None:
                    stack.append(v)
    return out


_EXPR_FIELDS: dict[type, tuple[str, ...]] = {}


def _expr_fields(t: type) -> tuple[str, ...]:
    fields = _EXPR_FIELDS.get(t)
    if fields is None:
        fields = tuple(f for f in node_fields(t) if f not in ("span", "dtype", "buffer"))
        _EXPR_FIELDS[t] = fields
    return fields


def fresh_name(base: str, taken: set[str]) -> str:
    """``base`` or ``base_1``, ``base_2``, ... whichever is not in ``taken`` (added)."""
    name = base
    k = 1
    while name in taken:
        name = f"{base}_{k}"
        k += 1
    taken.add(name)
    return name


def buffer_names(func: PrimFunc) -> set[str]:
    """Names of every buffer declared in the function (parameters and allocations)."""
    names = {b.name for b in func.buffer_map.values()}
    stack = [func.body]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is Block:
            names.update(b.name for b in x.alloc_buffers)
            names.update(m.buffer.name for m in x.match_buffers)
        fields = _CHILDREN.get(t)
        if t is SeqStmt:
            stack.extend(x.seq)
        elif fields:
            for f in fields:
                c = getattr(x, f)
                if c is not None:
                    stack.append(c)
    return names
