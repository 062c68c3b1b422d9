"""``irc.build``: loop functions to a callable runtime Module.

Accepted inputs: a PrimFunc (block form is lowered first with
``irc.tir.transform.lower_primfunc``; lowered form as is), an IRModule (its PrimFuncs;
graph functions are ignored), a schedule ``(sch, args)`` (anything with ``.mod``), or
``(None, args)`` / ``args`` with te tensors (turned into a PrimFunc with
``irc.te.create_prim_func``).

Compiled modules are cached in memory by the structural hash of the functions (before
lowering, which is deterministic), their parameter names and the target string, so
rebuilding the same function is free. A graph's kernels (``irc.compile`` builds them
with ``disk_cache=True``), when there are :data:`KERNEL_CACHE_MIN_FUNCS` or more, are
compiled one LLVM module each and kept per kernel, in
memory (:data:`KERNEL_MEMORY_BYTES`) and on disk, in ``llvm`` under irc's cache
directory (:mod:`irc.core.disk_cache`; ``IRC_CACHE=off`` keeps them in memory only),
so a kernel is compiled once for every build it is in: a model compiled again, in this
process or another, or a tuned build beside its default one, lowers and compiles only
the kernels it has not met. A kernel's key is its structural hash, name, parameter
names and attributes, the target with the host CPU's LLVM features, the pass context's
options, the LLVM and C library versions and the digest of irc's own sources (an edited
irc never reads what an older one wrote). Builds under a pass context with instruments
(which must see every lowering pass run) use neither; the directory is kept under
:data:`DISK_CACHE_BYTES`, the entries read least recently deleted first.
"""

from __future__ import annotations

import hashlib
import platform
import threading
from collections import OrderedDict
from typing import Any, Callable

from ..core import disk_cache as _disk
from ..core.diagnostics import BuildError
from ..core.functor import Visitor
from ..core.gc_pauses import with_fewer_gc_pauses
from ..core.module import IRModule
from ..core.parallel import fork_pull, worker_count
from ..core.structural import structural_hash_hex
from ..core.target import Target, llvm_binding
from ..core.transform import PassContext
from ..runtime.engine import ensure_llvm
from ..runtime.module import Module
from ..tir import expr as E
from ..tir import stmt as S
from ..tir import te
from ..tir.transform import lower_primfunc
from ..tir.transform.insert_bound_checks import CHECK_BOUNDS, InsertBoundChecks
from .llvm import codegen_llvm, codegen_llvm_parts, is_block_form
from .llvm_compile import CompiledObject, compile_source, compile_sources

_CACHE_SIZE = 256
DISK_CACHE_BYTES = 2 << 30
"""The most the disk cache of compiled kernels keeps (bytes)."""
KERNEL_MEMORY_BYTES = 256 << 20
"""The most the in-memory kernel cache keeps (object code and LLVM IR, bytes)."""
KERNEL_CACHE_MIN_FUNCS = 16
"""Graphs with fewer kernels are compiled as one module, without the kernel cache: they
compile in well under a second, and one LLVM module per kernel would cost them 5-10%."""
_DISK_FORMAT = 1
_kernels: OrderedDict[str, CompiledObject] = OrderedDict()
_kernel_bytes = 0
_cache: OrderedDict[tuple, Module] = OrderedDict()
_cache_lock = threading.Lock()
_BUILDERS: dict[str, Callable[[dict[str, S.PrimFunc], Target], Any]] = {}


def register_target_builder(kind: str, builder: Callable[[dict, Target], Any]) -> None:
    """Make ``irc.build`` use ``builder(lowered_funcs, target)`` for targets of ``kind``
    (how the CUDA code generator plugs in)."""
    _BUILDERS[kind] = builder


def can_build(target: Any) -> bool:
    """True when ``irc.build`` can compile for ``target`` (a Target or a target string
    such as ``"cuda"``): llvm always, other kinds once their code generator is registered
    (:func:`register_target_builder`)."""
    kind = Target.canon(target).kind.name
    return kind == "llvm" or kind in _BUILDERS


def lower_for_codegen(func: S.PrimFunc) -> S.PrimFunc:
    """``func`` in lowered form (lowered now if it still has blocks; a function already
    in lowered form gets its bounds checks, when it asks for them, and nothing else)."""
    if not is_block_form(func):
        return InsertBoundChecks()(func) if func.attrs.get(CHECK_BOUNDS) else func
    return lower_primfunc(func)


def _func_name(func: S.PrimFunc, default: str) -> str:
    sym = func.attrs.get("global_symbol") if func.attrs else None
    return str(sym) if sym else default


def collect_prim_funcs(inputs: Any, args: Any = None, name: str | None = None
                       ) -> dict[str, S.PrimFunc]:
    """The PrimFuncs to compile, by symbol name, from any accepted ``build`` input."""
    if isinstance(inputs, tuple) and len(inputs) == 2 and args is None:
        inputs, args = inputs
    if isinstance(inputs, S.PrimFunc):
        return {name or _func_name(inputs, "main"): inputs}
    if isinstance(inputs, IRModule):
        funcs = {}
        for gv, f in inputs.functions.items():
            if isinstance(f, S.PrimFunc):
                funcs[_func_name(f, gv.name_hint)] = f
        if not funcs:
            raise BuildError("the IRModule has no loop-level functions (PrimFuncs) to build",
                             hint="graph-level modules compile with irc.compile")
        if name is not None:
            if len(funcs) != 1:
                raise BuildError("name= can only rename a module with one function")
            return {name: next(iter(funcs.values()))}
        return funcs
    mod = getattr(inputs, "mod", None)
    if isinstance(mod, IRModule):
        funcs = collect_prim_funcs(mod, None, None)
        if len(funcs) > 1 and "main" in funcs:
            funcs = {"main": funcs["main"]}
        if name is not None:
            return {name: next(iter(funcs.values()))}
        return funcs
    tensors = args if inputs is None else (inputs if args is None else None)
    if tensors is not None and isinstance(tensors, (list, tuple)):
        func = te.create_prim_func(list(tensors))
        return {name or _func_name(func, "main"): func}
    raise BuildError(f"irc.build cannot compile a {type(inputs).__name__}; pass a PrimFunc, "
                     "an IRModule, or (schedule, args)")


def _cache_key(funcs: dict[str, S.PrimFunc], hashes: dict[str, str], target: Target,
               ctx: PassContext) -> tuple:
    names = tuple(
        (n, tuple(b.name for b in f.buffer_map.values()), tuple(p.name for p in f.params))
        for n, f in funcs.items())
    # Lowering runs under the PassContext: passes it disables or forces change the code, and
    # its instruments must see each function lowered (once: a hit means the same lowering).
    options = (ctx.opt_level, tuple(ctx.disabled_pass), tuple(ctx.required_pass),
               tuple(ctx.instruments))
    # (The structural hash leaves function attributes out; bounds checking changes the
    # code.)
    checked = tuple(bool(f.attrs.get(CHECK_BOUNDS)) for f in funcs.values())
    return (tuple(hashes.values()), names, str(target), options, checked)


def _kernel_key(name: str, func: S.PrimFunc, digest: str, t: Target, ctx: PassContext
                ) -> str:
    """The key of one kernel's compiled object, in memory and on disk: everything the
    object depends on (see the module docstring; ``digest`` is the function's
    structural hash)."""
    llvm = llvm_binding()
    payload = repr((
        _DISK_FORMAT, name, digest,
        tuple(b.name for b in func.buffer_map.values()), tuple(p.name for p in func.params),
        sorted((str(k), repr(v)) for k, v in (func.attrs or {}).items()),
        str(t), t.mcpu, t.llvm_features(),
        (ctx.opt_level, tuple(ctx.disabled_pass), tuple(ctx.required_pass)),
        _disk.source_fingerprint(), tuple(llvm.llvm_version_info), platform.libc_ver(),
        platform.machine()))
    return hashlib.sha256(payload.encode()).hexdigest()


def _remember_kernel(key: str, obj: CompiledObject) -> None:
    global _kernel_bytes
    with _cache_lock:
        if key in _kernels:
            return
        _kernels[key] = obj
        _kernel_bytes += len(obj.object_code) + len(obj.llvm_ir)
        while _kernel_bytes > KERNEL_MEMORY_BYTES and len(_kernels) > 1:
            _, old = _kernels.popitem(last=False)
            _kernel_bytes -= len(old.object_code) + len(old.llvm_ir)


def _recalled_kernel(key: str) -> CompiledObject | None:
    with _cache_lock:
        obj = _kernels.get(key)
        if obj is not None:
            _kernels.move_to_end(key)
        return obj


def _kernel_dir():
    return _disk.cache_root() / "llvm"


def _kernel_path(key: str):
    return _kernel_dir() / f"{key}.irk"


def _read_kernel(key: str, name: str) -> CompiledObject | None:
    """The compiled object of kernel ``name`` stored under ``key``; None when missing or
    damaged (it is compiled again)."""
    path = _kernel_path(key)
    blob = _disk.read_entry(path, "CPU kernel")
    if blob is None:
        return None
    try:
        m = Module.deserialize(blob)
        if list(m.signatures) != [name] or len(m.objects) != 1:
            raise BuildError(f"it holds {', '.join(m.signatures) or 'no kernel'}")
    except (BuildError, ValueError, KeyError, TypeError) as err:
        _disk.logger.info("cached CPU kernel %s cannot be read (%s); compiling again", path,
                          err)
        return None
    return CompiledObject(object_code=m.objects[0], signatures=m.signatures,
                          messages=m.messages, target=m.target, externals=m.externals,
                          llvm_ir=m.llvm_ir)


def _write_kernel(key: str, obj: CompiledObject) -> bool:
    m = Module(obj.object_code, obj.signatures, obj.messages, obj.target,
               externals=obj.externals, llvm_ir=obj.llvm_ir)
    return _disk.write_entry(_kernel_path(key), m.serialize(), "CPU kernel")


def build_kernel_by_kernel(funcs: dict[str, S.PrimFunc], target: Any,
                           hashes: dict[str, str]) -> Module:
    """Compile block-form (or lowered) PrimFuncs into one runtime Module, each kernel its
    own LLVM module and object file, taken from the kernel cache where it is there (in
    memory, then on disk) and otherwise lowered and compiled, on several processes when
    there are many (``irc.core.parallel.fork_pull``, the most lowering work first), then
    kept in both. Each kernel numbers its messages from 1; the Module keeps them per
    kernel. (Against compiling a few multi-kernel pieces, one module per kernel costs
    LLVM a few percent more; in exchange a kernel is compiled once for every build it is
    in: the tuned and default builds of a model share most of theirs.) ``hashes``: the
    functions' structural hashes (by name)."""
    t = Target.canon(target)
    ctx = PassContext.current()
    on_disk = _disk.enabled()
    keys = {n: _kernel_key(n, f, hashes[n], t, ctx) for n, f in funcs.items()}
    objs: dict[str, CompiledObject] = {}
    for n, key in keys.items():
        obj = _recalled_kernel(key)
        if obj is None and on_disk:
            obj = _read_kernel(key, n)
            if obj is not None:
                _remember_kernel(key, obj)
        if obj is not None:
            objs[n] = obj
    missing = sorted((n for n in funcs if n not in objs),
                     key=lambda n: -_lowering_cost(funcs[n]) if is_block_form(funcs[n]) else 0)
    if missing:
        def one(n: str) -> CompiledObject:
            return compile_source(codegen_llvm({n: lower_for_codegen(funcs[n])}, t), t)

        jobs = min(worker_count(), len(missing) // PARALLEL_LOWER_FUNCS)
        if jobs > 1:
            ensure_llvm()  # before forking: the children inherit the initialized LLVM
        try:
            built = fork_pull(one, missing, jobs)
        except RecursionError:
            raise BuildError("the function is too deeply nested to compile") from None
        wrote = False
        for n, obj in zip(missing, built):
            objs[n] = obj
            _remember_kernel(keys[n], obj)
            if on_disk:
                wrote = _write_kernel(keys[n], obj) or wrote
        if wrote:
            _disk.trim(_kernel_dir(), DISK_CACHE_BYTES, ".irk")
    return _module_of([objs[n] for n in funcs], list(funcs), t, per_kernel=True)


@with_fewer_gc_pauses
def build(inputs: Any, args: Any = None, target: Any = None, name: str | None = None,
          check_bounds: bool = False, disk_cache: bool = False) -> Any:
    """Compile loop functions for ``target`` (default: the current target, else "llvm")
    and return a runtime Module. With ``check_bounds`` every buffer access is checked at
    run time (``tir.transform.InsertBoundChecks``): an index outside its buffer ends the
    kernel with an irc error naming the function, the buffer and the index. With
    ``disk_cache`` a CPU module of :data:`KERNEL_CACHE_MIN_FUNCS` kernels or more is
    built kernel by kernel through the kernel cache, in memory and on disk
    (:func:`build_kernel_by_kernel`; see the module docstring).

    ``irc.build(func)``, ``irc.build(func, target="llvm")``, ``irc.build(mod, "llvm")``,
    ``irc.build(sch, args, target)``, ``irc.build((sch, args), target=...)``.
    """
    if isinstance(args, (str, Target)) and target is None:
        target, args = args, None
    if target is None:
        target = Target.current() or "llvm"
    t = Target.canon(target)
    funcs = collect_prim_funcs(inputs, args, name)
    if check_bounds:
        if t.kind.name != "llvm":
            raise BuildError(f"check_bounds builds CPU code (llvm targets) only, not {t}",
                             hint="check the kernels on the CPU first, or run them in the "
                                  "reference interpreter, which always checks")
        funcs = {n: f.with_attr(CHECK_BOUNDS, True) for n, f in funcs.items()}
    builder = _BUILDERS.get(t.kind.name)
    if builder is not None:
        return builder({n: lower_for_codegen(f) for n, f in funcs.items()}, t)
    if t.kind.name != "llvm":
        raise BuildError(f"no code generator is available for target {t}",
                         hint="build for 'llvm' (the CPU)")
    # Lowering is deterministic: the functions as given, the target and the pass context
    # (options and instruments) key the cache.
    hashes = {n: structural_hash_hex(f) for n, f in funcs.items()}
    key = _cache_key(funcs, hashes, t, PassContext.current())
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    if disk_cache and len(funcs) >= KERNEL_CACHE_MIN_FUNCS \
            and not PassContext.current().instruments:
        mod = build_kernel_by_kernel(funcs, t, hashes)
    else:
        mod = _build_llvm_target(funcs, t)
    with _cache_lock:
        _cache[key] = mod
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return mod


# A module compiles in parts at once (one per core) only where each part has at least
# this much LLVM text: a part costs a forked process, and a small module compiles in a
# fraction of a second anyway. A whole network's kernels are megabytes.
PARALLEL_PART_BYTES = 128 * 1024
PARTS_PER_JOB = 3
# Many block-form functions (a network's kernels) are lowered, generated and compiled
# in pieces on several cores only where each process gets this many on average.
PARALLEL_LOWER_FUNCS = 8
# The kernel message codes of piece k start above k times this (codes are i32).
MESSAGE_CODES_PER_PIECE = 1 << 20
_MAX_PIECES = 1024


def _build_llvm_target(funcs: dict[str, S.PrimFunc], t: Target) -> Module:
    """``funcs`` lowered and compiled for an llvm target: in pieces on several cores
    (:func:`build_llvm_in_pieces`) when there are many block-form functions and the pass
    context has no instruments (they must see every pass run here), else lowered here and
    compiled by :func:`build_llvm`."""
    blocks = sum(1 for f in funcs.values() if is_block_form(f))
    jobs = min(worker_count(), blocks // PARALLEL_LOWER_FUNCS)
    if jobs > 1 and not PassContext.current().instruments:
        return build_llvm_in_pieces(funcs, t, jobs)
    return build_llvm({n: lower_for_codegen(f) for n, f in funcs.items()}, t)


def build_llvm_in_pieces(funcs: dict[str, S.PrimFunc], target: Any, jobs: int) -> Module:
    """Compile block-form (or lowered) PrimFuncs into one runtime Module on ``jobs``
    processes: the functions are shared into ``PARTS_PER_JOB`` pieces per process of
    about equal lowering work, and each process takes the next piece, the largest first
    (``irc.core.parallel.fork_pull``), lowers its functions, generates their LLVM module
    and compiles it; only the object code comes back. Piece ``k`` numbers its kernel
    messages above ``k * MESSAGE_CODES_PER_PIECE``, so the pieces' message tables merge.

    Against lowering everything in parallel, then generating one module's text here and
    compiling its parts in parallel, this spares a barrier between the two parallel
    steps, the serial code generation and sending the lowered functions back."""
    t = Target.canon(target)
    cost = {n: _lowering_cost(f) + 64 if is_block_form(f) else 64 for n, f in funcs.items()}
    count = max(1, min(PARTS_PER_JOB * jobs, len(funcs), _MAX_PIECES))
    pieces: list[list[str]] = [[] for _ in range(count)]
    loads = [0] * count
    for name in sorted(funcs, key=lambda n: -cost[n]):
        k = loads.index(min(loads))
        pieces[k].append(name)
        loads[k] += cost[name]
    order = sorted(range(count), key=lambda k: -loads[k])

    def piece(k: int) -> CompiledObject:
        lowered = {n: lower_for_codegen(funcs[n]) for n in pieces[k]}
        return compile_source(codegen_llvm(lowered, t, message_base=k * MESSAGE_CODES_PER_PIECE),
                              t)

    ensure_llvm()  # before forking: the children inherit the initialized LLVM
    try:
        objs = fork_pull(piece, order, jobs)
    except RecursionError:
        raise BuildError("the function is too deeply nested to compile") from None
    return _module_of(objs, list(funcs), t)


class _ExpandedStores(Visitor):
    """Counts stores, each times the iterations of the unrolled and vectorized loops
    around it (which lowering expands): a rough measure of the work of lowering."""

    def __init__(self) -> None:
        self.scale = 1
        self.total = 0

    def visit_For(self, s: S.For) -> None:
        extent = E.as_int(s.extent)
        factor = extent if s.kind in ("unrolled", "vectorized") and extent else 1
        self.scale *= factor
        self.visit(s.body)
        self.scale //= factor

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        self.total += self.scale

    def visit_PrimExpr(self, e: E.PrimExpr) -> None:
        return None


def _lowering_cost(func: S.PrimFunc) -> int:
    counter = _ExpandedStores()
    counter.visit(func.body)
    return counter.total


def build_llvm(lowered: dict[str, S.PrimFunc], target: Any) -> Module:
    """Compile lowered PrimFuncs with LLVM into a runtime Module (no cache); a large
    module compiles in parts on several cores (``llvm_compile.compile_sources``)."""
    t = Target.canon(target)
    try:
        jobs = worker_count() if len(lowered) > 1 else 1
        if jobs > 1:
            # More parts than processes, taken the largest first as processes free up:
            # LLVM's time is not proportional to a part's size.
            sources = codegen_llvm_parts(lowered, t, PARTS_PER_JOB * jobs,
                                         PARALLEL_PART_BYTES)
        else:
            sources = [codegen_llvm(lowered, t)]
        objs = compile_sources(sources, t)
    except RecursionError:
        raise BuildError("the function is too deeply nested to compile") from None
    return _module_of(objs, list(lowered), t)


def _module_of(objs: list[CompiledObject], names: list[str], t: Target,
               per_kernel: bool = False) -> Module:
    """One runtime Module of the objects of a module's parts, its functions in the
    order of ``names``; ``per_kernel``: each object is one kernel with its own message
    codes (kept per kernel), else the parts' codes are disjoint and merge."""
    signatures = {n: sig for obj in objs for n, sig in obj.signatures.items()}
    signatures = {n: signatures[n] for n in names if n in signatures}  # the given order
    externals = list(dict.fromkeys(e for obj in objs for e in obj.externals))
    if per_kernel:
        messages: dict[int, str] = {}
        scoped = {n: obj.messages for obj in objs for n in obj.signatures if obj.messages}
    else:
        messages = {code: text for obj in objs for code, text in obj.messages.items()}
        scoped = {}
    entry = "main" if "main" in signatures else next(iter(signatures), None)
    return Module([obj.object_code for obj in objs], signatures, messages, str(t),
                  entry_name=entry, externals=externals,
                  llvm_ir="".join(obj.llvm_ir for obj in objs), kernel_messages=scoped)


def clear_cache() -> None:
    """Forget every compiled module and kernel kept in memory (the disk cache stays)."""
    global _kernel_bytes
    with _cache_lock:
        _cache.clear()
        _kernels.clear()
        _kernel_bytes = 0
