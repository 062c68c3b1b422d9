"""Winograd convolution F(m x m, 3 x 3) in NHWC: the transform matrices, the input and
output transforms as loop computations, and the weight transform (done once, at compile
time, on a constant kernel).

A stride-1 3 x 3 convolution computes each ``m x m`` output tile from an
``a x a`` input tile (``a = m + 2``) as ``A^T [(G g G^T) * (B^T d B)] A``: the
products become ``a * a`` independent matrix products over the channels (a batched
GEMM, ``[a, a, P, Ci] x [a, a, Ci, Co]``, P the number of tiles), with
``a^2 / (9 m^2)`` of the direct convolution's multiplications — 0.44 for m = 2 and
0.25 for m = 4.

At stride 2 an output tile's input span is ``a = 2m + 1`` and tiles start ``2m``
apart. Along each axis the even inputs meet the taps ``g[0], g[2]`` (a stride-1
correlation with a 2-tap filter, F(m, 2): m + 1 products) and the odd inputs meet
``g[1]`` alone (m products): the polyphase split, whose three matrices have the same
shapes and roles as above, so the transforms, the batched product and the weight
transform are the same computations with ``a = 2m + 1`` — 0.69 of the direct
multiplications for m = 2 and 0.56 for m = 4.

The matrices come from the Cook-Toom construction over the interpolation points
``0, 1, -1, 2, -2, ...`` and infinity, computed exactly in rationals: ``A[j, i] =
p_j^i`` and ``G[j, k] = p_j^k / f_j`` with ``f_j = prod_{l != j} (p_j - p_l)`` for
the finite points, a unit row for infinity; ``B^T`` is then the inverse of the
``a x a`` matrix whose column ``j`` holds ``A[j, i] G[j, k]`` indexed by ``s = i + k``
(that product depends on ``i + k`` only, which is what makes the identity hold).

The transforms are written as sparse sums of their few non-zero coefficients,
selected by the transform coordinate (``select`` over a tile-local index); the CPU
rule for them (:mod:`irc.dlight.cpu.winograd`) unrolls those small loops, so each
``select`` folds away and the common row sums are shared.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Sequence

import numpy as np

from ....core.diagnostics import IRTypeError
from ...expr import PrimExpr, all, const, floordiv, floormod, if_then_else, select
from ...te.tensor import Tensor, compute
from ..utils import as_index, const_int, index_dtype

# Output tile sizes with well-conditioned points in float32.
TILE_SIZES = (2, 4)
KERNEL = 3
INPUT_BLOCK = "winograd_input"
OUTPUT_BLOCK = "winograd_output"
# Block annotations read by the CPU schedule rule: which transform ("input" or
# "output") and the output tile size m.
ANNOTATION = "winograd_transform"
TILE_ANNOTATION = "winograd_tile"

_POINTS = (Fraction(0), Fraction(1), Fraction(-1), Fraction(2), Fraction(-2),
           Fraction(1, 2), Fraction(-1, 2))


def _inverse(mat: list[list[Fraction]]) -> list[list[Fraction]]:
    n = len(mat)
    aug = [row[:] + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(mat)]
    for col in range(n):
        piv = next(r for r in range(col, n) if aug[r][col] != 0)
        aug[col], aug[piv] = aug[piv], aug[col]
        p = aug[col][col]
        aug[col] = [x / p for x in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [x - f * y for x, y in zip(aug[r], aug[col])]
    return [row[n:] for row in aug]


def input_span(m: int, stride: int = 1, r: int = KERNEL) -> int:
    """``a``, the input elements (and transform positions) of ``m`` outputs along one
    dimension: ``stride * (m - 1) + r``."""
    return stride * (m - 1) + r


@lru_cache(maxsize=None)
def winograd_matrices(m: int, r: int = KERNEL, stride: int = 1
                      ) -> tuple[tuple[tuple[Fraction, ...], ...], ...]:
    """``(AT, BT, G)`` of F(m, r) as exact rationals: ``AT`` is m x a, ``BT`` a x a and
    ``G`` a x r, with ``a = input_span(m, stride, r)``. One dimension of the 2-D
    transform: ``y = AT [(G g) * (BT d)]`` for an input row ``d`` of a elements and a
    filter ``g`` of r, where ``y[i] = sum_k g[k] d[stride * i + k]``.

    Stride 2 (r = 3 only) is the polyphase split: the even inputs ``d[0], d[2], ...,
    d[2m]`` meet the taps ``g[0], g[2]`` in F(m, 2) (m + 1 positions), the odd inputs
    ``d[1], ..., d[2m - 1]`` meet ``g[1]`` alone (m positions, the identity): a = 2m + 1
    positions in all, against the direct 3m multiplications."""
    if stride == 2:
        if r != KERNEL:
            raise IRTypeError(f"Winograd with stride 2 takes a {KERNEL}-tap filter, got {r}")
        return _stride2_matrices(m)
    if stride != 1:
        raise IRTypeError(f"Winograd supports strides 1 and 2, got {stride}")
    if m < 1 or r < 1 or m + r - 2 > len(_POINTS):
        raise IRTypeError(f"Winograd F({m}, {r}) is not supported: m + r - 2 must be at most "
                          f"{len(_POINTS)}")
    a = m + r - 1
    pts = _POINTS[:a - 1]
    f = []
    for j, pj in enumerate(pts):
        prod = Fraction(1)
        for k, pk in enumerate(pts):
            if k != j:
                prod *= pj - pk
        f.append(prod)
    # Column j of the a x a system: A[j, i] * G[j, k] as a function of s = i + k.
    at = [[pts[j] ** i for j in range(a - 1)] + [Fraction(int(i == m - 1))] for i in range(m)]
    g = [[pts[j] ** k / f[j] for k in range(r)] for j in range(a - 1)]
    g.append([Fraction(int(k == r - 1)) for k in range(r)])
    system = [[pts[j] ** s / f[j] for j in range(a - 1)] + [Fraction(int(s == a - 1))]
              for s in range(a)]
    bt = _inverse(system)
    return (tuple(tuple(row) for row in at), tuple(tuple(row) for row in bt),
            tuple(tuple(row) for row in g))


def _stride2_matrices(m: int) -> tuple[tuple[tuple[Fraction, ...], ...], ...]:
    """F(m, 3) at stride 2 from F(m, 2) on the even inputs and the identity on the odd
    ones (see ``winograd_matrices``): positions ``0..m`` are the even part's, ``m + 1 +
    k`` holds ``d[2k + 1]``."""
    at_e, bt_e, g_e = winograd_matrices(m, 2)
    a = input_span(m, 2)
    zero, one = Fraction(0), Fraction(1)
    bt = [[zero] * a for _ in range(a)]
    g = [[zero] * KERNEL for _ in range(a)]
    at = [[zero] * a for _ in range(m)]
    for r in range(m + 1):
        for k in range(m + 1):
            bt[r][2 * k] = bt_e[r][k]
        g[r][0], g[r][2] = g_e[r][0], g_e[r][1]
        for i in range(m):
            at[i][r] = at_e[i][r]
    for k in range(m):
        bt[m + 1 + k][2 * k + 1] = one
        g[m + 1 + k][1] = one
        at[k][m + 1 + k] = one
    return (tuple(tuple(row) for row in at), tuple(tuple(row) for row in bt),
            tuple(tuple(row) for row in g))


def winograd_weight_transform(kernel: np.ndarray, m: int, stride: int = 1) -> np.ndarray:
    """``U[x, y, ci, co] = (G g[:, :, ci, co] G^T)[x, y]`` of an HWIO 3 x 3 kernel,
    computed in the kernel's precision (at least float32) and returned in its dtype
    (``[a, a, Ci, Co]``). Done at compile time on constant weights."""
    if kernel.ndim != 4 or kernel.shape[:2] != (KERNEL, KERNEL):
        raise IRTypeError(f"winograd_weight_transform takes an HWIO 3x3 kernel, got shape "
                          f"{kernel.shape}")
    _, _, g = winograd_matrices(m, stride=stride)
    gm = np.array([[float(x) for x in row] for row in g])
    a = gm.shape[0]
    # U[(x, y), :] = sum over (h, w) of G[x, h] G[y, w] g[(h, w), :]: one matrix product
    # with the Kronecker product of G with itself, in the kernel's precision (at least
    # float32; each value sums 9 products, so it is within a few float32 roundings).
    work = np.promote_types(kernel.dtype, np.float32)
    both = np.kron(gm, gm).astype(work)                                # [(x, y), (h, w)]
    u = both @ kernel.reshape(KERNEL * KERNEL, -1).astype(work, copy=False)
    return u.astype(kernel.dtype, copy=False).reshape((a, a) + kernel.shape[2:])


def _combine(coefs: Sequence[Fraction], values: Sequence[PrimExpr], dtype: str) -> PrimExpr:
    """``sum(c * v)`` over the non-zero coefficients, with +-1 as additions and
    subtractions."""
    out: PrimExpr | None = None
    # A positive term first: a leading negation would be a subtraction from zero.
    pairs = sorted(zip(coefs, values), key=lambda cv: cv[0] < 0)
    for c, v in pairs:
        if c == 0:
            continue
        if abs(c) == 1:
            term, neg = v, c < 0
        else:
            term, neg = const(float(abs(c)), dtype) * v, c < 0
        if out is None:
            out = -term if neg else term
        else:
            out = out - term if neg else out + term
    return out if out is not None else const(0.0, dtype)


def _select_by(index: PrimExpr, options: Sequence[PrimExpr]) -> PrimExpr:
    """``options[index]`` as a chain of selects (index known to be in range)."""
    out = options[-1]
    for k in range(len(options) - 2, -1, -1):
        out = select(index == const(k, index.dtype), options[k], out)
    return out


def _static(t: Tensor, what: str) -> list[int]:
    dims = [const_int(s) for s in t.shape]
    if any(d is None for d in dims):
        raise IRTypeError(f"Winograd {what} needs a static shape, got {t.shape}")
    return dims  # type: ignore[return-value]


def winograd_tiles(height: int, width: int, m: int) -> tuple[int, int]:
    """Output tiles along the height and width (the last ones may be partial)."""
    return (height + m - 1) // m, (width + m - 1) // m


def winograd_input_transform_nhwc(data: Tensor, m: int, padding: Sequence[int],
                                  out_hw: Sequence[int], stride: int = 1) -> Tensor:
    """``V[x, y, p, c] = (BT d_p BT^T)[x, y]`` for each input tile ``d_p`` (a x a, read
    from ``data`` with ``padding`` = (top, left, bottom, right) applied by bounds
    checks; tiles start ``stride * m`` apart) of the output tiles ``p = (n * th + i) *
    tw + j`` of an ``out_hw`` output: shape ``[a, a, N * th * tw, C]``. Three stages,
    each ``[a, a, P, C]``: the input tile, read once with its bounds checks
    (``winograd_input_tile``, indexed by tile row and column); its columns transformed
    (``winograd_input_cols``, by transform row and tile column); then its rows. Each
    input value is read, and its bounds checked, once per tile, though it enters
    several sums."""
    n, h, w, c = _static(data, "input transform")
    a = input_span(m, stride)
    _, bt, _ = winograd_matrices(m, stride=stride)
    step = stride * m
    th, tw = winograd_tiles(out_hw[0], out_hw[1], m)
    top, left = int(padding[0]), int(padding[1])
    idt = index_dtype(data)
    dtype = data.dtype
    zero = const(0.0, dtype)

    def tile_fn(i: PrimExpr, j: PrimExpr, p: PrimExpr, ch: PrimExpr) -> PrimExpr:
        b = floordiv(p, as_index(th * tw, idt))
        row = floormod(floordiv(p, as_index(tw, idt)), as_index(th, idt)) * step - top + i
        col = floormod(p, as_index(tw, idt)) * step - left + j
        inside = all(row >= 0, row < as_index(h, idt), col >= 0, col < as_index(w, idt))
        return if_then_else(inside, data[b, row, col, ch], zero)

    shape = tuple(as_index(s, idt) for s in (a, a, n * th * tw, c))
    tile = compute(shape, tile_fn, name=INPUT_BLOCK + "_tile", tag="injective",
                   attrs={ANNOTATION: "input_tile", TILE_ANNOTATION: m},
                   axis_names=("i", "j", "p", "ci"))

    def cols_fn(x: PrimExpr, j: PrimExpr, p: PrimExpr, ch: PrimExpr) -> PrimExpr:
        rows = [tile[i, j, p, ch] for i in range(a)]
        return _select_by(x, [_combine(bt[k], rows, dtype) for k in range(a)])

    cols = compute(shape, cols_fn, name=INPUT_BLOCK + "_cols", tag="injective",
                   attrs={ANNOTATION: "input_cols", TILE_ANNOTATION: m},
                   axis_names=("eps", "j", "p", "ci"))

    def fn(x: PrimExpr, y: PrimExpr, p: PrimExpr, ch: PrimExpr) -> PrimExpr:
        vals = [cols[x, j, p, ch] for j in range(a)]
        return _select_by(y, [_combine(bt[k], vals, dtype) for k in range(a)])

    return compute(shape, fn, name=INPUT_BLOCK, tag="injective",
                   attrs={ANNOTATION: "input", TILE_ANNOTATION: m},
                   axis_names=("eps", "nu", "p", "ci"))


def winograd_output_transform_nhwc(product: Tensor, m: int, out_shape: Sequence[int],
                                   stride: int = 1) -> Tensor:
    """``Y[n, h, w, co] = (AT M_p AT^T)[h % m, w % m]`` for the tile ``p`` holding
    ``(h, w)``, from the batched product ``M = [a, a, P, Co]``; ``out_shape`` is
    ``(N, H, W, Co)``. Two stages: the rows of each tile's product are transformed
    first (``winograd_output_rows``, ``[m, a, P, Co]``), then its columns."""
    a, a2, tiles, co = _static(product, "output transform")
    n, oh, ow, oc = (int(s) for s in out_shape)
    th, tw = winograd_tiles(oh, ow, m)
    if a != input_span(m, stride) or a2 != a or tiles != n * th * tw or co != oc:
        raise IRTypeError(f"Winograd output transform: a product of shape {product.shape} "
                          f"does not match F({m}, 3) tiles (stride {stride}) of an output "
                          f"{tuple(out_shape)}")
    at, _, _ = winograd_matrices(m, stride=stride)
    idt = index_dtype(product)
    dtype = product.dtype

    def rows_fn(i: PrimExpr, v: PrimExpr, p: PrimExpr, ch: PrimExpr) -> PrimExpr:
        vals = [product[e, v, p, ch] for e in range(a)]
        return _select_by(i, [_combine(at[k], vals, dtype) for k in range(m)])

    rows = compute(tuple(as_index(s, idt) for s in (m, a, tiles, co)), rows_fn,
                   name=OUTPUT_BLOCK + "_rows", tag="injective",
                   attrs={ANNOTATION: "output_rows", TILE_ANNOTATION: m},
                   axis_names=("i", "nu", "p", "co"))

    def fn(b: PrimExpr, y: PrimExpr, x: PrimExpr, ch: PrimExpr) -> PrimExpr:
        p = (b * th + floordiv(y, as_index(m, idt))) * tw + floordiv(x, as_index(m, idt))
        yi, xi = floormod(y, as_index(m, idt)), floormod(x, as_index(m, idt))
        vals = [rows[yi, v, p, ch] for v in range(a)]
        return _select_by(xi, [_combine(at[k], vals, dtype) for k in range(m)])

    shape = tuple(as_index(s, idt) for s in (n, oh, ow, oc))
    return compute(shape, fn, name=OUTPUT_BLOCK, tag="injective",
                   attrs={ANNOTATION: "output", TILE_ANNOTATION: m},
                   axis_names=("n", "h", "w", "co"))


__all__ = [
    "ANNOTATION", "INPUT_BLOCK", "OUTPUT_BLOCK", "TILE_ANNOTATION", "TILE_SIZES",
    "input_span", "winograd_input_transform_nhwc", "winograd_matrices",
    "winograd_output_transform_nhwc", "winograd_tiles", "winograd_weight_transform",
]
