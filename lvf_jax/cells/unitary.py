"""Unitary RNN cells: uRNN (Arjovsky et al. 2016), full-capacity uRNN (Wisdom et al. 2016),
EURNN (Jing et al. 2017) and GORU (Jing et al. 2019).

A complex hidden state ``h in C^n`` is carried as the real vector ``[Re h | Im h]`` of
length ``2n`` (so the carry and the outputs have ``2 * features`` entries, which is what
the papers' output layers read), and the complex column-form recurrent matrix ``W`` enters
the step as the real row-form kernel ``K = complex_to_real_kernel(W)`` (``2n x 2n``,
orthogonal). ``W`` is built from its structured factors once per ``prepare`` -- once per
sequence in :class:`lvf_jax.layers.Recurrent` -- so each step is one dense product. With
``factored=True`` the uRNN and the tunable-style EURNN instead apply their factors to the
state each step (two FFTs and a few diagonal maps; ``L`` rotation layers), the cheaper step
where ``n`` is large; their fused scans take the factors as a structured operator.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any, Callable, ClassVar, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from lvf_jax import _validation
from lvf_jax import geometry, recurrences
from lvf_jax.cells import base

Array = jax.Array


def _check_capacity(cls: str, capacity: Any) -> int:
  if isinstance(capacity, bool) or not isinstance(capacity, (numbers.Integral, np.integer)) \
      or int(capacity) < 1:
    raise ValueError(
        f"{cls}: argument 'capacity' (number of Givens-rotation layers) must be an int "
        f">= 1; got {capacity!r}.")
  return int(capacity)


def _angle_init(key, shape, dtype=jnp.float32):
  """``U(-pi, pi)`` (phases and rotation angles of uRNN / EUNN)."""
  return jax.random.uniform(key, tuple(shape), dtype, -math.pi, math.pi)


def _eunn_params(cell: Any, name: str, complex_valued: Optional[bool] = None) -> "EUNNParams":
  """The checked ``EUNNParams`` submodule of an EURNN / GORU cell (``cell.features``,
  ``cell.capacity``, ``cell.fft``)."""
  n = _validation.check_features(name, cell.features, 2)
  capacity = _check_capacity(name, cell.capacity)
  if cell.fft and n & (n - 1):
    raise ValueError(
        f"{name}: argument 'features' must be a power of 2 >= 2 with fft=True (FFT-style "
        f"EUNN); got {n}.")
  cv = cell.state_is_complex if complex_valued is None else complex_valued
  return EUNNParams(n, capacity, cv, cell.param_dtype, bool(cell.fft), name="eunn")


class EUNNParams(nn.Module):
  """The angles of an EUNN of ``features`` units: tunable style with ``capacity`` layers,
  or FFT style (``fft=True``: ``log2 n`` butterfly layers, ``capacity`` unused).

  Tunable: parameters ``theta_a`` ``(ceil(L/2), n // 2)`` and ``theta_b``
  ``(floor(L/2), (n-1) // 2)`` (the latter only for ``L >= 2``); with ``complex_valued`` also
  the phases ``phi_a``, ``phi_b`` (same shapes) and ``omega`` ``(n,)``. FFT: ``theta``
  ``(log2 n, n / 2)`` (and ``phi``, ``omega``). All ``U(-pi, pi)`` as the reference.
  Calling it returns the column-form matrix of :func:`lvf_jax.geometry.eunn_matrix` /
  :func:`lvf_jax.geometry.eunn_fft_matrix`.
  """

  features: int
  capacity: int
  complex_valued: bool
  param_dtype: base.Dtype = jnp.float32
  fft: bool = False

  @nn.compact
  def __call__(self, factored: bool = False) -> Any:
    """The column-form ``W``, or with ``factored`` (tunable style only) its factors
    :func:`lvf_jax.geometry.eunn_rotations` for :func:`lvf_jax.geometry.eunn_apply`."""
    n, pd = self.features, self.param_dtype
    if factored and self.fft:
      raise ValueError("EUNNParams: factored=True needs the tunable style (fft=False).")
    if self.fft:
      shape = (n.bit_length() - 1, n // 2)
      theta = self.param("theta", _angle_init, shape, pd)
      if not self.complex_valued:
        return geometry.eunn_fft_matrix(theta)
      return geometry.eunn_fft_matrix(theta, self.param("phi", _angle_init, shape, pd),
                                      self.param("omega", _angle_init, (n,), pd))
    la, lb = (self.capacity + 1) // 2, self.capacity // 2

    def params(prefix):
      a = self.param(f"{prefix}_a", _angle_init, (la, n // 2), pd)
      b = (self.param(f"{prefix}_b", _angle_init, (lb, (n - 1) // 2), pd) if lb
           else jnp.zeros((0, (n - 1) // 2), pd))
      return a, b

    build = geometry.eunn_rotations if factored else geometry.eunn_matrix
    theta_a, theta_b = params("theta")
    if not self.complex_valued:
      return build(theta_a, theta_b)
    phi_a, phi_b = params("phi")
    omega = self.param("omega", _angle_init, (n,), pd)
    return build(theta_a, theta_b, phi_a, phi_b, omega)


class _UnitaryKernelCell(base.KernelCell):
  """``h' = modReLU(h @ K + u, b)`` with a complex (or real) column-form matrix ``W``.

  With a complex state the carry is ``[Re h | Im h]`` (``2n``) and the activation is the
  complex modReLU :func:`lvf_jax.geometry.activations.modrelu_split`; with a real state this
  is exactly a :class:`~lvf_jax.cells.base.KernelCell` (and runs in the fused scan).
  """

  offered: ClassVar[str] = "unitary_tables"

  @property
  def state_is_complex(self) -> bool:
    return True

  @property
  def state_size(self) -> int:
    """Length of the carry (and of each output): ``2n`` for a complex state, else ``n``."""
    return 2 * self.features if self.state_is_complex else self.features

  def _check_activation(self, name: str) -> None:
    allowed = ("modrelu",) if self.state_is_complex else base.ACTIVATIONS
    _validation.check_choice(name, "activation", self.activation, allowed)

  def _setup_bias_and_input(self, name: str) -> None:
    """The modReLU (or activation) bias ``(n,)`` and the bias-free input projection to
    ``state_size`` features (``[x V_re | x V_im]`` for a complex state); call from ``setup``."""
    pd = self.param_dtype
    self.bias = self.param("bias", self.bias_init or base.activation_bias_init(self.activation),
                           (self.features,), pd)
    self.input = base.InputProjection(self.state_size, use_bias=False,
                                      kernel_init=self.kernel_init, param_dtype=pd, owner=name)

  def prepare(self, dtype: Optional[base.Dtype] = None) -> dict[str, Array]:
    """``{'kernel': K, 'bias': b}``; ``K`` is the ``2n x 2n`` real embedding of ``W``."""
    self.regularize()
    w = self.recurrent_matrix()
    kernel = geometry.complex_to_real_kernel(w) if self.state_is_complex else w.T
    prep = {"kernel": kernel, "bias": self.activation_bias()}
    return base.cast_tree(prep, self._prep_dtype(dtype))

  @nn.nowrap
  def step(self, prep: Any, carry: Array, u: Array) -> tuple[Array, Array]:
    """``h' = modReLU(h @ K + u, b)`` (complex modReLU on ``[Re | Im]``) (pure)."""
    if not self.state_is_complex:
      return super().step(prep, carry, u)
    if carry.shape[-1] != self.state_size:
      raise ValueError(
          f"{type(self).__name__}: the carry must have 2 * features = {self.state_size} "
          f"entries [Re h | Im h] (see initialize_carry); got shape {carry.shape}.")
    h = geometry.modrelu_split(carry @ prep["kernel"] + u, prep["bias"])
    return h, h

  @nn.nowrap
  def _structured_step(self, rows: Callable, prep: Any, carry: Array,
                       u: Array) -> tuple[Array, Array]:
    """One step with the structured operator ``rows(prep['kernel'], h)`` for ``h K``."""
    if carry.shape[-1] != self.state_size:
      raise ValueError(
          f"{type(self).__name__}: the carry must have {self.state_size} entries (see "
          f"initialize_carry); got shape {carry.shape}.")
    z = rows(prep["kernel"], carry) + u
    if self.state_is_complex:
      h = geometry.modrelu_split(z, prep["bias"])
    else:
      h = base.activate(self.activation, z, prep["bias"])
    return h, h

  @nn.nowrap
  def initialize_carry(self, rng: Any, input_shape: tuple[int, ...]) -> Array:
    """Zero carry of shape ``input_shape[:-1] + (state_size,)``."""
    return self.carry_init(rng, tuple(input_shape[:-1]) + (self.state_size,),
                           self._prep_dtype(None))


class URNNCell(_UnitaryKernelCell):
  r"""uRNN cell (Arjovsky, Shah & Bengio 2016, Sec. 4), complex hidden state.

  ``h_t = modReLU(W h_{t-1} + V x_t, b)`` with ``h in C^n`` and the unitary
  ``W = D_3 R_2 F^{-1} D_2 Pi R_1 F D_1`` of :func:`lvf_jax.geometry.urnn_matrix`
  (``7n`` recurrent parameters). The carry and the output are ``[Re h | Im h]``
  (``2 * features`` entries); ``V = V_re + i V_im`` is the input projection to ``2n``
  features ``[x V_re | x V_im]`` (Glorot-uniform, the reference's
  ``U(+-sqrt(6 / (m + 2n)))``), ``b`` is the real modReLU bias (``U(+-0.01)``).

  Parameters: ``theta`` ``(3, n)`` (the phases of ``D_1, D_2, D_3``, ``U(-pi, pi)``),
  ``reflection`` ``(2, 2, n)`` (``[k, re/im, :]`` of ``v_1, v_2``, ``U(-1, 1)``), ``bias``,
  ``input/kernel``. The permutation ``Pi`` is fixed by ``permutation_seed`` (NumPy
  ``RandomState(seed).permutation(n)``), part of the model definition, not a parameter.

  Attributes:
    features: complex hidden size ``n``.
    permutation_seed: seed of the fixed permutation ``Pi``.
    activation: ``'modrelu'`` (the only choice for a complex state).
    kernel_init, bias_init: input kernel and modReLU bias initialisers.
    reflection_init: initialiser of the reflection vectors (default ``U(-1, 1)``).
    factored: apply the factors to the state each step (:func:`lvf_jax.geometry.urnn_apply`,
      two FFTs, ``O(n log n)``; phases and unit reflections evaluated once per sequence)
      instead of the dense ``W`` (``O(n^2)``): the same function and parameters, the cheaper
      step at large ``n`` (default ``False``). Its fused scan is
      :func:`lvf_jax.recurrences.rnn_scan` with :func:`urnn_rows` as the structured operator.
  """

  permutation_seed: int = 0
  activation: str = "modrelu"
  kernel_init: base.Initializer = nn.initializers.glorot_uniform()
  bias_init: Optional[base.Initializer] = None
  reflection_init: base.Initializer = base.symmetric_uniform(1.0)
  factored: bool = False

  def setup(self):
    name = type(self).__name__
    n = _validation.check_features(name, self.features)
    self._check_activation(name)
    pd = self.param_dtype
    self.theta = self.param("theta", _angle_init, (3, n), pd)
    self.reflection = self.param("reflection", self.reflection_init, (2, 2, n), pd)
    self._setup_bias_and_input(name)

  def permutation(self) -> np.ndarray:
    """The fixed permutation ``Pi`` as an index array."""
    return np.random.RandomState(self.permutation_seed).permutation(self.features)

  def _factors(self) -> geometry.URNNFactors:
    """The factors of ``W`` (:func:`lvf_jax.geometry.urnn_factors`) from the parameters."""
    v = jax.lax.complex(self.reflection[:, 0], self.reflection[:, 1])
    return geometry.urnn_factors(self.theta[0], self.theta[1], self.theta[2], v[0], v[1])

  def recurrent_matrix(self) -> Array:
    """The complex column-form ``W`` (:func:`lvf_jax.geometry.urnn_factors_matrix`)."""
    return geometry.urnn_factors_matrix(self._factors(), self.permutation())

  @nn.nowrap
  def _rows(self) -> Callable[[Any, Array], Array]:
    return urnn_rows(tuple(int(i) for i in self.permutation()))

  @nn.nowrap
  def fused_scan(self, in_loop: bool = False) -> Optional[Callable]:
    """The fused scan; with ``factored`` its recurrence is :func:`urnn_rows`."""
    if not self.factored:
      return super().fused_scan(in_loop)
    return base.kernel_scan(type(self).__name__, "modrelu_split", True, in_loop,
                            operator=self._rows())

  def prepare(self, dtype: Optional[base.Dtype] = None) -> dict[str, Any]:
    """``{'kernel': K, 'bias': b}``; with ``factored`` the kernel is the factors of
    :func:`lvf_jax.geometry.urnn_factors` (applied by :func:`urnn_rows`)."""
    if not self.factored:
      return super().prepare(dtype)
    self.regularize()
    prep = {"kernel": self._factors(), "bias": self.activation_bias()}
    return base.cast_tree(prep, self._prep_dtype(dtype))

  @nn.nowrap
  def step(self, prep: Any, carry: Array, u: Array) -> tuple[Array, Array]:
    """One step with the dense kernel, or with ``factored`` the factors (pure)."""
    if not isinstance(prep["kernel"], geometry.URNNFactors):
      return super().step(prep, carry, u)
    return self._structured_step(self._rows(), prep, carry, u)


class FullCapacityURNNCell(_UnitaryKernelCell):
  r"""Full-capacity uRNN cell (fcuRNN; Wisdom, Powers, Hershey, Le Roux & Atlas 2016).

  ``h_t = modReLU(W h_{t-1} + V x_t, b)`` with ``h in C^n`` and ``W`` *any* unitary matrix
  (``n^2`` real degrees of freedom, against the uRNN's ``7n``). ``W`` is stored whole, in
  column form, as the real pair ``unitary = [Re W, Im W]`` ``(2, n, n)`` -- label
  ``'unitary'`` of :func:`lvf_jax.optim.param_labels` -- and trained on the unitary group by
  the multiplicative Cayley step (eqs 9-10) :func:`lvf_jax.optim.multiplicative_cayley`
  ``(unitary=True)``, which :func:`lvf_jax.optim.make_optimizer` applies to that label at
  ``lr_orth``. A Euclidean optimiser would move ``W`` off the group.

  As :class:`URNNCell`: the carry and the output are ``[Re h | Im h]`` (``2 * features``
  entries), ``V`` is the Glorot-uniform input projection to ``[x V_re | x V_im]``, ``b`` the
  real modReLU bias ``U(+-0.01)``. The reference initialises ``W`` as a random uRNN product
  (:func:`lvf_jax.geometry.urnn_unitary`, the default here); :func:`lvf_jax.geometry.
  haar_unitary` draws it Haar-uniformly. The reference's trainable initial state is not
  part of the cell (carries start at zero, as every lvf_jax cell).

  Attributes:
    features: complex hidden size ``n``.
    activation: ``'modrelu'`` (the only choice for a complex state).
    unitary_init: initialiser of the ``(2, n, n)`` pair (default ``urnn_unitary()``).
    kernel_init, bias_init: input kernel and modReLU bias initialisers.
  """

  activation: str = "modrelu"
  unitary_init: base.Initializer = geometry.urnn_unitary()
  kernel_init: base.Initializer = nn.initializers.glorot_uniform()
  bias_init: Optional[base.Initializer] = None

  def setup(self):
    name = type(self).__name__
    n = _validation.check_features(name, self.features)
    self._check_activation(name)
    self.unitary = self.param("unitary", self.unitary_init, (2, n, n), self.param_dtype)
    self._setup_bias_and_input(name)

  def recurrent_matrix(self) -> Array:
    """The complex column-form ``W = unitary[0] + i unitary[1]``."""
    return geometry.complex_from_pair(self.unitary)


class EURNNCell(_UnitaryKernelCell):
  r"""EURNN cell: tunable-space efficient unitary RNN (Jing et al. 2017, Sec. 4).

  ``h_t = modReLU(W h_{t-1} + U x_t, b)`` with ``W = D_omega F_L ... F_1`` a product of
  ``L = capacity`` layers of Givens rotations (:func:`lvf_jax.geometry.eunn_matrix`;
  ``L = n`` spans the whole unitary group). ``complex_valued=True`` (default): complex
  state carried as ``[Re h | Im h]`` (``2 * features`` entries), phases ``phi`` and
  ``omega`` trained; ``False``: the real orthogonal variant (the reference code's
  ``comp=False``), an ordinary ``sigma(h K + u + b)`` cell that runs in the fused scan.
  ``fft=True``: the FFT-style EUNN (Sec. 4, :func:`lvf_jax.geometry.eunn_fft_matrix`,
  ``log2 n`` butterfly layers; ``n`` a power of 2, ``capacity`` unused).
  ``factored=True`` (tunable style): each step applies the ``L`` rotation layers to the
  state (:func:`lvf_jax.geometry.eunn_apply`, ``O(L n)``; cosines, sines and phases
  evaluated once per sequence) instead of the dense ``W`` (``O(n^2)``), the same function
  and parameters; the cheaper choice when ``L`` is much smaller than ``n``. Its fused scan is
  :func:`lvf_jax.recurrences.rnn_scan` with :func:`eunn_rows` as the structured operator.
  Input kernel ``U(+-0.01)`` (to ``2n`` features ``[Re | Im]`` when complex), modReLU bias
  zeros, as the reference.

  Attributes:
    features: hidden size ``n >= 2`` (a power of 2 with ``fft``).
    capacity: number of rotation layers ``L >= 1`` (default 2, as the reference).
    complex_valued: complex unitary (default) or real orthogonal.
    fft: FFT style instead of tunable style (default ``False``, as the reference EURNN).
    factored: apply the rotation layers each step instead of the dense ``W`` (default
      ``False``; tunable style only).
    activation: ``'modrelu'``; a real EURNN also accepts ``'tanh'``.
    kernel_init, bias_init: input kernel and modReLU bias initialisers.
  """

  capacity: int = 2
  complex_valued: bool = True
  activation: str = "modrelu"
  kernel_init: base.Initializer = base.symmetric_uniform(0.01)
  bias_init: Optional[base.Initializer] = nn.initializers.zeros_init()
  fft: bool = False
  factored: bool = False

  @property
  def state_is_complex(self) -> bool:
    return bool(self.complex_valued)

  def setup(self):
    name = type(self).__name__
    self._check_activation(name)
    if self.factored and self.fft:
      raise ValueError(
          f"{name}: factored=True applies the tunable-style rotation layers; it cannot be "
          f"combined with fft=True.")
    self.eunn = _eunn_params(self, name)
    self._setup_bias_and_input(name)

  def recurrent_matrix(self) -> Array:
    """Column-form ``W`` (complex unitary or real orthogonal)."""
    return self.eunn()

  @nn.nowrap
  def fused_scan(self, in_loop: bool = False) -> Optional[Callable]:
    """The fused scan; with ``factored`` its recurrence is :func:`eunn_rows`."""
    if not self.factored:
      return super().fused_scan(in_loop)
    activation = "modrelu_split" if self.state_is_complex else self.activation
    return base.kernel_scan(type(self).__name__, activation, True, in_loop, operator=eunn_rows)

  def prepare(self, dtype: Optional[base.Dtype] = None) -> dict[str, Any]:
    """``{'kernel': K, 'bias': b}``; with ``factored`` the kernel is the rotations of
    :func:`lvf_jax.geometry.eunn_rotations` (applied by :func:`eunn_rows`)."""
    if not self.factored:
      return super().prepare(dtype)
    self.regularize()
    prep = {"kernel": self.eunn(factored=True), "bias": self.activation_bias()}
    return base.cast_tree(prep, self._prep_dtype(dtype))

  @nn.nowrap
  def step(self, prep: Any, carry: Array, u: Array) -> tuple[Array, Array]:
    """One step with the dense kernel, or with ``factored`` the rotation layers (pure)."""
    if not isinstance(prep["kernel"], geometry.EUNNRotations):
      return super().step(prep, carry, u)
    return self._structured_step(eunn_rows, prep, carry, u)


def eunn_rows(rotations: "geometry.EUNNRotations", h: Array) -> Array:
  """``h K`` of an EUNN applied by its layers (:func:`lvf_jax.geometry.eunn_apply`): rows
  ``h`` real, or ``[Re h | Im h]`` for a complex EUNN; the operator of the factored
  :class:`EURNNCell`'s fused scan."""
  if rotations.phase_cos_a is None:
    return geometry.eunn_apply(rotations, h)
  return _on_split_rows(lambda z: geometry.eunn_apply(rotations, z), h)


@functools.lru_cache(maxsize=None)
def urnn_rows(permutation: tuple[int, ...]) -> Callable[[Any, Array], Array]:
  """The operator ``(factors, [Re h | Im h]) -> [Re Wh | Im Wh]`` of a uRNN with the fixed
  ``permutation``: :func:`lvf_jax.geometry.urnn_apply` on split rows, the structured
  recurrence of the factored :class:`URNNCell`'s fused scan (one function per permutation,
  so that scans of the same cell share it)."""
  perm = np.asarray(permutation)

  def rows(factors: "geometry.URNNFactors", h: Array) -> Array:
    return _on_split_rows(lambda z: geometry.urnn_apply(factors, z, perm), h)

  return rows


def _on_split_rows(apply: Callable[[Array], Array], h: Array) -> Array:
  """``apply`` (complex rows to complex rows) on ``[Re h | Im h]`` rows, split again."""
  n = h.shape[-1] // 2
  z = apply(jax.lax.complex(h[..., :n], h[..., n:]))
  return jnp.concatenate([z.real, z.imag], axis=-1)


class GORUCell(base.StructuredCell):
  r"""GORU cell: gated orthogonal recurrent unit (Jing et al. 2019), column form::

      r  = sigmoid(W_r h + U_r x + b_r)
      z  = sigmoid(W_z h + U_z x + b_z)
      c  = modReLU(r * (U h) + U_c x, b_c)
      h' = z * h + (1 - z) * c

  ``U`` is a real orthogonal EUNN of ``capacity`` layers (the reference's GORU uses the
  real EUNN); the reset gate multiplies ``U h`` *after* the product (unlike NC-GRU, where
  it multiplies ``h`` before). Initialisation as the authors' code: input kernel and the
  free gate kernels ``W_r, W_z`` ``U(+-0.01)``, reset bias ``b_r = 2``, modReLU bias
  ``b_c = 0.01``; the update bias ``b_z`` starts at zero.

  Row form: one product ``h @ [W_r^T | W_z^T | U^T]`` per step (``prep['kernel']``,
  ``(n, 3n)``). Parameters: ``eunn/theta_a``, ``eunn/theta_b``, ``recurrent_r``,
  ``recurrent_z`` (row form ``(n, n)``), ``bias_r``, ``bias_z``, ``bias_c`` and the input
  projection ``input`` to ``3n`` features ``[r | z | c]``.

  Attributes:
    features: hidden size ``n >= 2`` (a power of 2 with ``fft``).
    capacity: EUNN layers ``L >= 1`` (default 2).
    fft: FFT-style EUNN (``log2 n`` butterfly layers; the GORU reference code's default,
      which needs ``n`` a power of 2) instead of the tunable style (default ``False``, so
      that any ``n`` works, e.g. the copy task's 100 units).
    kernel_init, recurrent_kernel_init, reset_bias_init, update_bias_init,
    modrelu_bias_init: initialisers (defaults above).
  """

  offered: ClassVar[str] = "synthetic_tasks"  # NC-GRU's synthetic tasks

  capacity: int = 2
  fft: bool = False
  kernel_init: base.Initializer = base.symmetric_uniform(0.01)
  recurrent_kernel_init: base.Initializer = base.symmetric_uniform(0.01)
  reset_bias_init: base.Initializer = nn.initializers.constant(2.0)
  update_bias_init: base.Initializer = nn.initializers.zeros_init()
  modrelu_bias_init: base.Initializer = nn.initializers.constant(0.01)

  def setup(self):
    name = type(self).__name__
    self.eunn = _eunn_params(self, name, complex_valued=False)
    n, pd = self.features, self.param_dtype
    self.recurrent_r = self.param("recurrent_r", self.recurrent_kernel_init, (n, n), pd)
    self.recurrent_z = self.param("recurrent_z", self.recurrent_kernel_init, (n, n), pd)
    self.bias_r = self.param("bias_r", self.reset_bias_init, (n,), pd)
    self.bias_z = self.param("bias_z", self.update_bias_init, (n,), pd)
    self.bias_c = self.param("bias_c", self.modrelu_bias_init, (n,), pd)
    self.input = base.InputProjection(3 * n, use_bias=False, kernel_init=self.kernel_init,
                                      param_dtype=pd, owner=name)

  def orthogonal_matrix(self) -> Array:
    """The column-form orthogonal ``U`` (real EUNN)."""
    return self.eunn()

  def prepare(self, dtype: Optional[base.Dtype] = None) -> dict[str, Array]:
    """``{'kernel': [W_r^T | W_z^T | U^T] (n, 3n), 'bias_c': b_c}``."""
    kernel = jnp.concatenate([self.recurrent_r, self.recurrent_z, self.orthogonal_matrix().T],
                             axis=1)
    return base.cast_tree({"kernel": kernel, "bias_c": self.bias_c}, self._prep_dtype(dtype))

  def project_inputs(self, x: Array) -> tuple[Array, Array, Array]:
    """``(x U_r + b_r, x U_z + b_z, x U_c)``: three ``(..., n)`` arrays, one product each
    (the fused scan reads three arrays, see :mod:`lvf_jax.recurrences.gated`)."""
    return base.add_gate_biases(self.input(x, self._compute_dtype(x), parts=3), self.bias_r,
                                self.bias_z, None)

  def input_weights(self, x: Array) -> tuple[Array, Array]:
    """``(W, [b_r | b_z | 0])``: :meth:`project_inputs` as weights (for the in-loop
    projection)."""
    return self._dense_input_weights(x, (self.bias_r, self.bias_z, None))

  @nn.nowrap
  def step(self, prep: Any, carry: Array, u: Any) -> tuple[Array, Array]:
    """One GORU step (pure), row form; ``u`` the three projections (or them concatenated)."""
    n = carry.shape[-1]
    u_r, u_z, u_c = base.split_inputs("GORUCell", u, 3, n)
    g = carry @ prep["kernel"]
    r = jax.nn.sigmoid(u_r + g[..., :n])
    z = jax.nn.sigmoid(u_z + g[..., n:2 * n])
    c = base.activate("modrelu", u_c + r * g[..., 2 * n:], prep["bias_c"])
    h = z * carry + (1.0 - z) * c
    return h, h

  @nn.nowrap
  def fused_scan(self, in_loop: bool = False) -> Callable:
    """:func:`lvf_jax.recurrences.gru_scan` with the modReLU candidate and no hidden
    biases (the GORU is a GRU whose candidate is a modReLU)."""
    return base.gated_scan(recurrences.gru_scan, lambda p: (
        (p["kernel"], None), {"candidate": "modrelu", "candidate_bias": p["bias_c"]}), in_loop)
