"""Seed 003's tuning step with irc's names, on the CPU: an nn.Module exported to an
IRModule, legalized (the "zero" pipeline), tuned by ``MetaScheduleTuneTIR``, the best
schedules applied by ``MetaScheduleApplyDatabase``, compiled and run on the VM.

Run: ``python examples/tune_seed003_passes.py [--trials 64]``.
"""

import argparse
import tempfile

import numpy as np

import irc
from irc import passes
from irc.frontend import nn


class RelaxModel(nn.Module):
    def __init__(self):
        super(RelaxModel, self).__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(256, 10, bias=False)

    def forward(self, x):
        x = self.fc1(x)
        x = self.relu1(x)
        x = self.fc2(x)
        return x


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=64)
    args = p.parse_args()

    input_shape = (1, 784)
    mod, params = RelaxModel().export_ir({"forward": {"x": nn.spec.Tensor(input_shape,
                                                                          "float32")}})
    mod.show()

    target = irc.target.Target("llvm")
    with target, tempfile.TemporaryDirectory() as tmp_dir:
        mod = passes.Sequential(
            [
                passes.get_pipeline("zero"),
                passes.MetaScheduleTuneTIR(work_dir=tmp_dir, max_trials_global=args.trials),
                passes.MetaScheduleApplyDatabase(work_dir=tmp_dir),
            ]
        )(mod)
    mod.show()

    ex = irc.compile(mod, target="llvm")
    dev = irc.cpu(0)
    vm = irc.vm.VirtualMachine(ex, dev)
    data = irc.tensor(np.random.rand(*input_shape).astype("float32"), dev)
    cpu_params = [irc.tensor(np.random.rand(*p.shape).astype(p.dtype), dev) for _, p in params]
    cpu_out = vm["forward"](data, *cpu_params).numpy()
    print(cpu_out)


if __name__ == "__main__":
    main()
