"""Round trips of constants: every dtype, 0-d and empty arrays, NaN (with its bits),
infinities, negative zero and subnormals, printed inline (``R.const``), into the
``metadata`` section (``show_meta=True``) and as references resolved by ``metadata=``."""

import ml_dtypes
import numpy as np
import pytest
from script_helpers import assert_roundtrip

import irc
from irc.core import dtype as dt
from irc.ir import BlockBuilder, Constant, Tuple, Var, const, ops, tensor_sinfo

IEEE_FLOATS = {"float16": np.uint16, "float32": np.uint32, "float64": np.uint64}
# A quiet NaN with the sign bit and a payload: its bits must survive the round trip.
NAN_WITH_PAYLOAD = {"float16": 0xFE01, "float32": 0xFFC00001, "float64": 0xFFF8000000000001}


def _module_returning(*constants):
    x = Var(name_hint="x", struct_info=tensor_sinfo((1,), "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(Tuple(fields=(x, *constants)))
    return bb.get()


def _returned_constants(mod):
    return mod["main"].body.body.fields[1:]


def _check_roundtrip(data):
    """Print a module holding ``data`` with and without ``show_meta`` and parse it back:
    structurally equal, the same shape and dtype, and the same bytes."""
    c = Constant.from_numpy(data)
    mod = _module_returning(c)
    for show_meta in (True, False):
        tables = {}
        text = mod.script(show_meta=show_meta, metadata=tables)
        parsed = assert_roundtrip(mod, show_meta=show_meta, metadata=tables)
        (back,) = _returned_constants(parsed)
        assert back.data.shape == c.data.shape, text
        assert back.data.dtype == c.data.dtype, text
        assert back.data.tobytes() == c.data.tobytes(), text
        assert irc.ir.structural_equal(back.struct_info, c.struct_info), text


def _special_values(dtype):
    info = np.finfo(np.dtype(dtype))
    return [np.nan, np.inf, -np.inf, -0.0, 0.0, float(info.smallest_subnormal),
            -float(info.smallest_subnormal), float(info.max), float(info.min), 1 / 3]


@pytest.mark.parametrize("dtype", sorted(IEEE_FLOATS))
def test_zero_dim_float_constants_keep_shape_and_bits(dtype):
    for value in _special_values(dtype):
        _check_roundtrip(np.array(value, dtype=dtype))
    bits = np.array(NAN_WITH_PAYLOAD[dtype], dtype=IEEE_FLOATS[dtype])
    _check_roundtrip(bits.view(dtype))


def test_zero_dim_nan_mask_prints_shape_scalar_in_metadata():
    mod = _module_returning(const(float("nan"), "float32"), const(float("-inf"), "float32"))
    text = mod.script(show_meta=True)
    assert text.count('"shape": []') == 2, text
    parsed = irc.parse(text)
    nan, neg_inf = _returned_constants(parsed)
    assert nan.data.shape == () and np.isnan(nan.data)
    assert neg_inf.data.shape == () and neg_inf.data == -np.inf
    assert irc.ir.structural_equal(parsed, mod)


def test_zero_dim_narrow_and_bfloat16_constants():
    for value in (np.nan, np.inf, -np.inf, -0.0, 1.0, 1e-40, 3.0e38):
        _check_roundtrip(np.array(value, dtype=np.float32).astype(ml_dtypes.bfloat16))
    for name in dt.FLOAT_FORMATS:
        for value in (np.nan, np.inf, -np.inf, -0.0, 0.3, 1.0):
            _check_roundtrip(np.array(value, dtype=np.float32).astype(dt.narrow_numpy(name)))
    for name in dt.NARROW_INTS:
        np_type = dt.narrow_numpy(name)
        info = ml_dtypes.iinfo(np_type)
        for value in (info.min, info.max, 0):
            _check_roundtrip(np.array(value, dtype=np_type))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64",
                                   "uint8", "uint16", "uint32", "uint64"])
def test_zero_dim_integer_constants_at_their_limits(dtype):
    info = np.iinfo(dtype)
    for value in (info.min, info.max, 0, 1):
        _check_roundtrip(np.array(value, dtype=dtype))


def test_zero_dim_bool_constants():
    _check_roundtrip(np.array(True))
    _check_roundtrip(np.array(False))


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3, 1)])
def test_empty_constants(shape):
    for dtype in ("float32", "float16", "float64", "int8", "uint64", "bool"):
        _check_roundtrip(np.zeros(shape, dtype))
    _check_roundtrip(np.zeros(shape, ml_dtypes.bfloat16))
    _check_roundtrip(np.zeros(shape, dt.narrow_numpy("float8_e4m3fn")))


def test_specials_in_tensors_and_non_contiguous_arrays():
    for dtype in IEEE_FLOATS:
        _check_roundtrip(np.array([[np.nan, -np.inf], [-0.0, np.inf]], dtype=dtype))
        _check_roundtrip(np.array([np.nan], dtype=dtype))
        _check_roundtrip(np.arange(6, dtype=dtype).reshape(2, 3).T)


def test_finite_scalars_print_inline():
    mod = _module_returning(const(-0.0, "float32"), const(-128, "int8"),
                            const(2 ** 64 - 1, "uint64"), const(True, "bool"),
                            Constant.from_numpy(np.array(6e-8, dtype="float16")))
    text = mod.script()
    for inline in ('R.const(-0.0, "float32")', 'R.const(-128, "int8")',
                   'R.const(18446744073709551615, "uint64")', 'R.const(True, "bool")',
                   'R.const(5.960464477539063e-08, "float16")'):
        assert inline in text, text
    assert "metadata" not in text
    parsed = assert_roundtrip(mod)
    for before, after in zip(_returned_constants(mod), _returned_constants(parsed)):
        assert after.data.tobytes() == before.data.tobytes()


def test_nan_constant_in_an_operator_call():
    x = Var(name_hint="x", struct_info=tensor_sinfo((2, 2), "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            masked = bb.emit(ops.add(x, const(float("-inf"), "float32")))
            out = bb.emit_output(ops.maximum(masked, const(float("nan"), "float32")))
        bb.emit_func_output(out)
    assert_roundtrip(bb.get(), show_meta=True)


def test_onnx_scalar_minus_inf_initializer_roundtrips():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from irc.frontend.onnx import from_onnx

    mask = numpy_helper.from_array(np.array(-np.inf, dtype=np.float32), "mask")
    nan = numpy_helper.from_array(np.array(np.nan, dtype=np.float32), "nan")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "mask"], ["y"]),
         helper.make_node("Max", ["y", "nan"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
        initializer=[mask, nan])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    mod = from_onnx(model, keep_params_in_input=False)
    parsed = assert_roundtrip(mod, show_meta=True)
    consts = [c for c in irc.core.functor.collect(parsed, lambda n: isinstance(n, Constant))]
    assert sorted(c.data.shape for c in consts) == [(), ()]
