"""Compiled CUDA programs: a cubin, its kernels, and the host plan of each function.

``irc.build(func, target="cuda")`` returns a :class:`CUDAProgramModule`. Each of its
functions has a **host plan** (what the host does for one call), stored as JSON data so
that a module can be saved inside a VM executable and loaded without compiling again:

- ``params``: the function's parameters in order, each ``{"kind": "buffer", "name",
  "dtype", "shape": [expr...], "slot", "written"}`` (a tensor on a CUDA device; its data
  pointer goes to ``slot``, a dimension that is a bare variable binds it, and
  ``written`` says whether a kernel may store into it) or ``{"kind": "scalar",
  "name", "dtype", "slot"}``;
- ``steps``, run in order: ``["let", slot, expr]``, ``["assert", expr, message]``,
  ``["alloc", slot, dtype, expr]`` (global scratch memory of ``expr`` elements),
  ``["free", slot]`` and ``["launch", kernel, [grid x3], [block x3], [slot...]]``.
  Kernels launch on the thread's current stream (:func:`irc.runtime.cuda_backend.
  current_stream`), so a VM can capture a function's launches into a CUDA graph; scratch
  memory allocated during a capture stays alive with the graph.

An expression is a literal (int, float, bool), ``["var", slot]``, or ``[op, args...]``
with ``op`` one of add, sub, mul, floordiv, floormod, truncdiv, truncmod, div (float),
min, max, eq, ne, lt, le, gt, ge, and, or, not, ``["cast", dtype, x]`` and
``["select", cond, a, b]``. Plans are turned into Python closures once, at load.

The serialized form is ``MAGIC``, two little-endian u64 lengths, the JSON metadata
(format, target, CUDA source, kernels, plans) and the cubin.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import BuildError, IRCError
from .cuda_backend import keep_alive
from .cuda_module import CUDAModule, KernelSpec
from .device import Device
from .module import FunctionTable, pack_blob, unpack_blob
from .ndarray import Tensor, empty

MAGIC = b"IRCCUDA\x01"
FORMAT = "irc-cuda-program/1"

_Env = list
_Eval = Callable[[_Env], Any]


def _truncdiv(a: Any, b: Any) -> Any:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "floordiv": operator.floordiv, "floormod": operator.mod,
    "truncdiv": _truncdiv, "truncmod": lambda a, b: a - _truncdiv(a, b) * b,
    "div": operator.truediv, "min": min, "max": max,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge,
}


def compile_expr(e: Any) -> _Eval:
    """A closure evaluating encoded expression ``e`` on an environment of slots."""
    if isinstance(e, (bool, int, float)):
        return lambda env: e
    if not isinstance(e, list) or not e:
        raise IRCError(f"malformed host expression {e!r} in a CUDA program")
    op = e[0]
    if op == "var":
        slot = e[1]
        return lambda env: env[slot]
    fn = _BINARY.get(op)
    if fn is not None:
        a, b = compile_expr(e[1]), compile_expr(e[2])
        return lambda env: fn(a(env), b(env))
    if op == "and":
        a, b = compile_expr(e[1]), compile_expr(e[2])
        return lambda env: a(env) and b(env)
    if op == "or":
        a, b = compile_expr(e[1]), compile_expr(e[2])
        return lambda env: a(env) or b(env)
    if op == "not":
        a = compile_expr(e[1])
        return lambda env: not a(env)
    if op == "cast":
        kind, a = e[1], compile_expr(e[2])
        if dt.is_integer(kind):
            return lambda env: int(a(env))
        if kind == "bool":
            return lambda env: bool(a(env))
        return lambda env: float(a(env))
    if op == "select":
        c, a, b = compile_expr(e[1]), compile_expr(e[2]), compile_expr(e[3])
        return lambda env: a(env) if c(env) else b(env)
    raise IRCError(f"unknown operator {op!r} in a CUDA program's host expression")


class CUDAFunction:
    """One function of a :class:`CUDAProgramModule`: call it with CUDA tensors and
    scalars; it binds shape variables, checks every dimension, and launches its kernels
    in order on the tensors' GPU (asynchronously, on the default stream)."""

    def __init__(self, module: CUDAProgramModule, name: str, plan: dict):
        self.module = module
        self.name = name
        self.plan = plan
        self.num_slots = len(plan["slots"])
        self.params = plan["params"]
        self._shapes = [[compile_expr(d) for d in p["shape"]] if p["kind"] == "buffer"
                        else None for p in self.params]
        self._steps = [self._prepare(s) for s in plan["steps"]]

    def __repr__(self) -> str:
        return f"<irc CUDA function {self.name}>"

    @property
    def num_args(self) -> int:
        """The number of parameters."""
        return len(self.params)

    @property
    def argument_writes(self) -> list[bool] | None:
        """Per parameter, whether the function may write it (None when the plan does not
        say: a module saved before plans recorded it)."""
        if any(p["kind"] == "buffer" and "written" not in p for p in self.params):
            return None
        return [p["kind"] == "buffer" and bool(p["written"]) for p in self.params]

    def _prepare(self, step: list) -> Callable[[_Env, Device, list], None]:
        kind = step[0]
        if kind == "let":
            slot, value = step[1], compile_expr(step[2])

            def run(env, device, scratch):
                env[slot] = value(env)
            return run
        if kind == "assert":
            cond, message = compile_expr(step[1]), step[2]
            fname = self.name

            def run(env, device, scratch):
                if not cond(env):
                    raise IRCError(f"{fname}: {message}")
            return run
        if kind == "alloc":
            slot, dtype, extent = step[1], dt.element_of(step[2]), compile_expr(step[3])

            def run(env, device, scratch):
                t = empty((int(extent(env)),), dtype, device)
                scratch.append(t)
                keep_alive(t)  # a graph captured from this call keeps using it
                env[slot] = t
            return run
        if kind == "free":
            slot = step[1]

            def run(env, device, scratch):
                env[slot] = None
            return run
        if kind == "launch":
            kernel, block, slots = step[1], tuple(step[3]), step[4]
            grid = [compile_expr(g) for g in step[2]]
            launch = self.module.device_module.launch
            names = self.plan["slots"]
            fname = self.name

            def run(env, device, scratch):
                g = (int(grid[0](env)), int(grid[1](env)), int(grid[2](env)))
                if min(g) <= 0:
                    return  # nothing to compute (an empty dimension)
                values = []
                for s in slots:
                    v = env[s]
                    if v is None:
                        raise IRCError(f"{fname}: kernel {kernel} reads {names[s]!r}, which "
                                       "the host does not define")
                    values.append(v)
                launch(kernel, g, block, values, device=device)
            return run
        raise IRCError(f"unknown host step {kind!r} in a CUDA program")

    def __call__(self, *args: Any) -> None:
        params = self.params
        if len(args) != len(params):
            raise IRCError(f"{self.name} takes {len(params)} arguments, got {len(args)}")
        env: list = [None] * self.num_slots
        device: Device | None = None
        for j, (p, a) in enumerate(zip(params, args)):
            if p["kind"] != "buffer":
                env[p["slot"]] = _scalar(self.name, p, a)
                continue
            if not isinstance(a, Tensor) or a.device.device_type != "cuda":
                raise IRCError(f"{self.name}: argument #{j} ({p['name']}) must be a tensor "
                               f"on a CUDA device, got {_describe(a)}",
                               hint="irc.tensor(array, irc.cuda(0)) copies an array to the GPU")
            if device is None:
                device = a.device
            elif a.device != device:
                raise IRCError(f"{self.name}: the tensors are on {device} and {a.device}; "
                               "pass them all on one GPU")
            if dt.element_of(p["dtype"]) != a.dtype:
                raise IRCError(f"{self.name}: {p['name']} has dtype {p['dtype']} but the "
                               f"tensor is {a.dtype}")
            if len(a.shape) != len(p["shape"]):
                raise IRCError(f"{self.name}: {p['name']} has {len(p['shape'])} dimensions "
                               f"but the tensor has {len(a.shape)}")
            for d, s in enumerate(p["shape"]):
                if isinstance(s, list) and s[0] == "var" and env[s[1]] is None:
                    env[s[1]] = int(a.shape[d])
            env[p["slot"]] = a
        for j, (p, a) in enumerate(zip(params, args)):
            if p["kind"] != "buffer":
                continue
            for d, f in enumerate(self._shapes[j]):
                want = f(env)
                if int(a.shape[d]) != want:
                    raise IRCError(f"{self.name}: dimension {d} of {p['name']} is {want} but "
                                   f"the tensor (argument #{j}) has {a.shape[d]}")
        if device is None:
            raise IRCError(f"{self.name} has no tensor argument to tell the device")
        scratch: list[Tensor] = []
        for step in self._steps:
            step(env, device, scratch)
        del scratch


class CUDAProgramModule(FunctionTable):
    """Compiled CUDA kernels (one cubin) and the host plans of the functions that launch
    them; see the module docstring."""

    def __init__(self, source: str, cubin: bytes, kernels: dict[str, dict],
                 plans: dict[str, dict], target: str):
        self.source = source
        self.cubin = cubin
        self.kernels = kernels
        self.plans = plans
        self.target = target
        specs = {name: KernelSpec(params=tuple(k["params"]),
                                  shared_bytes=int(k.get("shared_bytes", 0)))
                 for name, k in kernels.items()}
        self.device_module = CUDAModule(cubin, specs)
        self.functions = {name: CUDAFunction(self, name, plan) for name, plan in plans.items()}
        self.entry_name = "main" if "main" in self.functions else next(iter(self.functions),
                                                                      "")

    def __repr__(self) -> str:
        return f"<irc CUDA module {self.target}: {', '.join(self.functions)}>"

    def get_function(self, name: str) -> CUDAFunction:
        """The function ``name``."""
        fn = self.functions.get(name)
        if fn is None:
            raise IRCError(f"module has no function {name!r}; it has "
                           f"{', '.join(self.functions) or 'none'}")
        return fn

    def _names(self) -> list[str]:
        return list(self.functions)

    @property
    def imported_modules(self) -> list[CUDAProgramModule]:
        """TVM's view of a built module (host, then device modules): the CUDA source is
        ``mod.imported_modules[0].get_source()``."""
        return [self]

    def get_source(self, fmt: str = "cuda") -> str:
        """The CUDA C source (``"cuda"``/``"cu"``)."""
        if fmt in ("cuda", "cu", ""):
            return self.source
        raise IRCError(f"unknown source format {fmt!r} for a CUDA module; use 'cuda'")

    # -- bytes ------------------------------------------------------------------------------
    def serialize(self) -> bytes:
        """The module as one byte string (see the module docstring)."""
        return pack_blob(MAGIC, {"format": FORMAT, "target": self.target,
                                 "source": self.source, "kernels": self.kernels,
                                 "plans": self.plans}, self.cubin)

    @staticmethod
    def deserialize(blob: bytes) -> CUDAProgramModule:
        """The module written by :meth:`serialize`."""
        meta, cubin = unpack_blob(blob, MAGIC, "irc CUDA module")
        if meta.get("format") != FORMAT:
            raise BuildError(f"unknown CUDA module format {meta.get('format')!r}; expected "
                             f"{FORMAT}")
        return CUDAProgramModule(meta["source"], cubin, meta["kernels"], meta["plans"],
                                 meta["target"])


def _scalar(name: str, p: dict, a: Any) -> Any:
    dtype = p["dtype"]
    if dt.is_integer(dtype) or dtype == "bool":
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise IRCError(f"{name}: parameter {p['name']} is {dtype}; pass an int, got "
                           f"{_describe(a)}")
        return int(a)
    if not isinstance(a, (int, float, np.number)):
        raise IRCError(f"{name}: parameter {p['name']} is {dtype}; pass a number, got "
                       f"{_describe(a)}")
    return float(a)


def _describe(a: Any) -> str:
    if isinstance(a, Tensor):
        return f"a tensor on {a.device}"
    return type(a).__name__
