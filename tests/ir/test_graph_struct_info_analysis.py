"""Struct-info relations (base-of, LCA), symbolic variables and dimension arithmetic."""

from irc import tir
from irc.ir import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    TensorStructInfo,
    TupleStructInfo,
    erase_to_well_defined,
    get_shape_vars,
    is_base_of,
    static_shape,
    struct_info_lca,
    tensor_sinfo,
)
from irc.ir.struct_info_analysis import (
    exact_divide,
    format_dim,
    format_sinfo,
    prove_equal,
    prove_not_equal,
    shape_product,
    simplify,
    substitute_sinfo,
)


def test_simplify_and_prove(n, m):
    assert format_dim(simplify((n + 2 - 3) // 1 + 1)) == "n"
    assert format_dim(simplify((2 * n + 1) // 2)) == "n"
    assert format_dim(simplify((6 * n + 3) % 3)) == "0"
    assert format_dim(simplify(m - n + 3)) == "(m - n) + 3"
    assert prove_equal(n * 4, 4 * n)
    assert prove_equal((n + 1) * (n + 1), n * n + 2 * n + 1)
    assert not prove_equal(n, m)
    assert prove_not_equal(n, n + 1)
    assert not prove_not_equal(n, m)
    assert prove_not_equal(tir.const(3, "int64"), 4)


def test_products_and_division(n):
    assert format_dim(shape_product([n, 4, 784])) == "n * 3136"
    assert format_dim(shape_product([])) == "1"
    assert format_dim(exact_divide(shape_product([n, 4, 784]), 784)) == "n * 4"
    assert exact_divide(n * 6, 4) is None
    assert exact_divide(n, 0) is None


def test_is_base_of(n):
    t = tensor_sinfo((1, 256), "float32")
    assert is_base_of(TensorStructInfo(ndim=2), t)
    assert is_base_of(TensorStructInfo(dtype="float32"), t)
    assert is_base_of(ObjectStructInfo(), t)
    assert is_base_of(t, tensor_sinfo((1, 256), "float32"))
    assert not is_base_of(t, TensorStructInfo(ndim=2))
    assert not is_base_of(TensorStructInfo(ndim=3), t)
    assert not is_base_of(tensor_sinfo((1, 256), "float16"), t)
    assert not is_base_of(tensor_sinfo((n, 256)), tensor_sinfo((2, 256)))
    assert is_base_of(tensor_sinfo((n * 2, 256)), tensor_sinfo((2 * n, 256)))
    tup = TupleStructInfo(fields=(t, ShapeStructInfo(values=(tir.const(2, "int64"),))))
    assert is_base_of(TupleStructInfo(fields=(TensorStructInfo(), ShapeStructInfo(ndim=1))), tup)
    assert not is_base_of(TupleStructInfo(fields=(TensorStructInfo(),)), tup)
    assert is_base_of(PrimStructInfo(dtype="int64"),
                      PrimStructInfo(dtype="int64", value=tir.const(3, "int64")))
    f = FuncStructInfo(params=(t,), ret=t)
    assert is_base_of(FuncStructInfo(params=None, ret=TensorStructInfo()), f)
    assert not is_base_of(f, FuncStructInfo(params=(t,), ret=t, purity=False))


def test_lca(n):
    a, b = tensor_sinfo((1, 256)), tensor_sinfo((2, 256))
    assert format_sinfo(struct_info_lca(a, a)) == 'R.Tensor((1, 256), "float32")'
    assert format_sinfo(struct_info_lca(a, b)) == 'R.Tensor(ndim=2, "float32")'
    assert format_sinfo(struct_info_lca(a, tensor_sinfo((3,), "int32"))) == "R.Tensor()"
    assert isinstance(struct_info_lca(a, ShapeStructInfo(ndim=1)), ObjectStructInfo)
    tl = struct_info_lca(TupleStructInfo(fields=(a, a)), TupleStructInfo(fields=(a, b)))
    assert format_sinfo(tl) == ('R.Tuple(R.Tensor((1, 256), "float32"), '
                                'R.Tensor(ndim=2, "float32"))')
    assert isinstance(struct_info_lca(PrimStructInfo(dtype="int64"), PrimStructInfo(
        dtype="float32")), ObjectStructInfo)


def test_shape_vars_static_shape_and_erasure(n, m):
    s = TupleStructInfo(fields=(tensor_sinfo((n, m * 2)), ShapeStructInfo(values=(m, n))))
    assert [v.name for v in get_shape_vars(s)] == ["n", "m"]
    assert static_shape(tensor_sinfo((1, 2, 3))) == (1, 2, 3)
    assert static_shape(tensor_sinfo((n, 2))) is None
    assert static_shape(ShapeStructInfo(values=(tir.const(4, "int64"),))) == (4,)
    erased = erase_to_well_defined(s, [n])
    assert format_sinfo(erased) == 'R.Tuple(R.Tensor(ndim=2, "float32"), R.Shape(ndim=2))'
    assert erase_to_well_defined(s, [n, m]) is s


def test_substitute(n):
    s = tensor_sinfo((n, n * 4 + 2))
    out = substitute_sinfo(s, {n: tir.const(3, "int64")})
    assert format_sinfo(out) == 'R.Tensor((3, 14), "float32")'
