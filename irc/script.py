"""The script namespaces for IR written inside Python source.

``from irc.script import I, R, T`` gives the decorators ``@I.ir_module``,
``@R.function`` and ``@T.prim_func``. A decorated class or function is *not* executed:
its source is read with :func:`inspect.getsource` and parsed by the same lark parser as
``irc.parse``, so the result is the IR the text describes::

    from irc.script import I, R, T

    @I.ir_module
    class Module:
        @T.prim_func
        def add_one(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
            for i in range(16):
                B[i] = A[i] + T.float32(1)

The names ``I``, ``R`` and ``T`` inside such source must not be rebound; linters may
need to be told about the script-only names (``T.grid``, ``R.dataflow``, ...).
"""

from __future__ import annotations

from .script_parser.decorators import I, R, T

ir = I
relax = R
tir = T

__all__ = ["I", "R", "T", "ir", "relax", "tir"]
