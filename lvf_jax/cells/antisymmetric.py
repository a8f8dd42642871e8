"""AntisymmetricRNN (Chang, Chen, Haber & Chi 2019, eqs 12-13)."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
from flax import linen as nn

from lvf_jax import geometry, recurrences
from lvf_jax.cells import base

Array = jax.Array


def triu_normal(sigma: float, n: int) -> base.Initializer:
  """``N(0, sigma^2 / n)`` for the packed strictly-upper triangle of ``W``."""

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

  Attributes:
    features: hidden size ``n``.
    epsilon: step size ``eps > 0`` (paper: 0.01, 0.1, 1).
    gamma: diffusion ``gamma >= 0`` (paper: 0.001 ... 1).
    sigma_w: init scale of ``W``.
  """

  epsilon: float = 0.1
  gamma: float = 0.01
  sigma_w: float = 1.0
  kernel_init: base.Initializer = nn.initializers.variance_scaling(1.0, "fan_in", "normal")
  bias_init: base.Initializer = nn.initializers.zeros_init()

  gated: bool = False  # set by GatedAntisymmetricRNNCell

  def setup(self):
    name = type(self).__name__
    n = base.check_features(name, self.features)
    base.check_positive_number(name, "epsilon", self.epsilon)
    base.check_nonnegative_number(name, "gamma", self.gamma)
    base.check_positive_number(name, "sigma_w", self.sigma_w)
    k = 2 if self.gated else 1
    self.recurrent_triu = self.param("recurrent_triu", triu_normal(self.sigma_w, n),
                                     (geometry.num_skew_params(n),), self.param_dtype)
    self.input = base.InputProjection(k * n, use_bias=True, kernel_init=self.kernel_init,
                                      bias_init=self.bias_init, param_dtype=self.param_dtype,
                                      owner=name)

  def recurrent_matrix(self) -> Array:
    """``W - W^T - gamma I`` in column form."""
    n = self.features
    w = geometry.skew_from_packed(self.recurrent_triu, n)  # = W - W^T for strictly-upper W
    return w - self.gamma * jnp.eye(n, dtype=w.dtype)

  def prepare(self, dtype: Optional[base.Dtype] = None) -> dict[str, Array]:
    """``{'kernel': (W - W^T - gamma I)^T}``."""
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
  ``2n`` features ``[V_h | V_z]``.
  """

  gated: bool = True
