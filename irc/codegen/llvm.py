"""Loop IR (lowered form) to LLVM IR: the CPU code generator.

Input: PrimFuncs in lowered form (see ``irc/tir/stmt.py``): loops, flat buffer accesses,
``Allocate``; N-D accesses are flattened here too (row-major or with the buffer's
strides), so hand-written loop nests work without the lowering passes.

Calling convention (one C function per PrimFunc, named by its global symbol)::

    int32_t name(T0* buf0, T1* buf1, ...,      // buffer params, in parameter order
                 int64_t n0, int64_t n1, ...,  // symbolic shape/stride variables of the
                                               //   buffer params, in order of first
                                               //   appearance (not scalar params)
                 S0 s0, S1 s1, ...)            // scalar params, in parameter order

- Buffer pointers are 64-byte aligned (the runtime guarantees it, copying misaligned
  numpy arrays) and ``noalias`` when the function has the attribute ``tir.noalias``.
  Buffers are compact row-major unless the parameter buffer declares strides; then the
  stride variables are passed with the shape variables and only element alignment is
  assumed (views of other arrays are passed without a copy).
- Scalars pass as their C type; ``bool`` as a byte; float16/bfloat16 as ``float``.
- The return value is 0 on success, else the code of the failed assertion's message in
  the module's message table (``LLVMSource.messages``, code -> text; codes count from
  ``message_base + 1``, so modules generated apart can be linked together), which the
  runtime turns into an exception. Heap buffers allocated by the function are freed
  before returning.
- ``parallel`` loops run on ``-num-cores`` threads of the OpenMP runtime (libgomp's
  ``GOMP_parallel``) with static, contiguous chunks; a parallel loop inside another one
  runs serially. See ``llvm_parallel.py``.

Loop kinds: ``vectorized`` loops of constant extent (up to 64) become vector code here
(``llvm_vectorize.py``), others keep LLVM vectorize metadata; ``unrolled`` loops of
constant extent are unrolled here (within a code-size budget), others get unroll
metadata. Annotations ``pragma_vectorize``/``pragma_unroll`` steer LLVM (see
``_loop_properties``); a serial loop without them that has loops inside gets
``llvm.loop.unroll.disable`` (LLVM unrolls innermost loops only). Allocations up to
64 KiB of constant size are stack slots in the function's entry block (SROA turns fully
unrolled ones into registers); larger ones use ``aligned_alloc``/``free``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core import dtype as dt
from ..core.diagnostics import CodegenError
from ..core.functor import Visitor
from ..core.structural import structural_equal
from ..core.target import Target
from ..runtime.signature import (
    BufferParamSpec,
    KernelSignature,
    ScalarParamSpec,
    encode_dim,
    kernel_symbol,
)
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.analysis.written_params import written_params
from .llvm_builder import FunctionBuilder, ModuleBuilder, Value, const_int
from .llvm_common import known_multiple, referenced_vars, storage_type, value_type
from .llvm_expr import ExprCodegen
from .llvm_intrin import unary_intrinsic
from .llvm_parallel import emit_parallel_for
from .llvm_vectorize import vectorize_loop

# Buffers up to this many bytes with a constant size live on the stack (promotable to
# registers); larger or dynamically sized ones are heap-allocated.
STACK_ALLOC_LIMIT = 64 * 1024
# Unrolled loops with a constant extent up to this are unrolled by the code generator,
# as long as the product of the extents of nested explicitly unrolled loops stays within
# the budget (code size); the others get LLVM unroll metadata.
EXPLICIT_UNROLL_LIMIT = 256
EXPLICIT_UNROLL_BUDGET = 4096
BUFFER_ALIGN = 64
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_ABI_SCALAR = {"bool": "i8", "float16": "float", "bfloat16": "float"}


@dataclass
class LLVMSource:
    """LLVM IR text of a module with the calling information of its functions."""

    text: str
    signatures: dict[str, KernelSignature]
    messages: dict[int, str] = field(default_factory=dict)  # return code -> message


def is_block_form(func: S.PrimFunc) -> bool:
    """True when ``func`` still contains blocks (it must be lowered first)."""

    class _Find(Visitor):
        found = False

        def visit_Block(self, n):
            self.found = True

        def visit_BlockRealize(self, n):
            self.found = True

        def visit_PrimExpr(self, n):
            pass  # expressions hold no blocks

    f = _Find()
    f.visit(func.body)
    return f.found


class CodeGenLLVM(ExprCodegen):
    """Translates lowered PrimFuncs into one LLVM module (as text)."""

    def __init__(self, target, module_name: str = "irc_module", message_base: int = 0):
        self.target = Target.canon(target)
        if self.target.kind.name != "llvm":
            raise CodegenError(f"the LLVM code generator needs an llvm target, got "
                               f"{self.target}")
        self.module = ModuleBuilder(module_name)
        self.messages: list[str] = []
        self.message_base = message_base
        self.signatures: dict[str, KernelSignature] = {}
        self.fn_attrs = self.module.attribute_group(
            f'nounwind "prefer-vector-width"="{self.target.vector_width_bits()}" '
            '"frame-pointer"="none"')
        self.num_threads = self.target.num_cores
        self._parallel_count = 0
        # The LLVM functions of each kernel (its own and its parallel loops' bodies), so
        # the module can be split into parts that compile separately.
        self.kernel_functions: dict[str, list[FunctionBuilder]] = {}

    # -- module level -----------------------------------------------------------------
    def add_function(self, name: str, func: S.PrimFunc) -> None:
        """Translate ``func`` (lowered form) into the function ``name``."""
        if not _NAME_RE.match(name):
            raise CodegenError(f"function name {name!r} is not a valid symbol; use letters, "
                               "digits, '_' and '.'")
        if name in self.signatures:
            raise CodegenError(f"two functions are named {name!r}")
        if is_block_form(func):
            raise CodegenError(f"function {name!r} is in block form; lower it first "
                               "(irc.tir.transform.lower_primfunc) or use irc.build")
        self.func_name = name
        first = len(self.module.functions)
        self.vars: dict[int, Value] = {}
        self.ptr_align: dict[int, int] = {}
        self.mult_env: dict[int, int] = {}
        # Loop variables known to be >= 0 (their loop starts at a constant >= 0): floor
        # division and remainder of them by a positive constant need no sign fix-up.
        self.nonneg: set[int] = set()
        self.noalias_vars: set[int] = set()
        self.heap_live: list[Value] = []
        self.in_parallel = False
        self.mask = None
        self.fmf = ""
        self.unroll_product = 1
        noalias = bool(func.attrs.get("tir.noalias", False))
        sig, llvm_params, bindings = self._signature(name, func, noalias)
        self.b = FunctionBuilder(self.module, kernel_symbol(name), "i32", llvm_params,
                                 fn_attrs=self.fn_attrs)
        kinds = (["buffer"] * len(sig.buffers) + ["shape"] * len(sig.shape_vars)
                 + ["scalar"] * len(sig.scalars))
        for var, kind, value in zip(bindings, kinds, self.b.params):
            self._bind_param(var, kind, value)
        for p, buf in func.buffer_map.items():
            ptr = self.vars[id(p)]
            self.vars[id(buf.data)] = ptr
            self.ptr_align[id(buf.data)] = _param_align(buf)
            self.ptr_align[id(p)] = _param_align(buf)
            if noalias:
                self.noalias_vars.add(id(buf.data))
        self.stmt(func.body)
        self.b.ret(Value("i32", "0"))
        self.signatures[name] = sig
        self.kernel_functions[name] = self.module.functions[first:]

    def _signature(self, name, func, noalias):
        """The kernel signature, the LLVM parameter list and the Vars bound to each LLVM
        parameter."""
        buffer_params, scalar_params = [], []
        llvm_params: list[tuple[str, str, str]] = []
        bound: list[E.Var] = []
        shape_vars: list[E.Var] = []
        scalar_ids = {id(p) for p in func.params if p not in func.buffer_map}
        written = written_params(func)
        names: dict[int, str] = {}

        def var_name(v: E.Var) -> str:
            if id(v) not in names:
                base = v.name or "v"
                n = base
                k = 1
                while n in names.values():
                    n = f"{base}_{k}"
                    k += 1
                names[id(v)] = n
            return names[id(v)]

        def note_vars(e):
            for v in referenced_vars(e):
                if id(v) not in scalar_ids and all(v is not s for s in shape_vars):
                    shape_vars.append(v)

        for pos, p in enumerate(func.params):
            buf = func.buffer_map.get(p)
            if buf is None:
                continue
            for dim in buf.shape:
                note_vars(dim)
            for st in buf.strides:
                note_vars(st)
            if buf.elem_offset is not None and not E.is_const_int(buf.elem_offset):
                raise CodegenError(f"{name}: parameter buffer {buf.name!r} has a symbolic "
                                   "element offset, which the calling convention does not "
                                   "pass", node=buf)
            attrs = "noalias nocapture" if noalias else "nocapture"
            # Compact buffers are 64-byte aligned (the runtime guarantees it); strided
            # views of other arrays only to their element size.
            attrs += f" align {_param_align(buf)}"
            llvm_params.append(("ptr", buf.name, attrs))
            bound.append(p)
            buffer_params.append(BufferParamSpec(
                name=buf.name, dtype=buf.dtype,
                shape=tuple(encode_dim(d, var_name) for d in buf.shape),
                strides=tuple(encode_dim(s, var_name) for s in buf.strides) if buf.strides
                else None,
                elem_offset=E.as_int(buf.elem_offset) or 0 if buf.elem_offset is not None
                else 0,
                written=pos in written))
        for v in shape_vars:
            llvm_params.append(("i64", var_name(v), ""))
            bound.append(v)
        for p in func.params:
            if p in func.buffer_map:
                continue
            if p.dtype == "handle":
                llvm_params.append(("ptr", p.name, ""))
            else:
                abi = _ABI_SCALAR.get(p.dtype) or value_type(p.dtype)
                if dt.lanes(p.dtype) != 1:
                    raise CodegenError(f"{name}: vector scalar parameter {p.name} is not "
                                       "supported", node=p)
                llvm_params.append((abi, p.name, ""))
            bound.append(p)
            scalar_params.append(ScalarParamSpec(name=var_name(p), dtype=p.dtype))
        order = []
        bi = si = 0
        for p in func.params:
            if p in func.buffer_map:
                order.append(("buffer", bi))
                bi += 1
            else:
                order.append(("scalar", si))
                si += 1
        sig = KernelSignature(name=name, buffers=tuple(buffer_params),
                              shape_vars=tuple((var_name(v), v.dtype) for v in shape_vars),
                              scalars=tuple(scalar_params), order=tuple(order))
        return sig, llvm_params, bound

    def _bind_param(self, var: E.Var, kind: str, value: Value) -> None:
        b = self.b
        if kind == "buffer":
            self.vars[id(var)] = value
            return
        if kind == "shape":
            if var.dtype == "int64":
                self.vars[id(var)] = value
            elif dt.is_integer(var.dtype):
                self.vars[id(var)] = b.conv("trunc", value, value_type(var.dtype))
            else:
                raise CodegenError(f"shape variable {var.name} must be an integer, "
                                   f"not {var.dtype}", node=var)
            return
        if var.dtype == "bool":
            self.vars[id(var)] = b.icmp("ne", value, const_int("i8", 0))
        elif var.dtype in ("float16", "bfloat16"):
            self.vars[id(var)] = self.round16(value, var.dtype)
        else:
            self.vars[id(var)] = value

    # -- helpers used by the expression mixin and the parallel outliner -----------------
    def declare_intrinsic(self, name: str, ret: str, args: list[str]) -> None:
        """Declare LLVM intrinsic ``name`` once."""
        self.module.declare(name, f"declare {ret} @{name}({', '.join(args)})")

    def declare_extern(self, name: str, ret: str, args: list[str], attrs: str = "") -> None:
        """Declare external function ``name``; a second, different signature is an error."""
        text = f"declare {ret} @{name}({', '.join(args)}){' ' + attrs if attrs else ''}"
        old = self.module.decls.get(name)
        if old is not None and old != text:
            raise CodegenError(f"external function {name!r} is called with two different "
                               f"signatures:\n  {old}\n  {text}")
        self.module.declare(name, text)

    def unary_intrinsic(self, op: str, v: Value, dtype: str) -> Value:
        """``op(v)`` for a float value (see ``llvm_intrin.unary_intrinsic``)."""
        return unary_intrinsic(self, op, v, dtype)

    def bind(self, var: E.Var, value: Value, expr: E.PrimExpr | None = None) -> None:
        """Bind ``var`` to ``value`` (``expr``: its IR, for alignment analysis)."""
        self.vars[id(var)] = value
        if expr is not None and dt.is_integer(var.dtype):
            self.mult_env[id(var)] = known_multiple(expr, self.mult_env)

    def unbind(self, var: E.Var) -> None:
        """Forget the binding of ``var``."""
        self.vars.pop(id(var), None)
        self.mult_env.pop(id(var), None)
        self.nonneg.discard(id(var))

    def message_code(self, message: str) -> int:
        """The return code that reports ``message``."""
        if message not in self.messages:
            self.messages.append(message)
        return self.message_base + self.messages.index(message) + 1

    def message_table(self) -> dict[int, str]:
        """Return code -> message, for every message generated so far."""
        return {self.message_base + i + 1: m for i, m in enumerate(self.messages)}

    def fail(self, code: Value) -> None:
        """Return ``code`` from the current function, freeing live heap buffers."""
        for p in reversed(self.heap_live):
            self._free(p)
        self.b.ret(code)

    # -- statements ---------------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> None:
        """Emit statement ``s`` (dispatches to ``s_<ClassName>``)."""
        handler = getattr(self, f"s_{type(s).__name__}", None)
        if handler is None:
            raise CodegenError(f"the LLVM code generator cannot translate "
                               f"{type(s).__name__} statements", node=s)
        handler(s)

    def s_SeqStmt(self, s: S.SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def s_Evaluate(self, s: S.Evaluate) -> None:
        if isinstance(s.value, (E.IntImm, E.FloatImm)):
            return
        self.expr(s.value)

    def s_BufferStore(self, s: S.BufferStore) -> None:
        saved = self.fmf
        if dt.is_float(s.value.dtype) and _is_reduction_update(s):
            self.fmf = "reassoc contract"
        try:
            v = self.expr(s.value)
        finally:
            self.fmf = saved
        self.store(s.buffer, s.indices, v, s.value.dtype)

    def s_LetStmt(self, s: S.LetStmt) -> None:
        self.bind(s.var, self.expr(s.value), s.value)
        self.stmt(s.body)
        self.unbind(s.var)

    def s_AttrStmt(self, s: S.AttrStmt) -> None:
        if s.key in ("thread_extent", "virtual_thread"):
            raise CodegenError(f"GPU attribute {s.key!r} cannot be compiled for the CPU",
                               node=s, hint="build for target 'cuda', or remove the bind")
        self.stmt(s.body)

    def s_DeclBuffer(self, s: S.DeclBuffer) -> None:
        if id(s.buffer.data) not in self.vars:
            raise CodegenError(f"DeclBuffer {s.buffer.name!r} views memory "
                               f"{s.buffer.data.name!r} that is not defined", node=s)
        self.stmt(s.body)

    def s_AssertStmt(self, s: S.AssertStmt) -> None:
        c = self.expr(s.condition)
        if c.ref != "true":
            b = self.b
            ok, bad = b.block("assert_ok"), b.block("assert_fail")
            b.cbr(c, ok, bad)
            b.goto(bad)
            self.fail(Value("i32", str(self.message_code(s.message))))
            b.goto(ok)
        self.stmt(s.body)

    def s_IfThenElse(self, s: S.IfThenElse) -> None:
        c = self.expr(s.condition)
        if c.ref in ("true", "false"):
            chosen = s.then_case if c.ref == "true" else s.else_case
            if chosen is not None:
                self.stmt(chosen)
            return
        b = self.b
        then_b, end_b = b.block("if_then"), b.block("if_end")
        else_b = b.block("if_else") if s.else_case is not None else end_b
        b.cbr(c, then_b, else_b)
        b.goto(then_b)
        self.stmt(s.then_case)
        b.br(end_b)
        if s.else_case is not None:
            b.goto(else_b)
            self.stmt(s.else_case)
            b.br(end_b)
        b.goto(end_b)

    def s_While(self, s: S.While) -> None:
        b = self.b
        head, body, end = b.block("while_head"), b.block("while_body"), b.block("while_end")
        b.br(head)
        b.goto(head)
        b.cbr(self.expr(s.condition), body, end)
        b.goto(body)
        self.stmt(s.body)
        b.br(head)
        b.goto(end)

    def s_Allocate(self, s: S.Allocate) -> None:
        st = storage_type(s.dtype)
        item = dt.itemsize(s.dtype)
        count = None
        total = 1
        for ext in s.extents:
            c = E.as_int(ext)
            if c is None:
                total = None
                break
            total *= c
        b = self.b
        heap = None
        if total is not None and total * item <= STACK_ALLOC_LIMIT:
            ptr = b.alloca(st, max(total, 1), BUFFER_ALIGN, s.buffer_var.name)
        else:
            if total is not None:
                size = Value("i64", str(max(BUFFER_ALIGN, -(-total * item // BUFFER_ALIGN)
                                            * BUFFER_ALIGN)))
            else:
                count = None
                for ext in s.extents:
                    v = self.cast_value(self.expr(ext), ext.dtype, "int64")
                    count = v if count is None else b.binop("mul", count, v, "nsw")
                nbytes = b.binop("mul", count, Value("i64", str(item)), "nsw")
                # aligned_alloc needs a multiple of the alignment (and a nonzero size).
                padded = b.binop("add", nbytes, Value("i64", str(BUFFER_ALIGN - 1 +
                                                                 BUFFER_ALIGN)))
                size = b.binop("and", padded, Value("i64", str(-BUFFER_ALIGN)))
            self.declare_extern("aligned_alloc", "noalias ptr", ["i64", "i64"], "nounwind")
            self.module.decls["aligned_alloc"] = \
                "declare noalias ptr @aligned_alloc(i64, i64) nounwind"
            ptr = b.call("ptr", "aligned_alloc", [Value("i64", str(BUFFER_ALIGN)), size],
                         hint=s.buffer_var.name)
            ok, bad = b.block("alloc_ok"), b.block("alloc_fail")
            b.cbr(b.icmp("ne", ptr, Value("ptr", "null")), ok, bad)
            b.goto(bad)
            self.fail(Value("i32", str(self.message_code(
                f"{self.func_name}: out of memory allocating buffer {s.buffer_var.name}"))))
            b.goto(ok)
            heap = ptr
            self.heap_live.append(ptr)
        self.vars[id(s.buffer_var)] = ptr
        self.ptr_align[id(s.buffer_var)] = BUFFER_ALIGN
        self.noalias_vars.add(id(s.buffer_var))
        self.stmt(s.body)
        if heap is not None:
            self.heap_live.pop()
            self._free(heap)

    def _free(self, ptr: Value) -> None:
        self.module.declare("free", "declare void @free(ptr) nounwind")
        self.b.call("void", "free", [ptr])

    def s_For(self, s: S.For) -> None:
        if s.kind == "thread_binding":
            raise CodegenError(f"loop {s.loop_var.name} is bound to GPU thread axis "
                               f"{s.thread_tag!r}, which the CPU cannot run", node=s,
                               hint="build for target 'cuda', or do not bind the loop")
        if s.kind == "parallel" and not self.in_parallel:
            emit_parallel_for(self, s)
            return
        extent = E.as_int(s.extent)
        if s.kind == "vectorized" and (s.annotations or {}).get("pragma_vectorize") is None:
            body = vectorize_loop(s)
            if body is not None:
                self.stmt(body)
                return
        if (s.kind == "unrolled" and extent is not None and extent <= EXPLICIT_UNROLL_LIMIT
                and extent * self.unroll_product <= EXPLICIT_UNROLL_BUDGET):
            self._unroll(s, extent)
            return
        begin = self.expr(s.min)
        end = self.b.binop("add", begin, self.expr(s.extent), self._int_flags(s.min.dtype))
        props = _loop_properties(s, extent)
        if not props and s.kind == "serial" and _contains_loop(s.body):
            # An outer loop: LLVM's unroller would copy whole inner loops (a micro-kernel
            # row by row), which costs compile time (ResNet-50: 30% of LLVM's) and did not
            # pay at run time on the model zoo; innermost loops stay LLVM's to unroll.
            props = ['!"llvm.loop.unroll.disable"']
        md = self.module.loop_metadata(props) if props else ""
        start_at = E.as_int(s.min)
        self.emit_loop(s.loop_var, begin, end, s.body, md,
                       nonneg=start_at is not None and start_at >= 0)

    def _unroll(self, s: S.For, extent: int) -> None:
        start = E.as_int(s.min)
        ty = value_type(s.loop_var.dtype)
        self.unroll_product *= max(1, extent)
        try:
            self._unroll_body(s, extent, start, ty)
        finally:
            self.unroll_product //= max(1, extent)
        self.unbind(s.loop_var)

    def _unroll_body(self, s: S.For, extent: int, start, ty: str) -> None:
        for k in range(extent):
            if start is not None:
                v = const_int(ty, start + k)
                self.mult_env[id(s.loop_var)] = abs(start + k) or (1 << 20)
                if start + k >= 0:
                    self.nonneg.add(id(s.loop_var))
            else:
                v = self.b.binop("add", self.expr(s.min), const_int(ty, k),
                                 self._int_flags(s.loop_var.dtype))
            self.vars[id(s.loop_var)] = v
            self.stmt(s.body)

    def emit_loop(self, var: E.Var, begin: Value, end: Value, body: S.Stmt,
                  md: str = "", nonneg: bool = False) -> None:
        """``for var in [begin, end): body`` as an LLVM loop (``md``: loop metadata id;
        ``nonneg``: ``begin`` is known to be >= 0)."""
        b = self.b
        pre = b.cur
        head, loop_body, exit_b = b.block("for_head"), b.block("for_body"), b.block("for_end")
        b.br(head)
        b.goto(head)
        phi = b.phi(begin.ty, var.name or "i")
        iv = Value(begin.ty, phi.name)
        pred = "ult" if dt.is_uint(var.dtype) else "slt"
        b.cbr(b.icmp(pred, iv, end), loop_body, exit_b)
        b.goto(loop_body)
        self.vars[id(var)] = iv
        if nonneg:
            self.nonneg.add(id(var))
        self.stmt(body)
        latch = b.cur
        nxt = b.binop("add", iv, const_int(iv.ty, 1), self._int_flags(var.dtype))
        b.br(head, f", !llvm.loop {md}" if md else "")
        phi.add(begin, pre)
        phi.add(nxt, latch)
        b.goto(exit_b)
        self.unbind(var)

    def s_Block(self, s):
        raise CodegenError("blocks must be lowered before LLVM code generation", node=s)

    s_BlockRealize = s_Block

    # -- output -------------------------------------------------------------------------
    def finish(self) -> LLVMSource:
        """The module text and the functions' signatures."""
        return LLVMSource(self.module.render(), dict(self.signatures), self.message_table())

    def finish_parts(self, parts: int, min_bytes: int = 0) -> list[LLVMSource]:
        """The module as at most ``parts`` modules of whole kernels, each of about
        ``min_bytes`` of LLVM text or more, balanced by size (largest kernels first, each
        to the smallest part), to compile in parallel. Each part has the whole message
        table (codes stay module-wide)."""
        texts = {name: [f.render() for f in fns] for name, fns in self.kernel_functions.items()}
        sizes = {name: sum(map(len, t)) for name, t in texts.items()}
        total = sum(sizes.values())
        parts = min(parts, len(texts), total // min_bytes if min_bytes > 0 else parts)
        groups: list[list[str]] = [[] for _ in range(max(1, parts))]
        loads = [0] * len(groups)
        for name in sorted(texts, key=lambda n: -sizes[n]):
            i = loads.index(min(loads))
            groups[i].append(name)
            loads[i] += sizes[name]
        order = list(self.signatures)
        out = []
        for names in groups:
            names.sort(key=order.index)  # the kernels in the order they were added
            out.append(LLVMSource(
                self.module.render([t for n in names for t in texts[n]]),
                {n: self.signatures[n] for n in names}, self.message_table()))
        return out


def _loop_properties(s: S.For, extent: int | None) -> list[str]:
    """LLVM loop metadata for a loop's kind and annotations.

    Annotations understood: ``pragma_vectorize`` (False: never vectorize; an int: the
    vector width), ``pragma_unroll`` (False: never unroll; True: unroll; an int: the
    unroll count).
    """
    props = []
    ann = s.annotations or {}
    vec = ann.get("pragma_vectorize")
    if s.kind == "vectorized" and vec is None:
        props.append('!"llvm.loop.vectorize.enable", i1 true')
        if extent is not None and extent <= 64:
            props.append(f'!"llvm.loop.vectorize.width", i32 {_pow2_floor(extent)}')
    elif vec is False or vec == 0:
        props.append('!"llvm.loop.vectorize.enable", i1 false')
        props.append('!"llvm.loop.interleave.count", i32 1')
    elif isinstance(vec, int) and not isinstance(vec, bool):
        props.append('!"llvm.loop.vectorize.enable", i1 true')
        props.append(f'!"llvm.loop.vectorize.width", i32 {_pow2_floor(vec)}')
    unroll = ann.get("pragma_unroll")
    if unroll is False or unroll == 0:
        props.append('!"llvm.loop.unroll.disable"')
    elif unroll is True or (s.kind == "unrolled" and unroll is None):
        props.append('!"llvm.loop.unroll.enable"')
    elif isinstance(unroll, int):
        props.append(f'!"llvm.loop.unroll.count", i32 {unroll}')
    return props


def _param_align(buf) -> int:
    """The alignment the calling convention promises for a buffer parameter."""
    if buf.strides:
        return max(1, dt.itemsize(buf.dtype))
    return BUFFER_ALIGN


def _pow2_floor(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


_UPDATE_OPS = (E.Add, E.Sub, E.Mul, E.Min, E.Max)


def _is_reduction_update(s: S.BufferStore) -> bool:
    """True when the stored value combines the value already at the stored location
    (``C[i] = C[i] + x``): its evaluation order may be changed (reassociated)."""
    stack = [s.value]
    while stack:
        e = stack.pop()
        if isinstance(e, E.Cast):
            stack.append(e.value)
        elif isinstance(e, _UPDATE_OPS):
            stack.extend((e.a, e.b))
        elif isinstance(e, E.Call) and e.op in ("max", "min"):
            stack.extend(e.args)
        elif isinstance(e, E.BufferLoad):
            if e.buffer.data is s.buffer.data and len(e.indices) == len(s.indices) and all(
                    a is b or structural_equal(a, b) for a, b in zip(e.indices, s.indices)):
                return True
    return False


def codegen_llvm(funcs: dict[str, S.PrimFunc], target, module_name: str = "irc_module",
                 message_base: int = 0) -> LLVMSource:
    """LLVM IR for lowered PrimFuncs ``{name: func}`` for an llvm ``target`` (its kernel
    message codes above ``message_base``)."""
    cg = CodeGenLLVM(target, module_name, message_base)
    for name, f in funcs.items():
        cg.add_function(name, f)
    return cg.finish()


def codegen_llvm_parts(funcs: dict[str, S.PrimFunc], target, parts: int,
                       min_bytes: int = 0, module_name: str = "irc_module"
                       ) -> list[LLVMSource]:
    """LLVM IR for lowered PrimFuncs split into at most ``parts`` modules of whole kernels
    of about equal size, none much under ``min_bytes`` (:meth:`CodeGenLLVM.finish_parts`)."""
    cg = CodeGenLLVM(target, module_name)
    for name, f in funcs.items():
        cg.add_function(name, f)
    return cg.finish_parts(parts, min_bytes)



class _LoopFinder(Visitor):
    """Stops at the first loop that stays a loop in LLVM IR (``found``): vectorized and
    unrolled loops are normally expanded by the code generator, so only their bodies
    count. Expressions are not entered."""

    def __init__(self) -> None:
        self.found = False

    def visit_For(self, s: S.For) -> None:
        if s.kind in ("vectorized", "unrolled"):
            self.visit(s.body)
        else:
            self.found = True

    def visit_While(self, s: S.While) -> None:
        self.found = True

    def visit_PrimExpr(self, e: E.PrimExpr) -> None:
        return None

    def generic_visit(self, n) -> None:
        if not self.found:
            super().generic_visit(n)


def _contains_loop(stmt: S.Stmt) -> bool:
    finder = _LoopFinder()
    finder.visit(stmt)
    return finder.found
