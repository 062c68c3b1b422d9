"""CUDA graphs: a static VM function on a GPU replayed with one driver call.

Launching a kernel from Python costs tens of microseconds of host time (argument checks,
packing, the driver call); a batch-1 network of a few hundred kernels spends more time
launching than the GPU spends computing. A CUDA graph records the launches once and
replays all of them with one ``cuGraphLaunch``.

**What is captured.** :func:`capture_plan` decides per VM function, from its bytecode
alone: a function is captured when it is straight-line code (no ``if``/``goto``, no
``call`` into another VM function) whose runtime functions all come from library
modules that declare themselves capturable (cuBLAS, :attr:`~irc.runtime.external.
ExternalModule.graph_capturable`), whose parameters are tensors, shapes or scalars (not
tuples), and which launches at least one kernel. Everything such a function does is then
fixed by its parameters' shapes, scalar values and data addresses: the graph of one
*binding* (the values of its symbolic dimensions and scalar parameters) is captured once
and replayed for every call with that binding; a function with symbolic shapes keeps one
graph per binding it has seen (the :data:`MAX_GRAPHS` most recent). Any other function
runs instruction by instruction, as without graphs, and :func:`capture_plan` says why.

**Addresses.** A graph bakes in the address of every tensor it touches. Planned storage,
constants and the memory allocated while capturing (outputs, kernels' scratch) belong to
the graph and keep their addresses. Parameters need care, since callers pass new tensors:

- the first call with a binding runs eagerly (it also loads modules and creates library
  handles, which a capture cannot do) and notes each parameter's address;
- the second captures: a parameter whose address changed between the two calls is
  *staged* (the graph reads a buffer of its own, into which each call copies the
  argument on the GPU), one whose address stayed (weights passed on every call) is read
  in place;
- a later call whose in-place parameter moved captures again with that parameter staged
  (at most :data:`MAX_RECAPTURES` times per binding, then the binding runs eagerly).

A parameter that a kernel writes is never staged (the write must reach the caller's
tensor): when its address changes the graph is captured again.

**Results** that the graph computed into its own memory are copied into new tensors on
the GPU after each replay (an asynchronous device copy), so a result stays valid after
later calls, as it does without graphs; results that are parameters or constants are
returned as they are.

**Errors.** A capture that fails (a kernel that waits for the GPU, an unsupported call)
is logged with its reason on the ``irc.vm.cuda_graph`` logger, and that binding runs
eagerly from then on. ``VirtualMachine(ex, irc.cuda(0), cuda_graphs=False)`` turns graphs
off.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from ..core.diagnostics import IRCError
from ..runtime import cuda_backend
from ..runtime.ndarray import Tensor
from ..runtime.ndarray import empty as device_empty
from .bytecode import VMFunction
from .executable import Executable

logger = logging.getLogger(__name__)

# Graphs kept per function (one per binding of its symbolic shapes and scalars).
MAX_GRAPHS = 8
# Captures of one binding after the first, for in-place parameters whose address changed.
MAX_RECAPTURES = 4
_CAPTURED_OPS = frozenset(("const", "alloc", "kernel", "packed", "tuple", "getitem", "move",
                           "shape", "prim", "match", "ret"))


@dataclass(frozen=True)
class CapturePlan:
    """Whether VM function ``function`` runs as CUDA graphs: ``captured``, else
    ``reason`` (why not); ``launches``: the kernel and library calls one run makes;
    ``per_binding``: one graph per binding of symbolic shapes or scalar parameters."""

    function: str
    captured: bool
    reason: str = ""
    launches: int = 0
    per_binding: bool = False

    def __str__(self) -> str:
        if not self.captured:
            return f"{self.function}: not captured ({self.reason})"
        per = ", one graph per binding of its shapes and scalars" if self.per_binding else ""
        return f"{self.function}: captured ({self.launches} launches{per})"


def plan_function(fn: VMFunction, capturable: Callable[[str], bool]) -> CapturePlan:
    """The :class:`CapturePlan` of ``fn``, whose runtime function ``name`` may be captured
    when ``capturable(name)``."""
    def refuse(reason: str) -> CapturePlan:
        return CapturePlan(fn.name, False, reason)

    per_binding = False
    for name, chk in zip(fn.params, fn.param_checks):
        if chk.kind == "tensor":
            per_binding |= chk.dims is None or any(type(d) is not int for d in chk.dims)
        elif chk.kind in ("shape", "prim"):
            per_binding = True
        else:
            return refuse(f"parameter {name} is a {chk.kind}, not a tensor, shape or scalar")
    launches = 0
    for pc, ins in enumerate(fn.code):
        op = ins[0]
        if op not in _CAPTURED_OPS:
            what = {"if": "control flow", "goto": "control flow",
                    "call": f"a call of VM function {ins[1]}"}.get(op, f"instruction {op}")
            return refuse(f"{what} at instruction {pc}")
        if op == "kernel":
            launches += 1
        elif op == "packed":
            if not capturable(ins[1]):
                return refuse(f"runtime function {ins[1]} is not known to be safe to "
                              "capture (only library modules that declare it are)")
            launches += 1
        elif op == "alloc" and not fn.allocs[ins[2]].static:
            per_binding = True
    if not launches:
        return refuse("it launches nothing")
    return CapturePlan(fn.name, True, launches=launches, per_binding=per_binding)


def capture_plan(exe: Executable, name: str) -> CapturePlan:
    """Whether function ``name`` of ``exe`` runs as CUDA graphs on a GPU, and why not
    when it does not (decided from the bytecode; needs no GPU)."""
    fn = exe.functions.get(name)
    if fn is None:
        raise IRCError(f"the executable has no function {name!r}; it has "
                       f"{', '.join(exe.functions) or 'none'}")
    return plan_function(fn, capturable_functions(exe).__contains__)


def capturable_functions(exe: Executable) -> frozenset[str]:
    """The runtime functions of ``exe``'s library modules that may be captured."""
    return frozenset(n for m in exe.external if m.graph_capturable for n in m.function_names)


@dataclass
class _Binding:
    """What a :class:`GraphRunner` knows about one binding of shapes and scalars."""

    addresses: tuple  # per parameter: its address on the last call (None: not a tensor)
    graph: Any = None  # the cuda_backend.Graph, once captured
    baked: tuple = ()  # per parameter: the address the graph reads in place, or None
    staged: Any = None  # parameter index -> the graph's buffer for it
    result: Any = None  # how to build the result (see _template)
    recaptures: int = 0
    eager: str = ""  # why this binding runs eagerly for good (empty: it does not)


def _copy(dst: Tensor, src: Tensor) -> None:
    """Queue a copy of GPU tensor ``src`` into ``dst`` (same size) on the current stream."""
    if src.nbytes:
        cuda_backend.copy_device_to_device_async(dst._mem, src._mem, src.nbytes)


def _plain(value: Any) -> bool:
    """Whether ``value`` (a shape or scalar argument) is plain Python data."""
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return isinstance(value, (bool, int, float))


class GraphRunner:
    """Runs one captured VM function (see the module docstring): ``run(values, heap,
    eager)`` with the checked parameter values, the shape heap they bound and the
    function's eager run ``eager(values, heap)``."""

    def __init__(self, fn: VMFunction, device: Any, constants: list,
                 written: frozenset[int]):
        self.fn = fn
        self.device = device
        self.written = written
        self._constants = {id(c) for c in constants}
        self._tensor_params = [c.kind == "tensor" for c in fn.param_checks]
        self._bindings: OrderedDict[tuple, _Binding] = OrderedDict()
        self.captures = 0
        self.replays = 0

    def run(self, values: list, heap: list, eager: Callable[[list, list], Any]) -> Any:
        scalars = tuple(v for v, t in zip(values, self._tensor_params) if not t)
        if not all(_plain(v) for v in scalars):
            return eager(values, heap)  # a scalar held in a tensor: its value is data
        key = (tuple(heap), scalars)
        addresses = tuple(v.data_ptr if t else None
                          for v, t in zip(values, self._tensor_params))
        b = self._bindings.get(key)
        if b is None:  # the first call of this binding runs eagerly and notes addresses
            self._bindings[key] = _Binding(addresses)
            while len(self._bindings) > MAX_GRAPHS:
                self._bindings.popitem(last=False)
            return eager(values, heap)
        self._bindings.move_to_end(key)
        if b.eager:
            return eager(values, heap)
        if b.graph is not None:
            moved = [i for i, a in enumerate(b.baked) if a is not None and a != addresses[i]]
            if not moved:
                return self._replay(b, values)
            b.recaptures += 1
            if b.recaptures > MAX_RECAPTURES:
                return self._give_up(b, values, heap, eager,
                                     f"parameter {self.fn.params[moved[0]]} of a binding "
                                     f"changed address on {b.recaptures} calls")
            b.addresses = tuple(None if i in moved else a for i, a in enumerate(b.baked))
        try:
            self._capture(b, values, heap, eager, addresses)
        except IRCError as err:
            return self._give_up(b, values, heap, eager, f"capture failed: {err}")
        return self._replay(b, values)

    def _give_up(self, b: _Binding, values: list, heap: list,
                 eager: Callable[[list, list], Any], reason: str) -> Any:
        logger.warning("%s runs without a CUDA graph: %s", self.fn.name, reason)
        b.eager = reason
        b.graph = b.staged = b.result = None
        return eager(values, heap)

    def _capture(self, b: _Binding, values: list, heap: list,
                 eager: Callable[[list, list], Any], addresses: tuple) -> None:
        staged: dict[int, Tensor] = {}
        for i, (a, last) in enumerate(zip(addresses, b.addresses)):
            if a is not None and a != last and i not in self.written:
                v = values[i]
                staged[i] = device_empty(v.shape, v.dtype, self.device)
        inputs = [staged.get(i, v) for i, v in enumerate(values)]
        # The function's own allocations register with the capture (keep_alive).
        graph, result = cuda_backend.capture(self.device.index,
                                             lambda: eager(inputs, list(heap)))
        self.captures += 1
        b.graph, b.staged = graph, staged
        b.baked = tuple(None if (a is None or i in staged) else a
                        for i, a in enumerate(addresses))
        b.addresses = addresses
        b.result = self._template(result, inputs)

    def _template(self, value: Any, inputs: list) -> Any:
        """``value`` (a capture's result) as a recipe: ``("param", i)``, ``("copy",
        tensor)``, ``("same", value)`` or ``("tuple", [...])``."""
        if isinstance(value, tuple):
            return ("tuple", [self._template(v, inputs) for v in value])
        if isinstance(value, Tensor):
            for i, v in enumerate(inputs):
                if v is value:
                    return ("param", i)
            if id(value) in self._constants:
                return ("same", value)
            return ("copy", value)
        return ("same", value)

    def _replay(self, b: _Binding, values: list) -> Any:
        for i, buf in b.staged.items():
            _copy(buf, values[i])
        b.graph.launch()
        self.replays += 1
        return self._build(b.result, values)

    def _build(self, recipe: tuple, values: list) -> Any:
        kind, item = recipe
        if kind == "tuple":
            return tuple(self._build(r, values) for r in item)
        if kind == "param":
            return values[item]
        if kind == "copy":
            out = device_empty(item.shape, item.dtype, self.device)
            _copy(out, item)
            return out
        return item

    def stats(self) -> dict[str, Any]:
        """``captures`` and ``replays`` so far, ``graphs`` held, and ``eager``: the
        reasons of bindings that run without a graph."""
        return {"captures": self.captures, "replays": self.replays,
                "graphs": sum(b.graph is not None for b in self._bindings.values()),
                "eager": [b.eager for b in self._bindings.values() if b.eager]}
