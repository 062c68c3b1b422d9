"""The bytecode VM: compile, run, memory planning, argument checks, save/load."""

import io
import json
import zipfile

import numpy as np
import pytest

import irc
from irc.cli import main as cli_main
from irc.ir import BlockBuilder, Var, ops, tensor_sinfo
from irc.tir import te


def _add_func(shape=(4, 8)):
    a = te.placeholder(shape, name="A")
    b = te.placeholder(shape, name="B")
    c = te.compute(shape, lambda *i: a[i] + b[i], name="C")
    return te.create_prim_func([a, b, c])


def _chain_module(n_adds=3, shape=(4, 8)):
    bb = BlockBuilder()
    gv_add = bb.add_func(_add_func(shape), "add")
    x = Var(name_hint="x", struct_info=tensor_sinfo(shape))
    y = Var(name_hint="y", struct_info=tensor_sinfo(shape))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            cur = x
            for _ in range(n_adds):
                cur = bb.emit(ops.call_tir(gv_add, [cur, y], tensor_sinfo(shape)))
            gv = bb.emit_output(cur)
        bb.emit_func_output(gv)
    return bb.get()


@pytest.fixture(scope="module")
def chain_vm():
    ex = irc.vm.compile(_chain_module(), "llvm", pipeline=None)
    return ex, irc.vm.VirtualMachine(ex)


def test_chain_of_kernels_matches_numpy(chain_vm):
    _, vm = chain_vm
    a = np.random.rand(4, 8).astype("float32")
    b = np.random.rand(4, 8).astype("float32")
    out = vm["main"](a, b)
    assert isinstance(out, irc.runtime.Tensor)
    np.testing.assert_allclose(out.numpy(), a + 3 * b, rtol=1e-6)
    # irc tensors are accepted as well as numpy arrays
    np.testing.assert_allclose(vm["main"](irc.tensor(a), irc.tensor(b)).numpy(), a + 3 * b,
                               rtol=1e-6)


def test_returned_tensor_is_not_clobbered_by_the_next_call(chain_vm):
    _, vm = chain_vm
    a = np.ones((4, 8), "float32")
    first = vm["main"](a, a)
    vm["main"](a * 2, a * 2)
    np.testing.assert_allclose(first.numpy(), 4 * a)


def test_memory_planning_reuses_storage():
    ex = irc.vm.compile(_chain_module(n_adds=6), "llvm", pipeline=None)
    vm = irc.vm.VirtualMachine(ex)
    stats = vm.memory_stats("main")
    # five intermediates of 128 bytes live one after another: two blocks suffice
    assert stats["intermediate_bytes"] == 5 * 4 * 8 * 4
    assert stats["storage_blocks"] == 2
    assert stats["planned_bytes"] == 2 * 4 * 8 * 4
    a = np.random.rand(4, 8).astype("float32")
    np.testing.assert_allclose(vm["main"](a, a).numpy(), 7 * a, rtol=1e-6)


def test_wrong_argument_count_dtype_and_shape_are_reported(chain_vm):
    _, vm = chain_vm
    a = np.zeros((4, 8), "float32")
    with pytest.raises(irc.RuntimeArgumentCountError,
                       match=r"main takes 2 arguments \(x, y\), got 1"):
        vm["main"](a)
    with pytest.raises(irc.RuntimeShapeError, match=r"parameter y \(#1\) expects "
                       r"R.Tensor\(\(4, 8\), 'float32'\), got a tensor of shape \(4, 9\)"):
        vm["main"](a, np.zeros((4, 9), "float32"))
    with pytest.raises(irc.RuntimeDTypeError, match="dtype int32"):
        vm["main"](a, np.zeros((4, 8), "int32"))
    with pytest.raises(irc.RuntimeArgumentTypeError, match="cannot pass a dict"):
        vm["main"](a, {})


def test_unaligned_and_non_contiguous_inputs_are_accepted(chain_vm):
    _, vm = chain_vm
    big = np.random.rand(8, 16).astype("float32")
    a = big[::2, ::2]  # non-contiguous view
    b = np.ascontiguousarray(big[1::2, 1::2])
    np.testing.assert_allclose(vm["main"](a, b).numpy(), a + 3 * b, rtol=1e-6)


def test_save_and_load_round_trip(tmp_path, chain_vm):
    ex, _ = chain_vm
    path = str(tmp_path / "chain.ircx")
    ex.save(path)
    vm2 = irc.vm.VirtualMachine(irc.vm.Executable.load(path))
    a = np.random.rand(4, 8).astype("float32")
    np.testing.assert_allclose(vm2["main"](a, a).numpy(), 4 * a, rtol=1e-6)


def test_saving_to_a_missing_directory_is_a_vm_error(tmp_path, chain_vm):
    ex, _ = chain_vm
    with pytest.raises(irc.VMError, match="cannot write executable"):
        ex.save(str(tmp_path / "no" / "such" / "chain.ircx"))


def test_device_may_be_a_name_and_anything_else_is_an_irc_error(chain_vm):
    ex, _ = chain_vm
    assert irc.vm.VirtualMachine(ex, "cpu").device == irc.cpu()
    with pytest.raises(irc.IRCError, match="bad device index"):
        irc.vm.VirtualMachine(ex, "cpu:x")
    with pytest.raises(irc.IRCError, match="cannot make a device from float"):
        irc.vm.VirtualMachine(ex, 1.5)


def test_compile_rejects_a_pipeline_that_is_not_a_pass():
    with pytest.raises(irc.BuildError, match="pipeline must be a name"):
        irc.compile(_chain_module(), "llvm", pipeline=3)


def _saved(tmp_path, ex):
    path = tmp_path / "good.ircx"
    ex.save(str(path))
    return path.read_bytes()


def _rewrite_member(data, name, content):
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members[name] = content(members[name])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n, blob in members.items():
            z.writestr(n, blob)
    return out.getvalue()


def _other_version(data):
    def bump(blob):
        meta = json.loads(blob)
        meta["format"] = "irc-vm-executable/0"
        return json.dumps(meta).encode()
    return _rewrite_member(data, "bytecode.json", bump)


def _central_entry(data, offset, value):
    """The archive with a 16-bit field of its first central-directory entry set."""
    at = data.index(b"PK\x01\x02") + offset
    return data[:at] + value.to_bytes(2, "little") + data[at + 2:]


def _npz_archive(data):
    out = io.BytesIO()
    np.savez(out, a=np.zeros(3))
    return out.getvalue()


@pytest.mark.parametrize("corrupt, cause", [
    (lambda d: b"", "the file is empty"),
    (lambda d: b"not a zip", "not an irc executable"),
    (lambda d: bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8)),
     "not an irc executable"),
    (lambda d: b"# from irc.script import ir as I\n", "not an irc executable"),
    (lambda d: d[:len(d) // 2], "truncated or corrupt"),
    (lambda d: d[:40], "truncated or corrupt"),
    (lambda d: d[:-30], "truncated or corrupt"),
    (_npz_archive, "a zip archive without bytecode.json"),
    (_other_version, "it has format 'irc-vm-executable/0'; this irc reads"),
    (lambda d: _rewrite_member(d, "bytecode.json", lambda b: b[:-5]), "truncated or corrupt"),
    (lambda d: _rewrite_member(d, "kernels.bin", lambda b: b[:10]), "truncated or corrupt"),
    (lambda d: _rewrite_member(d, "constants.npz", lambda b: b"junk"), "truncated or corrupt"),
    # Damaged zip headers: zipfile raises NotImplementedError / RuntimeError for these.
    (lambda d: _central_entry(d, 6, 84), "truncated or corrupt"),
    (lambda d: _central_entry(d, 10, 99), "truncated or corrupt"),
    (lambda d: _central_entry(d, 8, 1), "truncated or corrupt"),
], ids=["empty", "text", "random-bytes", "ir-text", "half", "header-only", "no-directory",
        "npz", "wrong-version", "bad-json", "bad-kernels", "bad-constants",
        "zip-version", "compression-method", "encrypted-flag"])
def test_loading_a_bad_file_is_a_vm_error_naming_file_and_cause(tmp_path, chain_vm, corrupt,
                                                                  cause):
    path = tmp_path / "bad.ircx"
    path.write_bytes(corrupt(_saved(tmp_path, chain_vm[0])))
    for load in (irc.vm.Executable.load, irc.vm.load_executable):
        with pytest.raises(irc.VMError) as info:
            load(str(path))
        assert str(path) in str(info.value) and cause in str(info.value), str(info.value)


def test_loading_a_missing_file_is_a_vm_error(tmp_path):
    with pytest.raises(irc.VMError, match="cannot read executable .*No such file"):
        irc.vm.Executable.load(str(tmp_path / "missing.ircx"))


def test_cli_run_of_a_corrupt_executable_reports_it(tmp_path, chain_vm, capsys):
    path = tmp_path / "bad.ircx"
    path.write_bytes(_saved(tmp_path, chain_vm[0])[:100])
    assert cli_main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("irc: error: cannot read executable") and str(path) in err
    assert "truncated or corrupt" in err and "Traceback" not in err


def test_symbolic_batch_dimension_binds_and_checks():
    n = irc.tir.var("n", "int64")
    a = te.placeholder((n, 4), name="A")
    b = te.compute((n, 4), lambda i, j: a[i, j] * 2.0, name="B")
    bb = BlockBuilder()
    gv = bb.add_func(te.create_prim_func([a, b], index_dtype_override="int64"), "double")
    x = Var(name_hint="x", struct_info=irc.ir.TensorStructInfo(
        shape=(n, irc.tir.const(4, "int64")), dtype="float32"))
    with bb.function("main", [x]):
        out_sinfo = irc.ir.TensorStructInfo(shape=(n, irc.tir.const(4, "int64")),
                                            dtype="float32")
        lv = bb.emit(ops.call_tir(gv, [x], out_sinfo))
        bb.emit_func_output(lv)
    vm = irc.vm.VirtualMachine(irc.vm.compile(bb.get(), "llvm", pipeline=None))
    for rows in (1, 3, 7):
        data = np.random.rand(rows, 4).astype("float32")
        np.testing.assert_allclose(vm["main"](data).numpy(), data * 2, rtol=1e-6)
    with pytest.raises(irc.RuntimeShapeError, match=r"R.Tensor\(\(n, 4\)"):
        vm["main"](np.zeros((3, 5), "float32"))
    # Random inputs need the symbolic dimension's value.
    ex = irc.vm.compile(bb.get(), "llvm", pipeline=None)
    with pytest.raises(irc.VMError, match="symbolic dimension n without a value"):
        ex.random_inputs("main")
    (arg,) = ex.random_inputs("main", seed=1, shapes={"n": 5})
    assert arg.shape == (5, 4) and arg.dtype == np.float32 and 0 <= arg.min() < arg.max() < 1
    np.testing.assert_array_equal(arg, ex.random_inputs("main", seed=1, shapes={"n": 5})[0])
    with pytest.raises(irc.VMError, match="no function 'nope'"):
        ex.random_inputs("nope")


def test_unlegalized_operator_is_named():
    bb = BlockBuilder()
    x = Var(name_hint="x", struct_info=tensor_sinfo((2, 2)))
    with bb.function("main", [x]):
        lv = bb.emit(ops.nn.relu(x))
        bb.emit_func_output(lv)
    with pytest.raises(irc.VMError, match=r"function main \(binding \w+\): operator R.nn.relu"):
        irc.vm.compile(bb.get(), "llvm", pipeline=None)


def test_tuple_outputs_and_get_item():
    bb = BlockBuilder()
    gv_add = bb.add_func(_add_func(), "add")
    x = Var(name_hint="x", struct_info=tensor_sinfo((4, 8)))
    with bb.function("main", [x]):
        lv = bb.emit(ops.call_tir(gv_add, [x, x], tensor_sinfo((4, 8))))
        tup = bb.emit(irc.ir.Tuple(fields=(lv, x)))
        first = bb.emit(irc.ir.TupleGetItem(tuple_value=tup, index=0))
        bb.emit_func_output(irc.ir.Tuple(fields=(first, lv)))
    vm = irc.vm.VirtualMachine(irc.vm.compile(bb.get(), "llvm", pipeline=None))
    a = np.random.rand(4, 8).astype("float32")
    out = vm["main"](a)
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_allclose(out[0].numpy(), 2 * a, rtol=1e-6)
    np.testing.assert_allclose(out[1].numpy(), 2 * a, rtol=1e-6)


def test_recursive_function_does_not_share_planned_storage():
    """A function that calls itself gets fresh intermediates per activation."""
    text = '''
@I.ir_module
class Module:
    @R.function
    def countdown(x: R.Tensor((4,), dtype="float32"),
                  n: R.Tensor((), dtype="int64")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        if R.greater(n, R.const(0, "int64")):
            lv = R.add(x, x)
            lv2 = R.multiply(lv, R.const(0.5, "float32"))
            m = R.subtract(n, R.const(1, "int64"))
            inner = cls.countdown(lv2, m)
            out = R.add(inner, lv2)
        else:
            out = R.add(x, R.const(0.0, "float32"))
        return out
'''
    ex = irc.compile(irc.parse(text), "llvm")
    assert ex.functions["countdown"].storage_sizes == []
    vm = irc.vm.VirtualMachine(ex)
    x = np.arange(4, dtype="float32")
    # countdown(x, n) = x * (n + 1) since each level adds x back
    np.testing.assert_allclose(vm["countdown"](x, np.array(3, "int64")).numpy(), 4 * x)
