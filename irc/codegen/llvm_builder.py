"""A small builder of LLVM IR *text*: typed SSA values, blocks, functions and a module.

irc writes LLVM IR as text instead of going through ``llvmlite.ir``: building strings is
several times faster in Python, and the text form gives direct control over what the
code generator needs (fast-math flags per instruction, self-referential loop metadata,
parameter attributes such as ``noalias``/``align``, function attributes). The text is
parsed by LLVM (``llvmlite.binding.parse_assembly``), which verifies it.

Types are LLVM type strings (``"i32"``, ``"float"``, ``"<16 x float>"``, ``"ptr"``);
a :class:`Value` pairs a type with its textual reference (``%t12``, ``3``, ``0x3FF0...``).
"""

from __future__ import annotations

import re
import struct

_NAME_RE = re.compile(r"[^A-Za-z0-9_.]")


class Value:
    """An SSA value or constant: its LLVM type and how it is written in IR text."""

    __slots__ = ("ty", "ref")

    def __init__(self, ty: str, ref: str):
        self.ty = ty
        self.ref = ref

    def __str__(self) -> str:
        return f"{self.ty} {self.ref}"

    def __repr__(self) -> str:
        return f"Value({self.ty} {self.ref})"

    @property
    def is_const_int(self) -> bool:
        """True for a scalar integer literal."""
        r = self.ref
        return bool(r) and (r.isdigit() or (r[0] == "-" and r[1:].isdigit())) and \
            not self.ty.startswith("<")

    @property
    def int_value(self) -> int:
        """The value of an integer literal."""
        return int(self.ref)


# -- types ------------------------------------------------------------------------------


def vec(ty: str, lanes: int) -> str:
    """The vector type of ``lanes`` elements of ``ty`` (``ty`` itself for one lane)."""
    return ty if lanes == 1 else f"<{lanes} x {ty}>"


def is_vector(ty: str) -> bool:
    """True for an LLVM vector type."""
    return ty.startswith("<")


def elem_type(ty: str) -> str:
    """Element type of a vector type (the type itself for scalars)."""
    if ty.startswith("<"):
        return ty[ty.index(" x ") + 3:-1]
    return ty


def lanes_of(ty: str) -> int:
    """Number of lanes of a type (1 for scalars)."""
    if ty.startswith("<"):
        return int(ty[1:ty.index(" x ")])
    return 1


# -- constants -------------------------------------------------------------------------


def float_literal(value: float, ty: str) -> str:
    """An exact LLVM literal of ``value`` rounded to ``ty`` (float/double/half)."""
    if ty == "float":
        value = struct.unpack("<f", struct.pack("<f", value))[0]
    elif ty == "half":
        bits = struct.unpack("<H", struct.pack("<e", value))[0]
        return f"0xH{bits:04X}"
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    return f"0x{bits:016X}"


def const_int(ty: str, value: int) -> Value:
    """An integer constant (splat for vector types)."""
    et = elem_type(ty)
    if et == "i1":
        value = 1 if value else 0
        text = "true" if value else "false"
    else:
        bits = int(et[1:])
        value &= (1 << bits) - 1
        if value >= 1 << (bits - 1):
            value -= 1 << bits
        text = str(value)
    if is_vector(ty):
        n = lanes_of(ty)
        return Value(ty, "<" + ", ".join([f"{et} {text}"] * n) + ">")
    return Value(ty, text)


def const_float(ty: str, value: float) -> Value:
    """A floating-point constant (splat for vector types)."""
    et = elem_type(ty)
    text = float_literal(value, et)
    if is_vector(ty):
        n = lanes_of(ty)
        return Value(ty, "<" + ", ".join([f"{et} {text}"] * n) + ">")
    return Value(ty, text)


def const_vector(ty: str, elems: list[str]) -> Value:
    """A constant vector from element literals."""
    et = elem_type(ty)
    return Value(ty, "<" + ", ".join(f"{et} {e}" for e in elems) + ">")


# -- blocks and functions -----------------------------------------------------------------


class Block:
    """A basic block: a label, its instruction lines, and the values of the pure
    instructions emitted in it so far (``values``: instruction text to value), which a
    repeated instruction reuses."""

    __slots__ = ("label", "lines", "terminated", "values")

    def __init__(self, label: str):
        self.label = label
        self.lines: list[object] = []
        self.terminated = False
        self.values: dict[str, Value] = {}


class Phi:
    """A phi instruction whose incoming edges may be added after creation (loops)."""

    __slots__ = ("name", "ty", "incoming")

    def __init__(self, name: str, ty: str):
        self.name = name
        self.ty = ty
        self.incoming: list[tuple[str, str]] = []

    def add(self, value: Value, block: Block) -> None:
        """Add the incoming ``value`` from ``block``."""
        self.incoming.append((value.ref, block.label))

    def __str__(self) -> str:
        edges = ", ".join(f"[ {v}, %{b} ]" for v, b in self.incoming)
        return f"  {self.name} = phi {self.ty} {edges}"


_FOLD = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}


class FunctionBuilder:
    """Builds one LLVM function; instructions go to the current block."""

    def __init__(self, module: ModuleBuilder, name: str, ret_ty: str,
                 params: list[tuple[str, str, str]], *, linkage: str = "",
                 fn_attrs: str = "", ret_attrs: str = ""):
        self.module = module
        self.name = name
        self.ret_ty = ret_ty
        self.linkage = linkage
        self.fn_attrs = fn_attrs
        self.ret_attrs = ret_attrs
        self._counter = 0
        self._labels: dict[str, int] = {}
        self.param_decls = []
        self.params: list[Value] = []
        for ty, pname, attrs in params:
            ref = self.fresh(pname)
            self.params.append(Value(ty, ref))
            self.param_decls.append(f"{ty}{' ' + attrs if attrs else ''} {ref}")
        self.allocas: list[str] = []
        self.entry = Block("entry")
        self.blocks: list[Block] = [self.entry]
        self.cur = self.entry
        module.functions.append(self)

    # -- naming and blocks --------------------------------------------------------
    def fresh(self, hint: str = "t") -> str:
        """A new unique local name derived from ``hint``."""
        self._counter += 1
        return f"%{_NAME_RE.sub('_', hint)[:40]}.{self._counter}"

    def block(self, hint: str) -> Block:
        """A new (empty) block appended to the function."""
        hint = _NAME_RE.sub("_", hint)[:40]
        n = self._labels.get(hint, 0)
        self._labels[hint] = n + 1
        b = Block(f"{hint}{n}")
        self.blocks.append(b)
        return b

    def goto(self, block: Block) -> None:
        """Continue emitting at the end of ``block``."""
        self.cur = block

    # -- emission -----------------------------------------------------------------
    def emit(self, rhs: str, ty: str, hint: str = "t") -> Value:
        """Emit ``%name = rhs`` and return the result of type ``ty``."""
        ref = self.fresh(hint)
        self.cur.lines.append(f"  {ref} = {rhs}")
        return Value(ty, ref)

    def pure(self, rhs: str, ty: str, hint: str = "t") -> Value:
        """Like :meth:`emit` for an instruction without side effects: the same
        instruction met again in the same block gives the first one's value (local value
        numbering: a micro-kernel repeats its index arithmetic in every statement, and
        LLVM's time grows with the IR it is given)."""
        values = self.cur.values
        hit = values.get(rhs)
        if hit is None:
            hit = values[rhs] = self.emit(rhs, ty, hint)
        return hit

    def emit_void(self, text: str) -> None:
        """Emit an instruction without a result."""
        self.cur.lines.append(f"  {text}")

    def terminate(self, text: str) -> None:
        """End the current block with ``text`` (once)."""
        if not self.cur.terminated:
            self.cur.lines.append(f"  {text}")
            self.cur.terminated = True

    # -- instructions ----------------------------------------------------------------
    def binop(self, op: str, a: Value, b: Value, flags: str = "", hint: str = "t") -> Value:
        """``op`` in add/sub/mul/sdiv/.../fadd/fmul/...; folds constant integer add/sub/mul."""
        fold = _FOLD.get(op)
        if fold is not None and a.is_const_int and b.is_const_int:
            return const_int(a.ty, fold(a.int_value, b.int_value))
        if op == "add" and b.is_const_int and b.int_value == 0:
            return a
        if op == "add" and a.is_const_int and a.int_value == 0:
            return b
        if op == "sub" and b.is_const_int and b.int_value == 0:
            return a
        if op == "mul" and b.is_const_int and b.int_value == 1:
            return a
        if op == "mul" and a.is_const_int and a.int_value == 1:
            return b
        f = f" {flags}" if flags else ""
        return self.pure(f"{op}{f} {a.ty} {a.ref}, {b.ref}", a.ty, hint)

    def icmp(self, pred: str, a: Value, b: Value) -> Value:
        """Integer comparison."""
        return self.pure(f"icmp {pred} {a.ty} {a.ref}, {b.ref}", vec("i1", lanes_of(a.ty)), "c")

    def fcmp(self, pred: str, a: Value, b: Value, flags: str = "") -> Value:
        """Float comparison."""
        f = f" {flags}" if flags else ""
        return self.pure(f"fcmp{f} {pred} {a.ty} {a.ref}, {b.ref}", vec("i1", lanes_of(a.ty)),
                         "c")

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        """``cond ? a : b``."""
        return self.pure(f"select {cond.ty} {cond.ref}, {a.ty} {a.ref}, {b.ty} {b.ref}", a.ty,
                         "sel")

    def conv(self, op: str, v: Value, ty: str) -> Value:
        """A conversion instruction (sext, zext, trunc, fpext, sitofp, bitcast, ...)."""
        if v.ty == ty and op in ("bitcast", "sext", "zext", "trunc", "fpext", "fptrunc"):
            return v
        return self.pure(f"{op} {v.ty} {v.ref} to {ty}", ty, "cv")

    def load(self, ty: str, ptr: Value, align: int, extra: str = "") -> Value:
        """Load a ``ty`` from ``ptr``."""
        return self.emit(f"load {ty}, ptr {ptr.ref}, align {align}{extra}", ty, "ld")

    def store(self, v: Value, ptr: Value, align: int, extra: str = "") -> None:
        """Store ``v`` to ``ptr``."""
        self.emit_void(f"store {v.ty} {v.ref}, ptr {ptr.ref}, align {align}{extra}")

    def gep(self, elem_ty: str, ptr: Value, index: Value, inbounds: bool = True) -> Value:
        """Address of element ``index`` of type ``elem_ty`` from ``ptr`` (vector index ->
        vector of pointers)."""
        if index.is_const_int and index.int_value == 0:
            return ptr
        ib = "inbounds " if inbounds else ""
        ty = vec("ptr", lanes_of(index.ty))
        return self.pure(f"getelementptr {ib}{elem_ty}, ptr {ptr.ref}, {index.ty} {index.ref}",
                         ty, "p")

    def call(self, ret_ty: str, fn: str, args: list[Value], flags: str = "",
             hint: str = "call", attrs: str = "") -> Value | None:
        """Call ``@fn``; ``flags`` are fast-math flags, ``attrs`` call-site attributes
        (e.g. an attribute group ``#3``)."""
        f = f"{flags} " if flags else ""
        arg_text = ", ".join(f"{a.ty} {a.ref}" for a in args)
        tail = f" {attrs}" if attrs else ""
        if ret_ty == "void":
            self.emit_void(f"call {f}void @{fn}({arg_text}){tail}")
            return None
        return self.emit(f"call {f}{ret_ty} @{fn}({arg_text}){tail}", ret_ty, hint)

    def br(self, target: Block, md: str = "") -> None:
        """Unconditional branch (``md``: trailing metadata)."""
        self.terminate(f"br label %{target.label}{md}")

    def cbr(self, cond: Value, then: Block, other: Block, md: str = "") -> None:
        """Conditional branch."""
        self.terminate(f"br i1 {cond.ref}, label %{then.label}, label %{other.label}{md}")

    def ret(self, v: Value | None) -> None:
        """Return ``v`` (None: ``ret void``)."""
        self.terminate("ret void" if v is None else f"ret {v.ty} {v.ref}")

    def phi(self, ty: str, hint: str = "phi") -> Phi:
        """A phi at the head of the current block; add edges with ``Phi.add``."""
        p = Phi(self.fresh(hint), ty)
        # Phis must lead their block.
        n = 0
        while n < len(self.cur.lines) and isinstance(self.cur.lines[n], Phi):
            n += 1
        self.cur.lines.insert(n, p)
        return p

    def extract(self, v: Value, i: int) -> Value:
        """Lane ``i`` of vector ``v``."""
        return self.pure(f"extractelement {v.ty} {v.ref}, i32 {i}", elem_type(v.ty), "ex")

    def insert(self, v: Value, elem: Value, i: int) -> Value:
        """Vector ``v`` with lane ``i`` replaced by ``elem``."""
        return self.pure(f"insertelement {v.ty} {v.ref}, {elem.ty} {elem.ref}, i32 {i}", v.ty,
                         "in")

    def shuffle(self, a: Value, b: Value, mask: list[int]) -> Value:
        """Lanes of ``a`` and ``b`` picked by ``mask`` (``b`` None: poison)."""
        ty = vec(elem_type(a.ty), len(mask))
        m = ", ".join(f"i32 {i}" if i >= 0 else "i32 poison" for i in mask)
        b_ref = b.ref if b is not None else "poison"
        return self.pure(f"shufflevector {a.ty} {a.ref}, {a.ty} {b_ref}, <{len(mask)} x i32> "
                         f"<{m}>", ty, "sh")

    def splat(self, v: Value, lanes: int) -> Value:
        """Broadcast a scalar to ``lanes`` lanes."""
        ty = vec(v.ty, lanes)
        one = self.pure(f"insertelement {ty} poison, {v.ty} {v.ref}, i32 0", ty, "bc")
        return self.pure(f"shufflevector {ty} {one.ref}, {ty} poison, <{lanes} x i32> "
                         f"zeroinitializer", ty, "splat")

    def alloca(self, ty: str, count: int | Value, align: int, hint: str = "buf") -> Value:
        """A stack slot; constant-count allocas go to the entry block (promotable by SROA)."""
        ref = self.fresh(hint)
        if isinstance(count, int):
            self.allocas.append(f"  {ref} = alloca {ty}, i64 {count}, align {align}")
        else:
            self.cur.lines.append(f"  {ref} = alloca {ty}, {count.ty} {count.ref}, "
                                  f"align {align}")
        return Value("ptr", ref)

    # -- output -----------------------------------------------------------------------
    def render(self) -> str:
        link = f"{self.linkage} " if self.linkage else ""
        ra = f"{self.ret_attrs} " if self.ret_attrs else ""
        attrs = f" {self.fn_attrs}" if self.fn_attrs else ""
        out = [f"define {link}{ra}{self.ret_ty} @{self.name}({', '.join(self.param_decls)})"
               f"{attrs} {{"]
        for b in self.blocks:
            out.append(f"{b.label}:")
            if b is self.entry:
                out.extend(self.allocas)
            out.extend(str(x) for x in b.lines)
            if not b.terminated:
                out.append("  unreachable")
        out.append("}")
        return "\n".join(out)


class ModuleBuilder:
    """Collects declarations, globals, functions and metadata; renders the module text."""

    def __init__(self, name: str, triple: str = "", data_layout: str = ""):
        self.name = name
        self.triple = triple
        self.data_layout = data_layout
        self.decls: dict[str, str] = {}
        self.globals: list[str] = []
        self.functions: list[FunctionBuilder] = []
        self.metadata: list[str] = []
        self.attributes: list[str] = []
        # Declarations the optimizer must keep although nothing calls them yet (vector
        # variants of math functions, used once the loop vectorizer runs).
        self.compiler_used: list[str] = []

    def declare(self, name: str, text: str) -> str:
        """Declare an external function once (``text`` is the full ``declare`` line)."""
        if name not in self.decls:
            self.decls[name] = text
        return name

    def metadata_node(self, body: str, distinct: bool = False) -> str:
        """Add ``!N = [distinct] !{body}`` and return ``!N``; ``{self}`` in ``body`` is
        replaced by the node's own reference (self-referential loop ids)."""
        ref = f"!{len(self.metadata)}"
        body = body.replace("{self}", ref)
        self.metadata.append(f"{ref} = {'distinct ' if distinct else ''}!{{{body}}}")
        return ref

    def loop_metadata(self, properties: list[str]) -> str:
        """A distinct loop id carrying ``properties`` (``!"llvm.loop.unroll.full"``...)."""
        props = [self.metadata_node(p) for p in properties]
        return self.metadata_node(", ".join(["{self}", *props]), distinct=True)

    def attribute_group(self, text: str) -> str:
        """``#N`` for the attribute set ``text`` (deduplicated)."""
        if text in self.attributes:
            return f"#{self.attributes.index(text)}"
        self.attributes.append(text)
        return f"#{len(self.attributes) - 1}"

    def render(self, functions: list[str] | None = None) -> str:
        """The module text; with ``functions`` (rendered function texts), a module of
        those functions only, with every declaration, global, attribute group and
        metadata node (what they do not use, LLVM drops)."""
        out = [f"; ModuleID = '{self.name}'"]
        if self.data_layout:
            out.append(f'target datalayout = "{self.data_layout}"')
        if self.triple:
            out.append(f'target triple = "{self.triple}"')
        out.append("")
        out.extend(self.globals)
        if self.compiler_used:
            refs = ", ".join(f"ptr @{n}" for n in self.compiler_used)
            out.append(f"@llvm.compiler.used = appending global [{len(self.compiler_used)} x "
                       f'ptr] [{refs}], section "llvm.metadata"')
        out.extend(self.decls.values())
        out.append("")
        for text in (functions if functions is not None
                     else [f.render() for f in self.functions]):
            out.append(text)
            out.append("")
        for i, a in enumerate(self.attributes):
            out.append(f"attributes #{i} = {{ {a} }}")
        out.extend(self.metadata)
        return "\n".join(out) + "\n"
