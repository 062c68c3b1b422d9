"""The CUDA runtime: cubins loaded and launched, streams, events, timing, DLPack.

Three kinds of tests:

- without a GPU: the errors a machine without a driver gives, and what needs no driver
  (kernel specs, argument packing, DLPack capsules, read back by numpy);
- with ``FakeDriver``, a model of the driver calls irc makes (it runs kernels written in
  Python on host memory): the launch logic, limits, shared memory opt-in, error naming
  and event timing, checked on any machine;
- ``@pytest.mark.cuda``: the same on a real GPU (skipped where there is none).
"""

import ctypes
import gc
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import irc
from irc.core.diagnostics import (
    MissingDependencyError,
    RuntimeArgumentCountError,
    RuntimeArgumentTypeError,
    RuntimeDeviceError,
)
from irc.runtime import cuda_backend, dlpack
from irc.runtime.cuda_backend import CUDAError, Event, Stream
from irc.runtime.cuda_module import DEFAULT_SHARED_LIMIT, CUDAModule, KernelSpec

VADD = """\
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""
VADD_SPEC = {"vadd": KernelSpec(("handle", "handle", "handle", "int32"))}


# A minimal ELF header: enough for CUDAModule (which checks the magic) and FakeDriver.
FAKE_CUBIN = b"\x7fELF" + bytes(60)


# -- without a GPU ----------------------------------------------------------------------------

def test_launch_stream_and_event_without_a_driver_are_irc_errors():
    if irc.cuda(0).exist:
        pytest.skip("this machine has a GPU")
    mod = CUDAModule(FAKE_CUBIN, VADD_SPEC)
    for action in (lambda: mod.launch("vadd", (1,), (32,), [0, 0, 0, 1]),
                   lambda: Stream(0), lambda: Event(0), lambda: irc.cuda(0).device_name):
        with pytest.raises((CUDAError, MissingDependencyError)) as info:
            action()
        text = str(info.value)
        assert "GPU" in text or "irc[cuda]" in text
        assert "Traceback" not in text


def test_kernel_specs_are_checked():
    with pytest.raises(CUDAError, match="parameter 1 has dtype 'float'"):
        KernelSpec(("handle", "float"))
    with pytest.raises(CUDAError, match="shared_bytes must be a non-negative int"):
        KernelSpec(("handle",), shared_bytes=-1)
    assert KernelSpec("handle").params == ("handle",)
    with pytest.raises(CUDAError, match="takes a cubin"):
        CUDAModule(b"// PTX text", VADD_SPEC)
    with pytest.raises(CUDAError, match="kernel 'k': expected a KernelSpec"):
        CUDAModule(FAKE_CUBIN, {"k": ("handle",)})
    with pytest.raises(CUDAError, match=r"no kernel 'vsub' \(kernels: vadd\)"):
        CUDAModule(FAKE_CUBIN, VADD_SPEC).launch("vsub", 1, 1, [])


def _read_params(pointers, dtypes):
    """The values an array of kernelParams points to, read as ``dtypes`` (ctypes)."""
    return [t.from_address(pointers[i]).value for i, t in enumerate(dtypes)]


def test_arguments_are_packed_with_their_c_layout():
    spec = KernelSpec(("handle", "int32", "int64", "uint8", "float32", "float64", "bool",
                       "float16", "bfloat16"))
    mod = CUDAModule(FAKE_CUBIN, {"k": spec})
    pointers, _, devices = mod.pack_arguments(
        "k", [0x7F0000001000, -5, 2**40, 255, 1.5, 0.1, True, 1.0, np.float32(-2.0)])
    assert devices == []
    c = ctypes
    assert _read_params(pointers, [c.c_uint64, c.c_int32, c.c_int64, c.c_uint8, c.c_float,
                                   c.c_double, c.c_bool, c.c_uint16, c.c_uint16]) == [
        0x7F0000001000, -5, 2**40, 255, 1.5, 0.1, True,
        0x3C00,  # 1.0 as float16
        0xC000,  # -2.0 as bfloat16
    ]
    # A CUDA tensor passes its device address.
    mem = cuda_backend.BorrowedMemory(0x7F0000002000, 16, 1, owner=None)
    t = irc.runtime.Tensor(mem=mem, shape=(4,), dtype="float32", device=irc.cuda(1))
    pointers, _, devices = CUDAModule(FAKE_CUBIN, VADD_SPEC).pack_arguments(
        "vadd", [t, t, 0x10, 4])
    assert _read_params(pointers, [c.c_uint64] * 3) == [0x7F0000002000, 0x7F0000002000, 0x10]
    assert devices == [1, 1]


@pytest.mark.parametrize("args, error, message", [
    ([0, 0, 0], RuntimeArgumentCountError,
     r"kernel 'vadd' takes 4 arguments \(handle, handle, handle, int32\), got 3"),
    ([0, 0, 0, 2**31], RuntimeArgumentTypeError,
     r"argument 3 \(int32\): 2147483648 does not fit in int32"),
    ([0, 0, 0, 1.5], RuntimeArgumentTypeError, r"argument 3 \(int32\) takes a number, not float"),
    ([0, 0, 0, True], RuntimeArgumentTypeError, r"argument 3 \(int32\) takes a number, not bool"),
    ([0, "x", 0, 1], RuntimeArgumentTypeError,
     r"argument 1 is a device pointer; pass a CUDA tensor or an int"),
    ([0, -1, 0, 1], RuntimeArgumentTypeError, r"argument 1 \(-1\) is not a device address"),
])
def test_argument_errors_name_the_kernel_and_position(args, error, message):
    with pytest.raises(error, match=message):
        CUDAModule(FAKE_CUBIN, VADD_SPEC).pack_arguments("vadd", args)


def test_cpu_tensor_for_a_device_pointer_is_an_error():
    with pytest.raises(RuntimeDeviceError, match=r"argument 0 is a cpu\(0\) tensor"):
        CUDAModule(FAKE_CUBIN, VADD_SPEC).pack_arguments(
            "vadd", [irc.tensor(np.zeros(4, "float32")), 0, 0, 4])


# -- DLPack capsules (the ctypes structures, checked against numpy's reader and writer) -----

class _Producer:
    """A DLPack producer handing out a capsule made by irc.runtime.dlpack."""

    def __init__(self, array, device=(dlpack.DL_CPU, 0), dtype=None):
        self.array = array
        self.device = device
        self.dtype = dtype or str(array.dtype)

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        versioned = max_version is not None and max_version[0] >= 1
        return dlpack.export_capsule(self.array, self.array.ctypes.data, self.array.shape,
                                     self.dtype, self.device, versioned)

    def __dlpack_device__(self):
        return self.device


class _Holder:
    """Hands out a given capsule."""

    def __init__(self, capsule, device):
        self.capsule = capsule
        self.device = device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize("versioned", [False, True])
def test_exported_capsules_are_read_by_numpy(versioned):
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    producer = _Producer(src)
    capsule = producer.__dlpack__(max_version=(1, 0) if versioned else None)
    assert len(dlpack._exports) >= 1

    view = np.from_dlpack(_Holder(capsule, (dlpack.DL_CPU, 0)))
    assert view.ctypes.data == src.ctypes.data and view.shape == (3, 4)
    np.testing.assert_array_equal(view, src)
    before = len(dlpack._exports)
    del view, capsule
    gc.collect()
    assert len(dlpack._exports) == before - 1  # numpy called irc's deleter


def test_unconsumed_capsule_deletes_itself():
    before = len(dlpack._exports)
    capsule = _Producer(np.zeros(3, np.int64)).__dlpack__()
    assert len(dlpack._exports) == before + 1
    del capsule
    gc.collect()
    assert len(dlpack._exports) == before


@pytest.mark.parametrize("versioned", [False, True])
def test_numpy_capsules_are_imported(versioned):
    arr = np.arange(6, dtype=np.int16).reshape(2, 3)[:, ::2]
    if versioned:
        arr.flags.writeable = False
    capsule = arr.__dlpack__(max_version=(1, 0)) if versioned else arr.__dlpack__()
    info = dlpack.import_capsule(capsule)
    assert info.ptr == arr.ctypes.data and info.shape == (2, 2) and info.dtype == "int16"
    assert info.strides == (3, 2) and info.device == (dlpack.DL_CPU, 0)
    assert info.read_only is versioned
    with pytest.raises(dlpack.DLPackError, match="consumed already"):
        dlpack.import_capsule(capsule)
    info.release()
    info.release()  # once only


def test_cuda_dlpack_import_and_export_share_memory():
    """A producer's "CUDA" memory (host memory labelled as GPU 0: nothing here touches
    it) is viewed zero-copy, exported again, and handed back when the views die."""
    host = irc.runtime.aligned_empty((4, 8), np.float32)
    before = len(dlpack._exports)
    producer = _Producer(host, device=(dlpack.DL_CUDA, 0))
    t = irc.runtime.from_dlpack(producer)
    assert t.device == irc.cuda(0) and t.shape == (4, 8) and t.dtype == "float32"
    assert t.data_ptr == host.ctypes.data
    assert t._mem.owner is producer  # the producer is kept alive
    assert len(dlpack._exports) == before + 1
    again = irc.runtime.from_dlpack(_Holder(t.__dlpack__(stream=-1), (dlpack.DL_CUDA, 0)))
    assert again.data_ptr == host.ctypes.data and again.shape == (4, 8)
    del t
    gc.collect()
    assert len(dlpack._exports) == before + 2  # `again` holds t's export, t the producer's
    del again
    gc.collect()
    assert len(dlpack._exports) == before


def test_non_contiguous_cuda_import_is_an_error_and_releases():
    before = len(dlpack._exports)
    host = np.zeros((4, 4), np.float32)
    capsule = _Producer(host).__dlpack__()
    # Rewrite the strides as a transposed view's.
    managed = dlpack.DLManagedTensor.from_address(dlpack._capsule_get_pointer(
        capsule, b"dltensor"))
    managed.dl_tensor.strides[0], managed.dl_tensor.strides[1] = 1, 4
    managed.dl_tensor.device = dlpack.DLDevice(dlpack.DL_CUDA, 0)
    with pytest.raises(irc.IRCError, match="non-contiguous CUDA"):
        irc.runtime.from_dlpack(_Holder(capsule, (dlpack.DL_CUDA, 0)))
    del capsule
    gc.collect()
    assert len(dlpack._exports) == before


def test_cuda_export_checks_the_requested_device():
    mem = cuda_backend.BorrowedMemory(0x1000, 16, 0, owner=None)
    t = irc.runtime.Tensor(mem=mem, shape=(4,), dtype="float32", device=irc.cuda(0))
    with pytest.raises(BufferError, match=r"cannot be exported to DLPack device \(1, 0\)"):
        t.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="invalid DLPack stream 0"):
        t.__dlpack__(stream=0)


# -- FakeDriver: the launch logic on any machine ---------------------------------------------

class FakeDriver:
    """The driver calls irc makes, on a pretend GPU 0 with H100 limits. "Kernels" are
    Python functions run at launch on the decoded kernelParams (host memory); events
    stamp a clock that each launch advances by ``launch_ms``."""

    def __init__(self, kernels=None, max_threads=1024, launch_ms=0.25):
        from cuda.bindings import driver as real  # the enums work without a driver

        self.CUresult = real.CUresult
        self.CUdevice_attribute = real.CUdevice_attribute
        self.CUfunction_attribute = real.CUfunction_attribute
        self.CUstream_flags = real.CUstream_flags
        self.CUevent_flags = real.CUevent_flags
        self.CUstream = real.CUstream
        self.kernels = kernels or {}
        self.max_threads = max_threads
        self.launch_ms = launch_ms
        self.clock = 0.0
        self.events = {}
        self.launches = []
        self.set_attributes = []
        self.sync_result = 0
        self.loaded = 0
        self.waits = []
        self.memory = {}  # "device" allocations: host buffers by address
        limits = {"MAX_THREADS_PER_BLOCK": 1024, "MAX_BLOCK_DIM_X": 1024,
                  "MAX_BLOCK_DIM_Y": 1024, "MAX_BLOCK_DIM_Z": 64,
                  "MAX_GRID_DIM_X": 2**31 - 1, "MAX_GRID_DIM_Y": 65535,
                  "MAX_GRID_DIM_Z": 65535, "MAX_SHARED_MEMORY_PER_BLOCK": 48 * 1024,
                  "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 227 * 1024,
                  "MULTIPROCESSOR_COUNT": 132, "WARP_SIZE": 32,
                  "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0}
        self.attributes = {getattr(real.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + k): v
                           for k, v in limits.items()}

    def cuDeviceGetCount(self):
        return 0, 1

    def cuDeviceGet(self, index):
        return 0, index

    def cuDevicePrimaryCtxRetain(self, dev):
        return 0, f"context {dev}"

    def cuCtxSetCurrent(self, ctx):
        return (0,)

    def cuDeviceGetAttribute(self, attr, dev):
        return 0, self.attributes[attr]

    def cuDeviceGetName(self, length, dev):
        return 0, b"Fake H100".ljust(length, b"\x00")

    def cuDeviceTotalMem(self, dev):
        return 0, 80 << 30

    def cuModuleLoadData(self, address):
        assert ctypes.string_at(address, 4) == b"\x7fELF"
        self.loaded += 1
        return 0, "module"

    def cuModuleUnload(self, module):
        return (0,)

    def cuModuleGetFunction(self, module, name):
        if name.decode() not in self.kernels:
            return self.CUresult.CUDA_ERROR_NOT_FOUND, None
        return 0, name.decode()

    def cuFuncGetAttribute(self, attr, fn):
        a = self.CUfunction_attribute
        values = {a.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: self.max_threads,
                  a.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: 1024,
                  a.CU_FUNC_ATTRIBUTE_NUM_REGS: 40, a.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: 0}
        return 0, values[attr]

    def cuFuncSetAttribute(self, fn, attr, value):
        self.set_attributes.append((fn, attr, value))
        return (0,)

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launches.append((fn, (gx, gy, gz), (bx, by, bz), shared, int(stream)))
        self.kernels[fn](params)
        self.clock += self.launch_ms
        return (0,)

    def cuCtxSynchronize(self):
        return (self.sync_result,)

    def cuStreamCreate(self, flags):
        return 0, self.CUstream(0x5000)

    def cuStreamSynchronize(self, stream):
        return (self.sync_result,)

    def cuStreamDestroy(self, stream):
        return (0,)

    def cuStreamWaitEvent(self, stream, event, flags):
        self.waits.append((int(stream), event))
        return (0,)

    def cuMemAlloc(self, nbytes):
        buf = np.empty(nbytes + 256, np.uint8)
        address = buf.ctypes.data + (-buf.ctypes.data) % 256  # cuMemAlloc aligns to 256
        self.memory[address] = buf
        return 0, address

    def cuMemFree(self, address):
        self.memory.pop(int(address))
        return (0,)

    def cuMemcpyHtoD(self, dst, src, nbytes):
        ctypes.memmove(dst, src, nbytes)
        return (0,)

    cuMemcpyDtoH = cuMemcpyDtoD = cuMemcpyHtoD

    def cuEventCreate(self, flags):
        handle = len(self.events) + 1
        self.events[handle] = None
        return 0, handle

    def cuEventRecord(self, event, stream):
        self.events[event] = self.clock
        return (0,)

    def cuEventSynchronize(self, event):
        return (0,)

    def cuEventElapsedTime(self, start, end):
        return 0, self.events[end] - self.events[start]

    def cuEventDestroy(self, event):
        return (0,)


def _param(params: int, i: int, ctype):
    """Kernel parameter ``i`` of a kernelParams array, as ``ctype``."""
    return ctype.from_address(ctypes.c_void_p.from_address(params + 8 * i).value).value


def _host_vadd(params: int) -> None:
    a, b, c = (_param(params, i, ctypes.c_void_p) for i in range(3))
    n = _param(params, 3, ctypes.c_int32)

    def view(p):
        return np.ctypeslib.as_array(ctypes.cast(p, ctypes.POINTER(ctypes.c_float)), (n,))
    view(c)[:] = view(a) + view(b)


@pytest.fixture
def fake(monkeypatch):
    pytest.importorskip("cuda.bindings.driver", reason="needs NVIDIA's cuda-bindings")
    drv = FakeDriver({"vadd": _host_vadd})
    monkeypatch.setattr(cuda_backend, "_driver", drv)
    for table in ("_contexts", "_attributes", "_last_kernel", "_pool"):
        monkeypatch.setattr(cuda_backend, table, {})
    monkeypatch.setattr(cuda_backend, "_pool_bytes", 0)
    yield drv
    gc.collect()  # streams, events and modules of the fake are freed by the fake


def test_freed_device_memory_is_reused_not_freed(fake, monkeypatch):
    # cuMemFree waits for the whole GPU: a freed block goes back to irc's pool.
    t = irc.runtime.empty((1000,), "float32", irc.cuda(0))
    ptr = t.data_ptr
    del t
    gc.collect()
    assert len(fake.memory) == 1
    again = irc.runtime.empty((1000,), "float32", irc.cuda(0))
    assert again.data_ptr == ptr and len(fake.memory) == 1
    other = irc.runtime.empty((10,), "float32", irc.cuda(0))  # another size: a new block
    assert other.data_ptr != ptr and len(fake.memory) == 2
    del again, other
    gc.collect()
    cuda_backend.empty_cache()
    assert fake.memory == {}
    # Beyond the pool's limit, blocks go back to the driver at once.
    monkeypatch.setattr(cuda_backend, "_POOL_LIMIT", 100)
    big = irc.runtime.empty((1000,), "float32", irc.cuda(0))
    del big
    gc.collect()
    assert fake.memory == {}


def test_fake_launch_runs_the_kernel_with_its_arguments(fake):
    a, b = np.arange(100, dtype=np.float32), np.full(100, 0.5, np.float32)
    c = np.zeros(100, np.float32)
    mod = CUDAModule(FAKE_CUBIN, VADD_SPEC)
    mod.launch("vadd", (1,), (128,), [a.ctypes.data, b.ctypes.data, c.ctypes.data, 100])
    np.testing.assert_array_equal(c, a + b)
    mod.launch("vadd", (1, 1, 1), (128, 1, 1), [a.ctypes.data, b.ctypes.data,
                                                 c.ctypes.data, np.int32(100)])
    assert fake.loaded == 1  # loaded once per device
    assert fake.launches[-1] == ("vadd", (1, 1, 1), (128, 1, 1), 0, 0)
    assert irc.cuda(0).device_name == "Fake H100"
    assert irc.cuda(0).max_threads_per_block == 1024
    assert irc.cuda(0).multi_processor_count == 132
    assert irc.cuda(0).max_shared_memory_per_block == 48 * 1024
    assert irc.cuda(0).compute_version == "9.0"
    assert irc.cuda(0).attributes.total_memory == 80 << 30
    assert mod.function_attributes("vadd") == {
        "num_regs": 40, "local_bytes": 0, "static_shared_bytes": 1024,
        "max_threads_per_block": 1024}


@pytest.mark.parametrize("grid, block, message", [
    ((1,), (2048,), r"block \(2048, 1, 1\) exceeds cuda\(0\)'s limit 1024 in dimension x"),
    ((1,), (32, 32, 2), r"block \(32, 32, 2\) has 2048 threads; cuda\(0\) allows at most 1024"),
    ((1, 70000), (32,), r"grid \(1, 70000, 1\) exceeds cuda\(0\)'s limit 65535 in dimension y"),
    ((0,), (32,), r"grid \(0, 1, 1\) has an empty dimension"),
    ((1, 2, 3, 4), (32,), r"grid must be 1 to 3 ints"),
])
def test_fake_launch_configuration_is_checked(fake, grid, block, message):
    mod = CUDAModule(FAKE_CUBIN, VADD_SPEC)
    with pytest.raises(CUDAError, match=f"kernel 'vadd': {message}"):
        mod.launch("vadd", grid, block, [0, 0, 0, 0])
    assert not fake.launches


def test_fake_kernel_register_limit_is_checked(fake):
    fake.max_threads = 256
    with pytest.raises(CUDAError, match="register use allows at most 256") as info:
        CUDAModule(FAKE_CUBIN, VADD_SPEC).launch("vadd", 1, 512, [0, 0, 0, 0])
    assert "__launch_bounds__" in str(info.value)


def test_fake_large_dynamic_shared_memory_is_opted_in(fake):
    fake.kernels["smem"] = lambda params: None
    big = 100 * 1024
    mod = CUDAModule(FAKE_CUBIN, {"smem": KernelSpec(("handle",), shared_bytes=big)})
    mod.launch("smem", 1, 256, [0])
    attr = fake.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    assert fake.set_attributes == [("smem", attr, big)]
    assert fake.launches[-1][3] == big
    mod.launch("smem", 1, 256, [0], shared_bytes=big // 2)  # within what was enabled
    mod.launch("smem", 1, 256, [0], shared_bytes=DEFAULT_SHARED_LIMIT - 1024)
    assert len(fake.set_attributes) == 1
    mod.launch("smem", 1, 256, [0], shared_bytes=200 * 1024)
    assert fake.set_attributes[-1] == ("smem", attr, 200 * 1024)
    with pytest.raises(CUDAError, match=r"needs 232448 bytes of dynamic shared memory plus "
                                        r"1024 static; cuda\(0\) allows 232448"):
        mod.launch("smem", 1, 256, [0], shared_bytes=227 * 1024)
    small = CUDAModule(FAKE_CUBIN, {"smem": KernelSpec(("handle",), shared_bytes=4096)})
    small.launch("smem", 1, 32, [0])
    assert len(fake.set_attributes) == 2  # 4 KiB needs no opt-in


def test_fake_missing_kernel_in_cubin(fake):
    mod = CUDAModule(FAKE_CUBIN, {"mangled": KernelSpec(())})
    with pytest.raises(CUDAError, match="the cubin has no kernel 'mangled'") as info:
        mod.launch("mangled", 1, 1, [])
    assert 'extern "C"' in str(info.value)


def test_fake_faults_name_the_kernel(fake):
    mod = CUDAModule(FAKE_CUBIN, VADD_SPEC)
    c = np.zeros(4, np.float32)
    args = [c.ctypes.data, c.ctypes.data, c.ctypes.data, 4]
    fake.sync_result = fake.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
    with pytest.raises(CUDAError, match="kernel 'vadd' failed: CUDA_ERROR_ILLEGAL_ADDRESS") \
            as info:
        mod.launch("vadd", 1, 32, args, synchronize=True)
    assert info.value.sticky and info.value.code == "CUDA_ERROR_ILLEGAL_ADDRESS"
    copy = pickle.loads(pickle.dumps(info.value))  # as a worker process sends it back
    assert copy.sticky and str(copy) == str(info.value)
    assert "restart the process" in str(info.value)
    mod.launch("vadd", 1, 32, args)  # asynchronous: the error comes with the next sync
    with pytest.raises(CUDAError, match="the last kernel launched on cuda\\(0\\) was 'vadd'"):
        irc.cuda(0).sync()


def test_fake_streams_and_devices(fake):
    mod = CUDAModule(FAKE_CUBIN, VADD_SPEC)
    c = np.zeros(4, np.float32)
    args = [c.ctypes.data, c.ctypes.data, c.ctypes.data, 4]
    stream = Stream(0)
    mod.launch("vadd", 1, 32, args, stream=stream, synchronize=True)
    assert fake.launches[-1][4] == 0x5000
    mod.launch("vadd", 1, 32, args, stream=0x77)  # a raw handle (torch's cuda_stream)
    assert fake.launches[-1][4] == 0x77
    with pytest.raises(CUDAError, match="a stream must be"):
        mod.launch("vadd", 1, 32, args, stream="default")
    with pytest.raises(CUDAError, match=r"no CUDA device 3: this machine has 1 GPU"):
        mod.launch("vadd", 1, 32, args, device=3)
    mem = cuda_backend.BorrowedMemory(c.ctypes.data, 16, 1, owner=None)
    on_gpu1 = irc.runtime.Tensor(mem=mem, shape=(4,), dtype="float32", device=irc.cuda(1))
    with pytest.raises(RuntimeDeviceError, match=r"launches on cuda\(0\) but takes tensors on "
                                                 r"cuda\(1\)"):
        mod.launch("vadd", 1, 32, [on_gpu1, 0, 0, 4], device=0)


def test_fake_events_and_time_evaluator_use_gpu_time(fake):
    mod = CUDAModule(FAKE_CUBIN, VADD_SPEC)
    c = np.zeros(4, np.float32)
    args = [c.ctypes.data, c.ctypes.data, c.ctypes.data, 4]
    start, end = Event(0), Event(0)
    start.record()
    mod.launch("vadd", 1, 32, args)
    mod.launch("vadd", 1, 32, args)
    end.record().synchronize()
    assert start.elapsed_time(end) == pytest.approx(0.5)
    with pytest.raises(CUDAError, match="timing=True"):
        start.elapsed_time(Event(0, timing=False))
    timer = irc.runtime.time_evaluator(lambda: mod.launch("vadd", 1, 32, args), irc.cuda(0),
                                       number=4, repeat=3)
    result = timer()
    assert result.results == pytest.approx((0.25e-3,) * 3)  # the GPU's time per run
    assert timer.calls == 1 + 4 * 3


def test_fake_dlpack_orders_streams_and_copies_misaligned_memory(fake):
    t = irc.tensor(np.arange(6, dtype="float32"), irc.cuda(0))  # FakeDriver memory
    np.testing.assert_array_equal(t.numpy(), np.arange(6))
    t.__dlpack__(stream=1)  # the legacy default stream: irc's own, nothing to order
    t.__dlpack__(stream=-1)
    assert fake.waits == []
    t.__dlpack__(stream=0x77)  # the consumer's stream waits for irc's work
    t.__dlpack__(stream=2)  # the per-thread default stream
    assert [w[0] for w in fake.waits] == [0x77, 2]
    before = len(dlpack._exports)
    gc.collect()
    host = irc.runtime.aligned_empty((17,), np.float32)
    host[:] = np.arange(17)
    misaligned = _Producer(host[1:], device=(dlpack.DL_CUDA, 0))
    u = irc.runtime.from_dlpack(misaligned)
    assert u.data_ptr != host[1:].ctypes.data and u.data_ptr % 64 == 0
    np.testing.assert_array_equal(u.numpy(), np.arange(1, 17))
    gc.collect()
    assert len(dlpack._exports) == before  # the producer's memory is handed back at once
    copy = irc.tensor(_Producer(host, device=(dlpack.DL_CUDA, 0)))  # tensor() copies
    assert copy.device == irc.cuda(0) and copy.data_ptr != host.ctypes.data
    np.testing.assert_array_equal(copy.numpy(), np.arange(17))


# -- on a GPU ------------------------------------------------------------------------------

@pytest.fixture
def gpu():
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVIDIA's cuda-bindings")
    return irc.cuda(0)


def _arch(dev) -> str:
    major, minor = dev.attributes.compute_capability
    return f"sm_{major}{minor}"


def _compile(source: str, dev) -> bytes:
    from irc.codegen.nvrtc import compile_cuda
    return compile_cuda(source, arch=_arch(dev))


@pytest.mark.cuda
def test_gpu_vector_add_matches_numpy(gpu):
    mod = CUDAModule(_compile(VADD, gpu), VADD_SPEC)
    n = 100_003
    a, b = np.random.rand(n).astype("float32"), np.random.rand(n).astype("float32")
    ta, tb = irc.tensor(a, gpu), irc.tensor(b, gpu)
    tc = irc.runtime.empty((n,), "float32", gpu)
    mod.launch("vadd", ((n + 255) // 256,), (256,), [ta, tb, tc, n])
    np.testing.assert_allclose(tc.numpy(), a + b, rtol=1e-6)
    attrs = gpu.attributes
    assert attrs.name and attrs.compute_capability >= (7, 5)
    assert attrs.max_threads_per_block == 1024 and attrs.multiprocessor_count > 0
    assert attrs.total_memory > 1 << 30


@pytest.mark.cuda
def test_gpu_half_precision_scalars(gpu):
    source = """\
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void scale(__half* x, __nv_bfloat16* y, __half s, __nv_bfloat16 t,
                                 long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) { x[i] = __hmul(x[i], s); y[i] = __hmul(y[i], t); }
}
"""
    mod = CUDAModule(_compile(source, gpu), {"scale": KernelSpec(
        ("handle", "handle", "float16", "bfloat16", "int64"))})
    x = irc.tensor(np.arange(8, dtype=np.float16), gpu)
    y = irc.tensor(np.arange(8, dtype=np.float32), gpu, dtype="bfloat16")
    mod.launch("scale", 1, 32, [x, y, 0.5, -2.0, 8])
    np.testing.assert_array_equal(x.numpy(), np.arange(8, dtype=np.float16) * 0.5)
    np.testing.assert_array_equal(y.numpy().astype(np.float32), np.arange(8) * -2.0)


@pytest.mark.cuda
def test_gpu_dynamic_shared_memory_above_48k(gpu):
    floats = 16 * 1024  # 64 KiB
    if gpu.attributes.max_shared_memory_per_block_optin < floats * 4:
        pytest.skip("this GPU has less than 64 KiB of shared memory per block")
    source = """\
extern "C" __global__ void reverse(const float* x, float* y, int n) {
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = x[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = buf[n - 1 - i];
}
"""
    mod = CUDAModule(_compile(source, gpu), {"reverse": KernelSpec(
        ("handle", "handle", "int32"), shared_bytes=floats * 4)})
    x = np.random.rand(floats).astype("float32")
    tx, ty = irc.tensor(x, gpu), irc.runtime.empty((floats,), "float32", gpu)
    mod.launch("reverse", 1, 1024, [tx, ty, floats])
    np.testing.assert_array_equal(ty.numpy(), x[::-1])


@pytest.mark.cuda
def test_gpu_launch_limits_name_the_kernel(gpu):
    mod = CUDAModule(_compile(VADD, gpu), VADD_SPEC)
    t = irc.runtime.empty((4,), "float32", gpu)
    with pytest.raises(CUDAError, match="kernel 'vadd': block .* has 2048 threads"):
        mod.launch("vadd", 1, (1024, 2), [t, t, t, 4])


_FAULT_SCRIPT = textwrap.dedent("""
    import irc
    from irc.codegen.nvrtc import compile_cuda
    from irc.runtime.cuda_module import CUDAModule, KernelSpec
    src = 'extern "C" __global__ void oob(float* x) { x[(1ll << 40) + threadIdx.x] = 1; }'
    major, minor = irc.cuda(0).attributes.compute_capability
    mod = CUDAModule(compile_cuda(src, arch=f"sm_{major}{minor}"),
                     {"oob": KernelSpec(("handle",))})
    t = irc.runtime.empty((4,), "float32", irc.cuda(0))
    try:
        mod.launch("oob", 1, 32, [t], synchronize=SYNC)
        irc.cuda(0).sync()
    except irc.IRCError as err:
        print(type(err).__name__, err.code, err.sticky)
        print(err)
""")


@pytest.mark.cuda
@pytest.mark.parametrize("sync", [True, False])
def test_gpu_out_of_bounds_kernel_is_a_cuda_error_naming_it(gpu, sync):
    # A fault leaves the context unusable, so it happens in a process of its own.
    out = subprocess.run([sys.executable, "-c", _FAULT_SCRIPT.replace("SYNC", str(sync))],
                         capture_output=True, text=True, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("CUDAError CUDA_ERROR_") and first.endswith("True")
    assert "'oob'" in out.stdout


@pytest.mark.cuda
def test_gpu_events_streams_and_time_evaluator(gpu):
    mod = CUDAModule(_compile(VADD, gpu), VADD_SPEC)
    n = 1 << 22
    t = irc.tensor(np.ones(n, "float32"), gpu)
    args = [t, t, t, n]
    grid = (n // 256,)
    start, end = Event(0), Event(0)
    start.record()
    mod.launch("vadd", grid, 256, args)
    end.record().synchronize()
    assert start.elapsed_time(end) > 0
    stream = Stream(0)
    start.record(stream)
    mod.launch("vadd", grid, 256, args, stream=stream)
    end.record(stream)
    stream.synchronize()
    assert start.elapsed_time(end) > 0
    np.testing.assert_array_equal(t.numpy()[:4], [4, 4, 4, 4])
    result = irc.runtime.time_evaluator(lambda: mod.launch("vadd", grid, 256, args), gpu,
                                        number=5, repeat=3)()
    assert len(result.results) == 3 and min(result.results) > 0


@pytest.mark.cuda
def test_gpu_dlpack_with_torch(gpu):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    t = irc.tensor(np.arange(6, dtype="float32").reshape(2, 3), gpu)
    x = torch.from_dlpack(t)
    assert x.is_cuda and x.data_ptr() == t.data_ptr and tuple(x.shape) == (2, 3)
    x.mul_(2)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.numpy(), np.arange(6).reshape(2, 3) * 2)
    y = torch.arange(8, dtype=torch.float16, device="cuda")
    u = irc.runtime.from_dlpack(y)
    assert u.data_ptr == y.data_ptr() and u.dtype == "float16"
    del y
    gc.collect()
    np.testing.assert_array_equal(u.numpy(), np.arange(8, dtype=np.float16))
    with pytest.raises(irc.IRCError, match="non-contiguous"):
        irc.runtime.from_dlpack(torch.ones((4, 4), device="cuda").t())
    mod = CUDAModule(_compile(VADD, gpu), VADD_SPEC)
    a = torch.ones(64, device="cuda")
    mod.launch("vadd", 1, 64, [a, a, a, 64])  # __cuda_array_interface__
    torch.cuda.synchronize()
    assert float(a.sum()) == 128


@pytest.mark.cuda
def test_gpu_dlpack_with_cupy(gpu):
    cupy = pytest.importorskip("cupy")
    t = irc.tensor(np.arange(5, dtype="int32"), gpu)
    x = cupy.from_dlpack(t)
    assert int(x.data.ptr) == t.data_ptr
    np.testing.assert_array_equal(cupy.asnumpy(x), np.arange(5))
    y = cupy.arange(7, dtype=cupy.float64)
    u = irc.runtime.from_dlpack(y)
    assert u.data_ptr == int(y.data.ptr)
    np.testing.assert_array_equal(u.numpy(), np.arange(7.0))
