"""Named pipelines: ``get_pipeline("zero")`` and ``get_pipeline("default")``.

- ``zero``: the minimum that makes a module runnable — legalize operators to loop
  functions (seed 003 runs it before default schedule rules or tuning).
- ``default``: what ``irc.compile`` uses; it grows with the optimizing passes (constant
  folding, fusion, layout conversion) as they land.
"""

from __future__ import annotations

from ..ir.diagnostics import IRCError
from .infra import Pass, Sequential


def _zero() -> Pass:
    from .legalize import LegalizeOps

    return Sequential([LegalizeOps()], name="zero")


def _default() -> Pass:
    from .legalize import LegalizeOps

    return Sequential([LegalizeOps()], name="default")


_PIPELINES = {"zero": _zero, "default": _default}


def get_pipeline(name: str = "zero") -> Pass:
    """The pipeline called ``name`` (``"zero"`` or ``"default"``)."""
    fn = _PIPELINES.get(name)
    if fn is None:
        raise IRCError(f"unknown pipeline {name!r}; available: {', '.join(sorted(_PIPELINES))}")
    return fn()
