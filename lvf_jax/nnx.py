"""Flax NNX front ends of every cell of :data:`lvf_jax.cells.CELLS`.

One definition of each model, two front ends. A family's mathematics is written once, in
its structured cell (:mod:`lvf_jax.cells`): its parameters (names, shapes, initialisers), its
``prepare`` (the matrix function) and its pure ``step``. The Linen cell is that definition
bound by Linen; the NNX cell here holds the same parameter tree as ``nnx.Param`` leaves and
evaluates the same methods on it (``apply`` of the definition with the tree), so the two
compute the same function from the same parameters, and a Linen parameter tree *is* the
NNX cell's (:func:`from_linen`, :func:`to_linen`: no renaming, the released weights load
as they are).

NNX's protocol (``nnx.RNNCellBase``): ``cell(carry, x) -> (carry, y)``,
``initialize_carry(input_shape, rngs)``, ``num_feature_axes``; constructed the NNX way,
``ExpRNNCell(in_features, hidden_features, rngs=nnx.Rngs(0), **options)`` with the Linen
cell's options. ``cell.prepared()`` evaluates ``prepare`` once (under ``nnx.RNN``, a user's
``nnx.scan`` or cell) as the Linen ``prepared()`` does. The penalties a cell sows (the
lvfRNN's ``lambda ||div V||^2``, nnRNN's terms, the soft orthogonal penalty) are kept in
:class:`Penalty` variables by each ``prepare`` (``prepared()``), read by :func:`penalty`
without ``mutable=``.

Example::

  import jax.numpy as jnp
  from flax import nnx
  from lvf_jax import nnx as lnnx
  cell = lnnx.LVFRNNCell(3, 16, rngs=nnx.Rngs(0))
  ys = nnx.RNN(cell.prepared())(jnp.ones((2, 10, 3)))       # (2, 10, 16)
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Optional

import jax
import jax.numpy as jnp
from flax import nnx

from lvf_jax import cells as cells_lib

Array = jax.Array


class Penalty(nnx.Variable):
  """A regularisation term the cell's ``prepare`` sowed at its last call (the Linen
  ``'losses'`` collection, :mod:`lvf_jax.regularization`)."""


class Prepared(nnx.Variable):
  """Arrays of a cell's ``prepare``, computed from its parameters (not trained)."""


def _is_variable(x: Any) -> bool:
  return isinstance(x, nnx.Variable)


def _values(tree: Any) -> Any:
  """The arrays of a tree of NNX variables."""
  return jax.tree_util.tree_map(lambda v: v[...], tree, is_leaf=_is_variable)


class NNXCell(nnx.RNNCellBase):
  """The NNX front end of a structured cell (:attr:`definition`, a Linen cell).

  Attributes:
    in_features: input features.
    hidden_features: hidden size ``n``.
    definition: the Linen cell whose parameters this module holds and whose ``prepare`` /
      ``project_inputs`` / ``step`` it evaluates.
    params: the Linen cell's parameter tree, as ``nnx.Param`` leaves.
    penalties: the terms ``prepare`` sowed at the last call (:class:`Penalty`).
  """

  #: The Linen cell class of the family (set by :func:`front_end`).
  linen: ClassVar[type] = None

  def __init__(self, in_features: int, hidden_features: int, *, rngs: nnx.Rngs,
               definition: Any = None, **options: Any):
    """``definition``: a Linen structured cell to front (its class need not be this one's
    :attr:`linen`; its ``features`` must be ``hidden_features``), in place of the family's
    cell built with ``options``."""
    self.in_features, self.hidden_features = int(in_features), int(hidden_features)
    if definition is None:
      definition = self.linen(self.hidden_features, **{**self.linen.nnx_defaults, **options})
    elif options or definition.features != self.hidden_features:
      raise ValueError(f"{type(self).__name__}: with 'definition' give no options and "
                       f"hidden_features={definition.features}; got hidden_features="
                       f"{hidden_features} and options {sorted(options)}.")
    self.definition = definition
    x = jnp.zeros((1, self.in_features), self.definition.param_dtype)
    carry = self.definition.initialize_carry(jax.random.key(0), x.shape)
    variables = self.definition.init(rngs.params(), carry, x)
    self.params = nnx.data(jax.tree_util.tree_map(nnx.Param, dict(variables["params"])))
    self.extras = nnx.data({k: jax.tree_util.tree_map(nnx.Variable, dict(v))
                            for k, v in variables.items() if k not in ("params", "losses")})
    self.penalties = nnx.data({})

  def variables(self) -> dict:
    """The Linen variables ``{'params': ..., <other collections>}`` of this cell."""
    return {"params": _values(self.params), **_values(dict(self.extras))}

  def _apply(self, fn: Callable, *args: Any) -> tuple[Any, dict]:
    """``(fn(bound definition, *args), {name: what it sowed into 'losses'})``."""
    out, sown = self.definition.apply(self.variables(), *args, method=fn, mutable=["losses"])
    return out, _flat(sown.get("losses", {}))

  def __call__(self, carry: Any, inputs: Array) -> tuple[Any, Array]:
    """One step with ``prepare`` recomputed (the Linen cell's ``__call__``; its penalties
    are those of :meth:`prepare`, which a step inside a scan does not keep).

    Raises:
      ValueError: naming both widths, for a carry the parameters do not fit.
    """
    return self._apply(lambda c, h, x: c(h, x), carry, inputs)[0]

  def prepare(self, dtype: Optional[Any] = None, **options: Any) -> Any:
    """The arrays of the definition's ``prepare`` (its matrix function); what it sows is
    kept in :attr:`penalties`."""
    prep, sown = self._apply(lambda c: c.prepare(dtype=dtype, **options))
    self.penalties = nnx.data({k: Penalty(v) for k, v in sown.items()})
    return prep

  def prepared(self, dtype: Optional[Any] = None, *, carry: Any = None) -> "PreparedNNXCell":
    """This cell with ``prepare`` evaluated once, for ``nnx.RNN`` or a loop of one's own."""
    options = {} if carry is None else self._apply(lambda c: c.carry_options(carry))[0]
    return PreparedNNXCell(self, self.prepare(dtype, **options), tuple(sorted(options.items())))

  def initialize_carry(self, input_shape: tuple[int, ...], rngs: Any = None) -> Any:
    """The definition's zero carry for inputs of ``input_shape`` (``rngs`` unused)."""
    del rngs
    return self.definition.initialize_carry(jax.random.key(0), tuple(input_shape))

  @property
  def num_feature_axes(self) -> int:
    return 1


def _flat(tree: Any) -> dict:
  """``{'a/b': leaf}`` of a nested dict."""
  return {"/".join(str(getattr(k, "key", k)) for k in path): leaf
          for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


class PreparedNNXCell(nnx.RNNCellBase):
  """An :class:`NNXCell` with its ``prepare`` arrays computed once (:meth:`NNXCell.prepared`):
  each call is the definition's step with them (:meth:`lvf_jax.cells.base.StructuredCell.
  prepared_step`), the input projection read from the cell's parameters."""

  def __init__(self, cell: NNXCell, prep: Any, options: tuple = ()):
    self.cell = cell
    self.prep = nnx.data(jax.tree_util.tree_map(Prepared, prep))
    self.options = options

  def __call__(self, carry: Any, inputs: Array) -> tuple[Any, Array]:
    prep = _values(self.prep)
    return self.cell.definition.apply(
        self.cell.variables(), prep, carry, inputs, self.options,
        method=lambda c, p, h, x, o: c.prepared_step(p, h, x, o))

  def initialize_carry(self, input_shape: tuple[int, ...], rngs: Any = None) -> Any:
    return self.cell.initialize_carry(input_shape, rngs)

  @property
  def num_feature_axes(self) -> int:
    return 1


def penalty(module: nnx.Module) -> Array:
  """The sum of every :class:`Penalty` in ``module`` (0 without any): what the Linen path's
  :func:`lvf_jax.regularization.regularization_loss` sums from ``'losses'``."""
  leaves = jax.tree_util.tree_leaves(nnx.state(module, Penalty))
  return sum((jnp.sum(x) for x in leaves), jnp.zeros(()))


def front_end(name: str) -> type:
  """The NNX class of the family registered as ``name`` in :data:`lvf_jax.cells.CELLS`."""
  linen = cells_lib.CELLS[name]
  return type(linen.__name__, (NNXCell,), {
      "linen": linen, "__module__": __name__,
      "__doc__": f"NNX front end of :class:`lvf_jax.cells.{linen.__name__}` "
                 f"(:class:`NNXCell`; the Linen cell's options as keywords)."})


#: ``{family: NNX cell class}``, one per family of :data:`lvf_jax.cells.CELLS`.
NNX_CELLS = {name: front_end(name) for name in cells_lib.CELLS}
globals().update({cls.__name__: cls for cls in NNX_CELLS.values()})


def from_linen(name: str, variables: dict, in_features: int, hidden_features: int,
               **options: Any) -> NNXCell:
  """The NNX cell of family ``name`` holding a Linen cell's ``variables`` (its
  ``{'params': ...}`` and any other collection it has, e.g. the expRNN's ``'dtriv'``
  base): the same tree, so a released Linen model's cell loads as it is."""
  cell = NNX_CELLS[name](in_features, hidden_features, rngs=nnx.Rngs(0), **options)
  given = {k: dict(v) for k, v in variables.items() if k != "losses"}
  want = _shapes({k: v for k, v in cell.variables().items() if k in given})
  if "params" not in given or _shapes(given) != want:
    raise ValueError(f"from_linen: the parameters do not fit {name!r} with "
                     f"hidden_features={hidden_features}: expected shapes {want}, got "
                     f"{_shapes(given)}.")
  cell.params = nnx.data(jax.tree_util.tree_map(nnx.Param, given.pop("params")))
  cell.extras = nnx.data({**dict(cell.extras), **{
      k: jax.tree_util.tree_map(nnx.Variable, v) for k, v in given.items()}})
  return cell


def _shapes(tree: Any) -> dict:
  """``{'a/b': shape}`` of a nested dict of arrays."""
  return {k: tuple(jnp.shape(v)) for k, v in _flat(tree).items()}


def to_linen(cell: NNXCell) -> dict:
  """The Linen variables ``{'params': ...}`` of an NNX cell (the same tree)."""
  return cell.variables()


__all__ = ["NNXCell", "NNX_CELLS", "Penalty", "Prepared", "PreparedNNXCell", "from_linen",
           "front_end", "penalty", "to_linen",
           *sorted(cls.__name__ for cls in NNX_CELLS.values())]
