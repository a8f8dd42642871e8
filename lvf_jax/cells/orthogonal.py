"""Orthogonal RNN cells: expRNN (exponential map) and scoRNN (scaled Cayley map).

Both compute ``h_t = sigma(M h_{t-1} + U x_t)`` (paper's column form) with an orthogonal
``M``; in this library's row form ``h_t = sigma(h_{t-1} @ K + x_t @ U)``, ``K = M^T``.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

import jax
import jax.numpy as jnp
from flax import linen as nn

from lvf_jax import _validation
from lvf_jax import geometry
from lvf_jax.cells import base

Array = jax.Array

SKEW_INITS = ("henaff", "cayley", "random")
ORTHOGONAL_PARAMS = ("skew", "matrix")


def skew_initializer(cls: str, init: Union[str, Callable]) -> Callable:
  """Maps ``'henaff' | 'cayley' | 'random'`` (or a callable) to a skew initialiser."""
  if callable(init):
    return init
  _validation.check_choice(cls, "orthogonal_init", init, SKEW_INITS)
  return {"henaff": geometry.henaff, "cayley": geometry.cayley_init,
          "random": geometry.haar_skew}[init]()


def mapped_initializer(skew_init: Callable, fn: Callable[[Array], Array]) -> Callable:
  """Initialiser ``fn(skew_init(...))``: e.g. an orthogonal matrix ``expm(A_0)``."""

  def init(key, shape, dtype=jnp.float32):
    return fn(skew_init(key, shape, dtype))

  return init


def triu_param_init(skew_init: Callable) -> Callable:
  """Keeps only the strictly-upper triangle of a skew initial value (the lower triangle is
  ignored by ``skew_from_triu``; zeroing it makes the stored value canonical)."""

  def init(key, shape, dtype=jnp.float32):
    return jnp.triu(skew_init(key, shape, dtype), k=1)

  return init


class _OrthogonalCell(base.KernelCell):
  """``h' = sigma(h @ M^T + x @ U + b)`` with a parameterised column-form matrix ``M``."""

  activation: str = "modrelu"
  orthogonal_init: Union[str, Callable] = "henaff"
  orthogonal_param: str = "skew"
  kernel_init: base.Initializer = nn.initializers.variance_scaling(2.0, "fan_in", "normal")
  bias_init: Optional[base.Initializer] = None

  def _setup_common(self) -> int:
    name = type(self).__name__
    n = _validation.check_features(name, self.features)
    _validation.check_choice(name, "activation", self.activation, base.ACTIVATIONS)
    _validation.check_choice(name, "orthogonal_param", self.orthogonal_param, ORTHOGONAL_PARAMS)
    self.bias = self.param("bias", self.bias_init or base.activation_bias_init(self.activation),
                           (n,), self.param_dtype)
    self.input = base.InputProjection(n, use_bias=False, kernel_init=self.kernel_init,
                                      param_dtype=self.param_dtype, owner=name)
    return n


class ExpRNNCell(_OrthogonalCell):
  r"""expRNN cell (Lezcano-Casado & Martinez-Rubio 2019, eq 1 / Sec. 4).

  :math:`W = B \exp(A)`, ``A = triu(skew, 1) - triu(skew, 1)^T`` (column form), and
  :math:`h_t = \mathrm{modReLU}(W h_{t-1} + U x_t, b)`; the input kernel ``U`` has no bias
  (the modReLU bias plays that role). Row form: ``K = W^T``.

  Parameterisations (``orthogonal_param``):

  * ``'skew'`` (default): parameter ``skew`` (``n x n``; only its strictly-upper triangle
    is used, ``n(n-1)/2`` degrees of freedom) mapped by ``expm`` in every ``prepare``.
    With ``use_base=True`` the base ``B`` is a non-trainable variable ``base`` in the
    collection ``'dtriv'`` (initialised to ``I``) for dynamic trivialisation: every ``K``
    optimiser steps the training loop sets ``base <- W`` and ``skew <- 0``.
  * ``'matrix'``: parameter ``orthogonal`` = ``W`` itself (column form), for Riemannian
    optimisers; initialised to ``expm(A_0)``.

  Attributes:
    features: hidden size ``n``.
    orthogonal_init: skew initialisation ``'henaff'`` (``U(-pi, pi)`` blocks) | ``'cayley'`` |
      ``'random'`` (Haar) | a callable ``init(key, (n, n), dtype)`` returning a skew matrix.
    orthogonal_param: ``'skew'`` | ``'matrix'``.
    use_base: keep a dynamic-trivialisation base in collection ``'dtriv'``.
    activation: ``'modrelu'`` (paper) | ``'tanh'``.
    kernel_init: input kernel init (default He normal, as the reference's
      ``kaiming_normal_``).
    bias_init: modReLU bias init (default ``U(+-0.01)``).
  """

  use_base: bool = False

  def setup(self):
    name = type(self).__name__
    n = self._setup_common()
    skew_init = skew_initializer(name, self.orthogonal_init)
    if self.orthogonal_param == "matrix":
      if self.use_base:
        raise ValueError(
            f"{name}: argument 'use_base=True' requires orthogonal_param='skew'; got "
            f"orthogonal_param={self.orthogonal_param!r}.")
      self.orthogonal = self.param(
          "orthogonal", mapped_initializer(skew_init, geometry.expm), (n, n), self.param_dtype)
    else:
      self.skew = self.param("skew", triu_param_init(skew_init), (n, n), self.param_dtype)
      if self.use_base:
        self.base = self.variable("dtriv", "base", lambda: jnp.eye(n, dtype=self.param_dtype))

  def recurrent_matrix(self) -> Array:
    """``W = B expm(A)`` in column form."""
    if self.orthogonal_param == "matrix":
      return self.orthogonal
    w = geometry.expm(geometry.skew_from_triu(self.skew))
    if self.use_base:
      w = self.base.value @ w
    return w


class ScoRNNCell(_OrthogonalCell):
  r"""scoRNN cell (Helfrich, Willmott & Ye 2018, eq 3 and Sec. 4).

  ``W = (I + A)^{-1} (I - A) D`` (column form, ``D = diag(+1 x (n - rho), -1 x rho)``
  scaling the *columns*, as in the paper -- the authors' code applies the transpose, a
  known discrepancy of that code), ``h_t = modReLU(W h_{t-1} + U x_t, b)``, ``U ~ U(-0.01, 0.01)``,
  ``b``
  modReLU bias. Row form: ``K = W^T = D (I - A)^T (I + A)^{-T}``.

  Parameterisations: ``orthogonal_param='skew'`` stores ``skew`` (``A`` = its strictly-
  upper triangle minus the transpose; the autodiff gradient of the upper triangle is the
  upper triangle of the paper's ``V^T - V``); ``'matrix'`` stores ``orthogonal = W``.

  Attributes:
    features: hidden size ``n``.
    rho: number of ``-1`` entries of ``D``, an int in ``[0, n]`` (default ``n // 2`` as in
      the copy/adding configurations).
    orthogonal_init: ``'cayley'`` (default; ``u ~ U(0, pi/2)``, ``s = -tan(u/2)`` blocks) |
      ``'henaff'`` | ``'random'`` | callable.
    orthogonal_param, activation, kernel_init, bias_init: as :class:`ExpRNNCell`.
  """

  rho: Optional[int] = None
  orthogonal_init: Union[str, Callable] = "cayley"
  kernel_init: base.Initializer = base.symmetric_uniform(0.01)

  @property
  def rho_value(self) -> int:
    return base.resolve_rho(self)

  def setup(self):
    name = type(self).__name__
    n = self._setup_common()
    rho = self.rho_value
    skew_init = skew_initializer(name, self.orthogonal_init)
    if self.orthogonal_param == "matrix":
      self.orthogonal = self.param(
          "orthogonal", mapped_initializer(skew_init, lambda a: geometry.scaled_cayley(a, rho)),
          (n, n), self.param_dtype)
    else:
      self.skew = self.param("skew", triu_param_init(skew_init), (n, n), self.param_dtype)

  def recurrent_matrix(self) -> Array:
    """``W = (I + A)^{-1} (I - A) D`` in column form."""
    if self.orthogonal_param == "matrix":
      return self.orthogonal
    return geometry.scaled_cayley(geometry.skew_from_triu(self.skew), self.rho_value)
