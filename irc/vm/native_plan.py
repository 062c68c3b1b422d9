"""A native run plan: one compiled function that calls every kernel of a static VM
function in order, so a run costs one native call instead of a Python call per
instruction.

The common deployed graph — static shapes, every intermediate in planned storage, no
control flow — is straight-line bytecode of ``const``, ``alloc``, ``kernel``, ``tuple``,
``getitem``, ``move`` and ``ret``. For such a function on the CPU, every kernel argument
is one of: a parameter, a constant, a view of planned storage (both at addresses fixed for
the VM's lifetime), or a fresh per-call allocation (a returned tensor). The plan checks
once, when the VM prepares the function, that each argument's dtype and shape are what
the kernel's signature demands, and emits LLVM IR for::

    int32 plan(void **dynamic, int32 *failed)

whose body calls each kernel's native entry with its fixed addresses baked in and the
per-call ones (parameters, fresh outputs) read from ``dynamic``; the first non-zero
return code stops the run and names the kernel in ``failed``.

A run then is: the parameter checks of the bytecode function (unchanged), the fresh
allocations, one ctypes call, and building the result. Anything else — symbolic shapes,
control flow, runtime functions (``packed``), calls between VM functions, kernels with
scalar or shape parameters, a GPU — keeps the instruction-by-instruction path,
which handles every program. The ``vm_native_plan`` setting (``IRC_VM_NATIVE_PLAN=0``)
turns plans off (for debugging).

``VirtualMachine.profile`` runs a *timed* plan of such a function: the same calls with
``clock_gettime`` read before the first kernel and after each one (on Linux). Its kernels
run back to back as in an ordinary call, which timing them from Python one by one does
not: there, each parallel kernel starts after a gap in which the OpenMP workers may have
gone to sleep, and small kernels look slower than they are; the timed plan's kernels
sum to about an ordinary run's time (``benchmarks/cpu_models.py --profile`` shows both).
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..core import dtype as dt
from ..core import settings
from ..core.diagnostics import IRCError
from ..runtime.engine import LoadedObject, has_symbol, jit_ir
from ..runtime.module import Function
from ..runtime.ndarray import aligned_empty, data_pointer
from .bytecode import VMFunction

logger = logging.getLogger(__name__)

# The clock of timed plans: clock_gettime(CLOCK_MONOTONIC) with Linux's numbering (a vDSO
# call of about 20 ns), struct timespec being two 64-bit fields.
_CLOCK = "clock_gettime"
_CLOCK_MONOTONIC = 1
_PLAN_OPS = frozenset(("const", "alloc", "kernel", "tuple", "getitem", "move", "ret"))
_names = itertools.count()


def plans_enabled() -> bool:
    """The ``vm_native_plan`` setting (``irc.core.settings``; ``IRC_VM_NATIVE_PLAN=0``
    turns it off)."""
    return settings.current().vm_native_plan


@dataclass
class _Value:
    """What a register holds, known when the plan is made: a parameter (``index``: its
    position), a fixed array (``array``: a constant or a planned-storage view), a fresh
    allocation (``index``: its slot among the fresh ones), or a tuple (``items``)."""

    kind: str  # "param" | "fixed" | "fresh" | "tuple"
    index: int = -1
    array: Any = None
    items: tuple = ()
    dtype: str = ""
    shape: tuple = ()


class NativePlan:
    """The compiled plan of one VM function (see the module docstring). ``run(args)``
    takes the checked parameter values and returns the function's result."""

    def __init__(self, fn: VMFunction, code: LoadedObject, symbol: str,
                 dynamic: list[_Value], fresh: list[tuple[tuple, np.dtype]],
                 result: _Value, kernels: list[Function], timed: bool = False):
        self.fn = fn
        self._code = code  # keeps the compiled plan alive
        self.kernels = kernels
        # A timed plan writes a clock reading (nanoseconds) before its first kernel and
        # after each one into ``stamps``: kernel k took stamps[k + 1] - stamps[k].
        self.stamps = np.zeros(len(kernels) + 1, dtype=np.int64) if timed else None
        arg_types = [ctypes.c_void_p] * (3 if timed else 2)
        entry = ctypes.CFUNCTYPE(ctypes.c_int32, *arg_types)(self._code.address(symbol))
        if timed:
            stamps_address = self.stamps.ctypes.data
            self._entry = lambda slots, failed: entry(slots, failed, stamps_address)
        else:
            self._entry = entry
        self._dynamic = dynamic
        self._fresh = fresh
        self._result = result
        self._slots = (ctypes.c_void_p * max(1, len(dynamic)))()
        self._slots_address = ctypes.addressof(self._slots)
        self._failed = ctypes.c_int32(0)
        self._failed_address = ctypes.addressof(self._failed)
        self._fill = self._make_fill()

    def _make_fill(self) -> Callable[[list, list], None]:
        """The per-call code that writes the dynamic addresses into the slot array."""
        lines = ["def fill(args, fresh):"]
        for k, v in enumerate(self._dynamic):
            src = f"args[{v.index}]" if v.kind == "param" else f"fresh[{v.index}]"
            lines.append(f"    slots[{k}] = data_pointer({src})")
        lines.append("    return None")
        namespace = {"slots": self._slots, "data_pointer": data_pointer}
        exec("\n".join(lines), namespace)  # noqa: S102 - generated from the plan only
        return namespace["fill"]

    def run(self, args: list) -> Any:
        fresh = [aligned_empty(shape, dtype) for shape, dtype in self._fresh]
        self._fill(args, fresh)
        rc = self._entry(self._slots_address, self._failed_address)
        if rc:
            self.kernels[self._failed.value]._raise(rc)
        return _build(self._result, args, fresh)


def _build(v: _Value, args: list, fresh: list) -> Any:
    if v.kind == "param":
        return args[v.index]
    if v.kind == "fresh":
        return fresh[v.index]
    if v.kind == "fixed":
        return v.array
    return tuple(_build(x, args, fresh) for x in v.items)


def make_plan(fn: VMFunction, lib: Any, constants: list, storage: list,
              numpy_dtype: Callable[[str], np.dtype], timed: bool = False
              ) -> NativePlan | None:
    """The native plan of ``fn`` for a CPU VM (its ``constants`` and planned ``storage``
    blocks), or None when the function needs the general path (see the module
    docstring). A ``timed`` plan reads the clock around every kernel (see
    :attr:`NativePlan.stamps`); ``VirtualMachine.profile`` uses it."""
    if not plans_enabled() or not fn.code or fn.code[-1][0] != "ret":
        return None
    if timed and (not sys.platform.startswith("linux") or not has_symbol(_CLOCK)):
        return None  # the instruction path times kernels from Python instead
    if any(ins[0] not in _PLAN_OPS for ins in fn.code):
        return None
    if any(ins[0] == "ret" for ins in fn.code[:-1]):
        return None
    regs: dict[int, _Value] = {}
    for i, chk in enumerate(fn.param_checks):
        if chk.kind != "tensor" or not chk.dtype or chk.dims is None or \
                not all(type(d) is int for d in chk.dims):
            return None
        regs[i] = _Value("param", index=i, dtype=chk.dtype, shape=tuple(chk.dims))
    fresh: list[tuple[tuple, np.dtype]] = []
    calls: list[tuple[Function, list[_Value]]] = []
    for ins in fn.code[:-1]:
        op = ins[0]
        if op == "kernel":
            found = _kernel_call(lib, ins[1], [regs.get(a) for a in ins[2]])
            if found is None:
                return None
            calls.append(found)
            continue
        dst = ins[1]
        if dst in regs:
            return None  # a register written twice: the general path orders it
        value = _value_of(ins, regs, fn, constants, storage, fresh, numpy_dtype)
        if value is None:
            return None
        regs[dst] = value
    result = regs.get(fn.code[-1][1])
    if result is None or not calls:
        return None
    dynamic: list[_Value] = []
    slot_of: dict[tuple[str, int], int] = {}
    for _, operands in calls:
        for v in operands:
            key = (v.kind, v.index)
            if v.kind != "fixed" and key not in slot_of:
                slot_of[key] = len(dynamic)
                dynamic.append(v)
    symbol = f"irc_plan_{next(_names)}"
    ir = _plan_ir(symbol, calls, slot_of, timed)
    try:
        code = jit_ir(ir, (symbol,))
    except IRCError as err:
        logger.debug("VM function %s keeps the instruction path: %s", fn.name, err.message)
        return None
    return NativePlan(fn, code, symbol, dynamic, fresh, result, [k for k, _ in calls], timed)


def _value_of(ins: tuple, regs: dict[int, _Value], fn: VMFunction, constants: list,
              storage: list, fresh: list, numpy_dtype: Callable[[str], np.dtype]
              ) -> _Value | None:
    op = ins[0]
    if op == "const":
        c = constants[ins[2]]
        if not isinstance(c, np.ndarray):
            return None
        return _Value("fixed", array=c, dtype=_dtype_name(c), shape=tuple(c.shape))
    if op == "alloc":
        spec = fn.allocs[ins[2]]
        if not spec.static or not all(type(d) is int for d in spec.shape):
            return None
        shape = tuple(spec.shape)
        np_dtype = numpy_dtype(spec.dtype)
        if spec.storage >= 0:
            nbytes = int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize
            view = storage[spec.storage][:nbytes].view(np_dtype).reshape(shape)
            return _Value("fixed", array=view, dtype=spec.dtype, shape=shape)
        fresh.append((shape, np_dtype))
        return _Value("fresh", index=len(fresh) - 1, dtype=spec.dtype, shape=shape)
    if op == "tuple":
        items = tuple(regs.get(s) for s in ins[2])
        if any(x is None for x in items):
            return None
        return _Value("tuple", items=items)
    if op == "getitem":
        src = regs.get(ins[2])
        if src is None or src.kind != "tuple" or not 0 <= ins[3] < len(src.items):
            return None
        return src.items[ins[3]]
    if op == "move":
        return regs.get(ins[2])
    return None


def _dtype_name(a: np.ndarray) -> str:
    if a.dtype.name == "bfloat16":
        return "bfloat16"
    try:
        return dt.from_numpy(a.dtype)
    except (TypeError, ValueError, KeyError, IRCError):
        return ""


def _kernel_call(lib: Any, name: str, operands: list[_Value | None]
                 ) -> tuple[Function, list[_Value]] | None:
    """The kernel and its operands when every operand is a tensor whose dtype and shape
    are what the kernel demands (then no per-call check is needed)."""
    try:
        kernel = lib.get_function(name)
    except IRCError:
        return None
    if not isinstance(kernel, Function):
        return None
    sig = kernel.signature
    if sig.scalars or sig.shape_vars or len(operands) != kernel.num_args:
        return None
    for v, spec in zip(operands, sig.buffers):
        if v is None or v.kind == "tuple" or spec.strides is not None:
            return None
        if v.dtype != spec.dtype or v.shape != tuple(spec.shape):
            return None
    return kernel, operands


def _stamp_ir(k: int) -> list[str]:
    """Store the monotonic clock in nanoseconds into ``stamps[k]``."""
    return [f"  %ck{k} = call i32 @{_CLOCK}(i32 {_CLOCK_MONOTONIC}, ptr %ts)",
            f"  %sec{k} = load i64, ptr %ts, align 8",
            f"  %nsp{k} = getelementptr i64, ptr %ts, i64 1",
            f"  %nsec{k} = load i64, ptr %nsp{k}, align 8",
            f"  %secns{k} = mul i64 %sec{k}, 1000000000",
            f"  %now{k} = add i64 %secns{k}, %nsec{k}",
            f"  %stp{k} = getelementptr i64, ptr %stamps, i64 {k}",
            f"  store i64 %now{k}, ptr %stp{k}, align 8"]


def _plan_ir(symbol: str, calls: list[tuple[Function, list[_Value]]],
             slot_of: dict[tuple[str, int], int], timed: bool = False) -> str:
    params = "ptr %dynamic, ptr %failed" + (", ptr %stamps" if timed else "")
    lines = [f"declare i32 @{_CLOCK}(i32, ptr)"] if timed else []
    lines += [f"define i32 @{symbol}({params}) {{", "entry:"]
    for key, slot in sorted(slot_of.items(), key=lambda kv: kv[1]):
        del key
        lines.append(f"  %s{slot}.p = getelementptr ptr, ptr %dynamic, i64 {slot}")
        lines.append(f"  %s{slot} = load ptr, ptr %s{slot}.p, align 8")
    if timed:
        lines.append("  %ts = alloca { i64, i64 }, align 8")
        lines += _stamp_ir(0)
    for k, (kernel, operands) in enumerate(calls):
        args = []
        for v in operands:
            if v.kind == "fixed":
                args.append(f"ptr inttoptr (i64 {data_pointer(v.array)} to ptr)")
            else:
                args.append(f"ptr %s{slot_of[(v.kind, v.index)]}")
        lines.append(f"  %f{k} = inttoptr i64 {kernel.address} to ptr")
        lines.append(f"  %r{k} = call i32 %f{k}({', '.join(args)})")
        if timed:
            lines += _stamp_ir(k + 1)
        lines.append(f"  %c{k} = icmp ne i32 %r{k}, 0")
        lines.append(f"  br i1 %c{k}, label %fail{k}, label %next{k}")
        lines.append(f"fail{k}:")
        lines.append(f"  store i32 {k}, ptr %failed, align 4")
        lines.append(f"  ret i32 %r{k}")
        lines.append(f"next{k}:")
    lines.append("  ret i32 0")
    lines.append("}")
    return "\n".join(lines) + "\n"
