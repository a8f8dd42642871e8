"""The JAX variants of ``benchmarks/speed.py``, each a small function of one :class:`Setup`.

Imported by ``speed.py`` after it has set ``OPENBLAS_NUM_THREADS`` (this module loads JAX).
The variants (``speed.py``'s docstring says what each measures): ``lvf_jax`` (the expRNN
model through the fused ``rnn_scan``), ``jax_plain`` (the same model as a plain
``lax.scan``), ``jax_tanh`` / ``lvf_jax_tanh`` / ``lvf_jax_persistent`` (the tanh RNN as a
plain scan, the fused scan and the persistent kernel), ``floor`` (the recurrent products
alone) and the ``diag_*`` diagnostics.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lvf_jax import geometry, recurrences
from lvf_jax.layers import IN_LOOP_RATIO


@dataclasses.dataclass(frozen=True)
class Setup:
  """One setting's shapes, options, data and initial parameters."""

  T: int
  n: int
  B: int
  d: int
  C: int
  every: bool  # the loss reads every state (copy) or the last one (MNIST)
  unroll: int
  expm: str  # 'taylor' | 'jsl'
  inloop: bool  # u_t = x_t W_in inside the loop
  persistent_interpret: bool
  x: Any
  y_onehot: Any
  h0: Any
  keys: Any
  exp_params: dict
  tanh_params: dict
  opt: Any


def _exp_params(keys, n: int, d: int, C: int, dtype) -> dict:
  """The expRNN model's parameters: a Henaff skew, input and output weights, biases."""
  angles = jax.random.uniform(keys[0], (n // 2,), dtype, -np.pi, np.pi)
  skew = jnp.zeros((n, n), dtype).at[2 * jnp.arange(n // 2),
                                     2 * jnp.arange(n // 2) + 1].set(angles)
  return {
      "skew": skew,
      "w_in": jax.random.normal(keys[1], (d, n), dtype) / math.sqrt(d),
      "bias": jax.random.uniform(keys[2], (n,), dtype, -0.01, 0.01),
      # (C, n) like torch.nn.Linear: the weight gradient dlogits^T H is then a (C, TB) x
      # (TB, n) product, ~3x faster on XLA:CPU than H^T dlogits, (n, TB) x (TB, C).
      "w_out": jax.random.normal(keys[3], (C, n), dtype) / math.sqrt(n),
      "b_out": jnp.zeros((C,), dtype),
  }


def setup(setting: dict, batch: tuple, unroll: int, expm: str, projection: str, seed: int,
          persistent_interpret: bool, dtype: str) -> Setup:
  """The :class:`Setup` of ``setting`` with the NumPy ``batch`` ``(x, y)``."""
  T, n, B, d, C = (setting[k] for k in ("T", "n", "B", "d_in", "classes"))
  dtype = jnp.dtype(dtype)
  x, y = jnp.asarray(batch[0], dtype), jnp.asarray(batch[1])
  keys = jax.random.split(jax.random.key(seed), 4)
  exp_params = _exp_params(keys, n, d, C, dtype)
  tanh_params = {
      "w": jax.nn.initializers.orthogonal()(keys[0], (n, n), dtype),
      "w_in": exp_params["w_in"], "b": jnp.zeros((n,), dtype),
      "w_out": exp_params["w_out"], "b_out": exp_params["b_out"],
  }
  # 'auto': the rule of lvf_jax.layers.Recurrent (in the loop when IN_LOOP_RATIO d <= n)
  inloop = projection == "inloop" or (projection == "auto" and IN_LOOP_RATIO * d <= n)
  return Setup(T=T, n=n, B=B, d=d, C=C, every=setting["every_step"], unroll=unroll, expm=expm,
               inloop=inloop, persistent_interpret=persistent_interpret, x=x,
               y_onehot=jax.nn.one_hot(y, C, dtype=dtype), h0=jnp.zeros((B, n), dtype),
               keys=keys, exp_params=exp_params, tanh_params=tanh_params,
               opt=optax.rmsprop(1e-3))


def orthogonal_kernel(p: dict, method: str = "jsl"):
  """The row-form kernel ``K = expm(A)^T`` of the skew parameter."""
  a = jnp.triu(p["skew"], 1)
  m = geometry.expm_taylor(a - a.T) if method == "taylor" else jax.scipy.linalg.expm(a - a.T)
  return m.T


def modrelu(z, b):
  return jnp.sign(z) * jnp.maximum(jnp.abs(z) + b[None, :], 0.0)


def cross_entropy(s: Setup, logits):
  """Softmax cross-entropy against the constant one-hot target (no gather or scatter)."""
  m = jax.lax.stop_gradient(jnp.max(logits, axis=-1, keepdims=True))
  lse = jnp.log(jnp.sum(jnp.exp(logits - m), axis=-1)) + m[..., 0]
  return jnp.mean(lse - jnp.sum(logits * s.y_onehot, axis=-1))


# Large products are written on 2-D operands: on XLA:CPU an einsum / dot_general on the
# 3-D (T, B, n) array and its autodiff transpose were 4-6x slower than the same product
# on the (T B, n) reshape (layout copies of the whole sequence).
def readout_loss(s: Setup, p: dict, hs, h_last):
  if s.every:
    logits = hs.reshape((s.T * s.B, s.n)) @ p["w_out"].T + p["b_out"][None, :]
    return cross_entropy(s, logits.reshape((s.T, s.B, s.C)))
  return cross_entropy(s, h_last @ p["w_out"].T + p["b_out"][None, :])


def project(s: Setup, p: dict):
  if s.d == 1:
    return s.x * p["w_in"][None, :, :]  # (T, B, 1) * (1, 1, n): an outer product
  return (s.x.reshape((s.T * s.B, s.d)) @ p["w_in"]).reshape((s.T, s.B, s.n))


def fused_scan(s: Setup, k, p: dict, b, activation: str):
  if s.inloop:  # u_t = x_t W_in inside the loop: no (T, B, n) projected sequence
    return recurrences.rnn_scan(k, s.x, s.h0, b, activation=activation,
                                input_kernel=p["w_in"], unroll=s.unroll)
  # the XLA loop, which the persistent kernel's variant is measured against
  return recurrences.rnn_scan(k, project(s, p), s.h0, b, activation=activation,
                              unroll=s.unroll, persistent=False)


def loss_lvf(s: Setup, p: dict, kernel=None):
  k = orthogonal_kernel(p, s.expm) if kernel is None else kernel
  h_last, hs = fused_scan(s, k, p, p["bias"], "modrelu")
  return readout_loss(s, p, hs, h_last)


def _plain_scan(s: Setup, step: Callable):
  h_last, hs = jax.lax.scan(lambda h, x_t: (step(h, x_t),) * 2, s.h0, s.x)
  return hs, h_last


def loss_plain(s: Setup, p: dict):
  k = orthogonal_kernel(p)
  hs, h_last = _plain_scan(s, lambda h, x_t: modrelu(x_t @ p["w_in"] + h @ k, p["bias"]))
  return readout_loss(s, p, hs, h_last)


def loss_tanh(s: Setup, p: dict):
  hs, h_last = _plain_scan(
      s, lambda h, x_t: jnp.tanh(x_t @ p["w_in"] + h @ p["w"] + p["b"][None, :]))
  return readout_loss(s, p, hs, h_last)


def loss_tanh_fused(s: Setup, p: dict):
  h_last, hs = fused_scan(s, p["w"], p, p["b"], "tanh")
  return readout_loss(s, p, hs, h_last)


def loss_tanh_persistent(s: Setup, p: dict):
  h_last, hs = recurrences.persistent_rnn_scan(
      p["w"], project(s, p) + p["b"][None, None, :], s.h0, interpret=s.persistent_interpret)
  return readout_loss(s, p, hs, h_last)


def loss_hoisted(s: Setup, p: dict):
  """``lvf_jax`` with the input projection hoisted out of the loop."""
  k = orthogonal_kernel(p, s.expm)
  h_last, hs = recurrences.rnn_scan(k, project(s, p), s.h0, p["bias"], activation="modrelu",
                                    unroll=s.unroll)
  return readout_loss(s, p, hs, h_last)


def train_step(s: Setup, loss_fn: Callable) -> Callable:
  """``state -> state`` of one RMSprop step on ``loss_fn`` (jitted)."""
  @jax.jit
  def step(state):
    p, opt_state = state
    loss, g = jax.value_and_grad(loss_fn)(p)
    upd, opt_state = s.opt.update(g, opt_state, p)
    return optax.apply_updates(p, upd), opt_state, loss
  return lambda state: step(state)[:2]


def trained(s: Setup, loss_fn: Callable, params: dict) -> tuple:
  """``(step_fn, state)`` of a trained variant from ``params``."""
  return train_step(s, loss_fn), (params, s.opt.init(params))


def _products(k, h, length: int, unroll: int, transpose: bool = False):
  """The states of ``length`` products ``h K`` (or ``h K^T``) and nothing else."""
  kk = k.T if transpose else k
  return jax.lax.scan(lambda c, _: (c @ kk,) * 2, h, None, length=length, unroll=unroll)[1]


def floor(s: Setup) -> tuple:
  """The recurrent products of a training step alone: forward, backward and the weight
  gradient as one large product."""
  k = orthogonal_kernel(s.exp_params)
  c0 = jax.random.normal(s.keys[1], (s.B, s.n), s.h0.dtype) / math.sqrt(s.n)
  g0 = jax.random.normal(s.keys[2], (s.B, s.n), s.h0.dtype) / math.sqrt(s.n)

  @jax.jit
  def run(state):
    k, h0, c0 = state
    hs = _products(k, h0, s.T, s.unroll)
    cs = _products(k, c0, s.T, s.unroll, transpose=True)
    dk = jax.lax.dot_general(hs.reshape((s.T * s.B, s.n)), cs.reshape((s.T * s.B, s.n)),
                             (((0,), (0,)), ((), ())))
    return k, h0 + 1e-30 * dk[:1, :], c0

  return run, (k, g0, c0)


def no_recurrence(s: Setup) -> tuple:
  """The work of the ``lvf_jax`` step that the floor does not contain and no fused
  recurrence removes: expm forward and backward, read-out and loss (forward and backward,
  with the state cotangent dH) and the optimiser, on constant states. (The input
  projection's gradient is left out: a lower bound.)"""
  # copy: the loss reads every state; MNIST: only the last one.
  hs_const = jnp.tanh(jax.random.normal(s.keys[2], (s.T if s.every else 1, s.B, s.n),
                                        s.h0.dtype))
  g_expm = jax.random.normal(s.keys[3], (s.n, s.n), s.h0.dtype) * 1e-3

  def loss(p, hs):
    return readout_loss(s, p, hs, hs[-1]) + jnp.sum(orthogonal_kernel(p, s.expm) * g_expm)

  @jax.jit
  def step(state):
    p, opt_state, _ = state
    g, dhs = jax.grad(loss, argnums=(0, 1))(p, hs_const)
    upd, opt_state = s.opt.update(g, opt_state, p)
    return optax.apply_updates(p, upd), opt_state, dhs  # dH is materialised, as in the step

  return step, (s.exp_params, s.opt.init(s.exp_params), hs_const)


def expm_fwd_bwd(s: Setup, method: str) -> tuple:
  """The matrix exponential of the skew parameter, forward and backward, alone."""
  g_rand = jax.random.normal(s.keys[3], (s.n, s.n), s.h0.dtype)

  @jax.jit
  def run(state):
    sk, = state
    gr = jax.grad(lambda a: jnp.sum(orthogonal_kernel({"skew": a}, method) * g_rand))(sk)
    return (sk + 1e-30 * gr,)

  return run, (s.exp_params["skew"],)


def step_products(s: Setup, k) -> tuple:
  """The forward products ``h K`` of one sequence, one after the other."""
  @jax.jit
  def run(state):
    k, h = state
    h, _ = jax.lax.scan(lambda c, _: (c @ k, None), h, None, length=s.T, unroll=s.unroll)
    return k, h

  return run, (k, s.h0 + 0.1)


def big_product(s: Setup) -> tuple:
  """The weight gradient's one large product ``A^T A`` of a ``(T B, n)`` operand."""
  @jax.jit
  def run(state):
    a, acc = state
    return a, acc + jax.lax.dot_general(a, a, (((0,), (0,)), ((), ())))

  a = jax.random.normal(s.keys[0], (s.T * s.B, s.n), s.h0.dtype)
  return run, (a, jnp.zeros((s.n, s.n), s.h0.dtype))


def diagnostics(s: Setup) -> dict:
  """The ``diag_*`` variants: where the ``lvf_jax`` step's time goes."""
  k_fixed = orthogonal_kernel(s.exp_params)
  no_expm = {**s.exp_params, "kernel": k_fixed}
  return {
      "diag_lvf_jax_hoisted": trained(s, lambda p: loss_hoisted(s, p), s.exp_params),
      "diag_no_recurrence": no_recurrence(s),
      "diag_lvf_jax_no_expm": trained(s, lambda p: loss_lvf(s, p, kernel=p["kernel"]),
                                      no_expm),
      "diag_expm_jsl": expm_fwd_bwd(s, "jsl"),
      "diag_expm_taylor": expm_fwd_bwd(s, "taylor"),
      "diag_step_products": step_products(s, k_fixed),
      "diag_big_product": big_product(s),
  }


#: The trained variants: ``name -> (loss of (setup, params), which parameters)``.
LOSSES = {
    "lvf_jax": (loss_lvf, "exp_params"),
    "jax_plain": (loss_plain, "exp_params"),
    "jax_tanh": (loss_tanh, "tanh_params"),
    "lvf_jax_tanh": (loss_tanh_fused, "tanh_params"),
    "lvf_jax_persistent": (loss_tanh_persistent, "tanh_params"),
}


def jax_models(setting: dict, batch: tuple, unroll: int, expm: str = "taylor",
               projection: str = "auto", seed: int = 0, persistent_interpret: bool = False,
               dtype: str = "float32"):
  """``(models, flops, losses)`` of a setting (``speed.jax_models`` documents them)."""
  s = setup(setting, batch, unroll, expm, projection, seed, persistent_interpret, dtype)
  losses = {name: (lambda p, f=f: f(s, p), getattr(s, which))
            for name, (f, which) in LOSSES.items()}
  models = {name: trained(s, fn, params) for name, (fn, params) in losses.items()}
  models["floor"] = floor(s)
  models.update(diagnostics(s))
  work = 2.0 * s.T * s.B * s.n * s.n
  flops = {"diag_step_products": work, "diag_big_product": work, "floor": 3 * work}
  return models, flops, losses
