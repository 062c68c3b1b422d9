"""Devices: ``irc.cpu(0)``, ``irc.cuda(0)``, ``irc.device("cpu")``.

A device is a (type, index) pair with DLPack's device codes. CPU memory is host memory;
CUDA memory needs the ``cuda`` extra (NVIDIA's cuda-bindings) and a GPU, checked when
the device is first used (creating the device object itself always works).
"""

from __future__ import annotations

from ..core.diagnostics import IRCError
from . import cuda_backend

# DLPack device type codes.
DL_CPU = 1
DL_CUDA = 2
_TYPE_CODES = {"cpu": DL_CPU, "cuda": DL_CUDA}
_TYPE_NAMES = {v: k for k, v in _TYPE_CODES.items()}
_ALIASES = {"llvm": "cpu", "host": "cpu", "gpu": "cuda", "nvidia": "cuda", "c": "cpu"}


class DeviceError(IRCError):
    """A device that does not exist or cannot be used here."""


class Device:
    """A device: ``device_type`` (``"cpu"``/``"cuda"``) and ``index``."""

    __slots__ = ("device_type", "index")

    def __init__(self, device_type: str, index: int = 0):
        name = _ALIASES.get(device_type, device_type)
        if name not in _TYPE_CODES:
            raise DeviceError(f"unknown device type {device_type!r}; use 'cpu' or 'cuda'")
        if not isinstance(index, int) or index < 0:
            raise DeviceError(f"device index must be a non-negative int, got {index!r}")
        self.device_type = name
        self.index = index

    @property
    def dlpack_type(self) -> int:
        """The DLPack device type code (1 = CPU, 2 = CUDA)."""
        return _TYPE_CODES[self.device_type]

    @property
    def device_id(self) -> int:
        """The device index (DLPack's name for it)."""
        return self.index

    @property
    def exist(self) -> bool:
        """True when the device can be used from this process."""
        if self.device_type == "cpu":
            return self.index == 0
        return cuda_backend.device_count() > self.index

    @property
    def compute_version(self) -> str:
        """The CUDA compute capability (``"9.0"``); an error for CPUs or without a GPU."""
        if self.device_type != "cuda":
            raise DeviceError("compute_version is only defined for CUDA devices")
        major, minor = cuda_backend.compute_capability(self.index)
        return f"{major}.{minor}"

    @property
    def attributes(self) -> cuda_backend.DeviceAttributes:
        """The GPU's name, compute capability and limits (CUDA devices only)."""
        if self.device_type != "cuda":
            raise DeviceError("device attributes are only defined for CUDA devices")
        return cuda_backend.device_attributes(self.index)

    @property
    def device_name(self) -> str:
        """The GPU's name (``"NVIDIA H100 80GB HBM3"``)."""
        return self.attributes.name

    @property
    def max_threads_per_block(self) -> int:
        """The most threads a block may have on this GPU."""
        return self.attributes.max_threads_per_block

    @property
    def max_shared_memory_per_block(self) -> int:
        """Shared memory (bytes) a block may use without opting in (48 KiB)."""
        return self.attributes.max_shared_memory_per_block

    @property
    def multi_processor_count(self) -> int:
        """The number of streaming multiprocessors."""
        return self.attributes.multiprocessor_count

    def sync(self) -> None:
        """Wait until work queued on the device has finished (no-op on the CPU)."""
        if self.device_type == "cuda":
            cuda_backend.synchronize(self.index)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Device) and other.device_type == self.device_type
                and other.index == self.index)

    def __hash__(self) -> int:
        return hash((self.device_type, self.index))

    def __repr__(self) -> str:
        return f"{self.device_type}({self.index})"

    __str__ = __repr__


def cpu(index: int = 0) -> Device:
    """The host CPU (there is one; ``index`` must be 0 to run kernels on it)."""
    return Device("cpu", index)


def cuda(index: int = 0) -> Device:
    """NVIDIA GPU number ``index``."""
    return Device("cuda", index)


def device(spec: str | int | Device, index: int | None = None) -> Device:
    """A device from a name (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"llvm"``), a DLPack
    type code, or a Device."""
    if isinstance(spec, Device):
        return spec if index is None else Device(spec.device_type, index)
    if isinstance(spec, int):
        if spec not in _TYPE_NAMES:
            raise DeviceError(f"unknown DLPack device type {spec}")
        return Device(_TYPE_NAMES[spec], index or 0)
    if isinstance(spec, str):
        name, _, idx = spec.partition(":")
        name = name.split()[0] if name.strip() else name
        if idx:
            if not idx.isdigit():
                raise DeviceError(f"bad device index in {spec!r}")
            return Device(name, int(idx))
        return Device(name, index or 0)
    raise DeviceError(f"cannot make a device from {type(spec).__name__} {spec!r}; pass "
                      "irc.cpu(), irc.cuda(i) or a name such as 'cpu' or 'cuda:0'")
