"""Analyses of loop IR: block access regions, buffer accesses, variable use, the
parameters a function writes, floating-point operation counts, and a checker of the
lowered form."""

from .block_access import detect_block_access_regions
from .buffer_access import BufferAccess, buffers_accessed, collect_buffer_accesses
from .flops import flop_count
from .var_use import collect_vars, undefined_vars, uses_var
from .verify import verify_lowered
from .written_params import written_params

__all__ = [
    "BufferAccess",
    "buffers_accessed",
    "collect_buffer_accesses",
    "collect_vars",
    "detect_block_access_regions",
    "flop_count",
    "undefined_vars",
    "uses_var",
    "verify_lowered",
    "written_params",
]
