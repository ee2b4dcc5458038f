"""Each self-attention of the ONNX graph as one ONNX Runtime `Attention` (com.microsoft), which
`quantize_dynamic` turns into `QAttention`: the queries', keys' and values' projections one
int8 product on one quantization of the input, the scores, mask, softmax and context in one
kernel, in place of a dozen ops and four transposes (docs/serving.md#litert-and-onnx).

tf2onnx writes Keras's attention, once `einsums_as_matmuls` has made its projections MatMuls,
as (`m` the keys' mask, `[batch, 1, 1, keys]`, 1 where a key is kept, 0 where it is padding):

    q = Transpose[0,2,3,1](Reshape(x @ Wq (+ bq), [0, 0, heads, size]) * scale)
    k = Transpose[0,2,1,3](Reshape(x @ Wk (+ bk), [0, 0, heads, size]))
    v = Transpose[0,2,1,3](Reshape(x @ Wv (+ bv), [0, 0, heads, size]))
    probs = Softmax(Transpose[0,1,3,2](k @ q) * m + -1e9 (1 - m)) * m + 0 (1 - m)
    context = Reshape(Transpose[0,2,1,3](probs @ v), [0, 0, -1])

An attention without dropout (a model configured with `attention_probs_dropout_prob=0`, such
as the quickstart's) Keras computes with its `dot_product_attention` instead, written as (`m`
the keys' mask, boolean `[batch, 1, 1, keys]`; `LARGE_NEGATIVE` Keras's -0.7 times bfloat16's
largest, which it takes for float32 too):

    s = Einsum[btnh,bsnh->bnts](x @ Wq (+ bq), x @ Wk (+ bk)) * scale   (projections as above)
    probs = Softmax(where(ones_like(s) & m, s, LARGE_NEGATIVE))
    context = Reshape(Einsum[bnts,bsnh->btnh](probs, x @ Wv (+ bv)), [0, 0, -1])

`Attention` computes the same `context` from `x`, `[Wq Wk Wv]`, `[bq bk bv]` and the mask as
`[batch, keys]` ids (a masked key's score gets -1e9, so its weight is 0, as in either form).
"""

import numpy as np
import onnx
from onnx import helper, numpy_helper

from bert_tf.export.formats.onnx_graph import GraphIndex, drop_unused

MASKED_SCORE = -1e9  # what Keras's masked softmax adds to a padding key's score
# What Keras's `dot_product_attention` puts in place of a padding key's score in float32 (and
# bfloat16): -0.7 times bfloat16's largest. (A float16 graph's fill differs: not fused.)
LARGE_NEGATIVE = -0.7 * 3.38953e38


def attentions_fused(model: onnx.ModelProto) -> int:
  """Replaces, in place, each self-attention written as above by one `Attention`; returns how
  many."""
  graph = GraphIndex(model.graph)
  found = [match for match in (_attention(graph, softmax) for softmax in model.graph.node
                               if softmax.op_type == "Softmax") if match is not None]
  mask_ids = {}
  for x, weight, bias, heads, scale, mask, context in found:
    name = f"{context}/attention"
    if mask not in mask_ids:  # [batch, 1, 1, keys] float 0/1 -> [batch, keys] int32
      mask_ids[mask] = f"{mask}/ids"
      model.graph.initializer.append(numpy_helper.from_array(
          np.array([1, 2], np.int64), f"{mask}/axes"))
      model.graph.node.extend([
          helper.make_node("Squeeze", [mask, f"{mask}/axes"], [f"{mask}/keys"],
                           name=f"{mask}/squeeze"),
          helper.make_node("Cast", [f"{mask}/keys"], [mask_ids[mask]], name=f"{mask}/cast",
                           to=onnx.TensorProto.INT32)])
    model.graph.initializer.extend([numpy_helper.from_array(weight, f"{name}/weight"),
                                    numpy_helper.from_array(bias, f"{name}/bias")])
    graph.producer[context].output[0] = f"{context}/unfused"
    model.graph.node.append(helper.make_node(
        "Attention", [x, f"{name}/weight", f"{name}/bias", mask_ids[mask]], [context],
        name=name, domain="com.microsoft", num_heads=heads, scale=scale,
        mask_filter_value=MASKED_SCORE))
  if found and not any(o.domain == "com.microsoft" for o in model.opset_import):
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
  drop_unused(model)
  return len(found)


def _attention(graph: GraphIndex, softmax):
  """(x, [Wq Wk Wv], [bq bk bv], heads, scale, mask, context's name) of the attention whose
  softmax is `softmax`, in either form Keras writes, or None."""
  found = _explicit_attention(graph, softmax) or _dot_product_attention(graph, softmax)
  if found is None:
    return None
  projected, scale, mask, context = found
  projections = [_projection(graph, name) for name in projected]
  if any(p is None for p in projections) or len(
      {(p[0], p[1].shape, p[3]) for p in projections}) != 1:
    return None
  return (projections[0][0], np.concatenate([p[1] for p in projections], axis=1),
          np.concatenate([p[2] for p in projections]), projections[0][3], scale, mask, context)


def _explicit_attention(graph: GraphIndex, softmax):
  """((queries', keys', values' projection), scale, mask, context's name) of the first form
  above (Keras's attention with dropout), or None."""
  masked = graph.made_by(softmax.input[0], "Add")
  kept = masked and _masked_by(graph, masked, MASKED_SCORE)
  if kept is None:
    return None
  scores, mask = kept
  transposed = _transpose(graph, scores, [0, 1, 3, 2])
  products = transposed and graph.made_by(transposed.input[0], "MatMul")
  if products is None:
    return None
  keys = _transpose(graph, products.input[0], [0, 2, 1, 3])
  queries = _transpose(graph, products.input[1], [0, 2, 3, 1])
  scaled = queries and graph.made_by(queries.input[0], "Mul")
  factors = [graph.constant(name) for name in scaled.input] if scaled else [None, None]
  scale = factors[1] if factors[1] is not None else factors[0]
  weighted = graph.only_consumer(softmax.output[0], "Mul")
  probabilities = weighted and graph.only_consumer(weighted.output[0], "Add")
  if (keys is None or scale is None or scale.size != 1 or probabilities is None
      or _masked_by(graph, probabilities, 0.0) != (softmax.output[0], mask)):
    return None
  context = graph.only_consumer(probabilities.output[0], "MatMul")
  values = context and _transpose(graph, context.input[1], [0, 2, 1, 3])
  merged = context and _transpose(graph, context.output[0], [0, 2, 1, 3], consumer=True)
  flat = merged and graph.only_consumer(merged.output[0], "Reshape")
  if (values is None or flat is None or context.input[0] != probabilities.output[0]
      or list(graph.constant(flat.input[1]) if flat.input[1] in graph.weights else [])
      != [0, 0, -1]):
    return None
  unscaled = scaled.input[0] if factors[1] is not None else scaled.input[1]
  return ((unscaled, keys.input[0], values.input[0]), float(scale.reshape(())), mask,
          flat.output[0])


def _dot_product_attention(graph: GraphIndex, softmax):
  """((queries', keys', values' projection), scale, mask, context's name) of the second form
  above (Keras's `dot_product_attention`: an attention without dropout), or None."""
  masked = graph.made_by(softmax.input[0], "Add")
  kept = masked and _masked_by(graph, masked, LARGE_NEGATIVE)
  if kept is None:
    return None
  scaled, condition = kept
  scores = graph.made_by(scaled, "Mul")
  factors = [n for n in scores.input if n in graph.weights] if scores else []
  factor = graph.constant(factors[0]) if len(factors) == 1 else None
  products = factor is not None and graph.made_by(graph.other(scores, factors[0]), "Einsum")
  cast = graph.made_by(condition, "Cast")
  both = cast and graph.made_by(cast.input[0], "And")
  mask = both and _not_ones(graph, both)
  context = graph.only_consumer(softmax.output[0], "Einsum")
  flat = context and graph.only_consumer(context.output[0], "Reshape")
  if (factor is None or factor.size != 1 or _equation(products) != "btnh,bsnh->bnts"
      or mask is None or _equation(context) != "bnts,bsnh->btnh"
      or context.input[0] != softmax.output[0] or flat is None
      or list(graph.constant(flat.input[1]) if flat.input[1] in graph.weights else [])
      != [0, 0, -1]):
    return None
  return ((products.input[0], products.input[1], context.input[1]), float(factor.reshape(())),
          mask, flat.output[0])


def _equation(einsum) -> str | None:
  """The equation of `einsum` (an Einsum node, or None or False for none), lower case."""
  if not einsum:
    return None
  return next(a.s.decode().lower() for a in einsum.attribute if a.name == "equation")


def _not_ones(graph: GraphIndex, both):
  """The input of `both` (an `And`) other than `ones_like(...)` (an Expand of True), or None."""
  for ones, other in (both.input, both.input[::-1]):
    expand = graph.made_by(ones, "Expand")
    value = expand and graph.constant(expand.input[0])
    if value is not None and value.dtype == bool and value.all():
      return other
  return None


def _masked_by(graph: GraphIndex, add, fill: float):
  """(x, mask) of `add` = `x * mask + fill * (1 - mask)` (TensorFlow's `where(mask, x, fill)`
  as tf2onnx writes it: `mask` and `1 - mask` casts of a boolean and of its `Not`), or
  None."""
  products = [graph.made_by(name, "Mul") for name in add.input]
  if any(product is None for product in products):
    return None
  for times_mask, filler in (products, products[::-1]):
    fills = [graph.constant(name) for name in filler.input if name in graph.weights]
    inverse = [name for name in filler.input if name not in graph.weights]
    negated = len(inverse) == 1 and graph.made_by(inverse[0], "Cast")
    negated = negated and graph.made_by(negated.input[0], "Not")
    if (len(fills) != 1 or fills[0].size != 1 or not negated
        or not np.isclose(fills[0].reshape(()), fill)):
      continue
    for mask in times_mask.input:
      cast = graph.made_by(mask, "Cast")
      if cast is not None and cast.input[0] == negated.input[0]:
        return graph.other(times_mask, mask), mask
  return None


def _transpose(graph: GraphIndex, name: str, perm: list[int], consumer: bool = False):
  """The Transpose with `perm` that makes `name` (or, with `consumer`, the only one that takes
  it), or None."""
  node = (graph.only_consumer(name, "Transpose") if consumer
          else graph.made_by(name, "Transpose"))
  if node is None:
    return None
  perms = [list(a.ints) for a in node.attribute if a.name == "perm"]
  return node if perms == [perm] else None


def _projection(graph: GraphIndex, name: str):
  """(x, W as [hidden, heads * size], b as [heads * size], heads) of `name` =
  `Reshape(x @ W, [0, 0, heads, size]) (+ b)`, the product's only use, or None."""
  bias = None
  added = graph.made_by(name, "Add")
  if added is not None:
    bias_name = next((n for n in added.input if n in graph.weights), None)
    bias = bias_name and graph.constant(bias_name)
    name = added.input[0] if added.input[1] == bias_name else added.input[1]
    if bias is None:
      return None
  reshape = graph.made_by(name, "Reshape")
  product = reshape and graph.made_by(reshape.input[0], "MatMul")
  shape = reshape and graph.constant(reshape.input[1])
  weight = product and graph.constant(product.input[1])
  if (product is None or weight is None or weight.ndim != 2 or shape is None
      or list(shape[:2]) != [0, 0] or len(shape) != 4
      or shape[2] * shape[3] != weight.shape[1]
      or len(graph.consumers.get(product.output[0], [])) != 1
      or len(graph.consumers.get(reshape.output[0], [])) != 1):
    return None
  if bias is None:
    bias = np.zeros(weight.shape[1], weight.dtype)
  elif bias.size != weight.shape[1]:
    return None
  return product.input[0], weight, bias.reshape(-1).astype(weight.dtype), int(shape[2])
