"""``irc.compile``: a graph-level IRModule to a VM Executable.

Steps: run the pipeline (``passes.get_pipeline("default")`` unless another is given;
it legalizes operators to loop functions and optimizes), compile every PrimFunc of the
result for the target into one kernel library (lowering block-form functions first), and
compile every graph function to bytecode (``irc/vm/compiler.py``).
"""

from __future__ import annotations

from typing import Any

from .. import passes
from ..codegen import build as build_kernels
from ..core.diagnostics import BuildError, IRWellFormedError, MissingDependencyError
from ..core.gc_pauses import with_fewer_gc_pauses
from ..core.module import IRModule
from ..core.target import Target
from ..dispatch import (
    PatternEntry,
    check_backend_target,
    get_pattern,
    get_patterns_with_prefix,
    unavailable_reason,
)
from ..ir.expr import Function
from ..ir.well_formed import well_formed
from ..runtime import Module
from ..runtime.external import ExternalModule
from ..tir.analysis.flops import flop_count
from ..tir.stmt import PrimFunc
from .auto_dispatch import auto_dispatch, candidate_patterns, fuse_and_codegen
from .compiler import ConstantPool, compile_functions
from .executable import Executable


@with_fewer_gc_pauses
def compile(mod: Any, target: Any = "llvm", pipeline: Any = "default",
            params: dict | None = None, dispatch: Any = None,
            check_bounds: bool = False) -> Executable:
    """Compile ``mod`` for ``target`` and return an :class:`Executable`.

    ``pipeline`` is a pipeline name for ``passes.get_pipeline`` (``"default"``,
    ``"zero"``), a pass, or None to take the module as it is (it must then contain only
    what the VM executes: call_tir of PrimFuncs, packed calls, tuples, constants).
    ``params`` binds weights by parameter name first (``passes.BindParams``).
    ``dispatch`` offloads subgraphs to libraries before the pipeline (library dispatch,
    ``irc.dispatch``): a pattern name or backend prefix, or a list of them, in priority
    order (``"blas"``, ``["cublas.matmul_transposed_bias_relu", "cublas"]``); ``"auto"``
    offloads a subgraph only where its library was measured faster than irc's own build
    of it on this machine (``irc.vm.auto_dispatch``; decisions cached per shape); None or
    ``"none"`` (the default) dispatches nothing. Before dispatch the module is put in the
    form libraries take (:func:`prepare_for_dispatch`): NHWC convolutions when oneDNN is
    among the patterns, batch norms folded into the convolutions before them.
    ``check_bounds`` builds every kernel with run-time index checks (``irc.build``).
    A module that is not well formed (``irc.ir.well_formed``) is refused first with an
    :class:`~irc.IRWellFormedError` naming the function and the problem.
    """
    if isinstance(mod, Function):
        mod = IRModule(functions={"main": mod})
    if not isinstance(mod, IRModule):
        raise BuildError(f"irc.compile expects an IRModule, got {type(mod).__name__}")
    _check_well_formed(mod)
    t = Target.canon(target)
    if params:
        mod = passes.BindParams(_entry_name(mod), params)(mod)
    patterns = candidate_patterns(t) if dispatch == "auto" else dispatch_patterns(dispatch, t)
    if patterns:
        mod = prepare_for_dispatch(mod, patterns)
    if dispatch == "auto":
        with t:
            mod = auto_dispatch(mod, t, compile)
    elif patterns:
        with t:  # library epilogues compile for the target
            mod = fuse_and_codegen(mod, patterns)
    if pipeline is not None:
        p = passes.get_pipeline(pipeline) if isinstance(pipeline, str) else pipeline
        if not callable(p):
            raise BuildError(f"irc.compile: pipeline must be a name ('default', 'zero'), a "
                             f"pass, or None, got {type(pipeline).__name__}")
        with t:
            mod = p(mod)
    return link(mod, t, check_bounds=check_bounds)


def _check_well_formed(mod: IRModule) -> None:
    """Refuse a module that breaks the IR's invariants (``irc.ir.well_formed``: a
    DataflowVar used outside its block, a variable used before its binding, an ill-typed
    call, ...) before any pass relies on them."""
    try:
        well_formed(mod)
    except IRWellFormedError as err:
        raise IRWellFormedError(f"irc.compile: the module is not well formed: {err.message}",
                                span=err.span, node=err.node,
                                hint=err.hint or "fix the function it names; "
                                "irc.ir.well_formed(mod) checks a module") from None


def dispatch_patterns(dispatch: Any, target: Any = None) -> list[PatternEntry]:
    """The pattern entries ``irc.compile(..., dispatch=...)`` names (see there); with a
    ``target``, a backend whose library runs on another device is a BuildError."""
    if dispatch is None or dispatch == "none":
        return []
    items = [dispatch] if isinstance(dispatch, str) else dispatch
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise BuildError(f"irc.compile: dispatch must be 'none', a pattern name or backend "
                         f"prefix, or a list of them; got {dispatch!r}")
    out: list[PatternEntry] = []
    for item in items:
        if item == "auto":
            raise BuildError("irc.compile: dispatch='auto' stands alone; it cannot be "
                             "combined with named patterns",
                             hint="dispatch='auto', or a list of names such as "
                                  "['dnnl', 'blas']")
        if target is not None:
            check_backend_target(item.partition(".")[0], target, f"irc.compile: dispatch="
                                 f"{item!r}")
        reason = unavailable_reason(item.partition(".")[0])
        if reason is not None:
            raise MissingDependencyError(f"irc.compile: dispatch={item!r}: {reason}")
        found = get_patterns_with_prefix(item if "." in item else item + ".")
        if any(e.name == item for e in found):
            found = [get_pattern(item)]  # a full name: that pattern alone
        elif not found:
            found = [get_pattern(item)]  # an IRCError naming close names
        out.extend(e for e in found if e not in out)
    return out


# oneDNN runs channels-last convolutions as they are; NCHW ones it must reorder to its
# blocked layout and back around every call (it has only an im2col gemm for plain NCHW).
CHANNELS_LAST = {"nn.conv2d": ["NHWC", "OIHW"]}


def prepare_for_dispatch(mod: IRModule, patterns: list[PatternEntry]) -> IRModule:
    """``mod`` in the form libraries take: in A-normal form (``passes.Normalize``: the
    ONNX importer nests calls, ``add(conv2d(x, w), reshape(b))``, and patterns match
    through bound variables), convolutions converted to NHWC when oneDNN may take them
    (``passes.ConvertLayout``; permutations at the ends of convolution chains only),
    then batch norms folded into the constant-weight convolutions before them
    (``passes.FoldBatchNormToConv2D``), so a convolution with batch norm is one with a
    bias."""
    mod = passes.Normalize()(mod)
    if any(e.name.startswith("dnnl.conv2d") for e in patterns):
        mod = passes.ConvertLayout(CHANNELS_LAST)(mod)
    return passes.FoldBatchNormToConv2D()(mod)


def _entry_name(mod: IRModule) -> str:
    graph = [gv.name_hint for gv, f in mod.functions.items() if isinstance(f, Function)]
    if "main" in graph or not graph:
        return "main"
    return graph[0]


def link(mod: IRModule, target: Any = "llvm", check_bounds: bool = False) -> Executable:
    """Build the kernels and bytecode of an already-optimized module (with run-time index
    checks in every kernel when ``check_bounds``)."""
    t = Target.canon(target)
    kernels = {}
    flops = {}
    for gv, f in mod.functions.items():
        if isinstance(f, PrimFunc):
            kernels[gv.name_hint] = f.with_attr("global_symbol", gv.name_hint)
            n = flop_count(f)  # -1 where unknown (symbolic extents)
            if n >= 0:
                flops[gv.name_hint] = n
    consts = ConstantPool()
    functions = compile_functions(mod, consts)
    if not functions:
        raise BuildError("the module has no graph-level function to run; use irc.build for "
                         "modules of loop functions")
    if kernels:
        lib = build_kernels(IRModule(functions=kernels), target=t, check_bounds=check_bounds,
                            disk_cache=True)
    else:
        lib = Module(b"", {}, [], str(t))
    external = list(mod.attrs.get("external_mods", ()))
    for m in external:
        if not isinstance(m, ExternalModule):
            raise BuildError(f"the module attribute external_mods holds a "
                             f"{type(m).__name__}, not a library module made by RunCodegen")
        check_backend_target(m.kind, t, "irc.compile: the module's library functions")
    return Executable(functions, consts.values, lib, str(t), external, flops)

