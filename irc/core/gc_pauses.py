"""Fewer pauses of Python's cyclic garbage collector while irc builds IR.

Compiling a model creates millions of small IR objects. With the default threshold
(a young-generation collection every 700 net container allocations), the collector runs
thousands of times per compile and every tenth run also walks the older generations:
the whole IR built so far. Reference counting frees almost all of irc's objects (IR is
acyclic), so those walks find little. ResNet-50's import and compile took 5.85 s on
average with the default threshold and 5.40 s with 100,000 (fresh processes alternated,
2-core Zen 3).

:func:`fewer_gc_pauses` raises the young generation's threshold for the duration of a
call and restores it afterwards; collections still run, cycles are still freed. Nested
uses, and a program that set a higher threshold itself, keep the outer setting.
"""

from __future__ import annotations

import functools
import gc
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

# Net container allocations between young-generation collections while irc works.
GC_THRESHOLD = 100_000

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def fewer_gc_pauses() -> Iterator[None]:
    """Raise the collector's young-generation threshold to ``GC_THRESHOLD`` inside the
    block (see the module docstring)."""
    old = gc.get_threshold()
    if old[0] == 0 or old[0] >= GC_THRESHOLD:  # disabled by threshold, or set higher
        yield
        return
    gc.set_threshold(GC_THRESHOLD, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def with_fewer_gc_pauses(fn: F) -> F:
    """Decorator: run ``fn`` under :func:`fewer_gc_pauses`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with fewer_gc_pauses():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
