"""Every test here runs its passes under the round-trip instrument (see
``tests/conftest.py``)."""

import pytest


@pytest.fixture(autouse=True)
def _roundtrip_after_every_pass(roundtrip_instrument):
    yield roundtrip_instrument
