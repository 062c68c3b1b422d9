"""Property: mutating a valid script (deleting, duplicating and swapping tokens) yields
either IR or one of irc's own exceptions, never an internal error (AttributeError,
KeyError, TypeError, ...) or a bare lark exception."""

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irc
from irc import te
from irc.ir.op import get_op_def, list_ops

FIXTURES = Path(__file__).parent / "fixtures"

_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|\d+\.\d*|\d+|[A-Za-z_]\w*|\n[ \t]*|//|==|<=|>=|!=|->'
                    r'|[^\sA-Za-z_\d]| +')

EXTRA = '''@T.prim_func
def f(A: T.Buffer((16, 16), "float32"), n: T.int32):
    x = T.allocate([64], "float32", "local")
    x_1 = T.Buffer((64,), data=x)
    for i in T.vectorized(4):
        with T.block("b"):
            vi = T.axis.spatial((0, 4), i)
            T.where(vi < n)
            T.reads(A[vi, 0:16])
            T.writes(A[vi, vi:vi + 1])
            s = T.match_buffer(A[vi, 0:4], (4,))
            with T.init():
                A[vi, 0] = T.float32(0.0)
            A[vi, vi] = T.Select(n > 2, T.exp(A[vi, 0]), T.Cast("float32", n))
    x_1[0:16] = T.Broadcast(T.float32(1.0), 16)
    if n < 3:
        assert n >= 0, "bad"
        c: T.int32 = n // 2 % 3
        T.evaluate(T.Let(c * 2, where={d: c}))
    else:
        T.evaluate(T.call_intrin("int32", "f", n, "s"))
'''

RELAX = '''@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), c: R.Prim("bool")) -> R.Tensor((n, 4), "float32"):
        m = T.int64()
        with R.dataflow():
            a: R.Tensor((n, 4), "float32") = R.add(x, R.const(1.5, "float32"))
            t = (a, x)
            b = R.reshape(t[0], R.shape([n * 4]))
            R.output(a, b)
        y = R.match_cast(b, R.Tensor((m,), "float32"))
        if c:
            z = R.nn.relu(a)
        else:
            z = R.permute_dims(a, axes=[0, 1])
        s = R.call_packed("f", z, R.prim_value(2), sinfo_args=R.Object)
        return z
'''


def _corpus():
    texts = [p.read_text() for p in sorted(FIXTURES.glob("*.ir"))]
    a = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    b = te.compute((8, 8), lambda i, j: te.sum(a[i, k] * a[k, j], axis=k), name="B")
    texts.append(te.create_prim_func([a, b]).script())
    return texts + [EXTRA, RELAX]


CORPUS = [_TOKEN.findall(t) for t in _corpus()]

mutation = st.tuples(st.sampled_from(["delete", "duplicate", "swap", "swap_near"]),
                     st.integers(min_value=0, max_value=10**6),
                     st.integers(min_value=0, max_value=10**6))


def mutate(tokens, mutations):
    toks = list(tokens)
    for op, i, j in mutations:
        if not toks:
            break
        i %= len(toks)
        if op == "delete":
            del toks[i]
        elif op == "duplicate":
            toks.insert(i, toks[i])
        else:
            j = j % len(toks) if op == "swap" else min(i + 1, len(toks) - 1)
            toks[i], toks[j] = toks[j], toks[i]
    return "".join(toks)


def check_only_irc_errors(text):
    try:
        irc.parse(text, source_name="<fuzz>")
    except irc.IRCError as e:
        assert str(e)  # renders without failing
    # Anything else propagates and fails the test with its traceback.


def test_corpus_is_valid_and_tokenizes_losslessly():
    for tokens, text in zip(CORPUS, _corpus()):
        assert "".join(tokens) == text
        irc.parse(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=len(CORPUS) - 1),
       st.lists(mutation, min_size=1, max_size=3))
def test_mutated_scripts_raise_only_irc_errors(which, mutations):
    check_only_irc_errors(mutate(CORPUS[which], mutations))


@pytest.mark.slow
@settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=len(CORPUS) - 1),
       st.lists(mutation, min_size=1, max_size=6))
def test_mutated_scripts_raise_only_irc_errors_long(which, mutations):
    check_only_irc_errors(mutate(CORPUS[which], mutations))


OP_CALL = '''@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        A[0] = T.float32(0)

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), s: R.Shape([2, 3]), p: R.Prim("int64")):
        cls = Module
        lv = R.{op}({args})
        return lv
'''
ARG_VALUES = ["x", "s", "p", "1", "-1", "1.5", '"a"', "None", "True", "[1, 2]", "[x, x]",
              "(x, x)", "[]", "()", "[[1]]", "R.shape([2, 3])", "R.prim_value(1)",
              'R.Tensor((2, 3), "float32")', "cls.f", '"float32"', "[x, 1]", "{1: 2}",
              "T.int64(2)", "[-5]", "[0, 1, 2, 3]"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_operator_calls_with_any_arguments_raise_only_irc_errors(data):
    op = data.draw(st.sampled_from(list_ops()))
    opdef = get_op_def(op)
    args = data.draw(st.lists(st.sampled_from(ARG_VALUES), max_size=4))
    names = list(opdef.operands) + [a.name for a in opdef.attrs] + ["bogus"]
    kwargs = data.draw(st.dictionaries(st.sampled_from(names), st.sampled_from(ARG_VALUES),
                                       max_size=2))
    text = OP_CALL.format(op=op, args=", ".join(args + [f"{k}={v}" for k, v in
                                                        kwargs.items()]))
    check_only_irc_errors(text)
