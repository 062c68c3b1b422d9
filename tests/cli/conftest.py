"""Helpers of the ``irc`` command's tests: run it as a user does, in a subprocess."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "convnet.ir"


def irc_env() -> dict:
    """The environment of an ``irc`` subprocess: this checkout first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    env["PYTHONIOENCODING"] = "utf-8"
    env.pop("COLUMNS", None)
    return env


def run_irc(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """``python -m irc ARGS`` with its output captured as text."""
    return subprocess.run([sys.executable, "-m", "irc", *map(str, args)], env=irc_env(),
                          capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture
def example() -> pathlib.Path:
    """The bundled example model (a small image classifier in irc's text format)."""
    return EXAMPLE
