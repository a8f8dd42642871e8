"""Cells whose recurrent matrix is only softly orthogonal or unitary.

* :class:`SoftOrthogonalRNNCell`: Vorontsov, Trabelsi, Kadoury and Pal (2017), "On
  orthogonality and learning recurrent networks with long term dependencies", ICML 2017,
  arXiv:1702.00071: the penalty ``lambda ||W^T W - I||_F^2`` and the spectral-margin
  factorisation ``W = U S V^T`` (singular values in ``[1 - m, 1 + m]``).
* :class:`KRUCell`: Jose, Cisse and Fleuret (2018), "Kronecker Recurrent Units", ICML 2018,
  arXiv:1705.10142: ``W`` a Kronecker product of small complex factors with the soft unitary
  penalty ``lambda sum_f ||W_f^H W_f - I||_F^2``.

The penalties are sown into the ``'losses'`` collection (:func:`lvf_jax.regularization.
sow_loss`) by ``prepare``, once per sequence, as the lvfRNN's divergence penalty.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Optional

import jax
import jax.numpy as jnp
from flax import linen as nn

from lvf_jax import _validation
from lvf_jax import geometry, regularization
from lvf_jax.cells import base
from lvf_jax.cells.orthogonal import skew_initializer, triu_param_init
from lvf_jax.cells.unitary import _UnitaryKernelCell

Array = jax.Array

ORTHOGONAL_PARAMS = ("matrix", "skew")


class SoftOrthogonalRNNCell(base.KernelCell):
  r"""Soft orthogonal RNN (Vorontsov et al. 2017, arXiv:1702.00071), column form::

      h_t = sigma(W h_{t-1} + V x_t + b)

  Two ways of keeping ``W`` near the orthogonal group, usable together:

  * ``orthogonality_penalty = lambda > 0``: the soft constraint ``lambda ||W^T W - I||_F^2``
    (Frobenius norm), sown into ``'losses'`` as ``'orthogonality_penalty'``.
  * ``margin = m`` (not None): the paper's singular value parameterisation (Sec. 2)
    ``W = U S V^T``, ``S = diag(2 m (sigmoid(p) - 1/2) + 1)``, so that every singular value
    of ``W`` lies in ``[1 - m, 1 + m]`` (``m = 0``: a hard orthogonality constraint). The
    paper keeps ``U`` and ``V`` orthogonal by geodesic gradient descent along the Cayley
    transform (the update of Wisdom et al. 2016); with ``orthogonal_param='matrix'``
    (default) they are the parameters ``orthogonal_u`` and ``orthogonal_v`` (column form,
    label ``'orthogonal'``), which :func:`lvf_jax.optim.make_optimizer` trains with that
    update (``orthogonal_method='multiplicative'``) or the other Riemannian methods; with
    ``'skew'`` they are ``expm`` of the trivialised generators ``skew_u``, ``skew_v`` (any
    Euclidean optimiser). ``p`` is the parameter ``singular_logits`` (zeros: ``S = I``).

  With ``margin=None`` ``W`` is the unconstrained parameter ``recurrent`` (column form,
  orthogonal initialisation). Row form ``K = W^T``; the fused scan is
  :func:`lvf_jax.recurrences.rnn_scan`.

  Attributes:
    features: hidden size ``n``.
    activation: ``'tanh'`` (default) | ``'modrelu'``.
    margin: spectral margin ``m >= 0``, or None (no factorisation; default).
    orthogonality_penalty: ``lambda >= 0`` of the soft penalty (default 0: none).
    orthogonal_param: ``'matrix'`` (default) | ``'skew'``; how ``U`` and ``V`` are stored
      when ``margin`` is set.
    kernel_init: input kernel init (Glorot uniform).
    recurrent_init: init of ``recurrent`` (orthogonal).
    bias_init: activation bias init (default: zeros for tanh, ``U(+-0.01)`` for modReLU).
  """

  offered: ClassVar[str] = "own_tables"  # AntisymmetricRNN Table 1

  activation: str = "tanh"
  margin: Optional[float] = None
  orthogonality_penalty: float = 0.0
  orthogonal_param: str = "matrix"
  kernel_init: base.Initializer = nn.initializers.glorot_uniform()
  recurrent_init: base.Initializer = nn.initializers.orthogonal()
  bias_init: Optional[base.Initializer] = None

  def setup(self):
    name = type(self).__name__
    n = _validation.check_features(name, self.features)
    _validation.check_choice(name, "activation", self.activation, base.ACTIVATIONS)
    _validation.check_nonnegative_number(name, "orthogonality_penalty", self.orthogonality_penalty)
    _validation.check_choice(name, "orthogonal_param", self.orthogonal_param, ORTHOGONAL_PARAMS)
    pd = self.param_dtype
    if self.margin is None:
      if self.orthogonal_param != "matrix":
        raise ValueError(f"{name}: argument 'orthogonal_param={self.orthogonal_param!r}' "
                         f"needs a spectral margin (argument 'margin', a number >= 0); got "
                         f"margin=None.")
      self.recurrent = self.param("recurrent", self.recurrent_init, (n, n), pd)
    else:
      _validation.check_nonnegative_number(name, "margin", self.margin)
      self._setup_factors(n)
      self.singular_logits = self.param("singular_logits", nn.initializers.zeros_init(),
                                        (n,), pd)
    self.bias = self.param("bias", self.bias_init or base.activation_bias_init(self.activation),
                           (n,), pd)
    self.input = base.InputProjection(n, use_bias=False, kernel_init=self.kernel_init,
                                      param_dtype=pd, owner=name)

  def _setup_factors(self, n: int) -> None:
    """``U`` and ``V``: Haar-orthogonal matrices, or their generators (Haar logarithms)."""
    pd = self.param_dtype
    if self.orthogonal_param == "matrix":
      self.orthogonal_u = self.param("orthogonal_u", geometry.haar_orthogonal(), (n, n), pd)
      self.orthogonal_v = self.param("orthogonal_v", geometry.haar_orthogonal(), (n, n), pd)
    else:
      init = triu_param_init(skew_initializer(type(self).__name__, "random"))
      self.skew_u = self.param("skew_u", init, (n, n), pd)
      self.skew_v = self.param("skew_v", init, (n, n), pd)

  def singular_factors(self) -> tuple[Array, Array, Array]:
    """``(U, s, V)`` with ``W = U diag(s) V^T`` (margin mode only)."""
    if self.margin is None:
      raise ValueError(f"{type(self).__name__}: singular_factors needs a spectral margin; "
                       f"got margin=None.")
    if self.orthogonal_param == "matrix":
      u, v = self.orthogonal_u, self.orthogonal_v
    else:
      u = geometry.expm(geometry.skew_from_triu(self.skew_u))
      v = geometry.expm(geometry.skew_from_triu(self.skew_v))
    return u, geometry.spectral_margin(self.singular_logits, self.margin), v

  def recurrent_matrix(self) -> Array:
    """Column-form ``W``: ``recurrent``, or ``U S V^T`` with a margin."""
    if self.margin is None:
      return self.recurrent
    u, _, v = self.singular_factors()
    return geometry.margin_matrix(u, self.singular_logits, v, self.margin)

  def regularize(self) -> None:
    """Sows ``lambda ||W^T W - I||_F^2`` when ``orthogonality_penalty > 0``."""
    if self.orthogonality_penalty > 0:
      penalty = geometry.gram_penalty(self.recurrent_matrix())
      regularization.sow_loss(self, "orthogonality_penalty",
                              self.orthogonality_penalty * penalty)


def kru_rows(factors: tuple[Array, ...], h: Array) -> Array:
  """``h K`` of a KRU applied factor by factor (:func:`lvf_jax.geometry.kronecker_apply`): the
  operator of :class:`KRUCell`'s factored scan. ``factors`` are real ``(p, p)`` matrices
  acting on real rows, or real pairs ``[Re W_f, Im W_f]`` ``(2, p, p)`` acting on complex
  rows carried as ``[Re h | Im h]``."""
  if factors[0].ndim == 2:
    return geometry.kronecker_apply(factors, h)
  m = h.shape[-1] // 2
  complex_factors = tuple(geometry.complex_from_pair(f) for f in factors)
  z = jax.lax.complex(h[..., :m], h[..., m:]).astype(complex_factors[0].dtype)
  y = geometry.kronecker_apply(complex_factors, z)
  return jnp.concatenate([y.real, y.imag], axis=-1).astype(h.dtype)


class KRUCell(_UnitaryKernelCell):
  r"""Kronecker Recurrent Unit (Jose, Cisse & Fleuret 2018, arXiv:1705.10142), column form::

      h_t = modReLU(W h_{t-1} + V x_t, b),   W = W_0 (x) W_1 (x) ... (x) W_{F-1}

  The recurrent matrix is the Kronecker product of small square factors (Sec. 3):
  :func:`lvf_jax.geometry.kronecker_sizes` ``(n, factor_size)`` gives their sizes (as many
  ``factor_size x factor_size`` factors as divide ``n``, then one factor for the rest), so
  ``n = 512`` with ``2 x 2`` complex factors has ``9 * 8 = 72`` recurrent parameters. The
  factors are not constrained: the soft unitary penalty ``lambda sum_f ||W_f^H W_f - I||_F^2``
  (``unitary_penalty = lambda``) is sown into ``'losses'`` as ``'unitary_penalty'``; they
  start Haar-unitary (Haar-orthogonal when real), so ``W`` starts unitary.

  ``complex_valued=True`` (default, the paper's choice: the unitary set is connected in the
  complex space only): factors ``factor_<f>`` stored as real pairs ``[Re W_f, Im W_f]``
  ``(2, p, p)``, the complex state carried as ``[Re h | Im h]`` (``2 * features`` entries)
  with the complex modReLU, as the library's unitary cells; ``False``: real ``(p, p)``
  factors and an ordinary ``sigma(h K + u + b)`` cell. The factors are ordinary parameters
  (label ``'default'``, any optimiser). ``V`` is the Glorot-uniform input projection (to
  ``[x V_re | x V_im]`` when complex), ``b`` the real modReLU bias ``U(+-0.01)``.

  ``factored=True`` (default): ``prepare`` merges consecutive factors, once per sequence,
  into Kronecker blocks of size at most ``block_size``
  (:func:`lvf_jax.geometry.kronecker_blocks`; the same ``W``), and each step multiplies the
  state by the blocks (the reshaped state contracted with one block after the other,
  ``O(n sum_b p_b)``); the fused scan is :func:`lvf_jax.recurrences.rnn_scan` with
  :func:`kru_rows` as its structured operator. ``block_size <= factor_size`` applies the
  stored factors one by one. ``False``: ``prepare`` forms the dense ``W`` (the same
  function and parameters).

  Attributes:
    features: hidden size ``n`` (complex units when ``complex_valued``).
    factor_size: size ``p >= 2`` of the square factors (default 2).
    complex_valued: complex factors and state (default) or real.
    unitary_penalty: ``lambda >= 0`` of the soft unitary penalty (default 0: none).
    factored: apply the factors each step instead of the dense ``W`` (default True).
    block_size: the largest Kronecker block ``prepare`` forms from consecutive factors when
      ``factored`` (default 32: ``n = 512`` with ``2 x 2`` factors is applied as blocks of 32
      and 16). A parameterisation-free choice: it changes the cost, not ``W``.
    activation: ``'modrelu'``; a real KRU also accepts ``'tanh'``.
    kernel_init, bias_init: input kernel and modReLU bias initialisers.
  """

  offered: ClassVar[str] = "own_tables"  # AntisymmetricRNN Table 1

  factor_size: int = 2
  complex_valued: bool = True
  unitary_penalty: float = 0.0
  factored: bool = True
  block_size: int = 32
  activation: str = "modrelu"
  kernel_init: base.Initializer = nn.initializers.glorot_uniform()
  bias_init: Optional[base.Initializer] = None

  @property
  def state_is_complex(self) -> bool:
    return bool(self.complex_valued)

  def setup(self):
    name = type(self).__name__
    n = _validation.check_features(name, self.features)
    self._check_activation(name)
    _validation.check_nonnegative_number(name, "unitary_penalty", self.unitary_penalty)
    _validation.check_int(name, "block_size", self.block_size)
    try:
      sizes = geometry.kronecker_sizes(n, self.factor_size)
    except ValueError as e:
      raise ValueError(f"{name}: argument 'factor_size' must be an int >= 2; got "
                       f"{self.factor_size!r}.") from e
    pd = self.param_dtype
    if self.state_is_complex:
      shapes, init = [(2, p, p) for p in sizes], geometry.haar_unitary()
    else:
      shapes, init = [(p, p) for p in sizes], geometry.haar_orthogonal()
    self.factors = tuple(self.param(f"factor_{f}", init, shape, pd)
                         for f, shape in enumerate(shapes))
    self._setup_bias_and_input(name)

  def complex_factors(self) -> tuple[Array, ...]:
    """The factors ``W_f`` as matrices (complex when ``complex_valued``)."""
    if not self.state_is_complex:
      return tuple(self.factors)
    return tuple(geometry.complex_from_pair(f) for f in self.factors)

  def recurrent_matrix(self) -> Array:
    """Column-form ``W = W_0 (x) ... (x) W_{F-1}`` (complex when ``complex_valued``)."""
    return geometry.kronecker_matrix(self.complex_factors())

  def regularize(self) -> None:
    """Sows ``lambda sum_f ||W_f^H W_f - I||_F^2`` when ``unitary_penalty > 0``."""
    if self.unitary_penalty > 0:
      total = sum(geometry.gram_penalty(f) for f in self.complex_factors())
      regularization.sow_loss(self, "unitary_penalty", self.unitary_penalty * total)

  def kronecker_blocks(self) -> tuple[Array, ...]:
    """The factors merged into blocks of at most ``block_size``
    (:func:`lvf_jax.geometry.kronecker_blocks`), stored as the factors are: real pairs
    ``[Re B, Im B]`` when complex."""
    blocks = geometry.kronecker_blocks(self.complex_factors(), self.block_size)
    if not self.state_is_complex:
      return blocks
    return tuple(geometry.pair_from_complex(b) for b in blocks)

  def prepare(self, dtype: Optional[base.Dtype] = None) -> dict[str, Any]:
    """``{'kernel': K, 'bias': b}``; with ``factored`` the kernel is the tuple of Kronecker
    blocks (:meth:`kronecker_blocks`, applied by :func:`kru_rows`)."""
    if not self.factored:
      return super().prepare(dtype)
    self.regularize()
    prep = {"kernel": self.kronecker_blocks(), "bias": self.activation_bias()}
    return base.cast_tree(prep, self._prep_dtype(dtype))

  @nn.nowrap
  def step(self, prep: Any, carry: Array, u: Array) -> tuple[Array, Array]:
    """One step with the dense kernel, or with ``factored`` the factors (pure)."""
    if not isinstance(prep["kernel"], tuple):
      return super().step(prep, carry, u)
    return self._structured_step(kru_rows, prep, carry, u)

  @nn.nowrap
  def fused_scan(self, in_loop: bool = False) -> Optional[Callable]:
    """The fused scan; with ``factored`` its recurrence is :func:`kru_rows`."""
    if not self.factored:
      return super().fused_scan(in_loop)
    activation = "modrelu_split" if self.state_is_complex else self.activation
    return base.kernel_scan(type(self).__name__, activation, True, in_loop, operator=kru_rows)
