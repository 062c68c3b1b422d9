"""ONNX's backend node tests, driven through irc as a user would: each case's model through
``from_onnx`` -> ``irc.compile`` -> the VM, every data set's outputs compared with the
expected ones (rtol 1e-3 for floats, exact for integers and bools).

The cases come from the installed onnx package's definitions
(``onnx.backend.test.case.node.collect_testcases()``, the same source as onnx's own
``backend-test-tools generate-data``), so no data files are needed.

    python -m irc.testing.onnx_node_cases            # counts per outcome, failures listed
    python -m irc.testing.onnx_node_cases --op Relu  # the cases of one operator type
    python -m irc.testing.onnx_node_cases --table docs/onnx_operators.md  # the support table

Outcomes: ``pass``; ``unsupported`` (an operator irc has no converter for: the import
raised ``UnsupportedOperatorError``); ``error`` (another irc error: a limitation irc reports);
``mismatch`` (wrong values or shapes); ``crash`` (a non-irc exception: a bug).
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import IRCError, UnsupportedOperatorError


@dataclass
class CaseResult:
    name: str
    ops: tuple[str, ...]
    outcome: str
    message: str = ""


@functools.lru_cache(maxsize=1)
def collect_cases() -> list[Any]:
    """Every node test case the installed onnx package defines (built once per process:
    materializing them takes seconds; callers must not change the list)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the definitions divide by zero on purpose
        return [c for c in collect_testcases() if c.model is not None]


def case_ops(case: Any) -> tuple[str, ...]:
    """The operator types a case's graph uses."""
    return tuple(sorted({n.op_type for n in case.model.graph.node}))


def cases_using(ops: set[str] | frozenset[str]) -> dict[str, Any]:
    """The node cases whose graph uses any of ``ops``, by name."""
    return {c.name: c for c in collect_cases() if set(case_ops(c)) & set(ops)}


def failures(cases: Any, skip: set[str] | frozenset[str] = frozenset()
             ) -> list[tuple[str, str, str]]:
    """Runs ``cases`` (those not named in ``skip``); (name, outcome, message) of each that
    does not pass."""
    out = []
    for case in cases:
        if case.name in skip:
            continue
        r = run_case(case)
        if r.outcome != "pass":
            out.append((r.name, r.outcome, r.message))
    return out


def _compare(got: np.ndarray, want: np.ndarray, atol: float) -> str | None:
    want = np.asarray(want)
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"shape {got.shape} != expected {want.shape}"
    if want.dtype.name == "bfloat16" and got.dtype == np.uint16:  # irc gives its bits
        got = got.view(want.dtype)
    low = want.dtype.name == "bfloat16" or want.dtype.name in dt.FLOAT_FORMATS
    if want.dtype.kind in "fc" or low:
        if got.dtype != want.dtype:
            return f"dtype {got.dtype} != expected {want.dtype}"
        if low:
            got, want = got.astype("float32"), want.astype("float32")
        ok = np.isclose(got, want, rtol=1e-3, atol=atol, equal_nan=True)
        if not ok.all():
            bad = np.argwhere(~ok)[0]
            return (f"{int((~ok).sum())} of {ok.size} values differ; at {tuple(bad)}: "
                    f"{got[tuple(bad)]!r} != {want[tuple(bad)]!r}")
        return None
    if want.dtype.kind == "U" or want.dtype == object:
        return "string outputs are not supported"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != expected {want.dtype}"
    if not np.array_equal(got, want):
        return "values differ"
    return None


def _arrays(values: Any) -> list[Any]:
    """A data set's values as numpy arrays (some cases store ``TensorProto``s)."""
    import onnx

    return [onnx.numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v
            for v in values]


def run_case(case: Any, target: str = "llvm") -> CaseResult:
    """Import, compile and run one case; never raises."""
    from ..frontend.onnx import from_onnx
    from ..runtime import cpu, tensor
    from ..vm.build import compile as irc_compile
    from ..vm.vm import VirtualMachine

    ops = case_ops(case)
    try:
        mod = from_onnx(case.model)
        ex = irc_compile(mod, target)
        vm = VirtualMachine(ex, cpu())
        for inputs, outputs in case.data_sets:
            inputs, outputs = _arrays(inputs), _arrays(outputs)
            args = [tensor(np.asarray(a)) for a in inputs]
            res = vm["main"](*args)
            got = list(res) if isinstance(res, (list, tuple)) else [res]
            if len(got) != len(outputs):
                return CaseResult(case.name, ops, "mismatch",
                                  f"{len(got)} outputs, expected {len(outputs)}")
            for i, (g, w) in enumerate(zip(got, outputs)):
                msg = _compare(g.numpy(), w, max(float(case.atol or 0), 1e-5))
                if msg is not None:
                    return CaseResult(case.name, ops, "mismatch", f"output {i}: {msg}")
        return CaseResult(case.name, ops, "pass")
    except UnsupportedOperatorError as err:
        return CaseResult(case.name, ops, "unsupported", err.message.splitlines()[-1].strip())
    except IRCError as err:
        return CaseResult(case.name, ops, "error", err.message.splitlines()[0])
    except Exception as err:  # noqa: BLE001 - a bug in irc: reported as a crash, not raised
        return CaseResult(case.name, ops, "crash", f"{type(err).__name__}: {err}")


def support_table(results: list[CaseResult]) -> str:
    """The Markdown table of ONNX operator types: how irc converts each (its converters'
    opsets, or ONNX's function body) and how many node-test cases using it pass, with the
    reasons of the others."""
    import onnx

    from ..frontend.onnx import supported_ops
    from ..frontend.onnx.importer import function_kind

    conv = supported_ops()
    newest = onnx.defs.onnx_opset_version()
    by_op: dict[str, list[CaseResult]] = collections.defaultdict(list)
    for r in results:
        for op in r.ops:
            by_op[op].append(r)
    ops = sorted(set(by_op) | set(conv))
    total = len(results)
    passed = sum(r.outcome == "pass" for r in results)
    lines = [
        "# ONNX operators in irc",
        "",
        "Generated by `python -m irc.testing.onnx_node_cases --table docs/onnx_operators.md` "
        f"from irc's converter table and a run of ONNX's {total} backend node-test cases "
        f"(onnx {onnx.__version__}): **{passed} pass ({passed / max(total, 1):.1%})**.",
        "",
        "*How*: `converter (since N, M)` — irc's converters, each valid from that opset; "
        "`function body` — expanded through the function ONNX defines for the operator; "
        "`—` — not converted. *Cases*: node-test cases whose graph uses the operator "
        "(the `_expanded` variants count for the operators of their bodies).",
        "",
        "| Operator | How | Cases passing | Why the others fail |",
        "| --- | --- | --- | --- |",
    ]
    for op in ops:
        if op in conv:
            how = "converter (since " + ", ".join(str(v) for v in conv[op]) + ")"
        elif function_kind(onnx, op, newest) is not None:
            how = "function body"
        else:
            how = "—"
        rs = by_op.get(op, [])
        ok = sum(r.outcome == "pass" for r in rs)
        reasons = collections.Counter(
            f"{r.outcome}: {_short(r.message)}" for r in rs if r.outcome != "pass")
        why = "; ".join(f"{n}× {m}" if n > 1 else m for m, n in reasons.most_common(3))
        if len(reasons) > 3:
            why += f"; {len(reasons) - 3} more"
        lines.append(f"| {op} | {how} | {ok}/{len(rs)} | {why.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def _short(message: str) -> str:
    m = message.split("): ", 1)[-1] if message.startswith("ONNX node ") else message
    return m[:90] + ("…" if len(m) > 90 else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="run ONNX's node tests through irc")
    p.add_argument("--op", action="append", help="only cases using this operator type")
    p.add_argument("--name", help="only cases whose name contains this")
    p.add_argument("--show", default="mismatch,crash,error",
                   help="outcomes to list case by case (comma-separated)")
    p.add_argument("--table", help="write the Markdown support table to this file")
    args = p.parse_args(argv)
    cases = collect_cases()
    if args.op:
        cases = [c for c in cases if set(args.op) & set(case_ops(c))]
    if args.name:
        cases = [c for c in cases if args.name in c.name]
    results = []
    for c in cases:
        r = run_case(c)
        results.append(r)
        if r.outcome in args.show.split(","):
            print(f"{r.outcome:11s} {r.name}: {r.message}"[:300], flush=True)
    counts = collections.Counter(r.outcome for r in results)
    total = len(results)
    print(f"{total} cases: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()) +
          f"; pass rate {counts['pass'] / max(total, 1):.1%}")
    if args.table:
        os.makedirs(os.path.dirname(os.path.abspath(args.table)), exist_ok=True)
        with open(args.table, "w", encoding="utf-8") as f:
            f.write(support_table(results))
        print(f"wrote {args.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
