"""A fixed training set for the synthetic tasks (``config.train.train_pool``): each epoch
reads every example of the pool once, an example is the same sequence at every epoch, the
batches are a pure function of the step (so a run resumes exactly), and bad pools fail
before compiling."""

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lvf_jax import train
from lvf_jax.train import builders, task_pipeline

from test_train import _final_state, tiny


@pytest.mark.parametrize("batch, pool", [(4, 12), (5, 12), (12, 12), (7, 9), (3, 70)])
def test_every_epoch_reads_each_example_once(batch, pool):
  key = jax.random.key(1)
  steps = 3 * pool  # whole epochs whatever the batch: 3 * pool * batch examples
  order = np.concatenate([np.asarray(task_pipeline.pool_indices(key, jnp.asarray(s), batch,
                                                                pool)) for s in range(steps)])
  epochs = order.reshape(-1, pool)
  for e in epochs:
    assert sorted(e.tolist()) == list(range(pool))
  assert len({tuple(e) for e in epochs}) > 1  # each epoch in its own order


def test_an_example_is_the_same_sequence_at_every_epoch():
  c = tiny("lstm", task="adding", train_pool=6)
  c.train.batch_size = 4
  c.task.options = {"T": 10}
  p = builders.build_pipeline(c)
  key = jax.random.key(7)
  _, example_key = jax.random.split(key)
  seen = collections.defaultdict(list)
  for s in range(9):  # 36 examples: six epochs of the pool
    batch = p.train_batch(key, jnp.asarray(s))
    index = task_pipeline.pool_indices(jax.random.split(key)[0], jnp.asarray(s), 4, 6)
    for row, i in enumerate(np.asarray(index)):
      seen[int(i)].append(np.asarray(batch.inputs[row]))
      alone = p.task.sample(jax.random.fold_in(example_key, int(i)), 1)
      np.testing.assert_array_equal(np.asarray(batch.inputs[row]), np.asarray(alone.inputs[0]))
      np.testing.assert_array_equal(np.asarray(batch.targets[row]),
                                    np.asarray(alone.targets[0]))
  assert sorted(seen) == list(range(6)) and all(len(v) == 6 for v in seen.values())
  c.train.train_pool = 0
  fresh = builders.build_pipeline(c).train_batch(key, jnp.asarray(0))
  assert batch.inputs.shape == fresh.inputs.shape


def test_a_pooled_run_resumes_to_the_uninterrupted_one(tmp_path):
  c = tiny("lstm", steps=6, train_pool=20)
  train.train_and_evaluate(c, str(tmp_path / "straight"))
  train.train_and_evaluate(tiny("lstm", steps=3, train_pool=20), str(tmp_path / "split"))
  summary = train.train_and_evaluate(c, str(tmp_path / "split"))
  assert summary["resumed_from"] == 3
  assert summary["task"].endswith("a fixed training set of 20 sequences")
  a, b = _final_state(c, str(tmp_path / "straight")), _final_state(c, str(tmp_path / "split"))
  for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("pool", [-1, 3, True, 2**31])
def test_bad_pools_fail_before_compiling(pool):
  with pytest.raises(ValueError, match=r"'train.train_pool' must be 0 \(fresh sequences every "
                                       r"step\) or a number of sequences >= train.batch_size "
                                       r"\(8\) and < 2\*\*31; got"):
    train.validate_config(tiny("lstm", train_pool=pool))


def test_real_datasets_have_their_own_training_split():
  c = tiny("lstm", train_pool=100)
  c.task.name = "ptb_char"
  c.task.options = {}
  with pytest.raises(ValueError, match=r"'train.train_pool' applies to the synthetic tasks"):
    builders.build_pipeline(c)
