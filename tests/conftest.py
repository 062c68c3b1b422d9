"""Shared pytest configuration."""

import shutil

import pytest


def pytest_collection_modifyitems(config, items):
    has_nvcc = shutil.which("nvcc") is not None
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU; none on this machine"))
        if "nvcc" in item.keywords and not has_nvcc:
            item.add_marker(pytest.mark.skip(reason="needs the CUDA toolkit's nvcc"))
