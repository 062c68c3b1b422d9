"""Compilation targets (``irc.target.Target``); defined in :mod:`irc.core.target`, which
every layer shares."""

from .core.target import (
    Target,
    TargetError,
    TargetKind,
    create,
    host_cpu_features,
    host_cpu_model,
    host_cpu_name,
    host_num_cores,
)

__all__ = ["Target", "TargetError", "TargetKind", "create", "host_cpu_features",
           "host_cpu_model", "host_cpu_name", "host_num_cores"]
