"""lvf_jax.optim: the optax.partition labeller, make_optimizer(config) and the dynamic
trivialisation (dtriv) helpers, on hand-built parameter trees and small Flax models."""

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest

from lvf_jax import geometry as g
from lvf_jax import optim
from optim_helpers import orthogonal_start, standard
import tolerances as tol

N, RHO = 8, 2


def w0(n=N, rho=RHO, seed=0):
  return orthogonal_start(n, rho, seed)


# ------------------------------------------------------------------ labeller

@pytest.mark.parametrize("name,label", [
    ("orthogonal", "orthogonal"), ("orthogonal_c", "orthogonal"), ("orthogonality", "default"),
    ("unitary", "unitary"), ("unitary_v", "unitary"), ("unitarity", "default"),
    ("skew", "skew"), ("skew_r", "skew"), ("skewed", "default"),
    ("vector_field", "vector_field"), ("vector_field_2", "vector_field"),
    ("kernel", "default"), ("bias", "default"), (3, "default")])
def test_label_for_name(name, label):
  assert optim.label_for_name(name) == label


def test_param_labels_hand_built_tree():
  params = {
      "layer_0": {"cell": {"orthogonal_c": 1, "orthogonal_r": 2, "skew": 3, "bias": 4,
                           "input": {"kernel": 5}}},
      "lvf": {"vector_field": 6, "input": {"kernel": 7, "bias": 8}},
      "head": {"kernel": 9},
  }
  labels = optim.param_labels(params)
  assert labels == {
      "layer_0": {"cell": {"orthogonal_c": "orthogonal", "orthogonal_r": "orthogonal",
                           "skew": "skew", "bias": "default", "input": {"kernel": "default"}}},
      "lvf": {"vector_field": "vector_field",
              "input": {"kernel": "default", "bias": "default"}},
      "head": {"kernel": "default"},
  }


class TinyCell(nn.Module):
  """A toy recurrent cell following the naming convention: column-form ``orthogonal``
  (or a ``skew`` generator with a dtriv base), an input kernel, and a bias."""
  features: int = N
  mode: str = "orthogonal"  # 'orthogonal' | 'skew' | 'vector_field'
  partitioned: bool = False

  @nn.compact
  def __call__(self, h, x):
    n = self.features
    init = lambda k, s, d=jnp.float32: g.scaled_cayley(g.cayley_init()(k, s, d), RHO)
    if self.partitioned:
      init = nn.with_partitioning(init, (None, None))
    if self.mode == "orthogonal":
      m = self.param("orthogonal", init, (n, n))
      if self.partitioned:
        m = nn.unbox(m)
    elif self.mode == "skew":
      s = self.param("skew", lambda k, sh: jnp.triu(g.henaff()(k, sh), 1), (n, n))
      base = self.variable("dtriv", "base", lambda: jnp.eye(n))
      m = base.value @ optim.expm_triu(s)
    else:
      v = self.param("vector_field", nn.initializers.normal(0.1), (n, n))
      m = g.midpoint(g.directional_derivative(v), 1.0)
    b = self.param("bias", nn.initializers.zeros, (n,))
    z = h @ m.T + nn.Dense(n, name="input")(x)
    return jnp.tanh(z + jnp.broadcast_to(b, z.shape))


class TinyModel(nn.Module):
  partitioned: bool = False

  @nn.compact
  def __call__(self, x):
    h = jnp.zeros(x.shape[:-2] + (N,))
    cell = TinyCell(mode="orthogonal", partitioned=self.partitioned, name="rnn")
    for t in range(x.shape[-2]):  # a few steps only; cells use lax.scan in the library
      h = cell(h, x[..., t, :])
    h2 = TinyCell(mode="vector_field", name="lvf")(h, h)
    return nn.Dense(2, name="head")(h2)


def test_param_labels_flax_model_and_partition_boxes():
  x = jnp.ones((3, 2, 5))
  for partitioned in (False, True):
    params = TinyModel(partitioned=partitioned).init(jax.random.key(0), x)["params"]
    labels = optim.param_labels(params)
    flat = {jax.tree_util.keystr(p): l for p, l in jax.tree_util.tree_flatten_with_path(labels)[0]}
    assert flat.pop("['rnn']['orthogonal']" + (".value" if partitioned else "")) == "orthogonal"
    assert flat.pop("['lvf']['vector_field']") == "vector_field"
    assert set(flat.values()) == {"default"} and len(flat) == 8


def test_partition_with_labeller_trains_flax_model():
  """optax.partition + param_labels + scornn trains the Flax model's orthogonal matrix
  while Adam trains the rest; the loss decreases and W stays orthogonal."""
  model = TinyModel()
  x = jax.random.normal(jax.random.key(1), (16, 3, 5))
  y = jax.random.normal(jax.random.key(2), (16, 2))
  params = model.init(jax.random.key(0), x)["params"]
  tx = optax.partition({
      "orthogonal": optim.scornn(optax.rmsprop(1e-2), RHO),
      "vector_field": optax.adam(1e-2), "skew": optax.adam(1e-3),
      "default": optax.adam(1e-2)}, optim.param_labels)
  loss = lambda p: jnp.mean(jnp.square(model.apply({"params": p}, x) - y))

  @jax.jit
  @standard
  def step(p, s):
    l, grads = jax.value_and_grad(loss)(p)
    u, s = tx.update(grads, s, p)
    return optax.apply_updates(p, u), s, l

  s = standard(tx.init)(params)
  w_start = params["rnn"]["orthogonal"]
  losses = []
  for _ in range(30):
    params, s, l = step(params, s)
    losses.append(float(l))
  assert losses[-1] < 0.8 * losses[0]
  # scoRNN recomputes W from A at every update: one float32 solve of N x N and W^T W
  assert float(g.orthogonality_error(params["rnn"]["orthogonal"])) < tol.F32["atol"]
  assert float(jnp.max(jnp.abs(params["rnn"]["orthogonal"] - w_start))) > 1e-3


# ------------------------------------------------------------------ make_optimizer

def test_make_optimizer_default_is_rmsprop_with_lr_orth_tenth():
  """First RMSprop step (PyTorch form, alpha 0.99, eps outside sqrt) from nu = 0:
  ``-lr g / (sqrt(0.01 g^2) + eps) ~= -10 lr sign(g)``; the skew group uses lr / 10."""
  params = {"cell": {"skew": jnp.zeros((N, N)), "bias": jnp.zeros((N,))},
            "lvf": {"vector_field": jnp.zeros((N, N))}}
  grads = jax.tree.map(lambda p: jax.random.normal(jax.random.key(p.size), p.shape), params)
  lr = 1e-3
  tx = optim.make_optimizer({"learning_rate": lr})
  u, _ = standard(tx.update)(grads, standard(tx.init)(params), params)

  def expected(gr, rate):
    gr = np.asarray(gr, np.float64)
    return -rate * gr / (np.sqrt(0.01 * gr * gr) + 1e-8)

  # float32 g^2, nu, sqrt, + eps, the divide and lr: 6 roundings, past F32_SHORT's 4
  rtol = tol.F32["rtol"]
  np.testing.assert_allclose(u["cell"]["bias"], expected(grads["cell"]["bias"], lr), rtol=rtol)
  np.testing.assert_allclose(u["lvf"]["vector_field"],
                             expected(grads["lvf"]["vector_field"], lr), rtol=rtol)
  np.testing.assert_allclose(u["cell"]["skew"], expected(grads["cell"]["skew"], lr / 10),
                             rtol=rtol)


@pytest.mark.parametrize("method,step,ref", [
    ("scornn", "actual", lambda lr: optim.scornn(optax.adam(lr), RHO)),
    ("neumann_cayley", "actual", lambda lr: optim.neumann_cayley(
        optax.adam(lr), RHO, order=3, reset_every=4, threshold=0.5)),
    ("neumann_cayley", "sgd", lambda lr: optim.neumann_cayley(
        optax.adam(lr), RHO, order=3, reset_every=4, threshold=0.5, sgd_series_lr=lr)),
    ("multiplicative", "actual",
     lambda lr: optim.multiplicative_cayley(lr, reorthonormalize_every=4)),
])
def test_make_optimizer_riemannian_methods(method, step, ref):
  params = {"rnn": {"orthogonal": w0(), "bias": jnp.zeros((N,))}}
  cfg = optim.default_config()
  cfg.optimizer = "adam"
  cfg.learning_rate = 1e-2
  cfg.orthogonal_method = method
  cfg.neumann_step = step
  cfg.rho = RHO
  cfg.neumann_order = 3
  cfg.reset_every = 4
  cfg.reorthonormalize_every = 4
  tx = optim.make_optimizer(cfg)
  direct, adam = ref(1e-3), optax.adam(1e-2)
  s, sd, sa = standard(tx.init)(params), standard(direct.init)(params["rnn"]["orthogonal"]), \
      standard(adam.init)(params["rnn"]["bias"])
  update = jax.jit(standard(tx.update))
  p = params
  w, b = params["rnn"]["orthogonal"], params["rnn"]["bias"]
  for k in range(6):
    grads = {"rnn": {"orthogonal": jax.random.normal(jax.random.key(k), (N, N)),
                     "bias": jax.random.normal(jax.random.key(100 + k), (N,))}}
    u, s = update(grads, s, p)
    p = optax.apply_updates(p, u)
    du, sd = standard(direct.update)(grads["rnn"]["orthogonal"], sd, w)
    db, sa = standard(adam.update)(grads["rnn"]["bias"], sa, b)
    w, b = w + du, b + db
    # jitted against op by op: up to 6 updates of N x N solves and products (300 terms), and
    # 6 Adam updates of about 8 roundings each
    np.testing.assert_allclose(p["rnn"]["orthogonal"], w, atol=tol.F32["atol"])
    np.testing.assert_allclose(p["rnn"]["bias"], b, atol=tol.F32["atol"])
  # resets or re-orthonormalisations every 4 updates: 4 x 4 products of N terms; the SGD
  # series leaves the group two updates after its reset
  error = float(g.orthogonality_error(p["rnn"]["orthogonal"]))
  assert (error < tol.F32["atol"]) == (step == "actual"), error


@pytest.mark.parametrize("gradient", ["raw", "rms"])
def test_make_optimizer_unitary_gradient(gradient):
  """The 'unitary' group's step against NumPy of Wisdom et al. (2016, arXiv:1611.00035,
  eqs 8-9) in complex arithmetic: ``A = G W^H - W G^H``, ``W <- (I + lr/2 A)^-1
  (I - lr/2 A) W``, with ``G`` the raw gradient or, for 'rms', the gradient divided
  elementwise by ``sqrt(nu) + eps``, ``nu`` the running mean of its square (decay 0.9
  from 0; their code's 'full_natGradRMS')."""
  rng = np.random.default_rng(0)
  q, _ = np.linalg.qr(rng.normal(size=(N, N)) + 1j * rng.normal(size=(N, N)))
  params = {"cell": {"unitary": jnp.asarray(np.stack([q.real, q.imag]), jnp.float32)}}
  lr, decay, eps = 0.05, 0.9, 1e-8
  tx = optim.make_optimizer({"learning_rate": 1e-3, "lr_orth": lr, "rmsprop_decay": decay,
                             "reorthonormalize_every": 0, "unitary_gradient": gradient})
  state = standard(tx.init)(params)
  w, nu = q, np.zeros((2, N, N))
  for k in range(3):
    grad = rng.normal(size=(2, N, N)) * 10.0 ** k
    u, state = standard(tx.update)({"cell": {"unitary": jnp.asarray(grad, jnp.float32)}},
                                   state, params)
    params = optax.apply_updates(params, u)
    if gradient == "rms":
      nu = decay * nu + (1 - decay) * grad ** 2
      grad = grad / (np.sqrt(nu) + eps)
    gc = grad[0] + 1j * grad[1]
    a = gc @ w.conj().T - w @ gc.conj().T
    eye = np.eye(N)
    w = np.linalg.solve(eye + lr / 2 * a, (eye - lr / 2 * a) @ w)
    got = np.asarray(params["cell"]["unitary"], np.float64)
    # complex float32: 3 updates of N x N solves and products, 4 real products per complex
    # one, at cond(I + lr/2 A) up to 10 (the gradient at 10^2): 3,000 terms
    np.testing.assert_allclose(got[0] + 1j * got[1], w, atol=tol.F32_LONG["atol"])
  with pytest.raises(ValueError, match=r"argument 'unitary_gradient' must be one of"):
    optim.make_optimizer({"unitary_gradient": "natural"})


def test_make_optimizer_clip_and_step_schedule_and_warmup():
  params = {"kernel": jnp.zeros((3,))}
  grads = {"kernel": jnp.array([30.0, 40.0, 0.0])}  # global norm 50
  tx = optim.make_optimizer({"optimizer": "sgd", "learning_rate": 0.1, "clip_norm": 5.0,
                             "lr_schedule": "step", "lr_decay": 0.5, "lr_decay_steps": 2})
  s = tx.init(params)
  got = []
  for _ in range(5):
    u, s = tx.update(grads, s, params)
    got.append(np.asarray(u["kernel"]))
  clipped = np.array([3.0, 4.0, 0.0])
  for k, rate in enumerate([0.1, 0.1, 0.05, 0.05, 0.025]):
    # the global norm (3 squares, sqrt), the clip's divide and product, the rate: 7 roundings
    np.testing.assert_allclose(got[k], -rate * clipped, rtol=tol.F32["rtol"])
  tx = optim.make_optimizer({"optimizer": "sgd", "learning_rate": 0.1, "warmup_steps": 4})
  s = tx.init(params)
  rates = []
  for _ in range(6):
    u, s = tx.update({"kernel": jnp.ones((3,))}, s, params)
    rates.append(-float(u["kernel"][0]))
  # count / steps times the rate: 2 roundings at the largest rate
  np.testing.assert_allclose(rates, [0.0, 0.025, 0.05, 0.075, 0.1, 0.1],
                             atol=tol.F32_SHORT["atol"] * max(rates))


def test_make_optimizer_adagrad_matches_duchi_numpy():
  """Adagrad (Duchi, Hazan, Singer 2011): x -= lr g / sqrt(a0 + sum of past g^2), a NumPy
  loop over steps against the factory's transformation."""
  rng = np.random.default_rng(0)
  grads = rng.normal(size=(6, 5)).astype(np.float32)
  lr, a0 = 0.3, 0.1
  tx = optim.make_optimizer({"optimizer": "adagrad", "learning_rate": lr,
                             "adagrad_initial_accumulator": a0})
  params = {"kernel": jnp.zeros((5,))}
  s = tx.init(params)
  acc = np.full(5, a0, np.float64)
  for g_t in grads:
    u, s = tx.update({"kernel": jnp.asarray(g_t)}, s, params)
    acc += g_t.astype(np.float64) ** 2
    want = -lr * g_t / np.sqrt(acc + 1e-8)  # the factory's default eps, inside the root
    # a sum of at most 6 squares, a root, a divide and the rate: about 10 roundings
    np.testing.assert_allclose(np.asarray(u["kernel"]), want, rtol=tol.F32["rtol"])
  with pytest.raises(ValueError, match="adagrad_initial_accumulator' must be a number >= 0"):
    optim.make_optimizer({"optimizer": "adagrad", "adagrad_initial_accumulator": -1.0})


def test_make_optimizer_errors():
  with pytest.raises(ValueError, match=r"make_optimizer: unknown config field\(s\) \['lr'\]"):
    optim.make_optimizer({"lr": 1e-3})
  with pytest.raises(ValueError, match=r"make_optimizer: argument 'optimizer' must be one of"):
    optim.make_optimizer({"optimizer": "adadelta"})
  with pytest.raises(ValueError, match=r"make_optimizer: argument 'orthogonal_method'"):
    optim.make_optimizer({"orthogonal_method": "givens"})
  with pytest.raises(ValueError, match=r"make_optimizer: config field 'learning_rate'"):
    optim.make_optimizer({"learning_rate": -1.0})
  with pytest.raises(ValueError, match=r"make_optimizer: argument 'rho' must be an int"):
    optim.make_optimizer({"orthogonal_method": "scornn", "rho": -2})
  with pytest.raises(ValueError, match=r"make_optimizer: argument 'neumann_step' must be one"):
    optim.make_optimizer({"orthogonal_method": "neumann_cayley", "neumann_step": "adam"})
  with pytest.raises(ValueError, match=r"make_optimizer: argument 'two_kernel_update' must"):
    optim.make_optimizer({"orthogonal_method": "neumann_cayley", "two_kernel_update": "mine"})
  for key, value in (("neumann_step", "sgd"), ("two_kernel_update", "released")):
    for method in ("trivialization", "scornn", "multiplicative"):  # they would ignore it
      with pytest.raises(ValueError, match=rf"field '{key}' applies to orthogonal_method="
                                           rf"'neumann_cayley' only .*='{method}'"):
        optim.make_optimizer({"orthogonal_method": method, key: value})
  with pytest.raises(ValueError, match=r"make_optimizer: argument 'config' must be a dict"):
    optim.make_optimizer(3)
  tx = optim.make_optimizer({"orthogonal_method": "scornn", "rho": 20})
  with pytest.raises(ValueError, match=r"scornn: argument 'rho' .* \[0, n=8\]; got rho=20"):
    tx.init({"orthogonal": w0()})
  tx = optim.make_optimizer({})
  with pytest.raises(ValueError, match=r"make_optimizer: orthogonal_method='trivialization' "
                                       r"cannot train .*orthogonal"):
    tx.init({"cell": {"orthogonal": w0()}})


def test_default_config_roundtrip():
  cfg = optim.default_config()
  assert isinstance(cfg, ml_collections.ConfigDict)
  assert set(cfg.keys()) == set(optim.DEFAULTS)
  cfg.lr_orth = 1e-5
  cfg.orth_optimizer = "rmsprop"
  optim.make_optimizer(cfg).init({"skew": jnp.zeros((2, 2))})


# ------------------------------------------------------------------ dynamic trivialisation

def test_dtriv_rebase_keeps_function_and_resets_skew():
  model = TinyCell(mode="skew")
  h, x = jnp.ones((2, N)), jnp.ones((2, 3))
  variables = model.init(jax.random.key(0), h, x)
  params, bases = variables["params"], variables["dtriv"]
  w_before = bases["base"] @ optim.expm_triu(params["skew"])
  out_before = model.apply({"params": params, "dtriv": bases}, h, x)
  for step, due in [(0, False), (3, False), (5, True), (10, True)]:
    new_p, new_b = jax.jit(functools.partial(optim.dynamic_trivialization, every=5,
                                             orthonormalize_every=2))(params, bases, step)
    if not due:
      assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.all(a == b)), new_p, params))
      assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.all(a == b)), new_b, bases))
      continue
    np.testing.assert_array_equal(new_p["skew"], 0.0)
    # jitted against op by op: expm's products of N terms and the base's product
    np.testing.assert_allclose(new_b["base"], w_before, atol=tol.F32["atol"])
    np.testing.assert_array_equal(new_p["bias"], params["bias"])
    out_after = model.apply({"params": new_p, "dtriv": new_b}, h, x)
    np.testing.assert_allclose(out_after, out_before, atol=tol.F32["atol"])  # and h W: N terms


def test_dtriv_orthonormalises_base_every_m_rebases():
  params = {"cell": {"skew": jnp.zeros((N, N))}}
  drifted = {"cell": {"base": w0() + 1e-3 * jax.random.normal(jax.random.key(0), (N, N))}}
  # step 5 = rebase #1 (no projection with M=2); step 10 = rebase #2 (projection).
  _, b1 = optim.dynamic_trivialization(params, drifted, 5, every=5, orthonormalize_every=2)
  _, b2 = optim.dynamic_trivialization(params, drifted, 10, every=5, orthonormalize_every=2)
  assert float(g.orthogonality_error(b1["cell"]["base"])) > 1e-4
  # a float32 polar factor of N x N against float64 SVD, W^T W
  assert float(g.orthogonality_error(b2["cell"]["base"])) < tol.F32["atol"]
  u, _, vt = np.linalg.svd(np.asarray(drifted["cell"]["base"], np.float64))
  np.testing.assert_allclose(b2["cell"]["base"], u @ vt, atol=tol.F32["atol"])


def test_dtriv_training_loop_with_train_state():
  """dtriv inside a jitted Flax TrainState step: every K=5 updates skew resets to 0, the
  model function is continuous across rebases and the loss decreases."""
  from flax.training import train_state  # pylint: disable=g-import-not-at-top
  model = TinyCell(mode="skew")
  h = jax.random.normal(jax.random.key(1), (32, N))
  x = jax.random.normal(jax.random.key(2), (32, 3))
  y = 0.5 * jax.random.normal(jax.random.key(3), (32, N))
  variables = model.init(jax.random.key(0), h, x)
  state = train_state.TrainState.create(
      apply_fn=model.apply, params=variables["params"],
      tx=optim.make_optimizer({"learning_rate": 3e-3}))
  bases = variables["dtriv"]

  def loss_fn(params, bases):
    return jnp.mean(jnp.square(state.apply_fn({"params": params, "dtriv": bases}, h, x) - y))

  @jax.jit
  @standard
  def train_step(state, bases):
    loss, grads = jax.value_and_grad(loss_fn)(state.params, bases)
    state = state.apply_gradients(grads=grads)
    params, bases = optim.dynamic_trivialization(state.params, bases, state.step, every=5,
                                                 orthonormalize_every=2)
    return state.replace(params=params), bases, loss

  losses = []
  for k in range(1, 21):
    before = loss_fn(state.params, bases)
    state, bases, loss = train_step(state, bases)
    losses.append(float(loss))
    # continuity: the mean of 32 N squares (256 terms) after the base moves
    np.testing.assert_allclose(float(loss), float(before), rtol=tol.F32["rtol"])
    skew_zero = bool(jnp.all(state.params["skew"] == 0))
    assert skew_zero == (k % 5 == 0)
  assert losses[-1] < 0.9 * losses[0]
  assert float(g.orthogonality_error(bases["base"])) < tol.F32["atol"]  # projected every 2 rebases


def test_dtriv_with_library_exprnn_cell():
  """The library's ExpRNNCell(use_base=True) follows the same convention."""
  cells = pytest.importorskip("lvf_jax.cells.orthogonal")
  cell = cells.ExpRNNCell(features=6, use_base=True)
  v = cell.init(jax.random.key(0), jnp.zeros((6,)), jnp.zeros((3,)))
  w = cell.apply(v, method=lambda m: m.recurrent_matrix())
  p, b = optim.dtriv_rebase(v["params"], v[optim.DTRIV_COLLECTION])
  np.testing.assert_array_equal(p["skew"], 0.0)
  w2 = cell.apply({"params": p, optim.DTRIV_COLLECTION: b}, method=lambda m: m.recurrent_matrix())
  # B expm(S) both: the new base B' = B expm(S) times expm(0) = I, exactly
  np.testing.assert_allclose(w2, w, atol=tol.F32_SHORT["atol"])


def test_dtriv_errors():
  with pytest.raises(ValueError, match=r"dtriv_rebase: base \['cell'\]\['base'\] has no "
                                       r"matching parameter"):
    optim.dtriv_rebase({"cell": {"kernel": jnp.zeros((2, 2))}}, {"cell": {"base": jnp.eye(2)}})
  with pytest.raises(ValueError, match=r"dynamic_trivialization: argument 'every' must be"):
    optim.dynamic_trivialization({"skew": jnp.zeros((2, 2))}, {"base": jnp.eye(2)}, 1, every=0)
  with pytest.raises(ValueError, match=r"dtriv_rebase: base .* has shape \(3, 3\)"):
    optim.dtriv_rebase({"skew": jnp.zeros((2, 2))}, {"base": jnp.eye(3)})


def test_the_divergence_of_a_separate_field_trains_at_its_own_rate():
  """``lr_divergence`` moves ``vector_field_divergence`` alone; unset, it is
  ``lr_vector_field``."""
  params = {"cell": {"vector_field": jnp.ones((3, 3)), "vector_field_divergence": jnp.ones(3),
                     "bias": jnp.ones(3)}}
  assert optim.param_labels(params)["cell"] == {
      "vector_field": "vector_field", "vector_field_divergence": "divergence",
      "bias": "default"}
  grads = jax.tree_util.tree_map(jnp.ones_like, params)

  def first_step(**fields):
    tx = optim.make_optimizer({"optimizer": "sgd", "learning_rate": 1.0, **fields})
    updates, _ = tx.update(grads, tx.init(params), params)
    return {k: float(-v.ravel()[0]) for k, v in updates["cell"].items()}

  # SGD at rate r moves every entry of a unit gradient by r: the rate of each group
  assert first_step(lr_vector_field=0.1, lr_divergence=0.001) == pytest.approx(
      {"vector_field": 0.1, "vector_field_divergence": 0.001, "bias": 1.0})
  assert first_step(lr_vector_field=0.1) == pytest.approx(
      {"vector_field": 0.1, "vector_field_divergence": 0.1, "bias": 1.0})


def test_readout_weight_decay_is_the_gradient_of_half_its_squared_norm_on_head_kernels():
  """``readout_weight_decay`` adds ``wd K`` to the gradient of a ``head`` kernel and nothing
  elsewhere: the update equals plain SGD's on ``loss + wd/2 ||K||^2``, and is clipped with
  it."""
  rng = np.random.default_rng(0)
  params = {"head": {"kernel": jnp.asarray(rng.standard_normal((3, 2)), jnp.float32),
                     "bias": jnp.ones((2,), jnp.float32)},
            "rnn": {"cell": {"kernel": jnp.ones((2, 2), jnp.float32)}}}
  wd = 0.1
  grads = jax.tree_util.tree_map(lambda p: jnp.full_like(p, 0.5), params)
  tx = optim.make_optimizer({"optimizer": "sgd", "learning_rate": 1.0,
                             "readout_weight_decay": wd})
  updates, _ = tx.update(grads, tx.init(params), params)
  want = jax.grad(lambda p: sum(jnp.sum(g * x) for g, x in zip(
      jax.tree_util.tree_leaves(grads), jax.tree_util.tree_leaves(p)))
      + wd / 2 * jnp.sum(p["head"]["kernel"] ** 2))(params)
  jax.tree_util.tree_map(lambda u, g: np.testing.assert_allclose(u, -g, **tol.F32), updates,
                         want)
  clipped = optim.make_optimizer({"optimizer": "sgd", "learning_rate": 1.0, "clip_norm": 1e-3,
                                  "readout_weight_decay": wd})
  updates, _ = clipped.update(grads, clipped.init(params), params)
  norm = jnp.sqrt(sum(jnp.sum(u ** 2) for u in jax.tree_util.tree_leaves(updates)))
  np.testing.assert_allclose(norm, 1e-3, **tol.F32)
  with pytest.raises(ValueError, match="readout_weight_decay"):
    optim.make_optimizer({"readout_weight_decay": -1.0})


@pytest.mark.parametrize("two_kernels", [True, False])
def test_released_two_kernel_update_pairs_the_ncgru_cells_kernels(two_kernels):
  """``two_kernel_update='released'`` finds U_c and U_r in NC-GRU(U_c, U_r)'s parameters (the
  names the transform pairs are the cell's) and refuses NC-GRU(U_c), which has no U_r; the
  update equals :func:`optim.neumann_cayley` with the same setting."""
  from lvf_jax import cells  # pylint: disable=g-import-not-at-top
  cell = cells.NCGRUCell(features=6, orthogonal_reset=two_kernels, orthogonal_param="matrix")
  x = jnp.ones((2, 3))
  params = cell.init(jax.random.key(0), cell.initialize_carry(jax.random.key(1), x.shape),
                     x)["params"]
  config = {"optimizer": "adam", "learning_rate": 1e-2, "orthogonal_method": "neumann_cayley",
            "neumann_step": "sgd", "two_kernel_update": "released", "reset_every": 4}
  tx = optim.make_optimizer(config)
  if not two_kernels:
    with pytest.raises(ValueError, match="two_kernel_update"):
      standard(tx.init)(params)
    return
  grads = jax.tree.map(lambda p: jax.random.normal(jax.random.key(2), p.shape, p.dtype), params)
  u, _ = standard(tx.update)(grads, standard(tx.init)(params), params)
  direct = optim.neumann_cayley(optax.adam(1e-3), 0, reset_every=4, sgd_series_lr=1e-3,
                                two_kernel_update="released")
  orth = {k: v for k, v in params.items() if k.startswith("orthogonal")}
  v, _ = standard(direct.update)({k: grads[k] for k in orth}, standard(direct.init)(orth), orth)
  for k in orth:  # one float32 update of the same operations in the same order
    np.testing.assert_array_equal(u[k], v[k])
