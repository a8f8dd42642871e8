"""Baseline cells: vanilla tanh RNN, RNN-orth, LSTM and GRU.

All four are structured cells (``prepare`` / ``project_inputs`` / ``step``), so
:class:`lvf_jax.layers.Recurrent` hoists their input projections over the whole sequence
and concatenates their recurrent kernels once per sequence. :class:`LSTMCell` and
:class:`GRUCell` compute exactly Flax's ``nn.OptimizedLSTMCell`` / ``nn.LSTMCell`` and
``nn.GRUCell`` with the **same parameter tree** (names, shapes, initialisers; tested), so
variables move freely between them and Flax's cells; run through Flax's own cells in the
layer's fallback, the input projections stay inside the loop, one small product per step.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Optional

import jax
import jax.numpy as jnp
from flax import linen as nn

from lvf_jax import _validation
from lvf_jax import recurrences
from lvf_jax.cells import base

Array = jax.Array


class TanhRNNCell(base.StructuredCell):
  r"""Vanilla RNN ``h_t = tanh(h_{t-1} @ K + x_t @ U + b)`` (row form; ``K = W^T``).

  The "RNN" baseline of the papers' tables: Glorot-uniform input and recurrent kernels,
  zero bias. Parameters: ``recurrent`` (row form ``(n, n)``), ``input/kernel``,
  ``input/bias``.
  """

  kernel_init: base.Initializer = nn.initializers.glorot_uniform()
  recurrent_kernel_init: base.Initializer = nn.initializers.glorot_uniform()
  bias_init: base.Initializer = nn.initializers.zeros_init()

  DENSE_INPUT = True

  def setup(self):
    name = type(self).__name__
    n = _validation.check_features(name, self.features)
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

  @nn.nowrap
  def fused_scan(self, in_loop: bool = False) -> Optional[Callable]:
    """:func:`lvf_jax.recurrences.rnn_scan` with ``tanh`` (the bias is inside ``u``)."""
    return base.kernel_scan(type(self).__name__, "tanh", False, in_loop)


class OrthInitRNNCell(TanhRNNCell):
  """RNN-orth baseline: the tanh RNN with an orthogonal initial recurrent kernel."""

  recurrent_kernel_init: base.Initializer = nn.initializers.orthogonal()


class _DenseParams(nn.Module):
  """The ``kernel`` (and ``bias``) of one Flax ``Dense`` block, created under this module's
  name exactly as Flax's recurrent cells create them (same tree, same initial values); its
  width is given at the call, as Flax's cells take it from the carry."""

  use_bias: bool
  kernel_init: base.Initializer
  bias_init: base.Initializer
  param_dtype: base.Dtype

  @nn.compact
  def __call__(self, in_features: int, features: int) -> tuple[Array, Optional[Array]]:
    kernel = self.param("kernel", self.kernel_init, (in_features, features),
                        self.param_dtype)
    bias = None
    if self.use_bias:
      bias = self.param("bias", self.bias_init, (features,), self.param_dtype)
    return kernel, bias


class _FlaxGatedCell(base.StructuredCell):
  """Shared set-up of :class:`LSTMCell` and :class:`GRUCell`: Flax-named dense blocks
  ``i<gate>`` (input) and ``h<gate>`` (hidden), concatenated along the output axis once
  per call (``prepare``: the ``(n, k n)`` recurrent kernel; ``project_inputs``: one
  ``(d, k n)`` product over every time step)."""

  gate_fn: Callable[..., Any] = jax.nn.sigmoid
  activation_fn: Callable[..., Any] = jnp.tanh
  kernel_init: base.Initializer = nn.initializers.lecun_normal()
  recurrent_kernel_init: base.Initializer = nn.initializers.orthogonal()
  bias_init: base.Initializer = nn.initializers.zeros_init()

  GATES: ClassVar[tuple[str, ...]] = ()
  INPUT_BIAS: ClassVar[tuple[str, ...]] = ()   # gates whose input block has a bias
  HIDDEN_BIAS: ClassVar[tuple[str, ...]] = ()  # gates whose hidden block has a bias
  SPLIT_INPUTS: ClassVar[bool] = False  # project_inputs: one array, or one per gate
  SCAN: ClassVar[str] = ""  # the fused scan of lvf_jax.recurrences ('lstm_scan', 'gru_scan')

  @nn.nowrap
  def fused_scan(self, in_loop: bool = False) -> Optional[Callable]:
    """:func:`lvf_jax.recurrences.lstm_scan` / ``gru_scan`` with Flax's default gate
    functions (sigmoid gates, tanh activations); ``None`` with other functions (the
    hand-written derivatives assume the defaults)."""
    if self.gate_fn is not jax.nn.sigmoid or self.activation_fn is not jnp.tanh:
      return None
    return base.gated_scan(getattr(recurrences, self.SCAN),
                           lambda p: ((p["kernel"], p["bias"]), {}), in_loop)

  def setup(self):
    _validation.check_features(type(self).__name__, self.features)
    for gate in self.GATES:
      # setattr: 'if' (the LSTM's input-forget block) is a Python keyword.
      setattr(self, f"i{gate}", _DenseParams(gate in self.INPUT_BIAS, self.kernel_init,
                                             self.bias_init, self.param_dtype))
      setattr(self, f"h{gate}", _DenseParams(gate in self._hidden_bias_gates(),
                                             self.recurrent_kernel_init,
                                             self._hidden_bias_init(gate), self.param_dtype))

  def _hidden_bias_gates(self) -> tuple[str, ...]:
    """The gates whose hidden block has a bias (:attr:`HIDDEN_BIAS`)."""
    return self.HIDDEN_BIAS

  def _hidden_bias_init(self, gate: str) -> base.Initializer:
    """The initialiser of gate ``gate``'s hidden-block bias (``bias_init`` for every gate)."""
    del gate
    return self.bias_init

  def _gate_params(self, side: str, in_features: int, dtype, width: int) -> list:
    """``[(kernel (in, width), bias (width,) or None), ...]`` of the ``side`` ('i' or 'h')
    block of every gate, cast to ``dtype``."""
    out = []
    for gate in self.GATES:
      kernel, bias = getattr(self, f"{side}{gate}")(in_features, width)
      out.append((kernel.astype(dtype), None if bias is None else bias.astype(dtype)))
    return out

  def _blocks(self, side: str, in_features: int, dtype,
              width: int) -> tuple[Array, Optional[Array]]:
    """``(kernel (in, k width), bias (k width,) or None)`` of the ``side`` ('i' or 'h')
    blocks; a block without bias contributes zeros."""
    kernels, biases = zip(*self._gate_params(side, in_features, dtype, width))
    return jnp.concatenate(kernels, axis=-1), base.concat_biases(biases, width, dtype)

  def _width(self, width: Optional[int]) -> int:
    return self.features if width is None else width

  @nn.nowrap
  def carry_options(self, carry: Any) -> dict[str, Any]:
    """``{'width': m}`` for a carry whose state has ``m != features`` entries, else ``{}``:
    as Flax's cells, the gate blocks take their width from the carry (``features`` sets
    only :meth:`initialize_carry`)."""
    width = int(jnp.shape(self._hidden_state(carry))[-1])
    return {} if width == self.features else {"width": width}

  @nn.nowrap
  def _hidden_state(self, carry: Any) -> Array:  # pragma: no cover - abstract
    raise NotImplementedError

  def _checked_inputs(self, x: Array) -> Array:
    """``x`` as an array whose feature size matches the input kernels (once created)."""
    first = f"i{self.GATES[0]}"
    known = None
    if self.has_variable("params", first):
      known = self.get_variable("params", first)["kernel"].shape[0]
    return base.check_inputs(type(self).__name__, x, known)

  def project_inputs(self, x: Array, width: Optional[int] = None) -> Any:
    """``x @ [W_i<gate> ...] (+ input biases)``: one ``(..., k n)`` array from one 2-D
    product, or with ``SPLIT_INPUTS`` the tuple of the ``k`` gate blocks ``(..., n)``,
    one product each (the GRU: its fused scan reads three arrays, see
    :mod:`lvf_jax.recurrences.gated`); ``n`` is ``width`` (default ``features``)."""
    x = self._checked_inputs(x)
    dtype, n = self._compute_dtype(x), self._width(width)
    if self.SPLIT_INPUTS:
      return tuple(base.dense_over_leading_axes(x, kernel, bias, dtype)
                   for kernel, bias in self._gate_params("i", x.shape[-1], dtype, n))
    kernel, bias = self._blocks("i", x.shape[-1], dtype, n)
    return base.dense_over_leading_axes(x, kernel, bias, dtype)

  def input_weights(self, x: Array, width: Optional[int] = None):
    """``([W_i<gate> ...] (d, k n), input biases (k n,) or None)`` in the compute dtype:
    what :meth:`project_inputs` applies, as weights (``x`` is only checked)."""
    x = self._checked_inputs(x)
    return self._blocks("i", x.shape[-1], self._compute_dtype(x), self._width(width))

  def prepare(self, dtype: Optional[base.Dtype] = None,
              width: Optional[int] = None) -> dict[str, Array]:
    """``{'kernel': [U_h<gate> ...] (n, k n), 'bias': hidden biases (k n,)}``, ``n`` the
    state's width (default ``features``)."""
    n = self._width(width)
    kernel, bias = self._blocks("h", n, self._prep_dtype(dtype), n)
    return {"kernel": kernel, "bias": bias}


class LSTMCell(_FlaxGatedCell):
  r"""LSTM (Hochreiter & Schmidhuber 1997), Flax's formulation and parameters::

      i = sigma(x W_ii + h W_hi + b_hi)    f = sigma(x W_if + h W_hf + b_hf)
      g = tanh(x W_ig + h W_hg + b_hg)     o = sigma(x W_io + h W_ho + b_ho)
      c' = f * c + i * g                   h' = o * tanh(c')

  The carry is ``(c, h)`` and the output ``h'``, as in ``nn.OptimizedLSTMCell``, whose
  parameter tree (``ii, if, ig, io`` kernels; ``hi, hf, hg, ho`` kernels and biases) and
  initialisers (LeCun normal, orthogonal, zeros) it reproduces. One ``(B, n) x (n, 4n)``
  recurrent product per step.

  Attributes:
    forget_bias: added to the initial forget-gate bias ``b_hf`` (default 0, Flax's zeros).
      1 starts every unit remembering (Gers, Schmidhuber, Cummins 2000; Jozefowicz,
      Zaremba, Sutskever 2015), as in the LSTM baseline of Arjovsky, Shah, Bengio 2016
      (arXiv:1511.06464), whose code sets ``b_f = 1``.
  """

  SCAN = "lstm_scan"
  GATES = ("i", "f", "g", "o")
  HIDDEN_BIAS = ("i", "f", "g", "o")

  forget_bias: float = 0.0

  def _hidden_bias_init(self, gate: str) -> base.Initializer:
    _validation.check_finite_number(type(self).__name__, "forget_bias", self.forget_bias)
    if gate != "f" or self.forget_bias == 0:
      return self.bias_init
    init, shift = self.bias_init, self.forget_bias

    def shifted(key, shape, dtype=jnp.float32):
      return init(key, shape, dtype) + jnp.asarray(shift, dtype)

    return shifted

  @nn.nowrap
  def _hidden_state(self, carry: tuple[Array, Array]) -> Array:
    return carry[1]

  @nn.nowrap
  def step(self, prep: Any, carry: tuple[Array, Array], u: Array):
    """``((c', h'), h')`` from ``carry = (c, h)`` and ``u = x [W_ii ... W_io]`` (pure)."""
    c, h = carry
    z = h @ prep["kernel"] + base._match_rank(prep["bias"], h) + u
    i, f, g, o = jnp.split(z, 4, axis=-1)
    new_c = self.gate_fn(f) * c + self.gate_fn(i) * self.activation_fn(g)
    new_h = self.gate_fn(o) * self.activation_fn(new_c)
    return (new_c, new_h), new_h

  @nn.nowrap
  def initialize_carry(self, rng: Any, input_shape: tuple[int, ...]) -> tuple[Array, Array]:
    """Zero ``(c, h)``, each ``input_shape[:-1] + (features,)`` (Flax's convention)."""
    shape = tuple(input_shape[:-1]) + (self.features,)
    k1, k2 = jax.random.split(rng)
    dtype = self._prep_dtype(None)
    return self.carry_init(k1, shape, dtype), self.carry_init(k2, shape, dtype)


class GRUCell(_FlaxGatedCell):
  r"""GRU (Cho et al. 2014), Flax's formulation and parameters::

      r = sigma(x W_ir + b_ir + h W_hr)    z = sigma(x W_iz + b_iz + h W_hz)
      n = tanh(x W_in + b_in + r * (h W_hn + b_hn))
      h' = (1 - z) * n + z * h

  Parameter tree of ``nn.GRUCell`` (``ir, iz, in`` kernels and biases; ``hr, hz``
  kernels; ``hn`` kernel and bias). One ``(B, n) x (n, 3n)`` recurrent product per step.

  Attributes:
    candidate_bias: the bias ``b_hn`` of the candidate's hidden block (Linen's
      ``nn.GRUCell`` has it; ``flax.nnx.GRUCell`` has none, so the NNX front end,
      :mod:`lvf_jax.nnx`, leaves it out by default).
  """

  # flax.nnx.GRUCell computes n = tanh(x W_in + b_in + r * (h W_hn)): no candidate bias
  nnx_defaults: ClassVar[dict] = {"candidate_bias": False}
  candidate_bias: bool = True

  SCAN = "gru_scan"
  GATES = ("r", "z", "n")
  INPUT_BIAS = ("r", "z", "n")
  HIDDEN_BIAS = ("n",)
  SPLIT_INPUTS = True

  @nn.nowrap
  def _hidden_state(self, carry: Array) -> Array:
    return carry

  def _hidden_bias_gates(self) -> tuple[str, ...]:
    return self.HIDDEN_BIAS if self.candidate_bias else ()

  @nn.nowrap
  def step(self, prep: Any, carry: Array, u: Array) -> tuple[Array, Array]:
    """``(h', h')`` from ``h`` and ``u = (x W_ir + b_ir, x W_iz + b_iz, x W_in + b_in)``
    (or those three concatenated; pure)."""
    a = carry @ prep["kernel"]
    if prep["bias"] is not None:  # None: no hidden bias (candidate_bias=False)
      a = a + base._match_rank(prep["bias"], carry)
    a_r, a_z, a_n = jnp.split(a, 3, axis=-1)
    u_r, u_z, u_n = base.split_inputs("GRUCell", u, 3, carry.shape[-1])
    r = self.gate_fn(u_r + a_r)
    z = self.gate_fn(u_z + a_z)
    cand = self.activation_fn(u_n + r * a_n)
    new_h = (1.0 - z) * cand + z * carry
    return new_h, new_h
