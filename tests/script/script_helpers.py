"""Helpers shared by the text-format tests."""

import irc
from irc.core.node import script
from irc.ir import assert_structural_equal


def assert_roundtrip(node, show_meta=False, metadata=None):
    """Print ``node``, parse the text back and check: structurally equal to ``node``
    (a mismatch shows the diff of the printed IR) and printing is a fixed point."""
    text = script(node, show_meta=show_meta)
    parsed = irc.parse(text, source_name="<roundtrip>", metadata=metadata)
    assert_structural_equal(node, parsed)
    again = script(parsed, show_meta=show_meta)
    assert again == text, "printing is not a fixed point:\n" + text + "\n---\n" + again
    return parsed


def parse_error(text, exc_type=irc.IRParseError):
    """Parse ``text`` expecting ``exc_type``; returns the exception."""
    try:
        irc.parse(text, source_name="bad.ir")
    except exc_type as e:
        return e
    raise AssertionError(f"expected {exc_type.__name__} for:\n{text}")
