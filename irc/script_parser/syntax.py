"""Text -> syntax tree: the lark grammar, the indentation postlexer and a small AST.

The LALR parser runs with an inline transformer (``_ToSyntax``), so no lark parse tree
is ever materialized: each grammar callback builds one of the plain syntax classes below
(``Name``, ``Call``, ``For``, ...) carrying its :class:`~irc.ir.diagnostics.Span`. The
builders (``tir_builder``, ``relax_builder``, ``module_builder``) then give the syntax its
meaning. Syntax errors are turned into :class:`~irc.IRParseError` by ``syntax_errors``.
"""

from __future__ import annotations

import ast as _pyast
import threading
from pathlib import Path
from typing import Any, Iterator

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import LarkError
from lark.lark import PostLex

from ..core.diagnostics import IRParseError, SourceFile, Span
from .syntax_errors import convert_lark_error

# ---------------------------------------------------------------------------------
# Syntax classes
# ---------------------------------------------------------------------------------


class Syntax:
    """Base of syntax nodes; ``span`` locates the node in the source."""

    __slots__ = ("span",)
    span: Span | None


class Name(Syntax):
    """A plain name: ``x``."""

    __slots__ = ("id",)

    def __init__(self, id: str, span: Span | None):
        self.id, self.span = id, span


class Const(Syntax):
    """A literal: int, float, str, bool or None."""

    __slots__ = ("value",)

    def __init__(self, value: Any, span: Span | None):
        self.value, self.span = value, span


class Attr(Syntax):
    """Attribute access: ``value.attr``."""

    __slots__ = ("value", "attr")

    def __init__(self, value: Syntax, attr: str, span: Span | None):
        self.value, self.attr, self.span = value, attr, span


class Call(Syntax):
    """``func(*args, **kwargs)``; ``kwargs`` is a list of (name, value, span)."""

    __slots__ = ("func", "args", "kwargs")

    def __init__(self, func: Syntax, args: list, kwargs: list, span: Span | None):
        self.func, self.args, self.kwargs, self.span = func, args, kwargs, span


class Index(Syntax):
    """``value[items]`` where each item is an expression or a :class:`Slice`."""

    __slots__ = ("value", "items")

    def __init__(self, value: Syntax, items: list, span: Span | None):
        self.value, self.items, self.span = value, items, span


class Slice(Syntax):
    """``lo:hi:step`` inside an index (each part may be None)."""

    __slots__ = ("lo", "hi", "step")

    def __init__(self, lo, hi, step, span: Span | None):
        self.lo, self.hi, self.step, self.span = lo, hi, step, span


class BinOp(Syntax):
    """Arithmetic, comparison or logical operator; ``op`` is the Python spelling."""

    __slots__ = ("op", "lhs", "rhs")

    def __init__(self, op: str, lhs: Syntax, rhs: Syntax, span: Span | None):
        self.op, self.lhs, self.rhs, self.span = op, lhs, rhs, span


class Unary(Syntax):
    """``-x``, ``+x`` or ``not x``."""

    __slots__ = ("op", "operand")

    def __init__(self, op: str, operand: Syntax, span: Span | None):
        self.op, self.operand, self.span = op, operand, span


class TupleExpr(Syntax):
    """``(a, b)`` (also a bare ``a, b``)."""

    __slots__ = ("elts",)

    def __init__(self, elts: list, span: Span | None):
        self.elts, self.span = elts, span


class ListExpr(Syntax):
    """``[a, b]``."""

    __slots__ = ("elts",)

    def __init__(self, elts: list, span: Span | None):
        self.elts, self.span = elts, span


class DictExpr(Syntax):
    """``{k: v, ...}``."""

    __slots__ = ("keys", "values")

    def __init__(self, keys: list, values: list, span: Span | None):
        self.keys, self.values, self.span = keys, values, span


class Assign(Syntax):
    """``target = value`` or ``target: annotation = value`` (value None: declaration)."""

    __slots__ = ("target", "annotation", "value")

    def __init__(self, target, annotation, value, span: Span | None):
        self.target, self.annotation, self.value, self.span = target, annotation, value, span


class ExprStmt(Syntax):
    """An expression used as a statement (a call, or a docstring)."""

    __slots__ = ("value",)

    def __init__(self, value: Syntax, span: Span | None):
        self.value, self.span = value, span


class Return(Syntax):
    """``return value`` (value None for a bare return)."""

    __slots__ = ("value",)

    def __init__(self, value, span: Span | None):
        self.value, self.span = value, span


class Pass(Syntax):
    """``pass``."""

    __slots__ = ()

    def __init__(self, span: Span | None):
        self.span = span


class Assert(Syntax):
    """``assert test, msg``."""

    __slots__ = ("test", "msg")

    def __init__(self, test, msg, span: Span | None):
        self.test, self.msg, self.span = test, msg, span


class Import(Syntax):
    """An import line; accepted at module level and ignored (scripts copied from Python)."""

    __slots__ = ()

    def __init__(self, span: Span | None):
        self.span = span


class If(Syntax):
    """``if``/``else`` (``elif`` nests an If in ``orelse``)."""

    __slots__ = ("test", "body", "orelse")

    def __init__(self, test, body: list, orelse: list | None, span: Span | None):
        self.test, self.body, self.orelse, self.span = test, body, orelse, span


class For(Syntax):
    """``for target in iter: body``."""

    __slots__ = ("target", "iter", "body")

    def __init__(self, target, iter, body: list, span: Span | None):
        self.target, self.iter, self.body, self.span = target, iter, body, span


class While(Syntax):
    """``while test: body``."""

    __slots__ = ("test", "body")

    def __init__(self, test, body: list, span: Span | None):
        self.test, self.body, self.span = test, body, span


class With(Syntax):
    """``with item [as target], ...:``; ``items`` is a list of (expr, target or None)."""

    __slots__ = ("items", "body")

    def __init__(self, items: list, body: list, span: Span | None):
        self.items, self.body, self.span = items, body, span


class Param(Syntax):
    """A function parameter with its annotation and default (either may be None)."""

    __slots__ = ("name", "annotation", "default")

    def __init__(self, name: str, annotation, default, span: Span | None):
        self.name, self.annotation, self.default, self.span = name, annotation, default, span


class FuncDef(Syntax):
    """``def name(params) -> returns: body`` with its decorators."""

    __slots__ = ("name", "params", "returns", "decorators", "body")

    def __init__(self, name: str, params: list, returns, body: list, span: Span | None):
        self.name, self.params, self.returns, self.body, self.span = (
            name, params, returns, body, span)
        self.decorators: list = []


class ClassDef(Syntax):
    """``class name(bases): body`` with its decorators."""

    __slots__ = ("name", "bases", "decorators", "body")

    def __init__(self, name: str, bases: list, body: list, span: Span | None):
        self.name, self.bases, self.body, self.span = name, bases, body, span
        self.decorators: list = []


def dotted_name(node: Syntax) -> str | None:
    """``"T.axis.spatial"`` for the expression ``T.axis.spatial``; None if not a dotted name."""
    parts = []
    while isinstance(node, Attr):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


# ---------------------------------------------------------------------------------
# Inline transformer: grammar callbacks -> syntax classes
# ---------------------------------------------------------------------------------


def _pos(x: Any) -> tuple[int, int, int, int] | None:
    if isinstance(x, Token):
        if x.line is None:
            return None
        return (x.line, x.column, x.end_line, x.end_column)
    span = getattr(x, "span", None)
    if span is not None:
        return (span.line, span.column, span.end_line or span.line,
                span.end_column or span.column)
    return None


@v_args(inline=True)
class _ToSyntax(Transformer):
    """Builds syntax nodes while the LALR parser reduces (no parse tree is built)."""

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
        self.source: SourceFile | None = None

    # -- spans -----------------------------------------------------------------------
    def _span(self, *items: Any) -> Span | None:
        first = last = None
        for it in items:
            p = _pos(it)
            if p is not None:
                first = p
                break
        for it in reversed(items):
            p = _pos(it)
            if p is not None:
                last = p
                break
        if first is None or last is None:
            return None
        return Span(self.source, first[0], first[1], last[2], last[3])

    # -- module and statements -----------------------------------------------------
    def start(self, *stmts):
        return [s for s in stmts if s is not None]

    def suite(self, *stmts):
        return list(stmts)

    def expr_stmt(self, testlist):
        return ExprStmt(testlist, testlist.span)

    def assign(self, target, value):
        return Assign(target, None, value, self._span(target, value))

    def ann_assign(self, target, annotation, value):
        return Assign(target, annotation, value, self._span(target, value))

    def ann_decl(self, target, annotation):
        return Assign(target, annotation, None, self._span(target, annotation))

    def aug_assign(self, target, op, value):
        raise IRParseError(f"augmented assignment '{op}' is not supported; write "
                           f"'x = x {op[:-1]} y'", span=self._span(op))

    def return_stmt(self, kw, value=None):
        return Return(value, self._span(kw, value))

    def pass_stmt(self, kw):
        return Pass(self._span(kw))

    def assert_stmt(self, test, msg=None):
        return Assert(test, msg, self._span(test, msg))

    def import_stmt(self, *children):
        return Import(self._span(*children))

    def import_names(self, *children):
        return None

    def import_name(self, *children):
        return None

    def dotted_name(self, *names):
        return names[0] if names else None

    def decorated(self, *children):
        *decorators, definition = children
        definition.decorators = list(decorators)
        return definition

    def decorator(self, expr):
        return expr

    def funcdef(self, name, params, returns, body):
        return FuncDef(str(name), params or [], returns, body, self._span(name))

    def parameters(self, *params):
        return [p for p in params if p is not None]

    def param(self, name, annotation, default):
        return Param(str(name), annotation, default, self._span(name, annotation, default))

    def classdef(self, name, bases, body):
        return ClassDef(str(name), bases or [], body, self._span(name))

    def if_stmt(self, test, body, elifs, orelse):
        # elif chains nest as an `else:` holding one `if`.
        for etest, ebody in reversed(elifs):
            orelse = [If(etest, ebody, orelse, etest.span)]
        return If(test, body, orelse, test.span)

    def elifs(self, *items):
        return list(items)

    def elif_(self, test, body):
        return (test, body)

    def for_stmt(self, target, iter_, body):
        return For(target, iter_, body, self._span(target, iter_))

    def while_stmt(self, test, body):
        return While(test, body, test.span)

    def with_stmt(self, *children):
        *items, body = children
        return With(list(items), body, items[0][0].span)

    def with_item(self, expr, target):
        return (expr, target)

    # -- expressions -----------------------------------------------------------------
    def or_chain(self, *operands):
        return self._fold("or", operands)

    def and_chain(self, *operands):
        return self._fold("and", operands)

    def _fold(self, op, operands):
        lhs = operands[0]
        for rhs in operands[1:]:
            lhs = BinOp(op, lhs, rhs, self._span(lhs, rhs))
        return lhs

    def not_(self, kw, operand):
        return Unary("not", operand, self._span(kw, operand))

    def compare(self, *items):
        if len(items) > 3:
            raise IRParseError("chained comparisons such as 'a < b < c' are not supported; "
                               "write '(a < b) and (b < c)'", span=self._span(*items))
        lhs, op, rhs = items
        return BinOp(str(op), lhs, rhs, self._span(lhs, rhs))

    def binary_chain(self, *items):
        lhs = items[0]
        for i in range(1, len(items), 2):
            rhs = items[i + 1]
            lhs = BinOp(str(items[i]), lhs, rhs, self._span(lhs, rhs))
        return lhs

    def unary(self, op, operand):
        return Unary(str(op), operand, self._span(op, operand))

    def call(self, func, arguments):
        args, kwargs = [], []
        for a in arguments or ():
            if isinstance(a, tuple):
                if any(k == a[0] for k, _, _ in kwargs):
                    raise IRParseError(f"keyword argument {a[0]!r} given twice", span=a[2])
                kwargs.append(a)
            else:
                if kwargs:
                    raise IRParseError("positional argument follows keyword argument",
                                       span=a.span)
                args.append(a)
        last = kwargs[-1][1] if kwargs else (args[-1] if args else None)
        return Call(func, args, kwargs, self._span(func, last))

    def arguments(self, *args):
        return [a for a in args if a is not None]

    def kwarg(self, name, value):
        return (str(name), value, self._span(name, value))

    def getitem(self, value, items):
        return Index(value, items, self._span(value, *items))

    def subscriptlist(self, *children):
        return [c for c in children if c is not None and not isinstance(c, Token)]

    def slice(self, lo, hi, step):
        return Slice(lo, hi, step, self._span(lo, hi, step))

    def getattr(self, value, name):
        return Attr(value, str(name), self._span(value, name))

    def paren_expr(self, *children):
        elts = [c for c in children if c is not None and not isinstance(c, Token)]
        has_comma = any(isinstance(c, Token) and c.type == "COMMA" for c in children)
        span = self._span(*children)
        if len(elts) == 1 and not has_comma:
            return elts[0]
        return TupleExpr(elts, span)

    def list_expr(self, *children):
        elts = [c for c in children if c is not None and not isinstance(c, Token)]
        return ListExpr(elts, self._span(*children))

    def dict_expr(self, *children):
        items = [c for c in children if c is not None and not isinstance(c, Token)]
        return DictExpr([k for k, _ in items], [v for _, v in items], self._span(*children))

    def dict_item(self, key, value):
        return (key, value)

    def exprlist(self, *children):
        return self._testlist(children)

    def testlist(self, *children):
        return self._testlist(children)

    def _testlist(self, children):
        elts = [c for c in children if c is not None and not isinstance(c, Token)]
        if len(elts) == 1 and not any(isinstance(c, Token) for c in children):
            return elts[0]
        return TupleExpr(elts, self._span(*children))

    def name(self, tok):
        return Name(str(tok), self._span(tok))

    def int_number(self, tok):
        text = str(tok).replace("_", "")
        value = int(text, 16) if text[:2] in ("0x", "0X") else int(text)
        return Const(value, self._span(tok))

    def float_number(self, tok):
        return Const(float(str(tok).replace("_", "")), self._span(tok))

    def strings(self, *toks):
        parts = []
        for t in toks:
            text = str(t)
            if text[0] in "\"'" and "\\" not in text and text[:3] not in ('"""', "'''"):
                parts.append(text[1:-1])  # no escapes: skip compiling (base64 data is large)
                continue
            try:
                parts.append(_pyast.literal_eval(text))
            except (ValueError, SyntaxError):
                raise IRParseError("invalid escape sequence in string literal",
                                   span=self._span(t)) from None
        return Const("".join(parts), self._span(*toks))

    def const(self, tok):
        value = {"None": None, "True": True, "False": False}[str(tok)]
        return Const(value, self._span(tok))


# ---------------------------------------------------------------------------------
# Indentation postlexer
# ---------------------------------------------------------------------------------

_OPEN = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_CHAR = {"LPAR": "(", "RPAR": ")", "LSQB": "[", "RSQB": "]", "LBRACE": "{", "RBRACE": "}"}
# The grammar.lark terminal names this module chooses by (checked by a test).
TOKEN_TYPES_USED = frozenset(_CHAR) | {"COMMA", "_NEWLINE"}


class _Indenter(PostLex):
    """Turns leading whitespace into _INDENT/_DEDENT tokens (as Python does) and drops
    newlines inside brackets; reports unbalanced brackets and bad dedents as
    IRParseError."""

    always_accept = ("_NEWLINE",)

    def __init__(self) -> None:
        self.source: SourceFile | None = None
        self.base_indent = 0
        self.text_len = 0

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        # Text copied from inside a class or function is uniformly indented: its first
        # line of code sets the base level.
        indents = [self.base_indent]
        brackets: list[Token] = []
        last = None
        for tok in stream:
            last = tok
            if tok.type == "_NEWLINE":
                if brackets:
                    continue
                yield tok
                indent_str = tok.rsplit("\n", 1)[1]
                indent = indent_str.count(" ") + indent_str.count("\t") * 8
                if tok.end_pos is not None and tok.end_pos >= self.text_len:
                    indent = indents[0]  # the end of the text closes every block
                if indent > indents[-1]:
                    indents.append(indent)
                    yield Token.new_borrow_pos("_INDENT", indent_str, tok)
                else:
                    while len(indents) > 1 and indent < indents[-1]:
                        indents.pop()
                        yield Token.new_borrow_pos("_DEDENT", indent_str, tok)
                    if indent != indents[-1]:
                        line = (tok.end_line or tok.line)
                        raise IRParseError(
                            "unindent does not match any outer indentation level "
                            f"(expected {indents[-1]} spaces, found {indent})",
                            span=Span(self.source, line, 1, line, indent + 1))
                continue
            if tok.type in _OPEN:
                brackets.append(tok)
            elif tok.type in _CLOSE:
                if not brackets:
                    raise IRParseError(f"unmatched '{_CHAR[tok.type]}'", span=_tok_span(
                        self.source, tok))
                opener = brackets.pop()
                if _OPEN[opener.type] != tok.type:
                    raise IRParseError(
                        f"closing '{_CHAR[tok.type]}' does not match '{_CHAR[opener.type]}' "
                        f"opened at line {opener.line}:{opener.column}",
                        span=_tok_span(self.source, tok))
            yield tok
        if brackets:
            opener = brackets[-1]
            raise IRParseError(f"'{_CHAR[opener.type]}' was never closed",
                               span=_tok_span(self.source, opener))
        while len(indents) > 1:
            indents.pop()
            yield Token.new_borrow_pos("_DEDENT", "", last) if last is not None else \
                Token("_DEDENT", "", 0, 1, 1, 1, 1, 0)


def _base_indent(text: str) -> int:
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and not stripped.startswith("#"):
            indent = line[:len(line) - len(stripped)]
            return indent.count(" ") + indent.count("\t") * 8
    return 0


def _tok_span(source: SourceFile | None, tok: Token) -> Span:
    return Span(source, tok.line, tok.column, tok.end_line, tok.end_column)


# ---------------------------------------------------------------------------------
# Entry
# ---------------------------------------------------------------------------------

_GRAMMAR = Path(__file__).with_name("grammar.lark")
# One parser per process; its transformer and postlexer carry the current source file, so
# parses are serialized.
_LOCK = threading.Lock()
_PARSER: tuple[Lark, _ToSyntax, _Indenter] | None = None


def _parser() -> tuple[Lark, _ToSyntax, _Indenter]:
    global _PARSER
    if _PARSER is None:
        transformer = _ToSyntax()
        indenter = _Indenter()
        # cache=True keeps the LALR tables in the temp directory: a new process (a tuning
        # worker reading records) loads them in milliseconds instead of ~0.5 s.
        lark = Lark(_GRAMMAR.read_text(), parser="lalr", postlex=indenter,
                    transformer=transformer, maybe_placeholders=True, cache=True)
        _PARSER = (lark, transformer, indenter)
    return _PARSER


def parse_syntax(source: SourceFile) -> list[Syntax]:
    """Parse ``source`` into a list of top-level syntax statements; raises IRParseError
    naming file:line:col for text that is not valid syntax."""
    text = source.text
    if not text.endswith("\n"):
        text += "\n"
    with _LOCK:
        lark, transformer, indenter = _parser()
        transformer.source = source
        indenter.source = source
        indenter.base_indent = _base_indent(text)
        indenter.text_len = len(text)
        try:
            return lark.parse(text)
        except LarkError as exc:
            raise convert_lark_error(exc, source) from None
