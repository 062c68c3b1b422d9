"""Generic visitors and mutators over IR nodes of both levels.

A handler is a method ``visit_<ClassName>``; the most specific class in the node's MRO
wins (so ``visit_BinaryOp`` handles Add, Sub, ... unless ``visit_Add`` exists).
Without a handler, the generic traversal walks every dataclass field that holds a node,
a tuple/list of nodes or a dict of nodes.

:class:`Mutator` copies on write: a node whose children are unchanged is returned as is.
Binding nodes (variables, buffers) are memoized, so every reference to one buffer is
rewritten to the same new buffer.
"""

from __future__ import annotations

from typing import Any, Callable

from .node import Node, node_fields


def _handler(visitor_cls: type, node_cls: type) -> Callable[[Any, Any], Any] | None:
    """The visitor class's handler function for a node class (None: generic), cached in
    the class's own table (see :class:`_Handlers`)."""
    cache = visitor_cls._irc_handlers
    try:
        return cache[node_cls]
    except KeyError:
        pass
    found = None
    for klass in node_cls.__mro__:
        if klass is Node or klass is object:
            break
        found = getattr(visitor_cls, f"visit_{klass.__name__}", None)
        if found is not None:
            break
    cache[node_cls] = found
    return found


class _Handlers:
    """Gives every visitor class its own handler table (node class -> handler function
    or None), created with the class: it lives on the class itself, so classes defined
    inside functions are freed with their table (a global table keyed by class would
    keep them alive). Dispatch is then one dictionary lookup and a plain call."""

    _irc_handlers: dict[type, Any] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._irc_handlers = {}


# Fields the generic traversals skip.
_SKIPPED = frozenset(["span"])


def _child_fields(node_cls: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(node_cls)
    if fields is None:
        fields = tuple(f for f in node_fields(node_cls) if f not in _SKIPPED)
        _CHILD_FIELDS[node_cls] = fields
    return fields


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
_CONTAINERS = (Node, tuple, list, dict)


class Visitor(_Handlers):
    """Read-only traversal. Override ``visit_<Class>`` and call ``generic_visit`` inside
    it to keep descending."""

    def visit(self, n: Any) -> None:
        if isinstance(n, Node):
            cls = type(n)
            try:
                fn = self._irc_handlers[cls]
            except KeyError:
                fn = _handler(type(self), cls)
            if fn is None:
                self.generic_visit(n)
            else:
                fn(self, n)
        elif isinstance(n, (tuple, list)):
            for x in n:
                self.visit(x)
        elif isinstance(n, dict):
            for k, v in n.items():
                if isinstance(k, Node):
                    self.visit(k)
                self.visit(v)

    def generic_visit(self, n: Node) -> None:
        fields = _CHILD_FIELDS.get(type(n)) or _child_fields(type(n))
        for f in fields:
            v = getattr(n, f)
            if isinstance(v, _CONTAINERS):
                self.visit(v)


class Mutator(_Handlers):
    """Copy-on-write rewriting. ``visit_<Class>`` returns the replacement node."""

    def __init__(self) -> None:
        self._memo: dict[int, Any] = {}

    def visit(self, n: Any) -> Any:
        if isinstance(n, Node):
            binding = type(n)._sequal_binding
            if binding:
                hit = self._memo.get(id(n))
                if hit is not None:
                    return hit[1]
            cls = type(n)
            try:
                fn = self._irc_handlers[cls]
            except KeyError:
                fn = _handler(type(self), cls)
            result = self.generic_visit(n) if fn is None else fn(self, n)
            if binding:
                self._memo[id(n)] = (n, result)
            return result
        if isinstance(n, tuple):
            new = tuple(self.visit(x) for x in n)
            return n if all(a is b for a, b in zip(new, n)) else new
        if isinstance(n, list):
            new_l = [self.visit(x) for x in n]
            return n if all(a is b for a, b in zip(new_l, n)) else new_l
        if isinstance(n, dict):
            changed = False
            out = {}
            for k, v in n.items():
                nk = self.visit(k) if isinstance(k, Node) else k
                nv = self.visit(v)
                changed |= nk is not k or nv is not v
                out[nk] = nv
            return out if changed else n
        return n

    def generic_visit(self, n: Node) -> Node:
        changes = {}
        fields = _CHILD_FIELDS.get(type(n)) or _child_fields(type(n))
        for f in fields:
            v = getattr(n, f)
            if isinstance(v, _CONTAINERS):
                nv = self.visit(v)
                if nv is not v:
                    changes[f] = nv
        return n.replace(**changes) if changes else n


class _PostOrder(Visitor):
    # One class for all calls: a class per call would stay alive in the handler cache,
    # together with everything its callback refers to.
    def __init__(self, fn: Callable[[Node], None]) -> None:
        self.fn = fn

    def generic_visit(self, x: Node) -> None:
        super().generic_visit(x)
        self.fn(x)


def post_order_visit(n: Any, fn: Callable[[Node], None]) -> None:
    """Call ``fn`` on every node under ``n`` (children first)."""
    _PostOrder(fn).visit(n)


def collect(n: Any, predicate: Callable[[Node], bool]) -> list[Node]:
    """All nodes under ``n`` for which ``predicate`` holds, in post order, without repeats."""
    seen: set[int] = set()
    out: list[Node] = []

    def fn(x: Node) -> None:
        if id(x) not in seen and predicate(x):
            seen.add(id(x))
            out.append(x)

    post_order_visit(n, fn)
    return out
