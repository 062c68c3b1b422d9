"""The kernel cache of compiled CPU kernels (``irc.codegen.build``, ``irc.core.disk_cache``):
a graph compiled again, in a fresh in-memory state, skips lowering and LLVM and runs the
same; anything that could change the code misses; damaged entries are rebuilt; an
unwritable directory, ``IRC_CACHE=off`` and instrumented builds compile without it."""

import importlib
import logging
import os
from pathlib import Path

import numpy as np
import pytest

import irc
from irc.core import disk_cache
from irc.core.settings import Settings
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
            z = R.nn.softmax(y, axis=-1)
            R.output(z)
        return z
"""

# Two kernels, each with its own bounds-check message (codes from 1 in each).
GATHERS = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def gather(A: T.Buffer((8,), "float32"), idx: T.Buffer((4,), "int64"),
               B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[idx[i]]

    @T.prim_func(private=True)
    def pick(C: T.Buffer((4,), "float32"), at: T.Buffer((2,), "int64"),
             D: T.Buffer((2,), "float32")):
        for j in range(2):
            D[j] = C[at[j]]

    @R.function
    def main(a: R.Tensor((8,), "float32"), idx: R.Tensor((4,), "int64"),
             at: R.Tensor((2,), "int64")):
        cls = Module
        with R.dataflow():
            b = R.call_tir(cls.gather, (a, idx), out_sinfo=R.Tensor((4,), "float32"))
            d = R.call_tir(cls.pick, (b, at), out_sinfo=R.Tensor((2,), "float32"))
            R.output(d)
        return d
"""


@pytest.fixture
def cache(tmp_path, monkeypatch, irc_settings):
    """A fresh cache directory, empty in-memory caches, no instruments; lists the kernels
    lowered and compiled."""
    irc_settings(cache_dir=tmp_path, cache=True)
    build_mod.clear_cache()
    builds = []
    real = build_mod.codegen_llvm

    def counted(funcs, *args, **kwargs):
        builds.extend(funcs)
        return real(funcs, *args, **kwargs)

    monkeypatch.setattr(build_mod, "codegen_llvm", counted)
    monkeypatch.setattr(build_mod, "KERNEL_CACHE_MIN_FUNCS", 1)  # these graphs are small
    with PassContext():
        yield builds
    build_mod.clear_cache()


def _entries(tmp_path):
    return sorted((tmp_path / "llvm").glob("*.irk"))


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _run(target="llvm", text=TEXT):
    ex = irc.compile(irc.parse(text), target)
    vm = irc.vm.VirtualMachine(ex, irc.cpu())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype("float32")
    w = rng.standard_normal((16, 4)).astype("float32")
    want = _softmax(x @ w) if "softmax" in text else (x @ w).sum(axis=-1)
    np.testing.assert_allclose(vm["main"](x, w).numpy(), want, rtol=1e-5, atol=1e-5)
    return ex


def test_a_graph_compiled_again_comes_from_disk(cache, tmp_path):
    first = _run()
    assert len(cache) == 2 and len(_entries(tmp_path)) == 2  # a matmul and a softmax
    build_mod.clear_cache()  # as in a new process
    second = _run()
    assert len(cache) == 2  # nothing compiled again
    assert second.lib.signatures.keys() == first.lib.signatures.keys()
    assert second.lib.get_source("ll") == first.lib.get_source("ll")


def test_a_kernel_is_compiled_once_for_every_build_it_is_in(cache, tmp_path):
    _run()
    other = TEXT.replace("z = R.nn.softmax(y, axis=-1)", "z = R.sum(y, axis=-1)")
    _run(text=other)  # the same matmul, another kernel after it
    assert len(cache) == 3 and cache.count("matmul") == 1
    assert len(_entries(tmp_path)) == 3


def test_what_changes_the_code_misses(cache, tmp_path, monkeypatch):
    _run()
    build_mod.clear_cache()
    _run("llvm -num-cores=1")  # another target
    assert len(cache) == 4
    build_mod.clear_cache()
    monkeypatch.setattr(disk_cache, "_fingerprint", "an edited irc")
    _run()  # other sources of irc
    assert len(cache) == 6 and len(_entries(tmp_path)) == 6


def test_each_kernel_keeps_its_own_messages(cache):
    for _ in range(2):  # compiled, then from the cache
        build_mod.clear_cache()
        vm = irc.vm.VirtualMachine(irc.compile(irc.parse(GATHERS), "llvm", check_bounds=True))
        a = np.arange(8, dtype="float32")
        np.testing.assert_array_equal(
            vm["main"](a, np.array([0, 7, 2, 3]), np.array([1, 0])).numpy(), [7, 0])
        with pytest.raises(irc.IRCError, match=r"gather: .*A\[idx\[i\]\]"):
            vm["main"](a, np.array([0, 8, 2, 3]), np.array([1, 0]))
        with pytest.raises(irc.IRCError, match=r"pick: .*C\[at\[j\]\]"):
            vm["main"](a, np.array([0, 7, 2, 3]), np.array([1, 4]))
    assert sorted(cache) == ["gather", "pick"]


@pytest.mark.parametrize("damage", [b"garbage", b"", None])
def test_a_damaged_entry_is_rebuilt(cache, tmp_path, damage):
    _run()
    entry = _entries(tmp_path)[0]
    data = entry.read_bytes()
    entry.write_bytes(data[:-100] if damage is None else damage)  # None: truncated
    build_mod.clear_cache()
    _run()
    assert len(cache) == 3
    assert entry.read_bytes() == data  # written again


def test_small_graphs_compile_as_one_module_without_the_cache(cache, tmp_path,
                                                              monkeypatch):
    monkeypatch.setattr(build_mod, "KERNEL_CACHE_MIN_FUNCS", 3)
    ex = _run()
    assert not _entries(tmp_path) and len(ex.lib.objects) == 1


def test_off_and_instrumented_builds_leave_the_disk_alone(cache, tmp_path, monkeypatch):
    with irc.settings(cache=False):
        _run()
    assert not _entries(tmp_path)
    build_mod.clear_cache()
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        _run()
    assert not _entries(tmp_path)
    assert any(name == "LowerTIR" for name, _ in timing.timings)  # it saw the lowering


def test_an_unwritable_directory_warns_once_and_compiles(cache, tmp_path, irc_settings,
                                                          caplog):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    irc_settings(cache_dir=blocker)
    with caplog.at_level(logging.WARNING, logger="irc.cache"):
        _run()
        build_mod.clear_cache()
        _run("llvm -num-cores=1")
    warnings = [r for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warnings) == 1 and "IRC_CACHE_DIR" in warnings[0].getMessage()
    assert len(cache) == 4


def test_trim_deletes_the_entries_read_least_recently(tmp_path):
    for i, name in enumerate(["old", "mid", "new"]):
        disk_cache.write_entry(tmp_path / f"{name}.irk", bytes(1000), "test")
        os.utime(tmp_path / f"{name}.irk", (1000 + i, 1000 + i))
    (tmp_path / "other.txt").write_bytes(bytes(5000))  # not an entry: kept
    assert disk_cache.read_entry(tmp_path / "old.irk", "test") == bytes(1000)  # refreshed
    disk_cache.trim(tmp_path, 2100, ".irk")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.irk", "old.irk", "other.txt"]


def test_cache_root_follows_the_settings(tmp_path, monkeypatch, irc_settings):
    irc_settings(cache_dir=tmp_path / "a")
    assert disk_cache.cache_root() == tmp_path / "a"
    assert Settings.from_environment({"IRC_CACHE_DIR": "/x"}).cache_root() == Path("/x")
    assert not Settings.from_environment({"IRC_CACHE": "off"}).cache
    irc_settings(cache_dir=None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_cache.cache_root() == tmp_path / "xdg" / "irc"
    from irc.codegen import nvrtc
    from irc.vm import auto_dispatch
    assert nvrtc.cache_dir() == tmp_path / "xdg" / "irc" / "cuda"
    assert auto_dispatch.cache_path() == str(tmp_path / "xdg" / "irc" / "dispatch.json")
