"""A fuzzing campaign: many seeds through :class:`.runner.WorkerPool`, the outcomes
counted, the operator and dtype coverage tallied, the failures minimised
(:mod:`.minimise`) and saved (what the ``irc fuzz`` command runs).

Model ``i`` of a campaign of seed ``s`` is the model of seed ``s + i``, so a failure
reported at seed ``n`` is regenerated alone by a campaign of seed ``n`` and one model.
A failure is saved (with ``out``) in a directory of its own:

- ``model.onnx`` and ``inputs.npz``: the minimised model and its inputs
  (``irc run model.onnx --input inputs.npz`` runs it), ``model.txt`` its text form;
- ``original.onnx`` and ``original_inputs.npz``: the model as generated;
- ``summary.txt``: one line, the outcome; ``repro.py``: evaluates the model again
  (:func:`replay`), ``python repro.py``;

and listed, one line each, in ``out/failures.txt`` (written afresh by each campaign).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Iterator, TextIO

import numpy as np

from ...frontend.onnx.registry import supported_ops
from .evaluate import CRASH, INVALID, KINDS, OK, WRONG, EvalOptions, Outcome, evaluate
from .generator import FuzzConfig, generate_case
from .minimise import Reduced, minimise
from .runner import ModelTask, SeedTask, WorkerPool
from .spec import OPS
from .values import dtype_name, is_float

# Failures minimised per campaign (the others are saved as generated).
MAX_MINIMISED = 10
# Seconds between progress lines.
PROGRESS_EVERY = 30.0


@dataclass(frozen=True)
class CampaignConfig:
    """A campaign: ``models`` models (None: until ``time_limit``) from seed ``seed``,
    generated with ``fuzz`` and evaluated with ``options`` by ``jobs`` worker processes,
    ``timeout`` seconds each; new models start until ``time_limit`` seconds have
    passed. Failures are minimised (``minimise``) and saved under ``out`` (when
    given)."""

    models: int | None = 100
    seed: int = 0
    time_limit: float | None = None
    fuzz: FuzzConfig = FuzzConfig()
    options: EvalOptions = EvalOptions()
    jobs: int = 1
    timeout: float = 300.0
    minimise: bool = True
    out: str | None = None


@dataclass
class Failure:
    """A wrong result or a crash: the outcome, the model reduced (or as generated when
    it was not minimised), the checks the minimiser made, where it was saved, and the
    seed of an earlier failure it looks like (then it was not minimised)."""

    outcome: Outcome
    case: Reduced
    checks: int = 0
    saved: str = ""
    like: int | None = None

    def line(self) -> str:
        ops = ", ".join(sorted({n.op_type for n in self.case.model.graph.node
                                if n.op_type != "Constant"}))
        how = f"minimised to {self.case.size} nodes ({ops}) in {self.checks} checks" \
            if self.checks else (f"as seed {self.like}" if self.like is not None
                                 else f"{self.case.size} nodes ({ops})")
        return f"{self.outcome.line()} [{how}]" + (f" -> {self.saved}" if self.saved else "")


@dataclass
class Summary:
    """What a campaign found: every outcome, the failures, the seconds it took."""

    config: CampaignConfig
    outcomes: list[Outcome] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        """Models per outcome kind (every kind, zeros included)."""
        out = dict.fromkeys(KINDS, 0)
        for o in self.outcomes:
            out[o.kind] += 1
        return out

    def coverage(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        """Per operator type and per dtype: ``[models, compiled, ok]`` over the valid
        models (compiled: irc built and ran it, whatever the verdict)."""
        ops: dict[str, list[int]] = {}
        dtypes: dict[str, list[int]] = {}
        for o in self.outcomes:
            if o.kind == INVALID:
                continue
            ran = o.kind in (OK, WRONG)
            for table, keys in ((ops, o.ops), (dtypes, o.dtypes)):
                for k in keys:
                    row = table.setdefault(k, [0, 0, 0])
                    row[0] += 1
                    row[1] += ran
                    row[2] += o.kind == OK
        return ops, dtypes

    def format(self) -> str:
        """The summary printed at the end of ``irc fuzz``."""
        c = self.config
        n = len(self.outcomes)
        seeds = "no seed" if not n else f"seed {c.seed}" if n == 1 else \
            f"seeds {c.seed}-{c.seed + n - 1}"
        lines = [f"irc fuzz: {n} model{'' if n == 1 else 's'} ({seeds}) in {self.seconds:.0f} s "
                 f"({self.seconds / max(n, 1):.2f} s per model, {c.jobs} "
                 f"{'job' if c.jobs == 1 else 'jobs'}), builds: {', '.join(c.options.builds)}"]
        counts = self.counts()
        lines.append("  " + "   ".join(f"{k} {counts[k]}" for k in KINDS))
        judged: dict[str, int] = {}
        for o in self.outcomes:
            for x in o.notes:
                if x.startswith("judged by "):
                    whom = x[len("judged by "):].split(" (", 1)[0]
                    judged[whom] = judged.get(whom, 0) + 1
        lines.append(f"  onnxruntime refused the model: {sum(judged.values())}" + "".join(
            f"; judged by {w}: {n}" for w, n in judged.items()))
        settled = [(o, x) for o in self.outcomes for x in o.notes if ": irc matches " in x]
        by_whom: dict[str, int] = {}
        for _, note in settled:
            whom = note.split(": irc matches ", 1)[1].split(", not ", 1)[0]
            by_whom[whom] = by_whom.get(whom, 0) + 1
        lines.append(f"  irc differs from the primary reference and matches another: "
                     f"{len(settled)}" + "".join(f"; {n} {w}" for w, n in by_whom.items()))
        for o, note in settled[:10]:
            lines.append(f"    seed {o.seed}: {note[:240]}")
        lines += _grouped("refused", [o for o in self.outcomes if o.kind == "refused"])
        lines += _grouped("invalid", [o for o in self.outcomes if o.kind == INVALID])
        if self.failures:
            lines.append(f"failures ({len(self.failures)}):")
            lines += [f"  {f.line()}" for f in self.failures]
        lines += self._coverage_lines()
        return "\n".join(lines)

    def _coverage_lines(self) -> list[str]:
        ops, dtypes = self.coverage()
        known = sorted(set(supported_ops()) | set(ops))
        table = {s.split(".")[0] for s in OPS}
        lines = ["operators (models / compiled / ok):"]
        cells = [f"{op} {ops[op][0]}/{ops[op][1]}/{ops[op][2]}" for op in known if op in ops]
        lines += _columns(cells)
        missing = [op for op in known if op not in ops]
        drawn = [op for op in missing if op in table]
        unbuilt = [op for op in missing if op not in table]
        if drawn:
            lines.append(f"not generated in this run: {' '.join(drawn)}")
        if unbuilt:
            lines.append(f"not generated (the generator has no builder): {' '.join(unbuilt)}")
        lines.append("dtypes (models / compiled / ok): " + "  ".join(
            f"{d} {r[0]}/{r[1]}/{r[2]}" for d, r in sorted(dtypes.items())))
        return lines


def _grouped(kind: str, outcomes: list[Outcome]) -> list[str]:
    """``kind (n):`` and its reasons, most frequent first, with a seed of each."""
    if not outcomes:
        return []
    groups: dict[str, list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault(o.reason[:160], []).append(o)
    lines = [f"{kind} ({len(outcomes)}):"]
    for reason, members in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:15]:
        lines.append(f"  {len(members)}x {reason} (seed {members[0].seed})")
    if len(groups) > 15:
        lines.append(f"  ... and {len(groups) - 15} other reasons")
    return lines


def _columns(cells: list[str], width: int = 96) -> list[str]:
    if not cells:
        return ["  (none)"]
    w = max(len(c) for c in cells) + 2
    per = max(1, width // w)
    return ["  " + "".join(c.ljust(w) for c in cells[i:i + per]).rstrip()
            for i in range(0, len(cells), per)]


def _seeds(config: CampaignConfig, start: float) -> Iterator[SeedTask]:
    i = 0
    while config.models is None or i < config.models:
        if config.time_limit is not None and time.monotonic() - start >= config.time_limit:
            return
        yield SeedTask(config.seed + i)
        i += 1


def run_campaign(config: CampaignConfig, progress: TextIO | None = sys.stdout) -> Summary:
    """Run the campaign ``config``, writing progress lines (each failure as it is found,
    and the counts now and then) to ``progress``; returns the summary."""
    start = time.monotonic()
    summary = Summary(config)
    if config.out:
        os.makedirs(config.out, exist_ok=True)
        open(os.path.join(config.out, "failures.txt"), "w").close()
    found: list[Outcome] = []
    last = start
    with WorkerPool(config.jobs, config.fuzz, config.options, config.timeout) as pool:
        for _, outcome in pool.imap(_seeds(config, start)):
            if outcome.kind == CRASH and not outcome.ops:
                outcome = _with_coverage(outcome, config.fuzz)
            summary.outcomes.append(outcome)
            if outcome.kind in (WRONG, CRASH):
                found.append(outcome)
                _say(progress, outcome.line())
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY:
                last = now
                counts = summary.counts()
                _say(progress, f"[{len(summary.outcomes)} models, {now - start:.0f} s] "
                     + "  ".join(f"{k} {counts[k]}" for k in KINDS))
        for outcome in sorted(found, key=lambda o: o.seed or 0):
            summary.failures.append(_failure(outcome, config, pool, summary.failures,
                                             progress))
    summary.seconds = time.monotonic() - start
    return summary


def _say(progress: TextIO | None, line: str) -> None:
    if progress is not None:
        print(line, file=progress, flush=True)


def _with_coverage(outcome: Outcome, fuzz: FuzzConfig) -> Outcome:
    """A crash outcome of a dead worker with the operators and dtypes of its model
    (generated again here)."""
    try:
        case = generate_case(outcome.seed or 0, fuzz)
    except Exception:  # noqa: BLE001 - no model, no coverage: the crash stays counted
        return outcome
    return replace(outcome, ops=case.op_types(), dtypes=case.dtypes)


def _failure(outcome: Outcome, config: CampaignConfig, pool: WorkerPool,
             earlier: list[Failure], progress: TextIO | None) -> Failure:
    case = generate_case(outcome.seed or 0, config.fuzz)
    original = Reduced(case.model, case.inputs, case.perturb)
    failure = Failure(outcome, original)
    like = next((f for f in earlier if f.checks and _same(f, outcome, case.op_types())),
                None)
    if like is not None:
        failure.like = like.outcome.seed
    elif config.minimise and sum(f.checks > 0 for f in earlier) < MAX_MINIMISED:
        _say(progress, f"minimising seed {outcome.seed} ...")

        def check(r: Reduced) -> Outcome:
            return pool.run(ModelTask(r.model.SerializeToString(), r.inputs, r.perturb,
                                      outcome.seed or 0))

        failure.case, failure.checks = minimise(original, outcome, check)
    if config.out:
        failure.saved = save_failure(config.out, failure, original, config.options.builds)
    return failure


def _same(earlier: Failure, outcome: Outcome, ops: tuple[str, ...]) -> bool:
    """Whether ``outcome`` (of a model of ``ops``) looks like the minimised failure
    ``earlier``: the same key and, unless the key is a wrong dtype (one bug whatever
    the operator), the operators of ``earlier``'s reduced model all in the model."""
    if earlier.outcome.key != outcome.key:
        return False
    return outcome.where.startswith("dtype") or \
        {n.op_type for n in earlier.case.model.graph.node} <= set(ops)


REPRO = '''"""Evaluates the failure saved in this directory again: python repro.py"""

import os

from irc.testing.fuzz.campaign import replay

print(replay(os.path.dirname(os.path.abspath(__file__)), builds={builds!r}).line())
'''


def save_failure(out: str, failure: Failure, original: Reduced,
                 builds: tuple[str, ...] = ("default",)) -> str:
    """Write ``failure`` under ``out`` (see the module docstring; bfloat16 inputs are
    saved as their float32 values, which :func:`load_failure` reads back) with a
    ``repro.py`` that evaluates it again along ``builds``; its directory."""
    import onnx
    import onnx.printer

    o = failure.outcome
    where = os.path.join(out, f"{o.kind}-seed{o.seed}")
    os.makedirs(where, exist_ok=True)
    onnx.save(failure.case.model, os.path.join(where, "model.onnx"))
    np.savez(os.path.join(where, "inputs.npz"), **_storable(failure.case.inputs))
    onnx.save(original.model, os.path.join(where, "original.onnx"))
    np.savez(os.path.join(where, "original_inputs.npz"), **_storable(original.inputs))
    with open(os.path.join(where, "model.txt"), "w", encoding="utf-8") as f:
        f.write(onnx.printer.to_text(failure.case.model) + "\n")
    with open(os.path.join(where, "repro.py"), "w", encoding="utf-8") as f:
        f.write(REPRO.format(builds=tuple(builds)))
    line = failure.line()
    with open(os.path.join(where, "summary.txt"), "w", encoding="utf-8") as f:
        f.write(line + "\n")
    with open(os.path.join(out, "failures.txt"), "a", encoding="utf-8") as f:
        f.write(f"{line} -> {where}\n")
    return where


def _storable(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Arrays numpy's files keep: bfloat16 as float32 (exactly)."""
    return {k: v.astype(np.float32) if dtype_name(v) == "bfloat16" else v
            for k, v in arrays.items()}


def load_failure(where: str, original: bool = False) -> Reduced:
    """The model and inputs saved in ``where`` (:func:`save_failure`; with ``original``,
    the model as generated), the inputs in the dtypes the model declares and its float
    inputs to perturb."""
    import onnx
    from onnx import helper

    model = onnx.load(os.path.join(where, "original.onnx" if original else "model.onnx"))
    with np.load(os.path.join(where, "original_inputs.npz" if original else "inputs.npz"),
                 allow_pickle=False) as saved:
        inputs = {i.name: saved[i.name].astype(
            helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type))
            for i in model.graph.input}
    return Reduced(model, inputs, tuple(k for k, v in inputs.items()
                                        if is_float(dtype_name(v))))


def replay(where: str, builds: tuple[str, ...] = ("default",), original: bool = False
           ) -> Outcome:
    """Evaluate the failure saved in ``where`` again (in this process)."""
    case = load_failure(where, original)
    return evaluate(case.model, case.inputs, case.perturb, EvalOptions(builds=builds))


__all__ = ["CampaignConfig", "Failure", "MAX_MINIMISED", "Summary", "load_failure",
           "replay", "run_campaign", "save_failure"]
