"""The zoo's ResNet exported to ONNX computes what the zoo's reference computes (it is the
ONNX Runtime peer of the dispatch benchmark), and bad requests are irc errors."""

import numpy as np
import pytest

from irc.core.diagnostics import IRCError
from irc.testing.models import get_model
from irc.testing.models.onnx_export import resnet_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("depth", [18, 50])
def test_onnx_resnet_matches_the_reference(depth):
    model = get_model(f"resnet{depth}", image_size=32, num_classes=10)
    proto = resnet_onnx(model.state_dict(), depth, model.input_shape)
    ops = {n.op_type for n in proto.graph.node}
    assert ops == {"Conv", "BatchNormalization", "Relu", "MaxPool", "Add",
                   "GlobalAveragePool", "Flatten", "Gemm"}
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = model.random_input()
    got = sess.run(None, {"x": x})[0]
    want = model.reference(x)
    assert got.shape == (1, 10)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_bad_requests_are_irc_errors():
    state = get_model("resnet18", image_size=32, num_classes=10).state_dict()
    with pytest.raises(IRCError, match="NCHW images with 3 channels"):
        resnet_onnx(state, 18, (1, 32, 32, 3))
    with pytest.raises(IRCError, match="has no 'fc.weight'"):
        resnet_onnx({k: v for k, v in state.items() if k != "fc.weight"}, 18,
                    (1, 3, 32, 32))
