"""The structured LSTM and GRU cells against Flax's cells (same parameter tree, same
initial values, same outputs and gradients) and against the equations in NumPy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from lvf_jax import cells, layers
import tolerances as tol

N, M, B, T = 5, 3, 2, 6
PAIRS = [("lstm", cells.LSTMCell, nn.OptimizedLSTMCell), ("lstm", cells.LSTMCell, nn.LSTMCell),
         ("gru", cells.GRUCell, nn.GRUCell)]


def sigmoid(v):
  return 1.0 / (1.0 + np.exp(-v))


def np_lstm_step(p, c, h, x):
  g = {k: x @ p["i" + k]["kernel"] + h @ p["h" + k]["kernel"] + p["h" + k]["bias"]
       for k in "ifgo"}
  c_new = sigmoid(g["f"]) * c + sigmoid(g["i"]) * np.tanh(g["g"])
  return c_new, sigmoid(g["o"]) * np.tanh(c_new)


def np_gru_step(p, h, x):
  r = sigmoid(x @ p["ir"]["kernel"] + p["ir"]["bias"] + h @ p["hr"]["kernel"])
  z = sigmoid(x @ p["iz"]["kernel"] + p["iz"]["bias"] + h @ p["hz"]["kernel"])
  n = np.tanh(x @ p["in"]["kernel"] + p["in"]["bias"]
              + r * (h @ p["hn"]["kernel"] + p["hn"]["bias"]))
  return (1.0 - z) * n + z * h


def _np_params(params, seed=3):
  """Float64 copies with random (non-zero) biases, so that every term is exercised."""
  rng = np.random.default_rng(seed)
  out = {}
  for block, leaves in params.items():
    out[block] = {k: np.asarray(v, np.float64) + (0.3 * rng.standard_normal(v.shape)
                                                  if k == "bias" else 0.0)
                  for k, v in leaves.items()}
  return out


@pytest.mark.parametrize("name,ours,theirs", PAIRS)
def test_same_parameter_tree_and_initial_values_as_flax(name, ours, theirs):
  x = jnp.ones((B, M))
  mine, flax_cell = ours(N), theirs(N)
  carry = mine.initialize_carry(jax.random.key(0), x.shape)
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_array_equal(a, b), carry,
                         flax_cell.initialize_carry(jax.random.key(0), x.shape))
  p_mine = mine.init(jax.random.key(7), carry, x)["params"]
  p_flax = flax_cell.init(jax.random.key(7), carry, x)["params"]
  assert jax.tree_util.tree_structure(p_mine) == jax.tree_util.tree_structure(p_flax)
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_array_equal(a, b), p_mine, p_flax)


@pytest.mark.parametrize("name,ours,theirs", PAIRS)
def test_sequence_outputs_and_gradients_equal_flax(name, ours, theirs):
  x = jax.random.normal(jax.random.key(1), (B, T, M))
  lengths = jnp.array([T, T - 2])
  layer = layers.Recurrent(ours(N), return_carry=True)        # hoisted, structured scan
  flax_rnn = nn.RNN(theirs(N), return_carry=True)            # Flax's cell per step
  params = layer.init(jax.random.key(2), x)["params"]
  params = jax.tree_util.tree_map(
      lambda v: v + 0.1 * jax.random.normal(jax.random.key(4), v.shape), params)
  # Only the valid steps are compared: nn.RNN leaves the cell's outputs at padded steps,
  # Recurrent zeros them (the carries agree: both freeze it after the last valid step).
  valid = (jnp.arange(T)[None, :] < lengths[:, None])[..., None]
  w = jnp.where(valid, jax.random.normal(jax.random.key(5), (B, T, N)), 0.0)

  def loss(module, p):
    carry, ys = module.apply({"params": p}, x, seq_lengths=lengths)
    return jnp.sum(ys * w) + sum(jnp.sum(c ** 2) for c in jax.tree_util.tree_leaves(carry))

  (l1, g1), (l2, g2) = jax.jit(lambda p: (jax.value_and_grad(lambda q: loss(layer, q))(p),
                                          jax.value_and_grad(lambda q: loss(flax_rnn, q))(p)))(
                                              params)
  # T = 6 steps of N + M = 8-term gates, then B * T * N = 60 summed terms
  np.testing.assert_allclose(l1, l2, rtol=tol.F32["rtol"])
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F32_GRAD),
                         g1, g2)
  zero = [jax.tree_util.keystr(k) for k, g in jax.tree_util.tree_leaves_with_path(g1)
          if not np.any(np.asarray(g) != 0)]
  assert not zero, zero


def test_lstm_step_matches_numpy_equations():
  cell = cells.LSTMCell(N)
  x = np.asarray(jax.random.normal(jax.random.key(0), (B, M)))
  c = np.asarray(jax.random.normal(jax.random.key(1), (B, N)))
  h = np.asarray(jax.random.normal(jax.random.key(2), (B, N)))
  params = _np_params(cell.init(jax.random.key(3), (jnp.asarray(c), jnp.asarray(h)),
                                jnp.asarray(x))["params"])
  p32 = jax.tree_util.tree_map(lambda v: jnp.asarray(v, jnp.float32), params)
  (c_new, h_new), y = cell.apply({"params": p32}, (jnp.asarray(c), jnp.asarray(h)),
                                 jnp.asarray(x))
  want_c, want_h = np_lstm_step(params, c, h, x)
  np.testing.assert_allclose(c_new, want_c, **tol.F32)
  np.testing.assert_allclose(h_new, want_h, **tol.F32)
  np.testing.assert_array_equal(y, h_new)


def test_gru_step_matches_numpy_equations():
  cell = cells.GRUCell(N)
  x = np.asarray(jax.random.normal(jax.random.key(0), (B, M)))
  h = np.asarray(jax.random.normal(jax.random.key(2), (B, N)))
  params = _np_params(cell.init(jax.random.key(3), jnp.asarray(h), jnp.asarray(x))["params"])
  p32 = jax.tree_util.tree_map(lambda v: jnp.asarray(v, jnp.float32), params)
  h_new, y = cell.apply({"params": p32}, jnp.asarray(h), jnp.asarray(x))
  np.testing.assert_allclose(h_new, np_gru_step(params, h, x), **tol.F32)
  np.testing.assert_array_equal(y, h_new)


@pytest.mark.parametrize("cls", [cells.LSTMCell, cells.GRUCell])
def test_bfloat16_inputs_compute_in_float32_and_bad_input_raises(cls):
  cell = cls(N)
  x = jnp.ones((B, M), jnp.bfloat16)
  carry = cell.initialize_carry(jax.random.key(0), x.shape)
  variables = cell.init(jax.random.key(1), carry, x)
  _, y = cell.apply(variables, carry, x)
  assert y.dtype == jnp.float32
  with pytest.raises(ValueError, match=f"{cls.__name__}: inputs must have {M} features"):
    cell.apply(variables, carry, jnp.ones((B, M + 1)))
  with pytest.raises(ValueError, match=f"{cls.__name__}: argument 'features'"):
    cls(0).init(jax.random.key(1), carry, x)


@pytest.mark.parametrize("name", ["gru", "goru", "ncgru"])
def test_gated_cells_project_three_arrays_and_step_takes_either_form(name):
  """GRU, GORU and NC-GRU project their inputs into three (..., n) arrays (one product per
  gate block, biases folded in); the step gives the same state from the three arrays and
  from them concatenated, and rejects anything else."""
  cell = cells.make_cell(name, N)
  x = jax.random.normal(jax.random.key(0), (T, B, M))
  h = jax.random.normal(jax.random.key(2), (B, N))
  params = cell.init(jax.random.key(3), h, x[0])["params"]
  # random biases, so that the folding of each block's bias is checked
  params = jax.tree_util.tree_map_with_path(
      lambda path, v: v + 0.3 * jax.random.normal(jax.random.key(len(str(path))), v.shape)
      if "bias" in str(path[-1]) else v, params)
  v = {"params": params}
  u = cell.apply(v, x, method=lambda c, xx: c.project_inputs(xx))
  assert isinstance(u, tuple) and [a.shape for a in u] == [(T, B, N)] * 3
  p = jax.tree_util.tree_map(np.asarray, params)
  xn = np.asarray(x)
  if name == "gru":
    want = [xn @ p[f"i{g}"]["kernel"] + p[f"i{g}"]["bias"] for g in "rzn"]
  else:
    k = p["input"]["kernel"]
    b_z = p["bias_z"] if name == "goru" else p["bias_u"]
    want = [xn @ k[:, :N] + p["bias_r"], xn @ k[:, N:2 * N] + b_z, xn @ k[:, 2 * N:]]
  for got, w in zip(u, want):
    np.testing.assert_allclose(got, w, **tol.F32)
  prep = cell.apply(v, method=lambda c: c.prepare())
  u0 = tuple(a[0] for a in u)
  a = cell.step(prep, h, u0)[0]
  b = cell.step(prep, h, jnp.concatenate(u0, axis=-1))[0]
  np.testing.assert_allclose(a, b, **tol.F32_SHORT)  # the same step, its inputs sliced
  with pytest.raises(ValueError, match="projected inputs must be 3 arrays"):
    cell.step(prep, h, u0[:2])
  with pytest.raises(ValueError, match="projected inputs must be 3 arrays"):
    cell.step(prep, h, u0[0])


def test_lstm_forget_bias_starts_the_forget_gate_bias_there_and_runs_the_equations():
  """``forget_bias`` shifts only the initial ``b_hf`` (same key, every other leaf equal),
  and the fused layer with those parameters is the NumPy LSTM loop."""
  x = jax.random.normal(jax.random.key(0), (B, T, M))
  plain = layers.Recurrent(cells.LSTMCell(N)).init(jax.random.key(1), x)["params"]["cell"]
  layer = layers.Recurrent(cells.LSTMCell(N, forget_bias=1.0))
  params = layer.init(jax.random.key(1), x)["params"]["cell"]
  flat_plain = jax.tree_util.tree_leaves_with_path(plain)
  flat = dict(jax.tree_util.tree_leaves_with_path(params))
  for path, leaf in flat_plain:
    shift = 1.0 if jax.tree_util.keystr(path) == "['hf']['bias']" else 0.0
    np.testing.assert_array_equal(np.asarray(flat[path]), np.asarray(leaf) + shift)
  p = jax.tree_util.tree_map(lambda a: np.asarray(a, np.float64), params)
  c = h = np.zeros((B, N))
  want = []
  for t in range(T):
    c, h = np_lstm_step(p, c, h, np.asarray(x[:, t], np.float64))
    want.append(h)
  got = layer.apply({"params": {"cell": params}}, x)
  np.testing.assert_allclose(np.asarray(got), np.stack(want, 1), **tol.F32)
  with pytest.raises(ValueError, match="'forget_bias' must be a finite number"):
    layers.Recurrent(cells.LSTMCell(N, forget_bias=float("inf"))).init(jax.random.key(1), x)
