"""The CPU's measured floating-point peak: a register-only FMA loop, for the benchmarks'
"fraction of peak" column; and a probe of how fast data moves between the cores, for
their "cross-core" column (``cross_core_copy_gbps``).

The loop keeps ``accumulators`` independent vector accumulators of the target's width
in registers and updates each by one fused multiply-add per iteration, so it does no
memory traffic and its only dependency chains are the accumulators' (enough of them to
cover the FMA latency on every current x86 core). It is written in LLVM IR and compiled
for the same target as irc's kernels; ``threads`` copies run at once on Python threads
(ctypes releases the GIL during the call), which is what irc's parallel kernels get
with one thread per core.

    >>> from irc.testing.cpu_peak import fma_peak_gflops
    >>> fma_peak_gflops(threads=2)         # doctest: +SKIP
    480.3
"""

from __future__ import annotations

import ctypes
import threading
import time

import numpy as np

from ..codegen.build import build
from ..core.diagnostics import IRCError
from ..core.target import Target, llvm_binding
from ..runtime.engine import ensure_llvm, llvm_lock, load_object, target_machine
from ..runtime.ndarray import aligned_empty
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer


def fma_loop_ir(lanes: int, accumulators: int) -> str:
    """LLVM IR of ``void irc_fma_peak(i64 n, float* io)``: ``n`` iterations of one
    ``<lanes x float>`` FMA per accumulator; ``io[0]``/``io[1]`` give the multiplier and
    addend (run-time values, so nothing folds), and the lanes' sum is stored to
    ``io[2]`` (so nothing is dead)."""
    vt = f"<{lanes} x float>"
    lines = [
        f"declare {vt} @llvm.fma.v{lanes}f32({vt}, {vt}, {vt})",
        "define void @irc_fma_peak(i64 %n, ptr noalias %io) {",
        "entry:",
        "  %m = load float, ptr %io",
        "  %pc = getelementptr float, ptr %io, i64 1",
        "  %c = load float, ptr %pc",
        f"  %m0 = insertelement {vt} poison, float %m, i32 0",
        f"  %mv = shufflevector {vt} %m0, {vt} poison, <{lanes} x i32> zeroinitializer",
        f"  %c0 = insertelement {vt} poison, float %c, i32 0",
        f"  %cv = shufflevector {vt} %c0, {vt} poison, <{lanes} x i32> zeroinitializer",
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [0, %entry], [%i1, %loop]",
    ]
    for k in range(accumulators):
        lines.append(f"  %a{k} = phi {vt} [%cv, %entry], [%b{k}, %loop]")
    for k in range(accumulators):
        lines.append(f"  %b{k} = call {vt} @llvm.fma.v{lanes}f32({vt} %a{k}, {vt} %mv, "
                     f"{vt} %cv)")
    lines += [
        "  %i1 = add i64 %i, 1",
        "  %done = icmp uge i64 %i1, %n",
        "  br i1 %done, label %exit, label %loop",
        "exit:",
    ]
    acc = "%b0"
    for k in range(1, accumulators):
        lines.append(f"  %s{k} = fadd {vt} {acc}, %b{k}")
        acc = f"%s{k}"
    lines += [
        f"  %r = call float @llvm.vector.reduce.fadd.v{lanes}f32(float 0.0, {vt} {acc})",
        "  %po = getelementptr float, ptr %io, i64 2",
        "  store float %r, ptr %po",
        "  ret void",
        "}",
        f"declare float @llvm.vector.reduce.fadd.v{lanes}f32(float, {vt})",
    ]
    return "\n".join(lines) + "\n"


def fma_peak_gflops(threads: int = 1, target: str | Target = "llvm", seconds: float = 0.3,
                    accumulators: int | None = None) -> float:
    """GFLOPS (an FMA counts two) of ``threads`` copies of the FMA loop running at once
    on ``target``'s vector width, for about ``seconds``; the best of three runs.
    ``accumulators`` defaults to what the target's vector registers hold beside the two
    operands with room to spare (16 of AVX-512's 32, 12 of AVX2's 16: 16 accumulators
    on a 16-register CPU spill and measure half the peak)."""
    t = Target.canon(target)
    lanes = max(1, t.vector_width_bits() // 32)
    if accumulators is None:
        accumulators = min(16, t.vector_registers() - 4)
    llvm = llvm_binding()
    ensure_llvm()
    with llvm_lock:
        mod = llvm.parse_assembly(fma_loop_ir(lanes, accumulators))
        mod.verify()
        obj = target_machine(t).emit_object(mod)
    loaded = load_object(obj, ("irc_fma_peak",))
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)(
        loaded.address("irc_fma_peak"))
    flop_per_iter = 2 * lanes * accumulators

    def run(n: int) -> float:
        bufs = [(ctypes.c_float * 3)(0.999999, 1e-7, 0.0) for _ in range(threads)]
        workers = [threading.Thread(target=fn, args=(n, ctypes.addressof(b))) for b in bufs]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return time.perf_counter() - t0

    n = 1 << 16
    while run(n) < seconds / 4:  # calibrate to about `seconds` per run
        n *= 2
    n *= 4
    best = min(run(n) for _ in range(3))
    return threads * n * flop_per_iter / best / 1e9


def _copy_kernel(parts: int, count: int, shift: int) -> S.PrimFunc:
    """``dst[t, :] = src[(t + shift) % parts, :]`` for each part ``t`` (a row of
    ``count`` floats) of a parallel loop, whose ranges give part ``t`` to thread
    ``t``."""
    src = decl_buffer((parts, count), "float32", "src")
    dst = decl_buffer((parts, count), "float32", "dst")
    t, j = E.var("t"), E.var("j")
    row = E.floormod(t + E.const(shift, "int32"), E.const(parts, "int32")) if shift else t
    inner = S.For(loop_var=j, min=E.const(0, "int32"), extent=E.const(count, "int32"),
                  kind="serial", body=S.BufferStore(buffer=dst, value=src[row, j],
                                                    indices=(t, j)))
    body = S.For(loop_var=t, min=E.const(0, "int32"), extent=E.const(parts, "int32"),
                 kind="parallel", body=inner)
    handles = (E.var("src_handle", "handle"), E.var("dst_handle", "handle"))
    return S.PrimFunc(params=handles, buffer_map={handles[0]: src, handles[1]: dst},
                      body=body, attrs={"global_symbol": "main", "tir.noalias": True})


def cross_core_copy_gbps(threads: int = 2, nbytes: int = 512 * 1024,
                         target: str | Target = "llvm", calls: int = 100
                         ) -> tuple[float, float]:
    """How fast data written by one core reaches another: ``(local, cross)`` GB/s of a
    parallel copy of ``nbytes`` in ``threads`` parts, called back and forth between two
    buffers, where each part reads what its own thread wrote on the call before
    (``local``) or what the next thread wrote (``cross``); each the best of five batches
    of ``calls``. Both copies run as irc's kernels do (one libgomp thread per core,
    thread ``t`` taking part ``t``), with a size that stays in each core's L2.

    The cross figure says what a parallel kernel pays for reading another core's
    results. On the 2-core development VM (Zen 4), alternating with ResNet-50's default
    build, it read 11.1-11.9 GB/s while the network ran 30.1-31.5 ms and 3.3-3.4 GB/s
    in the phases, minutes long, in which it ran 35.0-36.2 ms; the local copy read
    36-59 GB/s in both. Such phases slow irc's two-thread builds and not its one-thread
    builds, so the benchmarks print the probe beside their figures."""
    t = Target.canon(target)
    if threads < 2:
        raise IRCError(f"cross_core_copy_gbps needs at least 2 threads, got {threads}")
    count = max(16, nbytes // 4 // threads)
    rounds = max(1, calls // 2)
    x = aligned_empty((threads, count), np.float32)
    y = aligned_empty((threads, count), np.float32)
    x.fill(1.0)
    y.fill(1.0)
    moved = 4 * threads * count

    def gbps(shift: int) -> float:
        fn = build(_copy_kernel(threads, count, shift),
                   target=f"{t} -num-cores {threads}")["main"]
        for _ in range(4):
            fn(x, y)
            fn(y, x)
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(rounds):
                fn(x, y)
                fn(y, x)
            best = min(best, (time.perf_counter() - t0) / (2 * rounds))
        return moved / best / 1e9

    return gbps(0), gbps(1)


__all__ = ["cross_core_copy_gbps", "fma_loop_ir", "fma_peak_gflops"]
