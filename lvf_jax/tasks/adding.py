"""Adding problem (Hochreiter & Schmidhuber 1997; Arjovsky et al. 2016; NC-GRU paper Sec. 4.3).

Encoding (sequence length ``T``, two real input channels, ``input_size = 2``):

* channel 0: values ``u_t ~ U(0, 1)`` i.i.d.;
* channel 1: markers, ``1`` at exactly two steps -- one drawn uniformly from the first half
  ``[0, T // 2)`` and one uniformly from the second half ``[T // 2, T)`` -- and ``0`` elsewhere.
  (The NC-GRU paper lists the marker channel first; lvf_jax follows Arjovsky et al. 2016: values
  first, markers second.)

Target: the sum of the two marked values (``float32``, shape ``(batch,)``); ``output_size = 1``.
Loss: squared error of the output at the *last* step, averaged over the batch (``mask`` is a
one-hot of the last step).

No-memory baseline: the best constant prediction is ``E[u_a + u_b] = 1`` with mean squared
error ``Var(u_a + u_b) = 2 * 1/12 = 1/6 ≈ 0.1667`` (the two marked values are independent
``U(0, 1)``). This is the "predict 1.0" baseline of the papers.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from lvf_jax import _validation
from lvf_jax.tasks import base

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class AddingTask(base.SyntheticTask):
  """Adding problem of length ``T`` (see module docstring).

  Attributes:
    T: sequence length (any integer >= 2). :attr:`PAPER_LENGTHS` = 200, 400 (NC-GRU paper,
      Sec. 4.3) and 750, 1000, 5000 (longer settings; at T = 5000 LEM, Rusch et al. 2022,
      arXiv:2110.04744, reports an MSE below 1e-3).
  """

  T: int = 200

  name: ClassVar[str] = "adding"
  PAPER_LENGTHS: ClassVar[tuple[int, ...]] = (200, 400, 750, 1000, 5000)

  def __post_init__(self):
    _validation.check_int("AddingTask", "T", self.T, 2)

  @property
  def seq_len(self) -> int:
    return self.T

  @property
  def input_size(self) -> int:
    return 2

  @property
  def output_size(self) -> int:
    return 1

  @property
  def loss_type(self) -> str:
    return "mse_last"

  def encode(self, values: Array, first: Array, second: Array) -> base.Batch:
    """Builds the batch from the values and the two marker positions.

    Args:
      values: ``(batch, T)`` real values.
      first: ``(batch,)`` integer marker positions in ``[0, T // 2)``.
      second: ``(batch,)`` integer marker positions in ``[T // 2, T)``.

    Returns:
      :class:`~lvf_jax.tasks.base.Batch` with ``inputs (batch, T, 2)`` ``float32``,
      ``targets (batch,)`` ``float32`` and ``mask`` one at the last step.
    """
    values = jnp.asarray(values, jnp.float32)
    first, second = jnp.asarray(first), jnp.asarray(second)
    if values.ndim != 2 or values.shape[1] != self.T:
      raise ValueError(
          f"AddingTask.encode: argument 'values' must have shape (batch, T={self.T}); "
          f"got {values.shape}.")
    b = values.shape[0]
    for nm, pos in (("first", first), ("second", second)):
      if tuple(pos.shape) != (b,):
        raise ValueError(
            f"AddingTask.encode: argument '{nm}' must have shape (batch,) = ({b},); "
            f"got {tuple(pos.shape)}.")
    markers = (jax.nn.one_hot(first, self.T, dtype=jnp.float32)
               + jax.nn.one_hot(second, self.T, dtype=jnp.float32))
    inputs = jnp.stack([values, markers], axis=-1)
    targets = jnp.sum(values * markers, axis=1)
    mask = jnp.zeros((b, self.T), jnp.float32).at[:, -1].set(1.0)
    return base.Batch(inputs, targets, mask)

  def _sample(self, key: Array, batch_size: int) -> base.Batch:
    """Draws ``batch_size`` sequences."""
    half = self.T // 2
    u = jax.random.uniform(key, (batch_size, self.T + 2), jnp.float32)
    first = base.uniform_ints(u[:, self.T], 0, half)
    second = base.uniform_ints(u[:, self.T + 1], half, self.T)
    return self.encode(u[:, :self.T], first, second)

  def _loss(self, outputs: Array, batch: base.Batch) -> Array:
    """Mean squared error of the last output; ``outputs`` has shape ``(batch, T, 1)``."""
    pred = outputs[:, -1, 0]
    return jnp.mean(jnp.square(pred - batch.targets.astype(pred.dtype)))

  def _metrics(self, outputs: Array, batch: base.Batch) -> dict[str, Array]:
    """``loss`` (MSE of the last output) and ``relative_loss`` (loss / baseline 1/6)."""
    loss = self._loss(outputs, batch)
    return {"loss": loss, "relative_loss": loss / self.baseline_loss()}

  def baseline_loss(self) -> float:
    """``Var(U(0,1) + U(0,1)) = 1/6`` (see module docstring)."""
    return 1.0 / 6.0

  def split_baseline_loss(self, split: str, size: int) -> float:
    """The loss of the constant prediction ``E[u_a + u_b] = 1`` on ``fixed_split(split,
    size)``: the split's own no-memory loss, whose relative standard error about ``1/6`` is
    ``sqrt(7/5) / sqrt(size)`` (5.2 % at ``size = 512``), as large as a floor's tolerance."""
    targets = self.fixed_split(split, size).targets
    return float(jnp.mean(jnp.square(targets.astype(jnp.float32) - 1.0)))
