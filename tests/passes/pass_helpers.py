"""Helpers for the graph-pass tests: parsing Before/Expected texts, running modules."""

from __future__ import annotations

from typing import Any

import numpy as np

import irc
from irc.ir import Function, IRModule, assert_structural_equal, well_formed


def parse_module(text: str, constants: list[Any] | None = None) -> IRModule:
    """Parse ``text`` (a module, or one function which becomes ``main``)."""
    meta = {"relax.expr.Constant": list(constants)} if constants else None
    out = irc.parse(text, metadata=meta)
    if isinstance(out, Function):
        out = IRModule(functions={"main": out})
    return out


def check_pass(p: Any, before: str, expected: str, constants: list[Any] | None = None) -> \
        IRModule:
    """Run pass ``p`` on ``before``; the result must be well formed and structurally equal
    to ``expected``. Returns the result."""
    out = p(parse_module(before, constants))
    well_formed(out)
    assert_structural_equal(out, parse_module(expected, constants))
    return out


def run_main(mod: IRModule, *args: np.ndarray, pipeline: Any = None) -> np.ndarray:
    """Compile ``mod`` (``pipeline`` None: as it is) and run ``main`` on ``args``."""
    ex = irc.vm.compile(mod, "llvm", pipeline=pipeline)
    out = irc.vm.VirtualMachine(ex)["main"](*args)
    return out.numpy()


def random_args(func: Function, seed: int = 0, low: float = -1.0, high: float = 1.0) -> \
        list[np.ndarray]:
    """Random float32 arrays for every parameter of ``func`` (static shapes)."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, p.struct_info.static_shape).astype("float32")
            for p in func.params]


def prim_funcs(mod: IRModule) -> dict[str, Any]:
    """The loop functions of ``mod`` by name."""
    return {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, irc.tir.PrimFunc)}
