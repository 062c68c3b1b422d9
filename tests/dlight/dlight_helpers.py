"""Helpers of the default-rule tests: small graph modules written as text, their loop
functions before scheduling, and numeric checks of scheduled kernels."""

from __future__ import annotations

import numpy as np

import irc
from irc import passes
from irc.target import Target
from irc.tir.interpreter import run as interpret
from irc.tir.stmt import Block, BlockRealize, For, PrimFunc, SeqStmt


def graph(params: dict[str, tuple], body: str, out: tuple, dtype: str = "float32") -> str:
    """Text of a module whose ``main`` takes ``params`` (name -> shape) and runs the
    dataflow ``body`` (lines ``name = R.op(...)``, the last one named ``gv``)."""
    args = ", ".join(f'{k}: R.Tensor({tuple(v)!r}, dtype="{dtype}")' for k, v in params.items())
    lines = "\n".join(f"            {ln.strip()}" for ln in body.strip().splitlines())
    return f'''
@I.ir_module
class Module:
    @R.function
    def main({args}) -> R.Tensor({tuple(out)!r}, dtype="{dtype}"):
        with R.dataflow():
{lines}
            R.output(gv)
        return gv
'''


def kernels(text: str) -> dict[str, PrimFunc]:
    """The loop functions the default pipeline makes from ``text``, unscheduled (the
    pipeline runs without a current target, so its scheduling step does nothing)."""
    mod = passes.get_pipeline("default")(irc.parse(text))
    return {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, PrimFunc)}


def random_args(func: PrimFunc, seed: int = 0) -> list[np.ndarray]:
    """Seeded arrays for every buffer parameter of ``func`` (outputs included)."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, [int(s) for s in b.shape]).astype(b.dtype)
            for b in func.buffers]


def compiled_output(func: PrimFunc, args: list[np.ndarray], target: str = "llvm"
                    ) -> np.ndarray:
    """Run ``func`` compiled for ``target`` on copies of ``args``; the last buffer."""
    rt = irc.build(func.with_attr("global_symbol", "main"), target=target)
    tensors = [irc.tensor(a.copy()) for a in args]
    rt(*tensors)
    return tensors[-1].numpy()


def interpreted_output(func: PrimFunc, args: list[np.ndarray]) -> np.ndarray:
    """Run ``func`` in the reference interpreter on copies of ``args``; the last
    buffer."""
    arrays = [a.copy() for a in args]
    interpret(func, *arrays)
    return arrays[-1]


def assert_same_as_unscheduled(before: PrimFunc, after: PrimFunc, *, gpu: bool = False,
                               rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """The scheduled function computes what the unscheduled one does: compiled for the
    CPU, or (``gpu``) both run in the interpreter."""
    args = random_args(before)
    expected = interpreted_output(before, args)
    got = interpreted_output(after, args) if gpu else compiled_output(after, args)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def schedule(func: PrimFunc, rule, target: str):
    """``rule.apply`` under ``target``; the scheduled function or None."""
    t = Target(target)
    with t:
        sch = rule.apply(func, t)
    return None if sch is None else sch.mod["main"]


def loop_kinds(func: PrimFunc) -> list[str]:
    """Kinds of every loop of ``func`` (with thread tags), in pre-order."""
    out: list[str] = []

    def walk(s) -> None:
        if isinstance(s, For):
            out.append(s.thread_tag if s.kind == "thread_binding" else s.kind)
            walk(s.body)
        elif isinstance(s, SeqStmt):
            for c in s.seq:
                walk(c)
        elif isinstance(s, BlockRealize):
            walk(s.block)
        elif isinstance(s, Block):
            if s.init is not None:
                walk(s.init)
            walk(s.body)

    walk(func.body)
    return out
