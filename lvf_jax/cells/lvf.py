"""The latent vector field RNN cell (lvfRNN, "A Differential Geometry Perspective on
Orthogonal Recurrent Models", eqs 5, 6, 9-10, 16)."""

from __future__ import annotations

from typing import ClassVar, Optional

import jax
import jax.numpy as jnp
from flax import linen as nn

from lvf_jax import _validation
from lvf_jax import geometry
from lvf_jax.cells import base
from lvf_jax import regularization

Array = jax.Array

#: Values of ``LVFRNNCell.parametrization``.
PARAMETRIZATIONS = ("natural", "paper")


class LVFRNNCell(base.KernelCell):
  r"""lvfRNN cell (Azencot, Erichson, Ben-Chen & Mahoney 2021, arXiv:2102.09589), eq (6):

  .. math::

     h_t = \sigma(C_V h_{t-1} + U x_t + b).

  Row form (this library's convention): ``h_t = sigma(h_{t-1} @ K + x_t @ U + b)`` with
  ``K = C_V^T``, where ``C_V`` is the integrator map of the directional-derivative operator
  :math:`D_V = R_V - T_V` (eqs 9-10) of the latent vector field ``V``:

  * ``'euler'`` (eq 5): :math:`C_V = I - \tau D_V`;
  * ``'midpoint'`` (eq 16, Cayley):
    :math:`C_V = (I + \tfrac{\tau}{2} D_V)^{-1} (I - \tfrac{\tau}{2} D_V)`;
  * ``'exp'`` (eq 3): :math:`C_V = \exp(-\tau D_V)`.

  The parameter ``vector_field`` is a full ``n x n`` matrix, but ``D_V`` depends on it only
  through ``V^T - V`` (its diagonal is ignored and receives zero gradient): the model has
  ``n (n - 1) / 2`` degrees of freedom, ``dim VF_n`` of Sec. 4.2 (``count_params(...,
  effective=True)`` counts it so).

  Parametrisation (``parametrization``). The default, ``'natural'``, stores the field as its
  divergence-free part and its divergence, each at the scale of one optimiser step: ``V =
  P(W) + G(a)`` (:func:`lvf_jax.geometry.with_divergence`, eqs. 7-8), ``W`` the parameter
  ``vector_field`` (only its divergence-free projection ``P(W)`` counts) and ``a`` the
  parameter ``vector_field_divergence``, ``div V = a - mean(a)``. A step that moves every
  stored entry by at most ``lr`` (Adam) moves each ``(div V)_i`` by at most ``2 lr``;
  ``D_V = R_V - diag(div V)`` (eq. 9) has its symmetric part ``-diag(div V)``, so by
  Bendixson's theorem the real parts of its eigenvalues stay in ``[-max div V, -min div V]``
  and the moduli of ``C_V``'s eigenvalues move off the unit circle by ``O(tau lr)`` a step,
  whatever ``n``; the divergence-free part turns ``C_V`` within the orthogonal group (the
  ``'exp'`` and ``'midpoint'`` maps of a skew ``R_V`` are orthogonal), as an expRNN's skew
  parameter does. With ``'paper'``, ``vector_field`` is ``V`` itself (eq. 8): one such step
  moves ``(div V)_i``, a sum of ``2 (n - 1)`` entries, by up to ``2 (n - 1) lr``, so a single
  learning rate that suits the other weights sends ``C_V`` far off the unit circle at large
  ``n``; the presets that reproduce the paper's rows name ``'paper'`` and set the field's
  rates (``lr_vector_field``, ``lr_divergence``) by hand.

  Defaults. The paper's lvfRNN starts from Alg. 2's doubly-stochastic field, whose
  ``R_V`` is small: ``C_V`` starts close to ``I`` for every integrator, and a transition
  that close to the identity learns slowly, as a tanh RNN started at ``I`` does. Under
  ``'natural'`` the default ``W`` is :func:`lvf_jax.geometry.rotation_field` of a Haar
  skew draw ``A`` (``W^T - W = A``) and ``a`` starts at zero, so ``D_V`` is the skew
  rotation of ``P(W)`` and the default map ``'exp'`` at ``tau = 1`` makes ``C_V`` orthogonal
  with eigen-angles spread over the circle, as the expRNN's ``'random'`` initialisation;
  ``'paper'`` keeps Alg. 2.

  Divergence control (Sec. 4.3): ``div_penalty = lambda > 0`` sows the soft penalty
  ``lambda ||div V||^2`` into the ``'losses'`` collection under the name ``'div_penalty'``
  (sum with :func:`lvf_jax.layers.regularization_loss`); ``divergence_free=True`` is the
  hard mode: ``V`` is replaced by its Frobenius projection onto ``{div V = 0}``
  (:func:`lvf_jax.geometry.project_divergence_free`), so ``D_V`` is skew and the midpoint
  map is orthogonal.

  Attributes:
    features: hidden size ``n`` (``kappa`` in the paper), ``n >= 2``.
    integrator: ``'exp'`` (default) | ``'midpoint'`` | ``'euler'``.
    tau: time step ``tau > 0`` (Table 5: 15 copy, 1 JSB, 3 MuseData, 5 PTB, 2 TIMIT).
    activation: ``'modrelu'`` (copy task) | ``'tanh'`` (all other tasks).
    div_penalty: ``lambda >= 0`` of the soft divergence penalty.
    divergence_free: hard divergence-free mode.
    vector_field_init: initialiser of ``vector_field`` (default: under ``'paper'`` Alg. 2,
      doubly stochastic; under ``'natural'`` :func:`lvf_jax.geometry.rotation_field`).
    kernel_init: initialiser of the input kernel ``U`` (row form ``(m, n)``).
    bias_init: initialiser of ``b`` (default: ``U(+-0.01)`` for modReLU, zeros for tanh).
    center_input_init: start ``U`` with every input's mean over the hidden units removed
      (:func:`lvf_jax.geometry.centered_over_units`). ``D_V`` annihilates constants (eq. 15),
      so ``C_V 1 = 1`` and the state's mean adds up the mean of ``U x_t`` at every step
      without decay; for long sequences with a constant input (the blank of the copy task,
      the values of the adding task) it otherwise grows linearly in ``T``. An
      initialisation choice (the paper does not give one for ``U``); the model is unchanged.
    input_init_scale: factor ``> 0`` on the input kernel's initial draw (default 1). A
      divergence-free map keeps every input, so the state's norm at initialisation grows
      with ``T`` in proportion to the input kernel's scale.
    separate_divergence: parametrise the field by its divergence-free part and its
      divergence (:func:`lvf_jax.geometry.with_divergence`): ``vector_field`` gives the
      divergence-free part and the ``n``-vector ``vector_field_divergence`` (initialised
      at zero) gives ``div V``. The same space of fields; an optimiser step of size ``lr``
      per entry then moves each ``(div V)_i`` by about ``lr``, where a step on ``V`` itself
      moves it by up to ``2 (n - 1) lr`` (eq. 8 sums ``2 (n - 1)`` entries);
      :func:`lvf_jax.optim.make_optimizer` trains the divergence at its own rate
      (``lr_divergence``, label ``'divergence'``). Not with ``divergence_free``. With
      ``parametrization='natural'`` the divergence is always its own parameter.
    parametrization: ``'natural'`` (default: the divergence-free part and the divergence
      stored apart, one step moves ``C_V`` off the unit circle by ``O(tau lr)`` at every
      ``n``) | ``'paper'`` (``V`` stored as is, eq. 8; the presets that reproduce the
      paper's rows).
  """

  # A config written before the natural parametrisation stored the paper's V (eq. 8) and
  # integrated it by Euler's map (eq. 5).
  predated_values: ClassVar[dict] = {"parametrization": "paper", "integrator": "euler"}

  integrator: str = "exp"
  tau: float = 1.0
  activation: str = "tanh"
  div_penalty: float = 0.0
  divergence_free: bool = False
  vector_field_init: Optional[base.Initializer] = None
  kernel_init: base.Initializer = nn.initializers.lecun_normal()
  bias_init: Optional[base.Initializer] = None
  center_input_init: bool = False
  input_init_scale: float = 1.0
  separate_divergence: bool = False
  parametrization: str = "natural"

  def setup(self):
    name = type(self).__name__
    n = _validation.check_features(name, self.features, 2)
    _validation.check_choice(name, "integrator", self.integrator, tuple(geometry.INTEGRATORS))
    _validation.check_positive_number(name, "tau", self.tau)
    _validation.check_choice(name, "activation", self.activation, base.ACTIVATIONS)
    _validation.check_nonnegative_number(name, "div_penalty", self.div_penalty)
    _validation.check_choice(name, "parametrization", self.parametrization, PARAMETRIZATIONS)
    v_init = self.vector_field_init or (geometry.rotation_field() if self.parametrization
                                        == "natural" else geometry.doubly_stochastic())
    self.vector_field = self.param("vector_field", v_init, (n, n), self.param_dtype)
    if self._divergence_apart():
      if self.divergence_free:
        raise ValueError(f"{name}: 'separate_divergence' and 'divergence_free' exclude each "
                         "other (the divergence would be projected away); got both True.")
      self.divergence = self.param("vector_field_divergence", nn.initializers.zeros, (n,),
                                   self.param_dtype)
    self.bias = self.param("bias", self.bias_init or base.activation_bias_init(self.activation),
                           (n,), self.param_dtype)
    _validation.check_positive_number(name, "input_init_scale", self.input_init_scale)
    kernel_init = (geometry.centered_over_units(self.kernel_init) if self.center_input_init
                   else self.kernel_init)
    if self.input_init_scale != 1:
      kernel_init = base.scaled_init(kernel_init, self.input_init_scale)
    self.input = base.InputProjection(n, use_bias=False, kernel_init=kernel_init,
                                      param_dtype=self.param_dtype, owner=name)

  def _divergence_apart(self) -> bool:
    """Whether the divergence is its own parameter ``vector_field_divergence``."""
    return self.separate_divergence or (self.parametrization == "natural"
                                        and not self.divergence_free)

  def field(self) -> Array:
    """The effective vector field ``V``: ``vector_field``, projected when
    ``divergence_free``; its divergence-free part with the divergence parameter when the
    divergence is stored apart."""
    v = self.vector_field
    if self._divergence_apart():
      return geometry.with_divergence(v, self.divergence)
    return geometry.project_divergence_free(v) if self.divergence_free else v

  def recurrent_matrix(self) -> Array:
    """``C_V`` in the paper's column form (acts as ``C_V @ h``)."""
    d_v = geometry.directional_derivative(self.field())
    return geometry.get_integrator(self.integrator)(d_v, self.tau)

  def regularize(self) -> None:
    """Sows ``lambda ||div V||^2`` (lvfRNN Sec. 4.3) when ``div_penalty > 0``."""
    if self.div_penalty > 0:
      div = geometry.divergence(self.field())
      regularization.sow_loss(self, "div_penalty", self.div_penalty * jnp.sum(div * div))
