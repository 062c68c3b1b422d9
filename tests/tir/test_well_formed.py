"""Loop-IR well-formedness: scoping, definitions and dtype errors name what is wrong."""

import pytest

from irc import IRWellFormedError, te, topi
from irc.tir import (
    Add,
    Allocate,
    Block,
    BlockRealize,
    BufferLoad,
    BufferRegion,
    BufferStore,
    Call,
    DeclBuffer,
    For,
    IfThenElse,
    IntImm,
    IterVar,
    PrimFunc,
    Range,
    Var,
    const,
    decl_buffer,
    seq,
    var,
)
from irc.tir.well_formed import check_prim_func, is_well_formed


def func_of(buffers, body):
    params, bmap = [], {}
    for b in buffers:
        p = Var(name=b.name, dtype="handle")
        params.append(p)
        bmap[p] = b
    return PrimFunc(params=tuple(params), buffer_map=bmap, body=body,
                    attrs={"global_symbol": "f"})


def loop(v, extent, body):
    return For(loop_var=v, min=const(0, v.dtype), extent=const(extent, v.dtype), kind="serial",
               body=body)


def block(name, ivs, body, values, init=None):
    iter_vars = tuple(IterVar(var=v, dom=Range(min=const(0), extent=const(e)), iter_type=t)
                      for v, e, t in ivs)
    b = Block(name=name, iter_vars=iter_vars, reads=(), writes=(), body=body, init=init)
    return BlockRealize(iter_values=tuple(values), predicate=const(True), block=b)


A = decl_buffer((4,), "float32", "A")
B = decl_buffer((4,), "float32", "B")


def test_well_formed_programs_pass():
    x = te.placeholder((2, 3, 8, 8), name="x")
    w = te.placeholder((4, 3, 3, 3), name="w")
    check_prim_func(te.create_prim_func([x, w, topi.nn.relu(topi.nn.conv2d_nchw(x, w, 1, 1))]))
    check_prim_func(te.create_prim_func([x, topi.nn.softmax(x)], index_dtype_override="int64"))
    ptr = Var(name="buf", dtype="handle")
    tmp = decl_buffer((4,), "float32", "tmp", data=ptr)
    i, j = var("i"), var("j")
    lowered = Allocate(buffer_var=ptr, dtype="float32", extents=(const(4),), scope="global",
                       body=DeclBuffer(buffer=tmp, body=seq(
                           loop(i, 4, BufferStore(buffer=tmp, indices=(i,), value=A[i])),
                           loop(j, 4, BufferStore(buffer=B, indices=(j,), value=tmp[j])))))
    assert is_well_formed(func_of([A, B], lowered))


def test_loop_variable_outside_its_loop():
    i = var("i")
    body = seq(loop(i, 4, BufferStore(buffer=B, indices=(i,), value=A[i])),
               BufferStore(buffer=B, indices=(i,), value=A[0]))
    with pytest.raises(IRWellFormedError, match="variable i is used outside its scope"):
        check_prim_func(func_of([A, B], body))


def test_undefined_variable_and_undeclared_buffer():
    n = var("n")
    with pytest.raises(IRWellFormedError, match="variable n is used but never defined"):
        check_prim_func(func_of([A, B], BufferStore(buffer=B, indices=(n,), value=A[0])))
    C = decl_buffer((4,), "float32", "C")
    with pytest.raises(IRWellFormedError, match="buffer C is used but not declared"):
        check_prim_func(func_of([A, B], BufferStore(buffer=B, indices=(const(0),), value=C[0])))


def test_block_iteration_variable_outside_its_block():
    i, vi = var("i"), var("vi")
    inner = block("copy", [(vi, 4, "spatial")],
                  BufferStore(buffer=B, indices=(vi,), value=A[vi]), [i])
    body = seq(loop(i, 4, inner), BufferStore(buffer=B, indices=(const(0),), value=A[vi]))
    with pytest.raises(IRWellFormedError, match="vi is used outside its scope.*block 'copy'"):
        check_prim_func(func_of([A, B], body))


def test_loop_variable_used_inside_a_block():
    i, vi = var("i"), var("vi")
    inner = block("copy", [(vi, 4, "spatial")],
                  BufferStore(buffer=B, indices=(vi,), value=A[i]), [i])
    with pytest.raises(IRWellFormedError,
                       match="loop variable i is defined outside block 'copy'"):
        check_prim_func(func_of([A, B], loop(i, 4, inner)))


def test_binding_to_an_outer_block_iteration_variable():
    i, j, vi, vj = var("i"), var("j"), var("vi"), var("vj")
    inner = block("inner", [(vj, 4, "spatial")],
                  BufferStore(buffer=B, indices=(vj,), value=A[vj]), [vi])
    outer = block("outer", [(vi, 4, "spatial")], loop(j, 1, inner), [i])
    with pytest.raises(IRWellFormedError, match="block 'inner' binds .* vi, an iteration "
                                                "variable of the enclosing block 'outer'"):
        check_prim_func(func_of([A, B], loop(i, 4, outer)))


def test_dtype_mismatches():
    i = var("i")
    bad_add = Add(dtype="int32", a=i, b=IntImm(dtype="int64", value=1))
    with pytest.raises(IRWellFormedError, match="Add mixes dtypes: int32 and int64"):
        check_prim_func(func_of([A, B], loop(i, 3, BufferStore(buffer=B, indices=(bad_add,),
                                                               value=A[i]))))
    with pytest.raises(IRWellFormedError, match="condition of IfThenElse must be bool"):
        check_prim_func(func_of([A, B], loop(i, 4, IfThenElse(
            condition=i, then_case=BufferStore(buffer=B, indices=(i,), value=A[i])))))
    with pytest.raises(IRWellFormedError, match=r"store into buffer B \(float32\) of a value "
                                                "of dtype int32"):
        check_prim_func(func_of([A, B], loop(i, 4, BufferStore(buffer=B, indices=(i,),
                                                               value=i))))
    with pytest.raises(IRWellFormedError, match="loop j: extent has dtype int64"):
        j = var("j")
        check_prim_func(func_of([A, B], For(loop_var=j, min=const(0), kind="serial",
                                            extent=const(4, "int64"),
                                            body=BufferStore(buffer=B, indices=(j,),
                                                             value=A[j]))))
    with pytest.raises(IRWellFormedError, match="index of buffer A must be an integer"):
        check_prim_func(func_of([A, B], BufferStore(buffer=B, indices=(const(0),), value=(
            BufferLoad(dtype="float32", buffer=A, indices=(const(0.5),))))))


def test_wrong_number_of_indices_and_bad_calls():
    load = BufferLoad(dtype="float32", buffer=A, indices=(const(0), const(1)))
    with pytest.raises(IRWellFormedError, match="buffer A has 1 dimensions but is indexed "
                                                "with 2 indices"):
        check_prim_func(func_of([A, B], BufferStore(buffer=B, indices=(const(0),), value=load)))
    call = Call(dtype="float32", op="exp", args=(A[0], A[1]))
    with pytest.raises(IRWellFormedError, match="call of exp: intrinsic exp takes 1"):
        check_prim_func(func_of([A, B], BufferStore(buffer=B, indices=(const(0),),
                                                    value=call)))
    call = Call(dtype="float32", op="no_such_thing", args=())
    with pytest.raises(IRWellFormedError, match="unknown intrinsic 'no_such_thing'"):
        check_prim_func(func_of([A, B], BufferStore(buffer=B, indices=(const(0),),
                                                    value=call)))


def test_duplicate_definitions():
    i = var("i")
    body = seq(loop(i, 4, BufferStore(buffer=B, indices=(i,), value=A[i])),
               loop(i, 4, BufferStore(buffer=B, indices=(i,), value=A[i])))
    with pytest.raises(IRWellFormedError, match="variable i is defined twice"):
        check_prim_func(func_of([A, B], body))
    root = Block(name="root", iter_vars=(), reads=(), writes=(), alloc_buffers=(A,),
                 body=BufferStore(buffer=B, indices=(const(0),), value=A[0]))
    with pytest.raises(IRWellFormedError, match="buffer A is declared twice"):
        check_prim_func(func_of([A, B], BlockRealize(iter_values=(), predicate=const(True),
                                                     block=root)))


def test_regions_must_name_declared_buffers():
    vi, i = var("vi"), var("i")
    C = decl_buffer((4,), "float32", "C")
    b = Block(name="copy", iter_vars=(IterVar(var=vi, dom=Range(min=const(0),
                                                                extent=const(4))),),
              reads=(BufferRegion.from_indices(C, (vi,)),), writes=(),
              body=BufferStore(buffer=B, indices=(vi,), value=A[vi]))
    body = loop(i, 4, BlockRealize(iter_values=(i,), predicate=const(True), block=b))
    with pytest.raises(IRWellFormedError, match="buffer C is used but not declared"):
        check_prim_func(func_of([A, B], body))
