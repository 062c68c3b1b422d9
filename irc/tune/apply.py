"""Applying tuning results: the best record of a workload turned back into a scheduled
function, with its layout-rewritten weights made explicit.

A tuned schedule may rewrite the layout of a layout-free weight (seed 002's
``layout_free_placeholders``): the kernel then expects the weight packed (function
attribute ``layout_rewrite``: parameter, original shape, index map). Three ways to hand
such a kernel to a caller (:class:`LayoutRewriteOption`):

- ``INSERT_TRANSFORM_STAGE``: the function takes the weight in its original layout and
  packs it itself, in a parallel first stage (the default of
  ``auto_scheduler.SearchTask.apply_best``: seed 002's build-and-run flow works as
  written; each call pays the packing);
- ``REWRITE_FOR_PRE_TRANSFORMED``: the function takes the packed weight; pack it once
  with :func:`irc.tir.schedule.pack_weight` (numpy) or the loop function
  :func:`irc.tir.schedule.layout_rewrite_preproc` (what graph compilation does for
  constant weights);
- ``NO_REWRITE``: the schedule is replayed without its layout rewrite (original layout,
  the kernel reads the weight where it is).

:func:`replay_best` picks the record to apply: the fastest whose trace replays onto the
function. A record that cannot be replayed (a damaged trace: factors that do not divide
the loop, an unknown instruction) is skipped with a warning on the ``irc.tune`` logger
naming where it is (``file:line``, or the SQLite row) and why, and the next-best record
is tried; the unscheduled function's record, or no record left, means the default
schedule.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from ..core.diagnostics import IRCError, TuningError
from ..tir import stmt as S
from ..tir.buffer import Buffer
from ..tir.expr import Var
from ..tir.schedule import Schedule, Trace, layout_rewrite_preproc, layout_rewrites
from ..tir.schedule.rewrite import replace_buffers
from ..tir.stmt import PrimFunc
from .record import TuningRecord, canonical_trace, workload_key

logger = logging.getLogger("irc.tune")

# What replaying a damaged trace raises: schedule errors, and Python's own errors where a
# primitive receives arguments of the wrong kind from the JSON.
_REPLAY_ERRORS = (IRCError, TypeError, ValueError, KeyError, IndexError)


class LayoutRewriteOption:
    """How a layout-rewritten weight is handed to callers (see the module docstring)."""

    NO_REWRITE = 0
    INSERT_TRANSFORM_STAGE = 1
    REWRITE_FOR_PRE_TRANSFORMED = 2

    ALL = (NO_REWRITE, INSERT_TRANSFORM_STAGE, REWRITE_FOR_PRE_TRANSFORMED)


def _check_option(option: int) -> int:
    if option not in LayoutRewriteOption.ALL:
        raise TuningError(f"unknown layout rewrite option {option!r}; use "
                          "LayoutRewriteOption.NO_REWRITE, INSERT_TRANSFORM_STAGE or "
                          "REWRITE_FOR_PRE_TRANSFORMED")
    return option


def trace_without_layout_rewrite(trace: Any) -> Any:
    """A trace (JSON) without its LayoutRewrite instructions (nothing uses their
    outputs, so the rest replays unchanged)."""
    trace = canonical_trace(trace)
    if trace is None:
        return None
    insts, decisions = trace
    keep = [k for k, inst in enumerate(insts) if inst[0] != "LayoutRewrite"]
    if len(keep) == len(insts):
        return trace
    pos = {old: new for new, old in enumerate(keep)}
    return [[insts[k] for k in keep], [[pos[i], d] for i, d in decisions if i in pos]]


def schedule_from_record(func: PrimFunc, record: TuningRecord | Any,
                         option: int = LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED):
    """An ``irc.tir.Schedule`` of ``func`` with the record's trace replayed (the
    unscheduled function for the default record), its layout rewrites handled by
    ``option``."""
    _check_option(option)
    trace = record.trace if isinstance(record, TuningRecord) else record
    if option == LayoutRewriteOption.NO_REWRITE:
        trace = trace_without_layout_rewrite(trace)
    sch = Schedule(func)
    if trace is not None:
        Trace.from_json(trace).apply_to_schedule(sch)
    if option == LayoutRewriteOption.INSERT_TRANSFORM_STAGE and \
            sch.mod["main"].attrs.get("layout_rewrite"):
        staged = with_transform_stage(sch.mod["main"])
        new = Schedule(staged)
        # Keep the trace that made the kernel (printing the schedule shows it).
        new._trace = sch.trace
        return new
    return sch


def replay_best(func: PrimFunc, database: Any, option: int, name: str = "",
                key: str | None = None) -> tuple[TuningRecord, Schedule] | None:
    """``(record, schedule)``: the fastest valid record of ``func``'s workload in
    ``database`` (a Database, or a view with ``get_top_k``) whose trace replays onto
    ``func``, with the replayed schedule (layout rewrites handled by ``option``); None
    when there is no such record. Records that cannot be replayed are skipped, each with
    a warning naming its place and the cause (module docstring); ``name`` names the
    function in it."""
    key = key if key is not None else workload_key(func)
    what = f" of {name}" if name else ""
    for rec in database.get_top_k(key, sys.maxsize):
        try:
            return rec, schedule_from_record(func, rec, option)
        except _REPLAY_ERRORS as err:
            where = rec.source or getattr(database, "location", "") or "the database"
            logger.warning("%s: the tuning record%s (workload %s) cannot be replayed, so it "
                           "is skipped and the next-best record or the default schedule "
                           "is used: %s", where, what, key[:16], err)
    return None


def with_transform_stage(func: PrimFunc) -> PrimFunc:
    """``func`` taking its layout-rewritten weights in their original layout: each is
    packed into a buffer of the rewritten layout by a first, parallel stage."""
    rewrites = layout_rewrites(func)
    if not rewrites:
        return func
    body = func.body
    if type(body) is not S.BlockRealize:
        raise TuningError("with_transform_stage needs a block-form function (with a root "
                          "block)")
    params = list(func.params)
    buffer_map = dict(func.buffer_map)
    stages: list[S.Stmt] = []
    allocs: list[Buffer] = []
    for rw in rewrites:
        p = func.params[rw.param]
        packed = func.buffer_map[p]
        pre = layout_rewrite_preproc(func, rw.param)
        src = pre.buffer_map[pre.params[0]]
        dst = pre.buffer_map[pre.params[1]]
        orig = Buffer(name=packed.name, shape=src.shape, dtype=packed.dtype,
                      data=Var(name=packed.name, dtype="handle"))
        new_p = Var(name=p.name, dtype="handle")
        params[rw.param] = new_p
        del buffer_map[p]
        buffer_map[new_p] = orig
        nest = replace_buffers(pre.body.block.body, {id(src): orig, id(dst): packed})
        if type(nest) is S.For and nest.kind == "serial":
            nest = nest.replace(kind="parallel")
        stages.append(nest)
        allocs.append(packed)
    root = body.block
    new_root = root.replace(alloc_buffers=tuple(allocs) + tuple(root.alloc_buffers),
                            body=S.seq(*stages, root.body))
    done = {rw.param for rw in rewrites}
    attrs = {k: v for k, v in func.attrs.items() if k != "layout_rewrite"}
    free = [k for k in attrs.get("layout_free_buffers", []) if k not in done]
    if "layout_free_buffers" in attrs:
        if free:
            attrs["layout_free_buffers"] = free
        else:
            del attrs["layout_free_buffers"]
    return func.replace(params=tuple(params), buffer_map=buffer_map,
                        body=body.replace(block=new_root), attrs=attrs)


__all__ = ["LayoutRewriteOption", "replay_best", "schedule_from_record",
           "trace_without_layout_rewrite", "with_transform_stage"]
