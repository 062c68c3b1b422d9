"""Operator compute definitions, as ``from irc import topi``: the public face of
:mod:`irc.tir.topi` (``topi.nn`` included)."""

from .tir.topi import *  # noqa: F403
from .tir.topi import __all__, nn  # noqa: F401
