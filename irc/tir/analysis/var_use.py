"""Variable-use analyses: which variables a piece of loop IR uses without defining them,
and whether an expression mentions given variables."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ...core.node import Node, node_fields
from ..buffer import Buffer, BufferRegion
from ..expr import BufferLoad, Let, Var
from ..stmt import (
    Allocate,
    Block,
    BlockRealize,
    BufferStore,
    DeclBuffer,
    For,
    LetStmt,
    PrimFunc,
)


class _UndefinedVars:
    def __init__(self, defined: Iterable[Var]):
        self.defined: set[int] = {id(v) for v in defined}
        self.seen: set[int] = set()
        self.out: list[Var] = []
        self.buffers_done: set[int] = set()

    def use(self, v: Var) -> None:
        if id(v) not in self.defined and id(v) not in self.seen:
            self.seen.add(id(v))
            self.out.append(v)

    def define(self, v: Var) -> None:
        self.defined.add(id(v))

    def buffer(self, b: Buffer) -> None:
        """A buffer is used: its data pointer and symbolic shape are used too."""
        if id(b) in self.buffers_done:
            return
        self.buffers_done.add(id(b))
        self.use(b.data)
        for e in (*b.shape, *b.strides, *(() if b.elem_offset is None else (b.elem_offset,))):
            self.visit(e)

    def define_buffer(self, b: Buffer) -> None:
        self.define(b.data)
        self.buffers_done.add(id(b))
        for e in (*b.shape, *b.strides, *(() if b.elem_offset is None else (b.elem_offset,))):
            self.visit(e)

    def visit(self, n) -> None:
        if isinstance(n, (tuple, list)):
            for x in n:
                self.visit(x)
            return
        if isinstance(n, dict):
            for v in n.values():
                self.visit(v)
            return
        if not isinstance(n, Node):
            return
        cls = type(n)
        if cls is Var:
            self.use(n)
            return
        if cls is BufferLoad:
            self.buffer(n.buffer)
            self.visit(n.indices)
            return
        if cls is BufferStore:
            self.buffer(n.buffer)
            self.visit(n.value)
            self.visit(n.indices)
            return
        if cls is For:
            self.visit(n.min)
            self.visit(n.extent)
            self.define(n.loop_var)
            self.visit(n.body)
            return
        if cls is LetStmt or cls is Let:
            self.visit(n.value)
            self.define(n.var)
            self.visit(n.body)
            return
        if cls is Allocate:
            self.visit(n.extents)
            self.define(n.buffer_var)
            if n.condition is not None:
                self.visit(n.condition)
            self.visit(n.body)
            return
        if cls is DeclBuffer:
            self.buffer(n.buffer)
            self.visit(n.body)
            return
        if cls is Block:
            for iv in n.iter_vars:
                self.visit(iv.dom)
                self.define(iv.var)
            for b in n.alloc_buffers:
                self.define_buffer(b)
            for mb in n.match_buffers:
                self.visit_region(mb.source)
                self.define_buffer(mb.buffer)
            for r in (*n.reads, *n.writes):
                self.visit_region(r)
            if n.init is not None:
                self.visit(n.init)
            self.visit(n.body)
            return
        if cls is BlockRealize:
            self.visit(n.iter_values)
            self.visit(n.predicate)
            self.visit(n.block)
            return
        if cls is BufferRegion:
            self.visit_region(n)
            return
        if cls is Buffer:
            self.buffer(n)
            return
        for f in node_fields(cls):
            if f != "span":
                self.visit(getattr(n, f))

    def visit_region(self, r: BufferRegion) -> None:
        self.buffer(r.buffer)
        for rg in r.region:
            self.visit(rg.min)
            self.visit(rg.extent)


def undefined_vars(node, defined: Iterable[Var] = ()) -> list[Var]:
    """Variables used in ``node`` (a statement, expression or PrimFunc body) but defined
    neither inside it nor in ``defined``, in order of first use. Accessing a buffer uses
    its data pointer and the variables of its shape."""
    if isinstance(node, PrimFunc):
        # Parameters and the variables of parameter buffers' shapes are bound by a call.
        defined = [*defined, *node.params]
        for b in node.buffer_map.values():
            for e in (*b.shape, *b.strides, b.elem_offset):
                if type(e) is Var:
                    defined.append(e)
        c = _UndefinedVars(defined)
        for b in node.buffer_map.values():
            c.define_buffer(b)
        c.visit(node.body)
        return c.out
    c = _UndefinedVars(defined)
    c.visit(node)
    return c.out


def uses_var(e, predicate: Callable[[Var], bool] | set | frozenset) -> bool:
    """Whether expression (or statement) ``e`` mentions a variable satisfying
    ``predicate`` (a function, or a set of variables)."""
    if isinstance(predicate, (set, frozenset)):
        ids = {id(v) for v in predicate}
        test = lambda v: id(v) in ids
    else:
        test = predicate
    stack = [e]
    seen: set[int] = set()
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list)):
            stack.extend(x)
            continue
        if not isinstance(x, Node) or id(x) in seen:
            continue
        seen.add(id(x))
        if type(x) is Var:
            if test(x):
                return True
            continue
        if isinstance(x, Buffer):
            continue
        for f in node_fields(type(x)):
            if f != "span":
                v = getattr(x, f)
                if isinstance(v, (Node, tuple, list)):
                    stack.append(v)
    return False


def collect_vars(e) -> list[Var]:
    """The distinct variables an expression (or statement) mentions, in order of first
    appearance; buffers' data pointers are not included."""
    out: list[Var] = []
    seen: set[int] = set()

    def walk(x) -> None:
        if isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
            return
        if not isinstance(x, Node) or isinstance(x, Buffer) or id(x) in seen:
            return
        seen.add(id(x))
        if type(x) is Var:
            out.append(x)
            return
        for f in node_fields(type(x)):
            if f != "span":
                walk(getattr(x, f))

    walk(e)
    return out


def same_expr(a: Any, b: Any) -> bool:
    """Structural identity where variables and buffers must be the very same objects
    (unlike structural_equal, which pairs free variables by position)."""
    if a is b:
        return True
    if isinstance(a, Node):
        if type(a) is not type(b) or type(a)._sequal_binding:
            return False
        return all(same_expr(getattr(a, f), getattr(b, f))
                   for f in node_fields(type(a)) if f != "span")
    if isinstance(a, (tuple, list)):
        return (isinstance(b, (tuple, list)) and len(a) == len(b)
                and all(same_expr(x, y) for x, y in zip(a, b)))
    return type(a) is type(b) and a == b
