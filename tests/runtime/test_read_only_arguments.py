"""Read-only arrays as kernel arguments: refused where the kernel writes, accepted where it
only reads (the signature records which buffer parameters a kernel writes)."""

import json
import os
import sys

import numpy as np
import pytest

import irc
from irc import te, tir
from irc.runtime.signature import KernelSignature
from irc.tir import expr as E
from irc.tir import stmt as S
from irc.tir.analysis import written_params

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "codegen"))
from llvm_kernels import buf, func, loop, store


@pytest.fixture(scope="module")
def double():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 2, name="B")
    return irc.build(te.create_prim_func([A, B]), "llvm")


def _read_only(arr):
    arr.flags.writeable = False
    return arr


def _saved(tmp_path, arr, name):
    path = str(tmp_path / name)
    np.save(path, arr)
    return np.load(path, mmap_mode="r")


def test_a_read_only_output_is_refused_naming_the_parameter(double, tmp_path):
    a = np.arange(4, dtype="float32")
    out = _read_only(np.zeros(4, "float32"))
    with pytest.raises(irc.RuntimeReadOnlyError,
                       match=r"main: parameter B \(#1\) is not writeable") as info:
        double(a, out)
    assert "np.empty_like" in str(info.value)
    assert not out.any()
    mapped = _saved(tmp_path, np.zeros(4, "float32"), "out.npy")  # a write would crash
    with pytest.raises(irc.RuntimeReadOnlyError, match="parameter B"):
        double(a, mapped)
    with pytest.raises(irc.RuntimeReadOnlyError, match="parameter B"):
        double["main"].call_checked(a, mapped)
    assert isinstance(info.value, irc.RuntimeArgumentError)


def test_a_tensor_viewing_read_only_memory_is_refused_as_an_output(double, tmp_path):
    view = irc.runtime.from_dlpack(_saved(tmp_path, np.zeros(4, "float32"), "out.npy"))
    x = irc.tensor(np.arange(4, dtype="float32"))
    with pytest.raises(irc.RuntimeReadOnlyError, match=r"parameter B \(#1\)"):
        double(x, view)  # the fast path for tensors
    with pytest.raises(irc.RuntimeReadOnlyError, match="copyfrom"):
        view.copyfrom(np.ones(4, "float32"))
    out = irc.runtime.empty((4,), "float32")
    double(view, out)  # read-only memory as an input is fine
    np.testing.assert_array_equal(out.numpy(), 0)


def test_read_only_inputs_are_accepted(double, tmp_path):
    src = np.arange(4, dtype="float32")
    out = np.zeros(4, "float32")
    double(_saved(tmp_path, src, "a.npy"), out)
    np.testing.assert_array_equal(out, src * 2)
    unaligned = _read_only(np.arange(5, dtype="float32")[1:])  # staged through a copy
    double(unaligned, out)
    np.testing.assert_array_equal(out, unaligned * 2)


class _Producer:
    """A DLPack producer in host memory (what torch or jax CPU tensors are)."""

    def __init__(self, arr):
        self.arr = arr

    def __dlpack__(self, **kwargs):
        return self.arr.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()


def test_an_unaligned_dlpack_output_receives_what_the_kernel_writes(double):
    base = np.zeros(5, "float32")
    double(np.arange(4, dtype="float32"), _Producer(base[1:]))
    np.testing.assert_array_equal(base, [0, 0, 2, 4, 6])


def test_the_signature_says_which_buffers_are_written(double, tmp_path):
    sig = double["main"].signature
    assert [b.written for b in sig.buffers] == [False, True]
    assert KernelSignature.from_json(json.loads(json.dumps(sig.to_json()))) == sig
    path = str(tmp_path / "double.o")
    double.export_library(path)
    loaded = irc.runtime.load_module(path)
    assert [b.written for b in loaded["main"].signature.buffers] == [False, True]
    a, out = _read_only(np.arange(4, dtype="float32")), np.zeros(4, "float32")
    loaded(a, out)
    np.testing.assert_array_equal(out, a * 2)


def test_a_stored_signature_without_the_field_counts_every_buffer_as_written(double):
    stored = double["main"].signature.to_json()
    for b in stored["buffers"]:
        del b["written"]
    sig = KernelSignature.from_json(stored)
    assert [b.written for b in sig.buffers] == [True, True]


def test_written_params_counts_stores_and_escaping_pointers():
    a, b, c = buf("a", (4,)), buf("b", (4,)), buf("c", (4,))
    i = tir.var("i")
    # a[i] = a[i] + b[i]: a is updated in place, b only read; c's pointer goes to a C call.
    escape = S.Evaluate(value=E.Call(dtype="int32", op="call_extern",
                                     args=(E.StringImm(dtype="handle", value="fill"), c.data)))
    f = func([a, b, c], S.SeqStmt(seq=(loop(i, 4, store(a, i, a[i] + b[i])), escape)))
    assert written_params(f) == {0, 2}
    mod = irc.build(func([a, b], loop(i, 4, store(a, i, a[i] + b[i])), name="acc"))
    assert [x.written for x in mod["acc"].signature.buffers] == [True, False]
    x = _read_only(np.ones(4, "float32"))
    with pytest.raises(irc.RuntimeReadOnlyError, match="acc: parameter a"):
        mod["acc"](x, np.ones(4, "float32"))
    y = np.ones(4, "float32")
    mod["acc"](y, x)
    np.testing.assert_array_equal(y, 2)
