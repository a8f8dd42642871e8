"""The NNX front ends (``lvf_jax.nnx``) compute what the Linen cells compute, from the same
parameter tree, for every registered family; they train through ``nnx.Optimizer`` with the
library's manifold transforms."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import tolerances as tol
from lvf_jax import cells, geometry, optim
from lvf_jax import nnx as lnnx
from lvf_jax.tasks.copying import CopyTask

D, N, B, T = 3, 8, 2, 5


def _close(got, want):
  """Equal to the rounding of the ``T``-step chain of ``N + D``-term products at the values'
  scale (:func:`tolerances.recurrence`): the two front ends run the same operations, in
  programs XLA may fuse differently."""
  scale = float(jnp.max(jnp.abs(want)))
  # absolute: the chain's rounding bound at the values' scale, no relative part
  np.testing.assert_allclose(got, want, rtol=0.0, atol=tol.recurrence(T, N + D, scale))


def _inputs():
  return jax.random.normal(jax.random.key(1), (B, T, D))


@pytest.mark.parametrize("name", sorted(cells.CELLS))
def test_an_nnx_cell_computes_the_linen_cell_from_the_same_parameters(name):
  cell = lnnx.NNX_CELLS[name](D, N, rngs=nnx.Rngs(0))
  x = _inputs()
  linen = nn.RNN(cell.definition.clone())  # the NNX cell's definition, as a Linen cell
  variables = {"params": {"cell": lnnx.to_linen(cell)["params"]}}
  want = linen.apply(variables, x)
  per_step, prepared = nnx.RNN(cell)(x), nnx.RNN(cell.prepared())(x)
  _close(per_step, want)
  _close(prepared, want)


@pytest.mark.parametrize("name", sorted(cells.CELLS))
def test_gradients_equal_the_linen_cells(name):
  cell = lnnx.NNX_CELLS[name](D, N, rngs=nnx.Rngs(0))
  x = _inputs()
  linen = nn.RNN(cell.definition.clone())
  params = lnnx.to_linen(cell)["params"]

  def linen_loss(p):
    return jnp.sum(jnp.sin(linen.apply({"params": {"cell": p}}, x)))

  def nnx_loss(c):
    return jnp.sum(jnp.sin(nnx.RNN(c.prepared())(x)))

  want = jax.grad(linen_loss)(params)
  got = nnx.grad(nnx_loss)(cell)
  got = jax.tree_util.tree_map(lambda v: v[...], dict(got["params"]),
                               is_leaf=lambda v: isinstance(v, nnx.Variable))
  for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
    _close(g, w)


@pytest.mark.parametrize("name", sorted(set(cells.CELLS) - {"lstm", "gru"}))
def test_a_carry_of_the_wrong_width_is_an_error_naming_both(name):
  """(The LSTM and GRU take their width from the carry, as Flax's cells do.)"""
  cell = lnnx.NNX_CELLS[name](D, N, rngs=nnx.Rngs(0))
  good = cell.initialize_carry((B, D))
  wide = jax.tree_util.tree_map(lambda c: jnp.zeros(c.shape[:-1] + (c.shape[-1] + 2,)), good)
  width = jax.tree_util.tree_leaves(good)[0].shape[-1]
  with pytest.raises(ValueError, match=rf"width {width + 2}.*width {width}"):
    cell(wide, jnp.zeros((B, D)))
  with pytest.raises(ValueError, match=rf"width {width + 2}.*width {width}"):
    cell.prepared()(wide, jnp.zeros((B, D)))


def test_the_penalties_are_read_without_mutable():
  cell = lnnx.LVFRNNCell(D, N, rngs=nnx.Rngs(0), div_penalty=0.5,
                         vector_field_init=nn.initializers.uniform(1.0))
  assert float(lnnx.penalty(cell)) == 0.0  # nothing prepared yet
  cell.prepared()
  field = cell.definition.apply(lnnx.to_linen(cell), method=lambda c: c.field())
  div = geometry.divergence(field)
  # a sum of N squares recomputed from the same field: float32 rounding of N terms
  np.testing.assert_allclose(lnnx.penalty(cell), 0.5 * jnp.sum(div * div),
                             rtol=tol.worst_case(4 * N))


def test_weights_convert_both_ways():
  linen_cell = cells.ExpRNNCell(N)
  variables = linen_cell.init(jax.random.key(3), jnp.zeros((1, N)), jnp.zeros((1, D)))
  cell = lnnx.from_linen("exprnn", variables, D, N)
  back = lnnx.to_linen(cell)
  for a, b in zip(jax.tree_util.tree_leaves(back["params"]),
                  jax.tree_util.tree_leaves(dict(variables["params"]))):
    np.testing.assert_array_equal(a, b)
  with pytest.raises(ValueError, match="do not fit 'exprnn' with hidden_features=9"):
    lnnx.from_linen("exprnn", variables, D, 9)


class Tagger(nnx.Module):
  def __init__(self, rngs):
    self.cell = lnnx.NCGRUCell(TASK.input_size, 8, rngs=rngs, rho=2, orthogonal_param="matrix")
    self.out = nnx.Linear(8, TASK.output_size, rngs=rngs)

  def __call__(self, x):
    return self.out(nnx.RNN(self.cell.prepared())(x))


TASK = CopyTask(T=5, K=3)


def _linen_tagger():
  class LinenTagger(nn.Module):
    @nn.compact
    def __call__(self, x):
      cell = cells.NCGRUCell(8, rho=2, orthogonal_param="matrix", name="cell")
      return nn.Dense(TASK.output_size, name="out")(nn.RNN(cell.prepared())(x))
  return LinenTagger()


def test_a_copy_run_through_nnx_optimizer_keeps_u_orthogonal_and_matches_linen():
  """Copy task, 200 steps, the Cayley-retraction update (scoRNN's) of NC-GRU's orthogonal
  ``U_c`` through ``nnx.Optimizer``, against the Linen run from the same parameters."""
  model = Tagger(nnx.Rngs(0))
  linen = _linen_tagger()
  params = {"cell": lnnx.to_linen(model.cell)["params"],
            "out": {"kernel": model.out.kernel[...], "bias": model.out.bias[...]}}
  tx = optim.make_optimizer({"optimizer": "adam", "learning_rate": 1e-3, "lr_orth": 1e-3,
                             "orthogonal_method": "scornn", "rho": 2})
  opt = nnx.Optimizer(model, tx, wrt=nnx.Param)
  linen_state = tx.init(params)

  @nnx.jit
  def nnx_step(model, opt, key):
    b = TASK.sample(key, 16)
    loss, g = nnx.value_and_grad(lambda m: TASK.metrics(m(b.inputs), b)["loss"])(model)
    with jax.numpy_dtype_promotion("standard"):  # optax's Adam mixes its int count in
      opt.update(model, g)
    return loss

  @jax.jit
  def linen_step(params, state, key):
    b = TASK.sample(key, 16)
    loss, g = jax.value_and_grad(
        lambda p: TASK.metrics(linen.apply({"params": p}, b.inputs), b)["loss"])(params)
    with jax.numpy_dtype_promotion("standard"):
      updates, state = tx.update(g, state, params)
    return optax.apply_updates(params, updates), state, loss

  nnx_losses, linen_losses = [], []
  for key in jax.random.split(jax.random.key(7), 200):
    nnx_losses.append(float(nnx_step(model, opt, key)))
    params, linen_state, loss = linen_step(params, linen_state, key)
    linen_losses.append(float(loss))
  # two jitted programs of the same operations, whose roundings 200 training steps carry
  # forward: 1e-4 covers a chain of 43,980 float32 terms (tolerances.covered_terms)
  np.testing.assert_allclose(nnx_losses, linen_losses, rtol=1e-4, atol=1e-5)
  assert np.mean(nnx_losses[-20:]) < np.mean(nnx_losses[:20])
  u = model.cell.params["orthogonal_c"][...]
  # 200 Cayley retractions, each orthogonal to the rounding of an 8 x 8 solve
  np.testing.assert_allclose(u.T @ u, np.eye(8), atol=1e-4)


def test_any_linen_structured_cell_gets_a_front_end():
  definition = cells.LVFRNNCell(N, integrator="midpoint", tau=2.0)
  cell = lnnx.NNXCell(D, N, rngs=nnx.Rngs(0), definition=definition)
  x = _inputs()
  want = nn.RNN(definition).apply({"params": {"cell": lnnx.to_linen(cell)["params"]}}, x)
  _close(nnx.RNN(cell.prepared())(x), want)
  with pytest.raises(ValueError, match="hidden_features=8"):
    lnnx.NNXCell(D, N + 1, rngs=nnx.Rngs(0), definition=definition)


def _load(module, tree):
  """Sets an NNX module's parameters from a nested dict of arrays."""
  nnx.update(module, nnx.State(jax.tree_util.tree_map(nnx.Param, tree)))


def test_the_lstm_computes_flax_nnx_lstmcell_from_the_same_weights():
  ours = lnnx.LSTMCell(D, N, rngs=nnx.Rngs(0))  # nnx.LSTMCell's constructor arguments
  theirs = nnx.LSTMCell(D, N, rngs=nnx.Rngs(1))
  p = lnnx.to_linen(ours)["params"]
  _load(theirs, {("if_" if k == "if" else k): v for k, v in p.items()})
  x = _inputs()
  want = nnx.RNN(theirs)(x)
  _close(nnx.RNN(ours.prepared())(x), want)


def test_the_gru_computes_flax_nnx_grucell_from_the_same_weights():
  """Flax NNX's GRUCell has no bias on the hidden candidate block: the NNX front end leaves
  it out by default (``GRUCell.nnx_defaults``), where the Linen cell keeps Linen's."""
  ours = lnnx.GRUCell(D, N, rngs=nnx.Rngs(0))
  theirs = nnx.GRUCell(D, N, rngs=nnx.Rngs(1))
  p = lnnx.to_linen(ours)["params"]
  assert "bias" not in p["hn"] and "bias" in cells.GRUCell(N).init(
      jax.random.key(0), jnp.zeros((1, N)), jnp.zeros((1, D)))["params"]["hn"]
  cat = lambda *a: jnp.concatenate(a, axis=-1)  # noqa: E731
  _load(theirs, {
      "dense_i": {"kernel": cat(*(p[g]["kernel"] for g in ("ir", "iz", "in"))),
                  "bias": cat(*(p[g]["bias"] for g in ("ir", "iz", "in")))},
      "dense_h": {"kernel": cat(*(p[g]["kernel"] for g in ("hr", "hz", "hn")))}})
  x = _inputs()
  want = nnx.RNN(theirs)(x)
  _close(nnx.RNN(ours.prepared())(x), want)


def test_the_cells_serve_nnx_bidirectional_and_a_users_own_cell():
  fwd = lnnx.ScoRNNCell(D, N, rngs=nnx.Rngs(0))
  bwd = lnnx.ScoRNNCell(D, N, rngs=nnx.Rngs(1))
  x = _inputs()
  both = nnx.Bidirectional(nnx.RNN(fwd.prepared()), nnx.RNN(bwd.prepared()))(x)
  assert both.shape == (B, T, 2 * N)
  _close(both[..., :N], nnx.RNN(fwd)(x))

  class UserCell(nnx.RNNCellBase):
    def __init__(self, rngs):
      self.inner = lnnx.LVFRNNCell(D, N, rngs=rngs)
      self.readout = nnx.Linear(N, 2, rngs=rngs)

    def __call__(self, carry, x):
      carry, y = self.inner(carry, x)
      return carry, self.readout(y)

    def initialize_carry(self, input_shape, rngs=None):
      return self.inner.initialize_carry(input_shape, rngs)

    @property
    def num_feature_axes(self):
      return 1

  assert nnx.RNN(UserCell(nnx.Rngs(0)))(x).shape == (B, T, 2)


def test_a_released_model_evaluates_to_its_card_through_its_nnx_cell():
  """The copy lvfRNN of the zoo, its cell run as an NNX front end (``nnx.RNN`` of the
  prepared cell, then the released read-out), measured by the training loop's evaluation
  on the card's split: the card's figures within its tolerances."""
  from lvf_jax import zoo
  from lvf_jax.train import builders, loop, model_builder
  name = "lvf-t4-copy-lvf-separate-rates"
  check = zoo.card(name)["check"]
  _, variables, c = zoo.load(name)
  pipeline = builders.build_pipeline(c)
  definition = model_builder.build_cells(c)[0]
  params = variables["params"]
  cell = lnnx.NNXCell(pipeline.input_size, definition.features, rngs=nnx.Rngs(0),
                      definition=definition)
  nnx.update(cell, nnx.State({"params": jax.tree_util.tree_map(
      nnx.Param, dict(params["rnn"]["layer_0"]["cell"]))}))
  head = params["head"]

  def eval_step(params, extras, batch, carry):
    del params, extras
    outputs = nnx.RNN(cell.prepared())(batch.inputs) @ head["kernel"] + head["bias"][None, None]
    metrics = dict(pipeline.eval_metrics(outputs, batch))
    metrics["loss"] = pipeline.loss(outputs, batch)
    metrics["weight"] = pipeline.batch_weight(batch)
    return metrics, carry

  got = loop.evaluate(eval_step, pipeline, None, None, check["split"])
  for key, want in check["metrics"].items():
    assert abs(got[key] - want) <= check["tolerance"][key] * max(1.0, abs(want)), (key, got)


def test_the_gru_without_a_candidate_bias_runs_in_the_fused_scan():
  from lvf_jax import layers
  cell = cells.GRUCell(N, candidate_bias=False)
  x = _inputs()
  variables = nn.RNN(cell).init(jax.random.key(0), x)
  want = nn.RNN(cell).apply(variables, x)
  got = layers.Recurrent(cell, fused=True).apply(variables, x)
  _close(got, want)


def test_from_linen_loads_every_collection_it_is_given():
  """The expRNN's dynamic-trivialisation base (collection ``'dtriv'``) travels with its
  parameters, so the NNX cell computes the Linen cell's ``W = B expm(A)``."""
  definition = cells.ExpRNNCell(N, use_base=True)
  variables = definition.init(jax.random.key(3), jnp.zeros((1, N)), jnp.zeros((1, D)))
  base = jnp.asarray(geometry.expm(geometry.haar_skew()(jax.random.key(4), (N, N))))
  variables = {"params": variables["params"], "dtriv": {"base": base}}
  cell = lnnx.from_linen("exprnn", variables, D, N, use_base=True)
  np.testing.assert_array_equal(lnnx.to_linen(cell)["dtriv"]["base"], base)
  h, x = jnp.ones((B, N)) / N, _inputs()[:, 0]
  want = definition.apply(variables, h, x)[1]
  _close(cell(h, x)[1], want)
  _close(cell.prepared()(h, x)[1], want)
