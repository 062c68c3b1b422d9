"""One model through irc, judged: :func:`evaluate` gives its :class:`Outcome`.

The outcome's ``kind`` is

- ``ok``: every build of irc ran the model and matched the expected outputs
  (:mod:`.references`) within the dtype-aware tolerances (:mod:`.compare`) — or, where
  it differs from the primary reference, one of the other opinions (ONNX's reference
  evaluator where ONNX Runtime differs from it; either on the model computed in float32;
  a note says which);
- ``wrong``: a build ran and its results match none of them;
- ``crash``: irc raised an exception that is not an :class:`irc.IRCError` (or, counted
  by :mod:`.runner`, the process died or ran past its time);
- ``refused``: irc stopped with a clean error (an ``IRCError``: an unsupported operator
  form, a dtype it does not take);
- ``invalid``: neither ONNX Runtime nor the reference evaluator runs the model, or the
  generator could not make one: no verdict on irc.

The builds (:mod:`.builds`) run in order, and the first that does not give ``ok`` gives
the outcome.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ...core.diagnostics import IRCError
from . import builds
from .compare import TOLERANCE, first_mismatch
from .references import Expected, PeerRefused, expected, first_line

OK, WRONG, CRASH, REFUSED, INVALID = "ok", "wrong", "crash", "refused", "invalid"
KINDS = (OK, WRONG, CRASH, REFUSED, INVALID)

# A judge: (model, irc's outputs, expected outputs, their sensitivities) -> None when
# they match, else (output index, why).
Judge = Callable[[Any, Sequence[np.ndarray], Sequence[np.ndarray],
                  Sequence["np.ndarray | None"]], "tuple[int, str] | None"]


def compare_outputs(model: Any, got: Sequence[np.ndarray], want: Sequence[np.ndarray],
                    sens: Sequence[np.ndarray | None]) -> tuple[int, str] | None:
    """The default judge: :func:`.compare.first_mismatch`, with the tolerance of the
    narrowest float dtype among the model's values."""
    floats = [d for d in model_dtypes(model) if d in TOLERANCE]
    narrowest = max(floats, key=lambda d: TOLERANCE[d][0], default=None)
    return first_mismatch(got, want, sens, narrowest)


@dataclass(frozen=True)
class EvalOptions:
    """How a model is evaluated: the irc ``builds`` to run (of ``builds.BUILDS``), the
    ``target`` and the ``judge`` of outputs (a module-level function, so that a worker
    process can be sent it)."""

    builds: tuple[str, ...] = ("default",)
    target: str = "llvm"
    judge: Judge = compare_outputs


@dataclass(frozen=True)
class Outcome:
    """What became of one model: ``kind`` (see the module docstring), ``reason`` (the
    mismatch or the error), ``build`` (the build it is about), ``where`` (for a crash,
    the exception's type and innermost frame; for a refusal, the error's type; for a
    wrong result, what differs: the dtype, the shape or the values — failures with the
    same ``key`` are taken for the same failure), ``notes`` (how it was judged), the
    seconds it took, and the model's operator types and dtypes (for the coverage)."""

    kind: str
    reason: str = ""
    build: str = ""
    where: str = ""
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    seed: int | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """What a smaller model must reproduce to be the same failure: the kind, the build
        and ``where``."""
        return self.kind, self.build, self.where

    def line(self) -> str:
        """One line: ``kind (build): reason``."""
        build = f" ({self.build})" if self.build else ""
        seed = f"seed {self.seed}: " if self.seed is not None else ""
        return f"{seed}{self.kind}{build}: {self.reason}" if self.reason else \
            f"{seed}{self.kind}{build}"


def model_dtypes(model: Any) -> tuple[str, ...]:
    """The dtypes of the tensors a model declares (inputs, outputs, initializers) and of
    its values as shape inference types them."""
    import onnx
    from onnx import helper

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - an uninferable model: its declared types suffice
        inferred = model
    g = inferred.graph
    codes = {vi.type.tensor_type.elem_type for vi in list(g.input) + list(g.output)
             + list(g.value_info) if vi.type.HasField("tensor_type")}
    codes |= {t.data_type for t in g.initializer}
    names = set()
    for c in codes:
        if c:
            try:
                names.add(np_name(helper.tensor_dtype_to_np_dtype(c)))
            except (KeyError, ValueError, TypeError):
                continue
    return tuple(sorted(names))


def np_name(dtype: Any) -> str:
    """A numpy dtype's name as the generator spells dtypes."""
    d = np.dtype(dtype)
    return "bool" if d == np.bool_ else d.name


def evaluate(model: Any, inputs: dict[str, np.ndarray], perturb: Sequence[str],
             options: EvalOptions = EvalOptions(), seed: int = 0) -> Outcome:
    """Run ``model`` on ``inputs`` through every build of ``options`` and judge the
    results (see the module docstring); ``perturb`` names the data tensors perturbed to
    measure the results' sensitivity to rounding."""
    start = time.perf_counter()
    ops = tuple(sorted({n.op_type for n in model.graph.node}))
    base = {"ops": ops, "dtypes": model_dtypes(model)}
    try:
        want = expected(model, inputs, perturb, seed)
    except PeerRefused as err:
        return Outcome(INVALID, f"no reference runs the model: {err}",
                       seconds=time.perf_counter() - start, **base)
    notes: list[str] = []
    if want.ort_refused:
        notes.append(f"judged by {want.primary} ({want.ort_refused})")
    for path in options.builds:
        outcome = _one_build(model, inputs, want, path, options, seed, notes)
        if outcome.kind != OK:
            return Outcome(outcome.kind, outcome.reason, path, outcome.where, tuple(notes),
                           time.perf_counter() - start, **base)
    return Outcome(OK, "", "", "", tuple(notes), time.perf_counter() - start, **base)


def _one_build(model: Any, inputs: dict[str, np.ndarray], want: Expected, path: str,
               options: EvalOptions, seed: int, notes: list[str]) -> Outcome:
    try:
        got = builds.run(builds.build(model, path, options.target, seed), model, inputs)
    except IRCError as err:
        return Outcome(REFUSED, f"{type(err).__name__}: {first_line(err)}",
                       where=type(err).__name__)
    except Exception as err:  # noqa: BLE001 - any other exception is a crash of irc
        return Outcome(CRASH, f"{type(err).__name__}: {first_line(err)}",
                       where=f"{type(err).__name__} at {_innermost(err)}")
    bad = options.judge(model, got, want.outputs, want.sens)
    if bad is None:
        return Outcome(OK)
    index, why = bad
    asked = [want.primary]
    for name, outputs in want.opinions():
        if options.judge(model, got, outputs, want.sens) is None:
            notes.append(f"{path}: irc matches {name}, not {want.primary} (output {index}: "
                         f"{why})")
            return Outcome(OK)
        asked.append(name)
    others = (f"{', '.join(asked[1:])} {'differ' if len(asked) > 2 else 'differs'} too"
              if len(asked) > 1 else "no other reference runs the model")
    return Outcome(WRONG, f"output {index}: {why} (against {want.primary}; {others})",
                   where=_mismatch_class(why))


def _mismatch_class(why: str) -> str:
    """What kind of mismatch ``why`` describes: a wrong dtype (which one), shape, number
    of outputs, or values."""
    if why.startswith("dtype"):
        return why
    if why.startswith("shape"):
        return "shape"
    if "outputs !=" in why:
        return "outputs"
    return "values"


def _innermost(err: BaseException) -> str:
    """``file:line`` of the innermost frame of ``err``'s traceback inside irc (the
    innermost frame at all when none is)."""
    frames = traceback.extract_tb(err.__traceback__)
    inside = [f for f in frames if "/irc/" in f.filename.replace("\\", "/")
              and "/testing/fuzz/" not in f.filename.replace("\\", "/")]
    f = (inside or frames or [None])[-1]
    if f is None:
        return "?"
    path = f.filename.replace("\\", "/")
    short = path[path.rindex("/irc/") + 1:] if "/irc/" in path else path.rsplit("/", 1)[-1]
    return f"{short}:{f.lineno}"


__all__ = ["CRASH", "EvalOptions", "INVALID", "KINDS", "OK", "Outcome", "REFUSED", "WRONG",
           "compare_outputs", "evaluate", "model_dtypes"]
