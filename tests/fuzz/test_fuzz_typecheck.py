"""Fuzzing the graph-level type checker and the legalizer: random calls of every
registered operator on tensors of random shapes (static, symbolic, zero-sized, rank 0 to
4) and dtypes, with random positional and keyword arguments and attribute values. Each
module either parses and type-checks, and then legalizes into loop functions, or
raises an irc error that renders; any other exception fails."""

from __future__ import annotations

import pytest
from fuzz_settings import LONG, QUICK
from hypothesis import given, settings
from hypothesis import strategies as st

import irc
from irc.ir.op import get_op_def, list_ops
from irc.passes import LegalizeOps

TEMPLATE = '''@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor({sx}, "{dx}"), y: R.Tensor({sy}, "{dy}"), s: R.Shape([2, 3])):
        n = T.int64()
        lv = R.{op}({args})
        return lv
'''

DIMS = ["1", "2", "3", "4", "0", '"n"', "7"]
DTYPES = ["float32", "float16", "int32", "int64", "bool", "uint8"]
VALUES = ["x", "y", "s", "0", "1", "-1", "2", "3", "1.5", "-0.5", "None", "True", "False",
          '"float32"', '"int8"', '"NCHW"', '"mean"', '"bogus"', "[1, 2]", "[0]", "[-1]",
          "[2, 3]", "[]", "[1, 1, 1, 1]", "[0, 2, 1]", "(x, y)", "[x, y]",
          "R.shape([2, 3])", "R.prim_value(2)", "R.const(1.0)", 'R.const(2, "int32")']


@st.composite
def shapes(draw):
    rank = draw(st.integers(0, 4))
    return "(" + "".join(draw(st.sampled_from(DIMS)) + ", " for _ in range(rank)) + ")"


def _attr_text(value) -> str:
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def _call_text(data, opdef) -> str:
    """Arguments of a call: "wild" ones drawn from any values, or "typed" ones (an
    operand per parameter, mostly the tensors, and some attributes, often at or near
    their defaults) that more often type-check and reach the legalizer."""
    if data.draw(st.booleans()):
        args = data.draw(st.lists(st.sampled_from(VALUES), max_size=4))
        names = list(opdef.operands) + [a.name for a in opdef.attrs]
        kwargs = data.draw(st.dictionaries(st.sampled_from(names), st.sampled_from(VALUES),
                                           max_size=3))
        return ", ".join(args + [f"{k}={v}" for k, v in kwargs.items()])
    args = [data.draw(st.sampled_from(["x", "y", "x", "y", "x", "y", *VALUES]))
            for _ in opdef.operands]
    kwargs = []
    for attr in opdef.attrs:
        if data.draw(st.integers(0, 2)) == 0:
            value = data.draw(st.sampled_from([_attr_text(attr.default)] * 3 + VALUES))
            kwargs.append(f"{attr.name}={value}")
    return ", ".join(args + kwargs)


def _check(data) -> None:
    op = data.draw(st.sampled_from(list_ops()))
    sx = data.draw(shapes())
    dx = data.draw(st.sampled_from(DTYPES))
    same = data.draw(st.booleans())
    text = TEMPLATE.format(
        sx=sx, dx=dx, sy=sx if same else data.draw(shapes()),
        dy=dx if same else data.draw(st.sampled_from(DTYPES)), op=op,
        args=_call_text(data, get_op_def(op)))
    try:
        mod = irc.parse(text, source_name="<fuzz>")
    except irc.IRCError as err:
        assert str(err)
        return
    try:
        LegalizeOps()(mod)
    except irc.IRCError as err:
        assert str(err) and "internal error" not in str(err), str(err)


@settings(QUICK, max_examples=150)
@given(st.data())
def test_random_operator_calls_type_check_or_raise_irc_errors(data):
    _check(data)


@pytest.mark.slow
@settings(LONG, max_examples=6000)
@given(st.data())
def test_random_operator_calls_long(data):
    _check(data)
