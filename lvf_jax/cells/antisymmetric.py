"""AntisymmetricRNN (Chang, Chen, Haber & Chi 2019, arXiv:1902.09689, eqs 12-13) and its
ablation model (Sec. 5.4: eq 13 with an unstructured matrix, ``unstructured=True``)."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
from flax import linen as nn

from lvf_jax import _validation
from lvf_jax import geometry, recurrences
from lvf_jax.cells import base

Array = jax.Array


def triu_normal(sigma: float, n: int) -> base.Initializer:
  """``N(0, sigma^2 / n)`` entries of any shape: the packed strictly-upper triangle of ``W``,
  or the whole ``W`` of the ablation model (``unstructured=True``)."""

  def init(key, shape, dtype=jnp.float32):
    return jax.random.normal(key, tuple(shape), dtype) * (sigma / math.sqrt(n))

  return init


class AntisymmetricRNNCell(base.StructuredCell):
  r"""AntisymmetricRNN cell, eq (12) (column form)::

      h_t = h_{t-1} + eps tanh((W - W^T - gamma I) h_{t-1} + V_h x_t + b_h)

  ``W`` is stored as its strictly-upper triangle, packed row-major in the parameter
  ``recurrent_triu`` of length ``n (n - 1) / 2`` (so ``W - W^T`` has exactly that many
  parameters). Row form: ``h @ K`` with ``K = (W - W^T - gamma I)^T = W^T - W - gamma I``.
  Init: ``V ~ N(0, 1/m)``, ``W ~ N(0, sigma_w^2 / n)``, biases 0.

  ``unstructured=True`` is the paper's ablation model (Sec. 5.4, Table 2): the antisymmetric
  matrix ``W - W^T`` replaced by an unstructured ``W`` (the parameter ``recurrent``, ``n x n``,
  column form, ``N(0, sigma_w^2 / n)``), so the recurrent matrix is ``W - gamma I``. The
  diffusion is kept: the ablation removes only the antisymmetric structure, and with a free
  ``W`` the term ``-gamma I`` shifts where training starts, not what the model can express
  (``gamma = 0`` gives the plain ``W``). Its parameter count at ``n = 196`` on pixel
  CIFAR-10 (``196^2 + 2 (3 + 1) 196 + 10 (196 + 1) = 41,954``) is the table's 42k.

  Attributes:
    features: hidden size ``n``.
    epsilon: step size ``eps > 0`` (paper: 0.01, 0.1, 1).
    gamma: diffusion ``gamma >= 0`` (paper: 0.001 ... 1).
    sigma_w: init scale of ``W``.
    unstructured: an unstructured ``W`` in place of ``W - W^T`` (the ablation model).
  """

  epsilon: float = 0.1
  gamma: float = 0.01
  sigma_w: float = 1.0
  kernel_init: base.Initializer = nn.initializers.variance_scaling(1.0, "fan_in", "normal")
  bias_init: base.Initializer = nn.initializers.zeros_init()

  gated: bool = False  # set by GatedAntisymmetricRNNCell
  unstructured: bool = False

  def setup(self):
    name = type(self).__name__
    n = _validation.check_features(name, self.features)
    _validation.check_positive_number(name, "epsilon", self.epsilon)
    _validation.check_nonnegative_number(name, "gamma", self.gamma)
    _validation.check_positive_number(name, "sigma_w", self.sigma_w)
    k = 2 if self.gated else 1
    if self.unstructured:
      self.recurrent = self.param("recurrent", triu_normal(self.sigma_w, n), (n, n),
                                  self.param_dtype)
    else:
      self.recurrent_triu = self.param("recurrent_triu", triu_normal(self.sigma_w, n),
                                       (geometry.num_skew_params(n),), self.param_dtype)
    self.input = base.InputProjection(k * n, use_bias=True, kernel_init=self.kernel_init,
                                      bias_init=self.bias_init, param_dtype=self.param_dtype,
                                      owner=name)

  def recurrent_matrix(self) -> Array:
    """``W - W^T - gamma I`` in column form (``W - gamma I`` with ``unstructured``)."""
    n = self.features
    if self.unstructured:
      w = self.recurrent
    else:
      w = geometry.skew_from_packed(self.recurrent_triu, n)  # = W - W^T for strictly-upper W
    return w - self.gamma * jnp.eye(n, dtype=w.dtype)

  def prepare(self, dtype: Optional[base.Dtype] = None) -> dict[str, Array]:
    """``{'kernel': (W - W^T - gamma I)^T}`` (``(W - gamma I)^T`` with ``unstructured``)."""
    return base.cast_tree({"kernel": self.recurrent_matrix().T}, self._prep_dtype(dtype))

  def project_inputs(self, x: Array) -> Any:
    """``x V_h + b_h``; gated: the pair ``(x V_h + b_h, x V_z + b_z)`` (two arrays of
    shape ``(..., n)``, from the column halves of the ``(d, 2n)`` parameter ``input``)."""
    return self.input(x, self._compute_dtype(x), parts=2 if self.gated else 1)

  @nn.nowrap
  def step(self, prep: Any, carry: Array, u: Array) -> tuple[Array, Array]:
    """Forward-Euler step of the antisymmetric ODE (pure), row form."""
    a = carry @ prep["kernel"]
    if self.gated:
      u_h, u_z = split_gated_inputs(u, carry.shape[-1])
      z = jax.nn.sigmoid(a + u_z)
      h = carry + self.epsilon * (z * jnp.tanh(a + u_h))
    else:
      h = carry + self.epsilon * jnp.tanh(a + u)
    return h, h

  @nn.nowrap
  def fused_scan(self, in_loop: bool = False) -> Optional[Callable]:
    """:func:`lvf_jax.recurrences.euler_scan` (gated: ``gated_euler_scan``); ``None`` in
    the in-loop form (the Euler scans reuse the projected inputs' buffers for their
    activations)."""
    if in_loop:
      return None
    fn = recurrences.gated_euler_scan if self.gated else recurrences.euler_scan
    epsilon = float(self.epsilon)

    def scan(prep, carry, u, *, reverse=False, unroll=1, mask=None):
      return fn(prep["kernel"], u, carry, epsilon=epsilon, reverse=reverse, unroll=unroll,
                mask=mask)
    return scan


def split_gated_inputs(u: Any, n: int) -> tuple[Array, Array]:
  """``(u_h, u_z)`` from the gated cell's projected inputs: the pair itself, or the halves
  of one ``(..., 2n)`` array ``[u_h | u_z]``. Raises ``ValueError`` for anything else."""
  return base.split_inputs("GatedAntisymmetricRNNCell", u, 2, n)


class GatedAntisymmetricRNNCell(AntisymmetricRNNCell):
  r"""Gated AntisymmetricRNN cell, eq (13) (column form)::

      z_t = sigmoid((W - W^T - gamma I) h_{t-1} + V_z x_t + b_z)
      h_t = h_{t-1} + eps z_t * tanh((W - W^T - gamma I) h_{t-1} + V_h x_t + b_h)

  The antisymmetric matrix is shared by both terms; the input projection ``input`` maps to
  ``2n`` features ``[V_h | V_z]``. With ``unstructured=True`` this is the paper's ablation
  model (Sec. 5.4): one shared unstructured ``W`` in place of ``W - W^T``.
  """

  gated: bool = True
