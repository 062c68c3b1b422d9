"""nn.Module structure and values: parameter naming in nested modules, containers, weight
tying, state dicts, dtype conversion, seeded initialization, parameter data."""

import numpy as np
import pytest

from irc.frontend import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(),
                                 nn.Linear(2 * width, width))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(11, 4)
        self.blocks = nn.ModuleList([Block(4) for _ in range(2)])
        self.scale = nn.Parameter((4,), "float32", init="ones")
        self.head = nn.Linear(4, 11, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(x * self.scale)


def test_nested_parameter_paths_and_exported_names():
    model = Tower()
    paths = [n for n, _ in model.named_parameters()]
    assert paths == [
        "embed.weight",
        "blocks.0.norm.weight", "blocks.0.norm.bias",
        "blocks.0.mlp.0.weight", "blocks.0.mlp.0.bias",
        "blocks.0.mlp.2.weight", "blocks.0.mlp.2.bias",
        "blocks.1.norm.weight", "blocks.1.norm.bias",
        "blocks.1.mlp.0.weight", "blocks.1.mlp.0.bias",
        "blocks.1.mlp.2.weight", "blocks.1.mlp.2.bias",
        "scale", "head.weight",
    ]
    mod, params = model.export_ir({"forward": {"ids": nn.spec.Tensor((2, 3), "int64")}})
    assert [n for n, _ in params] == [p.replace(".", "_") for p in paths]
    func = mod["forward"]
    assert [p.name_hint for p in func.params[1:]] == [n for n, _ in params]
    assert [p for _, p in params] == list(model.parameters())
    assert tuple(d.value for d in func.ret_struct_info.shape) == (2, 3, 11)


def test_named_modules_and_children():
    model = Tower()
    names = [n for n, _ in model.named_modules()]
    assert names[:4] == ["", "embed", "blocks", "blocks.0"]
    assert "blocks.1.mlp.1" in names
    assert [n for n, _ in model.named_children()] == ["embed", "blocks", "head"]
    assert len(model.blocks) == 2 and model.blocks[-1] is model.blocks[1]
    assert isinstance(model.blocks[0].mlp[1], nn.GELU)


def test_container_at_the_root_gets_identifier_names():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    mod, params = model.export_ir({"forward": {"x": nn.spec.Tensor((1, 3), "float32")}})
    assert [n for n, _ in params] == ["param_0_weight", "param_0_bias", "param_2_weight",
                                      "param_2_bias"]
    assert [n for n, _ in model.named_parameters()][0] == "0.weight"
    assert tuple(d.value for d in mod["forward"].ret_struct_info.shape) == (1, 2)


def test_tied_parameters_are_exported_once():
    class Tied(nn.Module):
        def __init__(self):
            self.embed = nn.Embedding(10, 4)
            self.out = nn.Linear(4, 10, bias=False)
            self.out.weight = self.embed.weight

        def forward(self, ids):
            return self.out(self.embed(ids))

    model = Tied()
    assert [n for n, _ in model.named_parameters()] == ["embed.weight"]
    mod, params = model.export_ir({"forward": {"ids": nn.spec.Tensor((3,), "int64")}})
    assert [p.name_hint for p in mod["forward"].params] == ["ids", "embed_weight"]


def test_state_dict_round_trip_and_both_key_spellings():
    a = Tower().init_random(seed=1)
    b = Tower()
    state = a.state_dict()
    assert set(state) == {n for n, _ in a.named_parameters()}
    b.load_state_dict(state)
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(pa.numpy(), pb.numpy(), err_msg=name)
    # Exported names work as keys too, and dtypes are converted.
    c = Tower()
    c.load_state_dict({n.replace(".", "_"): v.astype("float64") for n, v in state.items()})
    assert c.head.weight.numpy().dtype == np.float32
    np.testing.assert_array_equal(c.head.weight.numpy(), state["head.weight"])
    # state_dict returns copies.
    state["scale"][:] = 7.0
    assert not np.any(a.scale.numpy() == 7.0)


def test_load_state_dict_strictness():
    model = nn.Linear(3, 2)
    with pytest.raises(nn.NNError, match="missing bias.*unexpected extra"):
        model.load_state_dict({"weight": np.zeros((2, 3)), "extra": np.zeros(1)})
    model.load_state_dict({"weight": np.ones((2, 3))}, strict=False)
    assert model.bias.data is None and model.weight.numpy().sum() == 6
    with pytest.raises(nn.NNError, match=r"parameter weight: .*shape \(2, 3\).*\(3, 2\)"):
        model.load_state_dict({"weight": np.zeros((3, 2)), "bias": np.zeros(2)})


def test_init_random_is_seeded_and_follows_init_kinds():
    a = nn.Sequential(nn.Linear(100, 8), nn.BatchNorm2D(8)).init_random(seed=3)
    b = nn.Sequential(nn.Linear(100, 8), nn.BatchNorm2D(8)).init_random(seed=3)
    c = nn.Sequential(nn.Linear(100, 8), nn.BatchNorm2D(8)).init_random(seed=4)
    np.testing.assert_array_equal(a[0].weight.numpy(), b[0].weight.numpy())
    assert not np.array_equal(a[0].weight.numpy(), c[0].weight.numpy())
    w = a[0].weight.numpy()
    assert w.dtype == np.float32 and np.abs(w).max() <= 0.1 and w.std() > 0.02
    np.testing.assert_array_equal(a[1].running_var.numpy(), np.ones(8, "float32"))
    np.testing.assert_array_equal(a[1].running_mean.numpy(), np.zeros(8, "float32"))
    np.testing.assert_array_equal(a[1].weight.numpy(), np.ones(8, "float32"))


def test_to_dtype_converts_float_parameters_and_their_data():
    model = Tower().init_random(0)
    before = model.head.weight.numpy().copy()
    assert model.to("float16") is model
    assert {p.dtype for p in model.parameters()} == {"float16"}
    assert model.head.weight.numpy().dtype == np.float16
    np.testing.assert_allclose(model.head.weight.numpy(), before, rtol=1e-3, atol=1e-3)
    with pytest.raises(nn.NNError, match="not a floating-point dtype"):
        model.to("int32")


def test_parameter_data_and_numpy():
    p = nn.Parameter((2, 3), "float32")
    assert p.shape == (2, 3) and p.dtype == "float32" and p.data is None
    with pytest.raises(nn.NNError, match="has no data.*init_random"):
        p.numpy()
    p.data = np.arange(6.0).reshape(2, 3)
    assert p.numpy().dtype == np.float32 and p.numpy()[1, 2] == 5.0
    with pytest.raises(nn.NNError, match=r"shape \(2, 3\) to an array of shape \(3, 2\)"):
        p.data = np.zeros((3, 2))
    q = nn.Parameter((2,), "int32")
    with pytest.raises(nn.NNError, match="would truncate"):
        q.data = np.array([0.5, 1.5])
    with pytest.raises(nn.NNError, match="shape must be non-negative ints"):
        nn.Parameter(("n", 4))
    with pytest.raises(nn.NNError, match="dtype"):
        nn.Parameter((4,), "float33")


def test_state_dict_needs_data():
    with pytest.raises(nn.NNError, match=r"parameter weight \(2, 3\) float32 has no data"):
        nn.Linear(3, 2).state_dict()


def test_repr_shows_the_tree():
    text = repr(Tower())
    assert text.startswith("Tower(\n  (embed): Embedding(11, 4)")
    assert "(0): Linear(in_features=4, out_features=8, bias=True)" in text
