"""The trace of a schedule: its instructions and sampling decisions, replayable onto the
unscheduled function, serializable to JSON and printable as Python.

JSON form (what tuning records store)::

    [[["GetBlock", [], ["C", "main"], ["b0"]],
      ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
      ["SamplePerfectTile", ["l1"], [2, 64], ["v4", "v5"]],
      ["Split", ["l1", "v4", "v5"], [true], ["l6", "l7"]]],
     [[2, [16, 64]]]]

Random variables are named by kind (``b`` blocks, ``l`` loops, ``v`` integers) and a
counter; string inputs (annotation values) are wrapped as ``{"value": ...}``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping

from ...core.diagnostics import ScheduleError
from .instruction import KINDS, RV_TYPES, BlockRV, ExprRV, Instruction, LoopRV, call_arguments

if TYPE_CHECKING:
    from .schedule import Schedule

_PREFIX_TYPES = {"b": BlockRV, "l": LoopRV, "v": ExprRV}


class Trace:
    """An ordered list of instructions and the decisions of its sampling instructions."""

    def __init__(self, insts: list[Instruction] | None = None,
                 decisions: Mapping[Instruction, Any] | None = None):
        self.insts: list[Instruction] = list(insts or [])
        self.decisions: dict[Instruction, Any] = dict(decisions or {})

    # -- building ---------------------------------------------------------------------
    def append(self, inst: Instruction, decision: Any = None) -> None:
        """Add an instruction (with its decision for sampling instructions)."""
        self.insts.append(inst)
        if decision is not None:
            self.decisions[inst] = decision

    def pop(self) -> Instruction | None:
        """Remove and return the last instruction."""
        if not self.insts:
            return None
        inst = self.insts.pop()
        self.decisions.pop(inst, None)
        return inst

    def copy(self) -> Trace:
        """A shallow copy (instructions are shared, the lists are not)."""
        return Trace(self.insts, self.decisions)

    def get_decision(self, inst: Instruction) -> Any:
        """The decision recorded for ``inst`` (None when it has none)."""
        return self.decisions.get(inst)

    def _until_postproc(self, remove_postproc: bool) -> list[Instruction]:
        if not remove_postproc:
            return self.insts
        out = []
        for inst in self.insts:
            if inst.kind.name == "EnterPostproc":
                break
            out.append(inst)
        return out

    def with_decision(self, inst: Instruction, decision: Any, remove_postproc: bool) -> Trace:
        """A copy with ``inst``'s decision replaced (the basis of mutation)."""
        insts = self._until_postproc(remove_postproc)
        decisions = {i: d for i, d in self.decisions.items() if i in set(insts)}
        decisions[inst] = decision
        return Trace(insts, decisions)

    def simplified(self, remove_postproc: bool) -> Trace:
        """A copy without pure instructions whose outputs nothing uses."""
        insts = self._until_postproc(remove_postproc)
        used: set[int] = set()
        keep: list[Instruction] = []
        for inst in reversed(insts):
            needed = not inst.kind.pure or any(id(o) in used for o in inst.outputs)
            if needed:
                keep.append(inst)
                for x in _flat(inst.inputs):
                    if isinstance(x, RV_TYPES):
                        used.add(id(x))
        keep.reverse()
        return Trace(keep, {i: d for i, d in self.decisions.items() if i in set(keep)})

    # -- replay -----------------------------------------------------------------------
    def apply_to_schedule(self, sch: Schedule, remove_postproc: bool = False,
                          decisions: Mapping[Any, Any] | None = None) -> None:
        """Replay the instructions on ``sch`` (usually a fresh schedule of the
        unscheduled function). ``decisions`` replaces the decisions of some sampling
        instructions, keyed by the Instruction or by its position in the trace."""
        rv_map: dict[int, Any] = {}
        override: dict[Any, Any] = {}
        if decisions:
            for k, v in decisions.items():
                override[id(self.insts[k]) if isinstance(k, int) else id(k)] = v
        for inst in self._until_postproc(remove_postproc):
            kind = inst.kind
            inputs = [_map_rv(x, rv_map) for x in inst.inputs]
            args, kwargs = call_arguments(kind, inputs, inst.attrs)
            if kind.sampling:
                kwargs["decision"] = override.get(id(inst), self.decisions.get(inst))
            result = getattr(sch, kind.method)(*args, **kwargs)
            outs = [] if result is None else (list(result) if kind.returns == "list"
                                                else [result])
            if len(outs) != len(inst.outputs):
                raise ScheduleError(
                    f"replaying {kind.name}: the schedule produced {len(outs)} outputs but "
                    f"the trace recorded {len(inst.outputs)}; the trace does not fit this "
                    "function")
            for old, new in zip(inst.outputs, outs):
                rv_map[id(old)] = new

    # -- JSON -------------------------------------------------------------------------
    def to_json(self, remove_postproc: bool = False) -> list:
        """The trace as JSON-compatible lists (see the module docstring)."""
        insts = self._until_postproc(remove_postproc)
        names = _Names()
        out_insts = []
        out_decisions = []
        for i, inst in enumerate(insts):
            inputs = [names.encode(x) for x in inst.inputs]
            outputs = [names.define(o) for o in inst.outputs]
            out_insts.append([inst.kind.name, inputs, list(inst.attrs), outputs])
            if inst in self.decisions:
                out_decisions.append([i, self.decisions[inst]])
        return [out_insts, out_decisions]

    @staticmethod
    def apply_json_to_schedule(obj: Any, sch: Schedule) -> None:
        """Replay a trace given as JSON (list or string) onto ``sch``."""
        Trace.from_json(obj).apply_to_schedule(sch)

    def to_json_str(self, remove_postproc: bool = False) -> str:
        """:meth:`to_json` as a compact JSON string."""
        return json.dumps(self.to_json(remove_postproc), separators=(",", ":"))

    @staticmethod
    def from_json(obj: Any) -> Trace:
        """The trace of :meth:`to_json` output (a list or a JSON string)."""
        if isinstance(obj, str):
            try:
                obj = json.loads(obj)
            except json.JSONDecodeError as err:
                raise ScheduleError(f"trace JSON is not valid JSON: {err}") from None
        if not (isinstance(obj, list) and len(obj) == 2 and isinstance(obj[0], list)):
            raise ScheduleError("trace JSON must be [instructions, decisions]")
        rvs: dict[str, Any] = {}
        insts: list[Instruction] = []
        for n, item in enumerate(obj[0]):
            if not (isinstance(item, list) and len(item) == 4):
                raise ScheduleError(f"trace JSON instruction #{n} must be [kind, inputs, "
                                    "attrs, outputs]")
            name, inputs, attrs, outputs = item
            kind = KINDS.get(name)
            if kind is None:
                raise ScheduleError(f"trace JSON instruction #{n} has the unknown kind "
                                    f"{name!r}")
            ins = [_decode(x, rvs, n) for x in inputs]
            outs = []
            for o in outputs:
                if not isinstance(o, str) or o[:1] not in _PREFIX_TYPES:
                    raise ScheduleError(f"trace JSON instruction #{n}: bad output name {o!r}")
                rv = _PREFIX_TYPES[o[0]]()
                rvs[o] = rv
                outs.append(rv)
            insts.append(Instruction(kind, ins, list(attrs), outs))
        decisions = {}
        for entry in obj[1]:
            if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], int)
                    and 0 <= entry[0] < len(insts)):
                raise ScheduleError(f"trace JSON decision {entry!r} must be [index, decision]")
            decisions[insts[entry[0]]] = entry[1]
        return Trace(insts, decisions)

    # -- Python -----------------------------------------------------------------------
    def as_python(self, remove_postproc: bool = False) -> str:
        """The trace as Python statements on ``sch`` (executable with ``sch`` in scope)."""
        return "\n".join(self.as_python_lines(remove_postproc))

    def as_python_lines(self, remove_postproc: bool = False) -> list[str]:
        """:meth:`as_python`, one statement per list item."""
        names = _Names()
        lines = []
        for inst in self._until_postproc(remove_postproc):
            kind = inst.kind
            inputs = [_Code(names.python(x)) for x in inst.inputs]
            attrs = [_Code(a) if k == "index_map" else _py_value(a)
                     for k, a in zip(kind.attrs, inst.attrs)]
            args, kwargs = call_arguments(kind, inputs, attrs)
            if kind.sampling and inst in self.decisions:
                kwargs["decision"] = _py_value(self.decisions[inst])
            parts = [str(a) for a in args] + [f"{k}={_text(v)}" for k, v in kwargs.items()]
            call = f"sch.{kind.method}({', '.join(parts)})"
            outs = [names.define(o) for o in inst.outputs]
            if kind.returns == "list":
                if not outs:
                    lines.append(f"_ = {call}")
                elif len(outs) == 1:
                    lines.append(f"{outs[0]}, = {call}")
                else:
                    lines.append(f"{', '.join(outs)} = {call}")
            elif kind.returns == "one" and outs:
                lines.append(f"{outs[0]} = {call}")
            else:
                lines.append(call)
        return lines

    def __str__(self) -> str:
        return self.as_python()

    def __len__(self) -> int:
        return len(self.insts)


class _Code(str):
    """Text printed as is (already Python source)."""


def _text(v: Any) -> str:
    if isinstance(v, _Code):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    return repr(v)


def _py_value(v: Any) -> Any:
    if isinstance(v, list):
        return [_py_value(x) for x in v]
    return _Code(_literal(v))


def _literal(v: Any) -> str:
    """Python source of a constant (strings in double quotes)."""
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


class _Names:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.count = 0

    def define(self, rv: Any) -> str:
        name = f"{rv.prefix}{self.count}"
        self.count += 1
        self.names[id(rv)] = name
        return name

    def name_of(self, rv: Any) -> str:
        name = self.names.get(id(rv))
        if name is None:
            raise ScheduleError("the trace uses a random variable that no earlier "
                                "instruction defines")
        return name

    def encode(self, x: Any) -> Any:
        if isinstance(x, RV_TYPES):
            return self.name_of(x)
        if isinstance(x, str):
            return {"value": x}
        if isinstance(x, (list, tuple)):
            return {"value": list(x)}
        return x

    def python(self, x: Any) -> Any:
        if isinstance(x, RV_TYPES):
            return self.name_of(x)
        if isinstance(x, list):
            return "[" + ", ".join(self.python(y) for y in x) + "]"
        return _literal(x)


def _decode(x: Any, rvs: dict[str, Any], n: int) -> Any:
    if isinstance(x, str):
        rv = rvs.get(x)
        if rv is None:
            raise ScheduleError(f"trace JSON instruction #{n} uses {x!r} before it is defined")
        return rv
    if isinstance(x, dict):
        if set(x) != {"value"}:
            raise ScheduleError(f"trace JSON instruction #{n}: bad input {x!r}")
        return x["value"]
    return x


def _map_rv(x: Any, rv_map: dict[int, Any]) -> Any:
    if isinstance(x, RV_TYPES):
        new = rv_map.get(id(x))
        if new is None:
            raise ScheduleError("the trace uses a random variable that no earlier "
                                "instruction defines")
        return new
    return x


def _flat(xs: list[Any]):
    for x in xs:
        if isinstance(x, (list, tuple)):
            yield from _flat(list(x))
        else:
            yield x
