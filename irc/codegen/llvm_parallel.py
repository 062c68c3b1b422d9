"""Parallel loops on all cores through the OpenMP runtime (libgomp).

A ``parallel`` loop is outlined:

- ``<fn>_parallel_<k>_body(free values...)`` — the loop over this thread's chunk. The
  free values (buffer pointers, loop variables of enclosing loops, shape variables, ...)
  arrive as parameters, so buffer pointers keep their ``noalias``/``align`` attributes
  and the inner loops vectorize as well as in the enclosing function. Iterations are
  split into contiguous static chunks by ``omp_get_thread_num``/``omp_get_num_threads``
  (sizes differ by at most one). It returns 0 or an error code.
- ``<fn>_parallel_<k>(ptr closure)`` — the function handed to ``GOMP_parallel``: it
  unpacks the closure (a stack struct of the free values plus an error slot), calls the
  body and records a nonzero return code atomically.

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


def emit_parallel_for(cg, loop: S.For) -> None:
    """Emit ``loop`` (kind parallel) as an OpenMP parallel region."""
    free = [v for v in referenced_vars(loop) if id(v) in cg.vars and v is not loop.loop_var]
    values = [cg.vars[id(v)] for v in free]
    k = cg._parallel_count
    cg._parallel_count += 1
    name = f"{cg.func_name}_parallel_{k}"
    struct = "{ " + ", ".join([v.ty for v in values] + ["i32"]) + " }"

    body_name = _emit_body(cg, name + "_body", loop, free, values)
    _emit_worker(cg, name, body_name, struct, values)

    b = cg.b
    closure = b.alloca(struct, 1, 64, "closure")
    for i, v in enumerate(values):
        p = b.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, i32 {i}",
                   "ptr", "cl")
        b.store(v, p, natural_align(v.ty))
    err_ptr = b.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                     f"i32 {len(values)}", "ptr", "err")
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
    fb = FunctionBuilder(cg.module, name, "i32", params, linkage="internal",
                         fn_attrs=cg.fn_attrs)
    cg.b = fb
    cg.vars = {id(v): p for v, p in zip(free, fb.params)}
    cg.heap_live = []
    cg.in_parallel = True
    cg.mask = None
    cg.fmf = ""
    try:
        for decl in ("omp_get_thread_num", "omp_get_num_threads"):
            cg.module.declare(decl, f"declare i32 @{decl}() nounwind")
        ity = value_type(loop.loop_var.dtype)
        tid = fb.call("i32", "omp_get_thread_num", [], hint="tid")
        nt = fb.call("i32", "omp_get_num_threads", [], hint="nthreads")
        if ity != "i32":
            tid = fb.conv("sext", tid, ity)
            nt = fb.conv("sext", nt, ity)
        flags = cg._int_flags(loop.loop_var.dtype)
        start = cg.expr(loop.min)
        extent = cg.expr(loop.extent)
        # Thread t gets [t*q + min(t, r), ...) with q + (t < r) iterations.
        q = fb.binop("sdiv", extent, nt)
        r = fb.binop("srem", extent, nt)
        lt = fb.icmp("slt", tid, r)
        extra = fb.select(lt, tid, r)
        first = fb.binop("add", fb.binop("mul", tid, q, flags), extra, flags)
        count = fb.binop("add", q, fb.conv("zext", lt, ity), flags)
        begin = fb.binop("add", start, first, flags)
        end = fb.binop("add", begin, count, flags)
        cg.emit_loop(loop.loop_var, begin, end, loop.body)
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
    rc = fb.call("i32", body_name, args, hint="rc")
    fail, done = fb.block("fail"), fb.block("done")
    fb.cbr(fb.icmp("ne", rc, const_int("i32", 0)), fail, done)
    fb.goto(fail)
    err = fb.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                  f"i32 {len(values)}", "ptr", "err")
    fb.emit_void(f"store atomic i32 {rc.ref}, ptr {err.ref} monotonic, align 4")
    fb.br(done)
    fb.goto(done)
    fb.ret(None)
