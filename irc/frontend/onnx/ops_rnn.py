"""Converters of ONNX's recurrent operators ``LSTM``, ``GRU`` and ``RNN`` (opset 7 on;
``layout`` from opset 14; opset 22 only widened the element types).

The sequence length must be static: the recurrence is unrolled into graph operators. For
each direction the input projection of every step is one matrix product (``X @ Wᵀ`` plus
the biases that can be added before the recurrence), split into steps; each step adds the
recurrent product ``H @ Rᵀ``, splits the gates and applies the activations. Weights and
biases known at import time (initializers) are transposed, sliced and summed then; given
as graph inputs they are sliced and transposed by graph operators.

``sequence_lens`` known at import time to equal the sequence length everywhere costs
nothing; otherwise every step masks with ``where``: a batch entry past its length keeps
its state and writes zeros to ``Y``, as ONNX specifies (in the reverse direction the steps
past the length come first and leave the initial state untouched).

Activation names are matched without regard to case, and ``activation_alpha`` /
``activation_beta`` values are consumed in order by the activations that take them (the
others take none), each missing value being that activation's default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...core import dtype as dt
from ...ir import ops
from ...ir.expr import Constant, Expr, TupleGetItem
from ...tir import expr as E
from .importer import Node
from .ops_elementwise import scalar
from .registry import converter

# activation -> (builder(x, alpha, beta, dtype), default alpha, default beta); a None
# default means the activation takes no such parameter.
_Activation = Callable[[Expr, float, float, str], Expr]


def _softplus(x: Expr, a: float, b: float, d: str) -> Expr:
    return ops.add(ops.maximum(x, scalar(0, d)),
                   ops.log(ops.add(scalar(1, d), ops.exp(ops.negative(ops.abs(x))))))


_ACTIVATIONS: dict[str, tuple[_Activation, float | None, float | None]] = {
    "relu": (lambda x, a, b, d: ops.nn.relu(x), None, None),
    "tanh": (lambda x, a, b, d: ops.tanh(x), None, None),
    "sigmoid": (lambda x, a, b, d: ops.sigmoid(x), None, None),
    "affine": (lambda x, a, b, d: ops.add(ops.multiply(x, scalar(a, d)), scalar(b, d)),
               1.0, 0.0),
    "leakyrelu": (lambda x, a, b, d: ops.where(ops.less(x, scalar(0, d)),
                                               ops.multiply(x, scalar(a, d)), x), 0.01, None),
    "thresholdedrelu": (lambda x, a, b, d: ops.where(ops.greater(x, scalar(a, d)), x,
                                                     scalar(0, d)), 1.0, None),
    "scaledtanh": (lambda x, a, b, d: ops.multiply(ops.tanh(ops.multiply(x, scalar(b, d))),
                                                   scalar(a, d)), 1.0, 1.0),
    "hardsigmoid": (lambda x, a, b, d: ops.clip(ops.add(ops.multiply(x, scalar(a, d)),
                                                        scalar(b, d)), 0.0, 1.0), 0.2, 0.5),
    "elu": (lambda x, a, b, d: ops.where(ops.less(x, scalar(0, d)), ops.multiply(
        ops.subtract(ops.exp(x), scalar(1, d)), scalar(a, d)), x), 1.0, None),
    "softsign": (lambda x, a, b, d: ops.divide(x, ops.add(scalar(1, d), ops.abs(x))),
                 None, None),
    "softplus": (_softplus, None, None),
}


@dataclass(frozen=True)
class _Kind:
    gates: int  # gate blocks in W, R (and in each half of B)
    default_activations: tuple[str, ...]  # per direction


_KINDS = {"LSTM": _Kind(4, ("Sigmoid", "Tanh", "Tanh")),
          "GRU": _Kind(3, ("Sigmoid", "Tanh")),
          "RNN": _Kind(1, ("Tanh",))}


def _activations(node: Node, kind: _Kind, num_dir: int) -> list[list[Callable[[Expr], Expr]]]:
    """The activation functions of each direction, their parameters bound."""
    names = node.attr("activations")
    per_dir = len(kind.default_activations)
    if names is None:
        names = list(kind.default_activations) * num_dir
    elif node.op_type == "RNN" and len(names) == 2 and num_dir == 1:
        # ONNX's RNN schema lists the default as ["Tanh", "Tanh"] for both directions;
        # a forward RNN given two takes the first.
        names = names[:1]
    if len(names) != per_dir * num_dir:
        raise node.error(f"activations lists {len(names)} functions; {node.op_type} with "
                         f"{num_dir} direction(s) needs {per_dir * num_dir}")
    alphas = [float(v) for v in node.attr("activation_alpha", [])]
    betas = [float(v) for v in node.attr("activation_beta", [])]
    d = node.dtype(0)
    funcs = []
    for name in names:
        key = str(name).lower()
        if key not in _ACTIVATIONS:
            raise node.error(f"activation {name!r} is not one of "
                             f"{', '.join(sorted(_ACTIVATIONS))}")
        build, alpha, beta = _ACTIVATIONS[key]
        if alpha is not None and alphas:
            alpha = alphas.pop(0)
        if beta is not None and betas:
            beta = betas.pop(0)
        funcs.append(lambda x, f=build, a=alpha, b=beta: f(x, a or 0.0, b or 0.0, d))
    return [funcs[i * per_dir:(i + 1) * per_dir] for i in range(num_dir)]


# -- weights: numpy arrays when known at import time, graph expressions otherwise -------

Value = Any  # np.ndarray | Expr


def _as_expr(v: Value, dtype: str) -> Expr:
    return Constant.from_numpy(np.asarray(v, order="C"), dtype) if isinstance(
        v, np.ndarray) else v


def _input_value(node: Node, i: int) -> Value | None:
    if not node.has_input(i):
        return None
    c = node.const(i)
    return np.asarray(c) if c is not None else node.input(i)


def _index(v: Value, d: int) -> Value:
    """``v[d]`` along the first axis."""
    if isinstance(v, np.ndarray):
        return v[d]
    return ops.squeeze(ops.strided_slice(v, [0], [d], [d + 1]), [0])


def _slice(v: Value, begin: int, end: int) -> Value:
    """``v[begin:end]`` along the first axis."""
    if isinstance(v, np.ndarray):
        return v[begin:end]
    return ops.strided_slice(v, [0], [begin], [end])


def _transpose(v: Value) -> Value:
    return v.T if isinstance(v, np.ndarray) else ops.permute_dims(v, [1, 0])


def _add(a: Value, b: Value) -> Value:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a + b
    return ops.add(a, b)


@dataclass
class _Direction:
    """What one direction's recurrence reads."""

    w_t: Expr  # (input, gates * hidden)
    r_t: Value  # (hidden, gates * hidden)
    x_bias: Value | None  # (gates * hidden,) added to the input projection
    r_bias: Value | None  # (hidden,) GRU with linear_before_reset: Rbh inside the reset
    peep: tuple[Expr, Expr, Expr] | None  # LSTM peepholes i, o, f: (hidden,) each
    h0: Expr | None
    c0: Expr | None
    acts: list[Callable[[Expr], Expr]]
    reverse: bool


class _Recurrence:
    """Builds one recurrent node's unrolled graph."""

    def __init__(self, node: Node):
        self.node = node
        self.kind = _KINDS[node.op_type]
        d = node.dtype(0)
        if not dt.is_float(d):
            raise node.error(f"needs a floating-point input, got {d}")
        self.dtype = d
        direction = node.attr("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            raise node.error(f"direction {direction!r} is not forward, reverse or "
                             "bidirectional")
        self.num_dir = 2 if direction == "bidirectional" else 1
        self.layout = int(node.attr("layout", 0))
        if self.layout and node.opset < 14:
            raise node.error(f"layout is an attribute from opset 14 on; the model imports "
                             f"opset {node.opset}")
        if self.layout not in (0, 1):
            raise node.error(f"layout must be 0 or 1, got {self.layout}")
        clip = node.attr("clip")
        self.clip = float(clip) if clip is not None else None
        self.input_forget = bool(node.attr("input_forget", 0)) and node.op_type == "LSTM"
        self.linear_before_reset = bool(node.attr("linear_before_reset", 0)) and \
            node.op_type == "GRU"
        if node.ndim(0) != 3:
            raise node.error(f"X must have rank 3, got rank {node.ndim(0)}")
        x = node.input(0)
        if self.layout == 1:
            x = node.emit(ops.permute_dims(x, [1, 0, 2]), "x_seq_major")
        self.x = x
        seq, self.batch, _ = x.struct_info.shape if self.layout == 1 else node.shape(0)
        if not isinstance(seq, E.IntImm):
            raise node.error("the sequence length must be static: irc unrolls the "
                             "recurrence", hint="fix it with from_onnx(..., shape_dict=...)")
        self.seq = int(seq.value)
        hidden = node.attr("hidden_size")
        r_shape = node.shape(2)
        if hidden is None:
            if not isinstance(r_shape[-1], E.IntImm):
                raise node.error("hidden_size is neither given nor static in R's shape")
            hidden = int(r_shape[-1].value)
        self.hidden = int(hidden)
        if isinstance(r_shape[-1], E.IntImm) and int(r_shape[-1].value) != self.hidden:
            raise node.error(f"hidden_size is {self.hidden} but R has shape "
                             f"{tuple(int(d) if isinstance(d, E.IntImm) else d for d in r_shape)}")
        self.seq_lens = self._sequence_lens()
        self.directions = self._directions(direction)

    # -- reading the inputs --------------------------------------------------------------
    def _sequence_lens(self) -> Expr | None:
        node = self.node
        if not node.has_input(4):
            return None
        c = node.const(4)
        if c is not None and np.all(np.asarray(c) == self.seq):
            return None
        lens = node.input(4)
        return node.emit(ops.expand_dims(lens, 1), "seq_lens")  # (batch, 1)

    def _state(self, i: int, name: str) -> list[Expr | None]:
        node = self.node
        if not node.has_input(i):
            return [None] * self.num_dir
        v = _input_value(node, i)
        if self.layout == 1:
            v = v.transpose(1, 0, 2) if isinstance(v, np.ndarray) else node.emit(
                ops.permute_dims(v, [1, 0, 2]), name)
        return [node.emit(_as_expr(_index(v, d), self.dtype), f"{name}_{d}")
                for d in range(self.num_dir)]

    def _directions(self, direction: str) -> list[_Direction]:
        node, g, hs = self.node, self.kind.gates, self.hidden
        acts = _activations(node, self.kind, self.num_dir)
        w, r = _input_value(node, 1), _input_value(node, 2)
        b = _input_value(node, 3)
        p = _input_value(node, 7) if node.op_type == "LSTM" else None
        h0s = self._state(5, "initial_h")
        c0s = self._state(6, "initial_c") if node.op_type == "LSTM" else [None] * self.num_dir
        out = []
        for d in range(self.num_dir):
            w_t = _transpose(_index(w, d))
            r_t = _transpose(_index(r, d))
            x_bias = r_bias = None
            if b is not None:
                bd = _index(b, d)
                wb, rb = _slice(bd, 0, g * hs), _slice(bd, g * hs, 2 * g * hs)
                if self.linear_before_reset:
                    # Rbh stays inside the reset product; Rbz and Rbr add up front.
                    r_bias = _slice(rb, 2 * hs, 3 * hs)
                    rb = _slice(rb, 0, 2 * hs)
                    if isinstance(rb, np.ndarray):
                        rb = np.concatenate([rb, np.zeros(hs, rb.dtype)])
                    else:
                        rb = ops.concat([rb, ops.zeros([hs], self.dtype)], 0)
                x_bias = _add(wb, rb)
            out.append(_Direction(
                w_t=_as_expr(w_t, self.dtype), r_t=_as_expr(r_t, self.dtype),
                x_bias=None if x_bias is None else _as_expr(x_bias, self.dtype),
                r_bias=None if r_bias is None else _as_expr(r_bias, self.dtype),
                peep=None if p is None else tuple(
                    _as_expr(_slice(_index(p, d), j * hs, (j + 1) * hs), self.dtype)
                    for j in range(3)),
                h0=h0s[d], c0=c0s[d], acts=acts[d],
                reverse=direction == "reverse" or d == 1))
        return out

    # -- building ------------------------------------------------------------------------
    def emit(self, e: Expr, name: str) -> Expr:
        return self.node.emit(e, name)

    def zeros_state(self) -> Expr:
        return ops.zeros([self.batch, self.hidden], self.dtype)

    def clipped(self, e: Expr) -> Expr:
        if self.clip is None:
            return e
        return ops.clip(e, -self.clip, self.clip)

    def split(self, e: Expr, parts: int | list[int], axis: int, name: str) -> list[Expr]:
        """``e`` split into ``parts`` equal pieces, or at the indices ``parts``."""
        count = parts if isinstance(parts, int) else len(parts) + 1
        if count == 1:
            return [e]
        t = self.emit(ops.split(e, parts, axis), name)
        return [TupleGetItem(tuple_value=t, index=i) for i in range(count)]

    def steps(self, dirn: _Direction, k: int) -> list[Expr]:
        """The input projection of every step, bias included: ``seq`` tensors of shape
        (batch, gates * hidden)."""
        xp = ops.matmul(self.x, dirn.w_t)
        if dirn.x_bias is not None:
            xp = ops.add(xp, dirn.x_bias)
        xp = self.emit(xp, f"x_proj_{k}")
        return [self.emit(ops.squeeze(s, [0]), f"x_step_{k}")
                for s in self.split(xp, self.seq, 0, f"x_steps_{k}")]

    def run(self) -> list[Expr | None]:
        node = self.node
        ys, hs, cs = [], [], []
        for k, dirn in enumerate(self.directions):
            y, h, c = self.direction(dirn, k)
            ys.append(y)
            hs.append(h)
            cs.append(c)
        names = node.output_names + [""] * 3
        outs: list[Expr | None] = [None, None, None]
        if names[0]:
            # Y: (seq, num_dir, batch, hidden), or (batch, seq, num_dir, hidden).
            # The steps (batch, hidden) joined along the batch axis and reshaped: no
            # expand_dims per step, whose inlining would cost the scheduler seq^2.
            per_dir = [ops.expand_dims(ops.reshape(
                ops.concat(y, 0), [self.seq, self.batch, self.hidden]), 1) for y in ys]
            y_all = per_dir[0] if self.num_dir == 1 else ops.concat(per_dir, 1)
            if self.layout == 1:
                y_all = ops.permute_dims(self.emit(y_all, "y"), [2, 0, 1, 3])
            outs[0] = y_all
        for i, states in ((1, hs), (2, cs)):
            if not names[i] or states[0] is None:
                continue
            parts = [ops.expand_dims(s, 0) for s in states]
            st = parts[0] if self.num_dir == 1 else ops.concat(parts, 0)
            if self.layout == 1:
                st = ops.permute_dims(self.emit(st, "state"), [1, 0, 2])
            outs[i] = st
        return outs[:max(len(node.output_names), 1)]

    def mask(self, t: int) -> Expr | None:
        if self.seq_lens is None:
            return None
        lens_dtype = str(self.seq_lens.struct_info.dtype)
        return self.emit(ops.less(scalar(t, lens_dtype), self.seq_lens), "valid")

    def direction(self, dirn: _Direction, k: int) -> tuple[list[Expr], Expr, Expr | None]:
        xs = self.steps(dirn, k)
        h = dirn.h0 if dirn.h0 is not None else self.emit(self.zeros_state(), "h0")
        c = None
        if self.node.op_type == "LSTM":
            c = dirn.c0 if dirn.c0 is not None else self.emit(self.zeros_state(), "c0")
        ys: list[Expr] = [None] * self.seq  # type: ignore[list-item]
        order = range(self.seq - 1, -1, -1) if dirn.reverse else range(self.seq)
        step = {"LSTM": self.lstm_step, "GRU": self.gru_step, "RNN": self.rnn_step}[
            self.node.op_type]
        zero = scalar(0, self.dtype)
        for t in order:
            h_new, c_new = step(dirn, xs[t], h, c)
            valid = self.mask(t)
            if valid is None:
                h, c, ys[t] = h_new, c_new, h_new
            else:
                ys[t] = self.emit(ops.where(valid, h_new, zero), "y_t")
                h = self.emit(ops.where(valid, h_new, h), "h")
                if c is not None:
                    c = self.emit(ops.where(valid, c_new, c), "c")
        return ys, h, c

    def recurrent(self, dirn: _Direction, x: Expr, h: Expr) -> Expr:
        return ops.add(x, ops.matmul(h, dirn.r_t))

    def lstm_step(self, dirn: _Direction, x: Expr, h: Expr,
                  c: Expr) -> tuple[Expr, Expr]:
        f, g, act_h = dirn.acts
        gates = self.emit(self.recurrent(dirn, x, h), "gates")
        pre_i, pre_o, pre_f, pre_c = self.split(gates, 4, 1, "gate_split")
        if dirn.peep is not None:
            p_i, p_o, p_f = dirn.peep
            pre_i = ops.add(pre_i, ops.multiply(p_i, c))
            pre_f = ops.add(pre_f, ops.multiply(p_f, c))
        i = self.emit(f(self.clipped(pre_i)), "i")
        if self.input_forget:
            fg = ops.subtract(scalar(1, self.dtype), i)
        else:
            fg = f(self.clipped(pre_f))
        c_new = self.emit(ops.add(ops.multiply(fg, c), ops.multiply(i, g(self.clipped(
            pre_c)))), "c")
        if dirn.peep is not None:
            pre_o = ops.add(pre_o, ops.multiply(p_o, c_new))
        o = f(self.clipped(pre_o))
        return self.emit(ops.multiply(o, act_h(c_new)), "h"), c_new

    def gru_step(self, dirn: _Direction, x: Expr, h: Expr,
                 c: None) -> tuple[Expr, None]:
        f, g = dirn.acts
        hs = self.hidden
        x_zr, x_h = self.split(x, [2 * hs], 1, "x_split")
        r_t = dirn.r_t
        if isinstance(r_t, Constant):
            arr = np.asarray(r_t.data)
            r_zr, r_h = Constant.from_numpy(np.asarray(arr[:, :2 * hs], order="C"), self.dtype),\
                Constant.from_numpy(np.asarray(arr[:, 2 * hs:], order="C"), self.dtype)
        else:
            r_zr, r_h = self.split(r_t, [2 * hs], 1, "r_split")
        zr = self.emit(f(self.clipped(ops.add(x_zr, ops.matmul(h, r_zr)))), "zr")
        z, r = self.split(zr, 2, 1, "zr_split")
        if self.linear_before_reset:
            rec = ops.matmul(h, r_h)
            if dirn.r_bias is not None:
                rec = ops.add(rec, dirn.r_bias)
            pre_h = ops.add(x_h, ops.multiply(r, rec))
        else:
            pre_h = ops.add(x_h, ops.matmul(ops.multiply(r, h), r_h))
        hh = g(self.clipped(pre_h))
        # The update (1 - z) hh + z h, written as hh + z (h - hh).
        hh = self.emit(hh, "h_candidate")
        return self.emit(ops.add(hh, ops.multiply(z, ops.subtract(h, hh))), "h"), None

    def rnn_step(self, dirn: _Direction, x: Expr, h: Expr, c: None) -> tuple[Expr, None]:
        (f,) = dirn.acts
        return self.emit(f(self.clipped(self.recurrent(dirn, x, h))), "h"), None


@converter("LSTM", "GRU", "RNN", since=7)
def _recurrent(node: Node) -> list[Expr | None]:
    return _Recurrence(node).run()


__all__: list[str] = []
