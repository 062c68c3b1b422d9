"""Default schedule rules applied without search (DLight style).

``ApplyDefaultSchedule(*rules)`` schedules every loop function of a module with the
first rule that applies under the current target::

    from irc import dlight as dl
    with irc.target.Target("cuda"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                      dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)

Rules: ``dl.gpu.*`` for CUDA targets and ``dl.cpu.*`` for llvm targets (the default
pipeline ends with the CPU rules). A rule is a :class:`ScheduleRule`; ``analysis`` holds
the block analysis the rules share. A rule that fails half way is logged at WARNING on the
``irc.dlight`` logger and the next rule is tried.
"""

from . import analysis, cpu, gpu
from .apply import (
    ApplyDefaultSchedule,
    DefaultScheduleForTarget,
    RuleFailure,
    RuleOutcome,
    apply_rules,
    default_rules_for,
    schedule_func,
)
from .base import ScheduleRule, is_scheduled

__all__ = ["ApplyDefaultSchedule", "DefaultScheduleForTarget", "RuleFailure", "RuleOutcome",
           "ScheduleRule", "analysis", "apply_rules", "cpu", "default_rules_for", "gpu",
           "is_scheduled",
           "schedule_func"]
