"""Bad input: irc errors naming file:line:col, showing the line with a caret, and saying
what was expected."""

import pytest
from script_helpers import parse_error

import irc
from irc.script_parser import syntax, syntax_errors

RELAX = '''@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 256), "float32"), b: R.Tensor((10,), "float32")):
        with R.dataflow():
            lv = R.add(x, x)
            R.output(lv)
        return lv
'''

TIR = '''@T.prim_func
def f(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4,), "int32")):
    for i in range(4):
        A[i, 0] = T.float32(1)
'''


def check(e, message, line, column):
    assert message in e.message, e.message
    assert e.span is not None and (e.span.line, e.span.column) == (line, column), str(e)
    text = str(e)
    assert text.startswith(f"bad.ir:{line}:{column}: ")
    lines = text.split("\n")
    assert lines[2].strip().startswith("^") and lines[2].index("^") - 4 == column - 1
    assert isinstance(e, irc.IRCError)


def relax(old, new, exc=irc.IRParseError):
    assert old in RELAX
    return parse_error(RELAX.replace(old, new), exc)


def tir(old, new, exc=irc.IRParseError):
    assert old in TIR
    return parse_error(TIR.replace(old, new), exc)


def test_missing_paren_in_argument_list():
    check(relax("R.add(x, x)", "R.add(x x)"), "expected ')' after argument list", 6, 26)


def test_broadcast_error_located_at_the_call():
    e = relax("R.add(x, x)", "R.add(x, b)", irc.IRTypeError)
    check(e, "R.add: shapes (1, 256) and (10,) do not broadcast", 6, 18)


def test_undefined_name():
    check(relax("R.add(x, x)", "R.add(x, lv3)"), "undefined name 'lv3'", 6, 27)


def test_unknown_operator():
    e = relax("R.add(x, x)", "R.nn.conv3x(x, x)", irc.IRTypeError)
    check(e, "unknown operator R.nn.conv3x", 6, 18)


def test_buffer_needs_shape_tuple():
    e = tir('T.Buffer((4,), "int32")', 'T.Buffer("4", "int32")')
    check(e, "T.Buffer expects a shape tuple", 2, 42)


@pytest.mark.parametrize("old,new,message,line,column", [
    ("range(4)", "T.grid()", "T.grid takes one or more extents", 3, 14),
    ("T.float32(1)", 'T.Cast("float32")', "T.Cast is missing argument(s) value", 4, 19),
    ("T.float32(1)", "T.max(A[0, 0])", "T.max is missing argument(s) b", 4, 19),
    ("T.float32(1)", "T.exp(A[0, 0], 1.0)", "exp takes 1 argument(s)", 4, 19),
    ("T.float32(1)", "T.float32(1, 2)", "T.float32 takes one value", 4, 19),
    ("range(4)", "T.thread_binding(4)", "thread= of T.thread_binding must be a string", 3, 14),
])
def test_wrong_arity_of_tir_builtins(old, new, message, line, column):
    e = tir(old, new, (irc.IRParseError, irc.IRTypeError))
    check(e, message, line, column)


@pytest.mark.parametrize("old,new,message,line,column", [
    ("R.add(x, x)", "R.matmul(x)", "R.matmul is missing operand(s) x2", 6, 18),
    ("R.add(x, x)", "R.add(x, x, foo=1)", "R.add has no argument 'foo'", 6, 18),
    ("R.add(x, x)", "R.permute_dims(x, axes=1.5)", "attribute axes", 6, 18),
    ("R.add(x, x)", "R.const(1, 2)", "the dtype of R.const must be a dtype string", 6, 18),
    ("R.add(x, x)", 'R.Tensor((1,), "float32")', "expected a graph value", 6, 18),
])
def test_wrong_arity_of_relax_builtins(old, new, message, line, column):
    e = relax(old, new, (irc.IRParseError, irc.IRTypeError))
    check(e, message, line, column)


def test_dtype_mistakes():
    e = tir('"int32")', '"int33")', irc.IRTypeError)
    check(e, "unknown dtype 'int33'", 2, 42)
    e = relax('b: R.Tensor((10,), "float32")', 'b: R.Tensor((10,), "flaot32")', irc.IRTypeError)
    check(e, "unknown dtype 'flaot32'", 4, 51)
    e = tir("A[i, 0] = T.float32(1)", "B[i] = T.float32(1)", irc.IRTypeError)
    check(e, "cannot store a value of dtype float32 into buffer 'B' of dtype int32", 4, 16)
    e = tir("T.float32(1)", "T.int8(1000)", irc.IRTypeError)
    check(e, "integer 1000 does not fit in int8", 4, 19)


def test_duplicate_definitions():
    e = tir("        A[i, 0]", "        for i in range(2):\n            A[i, 0]")
    check(e, "duplicate definition of 'i'", 4, 13)
    e = tir("B: T.Buffer", "A: T.Buffer")
    check(e, "duplicate definition of 'A'", 2, 39)
    e = relax("b: R.Tensor", "x: R.Tensor")
    check(e, "duplicate parameter 'x'", 4, 48)
    twice = RELAX + RELAX.split("class Module:\n")[1]
    check(parse_error(twice), "duplicate definition of function 'main'", 10, 9)


def test_use_before_definition():
    e = relax("lv = R.add(x, x)", "lv = R.add(x, lv2)\n            lv2 = R.add(x, x)")
    check(e, "undefined name 'lv2'", 6, 27)
    e = tir("A[i, 0] = T.float32(1)", "A[j, 0] = T.float32(1)")
    check(e, "undefined name 'j'", 4, 11)


def test_indentation_errors():
    e = parse_error("@T.prim_func\ndef f():\n    for i in range(4):\n    T.evaluate(0)\n")
    check(e, "expected an indented block after ':'", 4, 5)
    e = parse_error("@T.prim_func\ndef f():\n        T.evaluate(0)\n    T.evaluate(1)\n")
    check(e, "unindent does not match any outer indentation level", 4, 1)
    e = parse_error("@T.prim_func\ndef f():\n    T.evaluate(0)\n        T.evaluate(1)\n")
    check(e, "unexpected indentation", 4, 1)


def test_unterminated_strings():
    e = tir('"int32")', '"int32)')
    check(e, "unterminated string literal", 2, 57)
    e = tir('"float32")', '"float32)')
    assert "name 'int32'" in e.message
    e = parse_error('x = """never closed\n')
    check(e, "unterminated triple-quoted string literal", 1, 5)


def test_brackets_and_colons():
    check(tir("range(4):", "range(4"), "'(' was never closed", 3, 19)
    check(tir("range(4):", "range(4)"), "expected ':' at the end of the 'for' statement", 3, 22)
    check(tir("A[i, 0]", "A[i, 0))"), "closing ')' does not match '['", 4, 15)


def test_messages_name_the_arrow_and_keywords_not_lark_terminals():
    # '->' was lark's anonymous terminal __ANON_0: the message must still name it.
    e = tir("):\n    for", ") -> :\n    for")
    check(e, "expected an expression after '->', found ':'", 2, 70)
    e = tir("):\n    for", ") ->\n    for")
    check(e, "expected an expression after '->', found end of line", 2, 69)
    check(tir("for i in", "for i on"), "expected 'in' after the loop variables", 3, 11)


def test_error_messages_use_only_terminals_the_grammar_names():
    lark, _, _ = syntax._parser()
    names = {t.name for t in lark.terminals}
    assert not [n for n in names if n.startswith("__")], "every terminal is named in grammar.lark"
    assert syntax_errors.TOKEN_TYPES_USED <= names, syntax_errors.TOKEN_TYPES_USED - names
    assert syntax.TOKEN_TYPES_USED <= names, syntax.TOKEN_TYPES_USED - names


def test_annotation_must_match_inferred_struct_info():
    e = relax("lv = R.add(x, x)", 'lv: R.Tensor((2, 256), "float32") = R.add(x, x)',
              irc.IRTypeError)
    check(e, "does not match the value's struct info", 6, 17)
    assert "match_cast" in str(e)


def test_dataflow_and_function_structure():
    check(relax("R.output(lv)", "R.output(lv9)"), "R.output names 'lv9'", 7, 22)
    check(relax("        return lv\n", ""), "must end with a return statement", 4, 9)
    e = relax("@R.function", "@R.fn")
    check(e, "unknown decorator @R.fn", 3, 6)


def test_metadata_without_show_meta():
    e = relax("R.add(x, x)", 'R.add(x, metadata["relax.expr.Constant"][0])')
    check(e, "printed without show_meta=True", 6, 27)


def test_block_without_reads_writes_detects_them():
    text = '''@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("b"):
            vi = T.axis.spatial(4, i)
            B[vi] = A[vi] * T.float32(2)
'''
    block = irc.parse(text).body.block.body.body.block
    assert [r.buffer.name for r in block.reads] == ["A"]
    assert [r.buffer.name for r in block.writes] == ["B"]


def test_header_statements_outside_blocks():
    e = tir("A[i, 0] = T.float32(1)", "T.reads(A[i, 0])")
    check(e, "T.reads(...) must be directly inside a T.block", 4, 9)
    e = tir("A[i, 0] = T.float32(1)", "vi = T.axis.spatial(4, i)")
    check(e, "T.axis.spatial must be directly inside a T.block", 4, 9)


def test_errors_are_irc_errors_with_source_name():
    e = parse_error("x = (\n")
    assert str(e).startswith("bad.ir:1:5: ")
    with pytest.raises(irc.IRParseError, match="expects the script as a string"):
        irc.parse(b"bytes")


def test_missing_r_output_names_the_fix():
    """A dataflow variable used after its block without R.output: "undefined name 'y'"
    said nothing about R.output."""
    text = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            y = R.nn.relu(x)
        return y

    @R.function
    def other(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        return z
'''
    with pytest.raises(irc.IRParseError, match="undefined name 'y'") as err:
        irc.parse(text)
    assert "R.output(y)" in err.value.hint
    fixed = text.replace("            y = R.nn.relu(x)\n",
                         "            y = R.nn.relu(x)\n            R.output(y)\n")
    with pytest.raises(irc.IRParseError, match="undefined name 'z'") as err:
        irc.parse(fixed)  # another function's undefined name gets no such hint
    assert not err.value.hint
