"""The CUDA driver API through NVIDIA's CUDA Python bindings (the ``cuda`` extra).

What tensors and kernels need: device count, attributes and compute capability; the
device's primary context (the one the CUDA runtime uses, so pointers are shared with
torch and cupy); allocations and copies; streams and events; synchronization with
errors that name the last kernel launched. Imported lazily: importing irc never loads
the bindings. Without the package, the driver or a GPU, calls raise an irc error that
says so.

A kernel that faults (``CUDA_ERROR_ILLEGAL_ADDRESS``, ``CUDA_ERROR_LAUNCH_FAILED``,
``CUDA_ERROR_MISALIGNED_ADDRESS``, ...) leaves a *sticky* error: the context is unusable
from then on, every later call fails the same way, and only a new process recovers.
Launches are asynchronous, so such an error usually surfaces at the next
synchronization; the :class:`CUDAError` then names the last kernel launched on the
device.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from ..core.diagnostics import IRCError, require

_lock = threading.Lock()
# Per thread: the stream launches go to when they name none, and the objects a graph
# being captured must keep alive (see capture).
_local = threading.local()
_driver = None
_contexts: dict[int, object] = {}
_attributes: dict[int, DeviceAttributes] = {}
_last_kernel: dict[int, str] = {}

_NO_GPU_HINT = "this needs an NVIDIA GPU and its driver; on this machine use irc.cpu()"
# Errors after which the context cannot be used again.
_STICKY = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_TIMEOUT",
    "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_TENSOR_MEMORY_LEAK",
})


class CUDAError(IRCError):
    """A CUDA driver call or kernel launch failed, or no GPU is available; ``code`` is
    the driver's error name (``"CUDA_ERROR_ILLEGAL_ADDRESS"``) when there is one."""

    def __init__(self, message: str, *, hint: str | None = None, code: str = ""):
        self.code = code
        super().__init__(message, hint=hint)

    @property
    def sticky(self) -> bool:
        """True when the error left the CUDA context unusable (restart the process)."""
        return self.code in _STICKY

    def __reduce__(self):
        # Worker processes send errors back pickled; keep the code with the message.
        return (_rebuild_error, (type(self), self.message, self.hint, self.code))


def _rebuild_error(cls, message: str, hint: str | None, code: str) -> CUDAError:
    return cls(message, hint=hint, code=code)


def _import_driver():
    return require(("cuda.bindings.driver", "cuda.cuda"), "cuda", purpose="CUDA",
                   package="NVIDIA's CUDA Python bindings (the package 'cuda-bindings')")


def driver():
    """The driver module of the CUDA Python bindings (``cuda.bindings.driver``, or
    ``cuda.cuda`` of cuda-python before 12.6), initialized (cuInit) once."""
    global _driver
    if _driver is not None:
        return _driver
    with _lock:
        if _driver is not None:
            return _driver
        mod = _import_driver()
        try:
            (err,) = mod.cuInit(0)
        except Exception as exc:  # noqa: BLE001 - no driver library on this machine (the bindings raise their own error classes)
            raise CUDAError(f"the CUDA driver cannot be loaded: {exc}",
                            hint=_NO_GPU_HINT) from None
        if int(err) != 0:
            name = error_name(mod, err)
            raise CUDAError(f"the CUDA driver cannot be initialized: cuInit failed with "
                            f"{name}", hint=_NO_GPU_HINT, code=name)
        _driver = mod
    return _driver


def error_name(mod, err) -> str:
    """``"CUDA_ERROR_..."`` for a driver result (without calling the driver)."""
    try:
        return mod.CUresult(int(err)).name
    except (ValueError, AttributeError):
        return f"CUDA error {int(err)}"


def check(mod, err, what: str, *, device: int | None = None, kernel: str | None = None
          ) -> None:
    """Raise a :class:`CUDAError` when ``err`` (a driver result) is not success.

    ``kernel`` names the kernel the call launched or waited for; otherwise, for errors
    that a faulting kernel leaves behind, the last kernel launched on ``device``."""
    if int(err) == 0:
        return
    name = error_name(mod, err)
    message = f"CUDA call {what} failed with {name}"
    hint = None
    if name in _STICKY:
        culprit = kernel or (_last_kernel.get(device) if device is not None else None)
        if culprit is not None:
            message = (f"kernel '{culprit}' failed: {name}" if kernel else
                       f"{message}; the last kernel launched on cuda({device}) was "
                       f"'{culprit}'")
        hint = ("the kernel faulted and the CUDA context is now unusable: every later "
                "CUDA call in this process fails; restart the process (run suspect "
                "kernels in a subprocess)")
    elif kernel is not None:
        message = f"launching kernel '{kernel}' failed: {name} ({what})"
    raise CUDAError(message, hint=hint, code=name)


def note_launch(index: int, kernel: str) -> None:
    """Remember the last kernel launched on GPU ``index`` (named by later errors)."""
    _last_kernel[index] = kernel


def device_count() -> int:
    """Number of GPUs (0 when the package, the driver or a GPU is missing)."""
    try:
        d = driver()
    except IRCError:
        return 0
    err, n = d.cuDeviceGetCount()
    return int(n) if int(err) == 0 else 0


def context(index: int):
    """Make the primary context of GPU ``index`` current in this thread; return it."""
    d = driver()
    ctx = _contexts.get(index)
    if ctx is None:
        count = device_count()
        if index >= count:
            raise CUDAError(f"no CUDA device {index}: this machine has {count} GPU(s)",
                            hint="use irc.cpu() on a machine without a GPU")
        err, dev = d.cuDeviceGet(index)
        check(d, err, "cuDeviceGet")
        err, ctx = d.cuDevicePrimaryCtxRetain(dev)
        check(d, err, "cuDevicePrimaryCtxRetain")
        _contexts[index] = ctx
    (err,) = d.cuCtxSetCurrent(ctx)
    check(d, err, "cuCtxSetCurrent")
    return ctx


@dataclass(frozen=True)
class DeviceAttributes:
    """What kernels are checked against, read once per GPU."""

    name: str
    compute_capability: tuple[int, int]
    multiprocessor_count: int
    max_threads_per_block: int
    max_block_dims: tuple[int, int, int]
    max_grid_dims: tuple[int, int, int]
    max_shared_memory_per_block: int  # without opting in (48 KiB)
    max_shared_memory_per_block_optin: int  # with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    warp_size: int
    total_memory: int


def device_attributes(index: int) -> DeviceAttributes:
    """The attributes of GPU ``index`` (name, compute capability, limits)."""
    hit = _attributes.get(index)
    if hit is not None:
        return hit
    d = driver()
    context(index)
    err, dev = d.cuDeviceGet(index)
    check(d, err, "cuDeviceGet")
    a = d.CUdevice_attribute

    def get(attr_name: str) -> int:
        err, value = d.cuDeviceGetAttribute(getattr(a, attr_name), dev)
        check(d, err, f"cuDeviceGetAttribute({attr_name})")
        return int(value)

    err, raw_name = d.cuDeviceGetName(256, dev)
    check(d, err, "cuDeviceGetName")
    name = raw_name.split(b"\x00", 1)[0].decode(errors="replace") \
        if isinstance(raw_name, bytes) else str(raw_name)
    err, total = d.cuDeviceTotalMem(dev)
    check(d, err, "cuDeviceTotalMem")
    attrs = DeviceAttributes(
        name=name,
        compute_capability=(get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
                            get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")),
        multiprocessor_count=get("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
        max_threads_per_block=get("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
        max_block_dims=tuple(get(f"CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_{c}") for c in "XYZ"),
        max_grid_dims=tuple(get(f"CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_{c}") for c in "XYZ"),
        max_shared_memory_per_block=get("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"),
        max_shared_memory_per_block_optin=get(
            "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        warp_size=get("CU_DEVICE_ATTRIBUTE_WARP_SIZE"),
        total_memory=int(total),
    )
    _attributes[index] = attrs
    return attrs


def compute_capability(index: int) -> tuple[int, int]:
    """(major, minor) compute capability of GPU ``index``."""
    return device_attributes(index).compute_capability


def synchronize(index: int) -> None:
    """Wait for all work queued on GPU ``index``."""
    d = driver()
    context(index)
    (err,) = d.cuCtxSynchronize()
    check(d, err, "cuCtxSynchronize", device=index)


def destroy(d: Any, index: int, free: Any, handle: Any) -> None:
    """Free a driver object at garbage collection: ``free(handle)`` (a function of ``d``,
    the driver module that made the object) in the context of GPU ``index``. Nothing
    happens when the bindings were replaced since (as tests do); errors are ignored
    (interpreter shutdown, or a context left unusable by a faulting kernel)."""
    if d is not _driver:
        return
    try:
        context(index)
        free(handle)
    except Exception:  # noqa: BLE001 - see the docstring
        pass


# -- memory ---------------------------------------------------------------------------------

# Freed allocations kept for reuse, by (GPU, size): cuMemFree waits for the whole GPU,
# so freeing a VM's result each call would stall the queue between calls. Reuse is safe
# because irc queues all its work on one stream (the legacy default), which orders a
# later user of a block after the earlier ones; at most _POOL_LIMIT bytes are kept.
_pool: dict[tuple[int, int, int], list] = {}  # (id(driver), GPU, size) -> handles
_pool_bytes = 0
_POOL_LIMIT = 1 << 30


class DeviceMemory:
    """An allocation of ``nbytes`` on GPU ``index``, returned to irc's pool of free blocks
    when garbage collected (:func:`empty_cache` gives the pool back to the driver)."""

    def __init__(self, nbytes: int, index: int):
        global _pool_bytes
        d = driver()
        self.index = index
        self.nbytes = nbytes
        size = max(1, nbytes)
        free = _pool.get((id(d), index, size))
        if free:
            ptr = free.pop()
            _pool_bytes -= size
        else:
            context(index)
            err, ptr = d.cuMemAlloc(size)
            if int(err) != 0 and _pool:
                empty_cache()  # out of memory with blocks cached: give them back, retry
                context(index)
                err, ptr = d.cuMemAlloc(size)
            check(d, err, f"cuMemAlloc({nbytes})", device=index)
        self.ptr = int(ptr)
        self._handle = ptr
        self._d = d

    def __del__(self):
        global _pool_bytes
        d = getattr(self, "_d", None)
        if d is None:
            return
        size = max(1, self.nbytes)
        if d is _driver and _pool_bytes + size <= _POOL_LIMIT:
            _pool.setdefault((id(d), self.index, size), []).append(self._handle)
            _pool_bytes += size
            return
        destroy(d, self.index, d.cuMemFree, self._handle)


def empty_cache() -> None:
    """Free the device memory irc keeps for reuse (blocks of collected tensors)."""
    global _pool_bytes
    blocks = [(index, h) for (owner, index, _), hs in _pool.items() if owner == id(_driver)
              for h in hs]
    _pool.clear()
    _pool_bytes = 0
    if _driver is None:
        return
    for index, h in blocks:
        destroy(_driver, index, _driver.cuMemFree, h)


class BorrowedMemory:
    """Device memory owned by another library (imported through DLPack): ``release``
    (the producer's DLPack deleter) runs when this object is garbage collected, and
    ``owner`` (the producer) is kept alive until then."""

    def __init__(self, ptr: int, nbytes: int, index: int, owner: Any, release: Any = None):
        self.ptr = ptr
        self.nbytes = nbytes
        self.index = index
        self.owner = owner
        self._release = release

    def __del__(self):
        release, self._release = getattr(self, "_release", None), None
        if release is not None:
            try:
                release()
            except Exception:  # noqa: BLE001 - a producer's deleter at interpreter shutdown
                pass


def copy_host_to_device(dst: Any, host_ptr: int, nbytes: int) -> None:
    """Copy ``nbytes`` from host memory to the device."""
    d = driver()
    context(dst.index)
    (err,) = d.cuMemcpyHtoD(dst.ptr, host_ptr, nbytes)
    check(d, err, "cuMemcpyHtoD", device=dst.index)


def copy_device_to_host(host_ptr: int, src: Any, nbytes: int) -> None:
    """Copy ``nbytes`` from the device to host memory."""
    d = driver()
    context(src.index)
    (err,) = d.cuMemcpyDtoH(host_ptr, src.ptr, nbytes)
    check(d, err, "cuMemcpyDtoH", device=src.index)


def copy_device_to_device(dst: Any, src: Any, nbytes: int) -> None:
    """Copy ``nbytes`` between two allocations on one device."""
    d = driver()
    context(dst.index)
    (err,) = d.cuMemcpyDtoD(dst.ptr, src.ptr, nbytes)
    check(d, err, "cuMemcpyDtoD", device=dst.index)


def copy_device_to_device_async(dst: Any, src: Any, nbytes: int) -> None:
    """Queue a copy of ``nbytes`` between two allocations of one device on this thread's
    current stream (ordered with the kernels queued there; the host does not wait)."""
    d = driver()
    context(dst.index)
    (err,) = d.cuMemcpyDtoDAsync(dst.ptr, src.ptr, nbytes, stream_handle(None))
    check(d, err, "cuMemcpyDtoDAsync", device=dst.index)


# -- streams and events ---------------------------------------------------------------------

def stream_handle(stream: Any):
    """The driver handle of ``stream``: a :class:`Stream`, a raw handle (an int, such as
    ``torch.cuda.current_stream().cuda_stream``), or None for this thread's current
    stream (:func:`current_stream`: the legacy default stream unless a graph is being
    captured)."""
    d = driver()
    if stream is None:
        current = getattr(_local, "stream", None)
        return current.handle if current is not None else d.CUstream(0)
    if isinstance(stream, Stream):
        return stream.handle
    if isinstance(stream, int) and not isinstance(stream, bool):
        return d.CUstream(stream)
    raise CUDAError(f"a stream must be an irc.runtime Stream, a raw stream handle (int) or "
                    f"None, not {type(stream).__name__}")


def wait_event(index: int, stream: Any, event: Event) -> None:
    """Make work queued later on ``stream`` (anything :func:`stream_handle` takes) of GPU
    ``index`` wait for ``event``."""
    d = driver()
    context(index)
    (err,) = d.cuStreamWaitEvent(stream_handle(stream), event.handle, 0)
    check(d, err, "cuStreamWaitEvent", device=index)


class Stream:
    """A CUDA stream on GPU ``device`` (non-blocking: it does not wait for the legacy
    default stream); destroyed when garbage collected."""

    def __init__(self, device: int = 0, *, non_blocking: bool = True):
        d = driver()
        context(device)
        self.device = device
        flags = int(d.CUstream_flags.CU_STREAM_NON_BLOCKING) if non_blocking else 0
        err, handle = d.cuStreamCreate(flags)
        check(d, err, "cuStreamCreate", device=device)
        self.handle = handle
        self._d = d

    @property
    def ptr(self) -> int:
        """The raw ``CUstream`` handle (what DLPack and other libraries exchange)."""
        return int(self.handle)

    def synchronize(self) -> None:
        """Wait until the work queued on the stream has finished."""
        d = driver()
        context(self.device)
        (err,) = d.cuStreamSynchronize(self.handle)
        check(d, err, "cuStreamSynchronize", device=self.device)

    def wait(self, event: Event) -> None:
        """Make work queued later on this stream wait for ``event``."""
        wait_event(self.device, self, event)

    def __del__(self):
        if getattr(self, "_d", None) is not None:
            destroy(self._d, self.device, self._d.cuStreamDestroy, self.handle)

    def __repr__(self) -> str:
        return f"<irc Stream 0x{self.ptr:x} on cuda({self.device})>"


class Event:
    """A CUDA event on GPU ``device``: ``record`` it on a stream, ``synchronize`` on it,
    and measure ``start.elapsed_time(end)`` in milliseconds (``timing=True``)."""

    def __init__(self, device: int = 0, *, timing: bool = True):
        d = driver()
        context(device)
        self.device = device
        self.timing = timing
        flags = 0 if timing else int(d.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        err, handle = d.cuEventCreate(flags)
        check(d, err, "cuEventCreate", device=device)
        self.handle = handle
        self._d = d

    def record(self, stream: Any = None) -> Event:
        """Record the event on ``stream`` (default: the legacy default stream)."""
        d = driver()
        context(self.device)
        (err,) = d.cuEventRecord(self.handle, stream_handle(stream))
        check(d, err, "cuEventRecord", device=self.device)
        return self

    def synchronize(self) -> None:
        """Wait until the work recorded before the event has finished."""
        d = driver()
        context(self.device)
        (err,) = d.cuEventSynchronize(self.handle)
        check(d, err, "cuEventSynchronize", device=self.device)

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and ``end`` (both recorded, ``end``
        completed; resolution about 0.5 microseconds)."""
        if not (self.timing and end.timing):
            raise CUDAError("elapsed_time needs two events created with timing=True")
        d = driver()
        context(self.device)
        err, ms = d.cuEventElapsedTime(self.handle, end.handle)
        check(d, err, "cuEventElapsedTime", device=self.device)
        return float(ms)

    def __del__(self):
        if getattr(self, "_d", None) is not None:
            destroy(self._d, self.device, self._d.cuEventDestroy, self.handle)


# -- graphs ---------------------------------------------------------------------------------

def current_stream() -> Stream | None:
    """The stream this thread's launches, copies and library calls go to when they name
    none: the capturing stream while :func:`capture` runs, else None (the legacy default
    stream)."""
    return getattr(_local, "stream", None)


def keep_alive(obj: Any) -> None:
    """Keep ``obj`` (device memory that captured work uses, such as a kernel's scratch
    buffer) alive as long as the graph this thread is capturing; nothing happens when
    no capture is under way."""
    keep = getattr(_local, "keep", None)
    if keep is not None:
        keep.append(obj)


class Graph:
    """An instantiated CUDA graph on GPU ``device``: :meth:`launch` queues all its work
    with one driver call. Made by :func:`capture`; it holds the memory its work uses."""

    def __init__(self, device: int, graph: Any, executable: Any, nodes: int, keep: list):
        self.device = device
        self.nodes = nodes
        self._graph = graph
        self._exec = executable
        self._keep = keep
        self._d = driver()

    def launch(self) -> None:
        """Queue the graph's work on this thread's current stream."""
        d = self._d
        context(self.device)
        (err,) = d.cuGraphLaunch(self._exec, stream_handle(None))
        check(d, err, "cuGraphLaunch", device=self.device)

    def __del__(self):
        d = getattr(self, "_d", None)
        if d is not None:
            destroy(d, self.device, d.cuGraphExecDestroy, self._exec)
            destroy(d, self.device, d.cuGraphDestroy, self._graph)

    def __repr__(self) -> str:
        return f"<irc CUDA graph of {self.nodes} nodes on cuda({self.device})>"


def capture(index: int, run: Any) -> tuple[Graph, Any]:
    """Record the work ``run()`` queues on GPU ``index`` (kernel launches, library calls,
    asynchronous copies on the current stream) into a :class:`Graph` instead of running
    it, and return the graph with ``run``'s result.

    The capture uses a stream of its own in relaxed mode, so ``run`` may allocate memory
    (what it registers with :func:`keep_alive` lives as long as the graph); anything
    that waits for the GPU or queues work elsewhere invalidates the capture, which raises
    a :class:`CUDAError`."""
    d = driver()
    context(index)
    stream = Stream(index)
    keep: list = [stream]
    (err,) = d.cuStreamBeginCapture(stream.handle,
                                    d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)
    check(d, err, "cuStreamBeginCapture", device=index)
    _local.stream, _local.keep = stream, keep
    try:
        result = run()
    except BaseException:
        _local.stream = _local.keep = None
        err, graph = d.cuStreamEndCapture(stream.handle)
        if int(err) == 0 and graph:
            d.cuGraphDestroy(graph)
        raise
    _local.stream = _local.keep = None
    err, graph = d.cuStreamEndCapture(stream.handle)
    check(d, err, "cuStreamEndCapture (the captured work waited for the GPU or used "
          "another stream)", device=index)
    err, _, nodes = d.cuGraphGetNodes(graph, 0)
    if int(err) != 0:
        nodes = 0
    err, executable = d.cuGraphInstantiate(graph, 0)
    if int(err) != 0:
        d.cuGraphDestroy(graph)
        check(d, err, "cuGraphInstantiate", device=index)
    return Graph(index, graph, executable, int(nodes), keep), result
