"""Comparing irc's outputs with the references', with dtype-aware tolerances widened by
the model's measured sensitivity to rounding.

A reference is run again on data tensors perturbed by a few rounding steps of their
dtype (``perturbed``); how far each output element moves (``sensitivity``) is the
rounding noise a correct compiler may show there, so the tolerance of an element is the
dtype's own (``TOLERANCE``: relative, and absolute against the output's largest
magnitude, which covers cancellation) plus four times its movement. Integer and bool
elements that move, and outputs whose shape moves, are not compared: they sit at a
discontinuity (a comparison, a rounding, an argmax between near-equal values).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .values import EPS, dtype_name, is_float, np_dtype

# dtype -> (relative tolerance, absolute tolerance against the output's magnitude).
TOLERANCE = {"float32": (1e-4, 1e-5), "float16": (4e-3, 2e-3), "bfloat16": (3e-2, 1.6e-2),
             "float64": (1e-7, 1e-9)}
# Rounding steps (of the input's dtype) by which data inputs are perturbed.
PERTURB_STEPS = 2.0


def _perturb(arr: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``arr`` multiplied by ``1 + d``, ``d`` uniform within ``PERTURB_STEPS`` rounding
    steps of its dtype (at least one step away from 1); non-float arrays unchanged."""
    if not is_float(dtype_name(arr)):
        return arr
    eps = EPS[dtype_name(arr)]
    d = rng.uniform(1.0, PERTURB_STEPS, arr.shape) * eps * rng.choice([-1.0, 1.0], arr.shape)
    moved = np.asarray(arr, np.float64) * (1.0 + d)
    return np.asarray(moved.astype(np_dtype(dtype_name(arr)))).reshape(arr.shape)


def perturbed(model: Any, feeds: dict[str, np.ndarray], names: Sequence[str], seed: int
              ) -> tuple[Any, dict[str, np.ndarray]]:
    """``model`` and ``feeds`` with the float tensors named in ``names`` (graph inputs,
    initializers, outputs of Constant nodes) perturbed by a few rounding steps
    (``_perturb``); the model is a copy when one of its tensors moves."""
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    wanted = set(names)
    out = {k: _perturb(v, rng) if k in wanted else v for k, v in feeds.items()}
    inits = [t for t in model.graph.initializer if t.name in wanted]
    consts = [n for n in model.graph.node if n.op_type == "Constant" and n.output[0] in wanted
              and any(a.name == "value" for a in n.attribute)]
    if not inits and not consts:
        return model, out
    copy = type(model)()
    copy.CopyFrom(model)
    for t in copy.graph.initializer:
        if t.name in wanted:
            t.CopyFrom(numpy_helper.from_array(_perturb(numpy_helper.to_array(t), rng), t.name))
    for n in copy.graph.node:
        if n.op_type == "Constant" and n.output[0] in wanted:
            for a in n.attribute:
                if a.name == "value":
                    arr = _perturb(numpy_helper.to_array(a.t), rng)
                    a.t.CopyFrom(numpy_helper.from_array(arr, a.t.name))
    return copy, out


def sensitivity(base: Sequence[np.ndarray], moved: Sequence[Sequence[np.ndarray]]
                ) -> list[np.ndarray | None]:
    """Per output: how far each element moved over the perturbed runs (float64; inf where
    a NaN appeared or vanished), or None when the output's shape moved."""
    out: list[np.ndarray | None] = []
    for i, b in enumerate(base):
        b = np.asarray(b)
        delta: np.ndarray | None = np.zeros(b.shape)
        for run in moved:
            m = np.asarray(run[i])
            if m.shape != b.shape or delta is None:
                delta = None
                continue
            if b.dtype.kind in "biu":
                d = np.where(m != b, np.inf, 0.0)
            else:
                x, y = np.asarray(b, np.float64), np.asarray(m, np.float64)
                with np.errstate(invalid="ignore"):
                    d = np.where(np.isnan(x) & np.isnan(y), 0.0, np.abs(x - y))
                d = np.where(np.isnan(d), np.inf, d)
            delta = np.maximum(delta, d)
        out.append(delta)
    return out


def mismatch(got: np.ndarray, want: np.ndarray, sens: np.ndarray | None,
             narrowest: str | None = None) -> str | None:
    """Why ``got`` does not match ``want`` (None when it does), with ``sens`` the
    sensitivity of ``want``'s elements. ``narrowest``, the narrowest float dtype of the
    model's values, bounds the tolerance of float outputs from below: a float32 output
    computed through bfloat16 values carries bfloat16's rounding (which a reference on
    the model computed in float32 does not have)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    gd, wd = dtype_name(got), dtype_name(want)
    if gd != wd:
        return f"dtype {gd} != {wd}"
    if sens is None or got.size == 0:
        return None
    if sens.shape != want.shape:  # measured on a reference that gave another shape
        sens = np.zeros(want.shape)
    stable = ~np.isinf(sens)
    if is_float(wd):
        rtol, atol = TOLERANCE[wd]
        if narrowest in TOLERANCE:
            rtol, atol = max(rtol, TOLERANCE[narrowest][0]), max(atol, TOLERANCE[narrowest][1])
        x, y = np.asarray(got, np.float64), np.asarray(want, np.float64)
        finite = np.isfinite(y)
        scale = max(1.0, float(np.abs(y[finite]).max(initial=0.0)))
        tol = rtol * np.abs(np.where(finite, y, 0.0)) + atol * scale + 4.0 * np.where(
            stable, sens, 0.0)
        with np.errstate(invalid="ignore"):
            same = (np.abs(x - y) <= tol) | (np.isnan(x) & np.isnan(y)) | (x == y)
        bad = ~same & stable
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            err = np.abs(x - y)[bad]
            return (f"{int(bad.sum())} of {bad.size} values differ (largest error "
                    f"{float(np.nanmax(err)) if np.isfinite(err).any() else float('nan'):.3g}"
                    f", tolerance {float(tol[at]):.3g}); at {at}: {x[at]!r} != {y[at]!r}")
        return None
    bad = (got != want) & stable
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        return f"{int(bad.sum())} of {bad.size} values differ; at {at}: {got[at]!r} != " \
               f"{want[at]!r}"
    return None


def first_mismatch(got: Sequence[np.ndarray], want: Sequence[np.ndarray],
                   sens: Sequence[np.ndarray | None], narrowest: str | None = None
                   ) -> tuple[int, str] | None:
    """(output index, reason) of the first output of ``got`` that differs from
    ``want`` (``narrowest``: see :func:`mismatch`); None when all match."""
    if len(got) != len(want):
        return -1, f"{len(got)} outputs != {len(want)}"
    for i, (g, w, s) in enumerate(zip(got, want, sens)):
        why = mismatch(g, w, s, narrowest)
        if why is not None:
            return i, why
    return None


__all__ = ["PERTURB_STEPS", "TOLERANCE", "first_mismatch", "mismatch", "perturbed",
           "sensitivity"]
