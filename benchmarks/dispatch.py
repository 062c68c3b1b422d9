"""Library dispatch (issue 11), CPU part: matrix products through the ``blas`` backend
(OpenBLAS from ``scipy-openblas32``, dispatched by pattern, called from the VM) next to
the same OpenBLAS called directly (``irc.runtime.blas.gemm`` on numpy arrays: the
library's own speed), numpy's ``@`` (its own OpenBLAS) and irc's default build without
dispatch, all measured in this run with both cores:

- ``matmul`` 1024^3 float32 (``x @ w``);
- a dense layer ``relu(x @ w.T + b)`` at 1 x 784 -> 256 (seed 003's) and 128 x 1024 ->
  1024 (the epilogue compiled by irc around the BLAS call).

and, with the ``dnnl`` extra, seed 000's convolution ``relu(conv2d(x, w) + b)`` (1 x 512 x
7 x 7, 3x3 kernel, 512 -> 512, NCHW, weights bound as constants) through the ``dnnl``
backend next to the same oneDNN primitive called directly
(``irc.runtime.dnnl.ConvPlan.build``, on NHWC data as irc dispatches it), PyTorch's CPU
convolution (oneDNN inside; when torch is installed), irc's default build and irc's build
tuned for ``--trials`` measurements (``ms.tune_relax``: the fused convolution as one
task), all with 2 threads.

The overhead irc adds to a library is the ratio of the library path to the direct call.

Last, ResNet-18 (the model zoo's, NCHW, batch 1, 224x224, seeded weights and batch-norm
statistics) compiled with ``dispatch="auto"`` (each convolution, with its folded batch
norm, residual add and ReLU, goes to oneDNN where that was measured faster than irc's own
build) and with ``dispatch="dnnl"``, next to ONNX Runtime running the same network and
weights exported to ONNX (``irc.testing.models.onnx_export``; 2 intra-op threads) and
irc's default build, every output checked against the float64 reference. GPU figures
(cuBLAS) are in ``benchmarks/gpu.py``.

Run: ``python benchmarks/dispatch.py [--repeat 20] [--trials 64]`` on a quiet machine
(``--only resnet`` for the last row alone).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

import numpy as np

import irc
from irc import passes
from irc.core.target import host_cpu_model
from irc.dispatch import get_patterns_with_prefix
from irc.runtime import blas, dnnl
from irc.tune import ms


def _module(m: int, k: int, n: int, dense: bool) -> irc.IRModule:
    if dense:
        body = """            wt = R.permute_dims(w, axes=None)
            y = R.matmul(x, wt, out_dtype="void")
            y1 = R.add(y, b)
            gv = R.nn.relu(y1)"""
        params = (f'x: R.Tensor(({m}, {k}), dtype="float32"), w: R.Tensor(({n}, {k}), '
                  f'dtype="float32"), b: R.Tensor(({n},), dtype="float32")')
    else:
        body = '            gv = R.matmul(x, w, out_dtype="void")'
        params = (f'x: R.Tensor(({m}, {k}), dtype="float32"), w: R.Tensor(({k}, {n}), '
                  f'dtype="float32")')
    return irc.parse(f"""
@I.ir_module
class Module:
    @R.function
    def main({params}) -> R.Tensor(({m}, {n}), dtype="float32"):
        with R.dataflow():
{body}
            R.output(gv)
        return gv
""")


def _vm_time(mod: irc.IRModule, args: list[np.ndarray], repeat: int, **compile_kw: Any
             ) -> tuple[float, Any]:
    return _exe_time(irc.compile(mod, target="llvm", **compile_kw), args, repeat)


def _exe_time(ex: Any, args: list[np.ndarray], repeat: int) -> tuple[float, Any]:
    vm = irc.vm.VirtualMachine(ex, irc.cpu())
    targs = [irc.tensor(a) for a in args]
    out = vm["main"](*targs).numpy()
    sec = vm.time_evaluator("main", irc.cpu(), number=repeat, repeat=5,
                            min_repeat_ms=100)(*targs).median
    return sec, out


def _host_time(fn, repeat: int) -> float:
    fn()
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        best.append((time.perf_counter() - t0) / repeat)
    return float(np.median(best))


def bench(name: str, m: int, k: int, n: int, dense: bool, repeat: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k) if dense else (k, n)).astype("float32")
    args = [x, w] + ([rng.standard_normal(n).astype("float32")] if dense else [])
    mod = _module(m, k, n, dense)
    lib_mod = passes.RunCodegen()(passes.FuseOpsByPattern(
        get_patterns_with_prefix("blas"), annotate_codegen=True)(mod))
    t_lib, got = _vm_time(lib_mod, args, repeat)
    t_irc, want = _vm_time(mod, args, repeat)
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    c = np.empty((m, n), np.float32)
    t_direct = _host_time(lambda: blas.gemm(x, w, c, trans_b=dense), repeat)
    t_numpy = _host_time((lambda: x @ w.T) if dense else (lambda: x @ w), repeat)
    flops = 2.0 * m * n * k
    print(f"{name:34s} irc+blas {t_lib * 1e6:9.1f} us {flops / t_lib / 1e9:6.1f} GFLOPS | "
          f"OpenBLAS direct {t_direct * 1e6:9.1f} us | irc+blas/direct "
          f"{t_lib / t_direct:5.2f}x | numpy {t_numpy * 1e6:9.1f} us | irc default "
          f"{t_irc * 1e6:9.1f} us ({t_irc / t_lib:5.2f}x the blas path) | err {err:.1e}")


CONV = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 512, 7, 7), dtype="float32"),
             w: R.Tensor((512, 512, 3, 3), dtype="float32"),
             b: R.Tensor((1, 512, 1, 1), dtype="float32")) -> R.Tensor((1, 512, 7, 7),
                                                                      dtype="float32"):
        with R.dataflow():
            y = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1])
            y1 = R.add(y, b)
            gv = R.nn.relu(y1)
            R.output(gv)
        return gv
"""


def _tuned(mod: irc.IRModule, trials: int) -> Any:
    """``mod`` tuned as a whole graph (fused tasks) within ``trials`` measurements."""
    target = irc.target.Target("llvm")
    with tempfile.TemporaryDirectory() as work_dir:
        db = ms.tune_relax(mod, None, target, work_dir, max_trials_global=trials, verbose=0)
        return ms.compile_relax(db, mod, target)


def bench_conv(repeat: int, trials: int) -> None:
    """Seed 000's conv2d + bias + relu through dnnl, oneDNN directly, PyTorch, irc."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 512, 7, 7)).astype("float32")
    w = (rng.standard_normal((512, 512, 3, 3)) * 0.05).astype("float32")
    b = rng.standard_normal((1, 512, 1, 1)).astype("float32")
    mod = irc.passes.BindParams("main", {"w": w, "b": b})(irc.parse(CONV))
    flops = 2.0 * 512 * 7 * 7 * 512 * 9
    t_lib, got = _vm_time(mod, [x], repeat, dispatch="dnnl")
    # irc dispatches the convolution in NHWC (oneDNN's direct kernels read it without
    # reorders), so the direct call is that primitive on NHWC data.
    plan = dnnl.ConvPlan((1, 7, 7, 512), "NHWC", (512, 512, 3, 3), "OIHW", (1, 7, 7, 512),
                         "NHWC", padding=(1, 1, 1, 1), bias=True, activation="relu")
    prim = plan.build(w)
    x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    out = np.empty((1, 7, 7, 512), np.float32)
    bias = np.ascontiguousarray(b.reshape(-1))
    t_direct = _host_time(lambda: prim(x_nhwc.ctypes.data, 0, bias.ctypes.data, 0,
                                       out.ctypes.data), repeat)
    t_irc, want = _vm_time(mod, [x], repeat)
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    line = (f"{'conv2d+bias+relu 7x7 512->512 (seed 000)':34s} irc+dnnl {t_lib * 1e6:9.1f} us "
            f"{flops / t_lib / 1e9:6.1f} GFLOPS [{prim.implementation}] | oneDNN direct "
            f"{t_direct * 1e6:9.1f} us | irc+dnnl/direct {t_lib / t_direct:5.2f}x")
    try:
        import torch
    except ImportError:
        line += " | PyTorch: not installed"
    else:
        torch.set_num_threads(2)
        tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b.reshape(-1))

        def torch_conv() -> Any:
            with torch.no_grad():
                return torch.relu(torch.nn.functional.conv2d(tx, tw, tb, padding=1))
        t_torch = _host_time(torch_conv, repeat)
        line += f" | PyTorch {t_torch * 1e6:9.1f} us (irc+dnnl/PyTorch {t_lib / t_torch:5.2f}x)"
    line += f" | irc default {t_irc * 1e6:9.1f} us ({t_irc / t_lib:5.2f}x the dnnl path)"
    if trials > 0:
        t0 = time.perf_counter()
        tuned = _tuned(mod, trials)
        tune_s = time.perf_counter() - t0
        t_tuned, got_tuned = _exe_time(tuned, [x], repeat)
        err = max(err, np.abs(got_tuned - want).max() / max(np.abs(want).max(), 1e-30))
        line += (f" | irc tuned ({trials} trials, {tune_s:.0f} s) {t_tuned * 1e6:9.1f} us "
                 f"({t_tuned / t_lib:5.2f}x the dnnl path)")
    print(line + f" | err {err:.1e}")


def bench_resnet(repeat: int) -> None:
    """ResNet-18 with dispatch="auto" and "dnnl" vs ONNX Runtime and irc's default."""
    import onnxruntime as ort

    from irc.testing.models import get_model
    from irc.testing.models.onnx_export import resnet_onnx

    model = get_model("resnet18", image_size=224)
    x = model.random_input()
    want = model.reference(x)
    scale = np.abs(want).max()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = 2, 1
    proto = resnet_onnx(model.state_dict(), 18, model.input_shape)
    sess = ort.InferenceSession(proto.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    err_ort = np.abs(sess.run(None, {"x": x})[0] - want).max() / scale
    t_ort = _host_time(lambda: sess.run(None, {"x": x}), repeat)
    rows = []
    for label, dispatch in (("auto", "auto"), ("dnnl", "dnnl"), ("default", None)):
        t0 = time.perf_counter()
        ex = irc.compile(model.mod, "llvm", params=model.bound_params(), dispatch=dispatch)
        compile_s = time.perf_counter() - t0
        vm = irc.vm.VirtualMachine(ex, irc.cpu())
        tx = irc.tensor(x)
        err = np.abs(vm["forward"](tx).numpy() - want).max() / scale
        sec = vm.time_evaluator("forward", irc.cpu(), number=max(1, repeat // 4), repeat=5,
                                min_repeat_ms=200)(tx).median
        rows.append(f"irc {label} {sec * 1e3:7.2f} ms ({sec / t_ort:4.2f}x ORT, compile "
                    f"{compile_s:4.1f} s, err {err:.0e})")
    t_ort2 = _host_time(lambda: sess.run(None, {"x": x}), repeat)
    print(f"{'ResNet-18 1x3x224x224':34s} " + " | ".join(rows) +
          f" | ONNX Runtime {ort.__version__} {t_ort * 1e3:7.2f} ms (again at the end: "
          f"{t_ort2 * 1e3:7.2f} ms, err {err_ort:.0e})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--trials", type=int, default=64,
                   help="tuning measurements for the convolution's tuned row (0: skip)")
    p.add_argument("--only", choices=["blas", "conv", "resnet"],
                   help="run one group of rows")
    args = p.parse_args()
    print(f"CPU: {host_cpu_model()} ({irc.target.Target('llvm')}); OpenBLAS threads: "
          f"{blas.get_num_threads()}; oneDNN: "
          f"{dnnl.load_dnnl().version if dnnl.available() else 'not installed'}")
    if args.only in (None, "blas"):
        bench("matmul 1024^3", 1024, 1024, 1024, False, args.repeat)
        bench("dense+relu 1x784->256 (seed 003)", 1, 784, 256, True, args.repeat)
        bench("dense+relu 128x1024->1024", 128, 1024, 1024, True, args.repeat)
    if args.only not in (None, "conv", "resnet"):
        return 0
    if not dnnl.available():
        print(f"conv2d and ResNet-18 rows skipped: {dnnl.INSTALL} to measure oneDNN")
        return 0
    if args.only in (None, "conv"):
        bench_conv(args.repeat, args.trials)
    if args.only in (None, "resnet"):
        bench_resnet(args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
