"""Testing helpers: numpy reference implementations of operators (``irc.testing.ref``)."""

from . import ref
