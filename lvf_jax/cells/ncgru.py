"""NC-GRU: the GRU with scaled-Cayley orthogonal recurrent kernels (Mucllari et al., eq 19)."""

from __future__ import annotations

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
  """

  rho: Optional[int] = None
  orthogonal_reset: bool = False
  orthogonal_param: str = "skew"
  orthogonal_init: Union[str, Callable] = "cayley"
  kernel_init: base.Initializer = nn.initializers.lecun_normal()
  recurrent_kernel_init: base.Initializer = nn.initializers.orthogonal()
  bias_init: base.Initializer = nn.initializers.zeros_init()
  modrelu_bias_init: base.Initializer = base.symmetric_uniform(0.01)

  @property
  def rho_value(self) -> int:
    return base.resolve_rho(self)

  def setup(self):
    name = type(self).__name__
    n = _validation.check_features(name, self.features)
    rho = self.rho_value
    _validation.check_choice(name, "orthogonal_param", self.orthogonal_param, ORTHOGONAL_PARAMS)
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
      self.recurrent_r = self.param("recurrent_r", self.recurrent_kernel_init, (n, n), pd)
    self.recurrent_u = self.param("recurrent_u", self.recurrent_kernel_init, (n, n), pd)
    self.bias_r = self.param("bias_r", self.bias_init, (n,), pd)
    self.bias_u = self.param("bias_u", self.bias_init, (n,), pd)
    self.bias_c = self.param("bias_c", self.modrelu_bias_init, (n,), pd)
    self.input = base.InputProjection(3 * n, use_bias=False, kernel_init=self.kernel_init,
                                      param_dtype=pd, owner=name)

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
