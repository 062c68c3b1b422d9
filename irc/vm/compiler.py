"""Graph functions to VM bytecode, with static memory planning.

Input: an IRModule whose graph functions contain only what the VM executes — calls of
``call_tir`` (a PrimFunc of the module, compiled into the executable's kernel library),
``call_dps_packed`` / ``call_pure_packed`` (runtime functions by name), calls of other
graph functions, tuples, constants, shapes, ``If`` and ``match_cast``. Any other operator
means the module was not legalized; the error names the operator, the function and the
binding.

Memory planning: every ``call_tir`` output gets an ``alloc`` instruction. Tensors of static
shape that do not escape the function (are not returned, directly or inside a tuple, and
are not handed to a callee that might return them) are assigned to storage blocks that
are reused between tensors whose lifetimes do not overlap (greedy best fit in program
order; programs have no loops, so program order is a valid order of execution). Storage is
allocated once per VM and per function; returned tensors are fresh every call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import VMError
from ..core.module import IRModule
from ..ir.expr import (
    Call,
    Constant,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    Op,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.struct_info import (
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ..tir import expr as E
from ..tir.stmt import PrimFunc
from .bytecode import AllocSpec, SymExpr, ValueCheck, VMFunction

_SYM_OPS = {
    E.Add: "add", E.Sub: "sub", E.Mul: "mul", E.FloorDiv: "floordiv",
    E.FloorMod: "floormod", E.Min: "min", E.Max: "max",
}


class ConstantPool:
    """Constants shared by all functions of an executable (deduplicated by identity)."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._index: dict[int, int] = {}
        self._keys: list[Any] = []  # keeps keys alive so their ids stay unique

    def add(self, value: Any, key: Any = None) -> int:
        key = value if key is None else key
        idx = self._index.get(id(key))
        if idx is None:
            idx = len(self.values)
            self.values.append(value)
            self._index[id(key)] = idx
            self._keys.append(key)
        return idx


class FunctionCompiler:
    """Compiles one graph function; see the module docstring."""

    def __init__(self, mod: IRModule, name: str, func: Function, consts: ConstantPool):
        self.mod = mod
        self.name = name
        self.func = func
        self.consts = consts
        self.code: list[tuple] = []
        self.num_regs = 0
        self.regs: dict[int, int] = {}  # id(graph Var) -> register
        self.keep: list[Any] = []
        self.slots: dict[int, int] = {}  # id(tir.Var) -> shape-heap slot
        self.slot_names: list[str] = []
        self.exprs: list[SymExpr] = []
        self.checks: list[ValueCheck] = []
        self.allocs: list[AllocSpec] = []
        self.alloc_pcs: list[int] = []
        self.current_binding = ""

    # -- registers and symbolic values ------------------------------------------------
    def new_reg(self) -> int:
        self.num_regs += 1
        return self.num_regs - 1

    def emit(self, *ins: Any) -> int:
        self.code.append(tuple(ins))
        return len(self.code) - 1

    def slot(self, v: E.Var, bind: bool) -> int | None:
        s = self.slots.get(id(v))
        if s is None and bind:
            s = len(self.slot_names)
            self.slots[id(v)] = s
            self.slot_names.append(v.name)
            self.keep.append(v)
        return s

    def sym(self, e: E.PrimExpr) -> SymExpr:
        """Encode an integer shape expression over the shape heap."""
        if isinstance(e, E.IntImm):
            return e.value
        if isinstance(e, E.Var):
            s = self.slot(e, bind=False)
            if s is None:
                raise self.error(f"symbolic dimension {e.name} is used before any parameter "
                                 "or match_cast defines it")
            return ["var", s]
        if isinstance(e, E.Cast) and dt.is_integer(e.dtype):
            return self.sym(e.value)
        op = _SYM_OPS.get(type(e))
        if op is None:
            raise self.error(f"shape expression {e!r} uses an operation the VM cannot "
                             "evaluate; only + - * // % min max of integers")
        return [op, self.sym(e.a), self.sym(e.b)]

    def expr_index(self, e: E.PrimExpr) -> int:
        self.exprs.append(self.sym(e))
        return len(self.exprs) - 1

    def error(self, message: str, span: Any = None) -> VMError:
        where = f" (binding {self.current_binding})" if self.current_binding else ""
        return VMError(f"function {self.name}{where}: {message}", span=span)

    # -- struct-info checks ---------------------------------------------------------------
    def dim_checks(self, dims: tuple | None, bind: bool) -> list | None:
        """Per dimension: a constant, ``["bind", slot]`` where a symbolic variable is first
        seen (when ``bind``), else ``["expr", index]`` to compare against."""
        if dims is None:
            return None
        out: list = []
        for d in dims:
            if isinstance(d, E.IntImm):
                out.append(d.value)
            elif isinstance(d, E.Var) and self.slot(d, bind=False) is None and bind:
                out.append(["bind", self.slot(d, bind=True)])
            else:
                out.append(["expr", self.expr_index(d)])
        return out

    def value_check(self, sinfo: StructInfo, bind: bool) -> ValueCheck:
        if isinstance(sinfo, TensorStructInfo):
            return ValueCheck(kind="tensor", dtype=sinfo.dtype, ndim=sinfo.ndim,
                              dims=self.dim_checks(sinfo.shape, bind))
        if isinstance(sinfo, TupleStructInfo):
            return ValueCheck(kind="tuple", fields=[self.value_check(f, bind)
                                                    for f in sinfo.fields])
        if isinstance(sinfo, ShapeStructInfo):
            return ValueCheck(kind="shape", ndim=sinfo.ndim,
                              dims=self.dim_checks(sinfo.values, bind))
        if isinstance(sinfo, PrimStructInfo):
            return ValueCheck(kind="prim", dtype=sinfo.dtype)
        return ValueCheck(kind="object")

    # -- compilation ------------------------------------------------------------------------
    def compile(self) -> VMFunction:
        params = []
        param_checks = []
        for p in self.func.params:
            reg = self.new_reg()
            self.regs[id(p)] = reg
            self.keep.append(p)
            params.append(p.name_hint)
        for p in self.func.params:
            param_checks.append(self.value_check(p.sinfo, bind=True))
        result = self.expr(self.func.body)
        self.emit("ret", result)
        storage_sizes, inter = self.plan_memory()
        num_input = self.func.attrs.get("num_input")
        return VMFunction(
            name=self.name, params=params, num_regs=self.num_regs, code=self.code,
            param_checks=param_checks, checks=self.checks, allocs=self.allocs,
            exprs=self.exprs, slot_names=self.slot_names, storage_sizes=storage_sizes,
            num_input=int(num_input) if num_input is not None else None,
            intermediate_bytes=inter,
            index_extents={str(k): int(v) for k, v in
                           (self.func.attrs.get("index_extents") or {}).items()},
        )

    def expr(self, e: Expr) -> int:
        method = getattr(self, "_" + type(e).__name__, None)
        if method is None:
            raise self.error(f"the VM cannot execute {type(e).__name__} expressions",
                             span=e.span)
        return method(e)

    def _Var(self, e: Var) -> int:
        reg = self.regs.get(id(e))
        if reg is None:
            raise self.error(f"variable {e.name_hint} is used before it is defined", e.span)
        return reg

    _DataflowVar = _Var

    def _Constant(self, e: Constant) -> int:
        dst = self.new_reg()
        data = e.data
        if e.struct_info.dtype == "bfloat16":  # held as bits; the VM's values are ml_dtypes'
            data = data.view(dt.user_numpy("bfloat16"))
        self.emit("const", dst, self.consts.add(data, key=e))
        return dst

    def _Tuple(self, e: Tuple) -> int:
        regs = [self.expr(f) for f in e.fields]
        dst = self.new_reg()
        self.emit("tuple", dst, regs)
        return dst

    def _TupleGetItem(self, e: TupleGetItem) -> int:
        src = self.expr(e.tuple_value)
        dst = self.new_reg()
        self.emit("getitem", dst, src, e.index)
        return dst

    def _ShapeExpr(self, e: ShapeExpr) -> int:
        dst = self.new_reg()
        self.emit("shape", dst, [self.expr_index(v) for v in e.values])
        return dst

    def _PrimValue(self, e: PrimValue) -> int:
        dst = self.new_reg()
        if dt.is_integer(e.value.dtype) or dt.is_bool(e.value.dtype):
            self.emit("prim", dst, self.expr_index(e.value))
        elif isinstance(e.value, E.FloatImm):
            self.emit("const", dst, self.consts.add(dt.storage(e.value.value,
                                                                    e.value.dtype)))
        else:
            raise self.error(f"the VM cannot evaluate the scalar expression {e.value!r}",
                             e.span)
        return dst

    def _StringImm(self, e: StringImm) -> int:
        dst = self.new_reg()
        self.emit("const", dst, self.consts.add(e.value, key=e))
        return dst

    def _DataTypeImm(self, e: DataTypeImm) -> int:
        dst = self.new_reg()
        self.emit("const", dst, self.consts.add(e.value, key=e))
        return dst

    def _SeqExpr(self, e: SeqExpr) -> int:
        for block in e.blocks:
            for b in block.bindings:
                self.current_binding = b.var.name_hint
                if isinstance(b, VarBinding):
                    reg = self.expr(b.value)
                elif isinstance(b, MatchCast):
                    reg = self.expr(b.value)
                    self.checks.append(self.value_check(b.struct_info, bind=True))
                    self.emit("match", reg, len(self.checks) - 1, b.var.name_hint)
                else:  # pragma: no cover - the binding kinds are closed
                    raise self.error(f"unknown binding {type(b).__name__}")
                self.regs[id(b.var)] = reg
                self.keep.append(b.var)
        self.current_binding = ""
        return self.expr(e.body)

    def _If(self, e: If) -> int:
        cond = self.expr(e.cond)
        dst = self.new_reg()
        branch = self.emit("if", cond, -1)
        self.emit("move", dst, self.expr(e.true_branch))
        jump = self.emit("goto", -1)
        self.code[branch] = ("if", cond, len(self.code))
        self.emit("move", dst, self.expr(e.false_branch))
        self.code[jump] = ("goto", len(self.code))
        return dst

    def _Function(self, e: Function) -> int:
        raise self.error("nested (local) functions are not supported by the VM; define them "
                         "at module level and call them by name", e.span)

    def _Call(self, e: Call) -> int:
        op = e.op
        if isinstance(op, Op):
            handler = getattr(self, "_call_" + op.name.replace(".", "_"), None)
            if handler is None:
                raise self.error(
                    f"operator R.{op.name} has no VM implementation; legalize it first "
                    "(passes.LegalizeOps) or compile with irc.compile, which does", e.span)
            return handler(e)
        if isinstance(op, GlobalVar):
            callee = self.mod.functions.get(op) if op in self.mod.functions else \
                self.mod.get(op.name_hint)
            if isinstance(callee, PrimFunc):
                raise self.error(f"PrimFunc {op.name_hint} is called directly; call it through "
                                 "R.call_tir", e.span)
            if callee is None:
                raise self.error(f"call of unknown function {op.name_hint}", e.span)
            args = [self.expr(a) for a in e.args]
            dst = self.new_reg()
            self.emit("call", op.name_hint, args, dst)
            return dst
        if isinstance(op, ExternFunc):
            args = [self.expr(a) for a in e.args]
            dst = self.new_reg()
            self.emit("packed", op.global_symbol, args, dst)
            return dst
        raise self.error(f"cannot call a value of kind {type(op).__name__}", e.span)

    def _outputs(self, e: Call) -> tuple[list[int], int]:
        """Allocate the outputs of a destination-passing call."""
        sinfos = list(e.sinfo_args)
        if len(sinfos) == 1 and isinstance(sinfos[0], TupleStructInfo):
            sinfos = list(sinfos[0].fields)
        outs = []
        for s in sinfos:
            if not isinstance(s, TensorStructInfo) or s.shape is None or not s.dtype:
                raise self.error(f"outputs of {e.op.name if isinstance(e.op, Op) else 'call'} "
                                 f"need a known shape and dtype, got {s!r}", e.span)
            static = s.static_shape
            if static is not None:
                spec = AllocSpec(shape=list(static), dtype=s.dtype, static=True)
            else:
                spec = AllocSpec(shape=[self.expr_index(d) for d in s.shape], dtype=s.dtype,
                                 static=False)
            self.allocs.append(spec)
            reg = self.new_reg()
            self.alloc_pcs.append(self.emit("alloc", reg, len(self.allocs) - 1))
            outs.append(reg)
        if len(outs) == 1 and not (len(e.sinfo_args) == 1 and
                                   isinstance(e.sinfo_args[0], TupleStructInfo)):
            return outs, outs[0]
        dst = self.new_reg()
        self.emit("tuple", dst, outs)
        return outs, dst

    def _tuple_args(self, e: Expr) -> list[int]:
        if isinstance(e, Tuple):
            return [self.expr(f) for f in e.fields]
        return [self.expr(e)]

    def _call_call_tir(self, e: Call) -> int:
        gv = e.args[0]
        if not isinstance(gv, GlobalVar) or gv.name_hint not in self.mod:
            raise self.error(f"R.call_tir of {gv!r}, which is not a function of the module",
                             e.span)
        if not isinstance(self.mod[gv.name_hint], PrimFunc):
            raise self.error(f"R.call_tir target {gv.name_hint} is not a PrimFunc", e.span)
        ins = self._tuple_args(e.args[1])
        extra = []
        if len(e.args) > 2:
            shape = e.args[2]
            if not isinstance(shape, ShapeExpr):
                raise self.error("the third operand of R.call_tir must be a shape of "
                                 "extra integer arguments", e.span)
            for v in shape.values:
                reg = self.new_reg()
                self.emit("prim", reg, self.expr_index(v))
                extra.append(reg)
        outs, dst = self._outputs(e)
        self.emit("kernel", gv.name_hint, ins + outs + extra)
        return dst

    def _call_call_dps_packed(self, e: Call) -> int:
        fn = e.args[0]
        if not isinstance(fn, ExternFunc):
            raise self.error("R.call_dps_packed needs a function name", e.span)
        ins = self._tuple_args(e.args[1])
        outs, dst = self._outputs(e)
        self.emit("packed", fn.global_symbol, ins + outs, -1)
        return dst

    def _call_call_pure_packed(self, e: Call) -> int:
        fn = e.args[0]
        if not isinstance(fn, ExternFunc):
            raise self.error("R.call_pure_packed needs a function name", e.span)
        # The arguments are one tuple operand; the function takes them one by one.
        args = [r for a in e.args[1:] for r in self._tuple_args(a)]
        dst = self.new_reg()
        self.emit("packed", fn.global_symbol, args, dst)
        return dst

    def _call_shape_of(self, e: Call) -> int:
        src = self.expr(e.args[0])
        dst = self.new_reg()
        self.emit("packed", "vm.builtin.shape_of", [src], dst)
        return dst

    def _call_tensor_to_shape(self, e: Call) -> int:
        src = self.expr(e.args[0])
        dst = self.new_reg()
        self.emit("packed", "vm.builtin.tensor_to_shape", [src], dst)
        return dst

    # -- memory planning --------------------------------------------------------------------
    def plan_memory(self) -> tuple[list[int], int]:
        parent = list(range(self.num_regs))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def union(a: int, b: int) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[ra] = rb

        last_use: dict[int, int] = {}
        returned: list[int] = []
        for pc, ins in enumerate(self.code):
            op = ins[0]
            used: list[int] = []
            if op == "tuple":
                used = list(ins[2])
                for r in used:
                    union(ins[1], r)
            elif op == "getitem":
                used = [ins[2]]
                union(ins[1], ins[2])
            elif op == "move":
                used = [ins[2]]
                union(ins[1], ins[2])
            elif op in ("call", "packed"):
                used = list(ins[2])
                if ins[3] >= 0:
                    for r in used:  # a callee may return (part of) an argument
                        union(ins[3], r)
            elif op == "kernel":
                used = list(ins[2])
            elif op in ("if", "match"):
                used = [ins[1]]
            elif op == "ret":
                used = [ins[1]]
                returned.append(ins[1])
            for r in used:
                last_use[r] = pc
        escaping = {find(r) for r in returned}
        class_end: dict[int, int] = {}
        for r, pc in last_use.items():
            c = find(r)
            class_end[c] = max(class_end.get(c, -1), pc)

        storage_sizes: list[int] = []
        free: list[int] = []
        active: list[tuple[int, int]] = []  # (end pc, storage index)
        intermediate = 0
        for alloc_index, pc in enumerate(self.alloc_pcs):
            spec = self.allocs[alloc_index]
            reg = self.code[pc][1]
            cls = find(reg)
            if not spec.static or cls in escaping:
                continue
            nbytes = max(1, int(np.prod(spec.shape, dtype=np.int64)) * dt.itemsize(spec.dtype))
            intermediate += nbytes
            still = []
            for end, sid in active:
                if end < pc:
                    free.append(sid)
                else:
                    still.append((end, sid))
            active = still
            fits = [s for s in free if storage_sizes[s] >= nbytes]
            if fits:
                sid = min(fits, key=lambda s: storage_sizes[s])
            elif free:
                sid = max(free, key=lambda s: storage_sizes[s])
                storage_sizes[sid] = nbytes
            else:
                sid = len(storage_sizes)
                storage_sizes.append(nbytes)
            if sid in free:
                free.remove(sid)
            spec.storage = sid
            active.append((class_end.get(cls, pc), sid))
        return storage_sizes, intermediate


def compile_functions(mod: IRModule, consts: ConstantPool) -> dict[str, VMFunction]:
    """Compile every graph function of ``mod``."""
    out = {}
    for gv, func in mod.functions.items():
        if isinstance(func, Function):
            out[gv.name_hint] = FunctionCompiler(mod, gv.name_hint, func, consts).compile()
    for name in _recursive_functions(out):
        # A function that can re-enter itself would share its planned storage with its
        # own nested activation; give every intermediate of it a fresh allocation.
        fn = out[name]
        for spec in fn.allocs:
            spec.storage = -1
        fn.storage_sizes = []
        fn.intermediate_bytes = 0
    return out


def _recursive_functions(funcs: dict[str, VMFunction]) -> set[str]:
    """Names of the functions that can (directly or indirectly) call themselves."""
    calls = {name: {ins[1] for ins in fn.code if ins[0] == "call"} for name, fn in
             funcs.items()}
    recursive = set()
    for start in funcs:
        seen: set[str] = set()
        stack = list(calls[start])
        while stack:
            callee = stack.pop()
            if callee == start:
                recursive.add(start)
                break
            if callee in seen or callee not in calls:
                continue
            seen.add(callee)
            stack.extend(calls[callee])
    return recursive
