"""Pass instruments: observers a :class:`~irc.core.transform.PassContext` runs around
every pass (graph passes, loop-IR lowering steps, scheduling and tuning passes alike).

- :class:`PassTimingInstrument` records each pass's wall time.
- :class:`PrintIR` prints the module; it is also a pass, so it can sit in a
  ``Sequential`` where the module should be shown.
- :class:`RoundTripInstrument` prints the module after every pass, parses the text back
  and checks the result is structurally equal, naming the pass that broke the text
  format (the test suite runs the pass and end-to-end tests under it).

The well-formedness instrument checks graph and loop IR, so it lives with the graph IR
(:class:`irc.ir.well_formed.WellFormedInstrument`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Sequence, TextIO

from .diagnostics import IRCError
from .module import IRModule
from .structural import StructuralMismatchError, assert_structural_equal
from .transform import Pass, PassContext, PassInfo, PassInstrument, pass_names


class PassTimingInstrument(PassInstrument):
    """Records the wall time of every pass; ``render()`` gives a table."""

    def __init__(self) -> None:
        self.timings: list[tuple[str, float]] = []
        self._start: list[float] = []

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        self._start.append(time.perf_counter())

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        self.timings.append((info.name, time.perf_counter() - self._start.pop()))

    def render(self) -> str:
        """One line per pass run: its name and milliseconds."""
        lines = [f"{name:<40} {secs * 1e3:9.2f} ms" for name, secs in self.timings]
        return "\n".join(lines)


@dataclass(frozen=True)
class PrintIR(Pass, PassInstrument):
    """Print the module as irc script text.

    As a pass (``Sequential([..., PrintIR("after fusion"), ...])``) it prints the module
    it receives under a ``# header`` line and returns it unchanged. As an instrument
    (``PassContext(instruments=[PrintIR()])``) it prints the module after every pass, or
    only after the passes named in ``only``. ``file`` defaults to standard output.
    """

    header: str = ""
    only: tuple[str, ...] = ()
    show_meta: bool = False
    file: TextIO | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "only", pass_names(self.only, "PrintIR(only=...)",
                                                    known=True))
        if not isinstance(self.header, str):
            raise IRCError(f"PrintIR: header must be a string, got {self.header!r}")

    def _print(self, title: str, mod: IRModule) -> None:
        out = self.file or sys.stdout
        print(f"# {title}", file=out)
        print(mod.script(show_meta=self.show_meta), file=out)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        self._print(self.header or "PrintIR", mod)
        return mod

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        if info.name == self.name:
            return  # a PrintIR pass has just printed the module itself
        if not self.only or info.name in self.only:
            self._print(f"after {info.name}", mod)


class RoundTripInstrument(PassInstrument):
    """After every pass, print the module (constants included), parse the text back and
    require a structurally equal module; a mismatch raises an IRCError naming the pass
    and showing the first difference.

    What cannot be in the text is handed to the parser beside it, as a user does with
    ``irc.parse(text, metadata=...)``, and said here rather than skipped silently:

    - objects without a text form (a compiled runtime module in the module's
      attributes) print as ``metadata["Module"][i]`` references; the parser gets those
      very objects back;
    - when a module's constants total more than ``max_meta_bytes`` (1 MiB by default:
      bound model weights), their data is not written into the text as base64: each
      round trip would print and parse it again (seconds for a ResNet). The text refers
      to them as ``metadata["relax.expr.Constant"][i]`` and the parser gets the
      constants from the printer. Everything else in the module is printed and parsed;
      the base64 form itself is checked on every smaller module.

    ``skip`` names passes whose output is not checked. ``checked`` counts the modules
    round-tripped; a module object just checked is not checked again (modules are
    immutable; a pass that changes nothing returns the same object).

    Parsing is most of a round trip's cost, and the same text comes back often (a pass
    that rebuilt a module without changing it; the same kernels lowered again by
    another compile). The parser is a pure function of the text and the metadata
    objects, so its results are kept (:data:`PARSE_CACHE_SIZE` of them, shared by all
    instruments; not those of modules whose constants are left out of the text) and
    reused for the same text and the same metadata objects; the structural comparison
    with the module at hand is made every time.
    """

    def __init__(self, skip: Sequence[str] = (), max_meta_bytes: int | None = 1 << 20) -> None:
        self.skip = set(pass_names(skip, "RoundTripInstrument(skip=...)", known=True))
        self.max_meta_bytes = max_meta_bytes
        self.checked = 0
        self._last: IRModule | None = None

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        if info.name in self.skip or mod is self._last:
            return
        metadata: dict[str, list] = {}
        text = mod.script(show_meta=True, meta_limit=self.max_meta_bytes, metadata=metadata)
        try:
            again = _parse_cached(text, metadata, f"<after {info.name}>")
            assert_structural_equal(again, mod)
        except StructuralMismatchError as err:
            raise IRCError(f"after pass {info.name}: the printed module does not parse back "
                           f"to the same IR\n{err}") from None
        except IRCError as err:
            raise IRCError(f"after pass {info.name}: the printed module does not parse "
                           f"back:\n{err}") from None
        self._last = mod
        self.checked += 1


# How many parsed modules RoundTripInstrument keeps for reuse (most recently used).
PARSE_CACHE_SIZE = 256
_parsed: OrderedDict[tuple, tuple[IRModule, dict]] = OrderedDict()
_parsed_lock = threading.Lock()


def _parse_cached(text: str, metadata: dict[str, list], source_name: str) -> IRModule:
    """``IRModule.from_script(text, metadata=metadata)``, reused where the same text was
    parsed with the very same metadata objects (the cache holds them, so their ids stay
    theirs). A text that fails to parse is not kept: it fails again each time, and
    neither is one with constants left out of the text (bound weights beyond
    ``max_meta_bytes``): the cache would keep a model's weights alive."""
    if metadata.get("relax.expr.Constant"):
        return IRModule.from_script(text, source_name=source_name, metadata=metadata)
    key = (text, tuple((kind, tuple(id(o) for o in objs))
                       for kind, objs in sorted(metadata.items())))
    with _parsed_lock:
        hit = _parsed.get(key)
        if hit is not None:
            _parsed.move_to_end(key)
            return hit[0]
    mod = IRModule.from_script(text, source_name=source_name, metadata=metadata)
    with _parsed_lock:
        _parsed[key] = (mod, metadata)
        while len(_parsed) > PARSE_CACHE_SIZE:
            _parsed.popitem(last=False)
    return mod
