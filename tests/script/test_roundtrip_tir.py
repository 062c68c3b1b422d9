"""Round trips of loop IR built by hand (every node of irc/tir/expr.py and stmt.py) and
with te.create_prim_func."""

import math

import pytest
from script_helpers import assert_roundtrip, parse_error

from irc import te
from irc import tir as T
from irc.ir import IRModule
from irc.tir import expr as E
from irc.tir import stmt as S
from irc.tir.buffer import BufferRegion, MatchBufferRegion, decl_buffer


def i32(v):
    return E.IntImm(dtype="int32", value=v)


def i64(v):
    return E.IntImm(dtype="int64", value=v)


def func(params, body, buffer_map=None, attrs=None, ret="void"):
    attrs = {"global_symbol": "main"} if attrs is None else attrs
    return S.PrimFunc(params=tuple(params), buffer_map=buffer_map or {}, body=body,
                      attrs=attrs, ret_dtype=ret)


def buffer_param(name, shape, dtype="float32", **kw):
    buf = decl_buffer(shape, dtype, name, **kw)
    return E.Var(name=name, dtype="handle"), buf


def test_every_expression_node():
    pa, A = buffer_param("A", (16,))
    pb, B = buffer_param("B", (16,), "int32")
    x = T.var("x", "float32")
    n = T.var("n", "int32")
    b = T.var("b", "bool")
    i = T.var("i")
    ld = E.BufferLoad(dtype="float32", buffer=A, indices=(i,))
    ldi = E.BufferLoad(dtype="int32", buffer=B, indices=(i,))
    bin_ops = [cls(dtype="int32", a=ldi, b=n) for cls in
               (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max)]
    cmps = [cls(dtype="bool", a=ldi, b=n) for cls in (E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE)]
    lv = E.Var(name="t", dtype="int32")
    values = bin_ops + [
        E.Cast(dtype="int32", value=x),
        E.Select(dtype="int32", condition=b, true_value=n, false_value=i32(3)),
        E.Let(dtype="int32", var=lv, value=n, body=lv * 2 + lv),
        E.Call(dtype="int32", op="if_then_else", args=(cmps[2], n, i32(0))),
        E.Call(dtype="int32", op="bitwise_and", args=(n, i32(7))),
        E.Call(dtype="int32", op="my_intrin", args=(n, E.StringImm(value="s"))),
        E.Call(dtype="int32", op="call_extern", args=(E.StringImm(value="ext"), n)),
        E.Call(dtype="int32", op="reinterpret", args=(x,)),
        E.Call(dtype="int32", op="popcount", args=(n,)),
        E.Cast(dtype="int32", value=E.Call(dtype="float32", op="exp", args=(x,))),
        E.Cast(dtype="int32", value=E.Call(dtype="bool", op="isnan", args=(x,))),
    ]
    conds = cmps + [E.And(dtype="bool", a=b, b=cmps[0]), E.Or(dtype="bool", a=b, b=cmps[1]),
                    E.Not(dtype="bool", a=b)]
    body = [S.BufferStore(buffer=B, value=v, indices=(i,)) for v in values]
    body += [S.BufferStore(buffer=B, value=E.Select(dtype="int32", condition=c,
                                                    true_value=i32(1), false_value=i32(0)),
                           indices=(i,)) for c in conds]
    fl = [E.FloatImm(dtype="float32", value=v) for v in (0.5, -2.0, 1e-30, math.inf, -math.inf)]
    fl.append(E.FloatImm(dtype="float16", value=0.25).astype("float32"))
    fl.append(E.Cast(dtype="float32", value=E.FloatImm(dtype="float64", value=math.nan)))
    body += [S.BufferStore(buffer=A, value=ld * v, indices=(i,)) for v in fl]
    body.append(S.BufferStore(buffer=B, value=E.Cast(dtype="int32", value=E.IntImm(
        dtype="uint8", value=200)) + E.Cast(dtype="int32", value=i64(-5)), indices=(i,)))
    loop = S.For(loop_var=i, min=i32(0), extent=i32(16), kind="serial",
                 body=S.SeqStmt(seq=tuple(body)))
    f = func([pa, pb, x, n, b], loop, {pa: A, pb: B})
    assert_roundtrip(f)


def test_vectors_ramp_broadcast_and_slices():
    pa, A = buffer_param("A", (64,))
    pc, C = buffer_param("C", (64,))
    i = T.var("i")
    ramp1 = E.Ramp(dtype="int32x16", base=i * 16, stride=i32(1), lanes=16)
    ramp2 = E.Ramp(dtype="int32x4", base=i, stride=i32(4), lanes=4)
    const_ramp = E.Ramp(dtype="int32x8", base=i32(8), stride=i32(1), lanes=8)
    bc = E.Broadcast(dtype="float32x16", value=E.FloatImm(dtype="float32", value=1.0),
                     lanes=16)
    load = E.BufferLoad(dtype="float32x16", buffer=A, indices=(ramp1,))
    body = S.SeqStmt(seq=(
        S.BufferStore(buffer=C, value=E.Add(dtype="float32x16", a=load, b=bc),
                      indices=(ramp1,)),
        S.BufferStore(buffer=C, value=E.BufferLoad(dtype="float32x4", buffer=A,
                                                   indices=(ramp2,)), indices=(ramp2,)),
        S.BufferStore(buffer=C, value=E.BufferLoad(dtype="float32x8", buffer=A,
                                                   indices=(const_ramp,)),
                      indices=(const_ramp,)),
    ))
    loop = S.For(loop_var=i, min=i32(0), extent=i32(4), kind="vectorized", body=body)
    f = assert_roundtrip(func([pa, pc], loop, {pa: A, pc: C}))
    text = f.script()
    assert "C[i * 16:i * 16 + 16] = A[i * 16:i * 16 + 16] + T.Broadcast(T.float32(1.0), 16)" \
        in text
    assert "T.Ramp(i, 4, 4)" in text and "C[8:16]" in text


def test_loops_of_every_kind():
    pa, A = buffer_param("A", (8, 8))
    i, j, k, t = T.var("i"), T.var("j"), T.var("k"), T.var("t")
    store = S.BufferStore(buffer=A, value=E.FloatImm(dtype="float32", value=0.0),
                          indices=(i, j))
    inner = S.For(loop_var=j, min=i32(2), extent=i32(6), kind="unrolled", body=store,
                  annotations={"pragma_unroll_explicit": 0})
    mid = S.For(loop_var=k, min=i32(0), extent=i, kind="serial", body=inner)  # uses i
    thread = S.For(loop_var=t, min=i32(0), extent=i32(32), kind="thread_binding", body=mid,
                   thread_tag="threadIdx.x")
    outer = S.For(loop_var=i, min=i32(0), extent=i32(8), kind="parallel", body=thread,
                  annotations={"pragma_auto_unroll_max_step": 16, "tag": "x"})
    sym = T.var("m")
    tail = S.For(loop_var=T.var("q"), min=sym, extent=sym * 2, kind="serial",
                 body=S.Evaluate(value=i32(0)))
    ser = S.For(loop_var=T.var("s"), min=i32(0), extent=i32(4), kind="serial",
                body=S.Evaluate(value=i32(1)), annotations={"a": [1, 2]})
    f = func([pa, sym], S.SeqStmt(seq=(outer, tail, ser)), {pa: A})
    text = assert_roundtrip(f).script()
    assert "for k in range(i):" in text  # not merged into a grid: extent uses i
    assert "T.unroll(2, 8, annotations=" in text
    assert 'T.thread_binding(32, thread="threadIdx.x")' in text


def test_grid_and_nested_blocks_with_everything():
    pa, A = buffer_param("A", (T.const(16, "int64"), T.const(16, "int64")))
    pb, B = buffer_param("B", (T.const(16, "int64"),))
    i, j = T.var("i", "int64"), T.var("j", "int64")
    vi, vj = T.var("vi", "int64"), T.var("vj", "int64")
    local = decl_buffer((i64(16),), "float32", "acc", scope="local")
    sub = decl_buffer((i64(4),), "float32", "sub", strides=(i64(1),),
                      elem_offset=T.var("off", "int64"))
    block = S.Block(
        name="reduce",
        iter_vars=(E.IterVar(var=vi, dom=E.Range(min=i64(0), extent=i64(16))),
                   E.IterVar(var=vj, dom=E.Range(min=i64(0), extent=i64(16)),
                             iter_type="reduce")),
        reads=(BufferRegion(buffer=A, region=(E.Range(min=vi, extent=i64(1)),
                                              E.Range(min=i64(0), extent=i64(16)))),),
        writes=(BufferRegion.full(B),),
        init=S.BufferStore(buffer=B, value=E.FloatImm(dtype="float32", value=0.0),
                           indices=(vi,)),
        body=S.BufferStore(buffer=B, value=E.BufferLoad(dtype="float32", buffer=B,
                                                        indices=(vi,)) +
                           E.BufferLoad(dtype="float32", buffer=A, indices=(vi, vj)),
                           indices=(vi,)),
        alloc_buffers=(local,),
        match_buffers=(MatchBufferRegion(buffer=sub, source=BufferRegion(
            buffer=A, region=(E.Range(min=vi, extent=i64(1)),
                              E.Range(min=i64(4), extent=i64(4))))),),
        annotations={"schedule_rule": "None", "n": 3},
    )
    realize = S.BlockRealize(iter_values=(i, j), predicate=i < j + i64(20), block=block)
    loops = S.For(loop_var=i, min=i64(0), extent=i64(16), kind="serial",
                  body=S.For(loop_var=j, min=i64(0), extent=i64(16), kind="serial",
                             body=realize))
    remap_block = S.Block(
        name="copy", iter_vars=(E.IterVar(var=T.var("u", "int64"),
                                          dom=E.Range(min=i64(0), extent=i64(16))),
                                E.IterVar(var=T.var("w", "int64"),
                                          dom=E.Range(min=i64(0), extent=i64(16)))),
        reads=(), writes=(), body=S.Evaluate(value=i32(0)))
    i2, j2 = T.var("i", "int64"), T.var("j", "int64")
    remap = S.For(loop_var=i2, min=i64(0), extent=i64(16), kind="serial",
                  body=S.For(loop_var=j2, min=i64(0), extent=i64(16), kind="serial",
                             body=S.BlockRealize(iter_values=(i2, j2),
                                                 predicate=T.const(True), block=remap_block)))
    opaque = S.Block(name="opaque", iter_vars=(
        E.IterVar(var=T.var("o"), dom=E.Range(min=i32(3), extent=i32(5)),
                  iter_type="opaque"),), reads=(), writes=(), body=S.Evaluate(value=i32(0)))
    opaque_r = S.BlockRealize(iter_values=(i32(4),), predicate=T.const(True), block=opaque)
    root = S.Block(name="root", iter_vars=(), reads=(), writes=(),
                   body=S.SeqStmt(seq=(loops, remap, opaque_r)),
                   alloc_buffers=(decl_buffer((16,), "int8", "tmp", scope="shared"),))
    body = S.BlockRealize(iter_values=(), predicate=T.const(True), block=root)
    f = func([pa, pb], body, {pa: A, pb: B}, attrs={"tir.noalias": True})
    text = assert_roundtrip(f).script()
    assert text.count("T.axis.remap(\"SS\", [i, j])") == 1
    assert '@T.prim_func(private=True)' in text and '# with T.block("root"):' in text
    assert "T.where(i < j + T.int64(20))" in text


def test_explicit_root_block_and_blockless_root():
    pa, A = buffer_param("A", (4,))
    root = S.Block(name="root", iter_vars=(), reads=(BufferRegion.full(A),), writes=(),
                   body=S.BufferStore(buffer=A, value=E.FloatImm(dtype="float32", value=1.0),
                                      indices=(i32(0),)))
    f = func([pa], S.BlockRealize(iter_values=(), predicate=T.const(True), block=root),
             {pa: A})
    assert 'with T.block("root"):' in assert_roundtrip(f).script()


def test_lowered_statements():
    pa, A = buffer_param("A", (16, 16))
    n = T.var("n")
    buf_var = E.Var(name="tmp", dtype="handle")
    tmp = decl_buffer((64,), "float32", "tmp_1", data=buf_var)
    flat = decl_buffer((256,), "float32", "A_flat", data=A.data)
    cond = T.var("c", "bool")
    lv = T.var("cse", "int32")
    body = S.SeqStmt(seq=(
        S.BufferStore(buffer=tmp, value=E.FloatImm(dtype="float32", value=0.0),
                      indices=(lv,)),
        S.IfThenElse(condition=n > 2, then_case=S.Evaluate(value=i32(1)),
                     else_case=S.IfThenElse(condition=n < 0, then_case=S.Evaluate(
                         value=i32(2)), else_case=S.Evaluate(value=i32(3)))),
        S.IfThenElse(condition=cond, then_case=S.Evaluate(value=i32(4))),
        S.While(condition=n < 5, body=S.Evaluate(value=i32(5))),
        S.AttrStmt(node=buf_var, key="storage_alignment", value=i32(64),
                   body=S.Evaluate(value=E.Call(dtype="int32", op="tvm_storage_sync",
                                                args=(E.StringImm(value="shared"),)))),
        S.AttrStmt(node="pragma", key="k", value=n, body=S.Evaluate(value=i32(0))),
        S.BufferStore(buffer=flat, value=E.BufferLoad(dtype="float32", buffer=tmp,
                                                      indices=(i32(3),)), indices=(n,)),
    ))
    let = S.LetStmt(var=lv, value=n * 4, body=body)
    decl = S.DeclBuffer(buffer=tmp, body=S.DeclBuffer(buffer=flat, body=let))
    alloc = S.Allocate(buffer_var=buf_var, dtype="float32", extents=(i32(64),),
                       scope="local", body=decl, condition=cond,
                       annotations={"disable_lower_builtin": True})
    check = S.AssertStmt(condition=n >= 0, message='n must be "non-negative"', body=alloc)
    f = func([pa, n, cond], check, {pa: A}, ret="int32")
    text = assert_roundtrip(f).script()
    assert "tmp = T.allocate([64], \"float32\", \"local\", condition=c" in text
    assert "A_flat = T.Buffer((256,), data=A.data)" in text
    assert "elif n < 0:" in text and "-> T.int32:" in text


def test_symbolic_buffer_params_use_match_buffer():
    n = T.var("n", "int64")
    m = T.var("m", "int32")
    pa, A = buffer_param("A", (n, 8), strides=(8, 1))
    pb, B = buffer_param("B", (m,), "int32")
    pc = E.Var(name="opaque", dtype="handle")
    body = S.BufferStore(buffer=B, value=E.Cast(dtype="int32", value=E.BufferLoad(
        dtype="float32", buffer=A, indices=(i64(0), i64(1)))), indices=(i32(0),))
    f = func([pa, pb, pc, m], body, {pa: A, pb: B})
    text = assert_roundtrip(f).script()
    assert "n = T.int64()" in text and "A = T.match_buffer(var_A, (n, 8)" in text
    assert "opaque: T.handle" in text


def test_name_clashes_get_suffixes():
    pa, A = buffer_param("x", (4,))
    i1, i2 = T.var("x"), T.var("x")
    inner = S.For(loop_var=i2, min=i32(0), extent=i32(2), kind="serial",
                  body=S.BufferStore(buffer=A, value=E.Cast(dtype="float32", value=i1 + i2),
                                     indices=(i1,)))
    outer = S.For(loop_var=i1, min=i32(0), extent=i32(2), kind="serial", body=inner)
    weird = T.var("a.b-c")
    f = func([pa, weird], S.SeqStmt(seq=(outer, S.Evaluate(value=weird))), {pa: A})
    text = assert_roundtrip(f).script()
    assert "for x_1, x_2 in T.grid(2, 2):" in text and "a_b_c: T.int32" in text


def test_module_with_several_prim_funcs():
    pa, A = buffer_param("A", (4,))
    f = func([pa], S.Evaluate(value=i32(0)), {pa: A}, attrs={})
    g = func([T.var("n")], S.Evaluate(value=i32(0)), attrs={"global_symbol": "g"})
    mod = IRModule(functions={"f": f, "g": g}, attrs={"k": [1, "v"], "flag": False})
    assert_roundtrip(mod)


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_te_create_prim_func_roundtrip(index_dtype):
    N = T.const(32, index_dtype)
    A = te.placeholder((N, N), name="A", dtype="float32")
    B = te.placeholder((N, N), name="B", dtype="float32")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((N, N), lambda i, j: te.max(C[i, j], te.const(0.0, "float32")), name="D")
    E2 = te.compute((N,), lambda i: te.exp(D[i, i]) / te.const(2.0, "float32"), name="E")
    f = te.create_prim_func([A, B, E2])
    assert_roundtrip(f)
    assert_roundtrip(IRModule(functions={"main": f}))


def test_attr_with_iteration_variable():
    pa, A = buffer_param("A", (64,))
    tx = T.var("tx")
    iv = E.IterVar(var=tx, dom=E.Range(min=i32(0), extent=i32(64)), iter_type="opaque",
                   thread_tag="threadIdx.x")
    body = S.AttrStmt(node=iv, key="thread_extent", value=i32(64),
                      body=S.BufferStore(buffer=A, value=E.FloatImm(dtype="float32", value=0.0),
                                         indices=(tx,)))
    text = assert_roundtrip(func([pa], body, {pa: A})).script()
    assert 'with T.attr(T.iter_var(tx, 64, "opaque", "threadIdx.x"), "thread_extent", 64):' \
        in text


def test_axis_dtypes_and_thread_tags():
    i = T.var("i")
    j = T.var("j", "int64")
    ivs = (E.IterVar(var=T.var("v", "int64"), dom=E.Range(min=i32(0), extent=i32(4)),
                     thread_tag="threadIdx.x"),
           E.IterVar(var=T.var("w"), dom=E.Range(min=i32(1), extent=i32(4))),
           E.IterVar(var=T.var("u", "int64"), dom=E.Range(min=i64(2), extent=i64(4))))
    blk = S.Block(name="b", iter_vars=ivs, reads=(), writes=(), body=S.Evaluate(value=i32(0)))
    realize = S.BlockRealize(iter_values=(i, j, i), predicate=T.const(True), block=blk)
    loops = S.For(loop_var=i, min=i32(0), extent=i32(4), kind="serial",
                  body=S.For(loop_var=j, min=i64(0), extent=i64(4), kind="serial",
                             body=realize))
    root = S.Block(name="root", iter_vars=(), reads=(), writes=(), body=loops)
    f = func([], S.BlockRealize(iter_values=(), predicate=T.const(True), block=root))
    text = assert_roundtrip(f).script()
    assert 'v = T.axis.spatial(4, i, dtype="int64", thread_tag="threadIdx.x")' in text
    assert "w = T.axis.spatial((T.int32(1), T.int32(5)), j" in text


def test_declarations_followed_by_statements_print_with_a_with_scope():
    # Lowering leaves e.g. SeqStmt[Allocate(body=...), more]: the flat form
    # ``x = T.allocate(...)`` would take ``more`` into the allocation's body.
    pa, A = buffer_param("A", (16,))
    n = T.var("n")
    buf_var = E.Var(name="tmp", dtype="handle")
    tmp = decl_buffer((4,), "float32", "tmp", data=buf_var)
    lv = T.var("v", "int32")
    zero = E.FloatImm(dtype="float32", value=0.0)
    store_tmp = S.BufferStore(buffer=tmp, value=zero, indices=(i32(0),))
    store_a = S.BufferStore(buffer=A, value=zero, indices=(n,))
    body = S.SeqStmt(seq=(
        S.Allocate(buffer_var=buf_var, dtype="float32", extents=(i32(4),), scope="local",
                   body=S.SeqStmt(seq=(
                       S.DeclBuffer(buffer=tmp, body=store_tmp),
                       S.Evaluate(value=buf_var)))),
        S.LetStmt(var=lv, value=n + 1, body=S.BufferStore(buffer=A, value=zero,
                                                          indices=(lv,))),
        S.AssertStmt(condition=n >= 0, message="n >= 0", body=store_a),
        S.LetStmt(var=T.var("w", "int32"), value=n * 2, body=store_a),  # the tail: flat
    ))
    f = func([pa, n], body, {pa: A})
    text = assert_roundtrip(f).script()
    assert 'with T.allocate([4], "float32", "local") as tmp:' in text
    assert 'with T.Buffer((4,), data=tmp) as tmp_1:' in text
    assert "with T.LetStmt(n + 1) as v:" in text
    assert 'with T.Assert(n >= 0, "n >= 0"):' in text
    assert "w: T.int32 = n * 2" in text
    # After the scoped buffer declaration the pointer is spelled by its own name again.
    assert "        T.evaluate(tmp)" in text


def test_scoped_declaration_errors():
    head = '@T.prim_func\ndef f(n: T.int32):\n'
    e = parse_error(head + '    with T.allocate([4], "float32"):\n        T.evaluate(0)\n')
    assert "write 'with T.allocate(...) as name:'" in e.message
    e = parse_error(head + '    with T.LetStmt(n, 1) as v:\n        T.evaluate(v)\n')
    assert "T.LetStmt takes the value only" in e.message
    e = parse_error(head + '    with T.Assert(n > 0, "m") as a:\n        T.evaluate(0)\n')
    assert "T.Assert(...) does not bind a name" in e.message


def test_buffer_params_declared_by_match_buffer_and_t_buffer_keep_parameter_order():
    # The first parameter has a symbolic shape (T.match_buffer in the body), the second
    # a static one (T.Buffer in the signature): the parsed map still follows the params.
    n = T.var("n", "int64")
    pa, A = buffer_param("A", (n,))
    pb, B = buffer_param("B", (8,))
    body = S.BufferStore(buffer=A, value=E.BufferLoad(dtype="float32", buffer=B,
                                                      indices=(i32(0),)), indices=(i64(0),))
    f = func([pa, pb], body, {pb: B, pa: A})
    assert list(f.buffer_map) == [pa, pb]
    parsed = assert_roundtrip(f)
    assert [b.name for b in parsed.buffer_map.values()] == ["A", "B"]
