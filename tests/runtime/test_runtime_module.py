"""Modules: calling with checks, errors, files, timing, the build cache."""

import os
import select
import sys

import numpy as np
import pytest

import irc
from irc import tir
from irc.codegen.build import _BUILDERS
from irc.target import Target

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "codegen"))
from llvm_kernels import buf, func, loop, rand, store


def _add_one(n=8, dtype="float32", name="add_one"):
    a, b = buf("a", (n,), dtype), buf("b", (n,), dtype)
    i = tir.var("i")
    return func([a, b], loop(i, n, store(b, i, a[i] + tir.const(1, dtype))), name=name)


def _counter():
    # counter[0] += 1 on every call: lets tests count native calls.
    c = buf("counter", (1,), "int64")
    return func([c], store(c, 0, c[0] + tir.const(1, "int64")), name="count")


def test_call_with_tensors_and_numpy():
    mod = irc.build(_add_one())
    assert mod.entry_name == "add_one" and "add_one" in mod
    x = np.arange(8, dtype="float32")
    a, b = irc.tensor(x), irc.runtime.empty((8,), "float32")
    mod["add_one"](a, b)
    np.testing.assert_array_equal(b.numpy(), x + 1)
    out = np.zeros(8, "float32")
    mod(x, out)  # entry function; numpy arrays directly
    np.testing.assert_array_equal(out, x + 1)


def test_unaligned_and_strided_numpy_arrays_are_staged():
    mod = irc.build(_add_one(5))
    base = np.arange(12, dtype="float32")
    src = base[1:6]  # misaligned view
    big = np.zeros(10, "float32")
    dst = big[::2]  # strided output: written through a staged copy
    mod["add_one"](src, dst)
    np.testing.assert_array_equal(dst, base[1:6] + 1)
    np.testing.assert_array_equal(big[1::2], 0)


def test_argument_errors_name_function_and_parameter():
    mod = irc.build(_add_one(8))
    f = mod["add_one"]
    good = np.zeros(8, "float32")
    with pytest.raises(irc.RuntimeArgumentCountError, match="takes 2 arguments"):
        f(good)
    with pytest.raises(irc.RuntimeShapeError, match=r"add_one: parameter b expects shape \(8,\)"):
        f(good, np.zeros(9, "float32"))
    with pytest.raises(irc.RuntimeDTypeError, match="parameter a expects dtype float32, got "
                                                   "float64"):
        f(np.zeros(8), good)
    with pytest.raises(irc.RuntimeDTypeError, match="expects dtype float32, got int32"):
        f(irc.tensor(np.zeros(8, "int32")), good)
    with pytest.raises(irc.RuntimeShapeError, match="expects shape"):
        f(np.zeros((2, 4), "float32"), good)
    with pytest.raises(irc.RuntimeArgumentTypeError, match="got list"):
        f([0.0] * 8, good)


def test_symbolic_shape_mismatch_between_arguments():
    n = tir.var("n")
    a, b = buf("a", (n,)), buf("b", (n,))
    i = tir.var("i")
    mod = irc.build(func([a, b], loop(i, n, store(b, i, a[i])), name="copy"))
    with pytest.raises(irc.RuntimeShapeError, match="shape variable n is already 4"):
        mod["copy"](np.zeros(4, "float32"), np.zeros(5, "float32"))


def test_scalar_argument_errors():
    a = buf("a", (4,), "int32")
    k = tir.var("k", "int8")
    i = tir.var("i")
    mod = irc.build(func([a, k], loop(i, 4, store(a, i, tir.cast(k, "int32"))), name="fill"))
    x = np.zeros(4, "int32")
    mod["fill"](x, -7)
    np.testing.assert_array_equal(x, -7)
    with pytest.raises(irc.RuntimeArgumentTypeError, match="expects a int8 scalar"):
        mod["fill"](x, 300)
    with pytest.raises(irc.RuntimeArgumentTypeError, match="is a scalar"):
        mod["fill"](x, np.zeros(4, "int8"))


def test_save_load_object_file_roundtrip(tmp_path):
    mod = irc.build(_add_one(16, "int32", "inc"))
    path = str(tmp_path / "inc.o")
    mod.export_library(path)
    assert os.path.exists(path) and os.path.exists(path + ".json")
    with open(path, "rb") as fh:
        assert fh.read(4) == b"\x7fELF"
    loaded = irc.runtime.load_module(path)
    assert loaded.entry_name == "inc" and loaded.target == mod.target
    x, y = np.arange(16, dtype="int32"), np.zeros(16, "int32")
    loaded["inc"](x, y)
    np.testing.assert_array_equal(y, x + 1)
    assert "define" in loaded.get_source("ll")
    with pytest.raises(irc.RuntimeShapeError):
        loaded["inc"](x, np.zeros(3, "int32"))


def test_saving_to_a_missing_directory_is_a_build_error(tmp_path):
    mod = irc.build(_add_one(16, "int32", "inc"))
    with pytest.raises(irc.BuildError, match="cannot write module file"):
        mod.save(str(tmp_path / "no" / "such" / "inc.o"))


def test_serialize_roundtrip_and_sources():
    mod = irc.build(_add_one(32))
    blob = mod.serialize()
    again = irc.runtime.Module.deserialize(blob)
    x, y = rand(32, "float32"), np.zeros(32, "float32")
    again["add_one"](x, y)
    np.testing.assert_allclose(y, x + 1)
    asm = mod.get_source("asm")
    assert "add_one" in asm and "ret" in asm
    assert '"add_one"' in mod.get_source("json")
    with pytest.raises(irc.BuildError):
        irc.runtime.Module.deserialize(b"garbage" * 4)
    with pytest.raises(irc.BuildError, match="no module file"):
        irc.runtime.load_module("/nonexistent/file.o")


def test_time_evaluator_number_and_repeat_counts():
    mod = irc.build(_counter())
    counter = np.zeros(1, "int64")
    c = irc.tensor(counter)
    ev = mod.time_evaluator("count", irc.cpu(), number=5, repeat=3)
    res = ev(c)
    assert len(res.results) == 3 and all(r > 0 for r in res.results)
    assert c.numpy()[0] == 1 + 5 * 3  # one warm-up call, then number * repeat
    assert ev.calls == 16
    assert res.min <= res.median <= res.max and res.mean > 0 and res.std >= 0
    assert "BenchmarkResult" in repr(res)


def test_time_evaluator_min_repeat_ms_grows_number():
    mod = irc.build(_counter())
    c = irc.tensor(np.zeros(1, "int64"))
    ev = mod.time_evaluator("count", irc.cpu(), number=1, repeat=2, min_repeat_ms=5)
    res = ev(c)
    assert len(res.results) == 2
    assert res.number > 1  # a single call lasts far less than 5 ms
    assert c.numpy()[0] == ev.calls
    with pytest.raises(irc.IRCError, match="number >= 1"):
        mod.time_evaluator("count", irc.cpu(), number=0)


def test_build_cache_and_inputs():
    f = _add_one(4)
    m1 = irc.build(f)
    assert irc.build(f) is m1  # cached by structural hash + target
    assert irc.build(f, "llvm -num-cores=1") is not m1
    mod = irc.IRModule(functions={"add_one": f, "count": _counter()})
    both = irc.build(mod, target="llvm")
    assert set(both.function_names) == {"add_one", "count"}
    renamed = irc.build(f, name="renamed")
    assert renamed.entry_name == "renamed"
    with pytest.raises(irc.BuildError, match="cannot compile"):
        irc.build(42)
    with pytest.raises(irc.CodegenError, match="outside any GPU kernel"):
        irc.build(f, target="cuda")  # not scheduled for a GPU



def test_build_without_a_code_generator_for_the_target(monkeypatch):
    monkeypatch.delitem(_BUILDERS, "cuda")
    with pytest.raises(irc.BuildError, match="no code generator"):
        irc.build(_add_one(4), target="cuda")


def test_build_uses_current_target():
    f = _add_one(4, name="curr")
    with Target("llvm -num-cores=1"):
        mod = irc.build(f)
    assert "num-cores=1" in mod.target


def test_missing_function_and_cuda_tensor_argument():
    mod = irc.build(_add_one(4))
    with pytest.raises(irc.IRCError, match="no function 'nope'"):
        mod["nope"]


def test_fast_path_with_tensors_checks_like_the_general_path():
    n = tir.var("n")
    a, b = buf("a", (n, 3)), buf("b", (n * 3,))
    s = tir.var("s", "float32")
    i = tir.var("i")
    f = func([a, s, b], loop(i, n * 3, store(b, i, a[i // 3, i % 3] * s)), name="scale")
    fn = irc.build(f)["scale"]
    x = irc.tensor(rand((4, 3), "float32"))
    y = irc.runtime.empty((12,), "float32")
    fn(x, 2.0, y)
    np.testing.assert_allclose(y.numpy(), x.numpy().ravel() * 2)
    with pytest.raises(irc.RuntimeShapeError, match="dimension 0 must be"):
        fn(x, 2.0, irc.runtime.empty((13,), "float32"))
    with pytest.raises(irc.RuntimeArgumentTypeError, match="expects a float32 scalar"):
        fn(x, "two", y)
    with pytest.raises(irc.RuntimeArgumentTypeError, match="is a scalar"):
        fn(x, x, y)
    with pytest.raises(irc.RuntimeDTypeError, match="expects dtype float32, got float16"):
        fn(irc.tensor(np.zeros((4, 3), "float16")), 2.0, y)
    with pytest.raises(irc.RuntimeShapeError, match="expects shape"):
        fn(irc.tensor(np.zeros((4, 2), "float32")), 2.0, y)


def test_vm_entry_point_binds_symbolic_shapes_and_checks_like_the_general_path():
    n = tir.var("n")
    a, b = buf("a", (n, 3)), buf("b", (n * 3,))
    i = tir.var("i")
    f = func([a, b], loop(i, n * 3, store(b, i, a[i // 3, i % 3] + 1.0)), name="inc")
    call = irc.build(f)["inc"]._vm_call  # aligned C-contiguous arrays, as the VM holds
    x = irc.runtime.aligned_empty((4, 3), "float32")
    x[:] = rand((4, 3), "float32")
    y = irc.runtime.aligned_empty((12,), "float32")
    call(x, y)
    np.testing.assert_allclose(y, x.ravel() + 1)
    with pytest.raises(irc.RuntimeShapeError, match="dimension 0 must be"):
        call(x, irc.runtime.aligned_empty((13,), "float32"))
    with pytest.raises(irc.RuntimeDTypeError, match="expects dtype float32, got float64"):
        call(x.astype("float64"), y)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_parallel_kernels_work_in_a_forked_child():
    # libgomp hangs in a child forked after it started; irc falls back to serial loops.
    n = 5000
    a, b = buf("a", (n,)), buf("b", (n,))
    i = tir.var("i")
    mod = irc.build(func([a, b], loop(i, n, store(b, i, a[i] + 1.0), kind="parallel"),
                         name="par_inc"))
    x, y = np.ones(n, "float32"), np.zeros(n, "float32")
    mod["par_inc"](x, y)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            mod["par_inc"](x * 2, y)
            ok = bool(np.all(y == 3.0)) and not irc.runtime.engine.parallel_loops_enabled()
            os.write(w, b"ok" if ok else b"bad")
        finally:
            os._exit(0)
    os.close(w)
    ready, _, _ = select.select([r], [], [], 60)
    msg = os.read(r, 8) if ready else b"timeout"
    os.waitpid(pid, 0)
    assert msg == b"ok"
    assert irc.runtime.engine.parallel_loops_enabled()


def test_strided_parameter_buffer_takes_views_without_copy():
    m, n = tir.var("m"), tir.var("n")
    s0, s1 = tir.var("s0"), tir.var("s1")
    a = buf("a", (m, n), strides=(s0, s1))
    b = buf("b", (m, n))
    i, j = tir.var("i"), tir.var("j")
    f = func([a, b], loop(i, m, loop(j, n, store(b, (i, j), a[i, j] * 10.0))), name="strided")
    mod = irc.build(f)
    base = np.arange(60, dtype="float32").reshape(6, 10)
    view = base[1:5, 3:9:2]  # misaligned and non-contiguous
    out = np.zeros(view.shape, "float32")
    mod["strided"](view, out)
    np.testing.assert_array_equal(out, view * 10)
    assert "align 4" in mod.get_source("ll")  # only element alignment is promised


def test_scalar_parameter_that_is_a_dimension_is_checked():
    n = tir.var("n")
    a, b = buf("a", (n,)), buf("b", (n * 2,))
    i = tir.var("i")
    f = func([n, a, b], loop(i, n * 2, store(b, i, a[i // 2])), name="dup")
    mod = irc.build(f)
    assert not mod["dup"].signature.shape_vars  # n arrives as the scalar argument
    x, y = np.arange(3, dtype="float32"), np.zeros(6, "float32")
    mod["dup"](3, x, y)
    np.testing.assert_array_equal(y, np.repeat(x, 2))
    with pytest.raises(irc.RuntimeShapeError, match="n is already 4"):
        mod["dup"](4, x, y)
