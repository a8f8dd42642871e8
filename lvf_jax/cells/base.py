"""Shared machinery of the structured cells: the prepare / project / step split.

Every structured cell of :mod:`lvf_jax.cells` separates the parameters from a *pure*
recurrence step (see ``docs/ARCHITECTURE.md``):

* ``prepare(dtype=None)`` (called inside the module scope) returns a pytree ``prep`` of
  arrays that depend only on the parameters -- the recurrent kernel(s) in **row form**
  (``K = M.T`` for the paper's column-form matrix ``M``), biases, ... The expensive matrix
  functions (``expm``, Cayley solves, ``D_V``, the Schur form) are evaluated here, once per
  call. It is also where a cell sows its regularisation terms (collection ``'losses'``).
* ``project_inputs(x)`` applies the input projection(s) to inputs of any leading shape, so a
  layer can hoist it over all time steps as one large matmul. It returns an array ``u`` or,
  for a cell whose step reads several separately projected inputs (the gated
  AntisymmetricRNN), a tuple of arrays with the same leading axes; ``step`` receives the
  matching slice ``u_t`` (:func:`input_dtype` reads the dtype of either form).
* ``step(prep, carry, u_t) -> (carry, y)`` is a pure function of its arguments (it reads
  only the cell's static hyperparameters, never a parameter), callable on an unbound cell.

``__call__(carry, x) = step(prepare(), carry, project_inputs(x))`` follows
:class:`flax.linen.RNNCellBase`, so every cell also runs inside :class:`flax.linen.RNN`,
:class:`flax.linen.Bidirectional`, :func:`flax.linen.scan` and a user's own cell. There the
plain cell recomputes its matrix at *every time step* (an ``O(n^3)`` matrix function per
step, forward and backward); ``cell.prepared()`` (:class:`PreparedCell`) evaluates
``prepare`` once, outside the loop, for those idioms, and :class:`lvf_jax.layers.Recurrent`
calls it once per sequence itself. ``carry_options(carry)`` checks a carry against the cell
(the structured cells' parameter shapes are fixed by ``features``; the LSTM and GRU take
their width from the carry, as Flax's cells do).

Dtypes: parameters live in ``param_dtype`` (float32) and the matrix functions are evaluated
in it; the computation dtype is ``dtype`` if given, else the standard JAX promotion of the
input dtype with ``param_dtype`` (bfloat16 inputs with float32 parameters compute in
float32). All casts are explicit, so the cells run under strict dtype promotion.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn

from lvf_jax import _validation
from lvf_jax import recurrences
from lvf_jax.geometry import activations

Array = jax.Array
Dtype = Any
Initializer = Callable[..., Array]

ACTIVATIONS = ("modrelu", "tanh")


# ------------------------------------------------------------------- validation










# ----------------------------------------------------------------------- dtypes


def compute_dtype(input_dtype: Dtype, param_dtype: Dtype, dtype: Optional[Dtype]) -> Dtype:
  """``dtype`` if given, else the *standard* JAX promotion of the input and parameter dtypes.

  The standard lattice is used locally (``jax.numpy_dtype_promotion('standard')``), so
  the answer does not depend on the global promotion mode; no global state changes.
  """
  if dtype is not None:
    return jnp.dtype(dtype)
  with jax.numpy_dtype_promotion("standard"):
    out = jnp.promote_types(input_dtype, param_dtype)
  if not jnp.issubdtype(out, jnp.inexact):
    out = jnp.dtype(param_dtype)
  return out


def cast_tree(tree: Any, dtype: Dtype) -> Any:
  """Casts every floating leaf of ``tree`` to ``dtype`` (other leaves untouched)."""

  def cast(x):
    x = jnp.asarray(x)
    return x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x

  return jax.tree_util.tree_map(cast, tree)


def activate(name: str, z: Array, b: Array) -> Array:
  """``modReLU(z, b)`` or ``tanh(z + b)`` (the bias lives outside the hoisted projection)."""
  b = _match_rank(b, z)
  if name == "modrelu":
    return activations.modrelu(z, b)
  return jnp.tanh(z + b)


def _match_rank(b: Array, z: Array) -> Array:
  return jnp.reshape(b, (1,) * (z.ndim - b.ndim) + b.shape)


def add_gate_biases(u: tuple[Array, ...], *biases: Optional[Array]) -> tuple[Array, ...]:
  """``(u_1 + b_1, u_2 + b_2, ...)`` over any leading axes, in each ``u_i``'s dtype; a
  ``None`` bias adds nothing. The gated cells fold their gate biases into the hoisted
  projections this way."""
  return tuple(p if b is None else p + _match_rank(b.astype(p.dtype), p)
               for p, b in zip(u, biases, strict=True))


def concat_biases(biases, n: int, dtype: Dtype) -> Optional[Array]:
  """``[b_1 | b_2 | ...]`` in ``dtype``, a ``None`` block as ``n`` zeros; None if every
  block is None (the gated cells' concatenated gate biases)."""
  if all(b is None for b in biases):
    return None
  return jnp.concatenate([jnp.zeros((n,), dtype) if b is None else b.astype(dtype)
                          for b in biases])


def activation_bias_init(name: str) -> Initializer:
  """modReLU bias ``U(-0.01, 0.01)`` (uRNN / expRNN); zeros for tanh."""
  from lvf_jax.geometry import initializers
  if name == "modrelu":
    return initializers.modrelu_bias(0.01)
  return nn.initializers.zeros_init()


def scaled_init(init: Initializer, factor: float) -> Initializer:
  """``init``'s draws multiplied by ``factor`` (in the draw's dtype)."""

  def scaled(key, shape, dtype=jnp.float32):
    return init(key, shape, dtype) * jnp.asarray(factor, dtype)

  return scaled


def symmetric_uniform(scale: float) -> Initializer:
  """``U(-scale, scale)`` of any shape (scoRNN's input kernel: ``scale = 0.01``)."""

  def init(key, shape, dtype=jnp.float32):
    return jax.random.uniform(key, tuple(shape), dtype, -scale, scale)

  return init


# ------------------------------------------------------------ input projection


class InputProjection(nn.Module):
  """``x @ W (+ b)`` over any leading shape, with an explicit computation dtype.

  A minimal :class:`flax.linen.Dense` (same parameter names ``kernel``/``bias``) that casts
  explicitly (strict-promotion safe) and raises a clear ``ValueError`` when the feature
  size of the input changes after initialisation.
  """

  features: int
  use_bias: bool = False
  kernel_init: Initializer = nn.initializers.lecun_normal()
  bias_init: Initializer = nn.initializers.zeros_init()
  param_dtype: Dtype = jnp.float32
  owner: str = "cell"

  @nn.compact
  def __call__(self, x: Array, dtype: Dtype, parts: int = 1, weights: bool = False) -> Any:
    """``x @ W + b`` in ``dtype``; with ``parts > 1``, the tuple of the ``parts`` equal
    column blocks of it, each computed by its own product (same parameters): slicing the
    product's last axis afterwards copies the whole sequence, which on XLA:CPU cost more
    than the products themselves. With ``weights=True``, ``(W, b)`` in ``dtype`` instead
    (``b`` None without a bias; ``x`` only checked): for a caller that forms ``x_t W``
    itself, inside a loop."""
    known = None
    if self.has_variable("params", "kernel"):
      known = self.get_variable("params", "kernel").shape[0]
    x = check_inputs(self.owner, x, known)
    kernel = self.param("kernel", self.kernel_init, (x.shape[-1], self.features),
                        self.param_dtype)
    bias = None
    if self.use_bias:
      bias = self.param("bias", self.bias_init, (self.features,), self.param_dtype)
    if weights:
      return kernel.astype(dtype), None if bias is None else bias.astype(dtype)
    if parts == 1:
      return dense_over_leading_axes(x, kernel, bias, dtype)
    if self.features % parts:
      raise ValueError(f"{self.owner}: cannot split {self.features} projected features "
                       f"into {parts} equal parts.")
    w = self.features // parts
    return tuple(
        dense_over_leading_axes(x, kernel[:, i * w:(i + 1) * w],
                                None if bias is None else bias[i * w:(i + 1) * w], dtype)
        for i in range(parts))


def split_inputs(owner: str, u: Any, parts: int, n: int) -> tuple[Array, ...]:
  """The ``parts`` blocks ``(..., n)`` of a cell's projected inputs: ``u`` itself when it is
  a sequence of ``parts`` arrays (what the gated cells' ``project_inputs`` return), or the
  equal column blocks of one ``(..., parts n)`` array. Raises ``ValueError`` naming
  ``owner`` for anything else."""
  what = "a pair of arrays" if parts == 2 else f"{parts} arrays"
  if isinstance(u, (tuple, list)):
    if len(u) != parts:
      raise ValueError(f"{owner}: projected inputs must be {what} (..., {n}); got a sequence "
                       f"of {len(u)} arrays.")
    return tuple(u)
  if u.shape[-1] != parts * n:
    raise ValueError(f"{owner}: projected inputs must be {what} (..., {n}) or one array of "
                     f"{parts * n} features; got shape {u.shape}.")
  return tuple(u[..., i * n:(i + 1) * n] for i in range(parts))


def input_dtype(u: Any) -> Any:
  """The dtype of a cell's projected inputs ``u`` (an array or a tuple of arrays)."""
  return jax.tree_util.tree_leaves(u)[0].dtype


def check_inputs(owner: str, x: Array, features: Optional[int]) -> Array:
  """``x`` as an array of shape ``(..., features)``; ``features=None`` (not initialised
  yet) accepts any feature size. Raises ``ValueError`` naming ``owner`` otherwise."""
  x = jnp.asarray(x)
  if x.ndim < 1:
    raise ValueError(f"{owner}: inputs must have shape (..., features); got shape {x.shape}.")
  if features is not None and x.shape[-1] != features:
    raise ValueError(
        f"{owner}: inputs must have {features} features (the size the cell was "
        f"initialised with); got inputs of shape {x.shape}.")
  return x


def dense_over_leading_axes(x: Array, kernel: Array, bias: Optional[Array], dtype: Dtype):
  """``x @ kernel (+ bias)`` in ``dtype`` over any leading axes, as ONE 2-D product
  (:func:`lvf_jax.recurrences.dot_rows`)."""
  y = recurrences.dot_rows(x.astype(dtype), kernel.astype(dtype))
  if bias is not None:
    y = y + bias.astype(dtype).reshape((1,) * (y.ndim - 1) + (-1,))
  return y


# ---------------------------------------------------------------- base class


# ------------------------------------------------------------ fused scans of the cells
#
# A cell's ``fused_scan(in_loop)`` returns ``scan(prep, carry, u, *, reverse=False, unroll=1,
# mask=None) -> (carry, ys)``: the cell's recurrence over a time-major sequence with the
# hand-written VJP of :mod:`lvf_jax.recurrences`, taking ``prepare()``'s output and the
# time-major ``project_inputs`` output, a drop-in replacement of
# :func:`lvf_jax.layers.scan_steps` ``(cell.step, prep, carry, u)`` (same masking and reverse
# semantics). With ``in_loop=True`` it takes the raw inputs ``x`` (time-major ``(T, *batch,
# d)``) in place of ``u`` and the keyword ``input_weights=(W, b)`` (:meth:`StructuredCell.
# input_weights`), and forms ``x_t W + b`` inside its loop.


def kernel_scan(cell: str, activation: str, use_bias: bool, in_loop: bool,
                operator: Optional[Callable] = None) -> Callable:
  """The scan of ``h' = sigma(h K + u, b)``: :func:`lvf_jax.recurrences.rnn_scan`
  (``prep['kernel']`` the parameters of a structured ``operator`` where one is given).

  In the in-loop form an input bias joins the activation bias (the same sum inside
  ``tanh`` / ``relu`` / identity; a ``ValueError`` for a modReLU cell with an input bias).
  """

  def scan(prep, carry, u, *, reverse=False, unroll=1, mask=None):
    return recurrences.rnn_scan(prep["kernel"], u, carry, prep["bias"] if use_bias else None,
                                activation=activation, reverse=reverse, unroll=unroll,
                                mask=mask, operator=operator)

  def scan_in_loop(prep, carry, x, *, input_weights, reverse=False, unroll=1, mask=None):
    w, b_in = input_weights
    bias = prep["bias"] if use_bias else None
    if b_in is not None:  # x W + b_in + b: both biases sit inside the activation
      if activation not in ("tanh", "identity", "relu"):
        raise ValueError(f"fused scan of {cell}: an input bias cannot join the "
                         f"{activation!r} bias; project the inputs before the loop.")
      bias = b_in if bias is None else bias + b_in
    return recurrences.rnn_scan(prep["kernel"], x, carry, bias, activation=activation,
                                input_kernel=w, reverse=reverse, unroll=unroll, mask=mask,
                                operator=operator)

  return scan_in_loop if in_loop else scan


def gated_scan(fn: Callable, params: Callable, in_loop: bool) -> Callable:
  """The scan ``fn(*args, u, carry, ..., **kw)`` of a gated cell (an LSTM, GRU or NC-GRU
  scan of :mod:`lvf_jax.recurrences`), ``(args, kw) = params(prep)``."""

  def scan(prep, carry, u, *, reverse=False, unroll=1, mask=None):
    args, kw = params(prep)
    return fn(*args, u, carry, reverse=reverse, unroll=unroll, mask=mask, **kw)

  def scan_in_loop(prep, carry, x, *, input_weights, reverse=False, unroll=1, mask=None):
    args, kw = params(prep)
    w, b_in = input_weights
    return fn(*args, x, carry, reverse=reverse, unroll=unroll, mask=mask, input_kernel=w,
              input_bias=b_in, **kw)

  return scan_in_loop if in_loop else scan


class StructuredCell(nn.RNNCellBase):
  """Base class of the prepare / project_inputs / step cells (see module docstring).

  Subclasses define ``setup`` (parameters), ``prepare``, ``project_inputs`` and ``step``;
  the carry is a single array ``(*batch, features)`` unless a subclass overrides
  :meth:`initialize_carry`.

  A family declares here what the rest of the library needs to know of it (class variables,
  overridden by the family's cell, not fields): :attr:`offered`, :attr:`hidden_multiple`,
  :attr:`predated_values` and :attr:`nnx_defaults`. Registering it is one line of
  :data:`lvf_jax.cells.CELLS`.

  Attributes:
    features: hidden size ``n``.
    dtype: computation dtype (``None``: promote the input dtype with ``param_dtype``).
    param_dtype: dtype of the parameters (and of the matrix functions in ``prepare``).
    carry_init: initialiser of the initial carry (zeros).
  """

  #: Which configs offer the family (:mod:`lvf_jax.train.presets`): ``'every_config'``,
  #: ``'unitary_tables'`` (the lvfRNN paper's unitary baselines, on that paper's tables),
  #: ``'own_tables'`` (only the configs of the tables that name it) or
  #: ``'synthetic_tasks'`` (the configs of the synthetic tasks).
  offered: ClassVar[str] = "every_config"
  #: The family's hidden sizes are multiples of this (e.g. nnRNN's 2 x 2 rotation blocks).
  hidden_multiple: ClassVar[int] = 1
  #: Options whose default changed, each with the value a config written before the change
  #: had implicitly (read by :func:`lvf_jax.train.config.config_defaults`).
  predated_values: ClassVar[dict] = {}
  #: Options whose NNX front end (:mod:`lvf_jax.nnx`) defaults differ, so that it computes
  #: what Flax's NNX cell of the same name computes.
  nnx_defaults: ClassVar[dict] = {}

  features: int
  dtype: Optional[Dtype] = None
  param_dtype: Dtype = jnp.float32
  carry_init: Initializer = nn.initializers.zeros_init()

  def _prep_dtype(self, dtype: Optional[Dtype]) -> Dtype:
    """The dtype ``prepare`` casts to: ``dtype``, else ``self.dtype``, else ``param_dtype``."""
    for d in (dtype, self.dtype, self.param_dtype):
      if d is not None:
        return jnp.dtype(d)
    return jnp.dtype(jnp.float32)

  def _compute_dtype(self, x: Array) -> Dtype:
    return compute_dtype(jnp.asarray(x).dtype, self.param_dtype, self.dtype)

  def prepare(self, dtype: Optional[Dtype] = None) -> Any:  # pragma: no cover - abstract
    raise NotImplementedError

  def project_inputs(self, x: Array) -> Array:  # pragma: no cover - abstract
    raise NotImplementedError

  # Whether project_inputs(x) is exactly self.input(x) (one dense map, InputProjection).
  DENSE_INPUT: ClassVar[bool] = False

  @nn.nowrap
  def fused_scan(self, in_loop: bool = False) -> Optional[Callable]:
    """The hand-written-VJP scan of this cell's recurrence (see :func:`kernel_scan` for the
    contract), or ``None`` where none covers it (the layer then scans :meth:`step`).

    Reads only the cell's class and static attributes (callable on an unbound cell).

    Args:
      in_loop: the form that projects the raw inputs inside its loop.
    """
    del in_loop
    return None

  def input_weights(self, x: Array) -> tuple[Array, Optional[Array]]:
    """``(W, b)`` with ``project_inputs(x) = x W + b`` (its blocks concatenated) in the
    compute dtype (``b`` None without an input bias), for a layer that forms ``x_t W``
    inside its loop (:class:`lvf_jax.layers.Recurrent`, ``input_projection``). ``x`` is
    only checked (feature size) and creates the parameters at initialisation. Defined by
    the cells with ``DENSE_INPUT`` (``project_inputs`` is their dense ``self.input``) and
    by those that override it (gate biases added after the product, Flax-named blocks);
    ``NotImplementedError`` otherwise."""
    if not self.DENSE_INPUT:
      raise NotImplementedError(
          f"{type(self).__name__}: its input projection is not one dense map x W + b.")
    return self._dense_input_weights(x)

  def _dense_input_weights(self, x: Array, gate_biases: tuple = ()):
    """``(W, b)`` of ``self.input`` plus, per equal column block, the bias in
    ``gate_biases`` (None: none) that ``project_inputs`` adds after the product."""
    w, b = self.input(x, self._compute_dtype(x), weights=True)
    extra = concat_biases(gate_biases, self.features, w.dtype)
    if extra is not None:
      b = extra if b is None else b + extra
    return w, b

  @nn.nowrap
  def step(self, prep: Any, carry: Any, u: Array) -> tuple[Any, Array]:  # pragma: no cover
    raise NotImplementedError

  def __call__(self, carry: Any, inputs: Array) -> tuple[Any, Array]:
    """One step ``step(prepare(), carry, project_inputs(inputs))`` (recomputes ``prepare``;
    :meth:`prepared` evaluates it once for a whole sequence).

    Args:
      carry: hidden state ``(*batch, features)`` from :meth:`initialize_carry`.
      inputs: ``(*batch, input_features)``.

    Returns:
      ``(new_carry, output)``.

    Raises:
      ValueError: for a carry whose width the cell's parameters do not fit
        (:meth:`carry_options`).
    """
    options = self.carry_options(carry)
    u = self.project_inputs(inputs, **options)
    dtype = input_dtype(u)
    return self.step(self.prepare(dtype=dtype, **options), cast_tree(carry, dtype), u)

  @nn.nowrap
  def carry_options(self, carry: Any) -> dict[str, Any]:
    """The keyword arguments of ``prepare`` / ``project_inputs`` / ``input_weights`` for
    ``carry``: none for a structured cell, whose parameter shapes ``features`` fixes, once
    the carry's widths (the last axis of every leaf) are checked against
    :meth:`initialize_carry`'s.

    Raises:
      ValueError: naming both widths, for a carry of another width or structure.
    """
    template = self.clone(parent=None)  # unbound: reads attributes, never runs setup
    expected = jax.eval_shape(lambda: template.initialize_carry(jax.random.key(0), (1,)))
    want = [s.shape[-1] for s in jax.tree_util.tree_leaves(expected)]
    got = [np.shape(leaf)[-1] if np.ndim(leaf) else None
           for leaf in jax.tree_util.tree_leaves(carry)]
    if got != want:
      raise ValueError(
          f"{type(self).__name__}: the carry has width {_widths(got)}, but this cell was "
          f"built with features={self.features}, whose carry has width {_widths(want)} "
          f"(initialize_carry). A structured cell's parameter shapes are fixed by "
          f"'features': build it with the carry's width, or start from its "
          f"initialize_carry.")
    return {}

  def prepared_step(self, prep: Any, carry: Any, inputs: Array,
                    options: tuple = ()) -> tuple[Any, Array]:
    """One step with arrays ``prep`` of :meth:`prepare` (prepared for the carry options
    ``options``): ``step(prep, carry, project_inputs(inputs))``, the step of
    :class:`PreparedCell` and of the NNX front ends (:mod:`lvf_jax.nnx`).

    Raises:
      ValueError: for a carry the arrays were not prepared for (both widths named).
    """
    got = self.carry_options(carry)
    if tuple(sorted(got.items())) != tuple(options):
      n = self.features
      raise ValueError(
          f"PreparedCell of {type(self).__name__}: its arrays were prepared for a carry "
          f"of width {dict(options).get('width', n)}, got a carry of width "
          f"{got.get('width', n)}; call prepared(carry=...) with the loop's carry.")
    u = self.project_inputs(inputs, **got)
    dtype = input_dtype(u)
    return self.step(cast_tree(prep, dtype), cast_tree(carry, dtype), u)

  def prepared(self, dtype: Optional[Dtype] = None, *, carry: Any = None) -> "PreparedCell":
    """This cell with :meth:`prepare` evaluated now, once: a cell for :class:`flax.linen.RNN`,
    :class:`flax.linen.Bidirectional`, :func:`flax.linen.scan` or a user's own cell that
    calls it at every step, where the plain cell would recompute its matrix function
    (``expm``, Cayley solve, ``D_V``, ...) at every step, forward and backward.

    Call it where the cell is bound (inside the ``nn.compact`` method or ``setup`` of the
    module that owns it) and outside the loop; the loop then closes over the prepared
    arrays, so the matrix function and its derivative run once per call of the enclosing
    module, and the gradients reach the cell's parameters through them. The outputs and
    gradients are those of the plain cell (tested). The input projection stays in the
    step, as in Flax's cells.

    Args:
      dtype: the dtype of the prepared arrays (default: the cell's ``dtype``, else its
        ``param_dtype``); the step casts them to its inputs' computation dtype.
      carry: an example carry (only its shapes are read) for :class:`LSTMCell` /
        :class:`GRUCell` with a carry wider or narrower than ``features``; checked against
        the cell otherwise.

    Returns:
      A :class:`PreparedCell` (unbound, so that the module that receives it adopts it).
    """
    options = {} if carry is None else self.carry_options(carry)
    prep = self.prepare(dtype=dtype, **options)
    return PreparedCell(cell=self, prep=prep, options=tuple(sorted(options.items())),
                        parent=None)

  @nn.nowrap
  def initialize_carry(self, rng: Any, input_shape: tuple[int, ...]) -> Any:
    """Zero carry of shape ``input_shape[:-1] + (features,)``."""
    batch_dims = tuple(input_shape[:-1])
    dtype = self._prep_dtype(None)
    return self.carry_init(rng, batch_dims + (self.features,), dtype)

  @property
  def num_feature_axes(self) -> int:
    return 1


def _widths(widths: list) -> str:
  return str(widths[0]) if len(widths) == 1 else str(tuple(widths))


class PreparedCell(nn.RNNCellBase):
  """A structured cell whose :meth:`StructuredCell.prepare` output is computed once
  (:meth:`StructuredCell.prepared`); each call is ``cell.step(prep, carry,
  cell.project_inputs(inputs))``.

  Attributes:
    cell: the bound structured cell (its parameters stay where it was defined).
    prep: the arrays of ``cell.prepare()``.
    options: the ``(name, value)`` pairs given to ``prepare`` / ``project_inputs`` (an
      LSTM's or GRU's carry width, :meth:`StructuredCell.carry_options`).
  """

  cell: Any
  prep: Any
  options: tuple = ()

  def __call__(self, carry: Any, inputs: Array) -> tuple[Any, Array]:
    """One step of the cell with the prepared arrays.

    Raises:
      ValueError: for a carry the arrays were not prepared for (both widths named).
    """
    return self.cell.prepared_step(self.prep, carry, inputs, self.options)

  @nn.nowrap
  def initialize_carry(self, rng: Any, input_shape: tuple[int, ...]) -> Any:
    """The wrapped cell's :meth:`StructuredCell.initialize_carry`."""
    return self.cell.initialize_carry(rng, input_shape)

  @property
  def num_feature_axes(self) -> int:
    return 1


class KernelCell(StructuredCell):
  """Cells whose step is ``h' = sigma(h @ K + u + b)`` with ``K = M^T``.

  ``M`` is the paper's column-form recurrent matrix returned by ``recurrent_matrix()``
  (lvfRNN's ``C_V``, expRNN's ``expm``, scoRNN's scaled Cayley, nnRNN's Schur form).
  Subclasses create ``self.bias`` and ``self.input`` in ``setup``, define
  ``recurrent_matrix`` and ``activation`` (``'modrelu'`` | ``'tanh'``), and may override
  :meth:`regularize` to sow their regularisation terms. Their fused scan is
  :func:`lvf_jax.recurrences.rnn_scan`.

  Attributes:
    nonnegative_modrelu_bias: use ``|b|`` as the modReLU bias (the parameter ``b`` is kept
      and trained through ``|b|``, which has no slope at ``b = 0``; modReLU cells only).
      modReLU (Arjovsky, Shah, Bengio 2016, arXiv:1511.06464, eq. 8),
      ``relu(|z| + b) z / |z|``, outputs 0 with zero derivative wherever ``|z| < -b``. With
      ``b >= 0`` no unit has that dead zone; for a real state it is ``z + b sign(z)``, whose
      derivative is the identity for ``z != 0``, so with an orthogonal recurrent matrix every
      step's Jacobian is orthogonal and ``||dh_T / dh_1||`` stays that of the identity at
      any ``T``. Each step then also adds ``b sign(z)``, which grows the state's norm.
  """

  DENSE_INPUT = True
  nonnegative_modrelu_bias: bool = False

  def recurrent_matrix(self) -> Array:  # pragma: no cover - abstract
    raise NotImplementedError

  @property
  def state_is_complex(self) -> bool:
    """Whether the carry is a complex state ``[Re h | Im h]`` (the unitary cells of
    :mod:`lvf_jax.cells.unitary`); the fused scan covers real states only."""
    return False

  def regularize(self) -> None:
    """Sows the cell's regularisation terms (called by :meth:`prepare`); none by default."""

  @nn.nowrap
  def fused_scan(self, in_loop: bool = False) -> Optional[Callable]:
    """:func:`lvf_jax.recurrences.rnn_scan` with the cell's activation (the complex
    modReLU ``'modrelu_split'`` for a complex state ``[Re h | Im h]``)."""
    activation = "modrelu_split" if self.state_is_complex else self.activation
    return kernel_scan(type(self).__name__, activation, True, in_loop)

  def prepare(self, dtype: Optional[Dtype] = None) -> dict[str, Array]:
    """Returns ``{'kernel': M^T, 'bias': b}`` (``M`` evaluated once) and sows the penalties."""
    self.regularize()
    prep = {"kernel": self.recurrent_matrix().T, "bias": self.activation_bias()}
    return cast_tree(prep, self._prep_dtype(dtype))

  def activation_bias(self) -> Array:
    """The bias of the activation: ``self.bias``, or ``|self.bias|`` with
    ``nonnegative_modrelu_bias``."""
    if not self.nonnegative_modrelu_bias:
      return self.bias
    if self.activation != "modrelu":
      raise ValueError(
          f"{type(self).__name__}: nonnegative_modrelu_bias=True needs activation='modrelu', "
          f"got activation={self.activation!r}.")
    return jnp.abs(self.bias)

  def project_inputs(self, x: Array) -> Array:
    return self.input(x, self._compute_dtype(x))

  @nn.nowrap
  def step(self, prep: Any, carry: Array, u: Array) -> tuple[Array, Array]:
    """``h' = sigma(h @ K + u + b)`` (pure)."""
    h = activate(self.activation, carry @ prep["kernel"] + u, prep["bias"])
    return h, h


def resolve_rho(cell: Any) -> int:
  """A scaled-Cayley cell's number of -1 entries of ``D``: ``cell.rho``, or ``n // 2`` if unset;
  validated against ``n = cell.features``."""
  name = type(cell).__name__
  n = _validation.check_features(name, cell.features)
  return _validation.check_rho(name, n // 2 if cell.rho is None else cell.rho, n)
