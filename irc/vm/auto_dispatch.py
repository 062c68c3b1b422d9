"""``irc.compile(..., dispatch="auto")``: offload a subgraph to a library only where the
library was measured faster than irc's own build of it, on this machine.

1. The candidate patterns are those of the installed libraries for the target: on a CPU
   ``dnnl`` (oneDNN, when its wheel is installed) then ``blas`` (when
   ``scipy-openblas32`` is); on a CUDA target ``cublas``. ``FuseOpsByPattern`` makes each
   match a composite function.
2. Each composite function is compiled alone twice (weights bound as in the model):
   through its library, and by irc's default pipeline; both run in the VM on random
   inputs and the faster wins. Decisions are cached on disk, keyed by the function's
   printed form (operators, attributes, shapes, dtypes; not the weights' values), the
   pattern, the target, the host CPU and the versions of irc and of the library's wheel,
   so a shape is measured once per machine and installation
   (``dispatch.json`` in irc's cache directory, :func:`irc.core.disk_cache.cache_root`).
3. The model is fused again with the patterns refusing the matches irc won, and
   ``RunCodegen`` builds the library modules.

A subgraph its library cannot take (its code generator refuses it, or building or
measuring it fails with an irc error) stays with irc's kernels, with a warning on the
``irc.dispatch`` logger; so does every subgraph a library cannot compile when a backend
is named explicitly (:func:`fuse_and_codegen`, used by ``irc.compile(...,
dispatch=...)``). A CUDA target with no GPU to measure on dispatches nothing (with a
warning); the measurement needs the device.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import tempfile
import threading
import warnings
from typing import Any, Callable

import numpy as np

from .. import passes
from ..core import disk_cache
from ..core.diagnostics import IRCError
from ..core.module import IRModule
from ..core.target import Target, host_cpu_model
from ..core.version import __version__
from ..dispatch import PatternEntry, get_patterns_with_prefix
from ..dispatch.codegen import get_codegen
from ..dispatch.table import PatternCheckContext, unavailable_reason
from ..ir.expr import Call, Function, GlobalVar, SeqExpr, VarBinding
from ..ir.struct_info import TensorStructInfo
from ..runtime import cpu, cuda, tensor
from .vm import VirtualMachine

_lock = threading.Lock()
logger = logging.getLogger("irc.dispatch")


def candidate_patterns(target: Target) -> list[PatternEntry]:
    """The patterns ``dispatch="auto"`` considers for ``target``: those of the libraries
    installed here, in priority order."""
    if target.kind.name == "cuda":
        has_cuda = importlib.util.find_spec("cuda") is not None
        backends = [b for b, ok in (("cudnn", has_cuda and unavailable_reason("cudnn") is None),
                                    ("cublas", has_cuda)) if ok]
    else:
        backends = [b for b, ok in (("dnnl", unavailable_reason("dnnl") is None),
                                    ("blas", importlib.util.find_spec("scipy_openblas32")
                                     is not None)) if ok]
    out: list[PatternEntry] = []
    for b in backends:
        out.extend(get_patterns_with_prefix(b + "."))
    return out


def cache_path() -> str:
    """Where dispatch decisions are cached."""
    return str(disk_cache.cache_root() / "dispatch.json")


def _load_cache(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        warnings.warn(f"ignoring the dispatch cache {path}: {err}", stacklevel=3)
        return {}


def _save_cache(path: str, data: dict[str, Any]) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError as err:  # a read-only home: decisions are simply not kept
        warnings.warn(f"cannot write the dispatch cache {path}: {err}", stacklevel=3)


def _standalone(func: Function) -> IRModule:
    """A composite function as a module's ``main`` (its dispatch attributes dropped)."""
    attrs = {k: v for k, v in func.attrs.items()
             if k not in ("Composite", "Codegen", "Primitive", "global_symbol")}
    return IRModule(functions={"main": func.replace(attrs=attrs)})


def _time(ex: Any, args: list[np.ndarray], device: Any) -> float:
    """The median time of an executable's ``main`` on ``args``."""
    vm = VirtualMachine(ex, device)
    targs = [tensor(a, device) for a in args]
    return float(vm.time_evaluator("main", device, number=3, repeat=3,
                                   min_repeat_ms=20)(*targs).median)


def _measure(func: Function, pattern: str, target: Target, device: Any,
             compile_fn: Callable[..., Any]) -> dict[str, Any]:
    mod = _standalone(func)
    rng = np.random.default_rng(0)
    args = []
    for p in func.params:
        sinfo = p.struct_info
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None or \
                not all(hasattr(d, "value") for d in sinfo.shape):
            raise IRCError(f"dispatch='auto': cannot measure {pattern}: a parameter of "
                           "unknown shape")
        shape = [int(d.value) for d in sinfo.shape]
        args.append(rng.standard_normal(shape).astype(sinfo.dtype))
    library = compile_fn(mod, target=target, dispatch=[pattern])
    if not library.external:  # the code generator refused it (logged by the build)
        return {"pattern": pattern, "library_s": None, "irc_s": None, "choice": "irc",
                "reason": "the library cannot compile it"}
    lib_s = _time(library, args, device)
    irc_s = _time(compile_fn(mod, target=target, dispatch=None), args, device)
    return {"pattern": pattern, "library_s": lib_s, "irc_s": irc_s,
            "choice": "library" if lib_s < irc_s else "irc"}


# The wheels each backend runs on: a decision is measured again when one changes.
_LIBRARY_DISTRIBUTIONS = {
    "dnnl": ("onednn-cpu-gomp", "onednn"),
    "blas": ("scipy-openblas32",),
    "cublas": ("nvidia-cublas", "nvidia-cublas-cu12"),
    "cudnn": ("nvidia-cudnn-cu13",),
}


def _installed(names: tuple[str, ...]) -> str:
    out = []
    for name in names:
        try:
            out.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return ",".join(out)


def _key(func: Function, pattern: str, target: Target) -> str:
    text = _standalone(func).script()
    libs = _installed(_LIBRARY_DISTRIBUTIONS.get(pattern.partition(".")[0], ()))
    raw = "\n".join([pattern, libs, __version__, str(target), host_cpu_model(), text])
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def auto_dispatch(mod: IRModule, target: Target, compile_fn: Callable[..., Any],
                  report: list | None = None) -> IRModule:
    """``mod`` with the subgraphs where a library wins offloaded to it (module docstring);
    ``compile_fn`` is ``irc.compile`` (builds each candidate to measure it); each decision
    is appended to ``report`` when given."""
    entries = candidate_patterns(target)
    if not entries:
        return mod
    if target.kind.name == "cuda":
        device = cuda(0)
        if not device.exist:
            warnings.warn("dispatch='auto' needs the GPU to measure on; nothing is "
                          "dispatched", stacklevel=3)
            return mod
    else:
        device = cpu(0)
    path = cache_path()
    with _lock:
        cache = _load_cache(path)
        measured: set[int] = set()
        losers: set[int] = set()
        changed = False
        kept = entries
        # Refusing a match can let a smaller pattern match part of it: fuse again until
        # every remaining match has been decided.
        while True:
            fused = passes.FuseOpsByPattern(kept, annotate_codegen=True)(mod)
            composites = {gv: f for gv, f in fused.functions.items()
                          if isinstance(f, Function) and "Composite" in f.attrs}
            new = [(root, gv) for root, gv in _call_sites(fused, composites)
                   if id(root) not in measured]
            if not new:
                break
            for root, gv in new:
                measured.add(id(root))
                func = composites[gv]
                pattern = str(func.attrs["Composite"])
                key = _key(func, pattern, target)
                decision = cache.get(key)
                if not isinstance(decision, dict) or \
                        decision.get("choice") not in ("library", "irc"):
                    try:
                        decision = _measure(func, pattern, target, device, compile_fn)
                    except IRCError as err:  # not cached: the next compile tries again
                        logger.warning("dispatch='auto': measuring %s (%s) failed, so it "
                                       "runs on irc's kernels: %s", gv.name_hint, pattern,
                                       err)
                        decision = {"pattern": pattern, "library_s": None, "irc_s": None,
                                    "choice": "irc", "reason": str(err)}
                    else:
                        cache[key] = decision
                        changed = True
                if report is not None:
                    report.append({"function": gv.name_hint, **decision})
                if decision["choice"] == "irc":
                    losers.add(id(root))
            kept = [_refusing(e, losers) for e in entries]
        if changed:
            _save_cache(path, cache)
    return fuse_and_codegen(mod, kept, fused)


def fuse_and_codegen(mod: IRModule, entries: list[PatternEntry],
                     fused: IRModule | None = None) -> IRModule:
    """``mod`` with the matches of ``entries`` made composite functions and compiled by
    their libraries (``FuseOpsByPattern(annotate_codegen=True)`` — already done when
    ``fused`` is given —, then ``RunCodegen``). A match its library cannot compile (an
    irc error from the backend's code generator) is refused, with a warning on the
    ``irc.dispatch`` logger naming it and the cause, and the entries fused again without
    it: a smaller pattern may take part of it, the rest runs on irc's kernels. An error
    no single match reproduces (a backend for another device) is raised."""
    refused: set[tuple[int, str]] = set()
    while True:
        if fused is None:
            fused = passes.FuseOpsByPattern([_refusing_pairs(e, refused) for e in entries],
                                            annotate_codegen=True)(mod)
        try:
            return passes.RunCodegen()(fused)
        except IRCError:
            failed = _failed_matches(fused)
            if not failed - refused:  # no match fails alone: the error is not a match's
                raise
        refused |= failed
        fused = None


def _failed_matches(fused: IRModule) -> set[tuple[int, str]]:
    """``(root variable id, pattern)`` of each composite function of ``fused`` that its
    backend's code generator refuses alone, each logged."""
    composites = {gv: f for gv, f in fused.functions.items()
                  if isinstance(f, Function) and "Codegen" in f.attrs}
    failed: set[tuple[int, str]] = set()
    for root, gv in _call_sites(fused, composites):
        f = composites[gv]
        symbol = str(f.attrs.get("global_symbol") or gv.name_hint)
        try:
            get_codegen(str(f.attrs["Codegen"]))([(symbol, f)])
        except IRCError as err:
            failed.add((id(root), str(f.attrs["Composite"])))
            logger.warning("library dispatch: %s; %s (pattern %s, computing %s) runs on "
                           "irc's kernels instead", err, gv.name_hint,
                           f.attrs["Composite"], root.name_hint)
    return failed


def _call_sites(mod: IRModule, composites: dict[GlobalVar, Function]
                ) -> list[tuple[Any, GlobalVar]]:
    """``(root variable, composite)`` for each call of a composite function: the call is
    bound to the variable the match's root had in the original module."""
    out = []
    for f in mod.functions.values():
        if not isinstance(f, Function) or "Composite" in f.attrs:
            continue
        body = f.body
        if not isinstance(body, SeqExpr):
            continue
        for block in body.blocks:
            for b in block.bindings:
                if isinstance(b, VarBinding) and isinstance(b.value, Call) and \
                        isinstance(b.value.op, GlobalVar) and b.value.op in composites:
                    out.append((b.var, b.value.op))
    return out


def _refusing_pairs(entry: PatternEntry, refused: set[tuple[int, str]]) -> PatternEntry:
    """``entry`` whose check also refuses its matches rooted at a variable paired with
    its name in ``refused``."""
    check = entry.check

    def accepted(ctx: PatternCheckContext) -> bool:
        if (id(ctx.match.root), entry.name) in refused:
            return False
        return check is None or bool(check(ctx))

    return PatternEntry(entry.name, entry.pattern,
                        {k: v for k, v in entry.annotations.items() if k != "root"},
                        accepted)


def _refusing(entry: PatternEntry, losers: set[int]) -> PatternEntry:
    """``entry`` whose check also refuses matches rooted at a variable in ``losers``."""
    check = entry.check

    def decided(ctx: PatternCheckContext) -> bool:
        if id(ctx.match.root) in losers:
            return False
        return check is None or bool(check(ctx))

    return PatternEntry(entry.name, entry.pattern,
                        {k: v for k, v in entry.annotations.items() if k != "root"}, decided)
