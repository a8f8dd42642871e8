"""Stacks, heads, parameter counting / budgets, and the flax.nnx path."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from flax import nnx

from layer_helpers import close
from lvf_jax import cells, layers, models
from lvf_jax.regularization import regularization_loss, regularization_terms

B, T, M = 2, 6, 3


def data(key=0, batch=B, steps=T):
  return jax.random.normal(jax.random.key(key), (batch, steps, M))


def test_stack_equals_chained_layers_and_dropout():
  stack = models.StackedRecurrent([cells.LVFRNNCell(5), cells.NCGRUCell(4), nn.GRUCell(3)],
                                  dropout_rate=0.5)
  x = data()
  variables = stack.init(jax.random.key(0), x)
  p = variables["params"]
  assert sorted(p) == ["layer_0", "layer_1", "layer_2"]
  y = stack.apply(variables, x)  # deterministic: no dropout
  h = x
  for i, cell in enumerate([cells.LVFRNNCell(5), cells.NCGRUCell(4), nn.GRUCell(3)]):
    h = layers.Recurrent(cell).apply({"params": p[f"layer_{i}"]}, h)
  close(y, h)
  y_drop = stack.apply(variables, x, deterministic=False, rngs={"dropout": jax.random.key(1)})
  assert y_drop.shape == y.shape and not np.allclose(y_drop, y)


def test_input_and_output_dropout_of_the_heads():
  """``input_dropout_rate`` drops the embedded tokens before the stack (AWD-LSTM's input
  dropout), ``output_dropout_rate`` replaces ``dropout_rate`` before the head; NumPy of the
  captured intermediates: kept entries are the embedding rows scaled by 1 / (1 - rate)."""
  vocab, rate = 7, 0.4
  tokens = jax.random.randint(jax.random.key(0), (B, 50), 0, vocab)
  model = models.SequencePredictor([cells.GRUCell(5)], num_outputs=vocab, vocab_size=vocab,
                                   embed_dim=8, input_dropout_rate=rate,
                                   output_dropout_rate=0.0, dropout_rate=0.5)
  variables = model.init(jax.random.key(1), tokens)
  y, state = model.apply(variables, tokens, deterministic=False,
                         rngs={"dropout": jax.random.key(2)}, capture_intermediates=True)
  dropped = np.asarray(state["intermediates"]["Dropout_0"]["__call__"][0])
  table = variables["params"]["embedding"]["embed"]["embedding"]
  embedded = np.asarray(table)[np.asarray(tokens)]
  kept = dropped != 0
  assert abs(1 - kept.mean() - rate) < 0.06  # 800 entries
  np.testing.assert_allclose(dropped[kept], embedded[kept] / (1 - rate), rtol=1e-6)
  # the stack and the head see no other dropout: one layer, output rate 0 over 0.5
  assert "Dropout_1" not in state["intermediates"]
  rnn = layers.Recurrent(cells.GRUCell(5)).apply(
      {"params": variables["params"]["rnn"]["layer_0"]}, jnp.asarray(dropped))
  p = variables["params"]["head"]
  close(y, rnn @ p["kernel"] + p["bias"][None, None])
  # output_dropout_rate None: the head takes dropout_rate
  plain = models.SequencePredictor([cells.GRUCell(5)], num_outputs=vocab, vocab_size=vocab,
                                   embed_dim=8, dropout_rate=0.5)
  y_det = plain.apply(variables, tokens)
  y_drop = plain.apply(variables, tokens, deterministic=False, rngs={"dropout": jax.random.key(2)})
  assert not np.allclose(y_det, y_drop)
  for field in ("input_dropout_rate", "output_dropout_rate"):
    bad = models.SequencePredictor([cells.GRUCell(5)], num_outputs=vocab, vocab_size=vocab,
                                   embed_dim=8, **{field: 1.0})
    with pytest.raises(ValueError, match=f"argument '{field}' must lie in \\[0, 1\\); got 1.0"):
      bad.init(jax.random.key(1), tokens)


def test_classifier_uses_last_valid_step():
  model = models.SequenceClassifier([cells.ExpRNNCell(4)], num_outputs=5)
  x = data()
  variables = model.init(jax.random.key(0), x)
  lengths = jnp.array([T, 3])
  logits = model.apply(variables, x, seq_lengths=lengths)
  assert logits.shape == (B, 5)
  p = variables["params"]
  for b in range(B):
    n_b = int(lengths[b])
    h = layers.Recurrent(cells.ExpRNNCell(4)).apply({"params": p["rnn"]["layer_0"]},
                                                    x[b:b + 1, :n_b])[:, -1]
    want = h @ p["head"]["kernel"] + p["head"]["bias"][None]
    close(logits[b:b + 1], want)


def test_language_model_and_truncated_bptt():
  vocab = 11
  model = models.SequencePredictor([cells.LVFRNNCell(6), cells.LVFRNNCell(5)], num_outputs=vocab,
                                   vocab_size=vocab, embed_dim=4)
  tokens = jax.random.randint(jax.random.key(0), (B, 8), 0, vocab)
  variables = model.init(jax.random.key(1), tokens)
  logits, carries = model.apply(variables, tokens, return_carries=True)
  assert logits.shape == (B, 8, vocab) and len(carries) == 2
  l1, c1 = model.apply(variables, tokens[:, :5], return_carries=True)
  l2, c2 = model.apply(variables, tokens[:, 5:], initial_carries=c1, return_carries=True)
  close(jnp.concatenate([l1, l2], axis=1), logits)
  close(c2, carries)
  with pytest.raises(ValueError, match="integer tokens"):
    model.apply(variables, tokens.astype(jnp.float32))


def test_music_and_regression_heads():
  model = models.SequencePredictor([cells.AntisymmetricRNNCell(6)], num_outputs=88)
  x = data()
  variables = model.init(jax.random.key(0), x)
  logits = model.apply(variables, x)
  assert logits.shape == (B, T, 88)
  probs = jax.nn.sigmoid(logits)  # multi-label: independent Bernoulli per key
  assert np.all((probs > 0) & (probs < 1))


def test_count_params():
  n, m, out = 8, 3, 4
  model = models.SequencePredictor([cells.LVFRNNCell(n, parametrization="paper")],
                                   num_outputs=out)
  variables = model.init(jax.random.key(0), jnp.zeros((1, 2, m)))
  full = n * n + m * n + n + n * out + out
  eff = n * (n - 1) // 2 + m * n + n + n * out + out
  assert models.count_params(variables) == full
  assert models.count_params(variables["params"], effective=True) == eff
  # the default parametrisation stores the divergence apart: n more entries
  natural = models.SequencePredictor([cells.LVFRNNCell(n)], num_outputs=out)
  nv = natural.init(jax.random.key(0), jnp.zeros((1, 2, m)))
  assert models.count_params(nv) == full + n
  assert models.count_params(nv, effective=True) == eff  # the same dim VF_n
  # expRNN: skew counts n(n-1)/2; the dtriv base is not trainable.
  cell_model = models.SequenceClassifier([cells.ExpRNNCell(n, use_base=True)], num_outputs=out)
  v = cell_model.init(jax.random.key(0), jnp.zeros((1, 2, m)))
  assert "dtriv" in v
  assert models.count_params(v, effective=True) == n * (n - 1) // 2 + m * n + n + n * out + out
  # nnRNN: P (skew) and T (strictly lower) each n(n-1)/2, gamma and theta n/2 each.
  v = models.SequenceClassifier([cells.NNRNNCell(n)], num_outputs=out).init(
      jax.random.key(0), jnp.zeros((1, 2, m)))
  assert models.count_params(v, effective=True) == \
      2 * (n * (n - 1) // 2) + n + m * n + n + n * out + out


def _lvf_count(n, m, out):
  return n * (n - 1) // 2 + m * n + n + n * out + out


@pytest.mark.parametrize("budget", [500, 10697, 20000])
def test_hidden_for_budget(budget):
  m, out = 10, 9
  n = models.hidden_for_budget("lvf", budget, m, out)
  assert _lvf_count(n, m, out) <= budget < _lvf_count(n + 1, m, out)


def test_hidden_for_budget_custom_fn_and_nnrnn():
  fn = lambda h: models.SequencePredictor([nn.LSTMCell(h)], num_outputs=2)
  n = models.hidden_for_budget(fn, 3000, 4)
  count = lambda h: 4 * (4 * h + h * h + h) + h * 2 + 2  # LSTMCell: per gate i->h, h->h(+bias)
  assert count(n) <= 3000 < count(n + 1)
  n2 = models.hidden_for_budget("nnrnn", 2000, 4, 3)
  assert n2 % 2 == 0
  with pytest.raises(ValueError, match="budget"):
    models.hidden_for_budget("lvf", 3, 4, 3)


def test_nnx_bridge():
  """flax.nnx users wrap the linen layer with nnx.bridge.ToNNX."""
  layer = layers.Recurrent(cells.LVFRNNCell(5, div_penalty=0.1))
  x = data()
  model = nnx.bridge.ToNNX(layer, rngs=nnx.Rngs(0))
  nnx.bridge.lazy_init(model, x)
  y = model(x)
  params = nnx.state(model, nnx.Param)
  linen_params = jax.tree_util.tree_map(lambda v: v, nnx.to_pure_dict(params))
  close(y, layer.apply({"params": linen_params}, x))

  def loss(m):
    return jnp.mean(m(x) ** 2)

  grads = nnx.grad(loss)(model)
  g = nnx.to_pure_dict(grads)
  assert np.any(np.asarray(g["cell"]["vector_field"]) != 0)


@pytest.mark.parametrize("cell", [
    cells.LVFRNNCell(5, div_penalty=0.7),
    cells.NNRNNCell(6, delta=0.3, t_decay=0.05),
], ids=["lvf", "nnrnn"])
def test_nnx_regularization_reaches_the_loss_and_gradient_as_in_linen(cell):
  """The sown penalties of a ToNNX-wrapped layer: same value and gradient as linen's."""
  layer = layers.Recurrent(cell)
  x = data()
  variables = layer.init(jax.random.key(0), x)
  leaves, tree = jax.tree_util.tree_flatten(variables["params"])
  keys = jax.random.split(jax.random.key(1), len(leaves))
  # Away from the initialisation (divergence-free there, gamma = 1), so the penalties matter.
  params = tree.unflatten([p + 0.3 * jax.random.normal(k, p.shape, p.dtype)
                           for p, k in zip(leaves, keys)])

  def linen_loss(p):
    y, state = layer.apply({"params": p}, x, mutable=["losses"])
    return jnp.mean(y ** 2) + regularization_loss(state)

  model = nnx.bridge.ToNNX(layer, rngs=nnx.Rngs(0))
  nnx.bridge.lazy_init(model, x)
  state = nnx.state(model, nnx.Param)
  nnx.replace_by_pure_dict(state, params)
  nnx.update(model, state)

  def nnx_loss(m):
    y = m(x, mutable=["losses"])
    return jnp.mean(y ** 2) + regularization_loss(m)

  penalty = linen_loss(params) - jnp.mean(layer.apply({"params": params}, x) ** 2)
  assert penalty > 1e-3
  close(nnx_loss(model), linen_loss(params))
  expected = jax.grad(linen_loss)(params)
  got = nnx.to_pure_dict(nnx.grad(nnx_loss)(model))
  jax.tree_util.tree_map(lambda a, b: close(a, b), got, expected)
  assert set(regularization_terms(model)) == set(
      regularization_terms(layer.apply({"params": params}, x, mutable=["losses"])[1]))
