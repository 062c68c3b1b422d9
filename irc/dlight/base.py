"""The schedule-rule interface of the default rules.

A rule looks at one loop function and either schedules it (returning the
:class:`~irc.tir.Schedule`) or declines (returning None). Rules are tried in order by
:class:`~irc.dlight.ApplyDefaultSchedule`; a rule that declines, or whose schedule fails
half way with a :class:`~irc.ScheduleError` (logged on the ``irc.dlight`` logger), hands
the function to the next rule.
"""

from __future__ import annotations

from typing import Callable

from ..core.target import Target
from ..tir.schedule import Schedule
from ..tir.stmt import PrimFunc


class ScheduleRule:
    """A default schedule rule. Subclasses set ``target_keys`` (the target keys the rule
    is written for: ``("cpu",)`` or ``("gpu",)``) and implement :meth:`apply`."""

    target_keys: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The rule's name (its class name)."""
        return type(self).__name__

    def is_target_available(self, target: Target) -> bool:
        """True when the rule is written for ``target`` (a key of the target matches)."""
        if not self.target_keys:
            return True
        return any(k in target.keys for k in self.target_keys)

    def apply(self, func: PrimFunc, target: Target, tunable: bool = False
              ) -> Schedule | None:
        """Schedule ``func`` for ``target`` and return the schedule, or None when the rule
        does not apply. ``tunable`` asks for a schedule with sampling instructions instead
        of fixed decisions (the default rules make fixed decisions)."""
        raise NotImplementedError(f"{self.name} does not implement apply")

    def variants(self, func: PrimFunc, target: Target, limit: int) -> list[Schedule]:
        """Up to ``limit`` other schedules of ``func`` next to :meth:`apply`'s (other tile
        sizes, other cache blocking), most promising first: the candidates the tuner
        measures in a task's first round, so that tuning starts from the default schedule
        and improves it where the rule's estimate is off. A rule without choices to vary
        returns none (the default)."""
        return []

    def __repr__(self) -> str:
        return f"{self.name}()"

    @staticmethod
    def from_callable(name: str, fn: Callable[[PrimFunc, Target, bool], Schedule | None],
                      target_keys: tuple[str, ...] = ()) -> ScheduleRule:
        """A rule from a function ``fn(func, target, tunable) -> Schedule | None``."""

        class _FromCallable(ScheduleRule):
            def apply(self, func, target, tunable=False):
                return fn(func, target, tunable)

        _FromCallable.__name__ = name
        _FromCallable.__qualname__ = name
        rule = _FromCallable()
        rule.target_keys = tuple(target_keys)
        return rule


def is_scheduled(func: PrimFunc) -> bool:
    """True when ``func`` carries ``tir.is_scheduled`` (a rule or tuning scheduled it)."""
    return bool(func.attrs.get("tir.is_scheduled", False))


