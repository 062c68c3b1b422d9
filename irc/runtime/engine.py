"""Loading compiled object code into the process (LLVM's MCJIT linker via llvmlite).

Compiled kernels travel as relocatable object files (bytes). :func:`load_object` links
one into memory and returns a handle that resolves function addresses. External symbols
(libm, libc's allocator, libgomp's ``GOMP_parallel``) resolve against the process; the
OpenMP runtime is loaded once, permanently, with its idle threads' spinning bounded
(:func:`bounded_openmp_wait`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from typing import Iterator

from ..core.diagnostics import BuildError
from ..core.target import Target, llvm_binding
from ..tir.intrin import MAX_ERROR_VALUES

llvm_lock = threading.RLock()
_initialized = False

# Parallel loops test this flag (symbol ``irc_parallel_mode``): 0 runs them on the OpenMP
# runtime, 1 runs them serially. libgomp cannot be used in a process forked after it
# started its threads (the child hangs), so a forked child falls back to serial loops;
# start worker processes with "spawn" or "forkserver" to keep parallel loops parallel.
_parallel_mode = ctypes.c_int32(0)

# Parallel regions run on the calling thread alone until the time-stamp counter reaches
# ``irc_parallel_until``: set, for ``irc_parallel_hold`` cycles (doubling), after
# ``irc_parallel_strikes`` reached two regions in a row that waited long for a thread the
# scheduler had put off its core (``irc.codegen.llvm_parallel``).
_parallel_until = ctypes.c_uint64(0)
_parallel_hold = ctypes.c_int64(0)
_parallel_strikes = ctypes.c_int32(0)

# Integers a failing kernel recorded for its assertion's message (symbol
# ``irc_error_values``: a count, then up to MAX_ERROR_VALUES values; the intrinsic
# ``error_values``). Read and cleared by :func:`take_error_values`.
_error_values = (ctypes.c_int64 * (MAX_ERROR_VALUES + 1))()
_openmp_used = False


def mark_openmp_used() -> None:
    """Record that compiled code with parallel loops was loaded in this process."""
    global _openmp_used
    _openmp_used = True


def _after_fork_in_child() -> None:
    if _openmp_used:
        _parallel_mode.value = 1


def hold_parallel_regions(hold: bool) -> None:
    """Run every parallel region on the calling thread (``hold``), or let them use the
    team again at once, forgetting the regions that waited for it (False)."""
    _parallel_until.value = (1 << 64) - 1 if hold else 0
    _parallel_hold.value = 0
    _parallel_strikes.value = 0


def parallel_regions_held() -> bool:
    """Whether parallel regions were held to the calling thread after waiting for a
    descheduled thread (or by :func:`hold_parallel_regions`); the hold may have run out
    since (regions then use the team again)."""
    return _parallel_until.value != 0


def parallel_loops_enabled() -> bool:
    """False in a process forked after OpenMP was used (parallel loops then run serially)."""
    return _parallel_mode.value == 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def take_error_values() -> list[int]:
    """The integers the last failing kernel recorded for its message (none: []), and
    clear them."""
    n = min(max(int(_error_values[0]), 0), MAX_ERROR_VALUES)
    values = [int(_error_values[k + 1]) for k in range(n)]
    _error_values[0] = 0
    return values


def ensure_llvm() -> None:
    """Initialize LLVM's native target and asm printer, and load the OpenMP runtime."""
    global _initialized
    if _initialized:
        return
    with llvm_lock:
        if _initialized:
            return
        llvm = llvm_binding()
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        try:
            # glibc's vector math library (exp/log/tanh/... on whole SIMD registers).
            llvm.load_library_permanently("libmvec.so.1")
        except RuntimeError:
            pass
        for libm in ("libm.so.6", "libm.so"):
            # The math library: kernels call expf, tanhf, erff, ...
            try:
                llvm.load_library_permanently(libm)
                break
            except RuntimeError:
                continue
        try:
            # GCC's runtime: LLVM lowers conversions it has no instruction for (double to
            # half) to calls such as __truncdfhf2; unresolved, the kernel would jump to 0.
            llvm.load_library_permanently("libgcc_s.so.1")
        except RuntimeError:
            pass
        _load_openmp(llvm)
        llvm.add_symbol("irc_parallel_mode", ctypes.addressof(_parallel_mode))
        llvm.add_symbol("irc_parallel_until", ctypes.addressof(_parallel_until))
        llvm.add_symbol("irc_parallel_hold", ctypes.addressof(_parallel_hold))
        llvm.add_symbol("irc_parallel_strikes", ctypes.addressof(_parallel_strikes))
        llvm.add_symbol("irc_error_values", ctypes.addressof(_error_values))
        _initialized = True


_OPENMP_CANDIDATES = ("libgomp.so.1", "libgomp.so", "libomp.so", "libomp.so.5", "libiomp5.so")

# How many times libgomp's idle threads spin (a ``pause`` each) waiting for the next
# parallel region, or for the others at a region's end, before they sleep on a futex;
# set as ``GOMP_SPINCOUNT`` while libgomp loads (see :func:`bounded_openmp_wait`). On a
# Zen 3 core a spin takes about 33 ns: 30,000 spins are about 1 ms, against libgomp's
# default 300,000 (about 10 ms). Two costs bound it. Shorter, a thread sleeps between a
# model's parallel kernels and its virtual CPU halts; waking it made seed 000's
# convolution model 1.8x slower on the shared Zen 3 VM (1.75 -> 3.2 ms per call with
# 1000 or 10,000 spins, 1.74-1.9 ms with 20,000-100,000). Longer, beside a busy process
# a spinning thread holds a core for that long after each region: with the backoff of
# parallel regions (``irc.codegen.llvm_parallel``) turned off, seed 003's MLP (its weights
# as arguments) took a p90 of 4.4 ms per call with 30,000 spins, 9.3 ms with 100,000,
# 16 ms with the default.
OPENMP_SPIN_COUNT = 30000


@contextlib.contextmanager
def bounded_openmp_wait() -> Iterator[None]:
    """Load libgomp inside this block to bound its spinning: ``GOMP_SPINCOUNT`` is set to
    :data:`OPENMP_SPIN_COUNT` for the block (libgomp reads its settings once, when it
    is loaded), unless the user set ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``, whose
    choice then stands; the environment is restored afterwards.

    libgomp's own default, 300,000 spins (about 10 ms on a Zen 3), costs nothing on idle
    cores; but where the team's threads share a core with another process, or with
    each other, a spinning thread holds the core that the thread it waits for needs, and
    the region's closing barrier, which waits for every thread of the team, waits a
    scheduler time slice for one that was put off the core. A thread that sleeps gives
    the core up.
    """
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        yield
        return
    os.environ["GOMP_SPINCOUNT"] = str(OPENMP_SPIN_COUNT)
    try:
        yield
    finally:
        os.environ.pop("GOMP_SPINCOUNT", None)


def _load_openmp(llvm) -> None:
    for name in _OPENMP_CANDIDATES:
        try:
            with bounded_openmp_wait():
                llvm.load_library_permanently(name)
        except RuntimeError:
            continue
        if llvm.address_of_symbol("GOMP_parallel"):
            return
    # Kernels without parallel loops still work; those with one fail to link with a
    # message naming the missing runtime (see load_object).


class LoadedObject:
    """An object file linked into this process; keeps the code alive while referenced."""

    def __init__(self, engine, symbols: tuple[str, ...]):
        self._engine = engine
        self.symbols = symbols

    def address(self, name: str) -> int:
        """The address of function ``name`` (0 when the object does not define it)."""
        return self._engine.get_function_address(name)


_machines: dict[str, object] = {}


def target_machine(target):
    """The (cached) llvmlite TargetMachine of an llvm ``target`` (a Target or string)."""
    llvm = llvm_binding()
    t = Target.canon(target)
    key = str(t)
    tm = _machines.get(key)
    if tm is None:
        ensure_llvm()
        triple = t.attrs.get("mtriple") or llvm.get_process_triple()
        try:
            llvm_target = llvm.Target.from_triple(triple)
            opt = int(t.attrs.get("opt-level", 3))
            tm = llvm_target.create_target_machine(
                cpu=t.mcpu, features=t.llvm_features(), opt=max(0, min(3, opt)),
                reloc="pic", codemodel="default")
        except RuntimeError as err:
            raise BuildError(f"LLVM cannot create a machine for target {t}: {err}") from None
        _machines[key] = tm
    return tm


def emit_assembly(llvm_ir: str, target) -> str:
    """Assembly text of LLVM IR ``llvm_ir`` for ``target``."""
    llvm = llvm_binding()
    ensure_llvm()
    with llvm_lock:
        tm = target_machine(target)
        return tm.emit_assembly(llvm.parse_assembly(llvm_ir))


def check_externals(names: list[str]) -> None:
    """Raise BuildError when the process cannot resolve one of ``names`` (linking an
    object with an unresolved symbol would abort the process)."""
    llvm = llvm_binding()
    ensure_llvm()
    missing = [n for n in names if not llvm.address_of_symbol(n)]
    if missing:
        hint = None
        if any(n.startswith(("GOMP_", "omp_")) for n in missing):
            hint = "parallel loops need the GNU OpenMP runtime (libgomp.so.1)"
        raise BuildError(f"compiled code calls functions this process does not have: "
                         f"{', '.join(missing)}", hint=hint)


def has_symbol(name: str) -> bool:
    """True when the process can resolve function ``name``."""
    llvm = llvm_binding()
    ensure_llvm()
    return bool(llvm.address_of_symbol(name))


def _host_machine(opt: int = 2):
    llvm = llvm_binding()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(opt=opt, reloc="pic", codemodel="default")


def jit_ir(llvm_ir: str, symbols: tuple[str, ...]) -> LoadedObject:
    """Compile LLVM IR text for the host (quickly: the code is glue, not kernels) and link
    it into the process."""
    llvm = llvm_binding()
    ensure_llvm()
    with llvm_lock:
        try:
            module = llvm.parse_assembly(llvm_ir)
            module.verify()
            engine = llvm.create_mcjit_compiler(module, _host_machine(opt=1))
            engine.finalize_object()
        except RuntimeError as err:
            raise BuildError(f"cannot compile generated glue code: {err}") from None
    obj = LoadedObject(engine, symbols)
    for name in symbols:
        if not obj.address(name):
            raise BuildError(f"generated code does not define function {name!r}")
    return obj


def load_object(data: bytes | list[bytes], symbols: tuple[str, ...] = ()) -> LoadedObject:
    """Link the object file ``data`` (or several object files, one module compiled in
    parts) into the process."""
    llvm = llvm_binding()
    ensure_llvm()
    parts = [data] if isinstance(data, (bytes, bytearray)) else list(data)
    with llvm_lock:
        try:
            engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _host_machine())
            for part in parts:
                engine.add_object_file(llvm.ObjectFileRef.from_data(bytes(part)))
            engine.finalize_object()
        except RuntimeError as err:
            raise BuildError(f"cannot load compiled code: {err}",
                             hint="if it names GOMP_parallel, install libgomp (the GNU "
                                  "OpenMP runtime) for parallel loops") from None
    obj = LoadedObject(engine, symbols)
    for name in symbols:
        if not obj.address(name):
            raise BuildError(f"compiled code does not define function {name!r}")
    return obj
