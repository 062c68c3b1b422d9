"""Read-only arrays passed to VM functions: accepted where the function only reads them,
refused (before any kernel runs) where one of its kernels writes the parameter."""

import os
import sys

import numpy as np
import pytest

import irc
from irc import tir
from irc.ir import BlockBuilder, Call, Var, ops, tensor_sinfo
from irc.tir import stmt as S
from irc.tir import te

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "codegen"))
from llvm_kernels import buf, func, loop, store


def _bump_and_copy():
    """a[i] += 1, then b[i] = a[i]: a kernel that updates its input in place."""
    a, b = buf("a", (4,)), buf("b", (4,))
    i, j = tir.var("i"), tir.var("j")
    body = S.SeqStmt(seq=(loop(i, 4, store(a, i, a[i] + 1.0)), loop(j, 4, store(b, j, a[j]))))
    return func([a, b], body, name="bump")


def _in_place_module():
    bb = BlockBuilder()
    gv = bb.add_func(_bump_and_copy(), "bump")
    x = Var(name_hint="x", struct_info=tensor_sinfo((4,)))
    with bb.function("main", [x]):
        lv = bb.emit(ops.call_tir(gv, [x], tensor_sinfo((4,))))
        main = bb.emit_func_output(lv)
    y = Var(name_hint="y", struct_info=tensor_sinfo((4,)))
    with bb.function("outer", [y]):
        lv = bb.emit(Call(op=main, args=(y,)))
        bb.emit_func_output(lv)
    return bb.get()


def _double_module():
    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda i: a[i] * 2.0, name="B")
    bb = BlockBuilder()
    gv = bb.add_func(te.create_prim_func([a, b]), "double")
    x = Var(name_hint="x", struct_info=tensor_sinfo((4,)))
    with bb.function("main", [x]):
        lv = bb.emit(ops.call_tir(gv, [x], tensor_sinfo((4,))))
        bb.emit_func_output(lv)
    return bb.get()


def _read_only(arr):
    arr.flags.writeable = False
    return arr


def test_a_read_only_argument_a_kernel_writes_is_refused(tmp_path):
    vm = irc.vm.VirtualMachine(irc.compile(_in_place_module(), "llvm", pipeline=None))
    path = str(tmp_path / "x.npy")
    np.save(path, np.zeros(4, "float32"))
    for name in ("main", "outer"):  # "outer" passes it on to "main"
        for x in (_read_only(np.zeros(4, "float32")), np.load(path, mmap_mode="r")):
            with pytest.raises(irc.RuntimeReadOnlyError,
                               match=rf"{name}: parameter (x|y) \(#0\) is not writeable"):
                vm[name](x)
            assert not x.any()
    x = np.zeros(4, "float32")
    np.testing.assert_array_equal(vm["outer"](x).numpy(), 1)
    np.testing.assert_array_equal(x, 1)  # the kernel's in-place update
    base = np.zeros(5, "float32")
    vm["main"](base[1:])  # run on an aligned copy, written back
    np.testing.assert_array_equal(base, [0, 1, 1, 1, 1])


@pytest.mark.parametrize("plans", ["1", "0"])
def test_read_only_inputs_that_are_only_read_work(tmp_path, irc_settings, plans):
    irc_settings(vm_native_plan=plans == "1")
    vm = irc.vm.VirtualMachine(irc.compile(_double_module(), "llvm", pipeline=None))
    path = str(tmp_path / "x.npy")
    np.save(path, np.arange(4, dtype="float32"))
    mapped = np.load(path, mmap_mode="r")
    np.testing.assert_array_equal(vm["main"](mapped).numpy(), [0, 2, 4, 6])
    x = _read_only(np.arange(4, dtype="float32"))
    np.testing.assert_array_equal(vm["main"](x).numpy(), [0, 2, 4, 6])
    tensor = irc.runtime.from_dlpack(mapped)
    np.testing.assert_array_equal(vm["main"](tensor).numpy(), [0, 2, 4, 6])
