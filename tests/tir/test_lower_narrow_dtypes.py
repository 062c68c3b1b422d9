"""The narrow storage dtypes (float8, float4, int4, int2) through loop IR: LowerNarrowDTypes
decodes every byte exactly and encodes (rounds) as ml_dtypes converts, compiled by LLVM;
arithmetic on them computes in float32 and rounds; the graph level and the VM carry them
as ml_dtypes arrays."""

import numpy as np
import pytest

import irc
from irc import te
from irc.core import dtype as dt
from irc.core.diagnostics import IRTypeError
from irc.runtime import tensor
from irc.tir.transform import lower_primfunc

ml_dtypes = pytest.importorskip("ml_dtypes")

FLOATS = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
          "float4_e2m1fn"]
INTS = ["int4", "uint4", "int2", "uint2"]
WIDTH = {"float4_e2m1fn": 4, "int4": 4, "uint4": 4, "int2": 2, "uint2": 2}


def _np(name):
    return np.dtype(getattr(ml_dtypes, name))


def _build(in_dtype, out_dtype, n, fn=None):
    A = te.placeholder((n,), in_dtype, name="A")
    B = te.compute((n,), (lambda i: fn(A[i])) if fn else (lambda i: A[i].astype(out_dtype)),
                   name="B")
    return irc.build(te.create_prim_func([A, B]), target="llvm")


def test_dtype_names_parse_and_map_to_ml_dtypes():
    for name in FLOATS + INTS + ["float8_e8m0fnu"]:
        assert str(dt.parse(name)) == name
        assert dt.is_narrow(name) and dt.itemsize(name) == 1
        assert dt.to_numpy(name) == _np(name)
        assert dt.from_numpy(_np(name)) == name
    assert dt.parse("float8_e4m3fnx8").lanes == 8
    assert dt.is_float("float8_e5m2") and not dt.is_float("int4")
    assert (dt.min_value("int4"), dt.max_value("int4")) == (-8, 7)
    assert dt.compute_dtype("float4_e2m1fn") == "float32"
    assert dt.compute_dtype("uint2") == "int32"
    with pytest.raises(IRTypeError, match="unknown dtype"):
        dt.parse("float8_e4m3")


@pytest.mark.parametrize("name", FLOATS + INTS + ["float8_e8m0fnu"])
def test_every_byte_decodes_as_ml_dtypes_does(name):
    codes = (np.arange(256) % (1 << WIDTH.get(name, 8))).astype(np.uint8)
    a = codes.view(_np(name))
    lib = _build(name, "float32", 256)
    out = tensor(np.zeros(256, np.float32))
    lib(tensor(a), out)
    want = a.astype(np.float32)
    got = out.numpy()
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), [(codes[i], got[i], want[i]) for i in np.nonzero(~same)[0][:5]]
    assert np.array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))


SPECIAL = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e9, -1e9, 448, 464, 480,
                    240, 57344, 61440, 65536, 6, 5, 7, 0.25, 2 ** -9, 2 ** -10, 3 * 2 ** -11,
                    2 ** -17, 2 ** -16, 1.5 * 2 ** -16, 1e-30, -7.5, -8.5, 8.2, 15.9, 100],
                   np.float32)


@pytest.mark.parametrize("name", FLOATS + INTS)
def test_encoding_rounds_as_ml_dtypes(name):
    """Round half to even, overflow to inf/NaN (float8), saturation (float4), wrapping
    truncation (integers), subnormals, NaN signs: every byte as ml_dtypes'."""
    rng = np.random.default_rng(0)
    n = 4096
    scales = rng.choice([1e-3, 0.05, 1, 30, 300, 3e4], n - len(SPECIAL)).astype(np.float32)
    x = np.concatenate([SPECIAL, rng.standard_normal(n - len(SPECIAL)).astype(np.float32)
                        * scales])
    lib = _build("float32", name, n)
    out = tensor(np.zeros(n, _np(name)))
    lib(tensor(x), out)
    got, want = out.numpy().view(np.uint8), x.astype(_np(name)).view(np.uint8)
    bad = np.nonzero(got != want)[0]
    assert not len(bad), [(x[i], got[i], want[i]) for i in bad[:5]]


def test_float8_e8m0_rounds_up_and_saturates():
    x = np.array([1.0, 1.5, 1.4, 3.0, 0.75, 2 ** -127, 1e38, 3e38, 0.0, -1.0, np.inf, np.nan,
                  2.0, 4.1], np.float32)
    lib = _build("float32", "float8_e8m0fnu", len(x))
    out = tensor(np.zeros(len(x), _np("float8_e8m0fnu")))
    lib(tensor(x), out)
    # the biased exponent, one more when there is a fraction (not past 254); 255: NaN
    assert out.numpy().view(np.uint8).tolist() == [127, 128, 128, 129, 127, 1, 254, 254, 0,
                                                   127, 255, 255, 128, 130]


def test_arithmetic_computes_in_float32_and_rounds_each_result():
    n = 64
    A = te.placeholder((n,), "float8_e4m3fn", name="A")
    B = te.compute((n,), lambda i: A[i] * A[i] + A[i], name="B")
    C = te.compute((n,), lambda i: B[i], name="C")  # a copy: the byte as it is
    lib = irc.build(te.create_prim_func([A, C]), target="llvm")
    a = (np.arange(n, dtype=np.float32) / 7 - 3).astype(_np("float8_e4m3fn"))
    out = tensor(np.zeros(n, _np("float8_e4m3fn")))
    lib(tensor(a), out)
    f = _np("float8_e4m3fn")
    want = ((a.astype(np.float32) * a.astype(np.float32)).astype(f).astype(np.float32)
            + a.astype(np.float32)).astype(f)
    assert np.array_equal(out.numpy().view(np.uint8), want.view(np.uint8))


def test_int4_arithmetic_wraps():
    n = 16
    A = te.placeholder((n,), "int4", name="A")
    B = te.compute((n,), lambda i: A[i] + A[i], name="B")
    lib = irc.build(te.create_prim_func([A, B]), target="llvm")
    a = (np.arange(n) - 8).astype(_np("int4"))
    out = tensor(np.zeros(n, _np("int4")))
    lib(tensor(a), out)
    want = ((np.arange(n) - 8) * 2 + 8) % 16 - 8
    assert out.numpy().astype(np.int32).tolist() == want.tolist()


def test_lowered_code_holds_bytes_only():
    A = te.placeholder((8,), "float8_e5m2", name="A")
    B = te.compute((8,), lambda i: A[i].astype("float32") * 2, name="B")
    text = lower_primfunc(te.create_prim_func([A, B])).script()
    head, body = text.split("):", 1)
    assert '"float8_e5m2"' in head  # callers still pass float8 arrays
    assert "float8" not in body
    assert 'A_1 = T.Buffer((8,), "uint8", data=A.data)' in body


def test_narrow_dtypes_through_the_graph_and_the_vm():
    from irc.ir import ops
    from irc.ir.block_builder import BlockBuilder
    from irc.ir.expr import Tuple, Var
    from irc.ir.ops import quantization
    from irc.ir.struct_info import TensorStructInfo
    from irc.runtime import cpu
    from irc.tir import expr as E
    from irc.vm.vm import VirtualMachine

    def param(name, shape):
        return Var(name_hint=name, struct_info=TensorStructInfo(
            shape=tuple(E.const(d, "int64") for d in shape), dtype="float32"))

    x, s = param("x", (2, 8)), param("s", ())
    bb = BlockBuilder()
    with bb.function("main", [x, s]):
        with bb.dataflow():
            f8 = bb.emit(ops.astype(x, "float8_e4m3fn"))
            q4 = bb.emit(quantization.quantize(x, s, None, out_dtype="int4"))
            back = bb.emit(ops.add(ops.astype(f8, "float32"),
                                   quantization.dequantize(q4, s)))
            out = bb.emit_output(Tuple(fields=(f8, q4, back)))
        bb.emit_func_output(out)
    vm = VirtualMachine(irc.compile(bb.get(), "llvm"), cpu())
    xv = np.linspace(-500, 500, 16, dtype=np.float32).reshape(2, 8)
    f8v, q4v, backv = vm["main"](tensor(xv), tensor(np.array(40.0, np.float32)))
    assert f8v.dtype == "float8_e4m3fn" and q4v.dtype == "int4"
    want8 = xv.astype(_np("float8_e4m3fn"))
    assert np.array_equal(f8v.numpy().view(np.uint8), want8.view(np.uint8))
    want4 = np.clip(np.rint(xv / 40), -8, 7)
    assert np.array_equal(q4v.numpy().astype(np.float32), want4)
    np.testing.assert_array_equal(backv.numpy(), want8.astype(np.float32) + want4 * 40)
