"""The part of ONNX's file format the embedder's graphs use, written with protobuf alone.

An `.onnx` file is a serialised `onnx.ModelProto` (onnx/onnx.proto). The `onnx` Python package (31 MB, most
of it its operator test data) is only a way of writing those messages; this module declares the few
messages and fields the graph builder needs, with their field numbers from onnx.proto (IR version 8), in a
private protobuf descriptor pool, and builds them. protobuf comes with onnxruntime, so building a graph
needs nothing onnxruntime does not already bring. Fields are wire-compatible with onnx.proto: its enums
(`data_type`, `elem_type`, attribute `type`) are varints, declared here as int32; `TypeProto.value`'s
oneof holds only `tensor_type`.

The result is checked where it matters: onnxruntime loads every graph built here, and the embedder's
vectors match sentence-transformers' reference (tests/adapters/test_local_embedder.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

IR_VERSION = 8  # ONNX IR of opset 17 (onnx/onnx.proto: IR_VERSION_2021_7_30)
# TensorProto.DataType and AttributeProto.AttributeType values (onnx/onnx.proto)
FLOAT, INT8, INT32, INT64 = 1, 3, 6, 7
_DTYPES = {
    np.dtype(np.float32): FLOAT,
    np.dtype(np.int8): INT8,
    np.dtype(np.int32): INT32,
    np.dtype(np.int64): INT64,
}
_ATTR_FLOAT, _ATTR_INT, _ATTR_STRING, _ATTR_FLOATS, _ATTR_INTS = 1, 2, 3, 6, 7

_T = Any  # the message classes are built at run time
# message name → fields (name, number, type, repeated, message type)
_SCHEMA: dict[str, list[tuple[str, int, str, bool, str | None]]] = {
    "TensorProto": [
        ("dims", 1, "int64", True, None),
        ("data_type", 2, "int32", False, None),
        ("name", 8, "string", False, None),
        ("raw_data", 9, "bytes", False, None),
    ],
    "TensorShapeProto": [("dim", 1, "message", True, "TensorShapeProto.Dimension")],
    "TensorShapeProto.Dimension": [
        ("dim_value", 1, "int64", False, None),
        ("dim_param", 2, "string", False, None),
    ],
    "TypeProto": [("tensor_type", 1, "message", False, "TypeProto.Tensor")],
    "TypeProto.Tensor": [
        ("elem_type", 1, "int32", False, None),
        ("shape", 2, "message", False, "TensorShapeProto"),
    ],
    "ValueInfoProto": [("name", 1, "string", False, None), ("type", 2, "message", False, "TypeProto")],
    "AttributeProto": [
        ("name", 1, "string", False, None),
        ("f", 2, "float", False, None),
        ("i", 3, "int64", False, None),
        ("s", 4, "bytes", False, None),
        ("floats", 7, "float", True, None),
        ("ints", 8, "int64", True, None),
        ("type", 20, "int32", False, None),
    ],
    "NodeProto": [
        ("input", 1, "string", True, None),
        ("output", 2, "string", True, None),
        ("name", 3, "string", False, None),
        ("op_type", 4, "string", False, None),
        ("attribute", 5, "message", True, "AttributeProto"),
        ("domain", 7, "string", False, None),
    ],
    "GraphProto": [
        ("node", 1, "message", True, "NodeProto"),
        ("name", 2, "string", False, None),
        ("initializer", 5, "message", True, "TensorProto"),
        ("input", 11, "message", True, "ValueInfoProto"),
        ("output", 12, "message", True, "ValueInfoProto"),
    ],
    "OperatorSetIdProto": [("domain", 1, "string", False, None), ("version", 2, "int64", False, None)],
    "StringStringEntryProto": [("key", 1, "string", False, None), ("value", 2, "string", False, None)],
    "ModelProto": [
        ("ir_version", 1, "int64", False, None),
        ("producer_name", 2, "string", False, None),
        ("graph", 7, "message", False, "GraphProto"),
        ("opset_import", 8, "message", True, "OperatorSetIdProto"),
        ("metadata_props", 14, "message", True, "StringStringEntryProto"),
    ],
}
_classes: dict[str, _T] = {}


def message(name: str) -> _T:
    """The message class `name` (e.g. "ModelProto"), declared on first use."""
    if not _classes:
        _declare()
    return _classes[name]


def _declare() -> None:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    kinds = descriptor_pb2.FieldDescriptorProto
    types = {
        "int64": kinds.TYPE_INT64,
        "int32": kinds.TYPE_INT32,
        "float": kinds.TYPE_FLOAT,
        "string": kinds.TYPE_STRING,
        "bytes": kinds.TYPE_BYTES,
        "message": kinds.TYPE_MESSAGE,
    }
    file = descriptor_pb2.FileDescriptorProto(
        name="quarry/onnx_subset.proto", package="onnx", syntax="proto2"
    )
    declared: dict[str, Any] = {}
    for full in _SCHEMA:  # a nested message ("TypeProto.Tensor") follows its parent in _SCHEMA
        parent, _, leaf = full.rpartition(".")
        holder = declared[parent].nested_type if parent else file.message_type
        declared[full] = holder.add(name=leaf)
    for full, fields in _SCHEMA.items():
        for name, number, kind, repeated, target in fields:
            declared[full].field.add(
                name=name,
                number=number,
                type=types[kind],
                label=kinds.LABEL_REPEATED if repeated else kinds.LABEL_OPTIONAL,
                type_name=f".onnx.{target}" if target else None,
            )
    pool = descriptor_pool.DescriptorPool()  # private: never clashes with the onnx package's own messages
    pool.Add(file)
    for full in _SCHEMA:
        _classes[full] = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"onnx.{full}"))


def tensor(name: str, array: np.ndarray) -> _T:
    """An initializer: the array's bytes as little-endian raw data."""
    array = np.ascontiguousarray(array)
    data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return message("TensorProto")(
        name=name, dims=list(array.shape), data_type=_DTYPES[array.dtype], raw_data=data
    )


def value_info(name: str, elem_type: int, shape: Sequence[int | str]) -> _T:
    """A graph input or output: element type and shape (a str is a named dynamic axis)."""
    dims = [
        message("TensorShapeProto.Dimension")(
            **({"dim_param": d} if isinstance(d, str) else {"dim_value": d})
        )
        for d in shape
    ]
    tensor_type = message("TypeProto.Tensor")(
        elem_type=elem_type, shape=message("TensorShapeProto")(dim=dims)
    )
    return message("ValueInfoProto")(name=name, type=message("TypeProto")(tensor_type=tensor_type))


def node(
    op_type: str, inputs: Sequence[str], outputs: Sequence[str], name: str, domain: str = "", **attrs: Any
) -> _T:
    """A node with its attributes (int, float, str, or a list of ints or of floats)."""
    return message("NodeProto")(
        op_type=op_type,
        input=list(inputs),
        output=list(outputs),
        name=name,
        domain=domain,
        attribute=[_attribute(key, value) for key, value in sorted(attrs.items())],
    )


def _attribute(name: str, value: Any) -> _T:
    attribute = message("AttributeProto")
    if isinstance(value, bool | int | np.integer):
        return attribute(name=name, i=int(value), type=_ATTR_INT)
    if isinstance(value, float | np.floating):
        return attribute(name=name, f=float(value), type=_ATTR_FLOAT)
    if isinstance(value, str):
        return attribute(name=name, s=value.encode(), type=_ATTR_STRING)
    values = list(value)
    if all(isinstance(v, int | np.integer) for v in values):
        return attribute(name=name, ints=[int(v) for v in values], type=_ATTR_INTS)
    return attribute(name=name, floats=[float(v) for v in values], type=_ATTR_FLOATS)


def model(
    nodes: Sequence[_T],
    initializers: Sequence[_T],
    inputs: Sequence[_T],
    outputs: Sequence[_T],
    opsets: dict[str, int],
    props: dict[str, str],
    producer: str = "quarry",
) -> _T:
    """The whole ModelProto: one graph, the operator sets it imports, metadata properties."""
    graph = message("GraphProto")(
        name="quarry-bert",
        node=list(nodes),
        initializer=list(initializers),
        input=list(inputs),
        output=list(outputs),
    )
    return message("ModelProto")(
        ir_version=IR_VERSION,
        producer_name=producer,
        graph=graph,
        opset_import=[message("OperatorSetIdProto")(domain=d, version=v) for d, v in opsets.items()],
        metadata_props=[message("StringStringEntryProto")(key=k, value=v) for k, v in props.items()],
    )
