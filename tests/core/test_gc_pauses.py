"""fewer_gc_pauses: the young-generation threshold is raised inside irc's long calls and
restored after them, whatever happens inside."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from irc.core.gc_pauses import GC_THRESHOLD, fewer_gc_pauses, with_fewer_gc_pauses

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "convnet.ir"


@pytest.fixture(autouse=True)
def default_threshold():
    """Every test starts from CPython's default thresholds and leaves them as found."""
    old = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*old)


def test_raised_inside_and_restored_after():
    with fewer_gc_pauses():
        assert gc.get_threshold() == (GC_THRESHOLD, 10, 10)
        with fewer_gc_pauses():  # nested: the outer setting stays
            assert gc.get_threshold() == (GC_THRESHOLD, 10, 10)
        assert gc.get_threshold() == (GC_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_restored_when_the_call_raises():
    @with_fewer_gc_pauses
    def fails():
        assert gc.get_threshold()[0] == GC_THRESHOLD
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        fails()
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("user", [0, 2 * GC_THRESHOLD])
def test_a_programs_own_setting_is_kept(user):
    # 0 disables automatic collection; a higher threshold was chosen on purpose.
    gc.set_threshold(user, 10, 10)
    with fewer_gc_pauses():
        assert gc.get_threshold() == (user, 10, 10)
    assert gc.get_threshold() == (user, 10, 10)


def test_compile_raises_it_and_leaves_it_as_it_was(monkeypatch):
    import irc
    import irc.vm.build as vb

    inside = []
    link = vb.link

    def spy(*args, **kwargs):
        inside.append(gc.get_threshold()[0])
        return link(*args, **kwargs)

    monkeypatch.setattr(vb, "link", spy)
    irc.compile(irc.parse(EXAMPLE.read_text()), "llvm")
    assert inside == [GC_THRESHOLD]
    assert gc.get_threshold() == (700, 10, 10)
