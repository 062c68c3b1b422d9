"""A BERT-style encoder and its numpy reference forward.

Input: token ids, int64 (batch, seq_len). Token embeddings (a lookup, ``R.take``) plus
learned position embeddings (the first ``seq_len`` rows of the position table), then layer
norm; no token-type embeddings and no attention mask (every position attends to every
position). Then ``num_layers`` post-norm transformer layers, as in the original BERT:
``x = LayerNorm(x + Attention(x))``, ``x = LayerNorm(x + FFN(x))``, where attention
projects to queries, keys and values, splits ``hidden`` into ``num_heads`` heads
(``reshape`` + ``permute_dims``), takes ``softmax(q @ k^T / sqrt(head_dim)) @ v`` per head
(batched ``matmul``) and merges and projects back; the FFN is ``Linear(hidden, ffn)``,
exact GELU, ``Linear(ffn, hidden)``. The output is the last hidden state (batch, seq_len,
hidden). Defaults: 4 layers, hidden 256, 4 heads, FFN 1024, sequence 128.
"""

from __future__ import annotations

import numpy as np

from ...frontend import nn
from . import reference_ops as R

_EPS = 1e-12  # BERT's layer-norm epsilon


class SelfAttention(nn.Module):
    """Multi-head self-attention with output projection."""

    def __init__(self, hidden: int, num_heads: int):
        super().__init__()
        if hidden % num_heads:
            raise nn.NNError(f"SelfAttention: hidden {hidden} must be divisible by "
                             f"num_heads {num_heads}")
        self.num_heads, self.head_dim = num_heads, hidden // num_heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)

    def _heads(self, x: nn.Tensor, batch: int, seq: int) -> nn.Tensor:
        # (b, s, hidden) -> (b, heads, s, head_dim)
        return nn.op.permute_dims(nn.op.reshape(x, (batch, seq, self.num_heads,
                                                    self.head_dim)), (0, 2, 1, 3))

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """``softmax(q k^T / sqrt(d)) v`` per head, heads merged and projected."""
        batch, seq, hidden = x.shape
        q = self._heads(self.query(x), batch, seq)
        k = nn.op.permute_dims(self._heads(self.key(x), batch, seq), (0, 1, 3, 2))
        v = self._heads(self.value(x), batch, seq)
        scores = nn.op.matmul(q, k) * (1.0 / float(np.sqrt(self.head_dim)))
        ctx = nn.op.matmul(nn.op.softmax(scores, axis=-1), v)
        ctx = nn.op.reshape(nn.op.permute_dims(ctx, (0, 2, 1, 3)), (batch, seq, hidden))
        return self.output(ctx)


class EncoderLayer(nn.Module):
    """Post-norm transformer layer: attention and FFN, each with residual and LayerNorm."""

    def __init__(self, hidden: int, num_heads: int, ffn: int):
        super().__init__()
        self.attention = SelfAttention(hidden, num_heads)
        self.attention_norm = nn.LayerNorm(hidden, eps=_EPS)
        self.intermediate = nn.Linear(hidden, ffn)
        self.act = nn.GELU()
        self.ffn_output = nn.Linear(ffn, hidden)
        self.ffn_norm = nn.LayerNorm(hidden, eps=_EPS)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """The layer."""
        x = self.attention_norm(x + self.attention(x))
        return self.ffn_norm(x + self.ffn_output(self.act(self.intermediate(x))))


class BertEncoder(nn.Module):
    """Embeddings and ``num_layers`` encoder layers; ``forward(input_ids)`` takes int64
    token ids (batch, seq) with ``seq <= max_position`` and returns (batch, seq, hidden)."""

    def __init__(self, vocab_size: int = 30522, hidden: int = 256, num_layers: int = 4,
                 num_heads: int = 4, ffn: int = 1024, max_position: int = 512):
        super().__init__()
        self.token_embeddings = nn.Embedding(vocab_size, hidden)
        self.position_embeddings = nn.Parameter((max_position, hidden), "float32",
                                                init="normal")
        self.embedding_norm = nn.LayerNorm(hidden, eps=_EPS)
        self.layers = nn.Sequential(*[EncoderLayer(hidden, num_heads, ffn)
                                      for _ in range(num_layers)])

    def forward(self, input_ids: nn.Tensor) -> nn.Tensor:
        """Embed, add positions, normalize, run the layers."""
        seq = input_ids.shape[1]
        positions = nn.op.strided_slice(self.position_embeddings, [0], [0], [seq])
        x = self.embedding_norm(self.token_embeddings(input_ids) + positions)
        return self.layers(x)


def build_bert(vocab_size: int = 30522, hidden: int = 256, num_layers: int = 4,
               num_heads: int = 4, ffn: int = 1024, max_position: int = 512,
               seed: int = 0) -> BertEncoder:
    """A BERT-style encoder with seeded random weights; layer norms get non-trivial
    affine parameters (gamma ~ U(0.5, 1.5), beta ~ N(0, 0.1)) and embeddings a scale of
    0.1 so that residual sums stay near unit size."""
    model = BertEncoder(vocab_size, hidden, num_layers, num_heads, ffn,
                        max_position).init_random(seed)
    rng = np.random.default_rng(seed + 1)
    for _, m in model.named_modules():
        if isinstance(m, nn.LayerNorm):
            m.weight.data = rng.uniform(0.5, 1.5, m.weight.shape).astype("float32")
            m.bias.data = rng.normal(0.0, 0.1, m.bias.shape).astype("float32")
    for p in (model.token_embeddings.weight, model.position_embeddings):
        p.data = p.numpy() * np.float32(0.1)
    return model


def export_bert(model: BertEncoder, batch_size: int = 1, seq_len: int = 128) -> tuple:
    """``(mod, params, input_shape)``: ``model.forward(input_ids)`` exported for int64
    token ids of shape (batch_size, seq_len)."""
    max_position = model.position_embeddings.shape[0]
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or not \
            1 <= seq_len <= max_position:
        raise nn.NNError(f"BERT encoder: seq_len must be an int in [1, {max_position}] (the "
                         f"learned positions), got {seq_len!r}")
    shape = (batch_size, seq_len)
    mod, params = model.export_ir({"forward": {"input_ids": nn.spec.Tensor(shape, "int64")}})
    return mod, params, shape


def get_bert(batch_size: int = 1, seq_len: int = 128, vocab_size: int = 30522,
             hidden: int = 256, num_layers: int = 4, num_heads: int = 4, ffn: int = 1024,
             seed: int = 0) -> tuple:
    """``(mod, params, input_shape)`` of a seeded encoder's exported
    ``forward(input_ids)``; the input is int64 token ids of shape (batch, seq_len)."""
    model = build_bert(vocab_size, hidden, num_layers, num_heads, ffn, seed=seed)
    return export_bert(model, batch_size, seq_len)


def bert_reference(state: dict[str, np.ndarray], input_ids: np.ndarray, num_heads: int = 4,
                   dtype: str = "float64") -> np.ndarray:
    """The encoder's forward in numpy from a state dict, computed in ``dtype``; the layer
    count and sizes are read from the state dict's shapes."""
    s = R.as_compute(state, dtype)
    batch, seq = input_ids.shape
    hidden = s["token_embeddings.weight"].shape[1]
    head_dim = hidden // num_heads
    x = s["token_embeddings.weight"][input_ids] + s["position_embeddings"][:seq]
    x = R.layer_norm(x, s, "embedding_norm", _EPS)
    i = 0
    while f"layers.{i}.attention.query.weight" in s:
        p = f"layers.{i}"

        def heads(t: np.ndarray) -> np.ndarray:
            return t.reshape(batch, seq, num_heads, head_dim).transpose(0, 2, 1, 3)

        q, k, v = (heads(R.linear(x, s, f"{p}.attention.{n}")) for n in ("query", "key",
                                                                         "value"))
        probs = R.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_dim), axis=-1)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        x = R.layer_norm(x + R.linear(ctx, s, f"{p}.attention.output"), s,
                         f"{p}.attention_norm", _EPS)
        h = R.gelu(R.linear(x, s, f"{p}.intermediate"))
        x = R.layer_norm(x + R.linear(h, s, f"{p}.ffn_output"), s, f"{p}.ffn_norm", _EPS)
        i += 1
    return x


__all__ = ["BertEncoder", "EncoderLayer", "SelfAttention", "build_bert", "export_bert",
           "get_bert", "bert_reference"]
