"""What the model generator draws: dtypes, shapes from every shape class, value domains
and arrays in them.

Arrays are drawn so that the comparison of irc with its references means something:
each operator states the *domain* its input must lie in (``Domain``: an interval, and
the points near which the result jumps — integers for ``Floor``, halves for ``Round``,
zero for ``Sign`` — kept at a distance of many rounding steps of the dtype), and a value
already in the graph is used only where its concrete values (computed by the reference
while the graph grows) lie in that domain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FLOAT_DTYPES = ("float32", "float16", "bfloat16")
INT_DTYPES = ("int8", "uint8", "int32", "int64")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)

# Rounding step of each float dtype near 1 (numpy's finfo eps).
EPS = {"float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7,
       "float64": 2.0 ** -52}
# The largest magnitude a value of the graph may take: beyond it the rounding steps of
# the dtype (and the peers' overflow rules) make the comparison about noise.
MAGNITUDE = {"float32": 1e4, "float16": 2e3, "bfloat16": 2e3, "float64": 1e4}
# How far (relative to the magnitude) values keep from the points where an operator's
# result jumps: some hundreds of rounding steps of float32, tens of the half dtypes.
AVOID_MARGIN = {"float32": 1e-3, "float16": 0.03, "bfloat16": 0.1, "float64": 1e-3}
# Half-open ranges of fresh integer data; indices are drawn by the operators themselves.
INT_RANGE = {"int8": (-8, 9), "uint8": (0, 17), "int32": (-50, 51), "int64": (-50, 51)}
# Extents drawn for axes: odd and prime ones first in line, powers of two, small ones.
ODD_PRIME = (3, 5, 7, 11, 13, 17)
SMALL = (1, 2, 3, 4, 5, 6, 8)
# Shape classes and their weights; "large" makes one long axis (a large reduction).
SHAPE_CLASSES = (("scalar", 4), ("one", 5), ("unit_axes", 14), ("odd", 20),
                 ("small", 40), ("large", 5))


def np_dtype(name: str) -> np.dtype:
    """The numpy dtype of a dtype name (``bfloat16`` from ml_dtypes)."""
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def dtype_name(arr: np.ndarray) -> str:
    """The dtype name of an array (``bool`` for numpy's ``bool_``)."""
    return "bool" if arr.dtype == np.bool_ else arr.dtype.name


def is_float(dtype: str) -> bool:
    """Whether values of ``dtype`` are floating point."""
    return dtype in FLOAT_DTYPES or dtype == "float64"


def draw_shape(rng: np.random.Generator, min_rank: int = 0, max_rank: int = 4,
               max_elements: int = 4096) -> tuple[int, ...]:
    """A shape of rank ``min_rank`` to ``max_rank`` from one of the shape classes: 0-d,
    one element, size-1 axes, odd and prime extents, small extents, one long axis."""
    names = [c for c, _ in SHAPE_CLASSES]
    weights = np.array([w for _, w in SHAPE_CLASSES], float)
    if min_rank > 0:
        weights[names.index("scalar")] = 0
    cls = names[rng.choice(len(names), p=weights / weights.sum())]
    if cls == "scalar" or max_rank == 0:
        return ()
    rank = int(rng.integers(max(min_rank, 1), max_rank + 1))
    if cls == "one":
        return (1,) * rank
    if cls == "large":
        dims = [int(rng.choice(SMALL[:3])) for _ in range(rank)]
        long = int(rng.integers(300, 2100))
        dims[int(rng.integers(rank))] = long
        return _fit(tuple(dims), max(max_elements, long * 9))
    pool = ODD_PRIME if cls == "odd" else SMALL
    dims = [int(rng.choice(pool)) for _ in range(rank)]
    if cls == "unit_axes":
        for i in range(rank):
            if rng.random() < 0.5:
                dims[i] = 1
    return _fit(tuple(dims), max_elements)


def _fit(dims: tuple[int, ...], max_elements: int) -> tuple[int, ...]:
    """``dims`` with the largest axes halved until the shape has at most
    ``max_elements`` elements."""
    out = list(dims)
    while int(np.prod(out, dtype=np.int64)) > max_elements:
        i = int(np.argmax(out))
        out[i] = max(1, out[i] // 2)
    return tuple(out)


def broadcast_partner(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape`` to ``shape``: the same, leading axes
    dropped, some axes set to 1, or 0-d."""
    r = rng.random()
    if r < 0.35 or not shape:
        return tuple(shape)
    if r < 0.45:
        return ()
    keep = int(rng.integers(0, len(shape) + 1))
    dims = list(shape[len(shape) - keep:])
    for i in range(len(dims)):
        if rng.random() < 0.4:
            dims[i] = 1
    return tuple(dims)


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy's broadcast of two shapes, or None when they do not broadcast."""
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


@dataclass(frozen=True)
class Domain:
    """Where an operator's float input must lie: ``[lo, hi]`` and, with ``avoid``, away
    from integers (``"int"``), halves (``"half"``) or zero (``"zero"``) by ``gap``
    (scaled by the dtype's rounding step relative to float16's)."""

    lo: float = -4.0
    hi: float = 4.0
    avoid: str = ""
    gap: float = 0.05

    def margin(self, dtype: str) -> float:
        """The distance kept from the avoided points, relative to the value's magnitude
        (at least 1): many rounding steps of ``dtype``."""
        return self.gap / 0.05 * AVOID_MARGIN.get(dtype, AVOID_MARGIN["float32"])

    def _near(self, x: np.ndarray, dtype: str) -> np.ndarray:
        m = self.margin(dtype) * np.maximum(1.0, np.abs(x))
        if self.avoid == "int":
            return np.abs(x - np.round(x)) < m
        if self.avoid == "half":
            return np.abs(x - np.floor(x) - 0.5) < m
        if self.avoid == "zero":
            return np.abs(x) < max(self.gap, m.max(initial=0.0))
        return np.zeros(x.shape, bool)

    def contains(self, arr: np.ndarray) -> bool:
        """Whether every value of ``arr`` lies in the domain."""
        if arr.size == 0:
            return True
        x = np.asarray(arr, np.float64)
        if not np.isfinite(x).all() or x.min() < self.lo or x.max() > self.hi:
            return False
        return not self._near(x, dtype_name(arr)).any()

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...], dtype: str
             ) -> np.ndarray:
        """Values of the domain, rounded to ``dtype``."""
        x = rng.uniform(self.lo, self.hi, size=shape)
        arr = np.asarray(x, np.float64).astype(np_dtype(dtype))
        for _ in range(8):
            near = self._near(np.asarray(arr, np.float64), dtype)
            if not near.any():
                break
            redraw = rng.uniform(self.lo, self.hi, size=shape)
            merged = np.where(near, redraw, np.asarray(arr, np.float64))
            arr = np.asarray(merged).astype(np_dtype(dtype))
        else:
            arr = np.where(self._near(np.asarray(arr, np.float64), dtype),
                           np.asarray(self.hi if self.hi < 1 else 0.75, np.float64),
                           np.asarray(arr, np.float64)).astype(np_dtype(dtype))
        return np.asarray(arr).reshape(shape)


ANY = Domain()


def draw_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: str,
               domain: Domain | None = None, low: int | None = None,
               high: int | None = None) -> np.ndarray:
    """An array of ``shape`` and ``dtype``: floats from ``domain`` (default [-4, 4]),
    integers in ``[low, high)`` (default ``INT_RANGE``), bools half true."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if is_float(dtype):
        return (domain or ANY).draw(rng, shape, dtype)
    lo, hi = INT_RANGE[dtype]
    lo = lo if low is None else low
    hi = hi if high is None else high
    return rng.integers(lo, hi, size=shape).astype(np_dtype(dtype))


def distinct(arr: np.ndarray, axis: int | None, gap: float) -> bool:
    """Whether the values along ``axis`` (all values for None) are pairwise at least
    ``gap`` (relative to their magnitude) apart: no near ties for ArgMax, TopK, Hardmax,
    sorting."""
    x = np.asarray(arr, np.float64)
    if x.size <= 1:
        return True
    if axis is None:
        x = x.reshape(-1, 1)
        axis = 0
    s = np.sort(x, axis=axis)
    d = np.diff(s, axis=axis)
    scale = np.maximum(1.0, np.abs(s).max())
    return bool((d > gap * scale).all())


def tie_gap(dtype: str) -> float:
    """The relative distance two values must keep not to be a tie in ``dtype``."""
    return max(64 * EPS.get(dtype, EPS["float32"]), 1e-4)


__all__ = ["ALL_DTYPES", "ANY", "Domain", "EPS", "FLOAT_DTYPES", "INT_DTYPES", "MAGNITUDE",
           "broadcast_partner", "broadcast_shape", "distinct", "draw_array", "draw_shape",
           "dtype_name", "is_float", "np_dtype", "tie_gap"]
