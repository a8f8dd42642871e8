"""NC-GRU: the GRU with scaled-Cayley orthogonal recurrent kernels (Mucllari et al., eq 19)."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Union

import jax
import jax.numpy as jnp
from flax import linen as nn

from lvf_jax import _validation
from lvf_jax import geometry, recurrences
from lvf_jax.cells import base
from lvf_jax.cells.orthogonal import ORTHOGONAL_PARAMS, mapped_initializer, skew_initializer, \
    triu_param_init

Array = jax.Array

#: Initialisation schemes of :class:`NCGRUCell`: this library's, or the one of the authors'
#: released cell (:func:`released_initializers`).
INIT_SCHEMES = ("lvf_jax", "released")


def released_initializers(n: int, input_features: Optional[int],
                          orthogonal_reset: bool) -> dict[str, base.Initializer]:
  """The initialisers of the NC-GRU authors' released TensorFlow cell (Mucllari et al.
  2022, arXiv:2208.06496; ``denoise_task/NCGRU.py`` of github.com/emucllari1/NC-GRU), for
  ``NCGRUCell``'s parameters; ``U_c`` (and ``U_r``) keep the Cayley initialisation both
  share.

  With one orthogonal kernel, the gates' kernel over ``[x; h]`` is He-uniform with fan-in
  ``d + n``: ``W_r, W_u, U_r, U_u ~ U(+-sqrt(6 / (d + n)))``, gate biases zero. With two
  (``orthogonal_reset``), ``W_r, W_u ~ U(+-sqrt(6 / d))``, ``U_u ~ U(+-sqrt(6 / n))``, gate
  biases ``N(0, 1)``. Both: the candidate's input kernel ``W_c`` He-normal (truncated,
  standard deviation ``sqrt(2 / d)``), the modReLU bias ``U(+-0.1)``.

  Args:
    n: hidden size.
    input_features: ``d``; needed with one orthogonal kernel (the recurrent gate kernels'
      fan-in counts it), checked against the input kernel's first axis when drawn.
    orthogonal_reset: whether ``U_r`` is orthogonal too.

  Returns:
    ``{'kernel', 'recurrent', 'gate_bias', 'modrelu_bias'}``: the input kernel ``(d, 3n)``
    (blocks ``[W_r | W_u | W_c]``), the free recurrent gate kernels, the gate biases, the
    modReLU bias.
  """
  if orthogonal_reset:
    gate_input = nn.initializers.he_uniform()
    recurrent = nn.initializers.he_uniform()
    gate_bias = nn.initializers.normal(1.0)
  else:
    d = _validation.check_optional_int("NCGRUCell", "input_features", input_features)
    if d is None:
      _validation.fail("NCGRUCell", "input_features", input_features,
                       "the input size d (an int >= 1) with init_scheme='released' and one "
                       "orthogonal kernel (the gate kernel's fan-in is d + n)")
    limit = math.sqrt(6.0 / (d + n))
    gate_input = _checked_rows(base.symmetric_uniform(limit), d)
    recurrent = base.symmetric_uniform(limit)
    gate_bias = nn.initializers.zeros_init()
  kernel = geometry.column_blocks(gate_input, gate_input, nn.initializers.he_normal())
  return {"kernel": kernel, "recurrent": recurrent, "gate_bias": gate_bias,
          "modrelu_bias": base.symmetric_uniform(0.1)}


def _checked_rows(init: base.Initializer, d: int) -> base.Initializer:
  """``init`` for a kernel whose first axis must be ``d`` (the declared input size)."""

  def checked(key, shape, dtype=jnp.float32):
    if int(shape[0]) != d:
      raise ValueError(f"NCGRUCell: argument 'input_features' is {d} but the inputs have "
                       f"{int(shape[0])} features; set it to the input size.")
    return init(key, shape, dtype)

  return checked


class NCGRUCell(base.StructuredCell):
  r"""NC-GRU cell, eq (19) (column form in the paper)::

      r = sigmoid(W_r x + U_r h + b_r)
      u = sigmoid(W_u x + U_u h + b_u)
      c = modReLU(W_c x + U_c (r * h), b)
      h' = (1 - u) * h + u * c

  The reset gate multiplies ``h`` *before* the matmul with ``U_c``, as in the paper (the
  reference PyTorch PTB cell applies it after). ``U_c = (I + A_c)^{-1} (I - A_c) D`` is
  scaled-Cayley orthogonal; with ``orthogonal_reset=True`` so is ``U_r`` (same ``rho``),
  otherwise ``U_r`` is a free kernel. ``U_u`` is always free. Row form: ``h @ K`` with
  ``K = U^T``.

  Parameters (``orthogonal_param='skew'``): ``skew_c`` (and ``skew_r``), mapped by the
  scaled Cayley transform in ``prepare``; with ``'matrix'``: ``orthogonal_c`` (and
  ``orthogonal_r``), column form, for the Neumann-Cayley / Riemannian optimisers. Free
  recurrent kernels ``recurrent_u`` (and ``recurrent_r``) are stored in row form
  ``(n, n)`` with orthogonal init; the input projection ``input`` maps to ``3n`` features
  ``[r, u, c]`` with biases ``b_r, b_u`` (zeros) and none for ``c``; ``bias_c`` is the
  modReLU bias (``U(+-0.01)``).

  Attributes:
    features: hidden size ``n``.
    rho: number of ``-1`` entries of ``D`` in ``[0, n]`` (default ``n // 2``).
    orthogonal_reset: make ``U_r`` scaled-Cayley orthogonal too (NC-GRU(U_r, U_c)).
    orthogonal_param: ``'skew'`` | ``'matrix'``.
    orthogonal_init: skew init ``'cayley'`` | ``'henaff'`` | ``'random'`` | callable.
    kernel_init: input kernel init; recurrent_kernel_init: init of the free ``U_u``, ``U_r``.
    init_scheme: ``'lvf_jax'`` (the fields above) | ``'released'``: the authors' released
      cell's initialisers (:func:`released_initializers`), in place of ``kernel_init``,
      ``recurrent_kernel_init``, ``bias_init`` and ``modrelu_bias_init``.
    input_features: the input size ``d``, which ``'released'`` with one orthogonal kernel
      needs (its gate kernels' fan-in is ``d + n``); unused otherwise.
  """

  rho: Optional[int] = None
  orthogonal_reset: bool = False
  orthogonal_param: str = "skew"
  orthogonal_init: Union[str, Callable] = "cayley"
  kernel_init: base.Initializer = nn.initializers.lecun_normal()
  recurrent_kernel_init: base.Initializer = nn.initializers.orthogonal()
  bias_init: base.Initializer = nn.initializers.zeros_init()
  modrelu_bias_init: base.Initializer = base.symmetric_uniform(0.01)
  init_scheme: str = "lvf_jax"
  input_features: Optional[int] = None

  @property
  def rho_value(self) -> int:
    return base.resolve_rho(self)

  def setup(self):
    name = type(self).__name__
    n = _validation.check_features(name, self.features)
    rho = self.rho_value
    _validation.check_choice(name, "orthogonal_param", self.orthogonal_param, ORTHOGONAL_PARAMS)
    inits = self._initializers(n)
    skew_init = skew_initializer(name, self.orthogonal_init)
    pd = self.param_dtype
    suffixes = ("c", "r") if self.orthogonal_reset else ("c",)
    orth = {}
    for s in suffixes:
      if self.orthogonal_param == "matrix":
        init = mapped_initializer(skew_init, lambda a: geometry.scaled_cayley(a, rho))
        orth[s] = self.param(f"orthogonal_{s}", init, (n, n), pd)
      else:
        orth[s] = self.param(f"skew_{s}", triu_param_init(skew_init), (n, n), pd)
    self.orth = orth
    if not self.orthogonal_reset:
      self.recurrent_r = self.param("recurrent_r", inits["recurrent"], (n, n), pd)
    self.recurrent_u = self.param("recurrent_u", inits["recurrent"], (n, n), pd)
    self.bias_r = self.param("bias_r", inits["gate_bias"], (n,), pd)
    self.bias_u = self.param("bias_u", inits["gate_bias"], (n,), pd)
    self.bias_c = self.param("bias_c", inits["modrelu_bias"], (n,), pd)
    self.input = base.InputProjection(3 * n, use_bias=False, kernel_init=inits["kernel"],
                                      param_dtype=pd, owner=name)

  def _initializers(self, n: int) -> dict[str, base.Initializer]:
    """The initialisers of ``init_scheme`` (keys of :func:`released_initializers`)."""
    _validation.check_choice(type(self).__name__, "init_scheme", self.init_scheme, INIT_SCHEMES)
    if self.init_scheme == "released":
      return released_initializers(n, self.input_features, self.orthogonal_reset)
    return {"kernel": self.kernel_init, "recurrent": self.recurrent_kernel_init,
            "gate_bias": self.bias_init, "modrelu_bias": self.modrelu_bias_init}

  def orthogonal_matrix(self, suffix: str) -> Array:
    """``U_c`` or ``U_r`` in column form."""
    p = self.orth[suffix]
    if self.orthogonal_param == "matrix":
      return p
    return geometry.scaled_cayley(geometry.skew_from_triu(p), self.rho_value)

  def prepare(self, dtype: Optional[base.Dtype] = None) -> dict[str, Array]:
    """``{'kernel_ru': [K_r | K_u] (n, 2n), 'kernel_c': U_c^T, 'bias_c': b}``."""
    k_r = (self.orthogonal_matrix("r").T if self.orthogonal_reset else self.recurrent_r)
    prep = {"kernel_ru": jnp.concatenate([k_r, self.recurrent_u], axis=1),
            "kernel_c": self.orthogonal_matrix("c").T,
            "bias_c": self.bias_c}
    return base.cast_tree(prep, self._prep_dtype(dtype))

  def project_inputs(self, x: Array) -> tuple[Array, Array, Array]:
    """``(x W_r + b_r, x W_u + b_u, x W_c)``: three ``(..., n)`` arrays, one product each
    (the fused scan reads three arrays, see :mod:`lvf_jax.recurrences.gated`)."""
    return base.add_gate_biases(self.input(x, self._compute_dtype(x), parts=3), self.bias_r,
                                self.bias_u, None)

  def input_weights(self, x: Array) -> tuple[Array, Array]:
    """``(W, [b_r | b_u | 0])``: :meth:`project_inputs` as weights (for the in-loop
    projection)."""
    return self._dense_input_weights(x, (self.bias_r, self.bias_u, None))

  @nn.nowrap
  def step(self, prep: Any, carry: Array, u: Any) -> tuple[Array, Array]:
    """One NC-GRU step (pure), row form; ``u`` the three projections (or them
    concatenated)."""
    n = carry.shape[-1]
    u_r, u_u, u_c = base.split_inputs("NCGRUCell", u, 3, n)
    g = carry @ prep["kernel_ru"]
    r = jax.nn.sigmoid(u_r + g[..., :n])
    z = jax.nn.sigmoid(u_u + g[..., n:])
    c = base.activate("modrelu", u_c + (r * carry) @ prep["kernel_c"], prep["bias_c"])
    h = (1.0 - z) * carry + z * c
    return h, h

  @nn.nowrap
  def fused_scan(self, in_loop: bool = False) -> Callable:
    """:func:`lvf_jax.recurrences.ncgru_scan`."""
    return base.gated_scan(recurrences.ncgru_scan,
                           lambda p: ((p["kernel_ru"], p["kernel_c"], p["bias_c"]), {}), in_loop)
