"""GPU kernels in the interpreter: blocks, threads in lock-step between barriers, and the
detection of data races.

The generated code of a kernel (see ``codegen.py``) is a *block function*: called with a
block's index and the block's shared memory (:class:`BlockMemory`), it returns the
*thread function*, which runs one thread; where the kernel has barriers it is a
generator that yields at each ``T.tvm_storage_sync``. :meth:`Launch.run` runs the blocks
one after another and, within a block, advances every thread to its next barrier before
resuming any (an *epoch* lies between two barriers), in reverse thread order so that
a missing barrier shows in the numbers even where it is not detected.

Every access of shared memory and of global memory in a kernel goes through a
:class:`Shadow` of that memory, which remembers per element the last writer and the
readers of the current epoch: an element written by one thread and touched by another
in the same epoch of a block, or by a thread of another block at any time of the launch
(blocks cannot synchronise), is a data race. Errors name the memory by its allocation
(or parameter) and the element by its flat offset. Reads of global memory that no
thread of the kernel writes cannot race and are not tracked.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .runtime import InterpreterError

_AXES = ("x", "y", "z")


class KernelError(InterpreterError):
    """An error of a kernel's execution: a data race, barrier divergence, or the error of
    one thread with that thread named."""


def alloc_uninitialized(size: int, dtype: np.dtype) -> np.ndarray:
    """Fresh shared or local memory, filled with values that show when read before being
    written: NaN for floats (and bfloat16), the largest value for integers, True for
    booleans."""
    size = int(size)
    if size < 0:
        raise InterpreterError(f"allocation of a negative size ({size})")
    if dtype.kind == "f":
        return np.full(size, np.nan, dtype=dtype)
    if dtype.kind == "b":
        return np.ones(size, dtype=dtype)
    return np.full(size, np.iinfo(dtype).max, dtype=dtype)


def _coords(index: int, dims: tuple[int, int, int]) -> tuple[int, int, int]:
    x, rest = index % dims[0], index // dims[0]
    return x, rest % dims[1], rest // dims[1]


def _threads_text(coords: list[tuple[int, int, int]]) -> str:
    shown = ", ".join(str(c) for c in coords[:4])
    return shown if len(coords) <= 4 else f"{shown} and {len(coords) - 4} more"


class Launch:
    """One launch of a kernel: its grid and block dimensions, the current epoch (and
    block), the shadows of global memory, and the scheduler of its threads."""

    def __init__(self, kernel: str, extents: tuple[tuple[str, Any], ...]):
        self.kernel = kernel
        dims: dict[str, int] = {}
        for tag, value in extents:
            n = int(value)
            if n < 0:
                raise KernelError(f"kernel {kernel} launches {tag} with the negative extent "
                                  f"{n}")
            if dims.setdefault(tag, n) != n:
                raise KernelError(f"kernel {kernel} launches {tag} twice with different "
                                  f"extents ({dims[tag]} and {n}); every launch of one "
                                  "thread axis in a kernel must have the same extent")
        self.grid = tuple(dims.get(f"blockIdx.{a}", 1) for a in _AXES)
        self.block = tuple(dims.get(f"threadIdx.{a}", 1) for a in _AXES)
        self.nthreads = self.block[0] * self.block[1] * self.block[2]
        self.epoch = 0
        # Global ids of the running block's threads: [first, end).
        self.first = self.end = 0

    def shadow(self, name: str) -> Shadow:
        """The race-detection shadow of global memory ``name`` for this launch."""
        return Shadow(self, name, True)

    def thread_of(self, gid: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(thread index, block index) of the thread with global id ``gid``."""
        return (_coords(gid % self.nthreads, self.block),
                _coords(gid // self.nthreads, self.grid))

    # -- running -----------------------------------------------------------------------
    def run(self, block_function: Callable, has_barriers: bool) -> None:
        """Run every block (in reverse order), each thread of a block in lock-step
        between barriers."""
        nthreads = self.nthreads
        nblocks = self.grid[0] * self.grid[1] * self.grid[2]
        order = [(t, *_coords(t, self.block)) for t in reversed(range(nthreads))]
        for b in reversed(range(nblocks)):
            bx, by, bz = _coords(b, self.grid)
            self.epoch += 1
            base = self.first = b * nthreads
            self.end = base + nthreads
            thread_function = block_function(bx, by, bz, BlockMemory(self))
            if not has_barriers:
                for t, tx, ty, tz in order:
                    try:
                        thread_function(tx, ty, tz, base + t)
                    except KernelError:
                        raise
                    except InterpreterError as err:
                        raise self._in_thread(err, base + t) from None
                continue
            self._run_block(b, [(t, thread_function(tx, ty, tz, base + t))
                                for t, tx, ty, tz in order])

    def _run_block(self, b: int, live: list[tuple[int, Any]]) -> None:
        base = b * self.nthreads
        while live:
            waiting: list[tuple[int, Any, int]] = []
            finished: list[int] = []
            for t, gen in live:
                try:
                    waiting.append((t, gen, next(gen)))
                except StopIteration:
                    finished.append(t)
                except KernelError:
                    raise
                except InterpreterError as err:
                    raise self._in_thread(err, base + t) from None
            if not waiting:
                return
            if finished:
                self._divergence(b, finished, waiting)
            first = waiting[0]
            for other in waiting[1:]:
                if other[2] != first[2]:
                    block = _coords(b, self.grid)
                    raise KernelError(
                        f"barrier divergence in kernel {self.kernel}, block {block}: thread "
                        f"{_coords(first[0], self.block)} waits at barrier #{first[2]} while "
                        f"thread {_coords(other[0], self.block)} waits at barrier "
                        f"#{other[2]} (barriers are numbered in program order); all threads "
                        "of a block must wait at the same T.tvm_storage_sync")
            self.epoch += 1
            live = [(t, gen) for t, gen, _ in waiting]

    def _divergence(self, b: int, finished: list[int], waiting: list) -> None:
        block = _coords(b, self.grid)
        done = _threads_text(sorted(_coords(t, self.block) for t in finished))
        wait = _threads_text(sorted(_coords(t, self.block) for t, _, _ in waiting))
        raise KernelError(
            f"barrier divergence in kernel {self.kernel}, block {block}: threads {done} "
            f"finished while threads {wait} wait at barrier #{waiting[0][2]}; every thread "
            "of a block must reach every T.tvm_storage_sync (is one under a condition that "
            "differs between threads?)")

    def _in_thread(self, err: InterpreterError, gid: int) -> KernelError:
        thread, block = self.thread_of(gid)
        return KernelError(f"{err.message} (in kernel {self.kernel}, thread {thread} of "
                           f"block {block})")

    # -- races -----------------------------------------------------------------------
    def race(self, memory: Shadow, index: int, first: int, first_does: str, second: int,
             second_does: str) -> None:
        t1, b1 = self.thread_of(first)
        t2, b2 = self.thread_of(second)
        where = f"{'global' if memory.is_global else 'shared'} memory {memory.name}[{index}]"
        if b1 != b2:
            raise KernelError(
                f"data race on {where} in kernel {self.kernel}: thread {t1} of block {b1} "
                f"{first_does} it and thread {t2} of block {b2} {second_does} it; blocks "
                "cannot synchronise within a kernel, so an element one block writes must "
                "not be touched by another")
        raise KernelError(
            f"data race on {where} in kernel {self.kernel}, block {b1}: thread {t1} "
            f"{first_does} it and thread {t2} {second_does} it with no barrier in between "
            "(a missing T.tvm_storage_sync)")


class BlockMemory:
    """The shared memory of one block: one array (and shadow) per allocation site,
    created by the first thread that reaches it."""

    def __init__(self, launch: Launch):
        self.launch = launch
        self.sites: dict[int, tuple[np.ndarray, Shadow]] = {}

    def alloc(self, site: int, name: str, size: int, dtype: np.dtype
              ) -> tuple[np.ndarray, Shadow]:
        hit = self.sites.get(site)
        if hit is None:
            hit = (alloc_uninitialized(size, dtype), Shadow(self.launch, name, False))
            self.sites[site] = hit
        elif hit[0].size != size:
            raise InterpreterError(f"shared allocation {name} has size {hit[0].size} in one "
                                   f"thread and {size} in another; shared memory has one "
                                   "size for the whole block")
        return hit


class Shadow:
    """Race detection for one memory during one launch (global memory) or one block
    (shared memory). Per touched element a cell ``[writer, write epoch, reader, second
    reader, read epoch, reader, reader of another block]``: the last writer, up to two
    distinct readers of the epoch ``read epoch``, and (global memory) up to two readers
    of distinct blocks during the launch. Threads are named by their global id
    ``block * threads per block + thread``; those of the running block are the ids in
    ``[launch.first, launch.end)``."""

    __slots__ = ("launch", "name", "is_global", "cells")

    def __init__(self, launch: Launch, name: str, is_global: bool):
        self.launch = launch
        self.name = name
        self.is_global = is_global
        self.cells: dict[int, list[int]] = {}

    def rd(self, i: int, g: int) -> int:
        """Record that thread ``g`` reads element ``i``; returns ``i``."""
        cell = self.cells.get(i)
        launch = self.launch
        epoch = launch.epoch
        if cell is None:
            self.cells[i] = [-1, -1, g, -1, epoch, g, -1]
            return i
        w = cell[0]
        if w != g and w >= 0 and (cell[1] == epoch or not launch.first <= w < launch.end):
            launch.race(self, i, w, "writes", g, "reads")
        if cell[4] != epoch:
            cell[2], cell[3], cell[4] = g, -1, epoch
        elif cell[3] < 0 and cell[2] != g:
            cell[3] = g
        if cell[6] < 0 and self.is_global:
            x = cell[5]
            if x < 0:
                cell[5] = g
            elif not launch.first <= x < launch.end:
                cell[6] = g
        return i

    def wr(self, i: int, g: int) -> int:
        """Record that thread ``g`` writes element ``i``; returns ``i``."""
        cell = self.cells.get(i)
        launch = self.launch
        epoch = launch.epoch
        if cell is None:
            self.cells[i] = [g, epoch, -1, -1, -1, -1, -1]
            return i
        w = cell[0]
        if w != g and w >= 0 and (cell[1] == epoch or not launch.first <= w < launch.end):
            launch.race(self, i, w, "writes", g, "writes")
        if cell[4] == epoch:
            r = cell[2] if cell[2] != g else cell[3]
            if r >= 0:
                launch.race(self, i, r, "reads", g, "writes")
        if cell[5] >= 0:
            for x in (cell[5], cell[6]):
                if x >= 0 and not launch.first <= x < launch.end:
                    launch.race(self, i, x, "reads", g, "writes")
        cell[0], cell[1] = g, epoch
        return i

    def vrd(self, flat: np.ndarray, g: int) -> np.ndarray:
        """:meth:`rd` for every lane of a vector access; returns ``flat``."""
        for i in flat.tolist():
            self.rd(i, g)
        return flat

    def vwr(self, flat: np.ndarray, g: int) -> np.ndarray:
        """:meth:`wr` for every lane of a vector access; returns ``flat``."""
        for i in flat.tolist():
            self.wr(i, g)
        return flat


SIMT_HELPERS: dict[str, Any] = {"_Launch": Launch, "_alloc_uninitialized": alloc_uninitialized}
