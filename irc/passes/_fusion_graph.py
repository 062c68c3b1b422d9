"""The dataflow graph and the post-dominator based partitioner used by ``FuseOps``.

Nodes are the bindings of one dataflow block in program order (a topological order);
an edge goes from a producer to each consumer and carries the consumer's pattern (a
broadcast consumer whose output has the producer's shape counts as elementwise). A node
whose value leaves the block (a block output) has an edge to an implicit sink and so no
post-dominator.

Partitioning follows the classic scheme: each node starts in its own group (a union-find
forest); a node is merged into the group of its immediate post-dominator when every
node on every path between them satisfies a condition depending on the pattern, in three
phases — (0) an out-elementwise-fusable node (conv2d, matmul) takes its elementwise
epilogue and elementwise/broadcast nodes join their injective or reduction consumers,
(1) injective nodes and tuples join their consumers, (2) injective nodes join tuples that
were themselves fused into injective consumers. ``max_fuse_depth`` bounds a group's size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..ir.op import BROADCAST, COMM_REDUCE, ELEMWISE, INJECTIVE, OPAQUE, OUT_ELEMWISE_FUSABLE
from ..ir.op import TUPLE as TUPLE_PATTERN


@dataclass(eq=False)
class GraphNode:
    """One binding: its index in the block, its pattern, consumers (index, edge
    pattern) and whether its value is used outside the block."""

    index: int
    pattern: int
    extern_ref: bool = False
    outputs: list[tuple[int, int]] = field(default_factory=list)
    # An injective operator reading two or more computed tensors (a concatenation): it
    # never shares a group with more than elementwise work (a convolution, a Winograd
    # transform), as its other inputs would be copied inside that work's kernel, which
    # the schedule rules then cannot tile (the work is inlined into the copy, per
    # element of the joined result).
    joins: bool = False


@dataclass(eq=False)
class _DomNode:
    depth: int = 1
    parent: _DomNode | None = None
    pattern: int = ELEMWISE
    index: int = -1


@dataclass(eq=False)
class Group:
    """A union-find set of nodes; the root's fields describe the whole group."""

    pattern: int
    parent: Group | None = None
    num_nodes: int = 1
    anchored: bool = False
    # The largest pattern of the group's members other than joining ones (the root's
    # ``pattern`` changes only when an anchored group joins), and whether a member
    # joins several computed tensors (see ``GraphNode.joins``).
    heaviest: int = ELEMWISE
    joins: bool = False

    def find_root(self) -> Group:
        """The group this one was merged into (itself when it is a root)."""
        g = self
        while g.parent is not None:
            g = g.parent
        # Path compression keeps later lookups short.
        node = self
        while node.parent is not None and node.parent is not g:
            nxt = node.parent
            node.parent = g
            node = nxt
        return g


def _post_dominators(nodes: list[GraphNode]) -> list[_DomNode]:
    tree = [_DomNode(index=i) for i in range(len(nodes))]

    def lca(a: _DomNode | None, b: _DomNode | None, pattern: list[int]) -> _DomNode | None:
        while a is not b:
            if a is None or b is None:
                return None
            if a.depth < b.depth:
                pattern[0] = max(pattern[0], b.pattern)
                b = b.parent
            elif b.depth < a.depth:
                pattern[0] = max(pattern[0], a.pattern)
                a = a.parent
            else:
                pattern[0] = max(pattern[0], a.pattern, b.pattern)
                a, b = a.parent, b.parent
        return a

    for i in range(len(nodes) - 1, -1, -1):
        node = nodes[i]
        t = tree[i]
        if node.extern_ref or not node.outputs:
            t.depth, t.parent, t.pattern = 1, None, OPAQUE if node.extern_ref else ELEMWISE
            continue
        pattern = [ELEMWISE]
        first, edge = node.outputs[0]
        parent: _DomNode | None = tree[first]
        pattern[0] = max(pattern[0], edge)
        for out, edge in node.outputs[1:]:
            parent = lca(parent, tree[out], pattern)
            pattern[0] = max(pattern[0], edge)
        t.parent = parent
        t.depth = parent.depth + 1 if parent is not None else 1
        t.pattern = pattern[0]
    return tree


class GraphPartitioner:
    """Groups the nodes of one dataflow block for fusion (see the module docstring)."""

    def __init__(self, nodes: list[GraphNode], max_fuse_depth: int = 256):
        self.nodes = nodes
        self.max_fuse_depth = max_fuse_depth
        self.groups = [Group(pattern=n.pattern, anchored=n.pattern == OUT_ELEMWISE_FUSABLE,
                             heaviest=ELEMWISE if n.joins else n.pattern, joins=n.joins)
                       for n in nodes]
        self._visited: set[int] = set()
        self._any_joins = any(n.joins for n in nodes)

    def partition(self) -> list[Group]:
        """The group of each node (compare roots with ``find_root``)."""
        tree = _post_dominators(self.nodes)
        for phase in range(3):
            self._run_phase(phase, tree)
        return [g.find_root() for g in self.groups]

    # -- path checks and merging ----------------------------------------------------------
    def _check_path(self, src: int, sink: int, fcond: Callable[[int, bool], bool]) -> bool:
        self._visited = set()

        def walk(i: int) -> bool:
            if i in self._visited:
                return True
            self._visited.add(i)
            if not fcond(self.groups[i].find_root().pattern, i == sink):
                return False
            if i == sink:
                return True
            return all(walk(o) for o, _ in self.nodes[i].outputs)

        return all(walk(o) for o, _ in self.nodes[src].outputs)

    def _merge(self, child: Group, parent: Group) -> None:
        child, parent = child.find_root(), parent.find_root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        parent.heaviest = max(parent.heaviest, child.heaviest)
        parent.joins = parent.joins or child.joins
        child.parent = parent
        if child.anchored:
            parent.anchored = True
            parent.pattern = max(child.pattern, parent.pattern)

    def _joins_heavy(self, src: int, sink: int) -> bool:
        """Whether ``src`` must not be fused into ``sink``: a group with a joining node
        (a concatenation) takes no producers (their elementwise tails stay with the
        convolutions they follow, and the join is a copy), and never shares a group
        with more than elementwise work (the groups on the paths from ``src`` to
        ``sink``, both included)."""
        if not self._any_joins:
            return False
        if self.groups[sink].find_root().joins:
            return True
        seen: set[int] = set()
        roots: list[Group] = []

        def walk(i: int) -> None:
            if i in seen:
                return
            seen.add(i)
            roots.append(self.groups[i].find_root())
            if i != sink:
                for o, _ in self.nodes[i].outputs:
                    walk(o)

        walk(src)
        return any(r.joins for r in roots) and any(r.heaviest > BROADCAST for r in roots)

    def _commit_fuse(self, src: int, sink: int) -> None:
        target = self.groups[sink]
        self._visited = set()

        def walk(i: int) -> None:
            if i == sink or i in self._visited:
                return
            self._visited.add(i)
            self._merge(self.groups[i], target)
            for o, _ in self.nodes[i].outputs:
                walk(o)

        walk(src)

    def _count_fused_nodes(self, child: int, dom_parent: int) -> int:
        self._visited = set()

        def count(i: int) -> int:
            if i == dom_parent or i in self._visited:
                return 0
            self._visited.add(i)
            total = self.groups[i].find_root().num_nodes
            return total + sum(count(o) for o, _ in self.nodes[i].outputs)

        return self.groups[dom_parent].find_root().num_nodes + count(child)

    # -- phases -----------------------------------------------------------------------------
    def _run_phase(self, phase: int, tree: list[_DomNode]) -> None:
        for i in range(len(self.nodes)):
            group = self.groups[i]
            dom = tree[i]
            if group.pattern == OPAQUE:
                continue
            if dom.parent is None:
                continue
            parent = dom.parent.index
            if self._count_fused_nodes(i, parent) > self.max_fuse_depth:
                continue
            parent_group = self.groups[parent]
            if phase == 2:
                self._phase_tuple(i, group, dom, parent, parent_group)
                continue
            if group.find_root() is parent_group.find_root():
                continue
            if parent_group.find_root().pattern == TUPLE_PATTERN:
                continue
            if self._joins_heavy(i, parent):
                continue
            kind = group.pattern
            if kind == OUT_ELEMWISE_FUSABLE:
                if phase != 0:
                    continue
                if dom.pattern == ELEMWISE and self._check_path(
                        i, parent, lambda k, is_sink: k <= BROADCAST):
                    self._commit_fuse(i, parent)
            elif kind <= BROADCAST:
                if dom.pattern <= INJECTIVE or dom.pattern == COMM_REDUCE:
                    def cond(k: int, is_sink: bool) -> bool:
                        if not is_sink:
                            return k <= INJECTIVE
                        return k <= BROADCAST or k in (COMM_REDUCE, INJECTIVE,
                                                       OUT_ELEMWISE_FUSABLE)
                    if self._check_path(i, parent, cond):
                        self._commit_fuse(i, parent)
            elif kind in (INJECTIVE, TUPLE_PATTERN):
                if phase != 1:
                    continue
                if self._check_path(i, parent, lambda k, is_sink: k <= INJECTIVE):
                    self._commit_fuse(i, parent)

    def _phase_tuple(self, i: int, group: Group, dom: _DomNode, parent: int,
                     parent_group: Group) -> None:
        # Injective nodes join tuples that were fused into injective consumers.
        if group.pattern > INJECTIVE:
            return
        root = parent_group.find_root()
        if root.pattern == TUPLE_PATTERN:
            return
        if parent_group.pattern == TUPLE_PATTERN and root.pattern <= INJECTIVE:
            if self._check_path(i, parent, lambda k, is_sink: k <= INJECTIVE):
                self._commit_fuse(i, parent)


__all__ = ["GraphNode", "GraphPartitioner", "Group"]
