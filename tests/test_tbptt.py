"""Truncated BPTT for the synthetic tasks (``config.train.tbptt``): chunks of consecutive
steps rebuild the task's sequences, the carried state continues the whole-sequence forward
pass, one chunk per sequence is plain training, and a run resumes exactly."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lvf_jax import tasks, train
from lvf_jax.train import builders, task_pipeline

from test_train import _final_state, tiny
import tolerances as tol


def _config(task="copy", model="lstm", tbptt=7, steps=8, **options):
  c = tiny(model, task=task, steps=steps)
  c.task.options = options or {"T": 8}
  c.train.tbptt = tbptt
  c.train.batch_size = 4
  return c


def test_chunks_rebuild_the_sequences_and_reset_at_their_start():
  c = _config(tbptt=7)
  p = builders.build_pipeline(c)
  assert p.seq_len == 28 and p.chunks == 4
  key = jax.random.key(3)
  for seq in (0, 1):
    chunks = [p.train_batch(key, jnp.asarray(seq * 4 + k)) for k in range(4)]
    full = p.task.sample(jax.random.fold_in(key, seq), 4)
    for field in ("inputs", "targets", "mask"):
      np.testing.assert_array_equal(
          np.concatenate([np.asarray(getattr(ch, field)) for ch in chunks], axis=1),
          np.asarray(getattr(full, field)))
    assert [bool(ch.reset) for ch in chunks] == [True, False, False, False]


def test_the_carried_state_continues_the_whole_sequence_forward_pass():
  c = _config(model="lvf", tbptt=7)
  p = builders.build_pipeline(c)
  model = builders.build_model(c, p.model_head())
  batch = p.task.sample(jax.random.key(0), 4)
  variables = model.init(jax.random.key(1), batch.inputs)
  whole = model.apply(variables, batch.inputs)
  carry, pieces = p.initial_carry(), []
  for k in range(p.chunks):
    chunk = p.train_batch(jax.random.key(0), jnp.asarray(k))  # seq 0 = fold_in(key, 0)
    carry = p.carry_for_batch(carry, chunk)
    (out, carry), _ = p.forward(model, variables, chunk, carry, deterministic=True, rngs={},
                                mutable=False)
    pieces.append(np.asarray(out))
  seq0 = p.task.sample(jax.random.fold_in(jax.random.key(0), 0), 4)
  # float32 scan of T = 28 steps at width 16 and the readout: T n = 448 terms, past F32's 400
  np.testing.assert_allclose(np.concatenate(pieces, axis=1),
                             np.asarray(model.apply(variables, seq0.inputs)), **tol.F32_LONG)
  assert whole.shape == (4, 28, p.output_size)


def test_adding_chunks_carry_the_loss_only_at_the_end():
  c = _config(task="adding", tbptt=5, T=10)
  p = builders.build_pipeline(c)
  outputs = jnp.ones((4, 5, 1))
  first, last = (p.train_batch(jax.random.key(0), jnp.asarray(k)) for k in (0, 1))
  assert float(p.loss(outputs, first)) == 0.0
  expected = np.mean((1.0 - np.asarray(last.targets)) ** 2)
  # float32 mean of the batch's 4 squares against float64
  np.testing.assert_allclose(float(p.loss(outputs, last)), expected, rtol=tol.F32_SHORT["rtol"])


def test_one_chunk_per_sequence_is_plain_training(tmp_path):
  plain = tiny("lstm", steps=4)
  plain.train.batch_size = 4
  one = _config(tbptt=28, steps=4)
  train.train_and_evaluate(plain, str(tmp_path / "plain"))
  train.train_and_evaluate(one, str(tmp_path / "tbptt"))
  a, b = _final_state(plain, str(tmp_path / "plain")), _final_state(one, str(tmp_path / "tbptt"))
  # The two programs may round the float32 gradient differently, by ten times the
  # probabilistic bound of its B T 4n terms (copy T=8 has 28 steps, LSTM 4n gates); each of
  # the steps' RMSprop updates is at most 10 lr (nu >= (1 - 0.99) g^2) and carries that
  # relative error into the parameters.
  grad_rtol = 10 * tol.probabilistic(one.train.batch_size * 28 * 4 * one.model.hidden)
  atol = one.train.steps * 10 * one.optim.learning_rate * grad_rtol
  for x, y in zip(jax.tree_util.tree_leaves(a.params), jax.tree_util.tree_leaves(b.params)):
    # the bound is absolute: the updates' size does not scale with the parameters
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=atol)


def test_a_truncated_run_resumes_to_the_uninterrupted_one(tmp_path):
  c = _config(model="lvf", tbptt=7, steps=6)
  train.train_and_evaluate(c, str(tmp_path / "straight"))
  train.train_and_evaluate(_config(model="lvf", tbptt=7, steps=3), str(tmp_path / "split"))
  summary = train.train_and_evaluate(c, str(tmp_path / "split"))
  assert summary["resumed_from"] == 3 and "truncated BPTT 7" in summary["task"]
  a, b = _final_state(c, str(tmp_path / "straight")), _final_state(c, str(tmp_path / "split"))
  for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))  # the carry too


@pytest.mark.parametrize("tbptt, message", [
    (5, r"'train.tbptt' \(5\) must divide the task's sequence length 28; the nearest "
        r"divisors are \[1, 2, 4, 7\]"),
    (-1, r"'train.tbptt' must be 0 \(off\) or a number of steps >= 1; got -1"),
])
def test_bad_truncations_fail_before_compiling(tbptt, message):
  with pytest.raises(ValueError, match=message):
    train.validate_config(_config(tbptt=tbptt))


def test_real_datasets_say_where_their_truncation_is():
  c = _config(tbptt=10)
  c.task.name = "ptb_char"
  c.task.options = {}
  with pytest.raises(ValueError, match=r"'train.tbptt' applies to the synthetic tasks"):
    builders.build_pipeline(c)


def test_loss_on_steps_averages_the_given_steps():
  task = tasks.get_task("copy", T=8)
  batch = task.sample(jax.random.key(0), 3)
  logits = jax.random.normal(jax.random.key(1), (3, task.seq_len, task.output_size))
  whole = float(task.loss(logits, batch))
  halves = [float(task.loss_on_steps(logits[:, s], tasks.Batch(
      batch.inputs[:, s], batch.targets[:, s], batch.mask[:, s])))
      for s in (slice(0, 14), slice(14, 28))]
  # equal halves, unit mask: float32 sums of the B L = 84 steps' losses in two orders
  np.testing.assert_allclose(np.mean(halves), whole, rtol=tol.F32["rtol"])
  assert isinstance(task_pipeline.ChunkBatch(*batch, jnp.asarray(True)).reset, jax.Array)
