"""A large module compiles in parts on several cores (irc.codegen.build: forked
lowering, LLVM modules of a few kernels each, taken by the processes as they free up)
and behaves as one compiled serially: results, kernel messages, files, sources."""

import importlib
import sys

import numpy as np
import pytest
from llvm_kernels import buf, func, loop, store

import irc
from irc import tir
from irc.core.module import IRModule
from irc.runtime.module import Module, load_module
from irc.tir import stmt as S

# irc.codegen.build is also the name of the build function the package exports
build_mod = importlib.import_module("irc.codegen.build")


def _kernels(n_funcs: int, every_one_checks: bool = False) -> IRModule:
    """``n_funcs`` kernels ``b = a * (k + 1)``; the last one (or, with
    ``every_one_checks``, each one) checks ``a[0] > 0``."""
    funcs = {}
    for k in range(n_funcs):
        a, b = buf("a", (16,)), buf("b", (16,))
        i = tir.var("i")
        body: S.Stmt = loop(i, 16, store(b, i, a[i] * float(k + 1)))
        if k == n_funcs - 1 or every_one_checks:  # a kernel message from the last part
            body = S.AssertStmt(condition=a[0] > 0.0, message=f"kernel {k} wants a[0] > 0",
                                body=body)
        funcs[f"k{k}"] = func([a, b], body, name=f"k{k}")
    return IRModule(functions=funcs)


@pytest.fixture
def in_parts(monkeypatch, irc_settings):
    irc_settings(compile_jobs=3)
    monkeypatch.setattr(build_mod, "PARALLEL_PART_BYTES", 1)
    build_mod.clear_cache()
    yield
    build_mod.clear_cache()


def _check(mod: Module, n_funcs: int) -> None:
    x = np.arange(1, 17, dtype="float32")
    for k in range(n_funcs):
        y = np.zeros(16, "float32")
        mod[f"k{k}"](x, y)
        np.testing.assert_allclose(y, x * (k + 1))
    with pytest.raises(irc.runtime.KernelAssertionError,
                       match=f"k{n_funcs - 1}: kernel {n_funcs - 1} wants a\\[0\\] > 0"):
        mod[f"k{n_funcs - 1}"](-x, np.zeros(16, "float32"))


@pytest.mark.usefixtures("in_parts")
def test_module_in_parts_runs_saves_and_loads(tmp_path):
    n = 7
    mod = irc.build(_kernels(n), target="llvm")
    if sys.platform.startswith("linux"):  # up to PARTS_PER_JOB parts per process
        assert len(mod.objects) == min(n, build_mod.PARTS_PER_JOB * 3)
    assert list(mod.signatures) == [f"k{k}" for k in range(n)]
    _check(mod, n)
    path = str(tmp_path / "parts.o")
    mod.save(path)
    _check(load_module(path), n)
    _check(Module.deserialize(mod.serialize()), n)
    asm = mod.get_source("asm")
    assert all(f"k{k}" in asm for k in range(n))


@pytest.mark.usefixtures("in_parts")
def test_parts_match_a_serial_build(irc_settings):
    n = 5
    parted = irc.build(_kernels(n), target="llvm")
    irc_settings(compile_jobs=1)
    build_mod.clear_cache()
    serial = irc.build(_kernels(n), target="llvm")
    assert len(serial.objects) == 1
    assert serial.signatures == parted.signatures
    assert serial.messages == parted.messages
    _check(serial, n)


@pytest.mark.usefixtures("in_parts")
def test_damaged_object_sizes_are_an_error():
    mod = irc.build(_kernels(4), target="llvm")
    meta = mod._metadata()
    if "objects" not in meta:
        pytest.skip("the module was compiled in one part (no fork on this platform)")
    meta["objects"] = [1, 2]
    from irc.runtime.module import _from_metadata
    with pytest.raises(irc.BuildError, match="do not add up"):
        _from_metadata(meta, mod.object_code)


def test_network_compiles_in_parts_like_serially(monkeypatch, irc_settings):
    """The bundled example network through irc.compile with forked scheduling, lowering
    and LLVM parts gives exactly the outputs of a serial compile."""
    import pathlib

    from irc.dlight import apply as dlight_apply

    root = pathlib.Path(__file__).resolve().parents[2]
    mod = irc.parse((root / "examples" / "convnet.ir").read_text())
    outs = []
    for jobs in ("1", "2"):
        irc_settings(compile_jobs=int(jobs))
        monkeypatch.setattr(build_mod, "PARALLEL_PART_BYTES", 1)
        monkeypatch.setattr(build_mod, "PARALLEL_LOWER_FUNCS", 1)
        monkeypatch.setattr(dlight_apply, "PARALLEL_SCHEDULE_FUNCS", 1)
        build_mod.clear_cache()
        ex = irc.compile(mod, "llvm")
        parts = 2 * build_mod.PARTS_PER_JOB  # (the network has more kernels)
        assert len(ex.lib.objects) == (parts if jobs == "2" and sys.platform.startswith("linux")
                                       else 1)
        vm = irc.vm.VirtualMachine(ex, irc.cpu())
        outs.append(vm["main"](*ex.random_inputs("main", seed=1)).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])


def test_pieces_number_their_messages_apart_and_the_tables_merge(tmp_path, irc_settings):
    """Lowered, generated and compiled in pieces on 3 processes: each piece numbers its
    kernel messages above its own base, and the module's table holds them all, through
    files and blobs too (a sparse table is written as an object keyed by code)."""
    irc_settings(compile_jobs=3)
    n = 7
    funcs = build_mod.collect_prim_funcs(_kernels(n, every_one_checks=True))
    mod = build_mod.build_llvm_in_pieces(funcs, "llvm", 3)
    assert list(mod.signatures) == [f"k{k}" for k in range(n)]
    assert len(mod.objects) == min(n, 3 * build_mod.PARTS_PER_JOB)
    # Every piece has a message of its own: with codes numbered alike they would collide.
    assert sorted(mod.messages.values()) == sorted(f"kernel {k} wants a[0] > 0"
                                                   for k in range(n))
    for loaded in (mod, Module.deserialize(mod.serialize()), _saved_and_loaded(mod, tmp_path)):
        assert loaded.messages == mod.messages
        _check(loaded, n)
        for k in range(n - 1):  # (_check tries the last one)
            with pytest.raises(irc.runtime.KernelAssertionError,
                               match=f"k{k}: kernel {k} wants a\\[0\\] > 0"):
                loaded[f"k{k}"](-np.arange(1, 17, dtype="float32"), np.zeros(16, "float32"))


def _saved_and_loaded(mod, tmp_path):
    path = str(tmp_path / "pieces.o")
    mod.save(path)
    return load_module(path)


@pytest.mark.parametrize("table, message", [
    (["first", "second"], None),                      # the list form: codes 1, 2
    ({"3": "third", "1048577": "far"}, None),         # the object form
    ("text", "is a str, not a list or an object"),
    ({"x": "bad code"}, "not a whole number"),
])
def test_message_tables_in_module_files(table, message):
    from irc.runtime.module import _from_metadata
    mod = irc.build(_kernels(2), target="llvm")
    meta = mod._metadata()
    meta["messages"] = table
    if message is not None:
        with pytest.raises(irc.BuildError, match=message):
            _from_metadata(meta, mod.object_code)
        return
    loaded = _from_metadata(meta, mod.object_code)
    want = ({1: "first", 2: "second"} if isinstance(table, list)
            else {int(k): v for k, v in table.items()})
    assert loaded.messages == want
    assert loaded._metadata()["messages"] == table
