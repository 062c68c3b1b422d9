"""Tensor expressions, as ``from irc import te``: the public face of :mod:`irc.tir.te`."""

from .tir.te import *  # noqa: F403
from .tir.te import __all__  # noqa: F401
