"""Random valid ONNX models with their inputs: :func:`generate_case`.

A model is grown operator by operator (``builder.GraphBuilder``): each step draws an
operator from the table of ``spec.OPS`` (every family of operators irc's ONNX importer
converts), whose builder adds it in a drawn form; a form that does not fit is undone
and another operator drawn. The model's opset (among those at which some selected
operator can be built) and main float dtype are drawn first; the graph's outputs are the
results nothing else reads. Everything is decided by a numpy
generator seeded with the case's seed, so a seed names its model.

    from irc.testing.fuzz import FuzzConfig, generate_case
    case = generate_case(7, FuzzConfig(min_nodes=3, max_nodes=8))
    print(onnx.printer.to_text(case.model.graph))
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import ops_control, ops_math, ops_nn, ops_tensor  # noqa: F401 - they register the operators
from .builder import Case, GraphBuilder
from .spec import OPS, OpSpec, Reject, families
from .values import ALL_DTYPES, FLOAT_DTYPES

# Opsets a model is written at, with their weights: the newest ONNX Runtime runs, and
# older ones whose operator forms differ (axes as attributes before 18, ...; the
# operators ONNX deprecated, Upsample and Scatter, at 9 and 10).
OPSETS = ((9, 1), (10, 1), (13, 1), (17, 2), (18, 3), (20, 2), (21, 3), (26, 1))
# The main float dtype of a model and its weight.
FLOAT_WEIGHTS = {"float32": 6, "float16": 3, "bfloat16": 2}


@dataclass(frozen=True)
class FuzzConfig:
    """What models to generate: between ``min_nodes`` and ``max_nodes`` operators drawn
    from ``ops`` (operator types or family names; empty: all), data of ``dtypes``
    (empty: all irc accepts), at one of ``opsets`` (empty: the default mix)."""

    min_nodes: int = 3
    max_nodes: int = 12
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    opsets: tuple[int, ...] = field(default=())

    def specs(self) -> list[OpSpec]:
        """The operator builders selected by ``ops``."""
        return select_ops(self.ops)


def select_ops(names: tuple[str, ...] | list[str]) -> list[OpSpec]:
    """The builders of operator types or families ``names`` (all when empty); an
    unknown name is a ValueError listing what there is."""
    if not names:
        return list(OPS.values())
    fam = families()
    out: dict[str, OpSpec] = {}
    for name in names:
        if name in fam:
            out.update((n, OPS[n]) for n in fam[name])
            continue
        found = [s for s in OPS.values() if s.name.split(".")[0] == name]
        if not found:
            raise ValueError(f"unknown operator or family {name!r}; families: "
                             f"{', '.join(sorted(fam))}; operators: "
                             f"{', '.join(sorted({s.name.split('.')[0] for s in OPS.values()}))}")
        out.update((s.name, s) for s in found)
    return list(out.values())


def generate_case(seed: int, config: FuzzConfig | None = None) -> Case:
    """The model (and inputs) of ``seed``: see the module docstring."""
    cfg = config or FuzzConfig()
    rng = np.random.default_rng(seed)
    dtypes = tuple(cfg.dtypes) or ALL_DTYPES
    floats = [d for d in FLOAT_DTYPES if d in dtypes]
    usable = [s for s in cfg.specs() if any(d in dtypes for d in s.dtypes)]
    # The opsets at which some selected operator can be built, with their weights.
    weighted = [(o, w) for o, w in (((o, 1) for o in cfg.opsets) if cfg.opsets else OPSETS)
                if any(s.fits(o) for s in usable)]
    if not weighted:
        raise ValueError(f"no operator of {list(cfg.ops) or 'the table'} fits opsets "
                         f"{list(cfg.opsets) or [o for o, _ in OPSETS]} and dtypes "
                         f"{list(dtypes)}")
    w = np.array([x for _, x in weighted], float)
    opset = int(weighted[int(rng.choice(len(weighted), p=w / w.sum()))][0])
    if floats:
        fw = np.array([FLOAT_WEIGHTS[d] for d in floats], float)
        float_dtype = floats[int(rng.choice(len(floats), p=fw / fw.sum()))]
    else:
        float_dtype = "float32"  # integer models still compute some floats
    specs = [s for s in usable if s.fits(opset)]
    g = GraphBuilder(rng, opset, float_dtype, dtypes)
    target = int(rng.integers(cfg.min_nodes, cfg.max_nodes + 1))
    attempts = 0
    while len(g.ops_used) < target and attempts < 20 * target:
        attempts += 1
        spec = specs[int(rng.integers(len(specs)))]
        snap = g.snapshot()
        try:
            spec.build(g)
            g.check()
        except Reject:
            g.restore(snap)
            continue
        g.ops_used.append(spec.name.split(".")[0])
    if not g.ops_used:
        raise ValueError(f"seed {seed}: no operator could be built from "
                         f"{[s.name for s in specs][:10]}")
    return g.case(seed)


__all__ = ["FuzzConfig", "OPSETS", "generate_case", "select_ops"]
