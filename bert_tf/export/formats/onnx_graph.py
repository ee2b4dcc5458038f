"""Rewrites of the ONNX graph that tf2onnx writes, so that ONNX Runtime's int8 quantization
reaches every weight and each product is one op (docs/serving.md#litert-and-onnx); and the
index of a graph's nodes the other rewrites (`onnx_norms.py`, `onnx_attention.py`) use.

Keras's attention projects its queries, keys, values and output with `EinsumDense`, which
tf2onnx writes as `Einsum` on a constant weight (`abc,cde->abde`, `abcd,cde->abe`).
`quantize_dynamic` quantizes `MatMul`, not `Einsum`: left so, a third of each layer's weights
(four of its six matrices) stay float32. Each such einsum is the same product as a `MatMul`
between reshapes, which is what this writes in its place. Keras's `Dense` on a sequence is
TensorFlow's `tensordot`, a MatMul between reshapes computed from the input's shape (two dozen
small ops a layer), which ONNX's MatMul does alone.
"""

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper


def einsums_as_matmuls(model: onnx.ModelProto) -> int:
  """Replaces, in place, each `Einsum` of an input and a constant weight that contracts the
  input's last axes with the weight's first ones (`{batch}{contracted},{contracted}{out}->
  {batch}{out}`) by Reshape -> MatMul -> Reshape; returns how many it replaced."""
  graph = model.graph
  weights = {tensor.name: tensor for tensor in graph.initializer}
  nodes, replaced = [], 0
  for node in graph.node:
    plan = _matmul_plan(node, weights)
    if plan is None:
      nodes.append(node)
      continue
    batch, contracted, out, weight = plan
    name = node.name or node.output[0]
    matrix = numpy_helper.to_array(weight).reshape(math.prod(contracted), math.prod(out))
    graph.initializer.append(numpy_helper.from_array(matrix, f"{name}/matrix"))
    source = node.input[0]
    if len(contracted) > 1:  # [batch..., contracted...] -> [batch..., prod(contracted)]
      graph.initializer.append(numpy_helper.from_array(
          np.array([0] * batch + [-1], np.int64), f"{name}/flat_shape"))
      nodes.append(helper.make_node("Reshape", [source, f"{name}/flat_shape"],
                                    [f"{name}/flat"], name=f"{name}/flatten"))
      source = f"{name}/flat"
    product = node.output[0] if len(out) == 1 else f"{name}/product"
    nodes.append(helper.make_node("MatMul", [source, f"{name}/matrix"], [product],
                                  name=f"{name}/matmul"))
    if len(out) > 1:  # [batch..., prod(out)] -> [batch..., out...]
      graph.initializer.append(numpy_helper.from_array(
          np.array([0] * batch + list(out), np.int64), f"{name}/out_shape"))
      nodes.append(helper.make_node("Reshape", [product, f"{name}/out_shape"],
                                    [node.output[0]], name=f"{name}/unflatten"))
    replaced += 1
  del graph.node[:]
  graph.node.extend(nodes)
  used = {name for node in graph.node for name in node.input}
  kept = [tensor for tensor in graph.initializer if tensor.name in used]
  del graph.initializer[:]
  graph.initializer.extend(kept)
  return replaced


def _matmul_plan(node, weights: dict):
  """(number of batch axes, contracted dims, output dims, weight) of an einsum that is a
  MatMul between reshapes, else None."""
  if node.op_type != "Einsum" or len(node.input) != 2 or node.input[1] not in weights:
    return None
  equation = next(a.s.decode() for a in node.attribute if a.name == "equation")
  operands, result = equation.replace(" ", "").split("->")
  left, right = operands.split(",")
  weight = weights[node.input[1]]
  contracted = [axis for axis in right if axis in left and axis not in result]
  kept_left, out = left[:len(left) - len(contracted)], right[len(contracted):]
  if (not contracted or left[len(kept_left):] != "".join(contracted)
      or right[:len(contracted)] != "".join(contracted) or result != kept_left + out
      or set(out) & set(left) or len(weight.dims) != len(right)):
    return None
  dims = list(weight.dims)
  return len(kept_left), dims[:len(contracted)], dims[len(contracted):], weight


class GraphIndex:
  """The graph's nodes by the names of what they make and of what they take."""

  def __init__(self, graph):
    self.graph = graph
    self.weights = {tensor.name: tensor for tensor in graph.initializer}
    self.producer = {name: node for node in graph.node for name in node.output}
    self.consumers = {}
    for node in graph.node:
      for name in node.input:
        self.consumers.setdefault(name, []).append(node)

  def only_consumer(self, name: str, op_type: str):
    """The one node that takes `name`, if it is an `op_type`; else None."""
    nodes = self.consumers.get(name, [])
    return nodes[0] if len(nodes) == 1 and nodes[0].op_type == op_type else None

  def made_by(self, name: str, op_type: str):
    node = self.producer.get(name)
    return node if node is not None and node.op_type == op_type else None

  def constant(self, name: str):
    return numpy_helper.to_array(self.weights[name]) if name in self.weights else None

  def other(self, node, name: str) -> str:
    """Of a two-input node, the input that is not `name`."""
    return node.input[1] if node.input[0] == name else node.input[0]


def drop_unused(model: onnx.ModelProto) -> None:
  """Removes the nodes and weights nothing needs for the graph's outputs, and sorts the
  nodes in an order ONNX accepts (each after what it takes)."""
  graph = model.graph
  producer = {name: node for node in graph.node for name in node.output}
  needed, stack, order, seen = set(), [o.name for o in graph.output], [], set()
  while stack:
    name = stack.pop()
    if name in needed:
      continue
    needed.add(name)
    node = producer.get(name)
    if node is not None:
      stack.extend(node.input)

  def visit(node):
    if id(node) in seen:
      return
    seen.add(id(node))
    for name in node.input:
      if name in producer:
        visit(producer[name])
    order.append(node)
  for node in graph.node:
    if any(name in needed for name in node.output):
      visit(node)
  del graph.node[:]
  graph.node.extend(order)
  kept = [tensor for tensor in graph.initializer if tensor.name in needed]
  del graph.initializer[:]
  graph.initializer.extend(kept)


def tensordots_as_matmuls(model: onnx.ModelProto) -> int:
  """Replaces, in place, each of Keras's `Dense` on a `[batch, tokens, features]` input as
  tf2onnx writes TensorFlow's `tensordot` (Reshape to `[batch * tokens, features]` through a
  dozen ops on the input's shape, MatMul, Reshape back to `[batch, tokens, units]` through as
  many) by the one MatMul on the input as it is, which ONNX broadcasts the same; returns how
  many."""
  graph = GraphIndex(model.graph)
  found = []
  for product in [node for node in model.graph.node if node.op_type == "MatMul"]:
    flat = graph.made_by(product.input[0], "Reshape")
    weight = graph.constant(product.input[1])
    unflat = graph.only_consumer(product.output[0], "Reshape")
    if (flat is None or weight is None or weight.ndim != 2 or unflat is None
        or len(graph.consumers.get(flat.output[0], [])) != 1
        or not _kept_axes_then(graph, unflat.input[1], flat.input[0], weight.shape[1])):
      continue
    found.append((product, flat.input[0], unflat.output[0]))
  for product, x, output in found:
    product.input[0] = x
    product.output[0] = output
    graph.producer[output].output[0] = f"{output}/unflattened"
  drop_unused(model)
  return len(found)


def _kept_axes_then(graph: GraphIndex, shape: str, x: str, units: int) -> bool:
  """Whether `shape` is `x`'s shape but its last axis, then `units` (tensordot's
  `concat([gather(shape(x), free), [units]])`, through Casts)."""
  shape_node = graph.producer.get(shape)
  while shape_node is not None and shape_node.op_type == "Cast":
    shape_node = graph.producer.get(shape_node.input[0])
  if shape_node is None or shape_node.op_type != "Concat" or len(shape_node.input) != 2:
    return False
  kept = graph.made_by(shape_node.input[0], "Gather")
  last = graph.constant(shape_node.input[1])
  free = kept and graph.constant(kept.input[1])
  source = kept and graph.producer.get(kept.input[0])
  while source is not None and source.op_type == "Cast":
    source = graph.producer.get(source.input[0])
  return (last is not None and list(last.reshape(-1)) == [units] and free is not None
          and list(free.reshape(-1)) == list(range(free.size)) and source is not None
          and source.op_type == "Shape" and source.input[0] == x)
