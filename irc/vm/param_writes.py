"""Which parameters of a VM function its kernels may write.

A VM function normally writes only tensors it allocates, but a kernel may store into an
input (a loop function that updates a buffer in place): then a read-only array passed
for that parameter (``np.load(path, mmap_mode="r")``, an array with
``flags.writeable`` False) would be written through its pointer, which crashes the
process or silently changes the caller's data. This analysis follows registers through
``move``, ``tuple``, ``getitem`` and the results of calls (which may return an argument)
to the buffer arguments of ``kernel`` instructions whose signature marks them written,
and through ``call`` into the VM functions called. The VM then checks only those
parameters for writability, once per call.

Runtime functions (``packed``) take their inputs by the destination-passing convention
and write only their outputs, which the VM allocates; they are not counted.
"""

from __future__ import annotations

from typing import Any, Callable

from .bytecode import VMFunction


def written_params(fn: VMFunction, kernel_writes: Callable[[str], list[bool] | None],
                   callee_writes: Callable[[str], frozenset[int]]) -> frozenset[int]:
    """Positions of ``fn``'s parameters whose tensors some kernel may write.

    ``kernel_writes(name)`` gives, per argument of kernel ``name``, whether the kernel
    writes it (None when unknown: every argument counts as written);
    ``callee_writes(name)`` gives the written parameters of VM function ``name``.
    """
    alias: dict[int, set[int]] = {i: {i} for i in range(len(fn.params))}
    written: set[int] = set()

    def of(reg: int) -> set[int]:
        return alias.get(reg, set())

    def add(dst: int, params: set[int]) -> bool:
        if dst < 0 or not params:
            return False
        have = alias.setdefault(dst, set())
        if params <= have:
            return False
        have |= params
        return True

    changed = True
    while changed:  # registers may be assigned on several branches: run to a fixpoint
        changed = False
        for ins in fn.code:
            op: Any = ins[0]
            if op == "move" or op == "getitem":
                changed |= add(ins[1], of(ins[2]))
            elif op == "tuple":
                changed |= add(ins[1], set().union(*(of(r) for r in ins[2])))
            elif op in ("call", "packed"):
                args = ins[2]
                changed |= add(ins[3], set().union(*(of(r) for r in args)))
                if op == "call":
                    for k in callee_writes(ins[1]):
                        if k < len(args) and not of(args[k]) <= written:
                            written |= of(args[k])
                            changed = True
            elif op == "kernel":
                writes = kernel_writes(ins[1])
                for k, r in enumerate(ins[2]):
                    if (writes is None or k >= len(writes) or writes[k]) and \
                            not of(r) <= written:
                        written |= of(r)
                        changed = True
    return frozenset(written)
