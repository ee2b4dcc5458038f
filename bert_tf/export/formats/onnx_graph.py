"""Rewrites of the ONNX graph that tf2onnx writes, so that ONNX Runtime's int8 quantization
reaches every weight (docs/serving.md#litert-and-onnx).

Keras's attention projects its queries, keys, values and output with `EinsumDense`, which
tf2onnx writes as `Einsum` on a constant weight (`abc,cde->abde`, `abcd,cde->abe`).
`quantize_dynamic` quantizes `MatMul`, not `Einsum`: left so, a third of each layer's weights
(four of its six matrices) stay float32. Each such einsum is the same product as a `MatMul`
between reshapes, which is what this writes in its place.
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


class _Graph:
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


def layer_norms_fused(model: onnx.ModelProto) -> int:
  """Replaces, in place, each layer normalization as TensorFlow writes it (`moments`, then
  `x * (rsqrt(variance + eps) * gamma) + (beta - mean * rsqrt(...) * gamma)`, a dozen
  elementwise ops) by one ONNX `LayerNormalization`; returns how many."""
  graph = _Graph(model.graph)
  fused = []
  for variance in [node for node in model.graph.node if node.op_type == "ReduceMean"]:
    found = _layer_norm(graph, variance)
    if found is not None:
      fused.append(found)
  for x, gamma, beta, epsilon, output, name in fused:
    model.graph.initializer.extend([
        numpy_helper.from_array(gamma.reshape(-1), f"{name}/scale"),
        numpy_helper.from_array(beta.reshape(-1), f"{name}/bias")])
    graph.producer[output].output[0] = f"{output}/unfused"
    model.graph.node.append(helper.make_node(
        "LayerNormalization", [x, f"{name}/scale", f"{name}/bias"], [output], name=name,
        axis=-1, epsilon=epsilon))
  _drop_unused(model)
  return len(fused)


def _layer_norm(graph: _Graph, variance):
  """(x, gamma, beta, epsilon, output, name) of the layer normalization whose variance
  `variance` (a ReduceMean of the squared differences) computes, or None."""
  square = graph.made_by(variance.input[0], "Mul")
  if square is None or square.input[0] != square.input[1]:
    return None
  difference = graph.made_by(square.input[0], "Sub")
  add_eps = graph.only_consumer(variance.output[0], "Add")
  if difference is None or add_eps is None:
    return None
  x, mean = difference.input
  mean_node = graph.made_by(mean, "Identity")
  mean = mean_node.input[0] if mean_node is not None else mean
  mean_node = graph.made_by(mean, "ReduceMean")
  epsilon = graph.constant(graph.other(add_eps, variance.output[0]))
  sqrt = graph.only_consumer(add_eps.output[0], "Sqrt")
  reciprocal = sqrt and graph.only_consumer(sqrt.output[0], "Reciprocal")
  scale = reciprocal and graph.only_consumer(reciprocal.output[0], "Mul")
  if (mean_node is None or mean_node.input[0] != x or epsilon is None or epsilon.size != 1
      or scale is None):
    return None
  gamma = graph.constant(graph.other(scale, reciprocal.output[0]))
  scaled = graph.consumers.get(scale.output[0], [])
  if gamma is None or len(scaled) != 2 or any(node.op_type != "Mul" for node in scaled):
    return None
  times_x = next((node for node in scaled if x in node.input), None)
  times_mean = next((node for node in scaled if node is not times_x), None)
  negated = times_x and graph.made_by(graph.other(times_mean, scale.output[0]), "Neg")
  shift = times_mean and graph.only_consumer(times_mean.output[0], "Add")
  beta = shift and graph.constant(graph.other(shift, times_mean.output[0]))
  output = shift and graph.only_consumer(shift.output[0], "Add")
  if (negated is None or negated.input[0] != mean or beta is None or output is None
      or graph.other(output, shift.output[0]) != times_x.output[0]
      or gamma.shape[-1] != beta.shape[-1] or gamma.size != gamma.shape[-1]):
    return None
  axes = [a.ints for a in mean_node.attribute if a.name == "axes"]
  if not axes or list(axes[0]) not in ([-1], [gamma.ndim - 1]):
    return None
  return x, gamma, beta, float(epsilon.reshape(())), output.output[0], f"{output.name}/fused"


def gelus_fused(model: onnx.ModelProto) -> int:
  """Replaces, in place, each exact GELU as written (`0.5 x * (1 - erf(-x * (1/√2) ...))`,
  TensorFlow's `0.5 x erfc(-x/√2)` with our Erfc as 1 - Erf) by ONNX Runtime's `Gelu`
  (com.microsoft, its CPU kernel: one pass); returns how many."""
  graph = _Graph(model.graph)
  fused = []
  for erf in [node for node in model.graph.node if node.op_type == "Erf"]:
    scaled = graph.made_by(erf.input[0], "Mul")
    negated = scaled and graph.made_by(scaled.input[0], "Neg")
    if negated is None:
      continue
    factor = graph.constant(scaled.input[1])
    complement = graph.only_consumer(erf.output[0], "Sub")
    product = complement and graph.only_consumer(complement.output[0], "Mul")
    half = product and graph.made_by(graph.other(product, complement.output[0]), "Mul")
    x = negated.input[0]
    if (factor is None or not np.isclose(factor, 1 / math.sqrt(2)) or half is None
        or graph.constant(complement.input[0]) != 1 or x not in half.input
        or graph.constant(graph.other(half, x)) != 0.5):
      continue
    fused.append((x, product))
  for x, product in fused:
    output = product.output[0]
    product.output[0] = f"{output}/unfused"
    model.graph.node.append(helper.make_node("Gelu", [x], [output],
                                             name=f"{product.name}/fused",
                                             domain="com.microsoft"))
  if fused and not any(o.domain == "com.microsoft" for o in model.opset_import):
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
  _drop_unused(model)
  return len(fused)


def _drop_unused(model: onnx.ModelProto) -> None:
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
