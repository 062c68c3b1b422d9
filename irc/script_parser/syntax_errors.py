"""Friendly messages for syntax errors.

lark reports an unexpected token or character together with the LALR parser state. The
state alone is ambiguous (LALR merges states across contexts), so the message is chosen
from what the parser has on its value stack: the innermost unclosed bracket and what
precedes it (a call's argument list, a subscript, a tuple), or the keyword of the
statement being parsed (``for``, ``def``, ...), plus the set of tokens the state accepts.

Tokens are recognised by the names ``grammar.lark`` gives its terminals (every one is
named there, ``ARROW`` for ``->`` included), never by names lark generates, so a change
of the grammar does not change the messages.
"""

from __future__ import annotations

import re

from lark import Token
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..core.diagnostics import IRParseError, SourceFile, Span

_PUNCT = {
    "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "LBRACE": "'{'",
    "RBRACE": "'}'", "COMMA": "','", "COLON": "':'", "EQUAL": "'='", "DOT": "'.'",
    "AT": "'@'", "ARROW": "'->'", "STAR": "'*'",
}
_KEYWORD_STMTS = {"FOR": "for", "IF": "if", "ELIF": "elif", "ELSE": "else", "WHILE": "while",
                  "WITH": "with", "DEF": "def", "CLASS": "class"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERAND_STARTS = {"NAME", "DEC_NUMBER", "HEX_NUMBER", "FLOAT_NUMBER", "STRING",
                   "LONG_STRING", "LPAR", "LSQB", "LBRACE", "NONE", "TRUE", "FALSE", "ADD_OP",
                   "NOT"}
# Tokens after which an operand must follow (the stack top is not a finished operand).
_OPERAND_EXPECTED_AFTER = {
    "LPAR", "LSQB", "LBRACE", "COMMA", "COLON", "EQUAL", "ADD_OP", "MUL_OP", "COMP_OP", "NOT",
    "_AND", "_OR", "DOT", "AT", "ARROW", "RETURN", "IN", "IF", "ELIF", "WHILE", "WITH", "FOR",
    "ASSERT", "AS"}
# Token types produced by the postlexer or by lark itself rather than by grammar.lark.
_NOT_IN_GRAMMAR = {"$END", "_INDENT", "_DEDENT"}
# Every token type the messages are chosen by: names of terminals in grammar.lark (a
# test checks they all exist there, so renaming a terminal cannot silently change
# a message).
TOKEN_TYPES_USED = frozenset(
    set(_PUNCT) | set(_KEYWORD_STMTS) | _OPERAND_STARTS | _OPERAND_EXPECTED_AFTER
    | {"RPAR", "RSQB", "RBRACE", "_NEWLINE", "DEC_NUMBER", "HEX_NUMBER", "FLOAT_NUMBER",
       "STRING", "LONG_STRING", "NAME"}) - _NOT_IN_GRAMMAR


def describe_token(tok: Token, source: SourceFile | None = None) -> str:
    """How a token is named in a message: ``name 'x'``, ``end of line``, ``')'``."""
    t = tok.type
    if source is not None and str(tok).isidentifier() and tok.line is not None:
        # A keyword can match the start of a longer name where no name is expected.
        m = _WORD.match(source.line(tok.line), tok.column - 1)
        if m is not None and len(m.group()) > len(str(tok)):
            return f"name '{m.group()}'"
    if t == "$END":
        return "end of input"
    if t == "_NEWLINE":
        return "end of line"
    if t == "_INDENT":
        return "indentation"
    if t == "_DEDENT":
        return "end of the indented block"
    if t == "NAME":
        return f"name '{tok}'"
    if t in ("DEC_NUMBER", "HEX_NUMBER", "FLOAT_NUMBER"):
        return f"number {tok}"
    if t in ("STRING", "LONG_STRING"):
        return "string literal"
    if t in _PUNCT:
        return _PUNCT[t]
    return f"'{tok}'"


def _span_of(source: SourceFile, tok: Token) -> Span:
    line = tok.line if tok.line is not None else 1
    col = tok.column if tok.column is not None else 1
    if tok.type in ("$END", "_DEDENT", "_NEWLINE") or not str(tok).strip():
        # Point at the end of the last line with content.
        lines = source.text.splitlines() or [""]
        line = min(line, len(lines))
        while line > 1 and not lines[line - 1].strip():
            line -= 1
        col = len(lines[line - 1]) + 1
        return Span(source, line, col, line, col + 1)
    return Span(source, line, col, tok.end_line, tok.end_column)


def _open_bracket(stack: list) -> tuple[Token | None, object]:
    """The innermost unclosed bracket token on the value stack and the value before it."""
    depth = 0
    for i in range(len(stack) - 1, -1, -1):
        v = stack[i]
        if not isinstance(v, Token):
            continue
        if v.type in ("RPAR", "RSQB", "RBRACE"):
            depth += 1
        elif v.type in ("LPAR", "LSQB", "LBRACE"):
            if depth == 0:
                return v, (stack[i - 1] if i > 0 else None)
            depth -= 1
    return None, None


def _statement_keyword(stack: list) -> str | None:
    for v in reversed(stack):
        if isinstance(v, Token) and v.type in _KEYWORD_STMTS:
            return _KEYWORD_STMTS[v.type]
    return None


def _unexpected_token(e: UnexpectedToken, source: SourceFile) -> IRParseError:
    tok = e.token
    expected = set(e.expected or ())
    span = _span_of(source, tok)
    what = describe_token(tok, source)
    try:
        stack = list(e.interactive_parser.parser_state.value_stack)
    except AttributeError:
        stack = []
    top = stack[-1] if stack else None

    if tok.type == "_INDENT":
        line = tok.end_line or tok.line or 1
        return IRParseError("unexpected indentation",
                            span=Span(source, line, 1, line, max(2, len(str(tok)) + 1)))
    if "_INDENT" in expected or (
            isinstance(top, Token) and top.type == "_NEWLINE" and len(stack) > 1
            and isinstance(stack[-2], Token) and stack[-2].type == "COLON"):
        return IRParseError("expected an indented block after ':'", span=span)

    after_operand = top is not None and not (isinstance(top, Token) and
                                             top.type in _OPERAND_EXPECTED_AFTER)
    opener, before = _open_bracket(stack)
    if opener is not None and tok.line is not None and opener.line is not None and \
            tok.line > opener.line and not source.line(tok.line)[:tok.column - 1].strip():
        # Newlines inside brackets are joined, so a bracket left open shows up as an
        # error at the start of a later line: blame the bracket, as Python does.
        return IRParseError(f"'{opener}' was never closed",
                            span=Span(source, opener.line, opener.column, opener.end_line,
                                      opener.end_column))
    if opener is not None:
        is_call = before is not None and not isinstance(before, Token)
        if opener.type == "LPAR" and is_call:
            if after_operand and "RPAR" in expected:
                return IRParseError(f"expected ')' after argument list, found {what}",
                                    span=span)
            return IRParseError(f"expected an argument or ')', found {what}", span=span)
        close = {"LPAR": "')'", "LSQB": "']'", "LBRACE": "'}'"}[opener.type]
        where = f"'{opener}' opened at line {opener.line}:{opener.column}"
        if opener.type == "LSQB" and is_call:
            where = "the subscript"
        if after_operand:
            return IRParseError(f"expected ',' or {close} to close {where}, found {what}",
                                span=span)
        return IRParseError(f"expected an expression, found {what}", span=span)

    if not after_operand and top is not None:
        return IRParseError(f"expected an expression after {describe_token(top)}, found {what}",
                            span=span)
    keyword = _statement_keyword(stack)
    if keyword == "for" and "IN" in expected and tok.type != "IN":
        return IRParseError(f"expected 'in' after the loop variables of the 'for' statement, "
                            f"found {what}", span=span)
    if "COLON" in expected and keyword is not None and tok.type != "COLON":
        return IRParseError(f"expected ':' at the end of the '{keyword}' statement, "
                            f"found {what}", span=span)
    if tok.type in ("_NEWLINE", "$END") and expected & _OPERAND_STARTS:
        return IRParseError("expected an expression before the end of the line", span=span)
    if tok.type == "$END":
        return IRParseError("unexpected end of input", span=span)
    if tok.type == "_DEDENT":
        return IRParseError("unexpected end of the indented block", span=span)
    if tok.type == "EQUAL":
        return IRParseError("cannot assign here: the left side of '=' must be a name, a "
                            "tuple of names or a buffer element", span=span)
    if "_NEWLINE" in expected and tok.type != "_NEWLINE":
        return IRParseError(f"expected the end of the statement, found {what}", span=span)
    return IRParseError(f"invalid syntax: unexpected {what}", span=span)


def _unexpected_char(e: UnexpectedCharacters, source: SourceFile) -> IRParseError:
    text = source.text
    pos = e.pos_in_stream if e.pos_in_stream is not None else 0
    ch = text[pos] if 0 <= pos < len(text) else ""
    span = Span(source, e.line, e.column, e.line, e.column + 1)
    if ch in ("'", '"'):
        if text[pos:pos + 3] in ('"""', "'''"):
            return IRParseError("unterminated triple-quoted string literal", span=span)
        return IRParseError("unterminated string literal", span=span)
    if ch == "\t" or ch == " ":
        return IRParseError("unexpected whitespace", span=span)
    return IRParseError(f"unexpected character {ch!r}", span=span)


def convert_lark_error(exc: LarkError, source: SourceFile) -> IRParseError:
    """The IRParseError (with file:line:col and caret) for a lark parse error."""
    if isinstance(exc, UnexpectedToken):
        return _unexpected_token(exc, source)
    if isinstance(exc, UnexpectedCharacters):
        return _unexpected_char(exc, source)
    if isinstance(exc, UnexpectedInput):
        line = getattr(exc, "line", 1) or 1
        col = getattr(exc, "column", 1) or 1
        return IRParseError("unexpected end of input", span=Span(source, line, col))
    return IRParseError(f"invalid syntax ({type(exc).__name__})", span=None)
