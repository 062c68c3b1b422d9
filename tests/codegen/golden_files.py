"""Shared by the golden-dump tests: compare generated text with its recorded file, and
rewrite the recorded files of a corpus."""

import difflib
import os
from typing import Callable, Iterable

import pytest


def assert_matches_golden(path: str, got: str, what: str, script: str) -> None:
    """Fail with a unified diff when ``got`` differs from the file at ``path``; ``what``
    names the text, ``script`` the file that regenerates the dumps."""
    with open(path) as f:
        expected = f.read()
    if got != expected:
        name = os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
        diff = "".join(difflib.unified_diff(expected.splitlines(True), got.splitlines(True),
                                            name, "generated"))
        pytest.fail(f"{what} changed (regenerate with python {script}):\n{diff}")


def write_golden(directory: str, names: Iterable[str], generate: Callable[[str], str],
                 suffix: str) -> None:
    """Record ``generate(name)`` as ``directory/name + suffix`` for every name."""
    os.makedirs(directory, exist_ok=True)
    for name in sorted(names):
        with open(os.path.join(directory, name + suffix), "w") as f:
            f.write(generate(name))
        print(f"wrote {os.path.basename(directory)}/{name}{suffix}")
