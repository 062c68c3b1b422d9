"""Compilation targets (``irc.target.Target``); defined in :mod:`irc.core.target`, which
every layer shares."""

from .core.target import Target, TargetError, TargetKind

__all__ = ["Target", "TargetError", "TargetKind"]
