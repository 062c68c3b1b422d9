"""Helpers shared by the passes (not a pass): mapping over child statements."""

from __future__ import annotations

from typing import Callable, Iterator

from ...core.node import node_fields
from ..expr import IntImm
from ..stmt import Evaluate, SeqStmt, Stmt, no_op


def map_stmt_children(s: Stmt, fn: Callable[[Stmt], Stmt]) -> Stmt:
    """``s`` with ``fn`` applied to each direct child statement (copy on write).
    Sequences are re-flattened so a child may become a SeqStmt or a no-op."""
    if type(s) is SeqStmt:
        new = [fn(x) for x in s.seq]
        if all(a is b for a, b in zip(new, s.seq)):
            return s
        return flat_seq(new)
    changes = {}
    for f in node_fields(type(s)):
        if f == "span":
            continue
        v = getattr(s, f)
        if isinstance(v, Stmt):
            nv = fn(v)
            if nv is not v:
                changes[f] = nv
    return s.replace(**changes) if changes else s


def flat_seq(stmts) -> Stmt:
    """Like :func:`irc.tir.seq` for a list of statements (nested sequences flattened,
    no-ops dropped), without the per-element overhead."""
    flat: list[Stmt] = []
    for s in stmts:
        t = type(s)
        if t is SeqStmt:
            flat.extend(s.seq)
        elif not (t is Evaluate and type(s.value) is IntImm):
            flat.append(s)
    if not flat:
        return no_op()
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(seq=tuple(flat))


def iter_stmts(s: Stmt) -> Iterator[Stmt]:
    """Every statement of ``s`` (pre-order by a stack; the order is not to be relied
    on), blocks' bodies excluded."""
    stack = [s]
    while stack:
        x = stack.pop()
        yield x
        for f in ("body", "then_case", "else_case", "seq"):
            v = getattr(x, f, None)
            if isinstance(v, Stmt):
                stack.append(v)
            elif isinstance(v, (list, tuple)):
                stack.extend(y for y in v if isinstance(y, Stmt))
