"""LLVM IR text to optimized object code for an llvm target.

The module is parsed (which verifies it), optimized with LLVM's default O3 pipeline for
the target CPU (loop and SLP vectorization, unrolling on), and emitted as a relocatable
object file; the runtime links that object (``irc.runtime.engine``), and the same bytes
are what ``Module.save`` writes.

A large module (a whole network's kernels) is compiled in parts at once
(:func:`compile_sources`): llvmlite serializes every LLVM call in a process behind one
lock, so the parts go to forked processes (``irc.core.parallel``), one per core, each
taking the next part when it is done, and the object files come back through pipes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.diagnostics import CodegenError
from ..core.parallel import fork_pull
from ..core.target import Target, llvm_binding
from ..runtime.engine import check_externals, ensure_llvm, llvm_lock, target_machine
from ..runtime.signature import KernelSignature
from .llvm import LLVMSource
from .llvm_intrin import _MVEC_ISAS, _has_symbol


@dataclass
class CompiledObject:
    """Object code of one module with what the runtime needs to call it."""

    object_code: bytes
    signatures: dict[str, KernelSignature]
    messages: dict[int, str]  # return code -> message
    target: str
    externals: list[str] = field(default_factory=list)
    llvm_ir: str = ""  # the optimized LLVM IR text (for get_source)


def _external_symbols(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        if line.startswith("declare "):
            name = line.split("@", 1)[1].split("(", 1)[0]
            if not name.startswith("llvm."):
                out.append(name)
    return out


def compile_source(src: LLVMSource, target, opt_level: int | None = None) -> CompiledObject:
    """Optimize and compile LLVM IR text to an object file for ``target``."""
    llvm = llvm_binding()
    t = Target.canon(target)
    ensure_llvm()
    externals = _external_symbols(src.text)
    check_externals(externals)
    with llvm_lock:
        tm = target_machine(t)
        try:
            mod = llvm.parse_assembly(src.text)
            mod.verify()
        except RuntimeError as err:
            raise CodegenError(f"generated LLVM IR is invalid (a code generator bug): {err}\n"
                               f"{_excerpt(src.text, str(err))}") from None
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        level = int(t.attrs.get("opt-level", 3)) if opt_level is None else opt_level
        if level > 0:
            pto = llvm.create_pipeline_tuning_options(speed_level=min(3, level))
            pto.loop_vectorization = True
            pto.slp_vectorization = True
            pto.loop_unrolling = True
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        ir_text = str(mod)
        rewritten = replace_with_vector_library(ir_text, t)
        if rewritten is not None:
            ir_text = rewritten
            try:
                mod = llvm.parse_assembly(ir_text)
                mod.verify()
            except RuntimeError as err:
                raise CodegenError(f"LLVM IR is invalid after mapping vector math to libmvec "
                                   f"(a code generator bug): {err}\n"
                                   f"{_excerpt(ir_text, str(err))}") from None
        obj = tm.emit_object(mod)
    return CompiledObject(object_code=bytes(obj), signatures=dict(src.signatures),
                          messages=dict(src.messages), target=str(t), externals=externals,
                          llvm_ir=ir_text)


def compile_sources(sources: list[LLVMSource], target) -> list[CompiledObject]:
    """Compile the parts of one module on several cores, each process taking the next
    part, the largest first, when it has finished one (``irc.core.parallel.fork_pull``:
    serially where forking is not possible). Results are in the order of ``sources``."""
    if len(sources) > 1:
        ensure_llvm()  # before forking: the children inherit the initialized LLVM
    order = sorted(range(len(sources)), key=lambda i: -len(sources[i].text))
    objs = fork_pull(lambda i: compile_source(sources[i], target), order)
    out: list[CompiledObject | None] = [None] * len(sources)
    for i, obj in zip(order, objs):
        out[i] = obj
    return out  # type: ignore[return-value]


# LLVM math intrinsics that glibc's libmvec implements on whole vectors.
_VECLIB_INTRINSICS = ("exp", "exp2", "exp10", "log", "log2", "log10", "sin", "cos", "tan",
                      "asin", "acos", "atan", "sinh", "cosh", "tanh", "pow", "atan2")
_VEC_INTRIN_RE = re.compile(
    r"@llvm\.(" + "|".join(_VECLIB_INTRINSICS) + r")\.v(\d+)f(32|64)\(")


def replace_with_vector_library(text: str, target) -> str | None:
    """Rewrite calls of vector math intrinsics (which LLVM's backend would split into one
    libm call per lane) into calls of libmvec's vector functions; None if none apply.

    LLVM's loop vectorizer turns ``expf`` in a loop into ``llvm.exp.v16f32``; this plays
    the role of LLVM's ReplaceWithVeclib pass, which llvmlite does not let us configure.
    """
    if "@llvm." not in text:
        return None
    feats = target.llvm_features()
    mapping: dict[str, str] = {}
    for m in _VEC_INTRIN_RE.finditer(text):
        fn, lanes, bits = m.group(1), int(m.group(2)), int(m.group(3))
        key = m.group(0)
        if key in mapping:
            continue
        for isa, feature, reg_bits in _MVEC_ISAS:
            if (not feature or feature in feats) and reg_bits // bits == lanes:
                nargs = 2 if fn in ("pow", "atan2") else 1
                name = f"_ZGV{isa}N{lanes}{'v' * nargs}_{fn}{'f' if bits == 32 else ''}"
                if _has_symbol(name):
                    mapping[key] = name
                break
    if not mapping:
        return None
    # The code generator may already declare a vector function (vectorized loops call
    # libmvec directly); a second declaration would be a redefinition.
    declared = set(re.findall(r"^declare [^@]*@([\w.$]+)\(", text, flags=re.MULTILINE))
    out = []
    for line in text.splitlines():
        if line.startswith("declare ") and "@llvm." in line:
            m = _VEC_INTRIN_RE.search(line)
            if m is not None and m.group(0) in mapping:
                name = mapping[m.group(0)]
                if name in declared:
                    continue
                declared.add(name)
                head = line[:m.start()]
                args = line[m.end():line.index(")", m.end())]
                out.append(f"{head}@{name}({args}) nounwind")
                continue
        if "@llvm." in line:
            line = _VEC_INTRIN_RE.sub(lambda m: f"@{mapping[m.group(0)]}("
                                      if m.group(0) in mapping else m.group(0), line)
        out.append(line)
    return "\n".join(out) + "\n"


def _excerpt(text: str, err: str) -> str:
    """The IR lines around the line number an LLVM parse error mentions."""
    m = re.search(r":(\d+):\d+:", err)
    if not m:
        return ""
    line = int(m.group(1))
    lines = text.splitlines()
    lo, hi = max(0, line - 4), min(len(lines), line + 2)
    return "\n".join(f"{i + 1:5d} {lines[i]}" for i in range(lo, hi))
