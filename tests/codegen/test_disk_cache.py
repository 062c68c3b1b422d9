"""The disk cache of compiled CPU modules (``irc.codegen.build``, ``irc.core.disk_cache``):
a graph compiled again, in a fresh in-memory state, skips lowering and LLVM and runs the
same; anything that could change the code misses; damaged entries are rebuilt; an
unwritable directory, ``IRC_CACHE=off`` and instrumented builds compile without it."""

import importlib
import logging
import os

import numpy as np
import pytest

import irc
from irc.core import disk_cache
from irc.passes import PassContext, PassTimingInstrument

# (irc.codegen.build is also the name of the function the package exports)
build_mod = importlib.import_module("irc.codegen.build")

TEXT = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.nn.relu(y)
            R.output(z)
        return z
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory, an empty in-memory build cache, no instruments; counts
    the builds that reach lowering and LLVM."""
    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("IRC_CACHE", raising=False)
    build_mod.clear_cache()
    builds = []
    real = build_mod._build_llvm_target

    def counted(funcs, t):
        builds.append(sorted(funcs))
        return real(funcs, t)

    monkeypatch.setattr(build_mod, "_build_llvm_target", counted)
    with PassContext():
        yield builds
    build_mod.clear_cache()


def _entries(tmp_path):
    return sorted((tmp_path / "llvm").glob("*.irm"))


def _run(target="llvm"):
    ex = irc.compile(irc.parse(TEXT), target)
    vm = irc.vm.VirtualMachine(ex, irc.cpu())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype("float32")
    w = rng.standard_normal((16, 4)).astype("float32")
    np.testing.assert_allclose(vm["main"](x, w).numpy(), np.maximum(x @ w, 0), rtol=1e-5,
                               atol=1e-5)
    return ex


def test_a_graph_compiled_again_comes_from_disk(cache, tmp_path):
    first = _run()
    assert len(cache) == 1 and len(_entries(tmp_path)) == 1
    build_mod.clear_cache()  # as in a new process
    second = _run()
    assert len(cache) == 1  # no second build
    assert second.lib.signatures.keys() == first.lib.signatures.keys()
    assert second.lib.get_source("ll") == first.lib.get_source("ll")


def test_what_changes_the_code_misses(cache, tmp_path, monkeypatch):
    _run()
    build_mod.clear_cache()
    _run("llvm -num-cores=1")  # another target
    assert len(cache) == 2
    build_mod.clear_cache()
    monkeypatch.setattr(disk_cache, "_fingerprint", "an edited irc")
    _run()  # other sources of irc
    assert len(cache) == 3 and len(_entries(tmp_path)) == 3


@pytest.mark.parametrize("damage", [b"garbage", b"", None])
def test_a_damaged_entry_is_rebuilt(cache, tmp_path, damage):
    _run()
    (entry,) = _entries(tmp_path)
    data = entry.read_bytes()
    entry.write_bytes(data[:-100] if damage is None else damage)  # None: truncated
    build_mod.clear_cache()
    _run()
    assert len(cache) == 2
    assert entry.read_bytes() == data  # written again


def test_off_and_instrumented_builds_leave_the_disk_alone(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("IRC_CACHE", "off")
    _run()
    assert not _entries(tmp_path)
    monkeypatch.delenv("IRC_CACHE")
    build_mod.clear_cache()
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        _run()
    assert not _entries(tmp_path)
    assert any(name == "LowerTIR" for name, _ in timing.timings)  # it saw the lowering


def test_an_unwritable_directory_warns_once_and_compiles(cache, tmp_path, monkeypatch,
                                                          caplog):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("IRC_CACHE_DIR", str(blocker))
    with caplog.at_level(logging.WARNING, logger="irc.cache"):
        _run()
        build_mod.clear_cache()
        _run("llvm -num-cores=1")
    warnings = [r for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warnings) == 1 and "IRC_CACHE_DIR" in warnings[0].getMessage()
    assert len(cache) == 2


def test_trim_deletes_the_entries_read_least_recently(tmp_path):
    for i, name in enumerate(["old", "mid", "new"]):
        disk_cache.write_entry(tmp_path / f"{name}.irm", bytes(1000), "test")
        os.utime(tmp_path / f"{name}.irm", (1000 + i, 1000 + i))
    (tmp_path / "other.txt").write_bytes(bytes(5000))  # not an entry: kept
    assert disk_cache.read_entry(tmp_path / "old.irm", "test") == bytes(1000)  # refreshed
    disk_cache.trim(tmp_path, 2100, ".irm")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.irm", "old.irm", "other.txt"]


def test_cache_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path / "a"))
    assert disk_cache.cache_root() == tmp_path / "a"
    monkeypatch.delenv("IRC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_cache.cache_root() == tmp_path / "xdg" / "irc"
    from irc.codegen import nvrtc
    from irc.vm import auto_dispatch
    assert nvrtc.cache_dir() == tmp_path / "xdg" / "irc" / "cuda"
    assert auto_dispatch.cache_path() == str(tmp_path / "xdg" / "irc" / "dispatch.json")
