"""nnRNN: non-normal RNN via a Schur parameterisation (Kerg et al. 2019, eq 5)."""

from __future__ import annotations

from typing import Callable, ClassVar, Optional, Union

import jax
import jax.numpy as jnp
from flax import linen as nn

from lvf_jax import _validation
from lvf_jax import geometry
from lvf_jax.cells import base
from lvf_jax.cells.orthogonal import ORTHOGONAL_PARAMS, mapped_initializer, skew_initializer, \
    triu_param_init
from lvf_jax import regularization

Array = jax.Array


class NNRNNCell(base.KernelCell):
  r"""nnRNN cell, eq (5): :math:`V = P (\Lambda + T) P^\top`,
  :math:`h_t = \mathrm{modReLU}(V h_{t-1} + U x_t, b)`.

  ``Lambda`` is block-diagonal with blocks ``gamma_i [[cos theta_i, -sin theta_i],
  [sin theta_i, cos theta_i]]`` and ``T`` is *strictly lower* triangular in the paper's
  column form (parameter ``triangular``; its upper triangle and diagonal are ignored).
  ``P = expm(A)`` is orthogonal through the expRNN parameterisation (parameter ``skew``)
  or stored directly (``orthogonal_param='matrix'``: parameter ``orthogonal``). Row form:
  ``K = V^T``.

  Init (Sec. 4): ``P`` by the Henaff or Cayley scheme (the skew generator is properly
  initialised, unlike the reference), ``theta ~ U(0, 2 pi)``, ``gamma = 1``, ``T = 0``; the
  model is then orthogonal. Regularisation (sown into ``'losses'``, see
  :mod:`lvf_jax.regularization`): ``'gamma_penalty'`` = ``delta sum_i (gamma_i -
  1)^2`` and ``'t_decay'`` = ``t_decay ||T||_F^2``. With ``fixed_gamma`` every ``gamma_i`` is
  that constant instead of a parameter (the clamped nnRNNs of Kerg et al. 2019, Supp. F,
  Table 7: 1 and 0.958), and the ``gamma`` penalty is not sown.

  Attributes:
    features: hidden size ``n`` (even).
    delta: weight of the ``gamma`` penalty (paper: 1e-4 copy, 0.1 psMNIST, 1 / 1e-4 PTB at
      BPTT 150 / 300).
    t_decay: L2 weight decay of ``T`` (paper: 1e-6 copy, 1e-4 psMNIST and PTB).
    orthogonal_init: skew init of ``P``: ``'henaff'`` | ``'cayley'`` (default) | ``'random'`` |
    callable.
    orthogonal_param: ``'skew'`` | ``'matrix'``.
    activation: ``'modrelu'`` (paper) | ``'tanh'``.
    fixed_gamma: ``gamma_i`` clamped at this value (``> 0``); ``None`` (default): learned.
  """

  hidden_multiple: ClassVar[int] = 2  # the 2 x 2 blocks of Lambda

  delta: float = 0.0
  t_decay: float = 0.0
  orthogonal_init: Union[str, Callable] = "cayley"
  orthogonal_param: str = "skew"
  activation: str = "modrelu"
  fixed_gamma: Optional[float] = None
  kernel_init: base.Initializer = nn.initializers.variance_scaling(2.0, "fan_in", "normal")
  bias_init: Optional[base.Initializer] = None

  def setup(self):
    name = type(self).__name__
    n = _validation.check_features(name, self.features)
    if n % 2:
      raise ValueError(f"{name}: argument 'features' must be even (2x2 Schur blocks); got {n}.")
    _validation.check_nonnegative_number(name, "delta", self.delta)
    _validation.check_nonnegative_number(name, "t_decay", self.t_decay)
    _validation.check_choice(name, "activation", self.activation, base.ACTIVATIONS)
    _validation.check_choice(name, "orthogonal_param", self.orthogonal_param, ORTHOGONAL_PARAMS)
    if self.fixed_gamma is not None:
      _validation.check_positive_number(name, "fixed_gamma", self.fixed_gamma)
    pd = self.param_dtype
    skew_init = skew_initializer(name, self.orthogonal_init)
    if self.orthogonal_param == "matrix":
      self.orthogonal = self.param(
          "orthogonal", mapped_initializer(skew_init, geometry.expm), (n, n), pd)
    else:
      self.skew = self.param("skew", triu_param_init(skew_init), (n, n), pd)
    if self.fixed_gamma is None:
      self._gamma = self.param("gamma", nn.initializers.ones_init(), (n // 2,), pd)
    self.theta = self.param("theta", geometry.uniform_angle(), (n // 2,), pd)
    self.triangular = self.param("triangular", nn.initializers.zeros_init(), (n, n), pd)
    self.bias = self.param("bias", self.bias_init or base.activation_bias_init(self.activation),
                           (n,), pd)
    self.input = base.InputProjection(n, use_bias=False, kernel_init=self.kernel_init,
                                      param_dtype=pd, owner=name)

  @property
  def gamma(self) -> Array:
    """The moduli ``gamma_i`` of the eigenvalues of ``Lambda`` (``(n/2,)``)."""
    if self.fixed_gamma is None:
      return self._gamma
    return jnp.full(self.theta.shape, self.fixed_gamma, self.theta.dtype)

  def schur_basis(self) -> Array:
    """``P`` (orthogonal, column form)."""
    if self.orthogonal_param == "matrix":
      return self.orthogonal
    return geometry.expm(geometry.skew_from_triu(self.skew))

  def recurrent_matrix(self) -> Array:
    """``V = P (Lambda + T) P^T`` in column form."""
    return geometry.schur_form(self.schur_basis(), self.gamma, self.theta, self.triangular)

  def regularize(self) -> None:
    """Sows ``delta sum (gamma_i - 1)^2`` and ``t_decay ||T||^2`` (nnRNN Sec. 4)."""
    if self.delta > 0 and self.fixed_gamma is None:
      d = self.gamma - 1.0
      regularization.sow_loss(self, "gamma_penalty", self.delta * jnp.sum(d * d))
    if self.t_decay > 0:
      t = jnp.tril(self.triangular, k=-1)
      regularization.sow_loss(self, "t_decay", self.t_decay * jnp.sum(t * t))
