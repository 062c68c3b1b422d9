"""Shared pytest configuration.

``roundtrip_instrument``: every pass any test runs (graph passes, the loop-IR lowering
steps, default scheduling, tuning passes) is followed by print -> parse -> structurally
equal, through :class:`irc.passes.RoundTripInstrument` (autouse). A test that enters its
own ``PassContext`` replaces it for that block, as contexts do not nest their
instruments; such a test can ask for the ``roundtrip_instrument`` fixture and pass it on.

``irc_settings``: ``irc_settings(cache_dir=..., compile_jobs=...)`` overrides irc's
process settings (:mod:`irc.core.settings`) until the test ends; a later call overrides
the earlier ones.
"""

import contextlib
import shutil

import pytest

import irc
from irc.passes import PassContext, RoundTripInstrument


def pytest_collection_modifyitems(config, items):
    has_nvcc = shutil.which("nvcc") is not None
    has_gpu = None  # asked only when a test needs one (it loads the CUDA driver)
    for item in items:
        if "cuda" in item.keywords:
            if has_gpu is None:
                has_gpu = irc.cuda(0).exist
            if not has_gpu:
                item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU; none on this "
                                                        "machine"))
        if "nvcc" in item.keywords and not has_nvcc:
            item.add_marker(pytest.mark.skip(reason="needs the CUDA toolkit's nvcc"))


@pytest.fixture
def irc_settings():
    """Override irc's settings for the rest of the test (see the module docstring)."""
    with contextlib.ExitStack() as stack:
        yield lambda **changes: stack.enter_context(irc.settings(**changes))


@pytest.fixture(autouse=True)
def roundtrip_instrument():
    """Run every test under ``PassContext(instruments=[RoundTripInstrument()])``; yields
    the instrument (``.checked`` counts the modules it round-tripped)."""
    inst = RoundTripInstrument()
    with PassContext(instruments=[inst]):
        yield inst
