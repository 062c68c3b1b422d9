"""Fixtures for the graph-IR tests: symbolic dimensions."""

import pytest

from irc import tir


@pytest.fixture
def n():
    return tir.var("n", "int64")


@pytest.fixture
def m():
    return tir.var("m", "int64")

