"""Devices, tensors and DLPack."""

import numpy as np
import pytest

import irc
from irc.runtime import ndarray as tensor_mod
from irc.target import Target, TargetError


def test_devices():
    assert irc.cpu() == irc.cpu(0) == irc.device("cpu") == irc.device("llvm")
    assert irc.cuda(1) == irc.device("cuda:1") == irc.device("cuda", 1)
    assert irc.cpu().dlpack_type == 1 and irc.cuda().dlpack_type == 2
    assert irc.cpu().exist
    assert repr(irc.cuda(2)) == "cuda(2)"
    with pytest.raises(irc.IRCError, match="unknown device type"):
        irc.device("tpu")
    assert hash(irc.cpu()) == hash(irc.device("cpu", 0))


def test_tensor_functions_take_device_names():
    t = irc.tensor(np.ones(3, "float32"), "cpu")
    assert t.device == irc.cpu()
    assert irc.runtime.empty((2,), "int32", "cpu:0").device == irc.cpu()
    with pytest.raises(irc.IRCError, match="cannot make a device"):
        irc.runtime.zeros((2,), "float32", object())


def test_tensor_roundtrip_and_properties():
    x = np.arange(12, dtype="float32").reshape(3, 4)
    t = irc.tensor(x)
    assert t.shape == (3, 4) and t.dtype == "float32" and t.device == irc.cpu()
    assert t.ndim == 2 and t.size == 12 and t.nbytes == 48
    assert t.data_ptr % 64 == 0
    y = t.numpy()
    np.testing.assert_array_equal(y, x)
    y[0, 0] = 99  # numpy() returns a copy
    assert t.numpy()[0, 0] == 0
    t.copyfrom(np.ones((3, 4)))  # converted like numpy
    np.testing.assert_array_equal(t.numpy(), np.ones((3, 4), "float32"))
    with pytest.raises(irc.RuntimeShapeError, match="shape"):
        t.copyfrom(np.ones((4, 3)))
    np.testing.assert_array_equal(np.asarray(t), np.ones((3, 4)))


def test_empty_zeros_and_dtypes():
    for dtype in ["int8", "uint8", "int64", "bool", "float16", "bfloat16", "float64"]:
        t = irc.runtime.empty((5, 3), dtype)
        assert t.dtype == dtype and t.shape == (5, 3) and t.data_ptr % 64 == 0
    z = irc.runtime.zeros(7, "int32")
    np.testing.assert_array_equal(z.numpy(), np.zeros(7, "int32"))
    b = irc.tensor(np.array([1.0, 2.5, -3.0], "float32"), dtype="bfloat16")
    assert b.dtype == "bfloat16" and b.numpy().dtype.name == "bfloat16"  # ml_dtypes'
    np.testing.assert_array_equal(b.numpy().astype(np.float32), [1.0, 2.5, -3.0])
    assert irc.tensor([1, 2, 3]).dtype == "int64"
    assert irc.tensor(np.zeros(3, bool)).dtype == "bool"


def test_aligned_empty_is_aligned_for_many_sizes():
    for n in range(0, 200, 7):
        arr = tensor_mod.aligned_empty((n,), np.float32)
        assert arr.ctypes.data % 64 == 0 and arr.flags.c_contiguous


def test_data_pointer_fast_path_matches_numpy():
    base = np.arange(100, dtype=np.float64)
    for arr in (base, base[3:], base[::2], base.reshape(10, 10)[:, 1], np.zeros(0)):
        assert tensor_mod.data_pointer(arr) == arr.ctypes.data


def test_dlpack_roundtrip_shares_memory():
    t = irc.tensor(np.arange(6, dtype="float32"))
    assert t.__dlpack_device__() == (1, 0)
    view = np.from_dlpack(t)
    view[2] = 42.0
    assert t.numpy()[2] == 42.0
    back = irc.runtime.from_dlpack(view)
    assert back.data_ptr == t.data_ptr  # aligned and contiguous: zero copy
    assert irc.runtime.from_dlpack(t) is t


def test_from_dlpack_copies_unaligned_or_strided():
    base = np.arange(20, dtype="float32")
    view = base[1:]  # 4 bytes off alignment
    t = irc.runtime.from_dlpack(view)
    assert t.data_ptr % 64 == 0
    np.testing.assert_array_equal(t.numpy(), view)
    t2 = irc.runtime.from_dlpack(base[::2])
    np.testing.assert_array_equal(t2.numpy(), base[::2])
    t3 = irc.tensor(view)  # any DLPack producer converts too
    np.testing.assert_array_equal(t3.numpy(), view)


def test_cuda_tensor_without_gpu_raises_irc_error():
    if irc.cuda().exist:
        pytest.skip("this machine has a GPU")
    with pytest.raises(irc.IRCError) as err:
        irc.tensor(np.zeros(3, "float32"), device=irc.cuda())
    assert "cuda" in str(err.value).lower()


def test_target_parsing_and_current():
    t = Target("llvm -mcpu=znver4 -num-cores 2")
    assert t.kind.name == "llvm" and t.mcpu == "znver4" and t.num_cores == 2
    assert str(t) == "llvm -mcpu=znver4 -num-cores=2"
    assert Target(str(t)) == t and t == "llvm -mcpu=znver4 -num-cores=2"
    host = Target("llvm")
    assert host.num_cores >= 1 and host.mcpu
    assert Target.canon("llvm") == host
    cuda = Target("cuda")
    assert cuda.kind.name == "cuda" and cuda.arch == "sm_90" and str(cuda) == "cuda -arch=sm_90"
    assert Target("cuda -arch=sm_80").arch == "sm_80"
    assert cuda.host == host and "gpu" in cuda.keys
    assert Target.current() is None
    with Target("cuda") as cur:
        assert Target.current() is cur
        with Target("llvm"):
            assert Target.current().kind.name == "llvm"
        assert Target.current() is cur
    assert Target.current() is None
    with pytest.raises(TargetError, match="unknown target kind"):
        Target("opencl")
    with pytest.raises(TargetError, match="unknown option"):
        Target("llvm -foo=1")
    with pytest.raises(TargetError, match="integer"):
        Target("llvm -num-cores=many")
    fp = host.fingerprint()
    assert "cores:" in fp and host.mcpu in fp
    assert Target.from_device(irc.cpu()) == host
