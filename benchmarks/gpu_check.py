"""The GPU check in one call: irc's ``cuda`` tests and every GPU benchmark, against
PyTorch on the same GPU in the same run, within a time budget.

In order, each step only while the budget (``--budget`` seconds, default 480) lasts:

1. ResNet-50 and MobileNet-V2 at 224 x 224 and BERT-base (12 layers, hidden 768,
   sequence 128) at batch 1, float32 (TF32 off on both sides): irc's default build on
   the VM with CUDA graphs and without, next to PyTorch eager with the same weights
   (torchvision's ResNet-50 and MobileNet-V2, BERT written in PyTorch), each output
   checked against the zoo's numpy reference;
2. the tests marked ``cuda`` (``pytest -m cuda``), log in ``tests.log``;
3. ``dispatch="auto"`` (cuDNN and cuBLAS where they measured faster than irc's own
   kernels) and every match on a library (``dispatch=["cudnn", "cublas"]``, column
   ``libs``) on each model;
4. a 4096^3 float32 matmul: irc's default build and its cuBLAS dispatch against cuBLAS
   through PyTorch;
5. the three models at batch 16 as in 1, checked against PyTorch;
6. irc's kernel profile of each model at batch 1 (graphs off, each kernel timed with a
   synchronization), the 12 largest kernels in ``details.json``;
7. ``torch.compile`` (its default mode and ``reduce-overhead``, CUDA graphs) on each model
   at batch 1.

Milliseconds are medians of 3 runs of ``--repeat`` calls each, timed with CUDA events
after warm-up. Everything measured goes to ``details.json`` in ``--out`` (default
``$OUT`` when set, else ``gpu_check_out``); the compact table comes last on stdout.

Run: ``python benchmarks/gpu_check.py [--budget 480] [--skip-tests]``; ``--only 'bert
b1,matmul'`` runs those steps alone. Without a GPU it says so and stops.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import irc
from irc.testing.models import get_model

MODELS = {
    "resnet50": {"image_size": 224},
    "mobilenet_v2": {"image_size": 224},
    "bert": {"seq_len": 128, "hidden": 768, "num_layers": 12, "num_heads": 12, "ffn": 3072},
}


class Budget:
    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if not np.isfinite(got).all():
        return float("inf")
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def torch_time(fn, repeat: int) -> float:
    """Median milliseconds per call of ``fn`` (CUDA events, after 3 warm-up calls)."""
    import torch

    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(3):
        start.record()
        for _ in range(repeat):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / repeat)
    return float(np.median(times))


def irc_time(vm, x, repeat: int) -> float:
    dev = irc.cuda(0)
    return vm.time_evaluator("forward", dev, number=repeat, repeat=3)(x).median * 1e3


def torch_model(name: str, m):
    """The PyTorch model of zoo model ``m`` with its weights (mapped in order, shapes
    checked), on the GPU in eval mode."""
    import torch

    if name == "bert":
        sys.path.insert(0, str(Path(__file__).parent))
        from gpu import torch_bert
        return torch_bert(m, MODELS["bert"]["num_heads"])
    import torchvision

    sd = m.state_dict()
    classes = sd["fc.bias" if name == "resnet50" else "classifier.bias"].shape[0]
    model = getattr(torchvision.models, name)(weights=None, num_classes=classes)
    theirs = [k for k in model.state_dict() if not k.endswith("num_batches_tracked")]
    ours = list(sd)
    if len(theirs) != len(ours):
        raise RuntimeError(f"{name}: {len(ours)} zoo tensors, {len(theirs)} in torchvision")
    state = {}
    for t, o in zip(theirs, ours):
        v = np.ascontiguousarray(sd[o])
        if tuple(model.state_dict()[t].shape) != v.shape:
            raise RuntimeError(f"{name}: {o} {v.shape} does not map onto {t}")
        state[t] = torch.from_numpy(v)
    model.load_state_dict(state, strict=False)
    return model.cuda().eval()


def run_tests(out: Path, timeout: float) -> dict:
    root = Path(__file__).resolve().parents[1] / "tests"
    files = sorted(str(f) for f in root.rglob("test_*.py") if "mark.cuda" in f.read_text())
    cmd = [sys.executable, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider",
           "-o", "addopts=", *files]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        log, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        log, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else \
            (e.stdout or ""), "timeout"
    (out / "tests.log").write_text(log)
    summary = [ln for ln in log.splitlines() if " passed" in ln or " failed" in ln
               or " error" in ln]
    return {"rc": rc, "summary": summary[-1] if summary else log[-300:],
            "seconds": round(time.monotonic() - t0, 1)}


def bench_model(name: str, batch: int, repeat: int, results: list, refs: dict) -> None:
    import torch

    m = get_model(name, batch_size=batch, **MODELS[name])
    row = {"workload": f"{name} b{batch}"}
    results.append(row)
    t0 = time.perf_counter()
    ex = irc.compile(m.mod, target="cuda", params=m.bound_params())
    row["build_s"] = round(time.perf_counter() - t0, 1)
    dev = irc.cuda(0)
    x = m.random_input()
    tx = irc.tensor(x, dev)
    vm = irc.vm.VirtualMachine(ex, dev)
    plain = irc.vm.VirtualMachine(ex, dev, cuda_graphs=False)
    got = vm["forward"](tx).numpy()
    got2 = vm["forward"](tx).numpy()  # the captured graph's first replay
    row["graph"] = str(vm.cuda_graph_stats("forward")["plan"])
    row["irc_ms"] = irc_time(vm, tx, repeat)
    row["irc_nograph_ms"] = irc_time(plain, tx, repeat)
    model = torch_model(name, m)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ttx = torch.from_numpy(x).cuda()
    with torch.no_grad():
        peer = model(ttx).float().cpu().numpy()
        row["eager_ms"] = torch_time(lambda: model(ttx), repeat)
    if batch == 1:
        want = m.reference(x)
        row["irc_err"] = rel_err(got, want)
        row["eager_err"] = rel_err(peer, want)
    else:
        row["irc_err"] = rel_err(got, peer)
    row["replay_err"] = rel_err(got2, got)
    row["ratio"] = row["irc_ms"] / row["eager_ms"]
    refs[(name, batch)] = (m, ex, x, model)


def bench_auto(name: str, repeat: int, results: list, refs: dict) -> None:
    m, _, x, _ = refs[(name, 1)]
    row = next(r for r in results if r["workload"] == f"{name} b1")
    t0 = time.perf_counter()
    ex = irc.compile(m.mod, target="cuda", params=m.bound_params(), dispatch="auto")
    row["auto_build_s"] = round(time.perf_counter() - t0, 1)
    dev = irc.cuda(0)
    vm = irc.vm.VirtualMachine(ex, dev)
    tx = irc.tensor(x, dev)
    got = vm["forward"](tx).numpy()
    row["auto_err"] = rel_err(got, m.reference(x))
    row["auto_ms"] = irc_time(vm, tx, repeat)
    row["auto_library_calls"] = sum(ins[0] == "packed" for ins in ex.functions["forward"].code)
    # Every match on a library, measured or not.
    ex = irc.compile(m.mod, target="cuda", params=m.bound_params(),
                     dispatch=["cudnn", "cublas"])
    vm = irc.vm.VirtualMachine(ex, dev)
    row["libs_err"] = rel_err(vm["forward"](tx).numpy(), m.reference(x))
    row["libs_ms"] = irc_time(vm, tx, repeat)


def bench_compile(name: str, repeat: int, results: list, refs: dict, budget: Budget) -> None:
    import torch

    _, _, x, model = refs[(name, 1)]
    row = next(r for r in results if r["workload"] == f"{name} b1")
    ttx = torch.from_numpy(x).cuda()
    for mode, key in ((None, "compile_ms"), ("reduce-overhead", "compile_ro_ms")):
        if budget.left() < 60:
            row[key] = "no time"
            continue
        torch._dynamo.reset()
        fn = torch.compile(model, mode=mode) if mode else torch.compile(model)
        with torch.no_grad():
            t0 = time.perf_counter()
            fn(ttx)
            row[key + "_build_s"] = round(time.perf_counter() - t0, 1)
            row[key] = torch_time(lambda fn=fn: fn(ttx), repeat)


def bench_matmul(n: int, repeat: int, results: list) -> None:
    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    from gpu import matmul_module

    from irc import passes
    mod = matmul_module(n, "float32")
    dev = irc.cuda(0)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype("float32")
    b = rng.uniform(-1, 1, (n, n)).astype("float32")
    ta, tb = irc.tensor(a, dev), irc.tensor(b, dev)
    torch.backends.cuda.matmul.allow_tf32 = False
    xa, xb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    want = torch.matmul(xa, xb).cpu().numpy()
    row = {"workload": f"matmul {n}^3 f32"}
    results.append(row)
    row["eager_ms"] = torch_time(lambda: torch.matmul(xa, xb), repeat)
    for key, m in (("irc", mod), ("cublas", passes.RunCodegen()(passes.FuseOpsByPattern(
            irc.dispatch.get_patterns_with_prefix("cublas"), annotate_codegen=True)(mod)))):
        vm = irc.vm.VirtualMachine(irc.compile(m, target="cuda"), dev)
        got = vm["forward"](ta, tb).numpy()
        row[f"{key}_err"] = rel_err(got, want)
        ms = vm.time_evaluator("forward", dev, number=repeat, repeat=3)(ta, tb).median * 1e3
        row["irc_ms" if key == "irc" else "auto_ms"] = ms
    row["ratio"] = row["irc_ms"] / row["eager_ms"]
    row["tflops_irc"] = 2 * n ** 3 / row["irc_ms"] / 1e9
    row["tflops_cublas"] = 2 * n ** 3 / row["eager_ms"] / 1e9


def profile(name: str, refs: dict, details: dict) -> None:
    _, ex, x, _ = refs[(name, 1)]
    dev = irc.cuda(0)
    vm = irc.vm.VirtualMachine(ex, dev, cuda_graphs=False)
    report = vm.profile("forward", irc.tensor(x, dev), repeat=3)
    details.setdefault("profiles", {})[name] = report.table(top=12)


def fmt(v, spec: str = "8.3f") -> str:
    if isinstance(v, (int, float)):
        return format(v, spec)
    return f"{v or '-':>8}"


def table(results: list) -> str:
    head = (f"{'workload':<18} {'irc':>8} {'no-graph':>8} {'auto':>8} {'libs':>8} {'eager':>8} "
            f"{'compile':>8} {'c-RO':>8} {'irc/eager':>9} {'err':>8}")
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(f"{r['workload']:<18} {fmt(r.get('irc_ms'))} "
                     f"{fmt(r.get('irc_nograph_ms'))} {fmt(r.get('auto_ms'))} "
                     f"{fmt(r.get('libs_ms'))} "
                     f"{fmt(r.get('eager_ms'))} {fmt(r.get('compile_ms'))} "
                     f"{fmt(r.get('compile_ro_ms'))} {fmt(r.get('ratio'), '9.2f')} "
                     f"{fmt(r.get('irc_err'), '8.1e')}")
    return "\n".join(lines)


def step(what: str, fn, details: dict) -> None:
    t0 = time.monotonic()
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - one failing step must not lose the others
        details.setdefault("errors", []).append(f"{what}: {type(e).__name__}: {e}")
        details.setdefault("tracebacks", []).append(traceback.format_exc())
        print(f"[{what}] FAILED: {type(e).__name__}: {str(e)[:300]}", flush=True)
    print(f"[{what}] {time.monotonic() - t0:.1f} s", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=float, default=480.0, help="seconds for everything")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--out", default=os.environ.get("OUT") or "gpu_check_out")
    p.add_argument("--skip-tests", action="store_true")
    p.add_argument("--test-seconds", type=float, default=150.0)
    p.add_argument("--only", default="",
                   help="comma-separated steps to run (e.g. 'bert b1,matmul'); default all")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not irc.cuda(0).exist:
        print("no CUDA GPU on this machine: the check needs one")
        return 1
    from irc.runtime.cuda_backend import device_attributes
    budget = Budget(args.budget)
    details: dict = {"gpu": device_attributes(0).name, "date": time.strftime("%Y-%m-%d")}
    try:
        import torch
        details["torch"] = torch.__version__
    except ImportError:
        print("PyTorch is missing: the peers need it")
        return 1
    print(f"GPU: {details['gpu']}, torch {details['torch']}", flush=True)
    results: list = []
    refs: dict = {}

    def tests() -> None:
        details["tests"] = run_tests(out, min(args.test_seconds, budget.left() - 60))
        print(f"[tests] {details['tests']['summary']} ({details['tests']['seconds']} s)",
              flush=True)

    plan = [(f"{n} b1", lambda n=n: bench_model(n, 1, args.repeat, results, refs), 40)
            for n in MODELS]
    if not args.skip_tests:
        plan.append(("tests", tests, 60))
    plan += [(f"{n} auto", lambda n=n: bench_auto(n, args.repeat, results, refs), 60)
             for n in MODELS]
    plan += [("matmul", lambda: bench_matmul(4096, args.repeat, results), 30)]
    plan += [(f"{n} b16", lambda n=n: bench_model(n, 16, args.repeat, results, refs), 40)
             for n in MODELS]
    plan += [(f"{n} profile", lambda n=n: profile(n, refs, details), 20) for n in MODELS]
    plan += [(f"{n} torch.compile", lambda n=n: bench_compile(n, args.repeat, results, refs,
                                                              budget), 90) for n in MODELS]
    only = [w.strip() for w in args.only.split(",") if w.strip()]
    for what, fn, need in plan:
        if only and what not in only:
            continue
        if budget.left() < need:
            details.setdefault("skipped", []).append(what)
            print(f"[{what}] skipped: {budget.left():.0f} s left", flush=True)
            continue
        step(what, fn, details)
        (out / "details.json").write_text(json.dumps({**details, "results": results},
                                                     indent=1, default=str))
    for name, text in details.get("profiles", {}).items():
        print(f"\n{name} b1 kernels (graphs off):\n{text}")
    print(f"\nGPU: {details['gpu']}; torch {details['torch']}; ms per call (medians); "
          f"irc/eager uses irc with graphs; err: rel. L2 vs numpy (b1) or eager (b16)")
    if "tests" in details:
        print(f"tests: {details['tests']['summary']}")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
