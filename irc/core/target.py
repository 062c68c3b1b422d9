"""Compilation targets: ``Target("llvm")`` (the host CPU) and ``Target("cuda")``.

A target is written as a string: a kind followed by options, each ``-key=value`` or
``-key value``::

    Target("llvm")                                  # host: -mcpu and -num-cores detected
    Target("llvm -mcpu=znver4 -num-cores 2")        # an explicit CPU
    Target("cuda")                                  # -arch=sm_90 by default

Targets compare equal when their canonical strings (``str(target)``) are equal; every API
that takes a target also takes the string (:meth:`Target.canon`). ``with Target(...):``
makes a target current for passes that need one (:meth:`Target.current`).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any, ClassVar

from .diagnostics import IRCError, did_you_mean


class TargetError(IRCError):
    """A target string that cannot be parsed or names an unknown kind or option."""


@dataclass(frozen=True)
class TargetKind:
    """The kind of a target: its name, device type and the options it accepts."""

    name: str
    device_type: str
    keys: tuple[str, ...]
    options: tuple[str, ...]


_KINDS = {
    "llvm": TargetKind("llvm", "cpu", ("cpu",),
                       ("mcpu", "mattr", "mtriple", "num-cores", "opt-level", "vector-width",
                        "vector-registers")),
    "cuda": TargetKind("cuda", "cuda", ("cuda", "gpu"),
                       ("arch", "max-num-threads", "thread-warp-size",
                        "max-shared-memory-per-block", "registers-per-block")),
}
_ALIASES = {"cpu": "llvm", "nvidia": "cuda", "gpu": "cuda"}


def _unknown_kind(name: Any, source: str) -> TargetError:
    """The error for a target kind irc does not have, with the kinds it has."""
    kinds = ", ".join(f"{k} (or {', '.join(a for a, v in _ALIASES.items() if v == k)})"
                      for k in _KINDS)
    why = ""
    if name == "c":
        why = ": irc has no C source backend; 'llvm' compiles for the host CPU"
    elif isinstance(name, str):
        why = did_you_mean(name, [*_KINDS, *_ALIASES])
    return TargetError(f"unknown target kind {name!r} in {source}{why}; the target kinds "
                       f"are {kinds}")
_INT_OPTIONS = {"num-cores", "opt-level", "vector-width", "vector-registers", "max-num-threads",
                "thread-warp-size", "max-shared-memory-per-block", "registers-per-block"}


def llvm_binding() -> Any:
    """llvmlite's LLVM bindings (``llvmlite.binding``), imported on first use: importing
    irc does not load LLVM, compiling or querying the host CPU does."""
    import llvmlite.binding  # lazy on purpose (see the docstring)

    return llvmlite.binding


@functools.lru_cache(maxsize=1)
def host_cpu_name() -> str:
    """LLVM's name for the host CPU (e.g. ``znver4``, ``emeraldrapids``)."""
    llvm = llvm_binding()
    return llvm.get_host_cpu_name()


_CPU_LIST = """
import sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
triple = sys.argv[1] or llvm.get_process_triple()
llvm.Target.from_triple(triple).create_target_machine(cpu="help")
"""


@functools.lru_cache(maxsize=8)
def known_cpus(triple: str | None = None) -> tuple[str, ...]:
    """The CPU names LLVM knows for ``triple`` (default: this machine's), as LLVM lists
    them for ``-mcpu=help``; empty when the list cannot be read. LLVM prints that list
    and ends the process, so it is read from a child process."""
    try:
        r = subprocess.run([sys.executable, "-c", _CPU_LIST, triple or ""],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ()
    names = []
    for line in (r.stdout + r.stderr).splitlines():
        parts = line.split()
        if len(parts) >= 3 and line.startswith("  ") and parts[1] == "-" \
                and parts[2] == "Select":
            names.append(parts[0])
    return tuple(names)


def _check_cpu(cpu: str, triple: Any, source: str) -> None:
    """A TargetError unless LLVM knows ``cpu`` (LLVM itself would only warn, then
    may abort the process on the code it makes for an unknown CPU)."""
    if not triple and cpu == host_cpu_name():
        return
    names = known_cpus(str(triple) if triple else None)
    if not names or cpu in names:
        return  # the list could not be read: LLVM decides
    close = difflib.get_close_matches(cpu, names, n=4)
    hint = (f"did you mean {', '.join(close)}? " if close else "") + \
        "-mcpu=native is this machine's CPU"
    raise TargetError(f"target {source!r}: LLVM does not know the CPU {cpu!r}; it knows "
                      f"{len(names)} CPUs for this target ({', '.join(names[:8])}, ...)",
                      hint=hint)


@functools.lru_cache(maxsize=1)
def host_cpu_features() -> str:
    """The host CPU's feature string in LLVM syntax (``+avx512f,+fma,...``)."""
    llvm = llvm_binding()
    return llvm.get_host_cpu_features().flatten()


def host_num_cores() -> int:
    """Number of cores this process may run on (its CPU affinity set)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


@functools.lru_cache(maxsize=1)
def host_cpu_model() -> str:
    """The marketing name of the host CPU (``/proc/cpuinfo``'s model name)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover - non-Linux
        pass
    return platform.processor() or "unknown-cpu"


def _parse(text: str) -> tuple[str, dict[str, Any]]:
    words = text.split()
    if not words:
        raise TargetError("empty target string; use e.g. 'llvm' or 'cuda'")
    kind = _ALIASES.get(words[0], words[0])
    if kind not in _KINDS:
        raise _unknown_kind(words[0], repr(text))
    options: dict[str, Any] = {}
    i = 1
    while i < len(words):
        w = words[i]
        if not w.startswith("-"):
            raise TargetError(f"target {text!r}: expected an option '-key=value', got {w!r}")
        key, eq, value = w.lstrip("-").partition("=")
        if not eq:
            if i + 1 < len(words) and not words[i + 1].startswith("-"):
                value = words[i + 1]
                i += 1
            else:
                value = "true"
        options[key] = value
        i += 1
    return kind, options


def _normalize(kind: str, options: dict[str, Any], source: str) -> dict[str, Any]:
    spec = _KINDS[kind]
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key == "keys" or key == "tag":
            continue
        if key not in spec.options:
            raise TargetError(f"target {source!r}: unknown option -{key} for kind {kind!r}; "
                              f"it accepts {', '.join('-' + o for o in spec.options)}")
        if key in _INT_OPTIONS:
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise TargetError(f"target {source!r}: option -{key} needs an integer, "
                                  f"got {value!r}") from None
            if value <= 0 and key != "opt-level":
                raise TargetError(f"target {source!r}: option -{key} must be positive")
        elif key == "mattr" and not isinstance(value, str):
            value = ",".join(value)
        out[key] = value
    if kind == "llvm":
        cpu = str(out.get("mcpu", "native"))
        if cpu == "native":
            out["mcpu"] = host_cpu_name()
        else:
            _check_cpu(cpu, out.get("mtriple"), source)
        out.setdefault("num-cores", host_num_cores())
    else:
        arch = str(out.setdefault("arch", "sm_90"))
        if not arch.startswith("sm_") or not arch[3:].isdigit():
            raise TargetError(f"target {source!r}: -arch must look like sm_80, got {arch!r}")
        for key, value in _CUDA_DEFAULTS.items():
            out.setdefault(key, value)
    return out


# Options printed only when they differ from these (so "cuda" prints short).
_CUDA_DEFAULTS = {"max-num-threads": 1024, "thread-warp-size": 32,
                  "max-shared-memory-per-block": 49152, "registers-per-block": 65536}


_state = threading.local()


class Target:
    """A compilation target: a kind (``llvm``/``cuda``) and its options.

    Examples: ``Target("llvm")``, ``Target("llvm -mcpu=znver4 -num-cores 2")``,
    ``Target("cuda -arch=sm_80")``. ``str(target)`` is canonical and complete.
    """

    _cache: ClassVar[dict[str, Target]] = {}

    def __init__(self, target: str | Target | dict) -> None:
        if isinstance(target, Target):
            self.kind, self.attrs, self._str = target.kind, dict(target.attrs), target._str
            return
        if isinstance(target, dict):
            target = dict(target)
            kind_name = target.pop("kind", None)
            if kind_name is None:
                raise TargetError("a target given as a dict needs a 'kind' entry")
            if kind_name not in _KINDS and kind_name not in _ALIASES:
                raise _unknown_kind(kind_name, "a target dict")
            kind_name = _ALIASES.get(kind_name, kind_name)
            source = f"{kind_name} (dict)"
            options = {k.replace("_", "-"): v for k, v in target.items()}
        elif isinstance(target, str):
            kind_name, options = _parse(target)
            source = target
        else:
            raise TargetError(f"a target is a string such as 'llvm' or 'cuda', got "
                              f"{type(target).__name__}")
        self.kind = _KINDS[kind_name]
        self.attrs = _normalize(kind_name, options, source)
        parts = [kind_name]
        for key in self.kind.options:
            if key in self.attrs and _CUDA_DEFAULTS.get(key) != self.attrs[key]:
                parts.append(f"-{key}={self.attrs[key]}")
        self._str = " ".join(parts)

    # -- identity -----------------------------------------------------------------
    @classmethod
    def canon(cls, target: str | Target | dict | None) -> Target:
        """The Target for ``target`` (a Target, a string or None for the current one)."""
        if target is None:
            return cls.current(allow_none=False)
        if isinstance(target, Target):
            return target
        key = target if isinstance(target, str) else None
        if key is not None:
            hit = cls._cache.get(key)
            if hit is not None:
                return hit
        t = Target(target)
        if key is not None:
            cls._cache[key] = t
        return t

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        return f"Target({self._str!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (str, dict)):
            try:
                other = Target.canon(other)
            except TargetError:
                return False
        return isinstance(other, Target) and other._str == self._str

    def __hash__(self) -> int:
        return hash(self._str)

    # -- current target -----------------------------------------------------------
    def __enter__(self) -> Target:
        stack = getattr(_state, "stack", None)
        if stack is None:
            stack = _state.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _state.stack.pop()

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The innermost target entered with ``with target:`` (None when there is none,
        or an error when ``allow_none`` is False)."""
        stack = getattr(_state, "stack", None)
        if stack:
            return stack[-1]
        if not allow_none:
            raise TargetError("no target is current; pass target=... or use "
                              "'with irc.target.Target(\"llvm\"):'")
        return None

    @staticmethod
    def from_device(device: Any) -> Target:
        """The target that runs on ``device`` (``irc.cpu()`` -> llvm, ``irc.cuda()`` -> cuda)."""
        device_type = getattr(device, "device_type", device)
        if device_type == "cpu":
            return Target("llvm")
        if device_type == "cuda":
            arch = None
            try:
                arch = device.compute_version  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - no driver: keep the default arch
                arch = None
            return Target(f"cuda -arch=sm_{arch.replace('.', '')}" if arch else "cuda")
        raise TargetError(f"no target for device {device!r}")

    # -- properties ---------------------------------------------------------------
    @property
    def keys(self) -> tuple[str, ...]:
        """Target keys (``cpu``; ``cuda``, ``gpu``) used to pick schedule rules."""
        return self.kind.keys

    @property
    def mcpu(self) -> str:
        """The LLVM CPU name (llvm targets)."""
        return str(self.attrs.get("mcpu", ""))

    @property
    def num_cores(self) -> int:
        """Threads used by parallel loops (llvm targets)."""
        return int(self.attrs.get("num-cores", 1))

    @property
    def arch(self) -> str:
        """The CUDA architecture, e.g. ``sm_90`` (cuda targets)."""
        return str(self.attrs.get("arch", ""))

    @property
    def max_num_threads(self) -> int:
        """Most threads per GPU block (cuda targets)."""
        return int(self.attrs.get("max-num-threads", 1))

    @property
    def thread_warp_size(self) -> int:
        """Threads per warp (cuda targets)."""
        return int(self.attrs.get("thread-warp-size", 1))

    @property
    def max_shared_memory_per_block(self) -> int:
        """Shared memory per GPU block in bytes (cuda targets)."""
        return int(self.attrs.get("max-shared-memory-per-block", 0))

    @property
    def host(self) -> Target | None:
        """The CPU target that drives a GPU target (None for CPU targets)."""
        return Target.canon("llvm") if self.kind.name == "cuda" else None

    def is_host_cpu(self) -> bool:
        """True for an llvm target whose CPU is the machine this process runs on."""
        return self.kind.name == "llvm" and self.mcpu == host_cpu_name()

    def llvm_features(self) -> str:
        """The LLVM feature string: the host's features when compiling for the host CPU,
        plus any ``-mattr``."""
        feats = host_cpu_features() if self.is_host_cpu() and "mtriple" not in self.attrs else ""
        mattr = self.attrs.get("mattr")
        if mattr:
            feats = f"{feats},{mattr}" if feats else str(mattr)
        return feats

    def vector_width_bits(self) -> int:
        """The preferred SIMD width in bits (``-vector-width``, else from the CPU features)."""
        if "vector-width" in self.attrs:
            return int(self.attrs["vector-width"])
        feats = self.llvm_features()
        if "+avx512f" in feats:
            return 512
        if "+avx" in feats:
            return 256
        return 128

    def vector_registers(self) -> int:
        """SIMD registers the code generator can allocate (``-vector-registers``, else from
        the CPU features): 32 with AVX-512 (zmm0-31) or on AArch64 (v0-31), 16 on other
        x86 CPUs (ymm/xmm0-15). Register-blocked micro-kernels size their accumulator
        tiles by it: a tile that needs more registers than there are spills every step."""
        if "vector-registers" in self.attrs:
            return int(self.attrs["vector-registers"])
        feats = self.llvm_features()
        if "+avx512f" in feats or "+neon" in feats or "aarch64" in str(
                self.attrs.get("mtriple", "")):
            return 32
        return 16

    def fingerprint(self) -> str:
        """A string naming the hardware this target runs on, for tuning records:
        CPU model, a hash of the feature string and the core count (or the GPU)."""
        if self.kind.name == "llvm":
            feats = hashlib.sha1(self.llvm_features().encode()).hexdigest()[:12]
            return f"cpu|{host_cpu_model()}|{self.mcpu}|feat:{feats}|cores:{self.num_cores}"
        return f"gpu|{_gpu_name()}|{self.arch}"


@functools.lru_cache(maxsize=1)
def _gpu_name() -> str:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return "unknown-gpu"
    try:
        out = subprocess.run([exe, "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.stdout.strip() else "unknown-gpu"
    except (OSError, subprocess.SubprocessError):
        return "unknown-gpu"


def create(target: str | Target | dict) -> Target:
    """Same as ``Target.canon(target)``."""
    return Target.canon(target)
