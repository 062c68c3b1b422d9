"""irc's text format: a lark grammar for TVMScript-style IR text and the builders that
turn it into IR.

``parse(text)`` reads module text (``@I.ir_module class Module: ...``) into an
:class:`~irc.ir.IRModule`, and a single ``@T.prim_func`` or ``@R.function`` into that
function. Errors are :class:`~irc.IRParseError` (text that does not parse) or
:class:`~irc.IRTypeError` (text that parses but is ill-typed), naming file:line:col with
the offending line and a caret.
"""

from __future__ import annotations

from typing import Any

from ..core.diagnostics import IRParseError, SourceFile
from ..core.module import register_parser
from .module_builder import ModuleBuilder
from .syntax import parse_syntax


def parse(text: str, source_name: str = "<string>", metadata: dict[str, list[Any]] | None =
          None) -> Any:
    """Parse irc script ``text``: an IRModule for module text, the function for a single
    ``@T.prim_func``/``@R.function``. ``metadata`` maps kinds (``"relax.expr.Constant"``)
    to the values that ``metadata[kind][i]`` refers to when the text has no metadata
    section (e.g. constants of a module printed without ``show_meta=True``)."""
    if not isinstance(text, str):
        raise IRParseError(f"irc.parse expects the script as a string, got "
                           f"{type(text).__name__}")
    if metadata is not None and not (
            isinstance(metadata, dict) and all(isinstance(k, str) and isinstance(v, list)
                                               for k, v in metadata.items())):
        raise IRParseError("irc.parse: metadata must map kinds to lists of values, e.g. "
                           "{\"relax.expr.Constant\": [array, ...]}, got "
                           f"{type(metadata).__name__} {metadata!r:.80}")
    source = SourceFile(source_name, text)
    try:
        stmts = parse_syntax(source)
        return ModuleBuilder(source, metadata).build(stmts)
    except RecursionError:
        # Only pathological nesting (thousands of levels) gets here.
        raise IRParseError(f"{source_name}: the script is nested too deeply to parse "
                           "(Python's recursion limit); split the expression") from None


register_parser(lambda text, source_name, metadata: parse(text, source_name=source_name,
                                                         metadata=metadata))

__all__ = ["parse"]
