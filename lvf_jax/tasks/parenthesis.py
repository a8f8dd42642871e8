"""Parenthesis (bracket counting) task (Foerster et al. 2017; Jing et al. 2019, GORU;
NC-GRU paper Sec. 4.1).

At every step the network must output, for each of the three bracket types ``()``, ``[]``,
``{}``, the number of currently unmatched opening brackets, saturated at ``max_count = 5``.

Generation (as the NC-GRU / GORU reference code): the ``T`` tokens are i.i.d. uniform over the
seven tokens ``( ) [ ] { }`` and one noise token. (The papers' prose speaks of "10 pairs of
parentheses combined with noise"; the code that produced their numbers draws i.i.d. tokens,
which lvf_jax follows.) With probability 1/7 each a step opens or closes a given type and with
probability 5/7 it leaves that type alone, so each count is a lazy random walk on
``{0, .., max_count}`` and stays small and meaningful at any ``T``.

Encoding:

* inputs: one-hot over 7 tokens, ids ``0 '('  1 ')'  2 '['  3 ']'  4 '{'  5 '}'  6 noise``
  (opening bracket of type ``k`` is ``2k``, closing ``2k + 1``); ``input_size = 7``;
* targets: ``int32`` ``(batch, T, 3)``, the count of type ``k`` *after* reading the token of
  that step, in ``0..max_count``;
* outputs: ``(batch, T, 3 * (max_count + 1))``, type-major: unit ``k * (max_count + 1) + c``
  scores count ``c`` of type ``k`` (the reference's reshape).

Counting rule (``count_mode``):

* ``'saturating'`` (default, reference code): ``c <- min(max_count, c + 1)`` on an opening and
  ``c <- max(0, c - 1)`` on a closing bracket. A closing bracket with no open partner is
  ignored; once saturated, further openings are not counted ("level at which outstanding
  opening parenthesis stop being added"), so the target is a 6-state automaton.
* ``'clipped'``: the exact number ``u`` of unmatched opening brackets (``u <- u + 1`` on an
  opening, ``u <- max(0, u - 1)`` on a closing bracket), reported as ``min(max_count, u)``;
  this needs an unbounded counter.

Loss (``loss_kind``):

* ``'mse'`` (default, what the NC-GRU code trains and reports in its Table 1): the outputs are
  read as probabilities, loss = mean over batch, steps, types and the ``max_count + 1`` units of
  ``(output - one_hot(target))^2``;
* ``'cross_entropy'``: the outputs are logits, softmax CE per type, averaged over types, steps
  and sequences.

Metrics: per-type count accuracy (argmax of the type's ``max_count + 1`` units equals the
target) averaged over steps and sequences, and their mean.

No-memory baseline. Let ``q_t`` be the marginal law of a type's target at step ``t`` (the same
for the three types by symmetry). A predictor that sees only ``t`` and outputs a vector ``y``
has expected one-hot squared error ``sum_c q_t(c) (1 - 2 y_c) + |y|^2``, minimised by
``y = q_t`` with value ``1 - |q_t|^2``; with cross-entropy the expected loss
``-sum_c q_t(c) log y_c`` is minimised by ``y = q_t`` (Gibbs' inequality) with value the
entropy ``H(q_t)``. Losses are sums over types (no independence between types is needed), so::

  baseline('mse')           = mean_t (1 - |q_t|^2) / (max_count + 1)
  baseline('cross_entropy') = mean_t H(q_t)

``q_t`` is computed exactly (float64) by propagating the counting Markov chain from the zero
count: ``p_{t} = (5/7) p_{t-1} + (1/7) up(p_{t-1}) + (1/7) down(p_{t-1})`` (``up``/``down``
with the saturation / floor of the counting rule; for ``'clipped'`` the chain runs on the true
count ``0..T`` and ``q_t`` lumps the states ``>= max_count``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from lvf_jax import _validation
from lvf_jax.tasks import base

Array = jax.Array

TOKENS = "()[]{}"  # ids 0..5; the noise token has id 6 (printed as 'a' by the reference).
N_TYPES = 3
NOISE = 6
N_TOKENS = 7


@functools.lru_cache(maxsize=64)
def count_marginals(T: int, max_count: int, count_mode: str) -> np.ndarray:
  """Exact law of one bracket type's target at each step (NumPy, float64).

  Args:
    T: number of steps.
    max_count: saturation / clipping level ``M``.
    count_mode: ``'saturating'`` or ``'clipped'`` (see module docstring).

  Returns:
    ``q`` of shape ``(T, M + 1)``: ``q[t, c] = P(target at step t == c)``.
  """
  p_move = 1.0 / N_TOKENS  # probability of the opening (resp. closing) token of a type
  n = max_count + 1 if count_mode == "saturating" else T + 2
  p = np.zeros(n)
  p[0] = 1.0
  q = np.empty((T, max_count + 1))
  for t in range(T):
    up = np.zeros(n)
    up[1:] = p[:-1]
    up[-1] += p[-1]  # saturation (never reached in 'clipped' mode: n = T + 2 > T)
    down = np.zeros(n)
    down[:-1] = p[1:]
    down[0] += p[0]  # a closing bracket at count 0 is ignored
    p = (1.0 - 2.0 * p_move) * p + p_move * up + p_move * down
    q[t, :max_count] = p[:max_count]
    q[t, max_count] = p[max_count:].sum()
  q.setflags(write=False)
  return q


@dataclasses.dataclass(frozen=True)
class ParenthesisTask(base.SyntheticTask):
  """Parenthesis counting task (see module docstring).

  Attributes:
    T: sequence length (any integer >= 1; papers: :attr:`PAPER_LENGTHS` = 100, 200, NC-GRU
      paper Table 1).
    max_count: saturation level of the counts (5 in the papers).
    loss_kind: ``'mse'`` (reference) or ``'cross_entropy'``.
    count_mode: ``'saturating'`` (reference) or ``'clipped'``.
  """

  T: int = 100
  max_count: int = 5
  loss_kind: str = "mse"
  count_mode: str = "saturating"

  name: ClassVar[str] = "parenthesis"
  PAPER_LENGTHS: ClassVar[tuple[int, ...]] = (100, 200)
  LOSS_KINDS: ClassVar[tuple[str, ...]] = ("mse", "cross_entropy")
  COUNT_MODES: ClassVar[tuple[str, ...]] = ("saturating", "clipped")

  def __post_init__(self):
    _validation.check_int("ParenthesisTask", "T", self.T, 1)
    _validation.check_int("ParenthesisTask", "max_count", self.max_count, 1)
    _validation.check_choice("ParenthesisTask", "loss_kind", self.loss_kind, self.LOSS_KINDS)
    _validation.check_choice("ParenthesisTask", "count_mode", self.count_mode, self.COUNT_MODES)

  @property
  def seq_len(self) -> int:
    return self.T

  @property
  def input_size(self) -> int:
    return N_TOKENS

  @property
  def output_size(self) -> int:
    return N_TYPES * (self.max_count + 1)

  @property
  def loss_type(self) -> str:
    return ("onehot_mse_all_steps" if self.loss_kind == "mse"
            else "cross_entropy_per_type_all_steps")

  def counts(self, tokens: Array) -> Array:
    """Targets ``(batch, T, 3)`` ``int32`` of integer tokens ``(batch, T)`` (``lax.scan``)."""
    tokens = jnp.asarray(tokens)
    if tokens.ndim != 2 or tokens.shape[1] != self.T:
      raise ValueError(
          f"ParenthesisTask: argument 'tokens' must have shape (batch, T={self.T}); "
          f"got {tokens.shape}.")
    tokens = tokens.astype(jnp.int32)
    opening = 2 * jnp.arange(N_TYPES, dtype=jnp.int32)[None, :]
    m = self.max_count
    saturating = self.count_mode == "saturating"

    def step(c, tok):
      opened = (tok[:, None] == opening).astype(jnp.int32)
      closed = (tok[:, None] == opening + 1).astype(jnp.int32)
      if saturating:
        c = jnp.maximum(jnp.minimum(c + opened, m) - closed, 0)
        return c, c
      c = jnp.maximum(c + opened - closed, 0)
      return c, jnp.minimum(c, m)

    c0 = jnp.zeros((tokens.shape[0], N_TYPES), jnp.int32)
    _, ys = jax.lax.scan(step, c0, tokens.T)
    return jnp.transpose(ys, (1, 0, 2))

  def encode(self, tokens: Array) -> base.Batch:
    """Builds the batch of integer tokens ``(batch, T)`` with ids in ``0..6``."""
    targets = self.counts(tokens)
    inputs = jax.nn.one_hot(jnp.asarray(tokens, jnp.int32), N_TOKENS, dtype=jnp.float32)
    mask = jnp.ones(targets.shape[:2], jnp.float32)
    return base.Batch(inputs, targets, mask)

  def _sample(self, key: Array, batch_size: int) -> base.Batch:
    """Draws ``batch_size`` sequences of i.i.d. uniform tokens."""
    u = jax.random.uniform(key, (batch_size, self.T), jnp.float32)
    tokens = base.uniform_ints(u, 0, N_TOKENS)
    return self.encode(tokens)

  def _per_type(self, outputs: Array) -> Array:
    b, t, _ = outputs.shape
    return outputs.reshape(b, t, N_TYPES, self.max_count + 1)

  def _loss(self, outputs: Array, batch: base.Batch) -> Array:
    """Loss of ``outputs (batch, T, 3 * (max_count + 1))`` (``loss_kind``; module doc)."""
    out = self._per_type(outputs)
    if self.loss_kind == "mse":
      onehot = jax.nn.one_hot(batch.targets, self.max_count + 1, dtype=out.dtype)
      per_step = jnp.mean(jnp.square(out - onehot), axis=(2, 3))
    else:
      per_step = jnp.mean(base.cross_entropy(out, batch.targets), axis=2)
    return base.masked_mean(per_step, batch.mask)

  def _metrics(self, outputs: Array, batch: base.Batch) -> dict[str, Array]:
    """``loss``, ``accuracy`` (mean over types) and ``accuracy_per_type`` ``(3,)``."""
    loss = self._loss(outputs, batch)
    pred = jnp.argmax(self._per_type(outputs), axis=-1).astype(jnp.int32)
    correct = (pred == batch.targets).astype(jnp.float32)
    w = batch.mask.astype(jnp.float32)[..., None]
    per_type = jnp.sum(correct * w, axis=(0, 1)) / jnp.maximum(jnp.sum(w, axis=(0, 1)), 1.0)
    return {"loss": loss, "accuracy": jnp.mean(per_type), "accuracy_per_type": per_type}

  def target_marginals(self) -> np.ndarray:
    """Exact per-step law ``(T, max_count + 1)`` of one type's target (float64)."""
    return count_marginals(self.T, self.max_count, self.count_mode)

  def baseline_loss(self) -> float:
    """Loss of the best input-independent predictor (derivation in the module docstring)."""
    q = self.target_marginals()
    if self.loss_kind == "mse":
      return float(np.mean(1.0 - np.sum(q * q, axis=1)) / (self.max_count + 1))
    return float(np.mean(base.entropy(q, axis=1)))

  def split_baseline_loss(self, split: str, size: int) -> float:
    """The loss of the best input-independent predictor on ``fixed_split(split, size)``:
    ``q_t`` for every type (its logarithm as logits for cross-entropy), scored by the task's
    own loss on that split's targets rather than in expectation."""
    batch = self.fixed_split(split, size)
    q = self.target_marginals()
    if self.loss_kind == "cross_entropy":
      q = np.log(np.maximum(q, np.finfo(np.float32).tiny))
    per_step = np.tile(q, (1, N_TYPES))
    outputs = jnp.broadcast_to(jnp.asarray(per_step, jnp.float32), (size, *per_step.shape))
    return float(self.loss(outputs, batch))
