"""Translate a PrimFunc into the source of one Python function, compiled once.

Values: integers are Python ints kept within their dtype (``+ - *`` chains are wrapped
once where the result is used, which equals wrapping at every step since those
operations commute with reduction modulo 2**bits; interval bounds skip the wrap when no
overflow is possible); floats are numpy scalars of their dtype, so float32 arithmetic
rounds in float32; bfloat16 values compute as float32 and round when stored or cast;
vectors (Ramp, Broadcast, vector loads) are numpy arrays. Memory is a flat numpy array
per data pointer; every access checks its indices against the buffer's shape unless the
loop bounds prove it in range.
"""

from __future__ import annotations

from typing import Any

from ...core import dtype as dt
from ..buffer import Buffer
from ..expr import Call, IntImm, IterVar, Var
from ..stmt import Block, Stmt
from .expr_codegen import CE, MAX_LOOP_NESTING, ExprCompiler, int_code
from .runtime import InterpreterError


class PythonGenerator(ExprCompiler):
    """Builds the Python source of one PrimFunc (see the module docstring)."""

    # -- statements -----------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        handler = getattr(self, "s_" + type(s).__name__, None)
        if handler is None:
            raise InterpreterError(f"the interpreter cannot execute {type(s).__name__} "
                                   "statements", node=s)
        handler(s)

    def body(self, s: Stmt) -> None:
        """Emit ``s`` one level deeper (``pass`` if it produced nothing)."""
        self.indent += 1
        before = len(self.lines)
        self.stmt(s)
        if len(self.lines) == before:
            self.emit("pass")
        self.indent -= 1

    def s_SeqStmt(self, s: Any) -> None:
        for x in s.seq:
            self.stmt(x)

    def s_Evaluate(self, s: Any) -> None:
        if isinstance(s.value, IntImm):
            return
        if isinstance(s.value, Call) and s.value.op == "tvm_storage_sync":
            return
        c = self.expr(s.value)
        self.flush()
        self.emit(c.code)

    def s_BufferStore(self, s: Any) -> None:
        buf = s.buffer
        value = self.cexpr(s.value)
        flat, _vector, _ = self.address(buf, s.indices)
        mem = self._mem_ref(buf, self.lookup(buf.data)[0])
        code = value.code
        if dt.element_of(buf.dtype) == "bfloat16":
            code = f"_bf16_to_bits({code})"
        self.flush()
        self.emit(f"{mem}[{flat}] = {code}")

    def _loop(self, var: Var, lo: CE, extent: CE, body: Stmt) -> None:
        self.flush()
        if lo.lo is not None and lo.lo == lo.hi and extent.lo is not None \
                and extent.lo == extent.hi:
            bounds = f"{int_code(lo.lo)}, {int_code(lo.lo + extent.lo)}"
            vlo, vhi = lo.lo, max(lo.lo, lo.lo + extent.lo - 1)
        else:
            start = self.fresh("_lo")
            self.emit(f"{start} = {lo.code}")
            bounds = f"{start}, {start} + {extent.code}"
            vlo = lo.lo
            vhi = None if None in (lo.hi, extent.hi) else max(lo.lo, lo.hi + extent.hi - 1)
        nested = self.loop_depth >= MAX_LOOP_NESTING
        saved_depth = self.loop_depth
        if nested:
            fn = self.fresh("_nest")
            self.emit(f"def {fn}():")
            self.indent += 1
            self.loop_depth = 0
        name = self.define(var, vlo, vhi)
        self.emit(f"for {name} in range({bounds}):")
        self.loop_depth += 1
        self.body(body)
        self.loop_depth -= 1
        self.undefine(var)
        if nested:
            self.indent -= 1
            self.loop_depth = saved_depth
            self.emit(f"{fn}()")

    def s_For(self, s: Any) -> None:
        self._loop(s.loop_var, self.cexpr(s.min), self.cexpr(s.extent), s.body)

    def s_While(self, s: Any) -> None:
        saved, self.hoist_ok = self.hoist_ok, False
        cond = self.expr(s.condition)
        self.hoist_ok = saved
        self.emit(f"while {cond.code}:")
        self.loop_depth += 1
        self.body(s.body)
        self.loop_depth -= 1

    def s_IfThenElse(self, s: Any) -> None:
        cond = self.expr(s.condition)
        self.flush()
        self.emit(f"if {cond.code}:")
        self.body(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self.body(s.else_case)

    def s_LetStmt(self, s: Any) -> None:
        value = self.cexpr(s.value)
        self.flush()
        name = self.define(s.var, value.lo, value.hi)
        self.emit(f"{name} = {value.code}")
        self.stmt(s.body)
        self.undefine(s.var)

    def s_AssertStmt(self, s: Any) -> None:
        cond = self.expr(s.condition)
        self.flush()
        self.emit(f"if not ({cond.code}):")
        self.indent += 1
        self.emit(f"_assert_fail({s.message!r})")
        self.indent -= 1
        self.stmt(s.body)

    def s_AttrStmt(self, s: Any) -> None:
        if s.key in ("thread_extent", "virtual_thread") and isinstance(s.node, IterVar):
            # GPU threads run one after another: programs whose threads communicate
            # through shared memory between barriers are not modeled.
            extent = self.cexpr(s.value)
            zero = CE("0", extent.dtype, 0, 0)
            self._loop(s.node.var, zero, extent, s.body)
            return
        self.stmt(s.body)

    def _allocate(self, data: Var, dtype: str, extents: list[CE]) -> str:
        size = " * ".join(e.code for e in extents) or "1"
        self.flush()
        name = self.define(data)
        self.emit(f"{name} = _alloc({size}, {self.np_dtype(dtype)})")
        self.mem_dtype[id(data)] = dt.element_of(dtype)
        return name

    def s_Allocate(self, s: Any) -> None:
        extents = [self.cexpr(e) for e in s.extents]
        self._allocate(s.buffer_var, s.dtype, extents)
        self.stmt(s.body)
        self.undefine(s.buffer_var)

    def s_DeclBuffer(self, s: Any) -> None:
        self.lookup(s.buffer.data)
        self.stmt(s.body)

    def s_BlockRealize(self, s: Any) -> None:
        block = s.block
        values = [self.cexpr(v) for v in s.iter_values]
        pred = s.predicate
        has_pred = not (isinstance(pred, IntImm) and pred.value == 1)
        cond = self.expr(pred) if has_pred else None
        self.flush()
        if cond is not None:
            self.emit(f"if {cond.code}:")
            self.indent += 1
        defined = []
        for iv, value in zip(block.iter_vars, values):
            lo, ext = self.cexpr(iv.dom.min), self.cexpr(iv.dom.extent)
            static = (lo.lo is not None and lo.lo == lo.hi and ext.lo is not None
                      and ext.lo == ext.hi)
            vlo, vhi = value.lo, value.hi
            inside = static and vlo is not None and vlo >= lo.lo and vhi < lo.lo + ext.lo
            name = self.define(iv.var)
            defined.append(iv.var)
            self.flush()
            self.emit(f"{name} = {value.code}")
            if not inside:
                self.emit(f"if not ({lo.code} <= {name} < {lo.code} + {ext.code}):")
                self.indent += 1
                self.emit(f"_bind_err({block.name!r}, {iv.var.name!r}, {name}, {lo.code}, "
                          f"{ext.code})")
                self.indent -= 1
            if static:
                blo, bhi = lo.lo, lo.lo + ext.lo - 1
                if vlo is not None and vhi is not None:
                    blo, bhi = max(blo, vlo), min(bhi, vhi)
                self.names[id(iv.var)] = (name, blo, max(blo, bhi))
            else:
                self.names[id(iv.var)] = (name, vlo, vhi)
        self.block(block)
        for v in defined:
            self.undefine(v)
        if cond is not None:
            self.indent -= 1

    def s_Block(self, s: Block) -> None:
        if s.iter_vars:
            raise InterpreterError(f"block {s.name!r} has iteration variables but no "
                                   "BlockRealize binding them", node=s)
        self.block(s)

    def block(self, b: Block) -> None:
        allocated = []
        for buf in b.alloc_buffers:
            extents = [self.cexpr(x) for x in buf.shape]
            self._allocate(buf.data, buf.dtype, extents)
            allocated.append(buf.data)
        for mb in b.match_buffers:
            allocated.extend(self.match_buffer(mb))
        if b.init is not None:
            conds = []
            for iv in b.iter_vars:
                if iv.iter_type == "reduce":
                    lo = self.cexpr(iv.dom.min)
                    conds.append(f"{self.lookup(iv.var)[0]} == {lo.code}")
            self.flush()
            if conds:
                self.emit(f"if {' and '.join(conds)}:")
                self.body(b.init)
            else:
                self.stmt(b.init)
        self.stmt(b.body)
        for v in allocated:
            self.undefine(v)

    def match_buffer(self, mb: Any) -> list[Var]:
        """Bind a ``match_buffer`` view to the region of its source; returns the variables
        it defined."""
        src = mb.source
        mem, _shape, strides, offset = self.layout(src.buffer)
        target = mb.buffer
        mins = [self.cexpr(r.min) for r in src.region]
        extents = [self.cexpr(r.extent) for r in src.region]
        terms = [f"{m.code} * {st.code}" for m, st in zip(mins, strides)]
        if offset is not None:
            terms.append(offset.code)
        base = self.fresh("_mb")
        self.flush()
        self.emit(f"{base} = {' + '.join(terms) or '0'}")
        nd = target.ndim
        keep = list(range(len(src.region) - nd, len(src.region))) if nd else []
        if len(src.region) < nd:
            raise InterpreterError(f"match_buffer {target.name}: the source region has fewer "
                                   "dimensions than the buffer", node=target)
        stride_ces = []
        for d in keep:
            name = self.fresh("_ms")
            self.emit(f"{name} = {strides[d].code}")
            stride_ces.append(CE(name, "int64", None, None))
        defined: list[Var] = []
        self.names[id(target.data)] = (mem, None, None)
        self.mem_dtype[id(target.data)] = self.mem_dtype.get(id(src.buffer.data),
                                                             src.buffer.dtype)
        defined.append(target.data)
        for s, d in zip(target.shape, keep):
            if isinstance(s, Var) and id(s) not in self.names:
                name = self.define(s)
                self.emit(f"{name} = {extents[d].code}")
                defined.append(s)
        for st, ce in zip(target.strides, stride_ces):
            if isinstance(st, Var) and id(st) not in self.names:
                self.emit(f"{self.define(st)} = {ce.code}")
                defined.append(st)
        eo = target.elem_offset
        if isinstance(eo, Var) and id(eo) not in self.names:
            self.emit(f"{self.define(eo)} = {base}")
            defined.append(eo)
        self.layout_override[id(target)] = (stride_ces, CE(base, "int64", None, None))
        return defined

    # -- the function ---------------------------------------------------------------
    def generate(self) -> str:
        func = self.func
        head = len(self.lines)
        checks: list[tuple[int, Buffer, int]] = []
        bound_dims: set[tuple[int, int]] = set()
        for j, p in enumerate(func.params):
            buf = func.buffer_map.get(p)
            if buf is None:
                name = self.define(p)
                self.emit(f"{name} = _p[{j}]")
                continue
            arr = f"_a{j}"
            self.emit(f"{arr} = _p[{j}]")
            mem = self.define(buf.data)
            self.names[id(p)] = self.names[id(buf.data)]
            self.mem_dtype[id(buf.data)] = buf.dtype
            self.mem_dtype[id(p)] = buf.dtype
            self.emit(f"{mem} = {arr}.reshape(-1)")
            for d, s in enumerate(buf.shape):
                if isinstance(s, Var) and id(s) not in self.names:
                    name = self.define(s, 0, dt.max_value(s.dtype))
                    self.emit(f"{name} = {arr}.shape[{d}]")
                    bound_dims.add((j, d))
                checks.append((j, buf, d))
            for d, s in enumerate(buf.strides):
                if isinstance(s, Var) and id(s) not in self.names:
                    name = self.define(s)
                    self.emit(f"{name} = {arr}.strides[{d}] // {arr}.itemsize")
            if isinstance(buf.elem_offset, Var) and id(buf.elem_offset) not in self.names:
                self.emit(f"{self.define(buf.elem_offset)} = 0")
        for j, buf, d in checks:
            if (j, d) in bound_dims:
                continue
            c = self.cexpr(buf.shape[d])
            self.flush()
            self.emit(f"if _a{j}.shape[{d}] != {c.code}:")
            self.indent += 1
            self.emit(f"_shape_err({buf.name!r}, {d}, _a{j}.shape[{d}], {c.code})")
            self.indent -= 1
        self.stmt(func.body)
        self.flush()
        prologue = ["    " + f"{name} = _K[{i}]" for i, name in
                    ((i, f"_k{i}") for i in range(len(self.consts)))]
        prologue += ["    " + f"{name} = _kw[{v.name!r}]" for v, name in self.free_vars]
        self.lines[head:head] = prologue
        return f"def {self.name}(_p, _kw):\n" + "\n".join(self.lines) + "\n    return None\n"
