"""Errors a user of irc.frontend.nn can cause: they are irc errors that say what is wrong,
where (method, layer) and what to do."""

import pytest

import irc
from irc.frontend import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.conv = nn.Conv2D(3, 4, 3)
        self.bn = nn.BatchNorm2D(4)
        self.blocks = nn.ModuleList([nn.Linear(4, 4)])

    def forward(self, x):
        return self.fc1(x)

    def convolve(self, x):
        return self.bn(self.conv(x))

    def nested(self, x):
        return self.blocks[0](x)

    def returns_int(self, x):
        return 3

    def softmax_of_ints(self, x):
        return nn.op.softmax(x.astype("int32"))

    def two_args(self, x, y):
        return x + y

    def star_args(self, *xs):
        return xs[0]


def export(method, **spec):
    return Model().export_ir({method: spec})


def f32(*shape):
    return nn.spec.Tensor(shape, "float32")


def test_shape_mismatch_names_the_layer_and_the_operator():
    with pytest.raises(irc.IRTypeError, match=r"in layer 'fc1' \(Linear\): R\.matmul: inner "
                                              r"dimensions differ: \(1, 783\) @ \(784, 256\)"):
        export("forward", x=f32(1, 783))


def test_wrong_rank_input_names_the_layer():
    with pytest.raises(irc.IRTypeError, match=r"in layer 'conv' \(Conv2D\): Conv2D expects an "
                                              r"input of rank 4 \(NCHW\)"):
        export("convolve", x=f32(1, 3, 8))
    with pytest.raises(irc.IRTypeError, match=r"in layer 'blocks\.0' \(Linear\): R\.matmul"):
        export("nested", x=f32(2, 5))


def test_dtype_mismatch_names_the_layer():
    with pytest.raises(irc.IRTypeError, match=r"in layer 'fc1' \(Linear\): R\.matmul: dtypes "
                                              r"int32 and float32 differ"):
        export("forward", x=nn.spec.Tensor((1, 784), "int32"))


def test_operator_error_in_the_method_itself_names_the_method():
    with pytest.raises(irc.IRTypeError, match=r"in Model\.softmax_of_ints: R\.nn\.softmax: the "
                                              r"input must have a floating-point dtype") as info:
        export("softmax_of_ints", x=f32(2, 2))
    assert "R.astype" in str(info.value)  # the operator's hint is kept


def test_spec_that_does_not_match_the_signature():
    with pytest.raises(nn.NNError, match=r"spec of 'forward' does not match Model\.forward\(x\):"
                                         r" it lacks 'x'; 'y' is not an argument"):
        export("forward", y=f32(1, 784))
    with pytest.raises(nn.NNError, match=r"it lacks 'y'"):
        export("two_args", x=f32(1))
    with pytest.raises(nn.NNError, match=r"named arguments, not \*xs"):
        export("star_args", x=f32(1))
    with pytest.raises(nn.NNError, match=r"argument 'x' must be nn\.spec\.Tensor"):
        export("forward", x=(1, 784))
    with pytest.raises(nn.NNError, match="names method 'backward', which Model does not have"):
        Model().export_ir({"backward": {"x": f32(1)}})
    with pytest.raises(nn.NNError, match="export_ir needs a spec"):
        Model().export_ir({})


def test_bad_return_value():
    with pytest.raises(nn.NNError, match="method 'returns_int' must return an nn.Tensor"):
        export("returns_int", x=f32(1))


def test_bad_spec_entries():
    with pytest.raises(nn.NNError, match="dimension -2"):
        nn.spec.Tensor((1, -2))
    with pytest.raises(nn.NNError, match="must be an identifier"):
        nn.spec.Tensor(("1n", 2))
    with pytest.raises(nn.NNError, match="dtype"):
        nn.spec.Tensor((1,), "floaty")
    with pytest.raises(nn.NNError, match="int64"):
        nn.spec.Int("int32")


def test_argument_named_like_a_parameter():
    class M(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

        def forward(self, fc_weight):
            return self.fc(fc_weight)

    with pytest.raises(nn.NNError, match="argument 'fc_weight' of 'forward' has the name of a "
                                         "parameter"):
        M().export_ir({"forward": {"fc_weight": f32(1, 2)}})


def test_parameter_paths_that_collide_after_flattening():
    class M(nn.Module):
        def __init__(self):
            self.a_b = nn.Parameter((1,))
            self.a = nn.Module()
            self.a.b = nn.Parameter((1,))

        def forward(self, x):
            return x

    with pytest.raises(nn.NNError, match="a_b and a.b would both be exported as 'a_b'"):
        M().export_ir({"forward": {"x": f32(1)}})


def test_layer_created_inside_forward_is_not_part_of_the_model():
    class M(nn.Module):
        def forward(self, x):
            return nn.Linear(2, 2)(x)

    with pytest.raises(nn.NNError, match=r"layer Linear \(not an attribute of the exported "
                                         r"model\): a Parameter \(2, 2\) float32 is used in "
                                         r"'forward' but is not an attribute"):
        M().export_ir({"forward": {"x": f32(1, 2)}})


def test_tensor_from_another_method():
    class M(nn.Module):
        def forward(self, x):
            self.saved = nn.op.relu(x)
            return self.saved

        def reuse(self, x):
            return x + self.saved

    spec = {"forward": {"x": f32(2)}, "reuse": {"x": f32(2)}}
    with pytest.raises(nn.NNError, match="created while exporting method 'forward' is used "
                                         "while exporting 'reuse'"):
        M().export_ir(spec)


def test_calling_outside_an_export():
    with pytest.raises(nn.NNError, match="Model was called outside an export"):
        Model()(1)
    with pytest.raises(nn.NNError, match="nn.op.relu can only be used while a model is "
                                         "exported"):
        nn.op.relu(None)


def test_bad_operands():
    class M(nn.Module):
        def forward(self, x):
            return nn.op.add(x, "one")

    with pytest.raises(nn.NNError, match="operands must be nn.Tensors or numbers"):
        M().export_ir({"forward": {"x": f32(2)}})

    class N(nn.Module):
        def forward(self, x):
            return x + 0.5

    with pytest.raises(nn.NNError, match="0.5 does not fit the int32 tensor"):
        N().export_ir({"forward": {"x": nn.spec.Tensor((2,), "int32")}})


def test_layer_configuration_errors():
    with pytest.raises(nn.NNError, match="divisible by groups 2"):
        nn.Conv2D(3, 4, 3, groups=2)
    with pytest.raises(nn.NNError, match="kernel_size must be an int or a pair"):
        nn.Conv2D(3, 4, (3, 3, 3))
    with pytest.raises(nn.NNError, match="data_layout"):
        nn.Conv2D(3, 4, 3, data_layout="CHWN")
    with pytest.raises(nn.NNError, match="divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(nn.NNError, match=r"p must be in \[0, 1\)"):
        nn.Dropout(1.5)
    with pytest.raises(nn.NNError, match="in_features must be a positive int"):
        nn.Linear(0, 4)
    with pytest.raises(nn.NNError, match="ModuleList has no forward"):
        nn.ModuleList([nn.ReLU()]).export_ir({"forward": {"x": f32(1)}})
    with pytest.raises(nn.NNError, match="index 3 is out of range"):
        nn.ModuleList([nn.ReLU()])[3]


def test_errors_are_irc_errors():
    assert issubclass(nn.NNError, irc.IRCError)
