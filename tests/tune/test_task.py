"""Task extraction from graph modules, the compute-DAG printing and FLOP counts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tune_workloads import matmul, matmul_add

import irc
from irc import te
from irc.core.diagnostics import TuningError
from irc.tune import BlockDAG, TuneTask, extract_tasks, flop_count, workload_key

MLP = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 16), "float32"), w1: R.Tensor((16, 16), "float32"),
             w2: R.Tensor((16, 16), "float32"), w3: R.Tensor((16, 8), "float32")
             ) -> R.Tensor((8, 1), "float32"):
        with R.dataflow():
            a = R.matmul(x, w1)
            b = R.nn.relu(a)
            c = R.matmul(b, w2)
            d = R.nn.relu(c)
            e = R.matmul(d, w3)
            f = R.reshape(e, R.shape([8, 1]))
            R.output(f)
        return f
'''


def test_extract_tasks_counts_call_sites_without_fusion():
    tasks = extract_tasks(irc.parse(MLP), "llvm", fuse=False)
    assert [(t.name, t.weight) for t in tasks] == [("matmul", 2), ("relu", 2), ("matmul1", 1)]
    assert [t.flop_count for t in tasks] == [512.0, 16.0, 256.0]
    simple = extract_tasks(irc.parse(MLP), "llvm", fuse=False, include_simple_tasks=True)
    assert [(t.name, t.weight) for t in simple][-1] == ("reshape", 1)
    assert len({t.workload.key for t in simple}) == len(simple)


def test_extract_tasks_after_fusion():
    tasks = extract_tasks(irc.parse(MLP), "llvm")
    assert [t.weight for t in tasks] == [2, 1]
    assert tasks[0].flop_count == 512 + 16
    assert "relu" in tasks[0].name


CONV_BN = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 6, 6), "float32"), w: R.Tensor((4, 4, 3, 3), "float32"),
             g: R.Tensor((4,), "float32"), b: R.Tensor((4,), "float32"),
             m: R.Tensor((4,), "float32"), v: R.Tensor((4,), "float32")):
        with R.dataflow():
            c = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            bn = R.nn.batch_norm(c, g, b, m, v, axis=1)
            y = bn[0]
            a = R.add(y, x)
            r = R.nn.relu(a)
            R.output(r)
        return r
'''


def test_extract_tasks_of_a_network_with_batch_norm():
    """batch_norm legalizes to a tuple holding a call; fusion after legalization used to
    fail on it ("a Call expression is not a buffer value")."""
    tasks = extract_tasks(irc.parse(CONV_BN), "llvm")
    assert [t.name for t in tasks] == ["fused_conv2d_batch_norm", "fused_add_relu"]
    legal = irc.passes.LegalizeOps()(irc.parse(CONV_BN))
    irc.ir.well_formed(legal)
    tuples = [b for b in legal["main"].body.blocks[0].bindings
              if isinstance(b.value, irc.ir.Tuple)]
    assert tuples and all(isinstance(f, (irc.ir.Var, irc.ir.Constant))
                          for f in tuples[0].value.fields)


def test_extract_tasks_binds_params_and_accepts_a_function():
    mod = irc.parse(MLP)
    rng = np.random.default_rng(0)
    params = {"w3": rng.uniform(size=(16, 8)).astype("float32")}
    tasks = extract_tasks(mod["main"], "llvm", params=params, fuse=False)
    assert sum(t.weight for t in tasks) == 5
    with pytest.raises(TuningError, match="IRModule"):
        extract_tasks("not a module", "llvm")


def test_task_description_and_dag():
    func = matmul_add(1024)
    task = TuneTask(func, "llvm", name="matmul_add")
    assert task.desc == "matmul_add" and task.weight == 1
    assert str(task.compute_dag) == (
        "A = PLACEHOLDER [1024, 1024]\n"
        "B = PLACEHOLDER [1024, 1024]\n"
        "matmul(i, j) += (A[i, k]*B[k, j])\n"
        "C = PLACEHOLDER [1024, 1024]\n"
        "out(i, j) = (matmul[i, j] + C[i, j])\n")
    key = json.loads(task.workload_key)
    assert key[0] == task.workload.key == workload_key(func)
    assert key[1:] == [[1024, 1024]] * 4
    assert task.flop_count == 2 * 1024 ** 3 + 1024 ** 2
    assert "matmul_add" in repr(task)


def test_flop_count_matches_the_te_dag():
    n = 32
    data = te.placeholder((1, 8, n, n), name="data")
    kernel = te.placeholder((16, 8, 3, 3), name="kernel")
    bias = te.placeholder((1, 16, 1, 1), name="bias")
    conv = irc.topi.nn.conv2d_nchw(data, kernel, 1, 1, dilation=1, out_dtype="float32")
    out = irc.topi.nn.relu(conv + bias)
    dag = te.ComputeDAG([data, kernel, bias, out])
    func = te.create_prim_func([data, kernel, bias, out])
    assert flop_count(func) == dag.flop_count() > 0
    assert BlockDAG(func).flop_ct == dag.flop_ct
    # The DAG lines of the PrimFunc are the te DAG's lines.
    assert str(BlockDAG(func)).splitlines()[-1] == str(dag).splitlines()[-1]


def test_workload_key_ignores_the_symbol_name():
    f = matmul(8)
    g = f.with_attr("global_symbol", "renamed")
    assert workload_key(f) == workload_key(g)
    assert workload_key(f) != workload_key(matmul(16))


def test_default_variant_traces_are_the_default_rules_neighbours():
    from tune_workloads import add_one

    from irc.core.target import Target
    from irc.tune.measure import apply_trace
    from irc.tune.record import trace_key
    from irc.tune.task import default_schedule_trace, default_variant_traces

    t = Target.canon("llvm -num-cores 2 -vector-width 256 -vector-registers 16")
    func = matmul(48, 40, 72)
    default, _ = default_schedule_trace(func, t)
    traces = default_variant_traces(func, t, limit=4)
    assert 0 < len(traces) <= 4
    keys = {trace_key(x) for x in traces}
    assert len(keys) == len(traces) and trace_key(default) not in keys
    x, w = np.random.rand(48, 72).astype("float32"), np.random.rand(72, 40).astype("float32")
    for trace in traces:
        rt = irc.build(apply_trace(func, trace).with_attr("global_symbol", "main"), target=t)
        out = irc.tensor(np.zeros((48, 40), "float32"))
        rt(irc.tensor(x), irc.tensor(w), out)
        np.testing.assert_allclose(out.numpy(), x @ w, rtol=1e-4, atol=1e-4)
    # An elementwise function's rule has nothing to vary; no rule, no variants.
    assert default_variant_traces(add_one(64), t) == []
    assert default_variant_traces(func, t, rules=[]) == []
    assert default_variant_traces(func, t, limit=0) == []
