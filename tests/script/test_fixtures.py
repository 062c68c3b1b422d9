"""Every module printed in seeds 002 and 003 parses, prints and round-trips."""

from pathlib import Path

import pytest
from script_helpers import assert_roundtrip

import irc
from irc.ir import IRModule, assert_structural_equal
from irc.tir import PrimFunc

FIXTURES = Path(__file__).parent / "fixtures"
SEED_FIXTURES = sorted(p.name for p in FIXTURES.glob("seed*.ir"))


def load(name):
    return irc.parse((FIXTURES / name).read_text(), source_name=name)


def test_all_seed_modules_are_fixtures():
    assert SEED_FIXTURES == ["seed002_lowered_matmul.ir", "seed003_cublas_dispatch.ir",
                             "seed003_dlight_scheduled.ir", "seed003_exported.ir"]


@pytest.mark.parametrize("name", SEED_FIXTURES)
def test_fixture_roundtrips(name):
    mod = load(name)
    assert isinstance(mod, IRModule)
    assert_roundtrip(mod)


@pytest.mark.parametrize("name", ["seed003_exported.ir", "seed003_cublas_dispatch.ir",
                                  "seed003_dlight_scheduled.ir"])
def test_seed003_prints_as_the_seed(name):
    # The seed's DLight/export output is already canonical: irc prints it back verbatim
    # (with irc's own header lines).
    text = (FIXTURES / name).read_text()
    expected = text.replace("from tvm.script import", "from irc.script import")
    assert load(name).script() == expected


def test_from_script_is_parse():
    text = (FIXTURES / "seed003_exported.ir").read_text()
    assert_structural_equal(IRModule.from_script(text), irc.parse(text))


def test_seed002_structure():
    mod = load("seed002_lowered_matmul.ir")
    f = mod["main"]
    assert isinstance(f, PrimFunc)
    assert f.attrs == {"from_legacy_te_schedule": True, "global_symbol": "main",
                       "tir.noalias": True}
    loop = f.body
    assert loop.kind == "parallel" and loop.extent.value == 128
    alloc = loop.body
    assert type(alloc).__name__ == "Allocate" and alloc.extents[0].value == 512
    inner = alloc.body.body  # for j_outer_inner -> DeclBuffer matmul_1
    assert type(inner).__name__ == "DeclBuffer" and inner.buffer.data is alloc.buffer_var
    stores = inner.body.seq[:16]
    assert [s.indices[0].value for s in stores] == list(range(0, 256, 16))


def test_seed003_structure():
    mod = load("seed003_dlight_scheduled.ir")
    assert sorted(mod.names()) == ["forward", "matmul", "transpose"]
    assert mod.attrs["external_mods"][0].kind == "ffi.Module"
    matmul = mod["matmul"]
    assert "global_symbol" not in matmul.attrs
    root = matmul.body.block
    assert root.name == "root" and [b.name for b in root.alloc_buffers] == ["matmul_rf_local"]
    assert root.alloc_buffers[0].scope == "local"
    forward = mod["forward"]
    assert forward.attrs == {"num_input": 1, "global_symbol": "forward"}
    (block,) = forward.body.blocks
    assert type(block).__name__ == "DataflowBlock"
    assert [b.value.op.name for b in block.bindings] == ["call_dps_packed", "call_tir",
                                                          "call_tir"]
