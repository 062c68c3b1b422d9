"""CUDA C to cubin with NVRTC, cached on disk.

``compile_cuda(source, arch="sm_90")`` returns a **cubin** (machine code for that one
architecture, ``nvrtcGetCUBIN``), never PTX: the driver loads a cubin as is, while PTX
would be compiled again by the driver's own JIT, which rejects PTX from a compiler newer
than itself. ``nvrtc_version()`` names the compiler; ``ptx_of`` shows the PTX of a source
(for reading, never for loading).

**Options.** Every compilation gets ``-arch=sm_XX``, ``-std=c++17`` and, from NVRTC 12.4
on, ``--minimal`` (no textures, no device-side runtime API or kernel launches, which
generated kernels never use; it cuts the compile time of a small kernel by a third, 45
to 31 ms with NVRTC 13.5). No fast math: ``--use_fast_math`` changes results (flushes
denormals, approximate division and square root), so it is an option a caller asks for.
Functions without an execution space are not made ``__device__``
(``--device-as-default-execution-space``), so a source that compiles here also
compiles with ``nvcc``. ``options`` are appended after the defaults.

**Headers.** NVRTC's search list is empty: ``#include <cuda_fp16.h>`` fails with
"could not open source file" (NVRTC 13.5; so do ``cuda_bf16.h``, ``mma.h`` and
``<cuda/std/...>``), while the math functions (``expf``, ``__expf``, ``tanhf``, ...) need
no header. Fixed-width integer types (``int64_t``, ``uint8_t``) are *not* predefined, so
a source spells them ``long long``/``unsigned char`` or defines them, rather than
including ``<cuda/std/cstdint>``. When a source includes anything, the include path is
filled in, first found first:

1. NVRTC 13.3+ carries the toolkit's headers and CCCL inside ``libnvrtc-builtins``;
   ``nvrtcInstallBundledHeaders`` extracts them once (2,377 files, 26 MB, 0.2 s for
   13.5) into ``<cache>/headers-13.5``, passed as ``-I<dir> -I<dir>/cccl``. They match
   the compiler exactly and need no toolkit, so the ``nvidia-cuda-nvrtc`` wheel alone
   compiles fp16 and bf16 kernels.
2. Otherwise a toolkit's ``include`` directory (``-I<dir>``, plus ``<dir>/cccl`` where
   it exists, which CUDA 13's ``cuda_fp16.hpp`` needs): found by ``cuda.pathfinder``
   (NVIDIA's wheels in site-packages, conda, ``CUDA_HOME``/``CUDA_PATH``,
   ``/usr/local/cuda``), else ``CUDA_HOME``, ``CUDA_PATH`` or ``/usr/local/cuda``.

**Cache.** A cubin is stored under the sha256 of the source, the final options (include
directories too), the architecture, the file name and the NVRTC version, in ``cuda``
under irc's cache directory (``$IRC_CACHE_DIR``, else ``$XDG_CACHE_HOME/irc``, else
``~/.cache/irc``; ``IRC_CACHE=off`` turns it off), and kept in memory for the process.
Entries are written and checked as :mod:`irc.core.disk_cache` describes: atomically,
with a checksum (a corrupt entry is rebuilt), a directory that cannot be written being
one warning (logger ``irc.cache``) after which the process compiles without a disk
cache.

**Errors.** A compilation failure raises :class:`CUDACompileError` (a ``CodegenError``)
whose message is the first error at ``file:line:col`` with the source line and a caret;
``err.log`` holds NVRTC's full log and ``err.source`` the source. Without the CUDA
Python bindings or NVRTC, :class:`MissingDependencyError` says
``pip install 'irc[cuda]'``. Compiling needs no GPU and no driver.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import logging
import os
import re
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Sequence

from ..core import disk_cache
from ..core.diagnostics import CodegenError, MissingDependencyError, SourceFile, Span, require

logger = logging.getLogger(__name__)

_INSTALL = "pip install 'irc[cuda]'"
_ARCH_RE = re.compile(r"^sm_(\d+)([af]?)$")
# "file(line): error: message", "file(line): warning #177-D: message", and the
# catastrophic errors that stop compilation.
_DIAGNOSTIC_RE = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<kind>(?:catastrophic )?error|warning)"
    r"(?: #[\w-]+)?: (?P<message>.*)$")
_CACHE_FORMAT = "irc-cubin/1"
_MEMORY_ENTRIES = 1024

_lock = threading.Lock()
_memory: OrderedDict[str, bytes] = OrderedDict()
_include_options: tuple[str, ...] | None = None


class CUDACompileError(CodegenError):
    """NVRTC rejected a CUDA source: the message shows the first error, ``log`` is the
    full NVRTC log, ``source`` the source compiled and ``options`` its options."""

    def __init__(self, message: str, *, span: Span | None = None, hint: str | None = None,
                 log: str = "", source: str = "", options: Sequence[str] = ()):
        self.log = log
        self.source = source
        self.options = tuple(options)
        super().__init__(message, span=span, hint=hint)

    def __reduce__(self):
        # Build workers send errors back pickled; keep the log and the source.
        return (_rebuild_compile_error, (self.message, self.span, self.hint, self.log,
                                         self.source, self.options))


def _rebuild_compile_error(message, span, hint, log, source, options) -> CUDACompileError:
    return CUDACompileError(message, span=span, hint=hint, log=log, source=source,
                            options=options)


# -- the bindings ---------------------------------------------------------------------------

def _bindings():
    """The NVRTC module of NVIDIA's CUDA Python bindings: ``cuda.bindings.nvrtc``
    (cuda-bindings 12.6+ and 13), else ``cuda.nvrtc`` (cuda-python before 12.6)."""
    return require(("cuda.bindings.nvrtc", "cuda.nvrtc"), purpose="compiling CUDA kernels",
                   package="NVIDIA's CUDA Python bindings and NVRTC", install=_INSTALL)


def _check(nvrtc, result: tuple, what: str):
    """The values of an NVRTC call's result tuple, or a CodegenError naming the call."""
    err = result[0]
    if int(err) != 0:
        _, text = nvrtc.nvrtcGetErrorString(err)
        text = text.decode() if isinstance(text, bytes) else str(text)
        raise CodegenError(f"NVRTC call {what} failed: {text}")
    rest = result[1:]
    return rest[0] if len(rest) == 1 else rest


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> tuple[int, int]:
    """The (major, minor) version of the NVRTC library, e.g. ``(13, 5)``."""
    nvrtc = _bindings()
    try:
        result = nvrtc.nvrtcVersion()
    except Exception as exc:  # noqa: BLE001 - the bindings raise RuntimeError, OSError, ... when libnvrtc cannot be loaded
        raise MissingDependencyError(
            f"the NVRTC library cannot be loaded ({exc}): {_INSTALL}") from None
    major, minor = _check(nvrtc, result, "nvrtcVersion")
    return int(major), int(minor)


@functools.lru_cache(maxsize=None)
def supported_archs() -> tuple[int, ...]:
    """The ``sm_XX`` numbers this NVRTC compiles for (``(75, 80, ..., 121)`` for 13.5)."""
    nvrtc = _bindings()
    return tuple(int(a) for a in _check(nvrtc, nvrtc.nvrtcGetSupportedArchs(),
                                        "nvrtcGetSupportedArchs"))


@functools.lru_cache(maxsize=None)
def _compiler_id() -> str:
    """NVRTC's version, with the wheel's patch version when it came from one (patch
    releases can change generated code)."""
    major, minor = nvrtc_version()
    try:
        wheel = metadata.version("nvidia-cuda-nvrtc")
    except metadata.PackageNotFoundError:
        wheel = ""
    return f"{major}.{minor}/{wheel}"


def check_arch(arch: str) -> str:
    """``arch`` (``"sm_90"``, ``"sm_90a"``, ``"sm_100f"``) if this NVRTC compiles for it;
    otherwise a CodegenError naming it and the architectures it supports."""
    m = _ARCH_RE.match(arch) if isinstance(arch, str) else None
    if m is None:
        raise CodegenError(
            f"invalid CUDA architecture {arch!r}: expected sm_<major><minor> such as "
            "'sm_80' or 'sm_90' (a cubin is built for one real architecture)",
            hint="Target('cuda -arch=sm_80') picks the architecture; irc.cuda(0)."
                 "compute_version tells the GPU's")
    supported = supported_archs()
    if int(m.group(1)) not in supported:
        major, minor = nvrtc_version()
        names = ", ".join(f"sm_{a}" for a in supported)
        raise CodegenError(f"NVRTC {major}.{minor} cannot compile for {arch}; it supports "
                           f"{names}")
    return arch


# -- options and headers --------------------------------------------------------------------

def default_options(arch: str) -> tuple[str, ...]:
    """The options every compilation gets for ``arch`` (see the module docstring)."""
    opts = [f"-arch={arch}", "-std=c++17"]
    if nvrtc_version() >= (12, 4):
        opts.append("--minimal")
    return tuple(opts)


def cache_dir() -> Path:
    """Where cubins are cached: ``cuda`` in irc's cache directory
    (:func:`irc.core.disk_cache.cache_root`)."""
    return disk_cache.cache_root() / "cuda"


def _user_id() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else "user"


def _install_bundled_headers(nvrtc) -> Path | None:
    """NVRTC 13.3+'s own headers, extracted once into the cache (or the temporary
    directory when the cache cannot be written); None for older NVRTCs."""
    install = getattr(nvrtc, "nvrtcInstallBundledHeaders", None)
    if install is None:
        return None
    major, minor = nvrtc_version()
    candidates = [cache_dir() / f"headers-{major}.{minor}",
                  Path(tempfile.gettempdir()) / f"irc-{_user_id()}-nvrtc-headers-{major}.{minor}"]
    for path in candidates:
        # 0 skips an installation whose version marker matches; 1 (FORCE_OVERWRITE)
        # repairs one whose files were deleted since.
        for flags in (0, 1):
            try:
                result = install(str(path).encode(), flags)
            except Exception as exc:  # noqa: BLE001 - an NVRTC without bundled headers raises, depending on the bindings' version
                logger.debug("nvrtcInstallBundledHeaders(%s) raised %s", path, exc)
                return None
            if int(result[0]) != 0:
                logger.debug("nvrtcInstallBundledHeaders(%s) failed: %s", path, result)
                break
            if (path / "cuda_fp16.h").is_file():
                return path
    return None


def _toolkit_include_dir() -> Path | None:
    """A CUDA toolkit's include directory holding ``cuda_fp16.h``."""
    found: list[str] = []
    try:
        pathfinder = importlib.import_module("cuda.pathfinder")
        locate = getattr(pathfinder, "locate_nvidia_header_directory", None)
        if locate is not None:
            located = locate("cudart")
            if located is not None:
                found.append(located.abs_path)
        else:
            hit = pathfinder.find_nvidia_header_directory("cudart")
            if hit:
                found.append(hit)
    except Exception as exc:  # noqa: BLE001 - cuda.pathfinder is optional and its search may fail in many ways
        logger.debug("cuda.pathfinder found no CUDA headers: %s", exc)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            found.append(os.path.join(os.environ[var], "include"))
    found.append("/usr/local/cuda/include")
    for d in found:
        if os.path.isfile(os.path.join(d, "cuda_fp16.h")):
            return Path(d)
    return None


def include_options() -> tuple[str, ...]:
    """``-I`` options that make ``#include <cuda_fp16.h>``, ``<cuda_bf16.h>``, ... work
    (empty when no headers are found); looked up once per process."""
    global _include_options
    with _lock:
        if _include_options is not None:
            return _include_options
    nvrtc = _bindings()
    root = _install_bundled_headers(nvrtc) or _toolkit_include_dir()
    opts: tuple[str, ...] = ()
    if root is not None:
        dirs = [root] + ([root / "cccl"] if (root / "cccl").is_dir() else [])
        opts = tuple(f"-I{d}" for d in dirs)
        logger.debug("NVRTC include path: %s", " ".join(opts))
    with _lock:
        _include_options = opts
    return opts


def _final_options(source: str, arch: str, options: Sequence[str]) -> tuple[str, ...]:
    extra = tuple(str(o) for o in options)
    includes = include_options() if "#include" in source else ()
    return default_options(arch) + includes + extra


# -- compilation ----------------------------------------------------------------------------

def _log_of(nvrtc, prog) -> str:
    size = _check(nvrtc, nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
    buf = _out_buffer(size)
    _check(nvrtc, nvrtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
    return bytes(buf).rstrip(b"\x00").decode(errors="replace").strip()


def _out_buffer(size) -> bytearray:
    """A fresh buffer for NVRTC to write ``size`` bytes into. Never ``bytes``: one-byte
    ``bytes`` objects are interpreter-wide singletons (an empty log has size 1), and
    NVRTC writing its terminating NUL into ``b" "`` corrupts every later use of it."""
    return bytearray(int(size))


def _first_error(log: str, source: str, name: str) -> tuple[str, Span | None, int]:
    """The first error of an NVRTC log (message and span into ``source``), with the
    number of errors."""
    lines = log.splitlines()
    errors = []
    for i, line in enumerate(lines):
        m = _DIAGNOSTIC_RE.match(line)
        if m and m.group("kind") != "warning":
            errors.append((i, m))
    if not errors:
        first = next((ln for ln in lines if "error" in ln), lines[0] if lines else "")
        return first.strip() or "NVRTC reported no diagnostic", None, 0
    i, m = errors[0]
    message = f"{m.group('kind')}: {m.group('message')}"
    lineno = int(m.group("line"))
    if m.group("file") != name:
        return f"{m.group('file')}:{lineno}: {message}", None, len(errors)
    column = 1
    # NVRTC echoes the line indented by two spaces, then a caret under the column.
    if i + 2 < len(lines) and lines[i + 2].strip() == "^":
        column = max(1, lines[i + 2].index("^") - 1)
    return message, Span(SourceFile(name, source), lineno, column), len(errors)


def _compile_error(log: str, source: str, name: str, options: Sequence[str]
                   ) -> CUDACompileError:
    message, span, count = _first_error(log, source, name)
    hints = []
    if count > 1:
        hints.append(f"{count - 1} more error(s) in the full NVRTC log (the exception's "
                     ".log)")
    if "could not open source file" in log or "cannot open source file" in log:
        hints.append("NVRTC found no CUDA headers: install nvidia-cuda-nvrtc>=13.3 (it "
                     "bundles them) or a CUDA toolkit (CUDA_HOME)")
    return CUDACompileError(f"CUDA compilation failed: {message}", span=span,
                            hint="; ".join(hints) or None, log=log, source=source,
                            options=options)


@contextlib.contextmanager
def _compiled_program(source: str, name: str, options: Sequence[str]):
    """Compile ``source`` with NVRTC; yields the bindings, the program and its log (a
    CUDACompileError when compilation fails); the program is destroyed after."""
    nvrtc = _bindings()
    nvrtc_version()  # a clear error when the library cannot be loaded
    prog = _check(nvrtc, nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []),
                  "nvrtcCreateProgram")
    try:
        encoded = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        log = _log_of(nvrtc, prog)
        if int(err) != 0:
            if int(err) == int(nvrtc.nvrtcResult.NVRTC_ERROR_INVALID_OPTION):
                raise CUDACompileError(
                    f"NVRTC rejected the options {' '.join(options)}: {log}", log=log,
                    source=source, options=options)
            raise _compile_error(log, source, name, options)
        yield nvrtc, prog, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _compile_with_nvrtc(source: str, name: str, options: Sequence[str], ptx: bool
                        ) -> bytes:
    """One NVRTC compilation: the cubin (or PTX text when ``ptx``) of ``source``."""
    with _compiled_program(source, name, options) as (nvrtc, prog, log):
        if log:
            logger.debug("NVRTC messages for %s:\n%s", name, log)
        if ptx:
            size = _check(nvrtc, nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
            buf = _out_buffer(size)
            _check(nvrtc, nvrtc.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
            return bytes(buf).rstrip(b"\x00")
        size = _check(nvrtc, nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        buf = _out_buffer(size)
        _check(nvrtc, nvrtc.nvrtcGetCUBIN(prog, buf), "nvrtcGetCUBIN")
        return bytes(buf)


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one kernel: ``registers`` per thread, ``stack_bytes`` of
    its frame, ``spill_store_bytes`` / ``spill_load_bytes`` (registers spilled to local
    memory) and static ``shared_bytes``."""

    registers: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    shared_bytes: int


_ENTRY_RE = re.compile(r"Compiling entry function '([^']+)'")
_FRAME_RE = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes "
                       r"spill loads")
_USED_RE = re.compile(r"Used (\d+) registers")
_SMEM_RE = re.compile(r"(\d+) bytes smem")


def kernel_resources(source: str, arch: str = "sm_90", name: str = "kernel.cu"
                     ) -> dict[str, KernelResources]:
    """Per ``__global__`` function of ``source``, what ptxas reports when NVRTC compiles it
    for ``arch`` (``--ptxas-options=-v``; not cached). Needs no GPU."""
    arch = check_arch(arch)
    with _compiled_program(source, name, _final_options(source, arch,
                                                        ["--ptxas-options=-v"])) as compiled:
        log = compiled[2]
    out: dict[str, KernelResources] = {}
    kernel, frame = None, (0, 0, 0)
    for line in log.splitlines():
        if m := _ENTRY_RE.search(line):
            kernel, frame = m.group(1), (0, 0, 0)
        elif (m := _FRAME_RE.search(line)) and kernel is not None:
            frame = tuple(int(g) for g in m.groups())
        elif (m := _USED_RE.search(line)) and kernel is not None:
            smem = _SMEM_RE.search(line)
            out[kernel] = KernelResources(int(m.group(1)), *frame,
                                          int(smem.group(1)) if smem else 0)
            kernel = None
    return out


# -- the cache ------------------------------------------------------------------------------

def _cache_key(source: str, name: str, options: Sequence[str], arch: str) -> str:
    payload = json.dumps([_CACHE_FORMAT, _compiler_id(), arch, name, list(options), source])
    return hashlib.sha256(payload.encode()).hexdigest()


def _read_entry(path: Path) -> bytes | None:
    """The cubin stored at ``path``; None when missing, unreadable or corrupt."""
    cubin = disk_cache.read_entry(path, "cubin")
    if cubin is not None and not cubin.startswith(b"\x7fELF"):
        logger.info("cached cubin %s is not an ELF file; compiling again", path)
        return None
    return cubin


def compile_cuda(source: str, *, arch: str = "sm_90", options: Sequence[str] = (),
                 name: str = "irc_kernels.cu") -> bytes:
    """Compile CUDA C ``source`` with NVRTC to a cubin for ``arch`` (cached).

    ``options`` are NVRTC options added after the defaults (``-arch``, ``-std=c++17``,
    ``--minimal``); ``name`` is the file name error messages show. Kernels meant to be
    looked up by name are declared ``extern "C" __global__``.

    >>> cubin = compile_cuda('extern "C" __global__ void k(float* x) { x[0] = 1; }')
    >>> cubin[:4]
    b'\\x7fELF'
    """
    if not isinstance(source, str):
        raise CodegenError(f"compile_cuda takes the CUDA source as a str, got "
                           f"{type(source).__name__}")
    _bindings()  # first, so that a missing package is what the error says
    check_arch(arch)
    final = _final_options(source, arch, options)
    key = _cache_key(source, name, final, arch)
    with _lock:
        hit = _memory.get(key)
        if hit is not None:
            _memory.move_to_end(key)
            return hit
    path = cache_dir() / f"{key}.cubin"
    cubin = _read_entry(path) if disk_cache.enabled() else None
    if cubin is None:
        cubin = _compile_with_nvrtc(source, name, final, ptx=False)
        if disk_cache.enabled():
            disk_cache.write_entry(path, cubin, "CUDA kernel")
    with _lock:
        _memory[key] = cubin
        while len(_memory) > _MEMORY_ENTRIES:
            _memory.popitem(last=False)
    return cubin


def ptx_of(source: str, *, arch: str = "sm_90", options: Sequence[str] = (),
           name: str = "irc_kernels.cu") -> str:
    """The PTX assembly NVRTC generates for ``source`` (``compute_XX`` of ``arch``), to
    read; kernels are loaded from :func:`compile_cuda`'s cubin."""
    check_arch(arch)
    virtual = "compute_" + arch[len("sm_"):]
    final = tuple(o if not o.startswith("-arch=") else f"-arch={virtual}"
                  for o in _final_options(source, arch, options))
    return _compile_with_nvrtc(source, name, final, ptx=True).decode()


def clear_memory_cache() -> None:
    """Forget the cubins kept in memory (the disk cache stays)."""
    with _lock:
        _memory.clear()
