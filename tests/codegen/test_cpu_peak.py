"""The FMA peak and cross-core probes of the benchmarks (``irc.testing.cpu_peak``)."""

import llvmlite.binding as llvm
import numpy as np
import pytest

import irc
from irc.codegen.build import build
from irc.testing.cpu_peak import _copy_kernel, cross_core_copy_gbps, fma_loop_ir, fma_peak_gflops


def test_fma_loop_is_valid_ir_with_one_fma_per_accumulator():
    text = fma_loop_ir(16, 12)
    llvm.parse_assembly(text).verify()
    assert text.count("call <16 x float> @llvm.fma.v16f32(") == 12


def test_peak_is_measured_on_one_and_two_threads():
    one = fma_peak_gflops(1, seconds=0.02)
    two = fma_peak_gflops(2, seconds=0.02)
    # Some GFLOPS on any machine with a vector unit (no timing is asserted beyond that).
    assert one > 1 and two > 1


@pytest.mark.parametrize("shift", [0, 1, 2])
def test_copy_kernel_moves_each_part_from_its_source_part(shift):
    fn = build(_copy_kernel(3, 40, shift), target="llvm -num-cores 3")["main"]
    src = np.arange(120, dtype="float32").reshape(3, 40)
    dst = np.zeros_like(src)
    fn(src, dst)
    np.testing.assert_array_equal(dst, src[[(t + shift) % 3 for t in range(3)]])


def test_cross_core_probe_reports_both_copies():
    local, cross = cross_core_copy_gbps(2, nbytes=64 * 1024, calls=10)
    assert local > 0 and cross > 0
    with pytest.raises(irc.IRCError, match="at least 2 threads"):
        cross_core_copy_gbps(1)
