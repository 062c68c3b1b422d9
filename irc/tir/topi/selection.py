"""Loop kernels whose results are selections of a length known only at run time:
``unique`` (ONNX Unique) and ``non_max_suppression`` (ONNX NonMaxSuppression), with the
stable merge sort of positions they share (:func:`sort_positions`).

Each writes its selection into outputs sized for the largest one possible and the number
selected into a one-element int64 ``count`` buffer; the graph binds that count at run time
and keeps the leading entries (``irc.frontend.onnx.ops_selection``). Sorting needs
workspace buffers of the input's length, which the legalization passes as extra outputs
(a kernel allocates only small ``local`` cells: :func:`irc.tir.topi.index.cell`).
Written as loop IR in one opaque block (:func:`irc.tir.topi.index.loop_func`): serial, and
on a GPU one thread.
"""

from __future__ import annotations

from typing import Callable

from ...core import dtype as dt
from ...core.diagnostics import IRTypeError
from ..buffer import Buffer
from ..expr import PrimExpr, Var, cast, const, floordiv, floormod, max_, min_, select
from ..intrin import isnan
from ..stmt import AssertStmt, IfThenElse, Stmt, no_op, seq
from .index import IDX, cell, let, loop_nest, serial_range, store

# ``right_first(a, b)``: a statement to run first and the condition, read after it, that
# element ``b`` (from the right run) sorts strictly before element ``a`` (from the left).
Order = Callable[[PrimExpr, PrimExpr], "tuple[Stmt, PrimExpr]"]

_ONE = const(1, IDX)
_ZERO = const(0, IDX)
# Doubling the run width this many times covers any int64 length.
_MAX_PASSES = 63


class _SortCells:
    def __init__(self) -> None:
        self.left = cell("sort_left")
        self.right = cell("sort_right")
        self.width = cell("sort_width")
        self.passes = cell("sort_passes")
        self.take_right = cell("sort_take_right", "bool")


def sort_positions(perm: Buffer, tmp: Buffer, n: PrimExpr, right_first: Order) -> Stmt:
    """Reorder ``perm[0:n]`` (int64 positions) by ``right_first``, stably (equal elements
    keep their order): a bottom-up merge sort, runs of 1, 2, 4, ... merged between ``perm``
    and ``tmp`` (both at least ``n`` long) and the result copied back to ``perm`` after an
    odd number of passes. O(n log n) comparisons."""
    c = _SortCells()

    def merge(src: Buffer, dst: Buffer, width: PrimExpr) -> Stmt:
        def run(k: PrimExpr) -> Stmt:
            return let("lo", k * (width * 2), lambda lo: let(
                "mid", min_(lo + width, n), lambda mid: let(
                    "hi", min_(lo + width * 2, n), lambda hi: seq(
                        store(c.left, lo), store(c.right, mid),
                        serial_range("t", lo, hi, lambda t: step(t, mid, hi))))))

        def step(t: PrimExpr, mid: PrimExpr, hi: PrimExpr) -> Stmt:
            i, j = c.left[_ZERO], c.right[_ZERO]
            compare = let("a", src[i], lambda a: let("b", src[j], lambda b: seq(
                *_order(right_first, a, b, c.take_right))))
            decide = seq(
                store(c.take_right, const(False)),
                IfThenElse(condition=i >= mid, then_case=store(c.take_right, const(True)),
                           else_case=IfThenElse(condition=j < hi, then_case=compare)))
            move = IfThenElse(
                condition=c.take_right[_ZERO],
                then_case=seq(store(dst, src[j], t), store(c.right, j + _ONE)),
                else_case=seq(store(dst, src[i], t), store(c.left, i + _ONE)))
            return seq(decide, move)

        runs = floordiv(n + width * 2 - _ONE, width * 2)
        return serial_range("run", _ZERO, runs, run)

    def one_pass(p: Var) -> Stmt:
        del p
        return let("width", c.width[_ZERO], lambda w: IfThenElse(
            condition=w < n,
            then_case=seq(
                IfThenElse(condition=floormod(c.passes[_ZERO], const(2, IDX)) == _ZERO,
                           then_case=merge(perm, tmp, w), else_case=merge(tmp, perm, w)),
                store(c.passes, c.passes[_ZERO] + _ONE),
                store(c.width, w * 2))))

    copy_back = IfThenElse(
        condition=floormod(c.passes[_ZERO], const(2, IDX)) == _ONE,
        then_case=serial_range("t", _ZERO, n, lambda t: store(perm, tmp[t], t)))
    passes = loop_nest([_MAX_PASSES], lambda v: one_pass(v[0]), "pass")
    return seq(store(c.width, _ONE), store(c.passes, _ZERO), passes, copy_back)


def _order(right_first: Order, a: PrimExpr, b: PrimExpr, flag: Buffer) -> list[Stmt]:
    prep, cond = right_first(a, b)
    return [prep, IfThenElse(condition=cond, then_case=store(flag, const(True)))]


# ---------------------------------------------------------------------------------
# unique
# ---------------------------------------------------------------------------------


def _less(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``a < b`` with NaN after every number (numpy's sort order)."""
    if dt.is_float(a.dtype):
        return (a < b) | (~isnan(a) & isnan(b))
    return a < b


def compare_rows(x: Buffer, ra: PrimExpr, rb: PrimExpr, out: Buffer) -> Stmt:
    """``out[0]`` (int64) = -1, 0 or 1 as row ``ra`` of the 2-d ``x`` is lexicographically
    before, equal to (NaN equal to NaN) or after row ``rb``."""
    def element(q: PrimExpr) -> Stmt:
        a, b = x[ra, q], x[rb, q]
        verdict = select(_less(a, b), const(-1, IDX), select(_less(b, a), _ONE, _ZERO))
        return IfThenElse(condition=out[_ZERO] == _ZERO, then_case=store(out, verdict))

    return seq(store(out, _ZERO), serial_range("q", _ZERO, x.shape[1], element))


def unique(x: Buffer, indices: Buffer, inverse: Buffer, counts: Buffer, count: Buffer,
           perm: Buffer, tmp: Buffer, aux: Buffer, sorted_: bool = True) -> Stmt:
    """The distinct rows of the 2-d ``x`` (``n`` rows): ``count[0]`` of them; for each,
    ``indices`` = the row where it first occurs and ``counts`` = how many rows equal it,
    in lexicographic order of the rows (``sorted_``) or in order of first occurrence;
    ``inverse[i]`` = the position of row ``i``'s value among them. NaN equals NaN and
    sorts last. ``perm``, ``tmp``, ``aux`` (int64, ``n`` each) are workspace."""
    n = x.shape[0]
    cmp = cell("cmp")
    rank = cell("rank")
    new_group = cell("new_group", "bool")

    def right_first(a: PrimExpr, b: PrimExpr) -> tuple[Stmt, PrimExpr]:
        return compare_rows(x, a, b, cmp), cmp[_ZERO] > _ZERO

    first_of = indices if sorted_ else aux
    size_of = counts if sorted_ else tmp

    def group(t: PrimExpr) -> Stmt:
        def body(p: Var) -> Stmt:
            differs = seq(compare_rows(x, perm[t - _ONE], p, cmp),
                          store(new_group, cmp[_ZERO] != _ZERO))
            start = IfThenElse(condition=new_group[_ZERO], then_case=let(
                "g", count[_ZERO], lambda g: seq(store(first_of, p, g), store(size_of, _ZERO, g),
                                                 store(count, g + _ONE))))
            return seq(
                IfThenElse(condition=t == _ZERO, then_case=store(new_group, const(True)),
                           else_case=differs),
                start,
                let("g", count[_ZERO] - _ONE, lambda g: seq(
                    store(size_of, size_of[g] + _ONE, g), store(inverse, g, p))))
        return let("p", perm[t], body)

    stmts = [serial_range("i", _ZERO, n, lambda i: store(perm, i, i)),
             sort_positions(perm, tmp, n, right_first),
             store(count, _ZERO),
             serial_range("t", _ZERO, n, group)]
    if not sorted_:
        # Groups in order of first occurrence: perm[g] becomes group g's rank.
        def rank_group(i: PrimExpr) -> Stmt:
            return let("g", inverse[i], lambda g: IfThenElse(
                condition=aux[g] == i, then_case=let("r", rank[_ZERO], lambda r: seq(
                    store(perm, r, g), store(indices, i, r), store(counts, tmp[g], r),
                    store(rank, r + _ONE)))))
        stmts += [store(rank, _ZERO), serial_range("i", _ZERO, n, rank_group),
                  serial_range("i", _ZERO, n, lambda i: store(inverse, perm[inverse[i]], i))]
    return seq(*stmts)


# ---------------------------------------------------------------------------------
# non_max_suppression
# ---------------------------------------------------------------------------------


def _corners(box: Callable[[int], PrimExpr], center_point_box: bool
             ) -> tuple[PrimExpr, PrimExpr, PrimExpr, PrimExpr]:
    """(x_min, x_max, y_min, y_max) of a box given as ``[y1, x1, y2, x2]`` (any two
    opposite corners) or, with ``center_point_box``, ``[x_center, y_center, width,
    height]``."""
    if center_point_box:
        two = const(2, box(0).dtype)
        half_w, half_h = box(2) / two, box(3) / two
        return box(0) - half_w, box(0) + half_w, box(1) - half_h, box(1) + half_h
    return (min_(box(1), box(3)), max_(box(1), box(3)), min_(box(0), box(2)),
            max_(box(0), box(2)))


def box_overlaps(a: Callable[[int], PrimExpr], b: Callable[[int], PrimExpr],
                 threshold: PrimExpr, center_point_box: bool) -> PrimExpr:
    """Whether the intersection over union of boxes ``a`` and ``b`` (coordinate ``k`` of
    each as ``a(k)``) exceeds ``threshold``, computed as ONNX Runtime does: boxes that do
    not intersect, or of zero area, never do."""
    ax0, ax1, ay0, ay1 = _corners(a, center_point_box)
    bx0, bx1, by0, by1 = _corners(b, center_point_box)
    ix0, ix1 = max_(ax0, bx0), min_(ax1, bx1)
    iy0, iy1 = max_(ay0, by0), min_(ay1, by1)
    zero = const(0, ax0.dtype)
    inter = (ix1 - ix0) * (iy1 - iy0)
    area_a = (ax1 - ax0) * (ay1 - ay0)
    area_b = (bx1 - bx0) * (by1 - by0)
    union = area_a + area_b - inter
    valid = (ix1 > ix0) & (iy1 > iy0) & (inter > zero) & (area_a > zero) & \
        (area_b > zero) & (union > zero)
    return valid & (inter / select(valid, union, const(1, ax0.dtype)) > threshold)


def non_max_suppression(boxes: Buffer, scores: Buffer, max_per_class: Buffer,
                        iou_threshold: Buffer, score_threshold: Buffer | None,
                        selected: Buffer, count: Buffer, perm: Buffer, tmp: Buffer,
                        center_point_box: bool = False,
                        what: str = "non_max_suppression") -> Stmt:
    """Greedy non-maximum suppression per batch and class (ONNX NonMaxSuppression):
    the boxes of ``boxes[b]`` (``[batch, n, 4]``) whose ``scores[b, c]``
    (``[batch, classes, n]``) exceed ``score_threshold[()]`` (all when it is None), by
    decreasing score (equal scores in box order), each kept unless its IoU with a box
    already kept for that class exceeds ``iou_threshold[()]``, at most
    ``max_per_class[()]`` per class. ``selected`` (int64 ``[capacity, 3]``) receives
    ``(batch, class, box)`` of each kept box in that order, ``count[0]`` how many.
    ``perm`` and ``tmp`` (int64 ``[n]``) are workspace. An IoU threshold outside [0, 1]
    fails the call, as in ONNX Runtime."""
    nb, nc, n = scores.shape
    dtype = boxes.dtype
    if not dt.is_float(dtype) or scores.dtype != dtype:
        raise IRTypeError(f"topi.non_max_suppression: boxes and scores must share a float "
                          f"dtype, got {boxes.dtype} and {scores.dtype}")
    iou = iou_threshold[()]
    limit = cast(max_per_class[()], IDX)
    candidates = cell("candidates")
    hit = cell("suppressed", "bool")
    label = what.replace("{", "{{").replace("}", "}}")
    check = AssertStmt(condition=(iou >= const(0, dtype)) & (iou <= const(1, dtype)),
                       message=f"{label}: iou_threshold must be in [0, 1]", body=no_op())

    def per_class(b: PrimExpr, c: PrimExpr) -> Stmt:
        def gather(i: PrimExpr) -> Stmt:
            keep = store(perm, i, candidates[_ZERO])
            keep = seq(keep, store(candidates, candidates[_ZERO] + _ONE))
            if score_threshold is None:
                return keep
            return IfThenElse(condition=scores[b, c, i] > score_threshold[()], then_case=keep)

        def right_first(p: PrimExpr, q: PrimExpr) -> tuple[Stmt, PrimExpr]:
            return no_op(), scores[b, c, q] > scores[b, c, p]

        def consider(start: Var, t: PrimExpr) -> Stmt:
            def test(idx: Var) -> Stmt:
                def against(s: PrimExpr) -> Stmt:
                    other = selected[start + s, const(2, IDX)]
                    overlaps = box_overlaps(lambda k: boxes[b, idx, const(k, IDX)],
                                            lambda k: boxes[b, other, const(k, IDX)],
                                            iou, center_point_box)
                    return IfThenElse(condition=~hit[_ZERO] & overlaps,
                                      then_case=store(hit, const(True)))
                keep = let("row", count[_ZERO], lambda r: seq(
                    store(selected, b, r, _ZERO), store(selected, c, r, _ONE),
                    store(selected, idx, r, const(2, IDX)), store(count, r + _ONE)))
                return seq(store(hit, const(False)),
                           let("kept", count[_ZERO] - start,
                                lambda kept: serial_range("s", _ZERO, kept, against)),
                           IfThenElse(condition=~hit[_ZERO], then_case=keep))
            return IfThenElse(condition=count[_ZERO] - start < limit,
                              then_case=let("box", perm[t], test))

        return let("start", count[_ZERO], lambda start: seq(
            store(candidates, _ZERO),
            serial_range("i", _ZERO, n, gather),
            let("num_candidates", candidates[_ZERO], lambda m: seq(
                sort_positions(perm, tmp, m, right_first),
                serial_range("t", _ZERO, m, lambda t: consider(start, t))))))

    body = loop_nest([nb, nc], lambda v: per_class(v[0], v[1]), "bc")
    return seq(check, store(count, _ZERO), body)
