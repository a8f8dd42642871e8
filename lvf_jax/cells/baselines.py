"""Baseline cells: vanilla tanh RNN, RNN-orth, and the Flax LSTM / GRU.

The tanh RNNs are structured cells (fast path of :class:`lvf_jax.layers.Recurrent`). LSTM
and GRU are Flax's own ``nn.OptimizedLSTMCell`` / ``nn.LSTMCell`` / ``nn.GRUCell`` used as
they are; ``Recurrent`` runs them through its fallback (``flax.linen.scan`` of the cell,
same masking semantics).
"""

from __future__ import annotations

from typing import Any, Optional

import jax.numpy as jnp
from flax import linen as nn

from lvf_jax.cells import base

Array = jnp.ndarray

LSTMCell = nn.OptimizedLSTMCell
GRUCell = nn.GRUCell


class TanhRNNCell(base.StructuredCell):
  r"""Vanilla RNN ``h_t = tanh(h_{t-1} @ K + x_t @ U + b)`` (row form; ``K = W^T``).

  The "RNN" baseline of the papers' tables: Glorot-uniform input and recurrent kernels,
  zero bias. Parameters: ``recurrent`` (row form ``(n, n)``), ``input/kernel``,
  ``input/bias``.
  """

  kernel_init: base.Initializer = nn.initializers.glorot_uniform()
  recurrent_kernel_init: base.Initializer = nn.initializers.glorot_uniform()
  bias_init: base.Initializer = nn.initializers.zeros_init()

  def setup(self):
    name = type(self).__name__
    n = base.check_features(name, self.features)
    self.recurrent = self.param("recurrent", self.recurrent_kernel_init, (n, n),
                                self.param_dtype)
    self.input = base.InputProjection(n, use_bias=True, kernel_init=self.kernel_init,
                                      bias_init=self.bias_init, param_dtype=self.param_dtype,
                                      owner=name)

  def prepare(self, dtype: Optional[base.Dtype] = None) -> dict[str, Array]:
    return base.cast_tree({"kernel": self.recurrent}, self._prep_dtype(dtype))

  def project_inputs(self, x: Array) -> Array:
    return self.input(x, self._compute_dtype(x))

  @nn.nowrap
  def step(self, prep: Any, carry: Array, u: Array) -> tuple[Array, Array]:
    h = jnp.tanh(carry @ prep["kernel"] + u)
    return h, h


class OrthInitRNNCell(TanhRNNCell):
  """RNN-orth baseline: the tanh RNN with an orthogonal initial recurrent kernel."""

  recurrent_kernel_init: base.Initializer = nn.initializers.orthogonal()
