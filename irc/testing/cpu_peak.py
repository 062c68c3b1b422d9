"""The CPU's measured floating-point peak: a register-only FMA loop, for the benchmarks'
"fraction of peak" column.

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

from ..core.target import Target, llvm_binding
from ..runtime.engine import ensure_llvm, llvm_lock, load_object, target_machine


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


__all__ = ["fma_loop_ir", "fma_peak_gflops"]
