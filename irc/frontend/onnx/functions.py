"""ONNX function expansion: an operator without a converter at the model's opset whose
ONNX schema defines a function body (``Gelu``, ``LayerNormalization`` before their
converters' opsets, ...) is converted through that body. The body's nodes are renamed into
the graph (its formal inputs and outputs to the node's, its other values under a prefix
unique to the node), their attribute references resolved to the node's attributes or
the defaults, and converted one by one at the body's own opset; bodies expand into
further bodies up to :data:`_MAX_FUNCTION_DEPTH` deep. A body that depends on the input
types (context-dependent) is built by ONNX for the node's input types when the node is
reached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ...core.diagnostics import IRCError, UnsupportedOperatorError
from ...tir import expr as E
from .protos import ELEM_TYPES, imported_opset, subgraphs
from .registry import lookup, refusal

if TYPE_CHECKING:
    from .importer import GraphImporter, Node

# How deep function bodies may expand into further function bodies.
_MAX_FUNCTION_DEPTH = 8


def convertible(graph: GraphImporter, domain: str, op_type: str, opset: int,
                depth: int = 0) -> bool:
    """Whether irc converts ``op_type``: by a converter, or by expanding the function
    body ONNX defines for it when every operator of that body is convertible (a body
    that depends on the input types is assumed convertible; its operators are checked
    when it is expanded)."""
    if refusal(op_type, domain) is not None:
        return False
    if domain not in ("", "ai.onnx"):
        version = graph.domain_opset(domain)
        return version is not None and lookup(op_type, version, domain) is not None
    if lookup(op_type, opset) is not None:
        return True
    kind = function_kind(graph.onnx, op_type, opset)
    if kind == "context":
        return depth < _MAX_FUNCTION_DEPTH
    if kind != "static" or depth >= _MAX_FUNCTION_DEPTH:
        return False
    body = function_body(graph.onnx, op_type, opset)
    inner = _body_opset(body, opset)
    return all(convertible(graph, n.domain, n.op_type, inner, depth + 1)
               for n in body.node)


def expand(node: Node, depth: int) -> None:
    """Convert ``node`` through the function body ONNX defines for its operator: the
    body's nodes, renamed into this graph (formal inputs and outputs to the node's,
    internal values under the node's name) with attribute references resolved, are
    converted one by one."""
    graph = node.graph
    if depth >= _MAX_FUNCTION_DEPTH or not convertible(
            graph, node.proto.domain, node.op_type, node.opset, depth):
        raise UnsupportedOperatorError(
            f"from_onnx: ONNX node {node.name!r} ({node.op_type}, opset {node.opset}) "
            "has no irc converter and no function body irc can expand",
            hint="irc.frontend.onnx.supported_ops() lists what irc converts")
    kind = function_kind(graph.onnx, node.op_type, node.opset)
    try:
        if kind == "context":
            body = function_body(graph.onnx, node.op_type, node.opset, node.proto,
                                 [_type_proto(node, i) for i in range(node.num_inputs)])
        else:
            body = function_body(graph.onnx, node.op_type, node.opset)
    except IRCError:
        raise
    except Exception as err:  # noqa: BLE001 - onnx's C++ function builders fail in many ways
        raise node.error(f"ONNX could not build the function body of {node.op_type} "
                         f"for these inputs: {type(err).__name__}: {err}") from None
    inner = _body_opset(body, node.opset)
    schema = graph.onnx.defs.get_schema(node.op_type, node.opset, node.proto.domain)
    rename = _function_renaming(node, body)
    for sub in body.node:
        if not convertible(graph, sub.domain, sub.op_type, inner, depth + 1):
            raise UnsupportedOperatorError(
                f"from_onnx: ONNX node {node.name!r} ({node.op_type}) expands to a "
                f"function body using {sub.op_type} (opset {inner}), which irc does not "
                "convert", hint="irc.frontend.onnx.supported_ops() lists what irc "
                "converts")
        graph.convert(_instantiate(graph.onnx, sub, rename, node, body, schema), inner,
                      depth + 1)


def _type_proto(node: Node, i: int) -> Any:
    """ONNX's type of input ``i`` (for function bodies that depend on it)."""
    onnx = node.graph.onnx
    helper = onnx.helper
    if not node.has_input(i):
        return onnx.TypeProto()
    s = node.shape_value(i)
    if s is not None:  # a symbolic shape value: a 0-d or 1-d int64
        return helper.make_tensor_type_proto(7, [] if s.scalar else [len(s.dims)])
    sinfo = node.sinfo(i)
    elem = ELEM_TYPES.get(str(sinfo.dtype))
    if elem is None:
        raise node.error(f"input {i} has dtype {sinfo.dtype}, which ONNX has no type for")
    if sinfo.shape is None:
        return helper.make_tensor_type_proto(elem, None)
    dims = [int(d.value) if isinstance(d, E.IntImm) else str(d) for d in sinfo.shape]
    return helper.make_tensor_type_proto(elem, dims)


def function_kind(onnx: Any, op_type: str, opset: int) -> str | None:
    """``"static"`` when ONNX defines a function body for ``op_type`` at ``opset``,
    ``"context"`` when the body depends on the input types, else None."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except Exception:  # noqa: BLE001 - SchemaError: no such operator at this opset
        return None
    if schema.has_function:
        return "static"
    if schema.has_context_dependent_function:
        return "context"
    return None


def function_body(onnx: Any, op_type: str, opset: int, node: Any = None,
                  input_types: Sequence[Any] = ()) -> Any:
    """The ``FunctionProto`` ONNX defines for ``op_type`` in a model importing ``opset``:
    the newest body version not newer than ``opset`` (else the oldest); for a
    context-dependent body, built for ``node`` and its ``input_types``."""
    schema = onnx.defs.get_schema(op_type, opset, "")
    if node is None:
        versions = sorted(schema.function_opset_versions)
        older = [v for v in versions if v <= opset]
        data = schema.get_function_with_opset_version(older[-1] if older else versions[0])
    else:
        versions = sorted(schema.context_dependent_function_opset_versions)
        older = [v for v in versions if v <= opset]
        data = schema.get_context_dependent_function_with_opset_version(
            older[-1] if older else versions[0], node.SerializeToString(),
            [t.SerializeToString() for t in input_types])
    if isinstance(data, onnx.FunctionProto):
        return data
    body = onnx.FunctionProto()
    body.ParseFromString(data)
    return body


def _body_opset(body: Any, opset: int) -> int:
    """The default-domain opset function ``body`` imports (``opset``, the caller's, when
    it imports none)."""
    version = imported_opset(body, "", "ai.onnx")
    return opset if version is None else version


def _function_renaming(node: Node, body: Any) -> dict[str, str]:
    """Body value names -> graph value names: formal inputs and outputs to the node's
    (absent optional ones to ""), every other value under a prefix unique to the node."""
    rename: dict[str, str] = {}
    for i, formal in enumerate(body.input):
        rename[formal] = node.input_names[i] if i < len(node.input_names) else ""
    for i, formal in enumerate(body.output):
        rename[formal] = node.output_names[i] if i < len(node.output_names) else ""
    prefix = f"{node.output_names[0] if node.output_names else node.op_type}/{node.op_type}/"
    for sub in body.node:
        for name in sub.output:
            if name and name not in rename:
                rename[name] = prefix + name
    return rename


def _instantiate(onnx: Any, sub: Any, rename: dict[str, str], node: Node, body: Any,
                 schema: Any) -> Any:
    """A copy of body node ``sub`` renamed into the graph, with its attribute references
    (``ref_attr_name``) replaced by the calling node's attributes, else the function's or
    the operator's defaults (an attribute with none of them is left out, as ONNX does)."""
    out = onnx.NodeProto()
    out.CopyFrom(sub)
    del out.input[:]
    out.input.extend(rename.get(n, n) if n else "" for n in sub.input)
    del out.output[:]
    out.output.extend(rename.get(n, n) if n else "" for n in sub.output)
    out.name = f"{node.name}/{sub.name or sub.op_type}"
    caller = {a.name: a for a in node.proto.attribute}
    defaults = {a.name: a for a in body.attribute_proto}
    del out.attribute[:]
    for a in sub.attribute:
        if not a.ref_attr_name:
            out.attribute.append(_renamed_subgraphs(onnx, a, rename))
            continue
        ref = a.ref_attr_name
        src = caller.get(ref) or defaults.get(ref)
        if src is None and ref in schema.attributes:
            default = schema.attributes[ref].default_value
            src = default if default.type != 0 else None
        if src is None:
            continue
        new = onnx.AttributeProto()
        new.CopyFrom(src)
        new.name = a.name
        out.attribute.append(new)
    return out


def _renamed_subgraphs(onnx: Any, attr: Any, rename: dict[str, str]) -> Any:
    """``attr`` with the values its subgraphs read from the enclosing function body
    renamed as the body's nodes are (a copy; ``attr`` itself when it holds no graph)."""
    if not subgraphs(attr):
        return attr
    out = onnx.AttributeProto()
    out.CopyFrom(attr)
    for g in subgraphs(out):
        _rename_free(g, rename)
    return out


def _rename_free(graph: Any, rename: dict[str, str]) -> None:
    """Rename in place the names ``graph`` (and its subgraphs) reads from outside it."""
    local = {vi.name for vi in graph.input} | {t.name for t in graph.initializer} | {
        o for n in graph.node for o in n.output}
    outer = {k: v for k, v in rename.items() if k not in local}
    for n in graph.node:
        for i, name in enumerate(n.input):
            if name in outer:
                n.input[i] = outer[name]
        for a in n.attribute:
            for g in subgraphs(a):
                _rename_free(g, outer)
    for vi in graph.output:  # an output may pass an outer value through
        if vi.name in outer and vi.name not in local:
            vi.name = outer[vi.name]
