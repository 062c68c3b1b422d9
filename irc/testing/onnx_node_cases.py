"""ONNX's backend node tests, driven through irc as a user would: each case's model through
``from_onnx`` -> ``irc.compile`` -> the VM, every data set's outputs compared with the
expected ones: the dtypes exactly (bfloat16 and the narrow float formats as ml_dtypes'
arrays), values with rtol 1e-3 for float16/32/64 and bfloat16, bit for bit for the narrow
float formats (any NaN equal to any NaN), exactly for integers and bools.

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
import re
import sys
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import IRCError, UnsupportedOperatorError
from ..runtime import cpu, tensor
from ..vm.build import compile as irc_compile
from ..vm.vm import VirtualMachine


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
    if want.dtype.kind == "U" or want.dtype == object:
        return "string outputs are not supported"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != expected {want.dtype}"
    if want.dtype.name in dt.FLOAT_FORMATS:  # every bit pattern a value: compared exactly
        ok = (got.view(np.uint8) == want.view(np.uint8)) | (np.isnan(got) & np.isnan(want))
    elif want.dtype.kind in "fc" or want.dtype.name == "bfloat16":
        rtol = 1e-3
        if want.dtype.itemsize == 2:
            # 16-bit floats: within two units in the last place. The expected data of
            # a function-body case rounds at every operator; irc rounds once.
            rtol = max(rtol, 2.0 * float(_eps(want.dtype)))
            got, want = got.astype("float32"), want.astype("float32")
        ok = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    elif not np.array_equal(got, want):
        return "values differ"
    else:
        return None
    if not ok.all():
        bad = tuple(int(i) for i in np.argwhere(~ok)[0])
        return (f"{int((~ok).sum())} of {ok.size} values differ; at {bad}: "
                f"{got[bad]!r} != {want[bad]!r}")
    return None


def _compare_value(got: Any, want: Any, atol: float) -> str | None:
    """:func:`_compare` of an output, element by element where it is a sequence (a list
    expected, a tuple from irc)."""
    if isinstance(want, list):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            return f"a sequence of {len(want)} tensors expected, got {type(got).__name__}"
        for j, (g, w) in enumerate(zip(got, want)):
            msg = _compare_value(g, w, atol)
            if msg is not None:
                return f"element {j}: {msg}"
        return None
    if isinstance(got, (list, tuple)):
        return f"a tensor expected, got a sequence of {len(got)}"
    return _compare(got.numpy(), want, atol)


def _eps(dtype: np.dtype) -> float:
    """The machine epsilon of a float dtype numpy or ml_dtypes defines."""
    if dtype.name == "bfloat16":
        import ml_dtypes

        return float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps)
    return float(np.finfo(dtype).eps)


def _arrays(values: Any) -> list[Any]:
    """A data set's values as numpy arrays (some cases store ``TensorProto``s)."""
    import onnx

    return [onnx.numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v
            for v in values]


def run_case(case: Any, target: str = "llvm") -> CaseResult:
    """Import, compile and run one case; never raises."""
    from ..frontend.onnx import from_onnx

    ops = case_ops(case)
    n_out = len(case.model.graph.output)
    atol = max(float(case.atol or 0), 1e-5)
    try:
        vm = None
        for inputs, outputs in case.data_sets:
            inputs, outputs = _arrays(inputs), _arrays(outputs)
            # A sequence input's length and element shapes are fixed at import: a model
            # with one is compiled for each data set.
            seqs = {vi.name: [list(np.shape(a)) for a in v]
                    for vi, v in zip(case.model.graph.input, inputs) if isinstance(v, list)}
            if vm is None or seqs:
                mod = from_onnx(case.model, shape_dict=seqs or None)
                vm = VirtualMachine(irc_compile(mod, target), cpu())
            args = [[tensor(np.asarray(e)) for e in a] if isinstance(a, list)
                    else tensor(np.asarray(a)) for a in inputs]
            res = vm["main"](*args)
            got = [res] if n_out == 1 else list(res)
            if len(got) != len(outputs):
                return CaseResult(case.name, ops, "mismatch",
                                  f"{len(got)} outputs, expected {len(outputs)}")
            for i, (g, w) in enumerate(zip(got, outputs)):
                msg = _compare_value(g, w, atol)
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
    opsets, or ONNX's function body), or why it leaves it out (the reasons of
    ``irc.frontend.onnx.registry``, which the importer's errors give too), and how many
    node-test cases using it pass, with the reasons of the others; then the list of what
    irc leaves out deliberately."""
    import onnx

    from ..frontend.onnx import supported_ops
    from ..frontend.onnx.functions import function_kind
    from ..frontend.onnx.registry import REFUSED, REFUSED_DOMAINS, REFUSED_USES, refusal

    conv = supported_ops()
    newest = onnx.defs.onnx_opset_version()
    domains = {n.op_type: n.domain for c in collect_cases() for n in c.model.graph.node}
    by_op: dict[str, list[CaseResult]] = collections.defaultdict(list)
    for r in results:
        for op in r.ops:
            by_op[op].append(r)
    ops = sorted(set(by_op) | set(conv) | set(REFUSED))
    total = len(results)
    passed = sum(r.outcome == "pass" for r in results)
    lines = [
        "# ONNX operators in irc",
        "",
        "Generated by `python -m irc.testing.onnx_node_cases --table docs/onnx_operators.md` "
        f"from irc's converter table and a run of ONNX's {total} backend node-test cases "
        f"(onnx {onnx.__version__}): **{passed} pass ({passed / max(total, 1):.1%})**.",
        "",
        "*How*: `converter (since N, M)` — irc's converters, each valid from that opset (of "
        "the operator's domain); `function body` — expanded through the function ONNX "
        "defines for the operator; `left out` — deliberately not converted, for the reason "
        "listed below the table; `—` — not converted. *Cases*: node-test cases whose graph "
        "uses the operator (the `_expanded` variants count for the operators of their "
        "bodies).",
        "",
        "| Operator | How | Cases passing | Why the others fail |",
        "| --- | --- | --- | --- |",
    ]
    for op in ops:
        domain = domains.get(op, "")
        if op in conv:
            how = "converter (since " + ", ".join(str(v) for v in conv[op]) + ")"
            if domain not in ("", "ai.onnx"):
                how += f", {domain}"
        elif refusal(op, domain) is not None:
            how = "left out" + (f" ({domain})" if domain else "")
        elif domain in ("", "ai.onnx") and function_kind(onnx, op, newest) is not None:
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
    lines += [
        "",
        "## What irc leaves out, and why",
        "",
        "Deliberate: the import fails with `irc.UnsupportedOperatorError` giving the reason "
        "(or, where only a run-time value decides, the call fails naming it).",
        "",
        "| Left out | Reason |",
        "| --- | --- |",
    ]
    lines += [f"| {op} | {why} |" for op, why in sorted(REFUSED.items())]
    lines += [f"| {use} | {why} |" for use, why in sorted(REFUSED_USES.items())]
    lines += [f"| domain {domain} | {why} |" for domain, why in sorted(REFUSED_DOMAINS.items())]
    return "\n".join(lines) + "\n"


# "Op (domain, opset N): 2 nodes, first 'a', 'b'; " before a refusal's reason
_MISSING = re.compile(r"^\S+ \([^)]*\): \d+ nodes?, first .*?; (?=\S)")


def _short(message: str) -> str:
    m = message.split("): ", 1)[-1] if message.startswith("ONNX node ") else message
    m = _MISSING.sub("", m)
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
