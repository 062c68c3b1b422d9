"""Kernel signatures: what a compiled function expects, in a JSON-friendly form.

A :class:`KernelSignature` lists a kernel's buffer parameters (dtype, shape, strides),
the symbolic shape variables the runtime binds from the arrays' shapes, its scalar
parameters, and the user-visible parameter order. Dimensions are encoded as an ``int``
(a constant), a ``str`` (a shape variable) or a list ``[op, a, b]`` (an expression of
those, op in add/sub/mul/floordiv/floormod/min/max).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

from ..core.diagnostics import CodegenError
from ..tir import expr as E

Dim = Union[int, str, list]

_OPS = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "FloorDiv": "floordiv", "FloorMod": "floormod",
    "Min": "min", "Max": "max", "Div": "floordiv", "Mod": "floormod",
}


def encode_dim(e: Any, var_name: Callable[[Any], str]) -> Dim:
    """Encode an integer loop-IR expression (a shape dimension) as a :data:`Dim`."""
    if isinstance(e, int):
        return e
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Var):
        return var_name(e)
    if isinstance(e, E.Cast):
        return encode_dim(e.value, var_name)
    op = _OPS.get(type(e).__name__)
    if op is not None:
        return [op, encode_dim(e.a, var_name), encode_dim(e.b, var_name)]
    raise CodegenError(f"buffer dimension {e!r} is not an integer expression of shape "
                       "variables", node=e)


def eval_dim(d: Dim, env: dict[str, int]) -> int | None:
    """The value of an encoded dimension, or None when a variable is unbound."""
    if type(d) is int:
        return d
    if type(d) is str:
        return env.get(d)
    a, b = eval_dim(d[1], env), eval_dim(d[2], env)
    if a is None or b is None:
        return None
    op = d[0]
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "floordiv":
        return a // b if b else None
    if op == "floormod":
        return a % b if b else None
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    raise ValueError(f"unknown dimension operator {op!r}")


def format_dim(d: Dim) -> str:
    """A dimension as text (``n``, ``128``, ``(n * 2)``)."""
    if isinstance(d, (int, str)):
        return str(d)
    sym = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%"}.get(d[0])
    if sym is None:
        return f"{d[0]}({format_dim(d[1])}, {format_dim(d[2])})"
    return f"({format_dim(d[1])} {sym} {format_dim(d[2])})"


@dataclass(frozen=True)
class BufferParamSpec:
    """A buffer parameter: dtype, shape and strides (None = compact row-major).

    ``written`` is False when the kernel never writes the buffer (then a read-only array
    may be passed) and True when it may; a stored signature without the field counts as
    True.
    """

    name: str
    dtype: str
    shape: tuple[Dim, ...]
    strides: tuple[Dim, ...] | None = None
    elem_offset: int = 0
    written: bool = True

    def shape_text(self) -> str:
        """The declared shape as text, e.g. ``(n, 128)``."""
        inner = ", ".join(format_dim(d) for d in self.shape)
        return f"({inner}{',' if len(self.shape) == 1 else ''})"


@dataclass(frozen=True)
class ScalarParamSpec:
    """A scalar parameter (``handle`` for a raw pointer)."""

    name: str
    dtype: str


# C library functions compiled kernels may call (libm through LLVM's math intrinsics,
# libc's memory functions, OpenMP's entry): a kernel whose name is one of these is
# emitted under another symbol, or its own calls would bind to itself.
_C_SYMBOLS = frozenset(
    base + suffix
    for base in ("exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow",
                 "sqrt", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
                 "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc",
                 "tgamma", "lgamma", "fmod", "remainder", "hypot", "copysign", "floor",
                 "ceil", "round", "roundeven", "trunc", "rint", "nearbyint", "fabs", "fmin",
                 "fmax", "ldexp", "frexp", "modf", "sincos", "fma")
    for suffix in ("", "f", "l")) | frozenset(
    ("memcpy", "memset", "memmove", "memcmp", "malloc", "calloc", "realloc", "free",
     "aligned_alloc", "posix_memalign", "abort", "exit", "abs", "printf", "puts",
     "GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads"))


def kernel_symbol(name: str) -> str:
    """The native symbol of the kernel named ``name``: the name itself, unless it is a C
    library function kernels call (a kernel named ``exp`` computing in float64 calls
    libm's ``exp``); those get the prefix ``irc.kernel.``."""
    return f"irc.kernel.{name}" if name in _C_SYMBOLS else name


@dataclass(frozen=True)
class KernelSignature:
    """How to call one compiled kernel.

    ``order`` gives the user-visible parameters as ``("buffer", i)`` / ``("scalar", i)``;
    the native ABI passes all buffers, then ``shape_vars`` (int64), then scalars.
    """

    name: str
    buffers: tuple[BufferParamSpec, ...]
    shape_vars: tuple[tuple[str, str], ...]
    scalars: tuple[ScalarParamSpec, ...]
    order: tuple[tuple[str, int], ...]

    @property
    def num_args(self) -> int:
        """Number of user-visible parameters."""
        return len(self.order)

    def param_names(self) -> list[str]:
        """Parameter names in call order."""
        return [self.buffers[i].name if k == "buffer" else self.scalars[i].name
                for k, i in self.order]

    def to_json(self) -> dict:
        """A JSON-serializable dict (see :meth:`from_json`)."""
        return {
            "name": self.name,
            "buffers": [{"name": b.name, "dtype": b.dtype, "shape": list(b.shape),
                         "strides": None if b.strides is None else list(b.strides),
                         "elem_offset": b.elem_offset, "written": b.written}
                        for b in self.buffers],
            "shape_vars": [list(v) for v in self.shape_vars],
            "scalars": [{"name": s.name, "dtype": s.dtype} for s in self.scalars],
            "order": [list(o) for o in self.order],
        }

    @staticmethod
    def from_json(d: dict) -> KernelSignature:
        """The signature stored by :meth:`to_json`."""
        return KernelSignature(
            name=d["name"],
            buffers=tuple(BufferParamSpec(
                name=b["name"], dtype=b["dtype"], shape=tuple(b["shape"]),
                strides=None if b["strides"] is None else tuple(b["strides"]),
                elem_offset=b.get("elem_offset", 0), written=bool(b.get("written", True)))
                for b in d["buffers"]),
            shape_vars=tuple((n, t) for n, t in d["shape_vars"]),
            scalars=tuple(ScalarParamSpec(s["name"], s["dtype"]) for s in d["scalars"]),
            order=tuple((k, i) for k, i in d["order"]),
        )
