"""Small public helpers kept for users coming from TVM (same names, same meaning), each
checked once: module and node queries, runtime registry and devices, buffer and tensor
helpers, schedule queries, trace replay from JSON, database lookups."""

import numpy as np
import pytest

import irc
from irc import te, tir
from irc.core.diagnostics import IRCError, UnsupportedOperatorError
from irc.ir import IRModule, WellFormedInstrument
from irc.passes import PassContext
from irc.tir import Schedule, Trace
from irc.tir.topi.utils import get_const_tuple
from irc.tune import JSONDatabase

TEXT = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            y = R.nn.relu(x)
            R.output(y)
        return y
"""


def _three_stage():
    a = te.placeholder((8, 8), name="A")
    b = te.compute((8, 8), lambda i, j: a[i, j] * 2.0, name="B")
    c = te.compute((8, 8), lambda i, j: b[i, j] + 1.0, name="C")
    d = te.compute((8, 8), lambda i, j: c[i, j] * c[i, j], name="D")
    return te.create_prim_func([a, d])


def test_module_and_node_queries():
    mod = irc.passes.LegalizeOps()(irc.parse(TEXT))
    kernel = next(n for n in mod.names() if n != "main")
    without = mod.without_function(kernel)
    assert kernel not in without and kernel in mod
    assert without["main"].same_as(mod["main"])  # the other functions are kept as they are
    assert not mod["main"].same_as(irc.parse(TEXT)["main"])  # identity, not equality
    with pytest.raises(IRCError, match="has no function named 'nope'"):
        mod.without_function("nope")


def test_unsupported_operator_error_is_an_irc_error():
    err = UnsupportedOperatorError("operator Foo is not supported")
    assert isinstance(err, irc.IRCError) and "Foo" in str(err)


def test_well_formed_instrument_names_the_pass_that_broke_the_module():
    @irc.passes.module_pass(name="DropKernels")
    def drop_kernels(mod, ctx):
        return IRModule(functions={"main": mod["main"]})  # calls now dangle

    legalized = irc.passes.LegalizeOps()(irc.parse(TEXT))
    with PassContext(instruments=[WellFormedInstrument()]):
        with pytest.raises(IRCError, match="after pass DropKernels"):
            drop_kernels(legalized)


def test_runtime_registry_and_device_names():
    assert "vm.builtin.shape_of" in irc.runtime.registry.list_global_funcs()
    dev = irc.cpu(0)
    assert dev.device_id == 0
    t = irc.tensor(np.arange(6, dtype="float32").reshape(2, 3), dev)
    np.testing.assert_array_equal(t.asnumpy(), t.numpy())


def test_buffer_vload_and_tensor_outputs():
    buf = tir.decl_buffer((4, 4), "float32", "A")
    i = tir.var("i")
    assert irc.ir.structural_equal(buf.vload((i, 0)), buf[i, 0])
    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda k: a[k] + 1.0, name="B")
    assert b.op.num_outputs == 1
    assert get_const_tuple(b.shape) == (4,)
    with pytest.raises(IRCError, match="must be a constant integer"):
        get_const_tuple((tir.var("n"), 4))


def test_schedule_producer_consumer_queries_and_forgetting_a_handle():
    sch = Schedule(_three_stage())
    c = sch.get_block("C")
    assert [sch.get(b).name for b in sch.get_producers(c)] == ["B"]
    assert [sch.get(b).name for b in sch.get_consumers(c)] == ["D"]
    sch.remove_rv(c)
    with pytest.raises(irc.ScheduleError):
        sch.get(c)


def test_trace_replays_from_json():
    sch = Schedule(_three_stage())
    sch.compute_inline(sch.get_block("B"))
    replay = Schedule(_three_stage())
    Trace.apply_json_to_schedule(sch.trace.to_json(), replay)
    assert irc.ir.structural_equal(replay.mod, sch.mod)


def test_database_knows_its_workloads(tmp_path):
    db = JSONDatabase(str(tmp_path / "records.json"))
    func = _three_stage()
    assert not db.has_workload(func)
    wl = db.commit_workload(func)
    assert db.has_workload(func) and db.has_workload(wl)
    db.close()
