"""Helpers shared by the graph-IR tests: typed variables and struct-info inference."""

from irc.ir import Var, normalize, tensor_sinfo
from irc.ir.struct_info_analysis import format_sinfo


def tensor_var(shape, dtype="float32", name="x"):
    """A graph variable of tensor struct info ``shape``/``dtype``."""
    return Var(name_hint=name, struct_info=tensor_sinfo(shape, dtype))


def inferred(expr):
    """The struct info inference gives ``expr``, in script notation."""
    return format_sinfo(normalize(expr).struct_info)
