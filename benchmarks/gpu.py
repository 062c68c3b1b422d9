"""The GPU backend (issue 10), measured on one NVIDIA GPU in one run:

- a 4096 x 4096 x 4096 matmul in float32 and float16 (float32 accumulation): irc's
  default build (``irc.compile(..., target="cuda")``: legalize, the dlight GPU rules)
  next to cuBLAS (through PyTorch's ``torch.matmul``, or CuPy's when PyTorch is
  missing), in milliseconds and TFLOPS with the ratio; and the same graph with its
  matmul dispatched to cuBLAS by irc (``cublas.matmul``, library dispatch);
  with ``--tune-seconds S``, also the matmul tuned on the GPU for at most S seconds
  (``ms.tune_relax``: NVRTC builds in workers, measurements on the GPU);
- ResNet-50 (224 x 224) and BERT-base (12 layers, hidden 768, sequence 128) at batch 1:
  irc's default build on the VM on ``irc.cuda(0)`` next to PyTorch eager running the same
  network with the same weights (torchvision's ResNet-50; BERT written in PyTorch), both
  float32 with TF32 off, each checked against the zoo's numpy reference.

Timings use CUDA events after warm-up (``time_evaluator``; PyTorch's with
``torch.cuda.Event``).

Run: ``python benchmarks/gpu.py [--tune-seconds 240]`` (``--skip-models`` for the
matmuls only). Without a GPU it compiles the matmul kernels, prints the build times, and
says that the timings need a GPU.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import irc
from irc import passes
from irc.testing.models import get_model


def matmul_module(n: int, dtype: str):
    from irc.frontend import nn

    class MatMul(nn.Module):
        def forward(self, a, b):
            return nn.op.matmul(a, b, out_dtype="float32" if dtype == "float16" else dtype)

    mod, _ = MatMul().export_ir({"forward": {"a": nn.spec.Tensor((n, n), dtype),
                                             "b": nn.spec.Tensor((n, n), dtype)}})
    return mod


def peer_matmul(a: np.ndarray, b: np.ndarray, repeat: int):
    """(ms per call, result) of cuBLAS through torch or cupy."""
    try:
        import torch
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        fn = lambda: torch.matmul(ta, tb)
        if a.dtype == np.float16:
            # float16 in, float32 out as irc computes it: one cuBLAS call with torch >= 2.8
            # (out_dtype), else a float16 product and a cast.
            try:
                torch.mm(ta, tb, out_dtype=torch.float32)
                fn = lambda: torch.mm(ta, tb, out_dtype=torch.float32)
            except (TypeError, RuntimeError):
                fn = lambda: torch.matmul(ta, tb).float()
        out = fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
            enable_timing=True)
        for _ in range(3):
            fn()
        start.record()
        for _ in range(repeat):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / repeat, out.cpu().numpy(), "torch (cuBLAS)"
    except ImportError:
        import cupy
        ca, cb = cupy.asarray(a), cupy.asarray(b)
        out = cupy.matmul(ca, cb)
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(repeat):
            cupy.matmul(ca, cb)
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) / repeat, \
            cupy.asnumpy(out).astype(np.float32), "cupy (cuBLAS)"


def tuned_matmul(mod, seconds: float, trials: int):
    """(executable, tuning seconds, measurements) of ``mod`` tuned on GPU 0."""
    import tempfile

    from irc.tune import ms

    target = irc.target.Target.from_device(irc.cuda(0))
    work = tempfile.mkdtemp(prefix="irc-gpu-bench-")
    t0 = time.perf_counter()
    db = ms.tune_relax(mod, None, target, work, trials, time_budget=seconds, verbose=0)
    spent = time.perf_counter() - t0
    return ms.compile_relax(db, mod, target), spent, len(db.get_all_records())


def bench_matmul(n: int, dtype: str, repeat: int, have_gpu: bool, tune_seconds: float = 0.0,
                 tune_trials: int = 1000) -> None:
    mod = matmul_module(n, dtype)
    t0 = time.perf_counter()
    ex = irc.compile(mod, target="cuda")
    build = time.perf_counter() - t0
    print(f"matmul {n}^3 {dtype}: irc default build {build:.1f} s "
          f"({ex.stats()['kernels']} kernels)")
    if not have_gpu:
        return
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(dtype)
    b = rng.uniform(-1, 1, (n, n)).astype(dtype)
    dev = irc.cuda(0)
    vm = irc.vm.VirtualMachine(ex, dev)
    ta, tb = irc.tensor(a, dev), irc.tensor(b, dev)
    got = vm["forward"](ta, tb).numpy()
    sec = vm.time_evaluator("forward", dev, number=repeat, repeat=3)(ta, tb).median
    peer_ms, want, peer = peer_matmul(a, b, repeat)
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    flops = 2.0 * n ** 3
    print(f"  irc default {sec * 1e3:8.3f} ms {flops / sec / 1e12:6.1f} TFLOPS | {peer} "
          f"{peer_ms:8.3f} ms {flops / (peer_ms / 1e3) / 1e12:6.1f} TFLOPS | irc/peer "
          f"{sec * 1e3 / peer_ms:5.2f}x | max rel err {err:.1e}")
    # Library dispatch: the same graph with its matmul offloaded to cuBLAS by pattern.
    lib_mod = passes.RunCodegen()(passes.FuseOpsByPattern(
        irc.dispatch.get_patterns_with_prefix("cublas"), annotate_codegen=True)(mod))
    lvm = irc.vm.VirtualMachine(irc.compile(lib_mod, target="cuda"), dev)
    lgot = lvm["forward"](ta, tb).numpy()
    lsec = lvm.time_evaluator("forward", dev, number=repeat, repeat=3)(ta, tb).median
    lerr = np.abs(lgot - want).max() / max(np.abs(want).max(), 1e-30)
    print(f"  irc cuBLAS  {lsec * 1e3:8.3f} ms {flops / lsec / 1e12:6.1f} TFLOPS | irc/peer "
          f"{lsec * 1e3 / peer_ms:5.2f}x | max rel err {lerr:.1e} (dispatch by pattern, "
          "a VM call)")
    # The library call alone (what the VM's packed call runs), into a preallocated output.
    (ext,) = lvm.exe.external
    (symbol,) = ext.function_names
    fn = ext.get_function(symbol)
    out = irc.runtime.empty(lgot.shape, str(lgot.dtype), dev)
    csec = irc.runtime.time_evaluator(lambda: fn(ta, tb, out), dev, number=repeat,
                                      repeat=3)().median
    print(f"  irc cuBLAS  {csec * 1e3:8.3f} ms {flops / csec / 1e12:6.1f} TFLOPS | irc/peer "
          f"{csec * 1e3 / peer_ms:5.2f}x (the library call alone)")
    if tune_seconds <= 0:
        print("  irc tuned: not measured (pass --tune-seconds)")
        return
    tex, spent, measured = tuned_matmul(mod, tune_seconds, tune_trials)
    tvm_ = irc.vm.VirtualMachine(tex, dev)
    tgot = tvm_["forward"](ta, tb).numpy()
    tsec = tvm_.time_evaluator("forward", dev, number=repeat, repeat=3)(ta, tb).median
    terr = np.abs(tgot - want).max() / max(np.abs(want).max(), 1e-30)
    print(f"  irc tuned   {tsec * 1e3:8.3f} ms {flops / tsec / 1e12:6.1f} TFLOPS | irc/peer "
          f"{tsec * 1e3 / peer_ms:5.2f}x | max rel err {terr:.1e} | tuning {spent:.0f} s, "
          f"{measured} measurements")


def torch_resnet50(m):
    """torchvision's ResNet-50 with the zoo model's weights (the same names)."""
    import torch
    import torchvision

    model = torchvision.models.resnet50(weights=None, num_classes=m.state_dict()["fc.bias"].size)
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in m.state_dict().items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any(not k.endswith("num_batches_tracked") for k in missing):
        raise SystemExit(f"the zoo's ResNet-50 does not map onto torchvision's: missing "
                         f"{missing[:3]}, unexpected {unexpected[:3]}")
    return model


def torch_bert(m, num_heads: int):
    """The zoo's BERT encoder written in PyTorch, with its weights."""
    import torch
    from torch import nn as tnn

    sd = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in m.state_dict().items()}
    f = tnn.functional

    class Bert(tnn.Module):
        def forward(self, ids):
            seq = ids.shape[1]
            x = sd["token_embeddings.weight"][ids] + sd["position_embeddings"][:seq]
            x = f.layer_norm(x, x.shape[-1:], sd["embedding_norm.weight"],
                             sd["embedding_norm.bias"], 1e-12)
            i = 0
            while f"layers.{i}.attention.query.weight" in sd:
                p = f"layers.{i}."
                b, s, h = x.shape
                q, k, v = (f.linear(x, sd[p + f"attention.{n}.weight"],
                                    sd[p + f"attention.{n}.bias"]).view(
                                        b, s, num_heads, h // num_heads).transpose(1, 2)
                           for n in ("query", "key", "value"))
                att = torch.softmax(q @ k.transpose(-1, -2) / (h // num_heads) ** 0.5, -1)
                ctx = (att @ v).transpose(1, 2).reshape(b, s, h)
                x = f.layer_norm(x + f.linear(ctx, sd[p + "attention.output.weight"],
                                              sd[p + "attention.output.bias"]), (h,),
                                 sd[p + "attention_norm.weight"], sd[p + "attention_norm.bias"],
                                 1e-12)
                y = f.gelu(f.linear(x, sd[p + "intermediate.weight"],
                                    sd[p + "intermediate.bias"]))
                x = f.layer_norm(x + f.linear(y, sd[p + "ffn_output.weight"],
                                              sd[p + "ffn_output.bias"]), (h,),
                                 sd[p + "ffn_norm.weight"], sd[p + "ffn_norm.bias"], 1e-12)
                i += 1
            return x

    def to_cuda():
        for k in sd:
            sd[k] = sd[k].cuda()
    to_cuda()
    return Bert()


def peer_model(model, x: np.ndarray, repeat: int):
    """(ms per call, output) of PyTorch eager on the GPU (float32, TF32 off)."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = model.cuda().eval()
    tx = torch.from_numpy(x).cuda()
    with torch.no_grad():
        for _ in range(3):
            out = model(tx)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
            enable_timing=True)
        times = []
        for _ in range(3):
            start.record()
            for _ in range(repeat):
                model(tx)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / repeat)
    return float(np.median(times)), out.float().cpu().numpy()


def bench_model(name: str, kw: dict, repeat: int) -> None:
    m = get_model(name, **kw)
    t0 = time.perf_counter()
    ex = irc.compile(m.mod, target="cuda", params=m.bound_params())
    build = time.perf_counter() - t0
    dev = irc.cuda(0)
    vm = irc.vm.VirtualMachine(ex, dev)
    x = m.random_input()
    tx = irc.tensor(x, dev)
    got = vm["forward"](tx).numpy()
    sec = vm.time_evaluator("forward", dev, number=repeat, repeat=3)(tx).median
    want = m.reference(x)
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    line = (f"{name} batch 1: irc default {sec * 1e3:8.3f} ms (build {build:.0f} s, max rel "
            f"err vs numpy {err:.1e})")
    try:
        model = torch_resnet50(m) if name.startswith("resnet") else \
            torch_bert(m, kw.get("num_heads", 4))
        peer_ms, peer_out = peer_model(model, x, repeat)
        perr = np.abs(peer_out - want).max() / max(np.abs(want).max(), 1e-30)
        line += (f" | PyTorch eager {peer_ms:8.3f} ms (max rel err {perr:.1e}) | irc/peer "
                 f"{sec * 1e3 / peer_ms:5.2f}x")
    except ImportError as e:
        line += f" | PyTorch eager: not measured ({e})"
    print(line)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--skip-models", action="store_true")
    p.add_argument("--tune-seconds", type=float, default=0.0,
                   help="tune each matmul for this long on the GPU (0: default builds only)")
    p.add_argument("--tune-trials", type=int, default=1000,
                   help="at most this many measurements per tuned matmul")
    args = p.parse_args()
    have_gpu = irc.cuda(0).exist
    if have_gpu:
        from irc.runtime.cuda_backend import device_attributes
        print(f"GPU: {device_attributes(0).name}")
    else:
        print("no CUDA GPU on this machine: building only (timings need a GPU)")
    for dtype in ("float32", "float16"):
        bench_matmul(args.n, dtype, args.repeat, have_gpu, args.tune_seconds,
                     args.tune_trials)
    if have_gpu and not args.skip_models:
        bench_model("resnet50", {"image_size": 224}, args.repeat)
        bench_model("bert", {"seq_len": 128, "hidden": 768, "num_layers": 12,
                             "num_heads": 12, "ffn": 3072}, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
