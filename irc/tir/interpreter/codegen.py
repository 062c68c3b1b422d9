"""Translate a PrimFunc into the source of one Python function, compiled once.

Values: integers are Python ints kept within their dtype (``+ - *`` chains are wrapped
once where the result is used, which equals wrapping at every step since those
operations commute with reduction modulo 2**bits; interval bounds skip the wrap when no
overflow is possible); floats are numpy scalars of their dtype, so float32 arithmetic
rounds in float32; bfloat16 values compute as float32 and round when stored or cast;
vectors (Ramp, Broadcast, vector loads) are numpy arrays. Memory is a flat numpy array
per data pointer; every access checks its indices against the buffer's shape unless the
loop bounds prove it in range.

GPU kernels (an ``AttrStmt`` ``thread_extent`` of a ``blockIdx``/``threadIdx`` axis met
in host code, with everything under it) become a nested *block function* returning a
*thread function* (a generator that yields at each barrier) that ``simt.Launch`` runs
block by block, thread by thread: see ``simt.py`` for the execution model and
:meth:`PythonGenerator.launch_kernel` for the code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core import dtype as dt
from ...core.node import Node, node_fields
from ..analysis import collect_vars
from ..buffer import Buffer
from ..expr import Call, IntImm, IterVar, Let, StringImm, Var
from ..stmt import Allocate, AttrStmt, Block, BufferStore, For, LetStmt, Stmt
from .expr_codegen import CE, MAX_LOOP_NESTING, ExprCompiler, int_code
from .runtime import InterpreterError

GPU_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
            "threadIdx.z")
_SHARED_SCOPES = ("shared", "shared.dyn")


def is_launch(s: Stmt) -> bool:
    """Whether ``s`` launches a GPU grid or block axis (``thread_extent`` of a
    ``blockIdx``/``threadIdx`` iteration variable)."""
    return (isinstance(s, AttrStmt) and s.key == "thread_extent"
            and isinstance(s.node, IterVar)
            and s.node.thread_tag.startswith(("blockIdx.", "threadIdx.")))


@dataclass
class KernelScan:
    """What :func:`scan_kernel` finds in a kernel: its launches, the ids of the
    variables it defines, the ids of the data pointers it stores to, and whether it
    declares buffer views (``match_buffer``) that could hide a store."""

    launches: list[AttrStmt] = field(default_factory=list)
    defined: set[int] = field(default_factory=set)
    stored: set[int] = field(default_factory=set)
    has_views: bool = False


def scan_kernel(kernel: Stmt) -> KernelScan:
    """Scan the statements of ``kernel`` (see :class:`KernelScan`)."""
    out = KernelScan()
    stack: list[Any] = [kernel]
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
            continue
        if not isinstance(x, Node):
            continue
        if is_launch(x):
            out.launches.append(x)
        if isinstance(x, For):
            out.defined.add(id(x.loop_var))
        elif isinstance(x, (LetStmt, Let)):
            out.defined.add(id(x.var))
        elif isinstance(x, Allocate):
            out.defined.add(id(x.buffer_var))
        elif isinstance(x, IterVar):
            out.defined.add(id(x.var))
        elif isinstance(x, BufferStore):
            out.stored.add(id(x.buffer.data))
        elif isinstance(x, Block):
            out.defined.update(id(b.data) for b in x.alloc_buffers)
            out.has_views = out.has_views or bool(x.match_buffers)
        stack.extend(reversed([getattr(x, f) for f in node_fields(type(x)) if f != "span"]))
    return out


@dataclass
class Kernel:
    """The kernel being generated: its name, the extent of each launched axis, the Python
    names of the block/thread parameters, and what its body needs from the launch."""

    name: str
    extents: dict[str, CE]
    params: dict[str, str]
    memory: str
    gid: str
    # Python names of the global memories the kernel may write (None: any); reads of the
    # others cannot race and are not tracked.
    written: set[str] | None = None
    # Python name of each global memory the kernel accesses -> its name for messages.
    shadows: dict[str, str] = field(default_factory=dict)
    barriers: int = 0


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
            if self.kernel is not None:
                self.barrier(s)
            return
        c = self.expr(s.value)
        self.flush()
        self.emit(c.code)

    def s_BufferStore(self, s: Any) -> None:
        buf = s.buffer
        value = self.cexpr(s.value)
        flat, vector, _ = self.address(buf, s.indices)
        flat = self.tracked(buf, flat, vector, True)
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
        barriers = 0 if self.kernel is None else self.kernel.barriers
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
            if self.kernel is not None and self.kernel.barriers > barriers:
                self.emit(f"yield from {fn}()")  # the loop holds barriers: a generator
            else:
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
        if is_launch(s):
            if self.kernel is None:
                self.launch_kernel(s)
            else:
                self.bind_thread(s)
            return
        if s.key in ("thread_extent", "virtual_thread") and isinstance(s.node, IterVar):
            # Virtual threads (and thread axes other than blocks' and threads') are loops.
            extent = self.cexpr(s.value)
            zero = CE("0", extent.dtype, 0, 0)
            self._loop(s.node.var, zero, extent, s.body)
            return
        self.stmt(s.body)

    # -- GPU kernels ------------------------------------------------------------------
    def launch_kernel(self, s: AttrStmt) -> None:
        """Emit the kernel that starts at launch ``s`` (see ``simt.py``)::

            _ext1 = <extent of blockIdx.x> ...             # evaluated at kernel entry
            _launch2 = _Launch("main_kernel", (("blockIdx.x", _ext1), ...))
            v3_B_sh = _launch2.shadow("B")                # each global memory it uses
            def _block3(_bx, _by, _bz, _shared):
                def _thread4(_tx, _ty, _tz, _gid):
                    <kernel body; a barrier is `yield <barrier number>`>
                return _thread4
            _launch2.run(_block3, <whether the kernel has barriers>)
        """
        count = self.kernel_count
        self.kernel_count += 1
        name = f"{self.func_name}_kernel" + (f"_{count}" if count else "")
        scan = scan_kernel(s)
        pairs, extents = [], {}
        for launch in scan.launches:
            tag = launch.node.thread_tag
            if tag not in GPU_AXES:
                raise InterpreterError(f"{self.func_name}: kernel {name} launches the unknown "
                                       f"thread axis {tag!r}; use one of {', '.join(GPU_AXES)}",
                                       node=launch, span=launch.span)
            for v in collect_vars(launch.value):
                if id(v) in scan.defined:
                    raise InterpreterError(
                        f"{self.func_name}: the extent of {tag} in kernel {name} uses "
                        f"{v.name}, which is defined inside the kernel; launch extents are "
                        "evaluated when the kernel starts and may only use values defined "
                        "before it", node=launch, span=launch.span)
            c = self.cexpr(launch.value)
            self.flush()
            ext = self.fresh("_ext")
            self.emit(f"{ext} = {c.code}")
            extents.setdefault(tag, CE(ext, c.dtype, c.lo, c.hi))
            pairs.append(f"({tag!r}, {ext}), ")
        launch_obj = self.fresh("_launch")
        self.emit(f"{launch_obj} = _Launch({name!r}, ({''.join(pairs)}))")
        shadows_at, shadows_indent = len(self.lines), self.indent
        params = {tag: self.fresh("_" + tag.replace("Idx.", "")) for tag in GPU_AXES}
        kernel = Kernel(name=name, extents=extents, params=params,
                        memory=self.fresh("_shared"), gid=self.fresh("_gid"))
        if not scan.has_views:
            kernel.written = {self.names[v][0] for v in scan.stored if v in self.names}
        block_fn, thread_fn = self.fresh("_block"), self.fresh("_thread")
        self.emit(f"def {block_fn}({', '.join(params[t] for t in GPU_AXES[:3])}, "
                  f"{kernel.memory}):")
        self.indent += 1
        self.emit(f"def {thread_fn}({', '.join(params[t] for t in GPU_AXES[3:])}, "
                  f"{kernel.gid}):")
        saved_depth, self.loop_depth = self.loop_depth, 0
        self.kernel = kernel
        self.body(s)
        self.kernel = None
        self.loop_depth = saved_depth
        self.emit(f"return {thread_fn}")
        self.indent -= 1
        self.emit(f"{launch_obj}.run({block_fn}, {kernel.barriers > 0})")
        self.lines[shadows_at:shadows_at] = [
            "    " * shadows_indent + f"{mem}_sh = {launch_obj}.shadow({label!r})"
            for mem, label in kernel.shadows.items()]

    def bind_thread(self, s: AttrStmt) -> None:
        """A launch inside the kernel: its variable is the block's or thread's index."""
        kernel = self.kernel
        tag = s.node.thread_tag
        extent = kernel.extents[tag]
        hi = None if extent.hi is None else max(0, extent.hi - 1)
        self.define(s.node.var, 0, hi, name=kernel.params[tag])
        self.stmt(s.body)
        self.undefine(s.node.var)

    def barrier(self, s: Any) -> None:
        """``T.tvm_storage_sync("shared")`` (statement ``s``) in a kernel: the thread yields
        the barrier's number (its order among the kernel's barriers) to the scheduler."""
        args = s.value.args
        scope = args[0].value if args and isinstance(args[0], StringImm) else None
        if scope not in _SHARED_SCOPES:
            raise InterpreterError(f'{self.func_name}: T.tvm_storage_sync("{scope}") in '
                                   f"kernel {self.kernel.name} is not modeled by the "
                                   "interpreter; only block barriers "
                                   '(T.tvm_storage_sync("shared")) are', node=s, span=s.span)
        self.kernel.barriers += 1
        self.flush()
        self.emit(f"yield {self.kernel.barriers}")

    def _allocate(self, data: Var, dtype: str, extents: list[CE], scope: str,
                  label: str, where: Any) -> str:
        """Emit an allocation: host memory (global), or in a kernel one array per block
        (shared) or per thread (local and other scopes)."""
        size = " * ".join(e.code for e in extents) or "1"
        self.flush()
        name = self.define(data)
        np_dtype = self.np_dtype(dtype)
        kernel = self.kernel
        if kernel is None:
            self.emit(f"{name} = _alloc({size}, {np_dtype})")
            kind = "global"
        elif scope in _SHARED_SCOPES:
            self.emit(f"{name}, {name}_sh = {kernel.memory}.alloc({name!r}, {label!r}, "
                      f"{size}, {np_dtype})")
            kind = "shared"
        elif scope == "global":
            raise InterpreterError(f"{self.func_name}: kernel {kernel.name} allocates {label} "
                                   "in global memory, which a CUDA kernel cannot do; allocate "
                                   "it before the kernel (host code) or use shared or local "
                                   "memory", node=where, span=where.span)
        else:
            self.emit(f"{name} = _alloc_uninitialized({size}, {np_dtype})")
            kind = "local"
        self.memories[name] = (kind, label)
        self.mem_dtype[id(data)] = dt.element_of(dtype)
        return name

    def s_Allocate(self, s: Any) -> None:
        extents = [self.cexpr(e) for e in s.extents]
        self._allocate(s.buffer_var, s.dtype, extents, s.scope, s.buffer_var.name, s)
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
            self._allocate(buf.data, buf.dtype, extents, buf.scope, buf.name, b)
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
                self.memories[name] = ("global", p.name)
                continue
            arr = f"_a{j}"
            self.emit(f"{arr} = _p[{j}]")
            mem = self.define(buf.data)
            self.memories[mem] = ("global", buf.name)
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
