"""The FMA peak measurement of the benchmarks (``irc.testing.cpu_peak``)."""

import llvmlite.binding as llvm

from irc.testing.cpu_peak import fma_loop_ir, fma_peak_gflops


def test_fma_loop_is_valid_ir_with_one_fma_per_accumulator():
    text = fma_loop_ir(16, 12)
    llvm.parse_assembly(text).verify()
    assert text.count("call <16 x float> @llvm.fma.v16f32(") == 12


def test_peak_is_measured_on_one_and_two_threads():
    one = fma_peak_gflops(1, seconds=0.02)
    two = fma_peak_gflops(2, seconds=0.02)
    # Some GFLOPS on any machine with a vector unit (no timing is asserted beyond that).
    assert one > 1 and two > 1
