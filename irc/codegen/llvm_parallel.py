"""Parallel loops on all cores through the OpenMP runtime (libgomp).

A ``parallel`` loop is outlined:

- ``<fn>_parallel_<k>_body(free values..., ptr next)`` — the loop over the chunks this
  thread takes. The free values (buffer pointers, loop variables of enclosing loops,
  shape variables, ...) arrive as parameters, so buffer pointers keep their
  ``noalias``/``align`` attributes and the inner loops vectorize as well as in the
  enclosing function. Iterations are handed out dynamically: each thread takes the next
  chunk of contiguous iterations from the shared counter ``next`` (an atomic add) until
  none is left; a chunk is a ``CHUNKS_PER_THREAD``-th of a thread's share. A static
  split (one equal share per thread) made every parallel kernel wait for its slower
  half whenever another process held a core, which on a shared machine is often: with
  dynamic chunks the free core takes the slow one's remaining chunks (ResNet-50 on a
  Zen 3 with a busy loop on the other core: 131 -> 119 ms; unloaded 57 -> 54 ms). It
  returns 0 or an error code.
- ``<fn>_parallel_<k>(ptr closure)`` — the function handed to ``GOMP_parallel``: it
  unpacks the closure (a stack struct of the free values, the chunk counter and an error
  slot), calls the body and records a nonzero return code atomically.

The caller fills the closure, calls ``GOMP_parallel(worker, closure, num_threads, 0)``
(libgomp keeps its threads alive between calls) and returns the error code if any thread
failed. Parallel loops nested inside run serially. When the runtime flag
``irc_parallel_mode`` is nonzero (a process forked after libgomp started, where libgomp
would hang) the worker is called directly on the calling thread instead.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from .llvm_builder import FunctionBuilder, Value, const_int
from .llvm_common import natural_align, referenced_vars, value_type

_SAVED = ("b", "vars", "heap_live", "in_parallel", "mask", "fmf")
# Chunks per thread of a parallel loop's iterations (see the module docstring).
CHUNKS_PER_THREAD = 8


def emit_parallel_for(cg, loop: S.For) -> None:
    """Emit ``loop`` (kind parallel) as an OpenMP parallel region."""
    free = [v for v in referenced_vars(loop) if id(v) in cg.vars and v is not loop.loop_var]
    values = [cg.vars[id(v)] for v in free]
    k = cg._parallel_count
    cg._parallel_count += 1
    name = f"{cg.func_name}_parallel_{k}"
    ity = value_type(loop.loop_var.dtype)
    # The free values, then the chunk counter, then the error slot.
    struct = "{ " + ", ".join([v.ty for v in values] + [ity, "i32"]) + " }"

    body_name = _emit_body(cg, name + "_body", loop, free, values)
    _emit_worker(cg, name, body_name, struct, values)

    b = cg.b
    closure = b.alloca(struct, 1, 64, "closure")
    for i, v in enumerate(values):
        p = b.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, i32 {i}",
                   "ptr", "cl")
        b.store(v, p, natural_align(v.ty))
    next_ptr = b.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                      f"i32 {len(values)}", "ptr", "next")
    b.store(Value(ity, "0"), next_ptr, natural_align(ity))
    err_ptr = b.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                     f"i32 {len(values) + 1}", "ptr", "err")
    b.store(Value("i32", "0"), err_ptr, 4)
    cg.module.declare("GOMP_parallel",
                      "declare void @GOMP_parallel(ptr, ptr, i32, i32) nounwind")
    cg.module.declare("irc_parallel_mode", "@irc_parallel_mode = external global i32")
    mode = b.load("i32", Value("ptr", "@irc_parallel_mode"), 4)
    omp, serial, joined = b.block("par_omp"), b.block("par_serial"), b.block("par_join")
    b.cbr(b.icmp("eq", mode, Value("i32", "0")), omp, serial)
    b.goto(omp)
    b.emit_void(f"call void @GOMP_parallel(ptr @{name}, ptr {closure.ref}, "
                f"i32 {cg.num_threads}, i32 0)")
    b.br(joined)
    b.goto(serial)
    # A forked child cannot use libgomp: run the region on this thread (one chunk).
    b.emit_void(f"call void @{name}(ptr {closure.ref})")
    b.br(joined)
    b.goto(joined)
    rc = b.load("i32", err_ptr, 4)
    ok, bad = b.block("par_ok"), b.block("par_fail")
    b.cbr(b.icmp("eq", rc, Value("i32", "0")), ok, bad)
    b.goto(bad)
    cg.fail(rc)
    b.goto(ok)


def _param_attrs(cg, v: E.Var, value: Value) -> str:
    if value.ty != "ptr":
        return ""
    attrs = []
    if id(v) in cg.noalias_vars:
        attrs.append("noalias")
    align = cg.ptr_align.get(id(v))
    if align:
        attrs.append(f"align {align}")
    return " ".join(attrs)


def _emit_body(cg, name: str, loop: S.For, free: list[E.Var], values: list[Value]) -> str:
    saved = {a: getattr(cg, a) for a in _SAVED}
    params = [(val.ty, v.name or "v", _param_attrs(cg, v, val)) for v, val in zip(free, values)]
    params.append(("ptr", "next", "nocapture"))
    fb = FunctionBuilder(cg.module, name, "i32", params, linkage="internal",
                         fn_attrs=cg.fn_attrs)
    cg.b = fb
    cg.vars = {id(v): p for v, p in zip(free, fb.params)}
    counter = fb.params[-1]
    cg.heap_live = []
    cg.in_parallel = True
    cg.mask = None
    cg.fmf = ""
    try:
        cg.module.declare("omp_get_num_threads",
                          "declare i32 @omp_get_num_threads() nounwind")
        ity = value_type(loop.loop_var.dtype)
        nt = fb.call("i32", "omp_get_num_threads", [], hint="nthreads")
        if ity != "i32":
            nt = fb.conv("sext", nt, ity)
        flags = cg._int_flags(loop.loop_var.dtype)
        start = cg.expr(loop.min)
        extent = cg.expr(loop.extent)
        # A chunk: the iterations over threads times CHUNKS_PER_THREAD, at least one.
        pieces = fb.binop("mul", nt, const_int(ity, CHUNKS_PER_THREAD), flags)
        chunk = fb.binop("sdiv", extent, pieces)
        one = const_int(ity, 1)
        chunk = fb.select(fb.icmp("slt", chunk, one), one, chunk)
        stop = fb.binop("add", start, extent, flags)
        take, run, done = fb.block("take"), fb.block("run"), fb.block("done")
        fb.br(take)
        fb.goto(take)
        first = fb.emit(f"atomicrmw add ptr {counter.ref}, {ity} {chunk.ref} monotonic, "
                        f"align {natural_align(ity)}", ity, "first")
        fb.cbr(fb.icmp("sge", first, extent), done, run)
        fb.goto(run)
        begin = fb.binop("add", start, first, flags)
        end = fb.binop("add", begin, chunk, flags)
        end = fb.select(fb.icmp("slt", end, stop), end, stop)
        start_at = E.as_int(loop.min)
        cg.emit_loop(loop.loop_var, begin, end, loop.body,
                     nonneg=start_at is not None and start_at >= 0)
        fb.br(take)
        fb.goto(done)
        fb.ret(Value("i32", "0"))
    finally:
        for a, v in saved.items():
            setattr(cg, a, v)
    return name


def _emit_worker(cg, name: str, body_name: str, struct: str, values: list[Value]) -> None:
    fb = FunctionBuilder(cg.module, name, "void", [("ptr", "closure", "nocapture")],
                         linkage="internal", fn_attrs=cg.fn_attrs)
    closure = fb.params[0]
    args = []
    for i, v in enumerate(values):
        p = fb.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, i32 {i}",
                    "ptr", "cl")
        args.append(fb.load(v.ty, p, natural_align(v.ty)))
    args.append(fb.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                        f"i32 {len(values)}", "ptr", "next"))
    rc = fb.call("i32", body_name, args, hint="rc")
    fail, done = fb.block("fail"), fb.block("done")
    fb.cbr(fb.icmp("ne", rc, const_int("i32", 0)), fail, done)
    fb.goto(fail)
    err = fb.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                  f"i32 {len(values) + 1}", "ptr", "err")
    fb.emit_void(f"store atomic i32 {rc.ref}, ptr {err.ref} monotonic, align 4")
    fb.br(done)
    fb.goto(done)
    fb.ret(None)
