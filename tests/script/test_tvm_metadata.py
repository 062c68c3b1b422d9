"""Apache TVM's metadata section (``metadata = tvm.ir.load_json(\"\"\"...\"\"\")``, printed by
``script(show_meta=True)``): constants in both of TVM's layouts (tensors in
``b64ndarrays``, as TVM up to 0.19 writes them, and tensor nodes stored as bytes, as
later versions do), other kinds kept as references, and damaged sections as parse
errors naming the problem."""

from __future__ import annotations

import base64
import json
import struct

import numpy as np
import pytest

import irc
from irc.script_parser.tvm_json import encode_tvm_tensor

MODULE = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((2, 3), dtype="float32") = R.add(x, metadata["relax.expr.Constant"][0])
            gv = R.multiply(lv, metadata["relax.expr.Constant"][1])
            R.output(gv)
        return gv

metadata = tvm.ir.load_json("""{TEXT}""")
'''

W0 = np.arange(6, dtype="float32").reshape(2, 3) / 4
W1 = np.array([1.5, -2.0, 0.25], dtype="float32")


def _old_layout(arrays) -> dict:
    """TVM <= 0.19: Constant.data is an index into b64ndarrays; a string-keyed map."""
    nodes = [{"type_key": ""},
             {"type_key": "Map", "keys": ["relax.expr.Constant"], "data": [2]},
             {"type_key": "Array", "data": list(range(3, 3 + len(arrays)))}]
    for i in range(len(arrays)):
        nodes.append({"type_key": "relax.expr.Constant",
                      "attrs": {"_checked_type_": "0", "data": str(i), "span": "0",
                                "struct_info_": "0"}})
    return {"root": 1, "nodes": nodes,
            "b64ndarrays": [base64.b64encode(encode_tvm_tensor(a)).decode() for a in arrays],
            "attrs": {"tvm_version": "0.15.0"}}


def _new_layout(arrays) -> dict:
    """Later TVM: tensors are nodes stored as (length-prefixed) bytes; a map of string
    nodes; a second kind besides the constants."""
    nodes = [{"type_key": ""},
             {"type_key": "ffi.Map", "data": [2, 3, 4, 5]},
             {"type_key": "ffi.String", "repr_str": "relax.expr.Constant"},
             {"type_key": "ffi.Array", "data": [6 + 2 * i for i in range(len(arrays))]},
             {"type_key": "ffi.String", "repr_str": "relax.expr.ExternFunc"},
             {"type_key": "ffi.Array", "data": [0]}]
    for i, a in enumerate(arrays):
        blob = encode_tvm_tensor(a)
        nodes.append({"type_key": "relax.expr.Constant",
                      "attrs": {"data": str(7 + 2 * i), "span": "null",
                                "struct_info_": "null"}})
        nodes.append({"type_key": "ffi.Tensor",
                      "repr_b64": base64.b64encode(struct.pack("<Q", len(blob)) + blob)
                      .decode()})
    return {"root": 1, "nodes": nodes, "b64ndarrays": [],
            "attrs": {"tvm_version": "0.22.0"}}


def _text(graph: dict) -> str:
    return MODULE.replace("{TEXT}", json.dumps(graph, indent=2))


@pytest.mark.parametrize("layout", [_old_layout, _new_layout])
def test_tvm_metadata_constants_are_read_and_run(layout):
    mod = irc.parse(_text(layout([W0, W1])))
    ex = irc.compile(mod, "llvm")
    x = np.random.rand(2, 3).astype("float32")
    out = irc.vm.VirtualMachine(ex)["main"](x).numpy()
    np.testing.assert_array_equal(out, (x + W0) * W1)


def test_other_dtypes_and_kinds():
    graph = _new_layout([np.array([[1, -2]], dtype="int64"), np.array([True, False])])
    from irc.script_parser.tvm_json import decode_tvm_json

    tables = decode_tvm_json(json.dumps(graph), None)
    c0, c1 = tables["relax.expr.Constant"]
    assert c0.data.dtype == np.int64 and c0.data.tolist() == [[1, -2]]
    assert str(c0.struct_info.dtype) == "int64"
    assert c1.data.tolist() == [True, False] and str(c1.struct_info.dtype) == "bool"
    assert len(tables["relax.expr.ExternFunc"]) == 1


def _damaged(change):
    graph = _old_layout([W0, W1])
    change(graph)
    return _text(graph)


def _cut_tensor(g):
    g["b64ndarrays"][0] = base64.b64encode(encode_tvm_tensor(W0)[:40]).decode()


def _bad_magic(g):
    g["b64ndarrays"][0] = base64.b64encode(b"\0" * 8 + encode_tvm_tensor(W0)[8:]).decode()


@pytest.mark.parametrize("text, message", [
    (MODULE.replace("{TEXT}", "{not json"), "the metadata JSON is malformed"),
    (MODULE.replace("{TEXT}", "[1, 2]"), "not a TVM node graph"),
    (_damaged(lambda g: g.update(root=2)), "the root is a 'Array'"),
    (_damaged(lambda g: g["nodes"][3]["attrs"].update(data="9")), "names tensor '9'"),
    (_damaged(_cut_tensor), "truncated"),
    (_damaged(_bad_magic), "is not a TVM tensor"),
    (_damaged(lambda g: g["nodes"][2].update(data=[3, 99])), "node 99 does not exist"),
    (_damaged(lambda g: g["b64ndarrays"].__setitem__(0, 5)), "not a base64 string"),
    (MODULE.replace('tvm.ir.load_json("""{TEXT}""")', "tvm.ir.load_json(1, 2)"),
     "takes one string"),
])
def test_a_damaged_section_is_a_parse_error(text, message):
    with pytest.raises(irc.IRParseError) as info:
        irc.parse(text)
    assert message in str(info.value), str(info.value)
    assert "metadata = tvm.ir.load_json" in str(info.value)  # points at the section
