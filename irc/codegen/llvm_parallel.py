"""Parallel loops on all cores through the OpenMP runtime (libgomp).

A ``parallel`` loop is outlined:

- ``<fn>_parallel_<k>_body(free values..., ptr next)`` — the loop over the chunks this
  thread takes. The free values (buffer pointers, loop variables of enclosing loops,
  shape variables, ...) arrive as parameters, so buffer pointers keep their
  ``noalias``/``align`` attributes and the inner loops vectorize as well as in the
  enclosing function. The iterations are cut into chunks of contiguous iterations (a
  ``CHUNKS_PER_THREAD``-th of a thread's share) and the chunks into one contiguous range
  per thread, each with its own counter (``next`` points at them, a cache line apart).
  A thread takes the chunks of its own range first, in order, by an atomic add on the
  range's counter, then those left in the other ranges the same way, until none is
  left. Two reasons:

  * *Stealing:* a static split (one equal share per thread) made every parallel kernel
    wait for its slower half whenever another process held a core, which on a shared
    machine is often: the free core takes the slow one's remaining chunks (ResNet-50 on
    a Zen 3 with a busy loop on the other core: 131 -> 119 ms; unloaded 57 -> 54 ms,
    with one shared counter).
  * *Affinity:* thread ``t`` runs the same part of every loop, so a kernel reads from
    its own core's caches what the kernel before it wrote there, where one shared
    counter dealt the chunks to the threads in an order that changed from call to call.
    On the shared 2-core Zen 4 VM, for minutes at a time, data moved slowly between
    the two cores (a one-thread ResNet-50 build then ran 1.01x its usual time, the
    two-thread build 1.22x, and a Winograd transform 5-9x); there ResNet-50 took 0.94x
    the time with shared-counter chunks (35.1 against 37.4 ms), otherwise 0.997x.

  It returns 0 or an error code.
- ``<fn>_parallel_<k>(ptr closure)`` — the function handed to ``GOMP_parallel``: it
  unpacks the closure (a stack struct of the free values, the chunk counters and an
  error slot), calls the body and records a nonzero return code atomically.

The caller fills the closure, calls ``GOMP_parallel(worker, closure, threads, 0)``
(libgomp keeps its threads alive between calls) and returns the error code if any thread
failed. Parallel loops nested inside run serially. The thread count comes from the
loop's work, an estimate of the elements it stores (:func:`loop_work`: its extent times
the stores of an iteration, inner loops counted with their extents):

- where that is a constant (static shapes) the scheduling rules already decided that the
  loop pays off on all cores (``wants_parallel`` in ``dlight/cpu/utils.py``; a tuned
  schedule was measured); the loop gets ``-num-cores`` threads, at most one per iteration;
- where it is known only at run time (a symbolic extent, of the loop or of a loop inside),
  the caller evaluates it before the region: one thread per ``WORK_PER_THREAD`` elements,
  at most one per core and one per iteration. A region of a single thread is not entered:
  the worker runs on the calling thread. A small dynamic shape (a batch of 1 through a
  kernel scheduled for any batch) then costs neither the wake-up of the other threads
  nor, while another process holds a core, the scheduler time slice (milliseconds)
  that the region's closing barrier waits for a descheduled thread.

Beside a busy process, the scheduler puts a thread of the team off its core for a time
slice (milliseconds), and libgomp's closing barrier waits for it even when the calling
thread has taken its chunks. Each region therefore times itself (the time-stamp counter:
the region's length, when the calling thread ran out of chunks, the other threads' time
in the body): a region longer by ``BARRIER_WAIT_CYCLES`` than its work on one thread is
*late*; after two late regions in a row (one alone is usually a sleeping thread's
wake-up) the regions of every kernel run on the calling thread for a while (the
runtime's ``irc_parallel_until``, ``irc_parallel_hold``, ``irc_parallel_strikes``):
``BACKOFF_MIN_CYCLES``, doubled each time the team is late again when it is tried after
the while, up to ``BACKOFF_MAX_CYCLES``.

When the runtime flag ``irc_parallel_mode`` is nonzero (a process forked after libgomp
started, where libgomp would hang) the worker is always called on the calling thread.
Called there, ``omp_get_num_threads()`` is the enclosing team's size (1 outside any
OpenMP region); the body counts at most the closure's ranges and runs every range not
yet taken, so it does the whole loop either way.
"""

from __future__ import annotations

from ..core import dtype as dt
from ..core.functor import Visitor
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor.substitute import substitute
from .llvm_builder import FunctionBuilder, Value, const_int
from .llvm_common import natural_align, referenced_vars, value_type

_SAVED = ("b", "vars", "heap_live", "in_parallel", "mask", "fmf")
# Chunks per thread of a parallel loop's iterations (see the module docstring).
CHUNKS_PER_THREAD = 8
# Stored elements per thread of a parallel loop whose work is known only at run time:
# two threads from 512K, where the CPU rules put a static nest on all cores
# (``PARALLEL_MIN_WORK`` in ``dlight/cpu/utils.py``). Below that a kernel takes tens of
# microseconds on one core, about what waking the other threads costs on a quiet
# machine, and far less than a time slice of a busy one.
WORK_PER_THREAD = 1 << 18
# Two regions in a row that each took BARRIER_WAIT_CYCLES time-stamp-counter cycles
# (about 0.1 ms at 3 GHz) longer than their work on one thread would have (a thread the
# scheduler put off its core: libgomp's closing barrier waits for it) make the regions of
# every kernel run on the calling thread alone for a while: beside a busy process each
# would otherwise wait a time slice (milliseconds). One such region alone (a sleeping
# thread's wake-up, the team's first region) does not count. The while starts at
# BACKOFF_MIN_CYCLES (about 50 ms) and doubles each time it ends in late regions again,
# up to BACKOFF_MAX_CYCLES (about 1 s); a region that is not late resets it.
BARRIER_WAIT_CYCLES = 300_000
BACKOFF_MIN_CYCLES = 150_000_000
BACKOFF_MAX_CYCLES = 3_000_000_000
# An inner loop's extent that cannot be evaluated before the loop (it depends on a value
# computed inside) counts as this many iterations.
UNKNOWN_EXTENT = 64
# Bytes between two threads' chunk counters: one cache line.
_LINE = 64


def _stride(ity: str) -> int:
    """Counter slots (of the loop's integer type) from one range's counter to the
    next."""
    return _LINE // (int(ity[1:]) // 8)


def emit_parallel_for(cg, loop: S.For) -> None:
    """Emit ``loop`` (kind parallel) as an OpenMP parallel region."""
    free = [v for v in referenced_vars(loop) if id(v) in cg.vars and v is not loop.loop_var]
    values = [cg.vars[id(v)] for v in free]
    k = cg._parallel_count
    cg._parallel_count += 1
    name = f"{cg.func_name}_parallel_{k}"
    ity = value_type(loop.loop_var.dtype)
    # The free values, then the chunk counters (one per thread's range, a cache line
    # apart), the error slot, when the calling thread finished its share and the cycles
    # the other threads spent in the body.
    slots = max(int(cg.num_threads), 1)
    counters = f"[{slots * _stride(ity)} x {ity}]"
    struct = "{ " + ", ".join([v.ty for v in values] + [counters, "i32", "i64", "i64"]) \
        + " }"

    body_name = _emit_body(cg, name + "_body", loop, free, values, slots)
    _emit_worker(cg, name, body_name, struct, values)

    b = cg.b
    closure = b.alloca(struct, 1, 64, "closure")
    for i, v in enumerate(values):
        p = b.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, i32 {i}",
                   "ptr", "cl")
        b.store(v, p, natural_align(v.ty))
    next_ptr = b.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                      f"i32 {len(values)}", "ptr", "next")
    for r in range(slots):
        slot = b.emit(f"getelementptr inbounds {ity}, ptr {next_ptr.ref}, i32 {r * _stride(ity)}",
                      "ptr", "slot")
        b.store(Value(ity, "0"), slot, natural_align(ity))
    err_ptr = b.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                     f"i32 {len(values) + 1}", "ptr", "err")
    b.store(Value("i32", "0"), err_ptr, 4)
    busy_ptr = b.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                      f"i32 {len(values) + 3}", "ptr", "busy")
    b.store(const_int("i64", 0), busy_ptr, 8)
    threads = _thread_count(cg, loop, slots)
    if threads is None:
        # One thread: the worker runs here, no region.
        b.emit_void(f"call void @{name}(ptr {closure.ref})")
    else:
        cg.module.declare("GOMP_parallel",
                          "declare void @GOMP_parallel(ptr, ptr, i32, i32) nounwind")
        cg.module.declare("irc_parallel_mode", "@irc_parallel_mode = external global i32")
        for sym, ty in (("irc_parallel_until", "i64"), ("irc_parallel_hold", "i64"),
                        ("irc_parallel_strikes", "i32")):
            cg.module.declare(sym, f"@{sym} = external global {ty}")
        cg.module.declare("llvm.readcyclecounter", "declare i64 @llvm.readcyclecounter()")
        until_ptr, hold_ptr = Value("ptr", "@irc_parallel_until"), Value("ptr",
                                                                        "@irc_parallel_hold")
        strikes_ptr = Value("ptr", "@irc_parallel_strikes")
        mode = b.load("i32", Value("ptr", "@irc_parallel_mode"), 4)
        t0 = b.call("i64", "llvm.readcyclecounter", [], hint="t0")
        until = b.load("i64", until_ptr, 8)
        go = b.binop("and", b.icmp("eq", mode, Value("i32", "0")), b.icmp("uge", t0, until))
        if not threads.is_const_int:
            go = b.binop("and", go, b.icmp("sgt", threads, Value("i32", "1")))
        omp, serial, joined = b.block("par_omp"), b.block("par_serial"), b.block("par_join")
        b.cbr(go, omp, serial)
        b.goto(omp)
        b.emit_void(f"call void @GOMP_parallel(ptr @{name}, ptr {closure.ref}, "
                    f"{threads}, i32 0)")
        t1 = b.call("i64", "llvm.readcyclecounter", [], hint="t1")
        done_ptr = b.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                          f"i32 {len(values) + 2}", "ptr", "tdone")
        t_done = b.load("i64", done_ptr, 8)
        busy = b.load("i64", busy_ptr, 8)
        # Late: the region took BARRIER_WAIT_CYCLES longer than its work on one thread
        # would have (this thread's share plus the others' time in the body).
        one_thread = b.binop("add", b.binop("sub", t_done, t0), busy)
        late = b.icmp("sgt", b.binop("sub", t1, t0),
                      b.binop("add", one_thread, const_int("i64", BARRIER_WAIT_CYCLES)))
        strikes = b.load("i32", strikes_ptr, 4)
        strikes = b.select(late, b.binop("add", strikes, const_int("i32", 1)),
                           const_int("i32", 0))
        again = b.icmp("sge", strikes, const_int("i32", 2))
        b.store(b.select(again, const_int("i32", 0), strikes), strikes_ptr, 4)
        # The second late region in a row holds the team back for ``hold`` cycles (at
        # least BACKOFF_MIN_CYCLES), and doubles it for next time (up to
        # BACKOFF_MAX_CYCLES); a region that is not late resets it.
        hold = b.load("i64", hold_ptr, 8)
        lo, hi = const_int("i64", BACKOFF_MIN_CYCLES), const_int("i64", BACKOFF_MAX_CYCLES)
        hold = b.select(b.icmp("slt", hold, lo), lo, hold)
        b.store(b.select(again, b.binop("add", t1, hold), until), until_ptr, 8)
        doubled = b.binop("shl", hold, const_int("i64", 1))
        doubled = b.select(b.icmp("sgt", doubled, hi), hi, doubled)
        b.store(b.select(again, doubled, b.select(late, hold, const_int("i64", 0))),
                hold_ptr, 8)
        b.br(joined)
        b.goto(serial)
        # Too little work for a second thread, a team held back after regions waited for
        # a descheduled thread, or a forked child, which cannot use libgomp: the worker
        # runs on this thread.
        b.emit_void(f"call void @{name}(ptr {closure.ref})")
        b.br(joined)
        b.goto(joined)
    rc = b.load("i32", err_ptr, 4)
    ok, bad = b.block("par_ok"), b.block("par_fail")
    b.cbr(b.icmp("eq", rc, Value("i32", "0")), ok, bad)
    b.goto(bad)
    cg.fail(rc)
    b.goto(ok)


def _thread_count(cg, loop: S.For, slots: int) -> Value | None:
    """The ``i32`` thread count of the region of ``loop``: a constant where its work is
    static, else computed here from the work (see the module docstring); None when the
    loop always runs on one thread."""
    b = cg.b
    extent = E.as_int(loop.extent)
    if slots <= 1 or (extent is not None and extent <= 1):
        return None
    work = loop_work(loop, set(cg.vars))
    if E.as_int(work) is not None:
        return Value("i32", str(min(slots, extent) if extent is not None else slots))
    # threads = min(work / WORK_PER_THREAD, extent, slots), in 64 bits.
    t = b.binop("sdiv", cg.expr(work), const_int("i64", WORK_PER_THREAD))
    if extent is None:
        n = cg.expr(E.cast(loop.extent, "int64"))
        t = b.select(b.icmp("slt", n, t), n, t)
    cap = const_int("i64", slots if extent is None else min(slots, extent))
    t = b.select(b.icmp("slt", cap, t), cap, t)
    return b.conv("trunc", t, "i32")


def loop_work(loop: S.For, bound: set[int]) -> E.PrimExpr:
    """An ``int64`` estimate of the elements ``loop`` stores (vector stores count their
    lanes; a branch counts its larger side), over the variables of ``bound`` (ids of
    variables defined before the loop). Inner extents that use ``loop``'s variable are
    taken at its first iteration; those that need a value computed inside count
    ``UNKNOWN_EXTENT``. A constant when every extent is."""
    first = {id(loop.loop_var): loop.min}

    def extent(e: E.PrimExpr) -> E.PrimExpr:
        if E.as_int(e) is not None:
            return E.cast(e, "int64")
        e = substitute(e, lambda v: first.get(id(v)))
        scan = _ExtentScan()
        scan.visit(e)
        if scan.opaque or any(k not in bound for k in scan.var_ids):
            return E.const(UNKNOWN_EXTENT, "int64")
        return E.cast(e, "int64")

    def work(s: S.Stmt) -> E.PrimExpr:
        t = type(s)
        if t is S.BufferStore:
            return E.const(dt.lanes(s.value.dtype), "int64")
        if t is S.SeqStmt:
            total = E.const(0, "int64")
            for x in s.seq:
                total = E.add(total, work(x))
            return total
        if t is S.For:
            return E.mul(extent(s.extent), work(s.body))
        if t is S.IfThenElse:
            w = work(s.then_case)
            return w if s.else_case is None else E.max_(w, work(s.else_case))
        if t is S.While:
            return E.mul(E.const(UNKNOWN_EXTENT, "int64"), work(s.body))
        if t is S.Evaluate:
            return E.const(0 if type(s.value) is E.IntImm else 1, "int64")
        body = getattr(s, "body", None)
        return work(body) if isinstance(body, S.Stmt) else E.const(0, "int64")

    return E.mul(extent(loop.extent), work(loop.body))


class _ExtentScan(Visitor):
    """The variables of an extent, and whether it reads memory or calls a function (it
    is then not evaluated ahead of its loop)."""

    def __init__(self) -> None:
        self.var_ids: set[int] = set()
        self.opaque = False

    def visit_Var(self, v: E.Var) -> None:
        self.var_ids.add(id(v))

    def visit_BufferLoad(self, n) -> None:
        self.opaque = True

    def visit_Call(self, n) -> None:
        self.opaque = True


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


def _emit_body(cg, name: str, loop: S.For, free: list[E.Var], values: list[Value],
               slots: int) -> str:
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
        cg.module.declare("omp_get_thread_num",
                          "declare i32 @omp_get_thread_num() nounwind")
        ity = value_type(loop.loop_var.dtype)
        nt = fb.call("i32", "omp_get_num_threads", [], hint="nthreads")
        tid = fb.call("i32", "omp_get_thread_num", [], hint="tid")
        # Called outside a region of its own (see the module docstring), the team may be
        # larger than the closure's ranges: count at most those, and start at range 0.
        cap = const_int("i32", slots)
        nt = fb.select(fb.icmp("slt", cap, nt), cap, nt)
        tid = fb.select(fb.icmp("slt", tid, nt), tid, const_int("i32", 0))
        if ity != "i32":
            nt = fb.conv("sext", nt, ity)
            tid = fb.conv("sext", tid, ity)
        flags = cg._int_flags(loop.loop_var.dtype)
        start = cg.expr(loop.min)
        extent = cg.expr(loop.extent)
        zero, one = const_int(ity, 0), const_int(ity, 1)
        # A chunk: the iterations over threads times CHUNKS_PER_THREAD, at least one.
        pieces = fb.binop("mul", nt, const_int(ity, CHUNKS_PER_THREAD), flags)
        chunk = fb.binop("sdiv", extent, pieces)
        chunk = fb.select(fb.icmp("slt", chunk, one), one, chunk)
        count = fb.binop("sdiv", fb.binop("add", extent, fb.binop("sub", chunk, one)), chunk)
        stop = fb.binop("add", start, extent, flags)
        entry = fb.cur
        head, setup, take = fb.block("range"), fb.block("range_setup"), fb.block("take")
        run, after, done = fb.block("run"), fb.block("range_next"), fb.block("done")
        fb.br(head)
        # Ranges k = 0, 1, ...: this thread's own first (range tid), then the others'.
        fb.goto(head)
        k = fb.phi(ity, "k")
        kv = Value(ity, k.name)
        k.add(zero, entry)
        fb.cbr(fb.icmp("slt", kv, nt), setup, done)
        fb.goto(setup)
        r = fb.binop("add", tid, kv)
        r = fb.select(fb.icmp("sge", r, nt), fb.binop("sub", r, nt), r)
        lo = fb.binop("sdiv", fb.binop("mul", r, count), nt)
        hi = fb.binop("sdiv", fb.binop("mul", fb.binop("add", r, one), count), nt)
        size = fb.binop("sub", hi, lo)
        slot = fb.gep(ity, counter, fb.binop("mul", r, const_int(ity, _stride(ity))))
        fb.br(take)
        fb.goto(take)
        taken = fb.emit(f"atomicrmw add ptr {slot.ref}, {ity} 1 monotonic, "
                        f"align {natural_align(ity)}", ity, "taken")
        fb.cbr(fb.icmp("sge", taken, size), after, run)
        fb.goto(run)
        begin = fb.binop("add", start, fb.binop("mul", fb.binop("add", lo, taken), chunk),
                         flags)
        end = fb.binop("add", begin, chunk, flags)
        end = fb.select(fb.icmp("slt", end, stop), end, stop)
        start_at = E.as_int(loop.min)
        cg.emit_loop(loop.loop_var, begin, end, loop.body,
                     nonneg=start_at is not None and start_at >= 0)
        fb.br(take)
        fb.goto(after)
        k.add(fb.binop("add", kv, one), after)
        fb.br(head)
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
    start = fb.call("i64", "llvm.readcyclecounter", [], hint="start")
    rc = fb.call("i32", body_name, args, hint="rc")
    # The calling thread (0) records when it ran out of chunks, the others add their time
    # in the body: the caller compares the region's length with the work's.
    end = fb.call("i64", "llvm.readcyclecounter", [], hint="end")
    mine, others, timed = fb.block("master"), fb.block("others"), fb.block("timed")
    tid = fb.call("i32", "omp_get_thread_num", [], hint="tid")
    fb.cbr(fb.icmp("eq", tid, const_int("i32", 0)), mine, others)
    fb.goto(mine)
    done_ptr = fb.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                       f"i32 {len(values) + 2}", "ptr", "tdone")
    fb.store(end, done_ptr, 8)
    fb.br(timed)
    fb.goto(others)
    busy_ptr = fb.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                       f"i32 {len(values) + 3}", "ptr", "busy")
    fb.emit_void(f"atomicrmw add ptr {busy_ptr.ref}, i64 "
                 f"{fb.binop('sub', end, start).ref} monotonic, align 8")
    fb.br(timed)
    fb.goto(timed)
    fail, done = fb.block("fail"), fb.block("done")
    fb.cbr(fb.icmp("ne", rc, const_int("i32", 0)), fail, done)
    fb.goto(fail)
    err = fb.emit(f"getelementptr inbounds {struct}, ptr {closure.ref}, i32 0, "
                  f"i32 {len(values) + 1}", "ptr", "err")
    fb.emit_void(f"store atomic i32 {rc.ref}, ptr {err.ref} monotonic, align 4")
    fb.br(done)
    fb.goto(done)
    fb.ret(None)
