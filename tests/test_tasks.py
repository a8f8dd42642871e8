"""Tests of lvf_jax.tasks: encodings against hand-written examples and independent NumPy
re-implementations of the papers' descriptions, shapes/dtypes, jit, determinism, fixed splits,
bad options, and the no-memory baselines (analytic value vs Monte Carlo)."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lvf_jax import tasks
from lvf_jax.tasks import parenthesis as paren_mod
import tolerances as tol

# Small configurations shared by the tests, sampled once at a common batch size N: every
# (task, batch size) pair costs one XLA compilation of the generator, so reusing them keeps the
# file fast. Denoise uses K=10 of T=12 positions: drawing with replacement would collide in
# almost every sequence. Adding uses an odd T (halves [0, 5) and [5, 11)).
SMALL = {
    "copy": dict(T=10, K=6),
    "adding": dict(T=11),
    "denoise": dict(T=12, K=10),
    "parenthesis": dict(T=40),
}
N = 4000


@functools.lru_cache(maxsize=None)
def shared(name, seed=20, **opts):
  """(task, batch) for SMALL[name] (updated with opts) sampled with key(seed), N sequences."""
  task = tasks.get_task(name, **{**SMALL[name], **opts})
  return task, task.sample(jax.random.key(seed), N)


def tokens_of(batch):
  """Token ids of a one-hot batch, after checking every step is exactly one-hot."""
  x = np.asarray(batch.inputs)
  np.testing.assert_array_equal(x.sum(-1), 1.0)
  assert set(np.unique(x)) <= {0.0, 1.0}
  return x.argmax(-1)


# ----------------------------------------------------------------------------------------
# Hand-written examples.
# ----------------------------------------------------------------------------------------

def test_copy_hand_example_default_layout():
  # T=3 delay, K=2 symbols "5 7": symbols, T-1 blanks, marker 9, K blanks (Arjovsky et al.).
  task = tasks.CopyTask(T=3, K=2)
  batch = task.encode(jnp.array([[5, 7]], jnp.int32))
  np.testing.assert_array_equal(tokens_of(batch), [[5, 7, 0, 0, 9, 0, 0]])
  np.testing.assert_array_equal(batch.targets, [[0, 0, 0, 0, 0, 5, 7]])
  np.testing.assert_array_equal(batch.mask, np.ones((1, 7)))
  assert batch.inputs.shape == (1, 7, 10) and task.output_size == 9
  assert task.marker_index == 4


def test_copy_hand_example_faithful_layout():
  # expRNN / nnRNN code: symbols, T blanks, marker, K-1 blanks; same targets.
  task = tasks.CopyTask(T=3, K=2, faithful=True)
  batch = task.encode(jnp.array([[5, 7], [1, 8]], jnp.int32))
  np.testing.assert_array_equal(
      tokens_of(batch), [[5, 7, 0, 0, 0, 9, 0], [1, 8, 0, 0, 0, 9, 0]])
  np.testing.assert_array_equal(batch.targets, [[0, 0, 0, 0, 0, 5, 7], [0, 0, 0, 0, 0, 1, 8]])


def test_adding_hand_example():
  task = tasks.AddingTask(T=6)
  values = jnp.array([[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]], jnp.float32)
  batch = task.encode(values, jnp.array([1], jnp.int32), jnp.array([4], jnp.int32))
  np.testing.assert_allclose(batch.inputs[0, :, 0], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
  np.testing.assert_array_equal(batch.inputs[0, :, 1], [0, 1, 0, 0, 1, 0])
  # float32 0.2 + 0.5 against float64: two roundings
  np.testing.assert_allclose(batch.targets, [0.2 + 0.5], rtol=tol.F32_SHORT["rtol"])
  np.testing.assert_array_equal(batch.mask, [[0, 0, 0, 0, 0, 1]])


def test_denoise_hand_example():
  # T=4, K=2: symbol 3 at position 2, symbol 8 at position 0; marker (10) at T+K-1 = 5.
  task = tasks.DenoiseTask(T=4, K=2)
  batch = task.encode(jnp.array([[3, 8]], jnp.int32), jnp.array([[2, 0]], jnp.int32))
  np.testing.assert_array_equal(tokens_of(batch), [[8, 0, 3, 0, 0, 10, 0, 0]])
  np.testing.assert_array_equal(batch.targets, [[0, 0, 0, 0, 0, 0, 8, 3]])
  assert batch.inputs.shape == (1, 8, 11) and task.output_size == 10


PAREN_IDS = {c: i for i, c in enumerate("()[]{}a")}


@pytest.mark.parametrize("text, expected", [
    # counts after each token, per type ( (), [], {} ), written by hand
    ("(([)a]}", [(1, 0, 0), (2, 0, 0), (2, 1, 0), (1, 1, 0), (1, 1, 0), (1, 0, 0), (1, 0, 0)]),
    ("){a{}}}", [(0, 0, 0), (0, 0, 1), (0, 0, 1), (0, 0, 2), (0, 0, 1), (0, 0, 0), (0, 0, 0)]),
])
def test_parenthesis_hand_examples(text, expected):
  task = tasks.ParenthesisTask(T=len(text))
  batch = task.encode(jnp.array([[PAREN_IDS[c] for c in text]], jnp.int32))
  np.testing.assert_array_equal(tokens_of(batch), [[PAREN_IDS[c] for c in text]])
  np.testing.assert_array_equal(batch.targets[0], np.array(expected))


def test_parenthesis_saturating_vs_clipped_by_hand():
  text = "((((((()"  # 7 openings then one closing bracket
  toks = jnp.array([[PAREN_IDS[c] for c in text]], jnp.int32)
  sat = tasks.ParenthesisTask(T=8).encode(toks).targets[0, :, 0]
  clip = tasks.ParenthesisTask(T=8, count_mode="clipped").encode(toks).targets[0, :, 0]
  np.testing.assert_array_equal(sat, [1, 2, 3, 4, 5, 5, 5, 4])
  np.testing.assert_array_equal(clip, [1, 2, 3, 4, 5, 5, 5, 5])


# ----------------------------------------------------------------------------------------
# Sampled batches against independent NumPy checks of the papers' descriptions.
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("faithful", [False, True])
def test_copy_samples_structure(faithful):
  task, batch = shared("copy", faithful=faithful)
  t, k = task.T, task.K
  tok = tokens_of(batch)
  sym = tok[:, :k]
  assert sym.min() >= 1 and sym.max() <= 8
  assert len(np.unique(sym)) == 8  # all 8 symbols appear
  expected = np.zeros_like(tok)
  expected[:, :k] = sym
  expected[:, t + k - (0 if faithful else 1)] = 9
  np.testing.assert_array_equal(tok, expected)
  expected_targets = np.concatenate([np.zeros((N, t + k), int), sym], axis=1)
  np.testing.assert_array_equal(batch.targets, expected_targets)


def test_adding_samples_structure():
  task, batch = shared("adding")
  t = task.T
  x = np.asarray(batch.inputs)
  vals, marks = x[..., 0], x[..., 1]
  assert vals.min() >= 0.0 and vals.max() < 1.0
  assert set(np.unique(marks)) == {0.0, 1.0}
  np.testing.assert_array_equal(marks[:, : t // 2].sum(1), 1)
  np.testing.assert_array_equal(marks[:, t // 2:].sum(1), 1)
  # marker positions uniform over each half
  for lo, hi in ((0, t // 2), (t // 2, t)):
    freq = marks[:, lo:hi].mean(0)
    p = 1 / (hi - lo)
    # 5 standard errors of a frequency of N Bernoulli(p) draws (two-sided 5.7e-7 each)
    np.testing.assert_allclose(freq, p, atol=5 * math.sqrt(p * (1 - p) / N))
  # two nonzero float32 terms (the marked values), the zeros add exactly
  np.testing.assert_allclose(batch.targets, (vals * marks).sum(1), rtol=tol.F32_SHORT["rtol"])
  np.testing.assert_array_equal(batch.mask[:, -1], 1.0)
  np.testing.assert_array_equal(batch.mask[:, :-1], 0.0)


def test_denoise_samples_distinct_positions_and_marker():
  task, batch = shared("denoise")
  t, k = task.T, task.K
  tok = tokens_of(batch)  # also checks that the marker step is one-hot (not all-zero)
  data = (tok >= 1) & (tok <= 9)
  np.testing.assert_array_equal(data[:, :t].sum(1), k)  # K distinct positions ...
  assert not data[:, t:].any()  # ... all inside the first T steps
  np.testing.assert_array_equal(tok[:, task.marker_index], 10)
  np.testing.assert_array_equal((tok == 10).sum(1), 1)
  assert task.marker_index == t + k - 1
  np.testing.assert_array_equal(batch.inputs[:, task.marker_index, 10], 1.0)
  # targets: blanks, then the data symbols in their order of appearance
  in_order = tok[:, :t][data[:, :t]].reshape(N, k)  # row-major = order of appearance
  np.testing.assert_array_equal(batch.targets[:, t + k:], in_order)
  np.testing.assert_array_equal(batch.targets[:, : t + k], 0)
  assert set(np.unique(in_order)) == set(range(1, 10))
  # each of the T positions holds a data point with probability K/T
  freq = data[:, :t].mean(0)
  # 5 standard errors of a frequency of N Bernoulli(K/T) draws (two-sided 5.7e-7 each)
  np.testing.assert_allclose(freq, k / t, atol=5 * math.sqrt((k / t) * (1 - k / t) / N))


def _np_counts(tok, max_count, mode):
  """Per-step bracket counts by a plain Python loop (independent of the library's scan)."""
  out = np.zeros(tok.shape + (3,), int)
  for b in range(tok.shape[0]):
    c = [0, 0, 0]
    for i, x in enumerate(tok[b]):
      if x < 6:
        ty, closing = divmod(int(x), 2)
        if closing:
          c[ty] = max(0, c[ty] - 1)
        elif mode == "saturating":
          c[ty] = min(max_count, c[ty] + 1)
        else:
          c[ty] += 1
      out[b, i] = [min(max_count, v) for v in c]
  return out


@pytest.mark.parametrize("mode, max_count", [("saturating", 5), ("clipped", 5), ("saturating", 2)])
def test_parenthesis_samples_vs_python_loop(mode, max_count):
  _, batch = shared("parenthesis")
  tok = tokens_of(batch)[:300]
  assert set(np.unique(tok)) == set(range(7))
  task = tasks.ParenthesisTask(T=40, max_count=max_count, count_mode=mode)
  np.testing.assert_array_equal(task.counts(tok), _np_counts(tok, max_count, mode))
  if mode == "clipped":  # sampling in that mode gives the same counts of its own tokens
    _, b2 = shared("parenthesis", count_mode="clipped")
    tok2 = tokens_of(b2)[:300]
    np.testing.assert_array_equal(b2.targets[:300], _np_counts(tok2, max_count, mode))
  else:
    np.testing.assert_array_equal(task.encode(tok).targets, _np_counts(tok, max_count, mode))


# ----------------------------------------------------------------------------------------
# Shapes, dtypes, jit, determinism, fixed splits.
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", tasks.task_names())
def test_shapes_dtypes_jit_determinism(name):
  task, b = shared(name)
  L = task.seq_len
  assert b.inputs.shape == (N, L, task.input_size) and b.inputs.dtype == jnp.float32
  assert b.mask.shape == (N, L) and b.mask.dtype == jnp.float32
  if name == "adding":
    assert b.targets.shape == (N,) and b.targets.dtype == jnp.float32
  elif name == "parenthesis":
    assert b.targets.shape == (N, L, 3) and b.targets.dtype == jnp.int32
  else:
    assert b.targets.shape == (N, L) and b.targets.dtype == jnp.int32
  # traceable under an outer jit (sample itself is jitted internally)
  jaxpr = jax.make_jaxpr(task.sample, static_argnums=1)(jax.random.key(0), N)
  assert [v.aval.shape for v in jaxpr.jaxpr.outvars] == [x.shape for x in b]
  key = jax.random.key(20)
  for u, v in zip(b, task.sample(key, N)):  # same key -> same batch
    np.testing.assert_array_equal(u, v)
  b3 = task.sample(jax.random.key(12), N)  # different key -> different batch
  assert not np.array_equal(b.inputs, b3.inputs)
  # loss / metrics are jit-able and finite
  outputs = jnp.asarray(
      np.random.default_rng(13).normal(size=(N, L, task.output_size)), jnp.float32)
  m = jax.jit(task.metrics)(outputs, b)
  assert "loss" in m and all(np.all(np.isfinite(v)) for v in m.values())
  # jit against op-by-op, float32: a mean of N L positive terms, each a log-softmax over the
  # output units; outputs.size (N L units) covers both sums
  np.testing.assert_allclose(m["loss"], task.loss(outputs, b),
                             rtol=tol.probabilistic(outputs.size))
  g = jax.grad(task.loss)(outputs, b)
  assert g.shape == outputs.shape and bool(jnp.all(jnp.isfinite(g)))
  # the task is hashable (usable as a static argument)
  assert hash(task) == hash(tasks.get_task(name, **SMALL[name]))


def test_raw_uint32_keys_accepted():
  task = tasks.CopyTask(T=3, K=2)
  b1 = task.sample(jax.random.PRNGKey(1), 4)
  b2 = task.sample(jax.random.PRNGKey(1), 4)
  np.testing.assert_array_equal(b1.inputs, b2.inputs)
  assert b1.inputs.shape == (4, 7, 10)


@pytest.mark.parametrize("name", ["denoise", "parenthesis"])
def test_sample_dtypes_under_x64(name, x64):
  b = tasks.get_task(name, T=12, K=3) if name == "denoise" else tasks.get_task(name, T=12)
  b = b.sample(jax.random.key(0), 2)
  assert b.inputs.dtype == jnp.float32 and b.mask.dtype == jnp.float32
  assert b.targets.dtype == jnp.int32


@pytest.mark.parametrize("name", tasks.task_names())
def test_fixed_splits(name):
  task, train = shared(name)
  v1, v2 = task.fixed_split("validation", N), task.fixed_split("validation", N)
  t1, t2 = task.fixed_split("test", N), task.fixed_split("test", N)
  for u, v in zip(v1, v2):
    np.testing.assert_array_equal(u, v)
  for u, v in zip(t1, t2):
    np.testing.assert_array_equal(u, v)
  assert not np.array_equal(v1.inputs, t1.inputs)
  assert not np.array_equal(train.inputs, v1.inputs)
  assert not np.array_equal(train.inputs, t1.inputs)
  for u, v in zip(v1, task.sample(jax.random.key(tasks.SPLIT_SEEDS["validation"]), N)):
    np.testing.assert_array_equal(u, v)


def test_copy_metrics_accuracy():
  task, batch = shared("copy")
  k = task.K
  perfect = 10.0 * jax.nn.one_hot(batch.targets, task.output_size, dtype=jnp.float32)
  m = task.metrics(perfect, batch)
  np.testing.assert_allclose(m["accuracy"], 1.0)
  assert float(m["loss"]) < 1e-3  # logits 10 on the target: log(1 + 8 e^-10) = 3.6e-4
  # corrupt exactly one of the K outputs of every sequence -> accuracy (K-1)/K
  wrong = perfect.at[:, -1, :].set(10.0 * jax.nn.one_hot(
      (batch.targets[:, -1] % 8) + 1, task.output_size, dtype=jnp.float32))
  np.testing.assert_allclose(task.metrics(wrong, batch)["accuracy"], (k - 1) / k,
                             rtol=tol.F32_SHORT["rtol"])  # exact count, one division
  # errors before the last K steps change the loss but not the accuracy
  early = perfect.at[:, 0, :].set(0.0)
  m2 = task.metrics(early, batch)
  np.testing.assert_allclose(m2["accuracy"], 1.0)
  assert float(m2["loss"]) > float(m["loss"])


def test_denoise_metrics_accuracy():
  task, batch = shared("denoise")
  perfect = 10.0 * jax.nn.one_hot(batch.targets, task.output_size, dtype=jnp.float32)
  np.testing.assert_allclose(task.metrics(perfect, batch)["accuracy"], 1.0)
  blanks = 10.0 * jax.nn.one_hot(jnp.zeros_like(batch.targets), task.output_size,
                                 dtype=jnp.float32)
  np.testing.assert_allclose(task.metrics(blanks, batch)["accuracy"], 0.0)


def test_parenthesis_metrics_per_type():
  task, batch = shared("parenthesis")
  t = task.T
  onehot = jax.nn.one_hot(batch.targets, 6, dtype=jnp.float32)
  # type 1 ('[]') predictions shifted by one count -> wrong everywhere, others right
  shifted = onehot.at[:, :, 1, :].set(jnp.roll(onehot[:, :, 1, :], 1, axis=-1))
  m = task.metrics(shifted.reshape(N, t, 18), batch)
  np.testing.assert_allclose(m["accuracy_per_type"], [1.0, 0.0, 1.0])
  # exact per-type fractions (1, 0, 1), one float32 mean of 3
  np.testing.assert_allclose(m["accuracy"], 2 / 3, rtol=tol.F32_SHORT["rtol"])
  np.testing.assert_allclose(task.metrics(onehot.reshape(N, t, 18), batch)["loss"], 0.0)


# ----------------------------------------------------------------------------------------
# No-memory baselines: analytic vs Monte Carlo.
# ----------------------------------------------------------------------------------------

def _fit_marginal_logits(labels, n_classes):
  """log of the empirical per-step class frequencies (Laplace-smoothed), shape (L, C)."""
  counts = np.stack([(labels == c).sum(0) for c in range(n_classes)], -1).astype(np.float64)
  p = (counts + 0.5) / (counts.sum(-1, keepdims=True) + 0.5 * n_classes)
  return np.log(p)


def test_baseline_values():
  np.testing.assert_allclose(tasks.CopyTask(T=200).baseline_loss(), 10 * math.log(8) / 220)
  assert abs(tasks.CopyTask(T=200).baseline_loss() - 0.0945) < 5e-5  # nnRNN paper's 0.095
  np.testing.assert_allclose(tasks.DenoiseTask(T=200).baseline_loss(), 10 * math.log(9) / 220)
  np.testing.assert_allclose(tasks.AddingTask().baseline_loss(), 1 / 6)
  assert abs(tasks.AddingTask().baseline_loss() - 0.167) < 1e-3  # papers print 3 decimals


@pytest.mark.parametrize("name, opts", [
    ("copy", {}), ("copy", dict(faithful=True)), ("denoise", {})])
def test_cross_entropy_baselines_monte_carlo(name, opts):
  # Fit the per-step target frequencies on one batch (the best input-independent predictor,
  # estimated), evaluate them on another: the loss must match the analytic baseline.
  task, fit = shared(name, **opts)
  _, ev = shared(name, seed=21, **opts)
  logits = _fit_marginal_logits(np.asarray(fit.targets), task.output_size)
  outputs = jnp.asarray(np.broadcast_to(logits, (N,) + logits.shape), jnp.float32)
  mc = float(task.loss(outputs, ev))
  # Monte Carlo over N=4000 sequences: the fit's bias is +0.18% (Laplace smoothing and the
  # KL of fitted frequencies, ~(C-1)/(2N) per step), the spread 0.014% (measured over 12
  # seed pairs); 0.02 is ten times the bias
  np.testing.assert_allclose(mc, task.baseline_loss(), rtol=0.02)
  # uniform predictions are much worse than the baseline
  assert float(task.loss(jnp.zeros_like(outputs), ev)) > 2 * task.baseline_loss()


def test_adding_baseline_monte_carlo():
  task, fit = shared("adding")
  _, ev = shared("adding", seed=21)
  best_const = float(np.mean(fit.targets))
  sq = (np.asarray(ev.targets, np.float64) - 1.0) ** 2
  se = sq.std() / math.sqrt(N)
  # 4.6 standard errors of a mean of N targets of std sqrt(1/6): sqrt(1/6 / 4000) = 6.5e-3
  np.testing.assert_allclose(best_const, 1.0, atol=0.03)
  pred = jnp.full((N, task.seq_len, 1), best_const, jnp.float32)
  # 5 standard errors, plus the constant's offset squared: (best_const - 1)^2 <= 0.03^2
  np.testing.assert_allclose(float(task.loss(pred, ev)), 1 / 6, atol=5 * se + 1e-3)
  pred1 = jnp.ones((N, task.seq_len, 1), jnp.float32)
  # float32 mean of N positive squares against float64
  np.testing.assert_allclose(float(task.loss(pred1, ev)), np.mean(sq), rtol=tol.probabilistic(N))
  # 5 standard errors of the mean of N squares
  np.testing.assert_allclose(np.mean(sq), 1 / 6, atol=5 * se)
  # only the last output matters
  pred2 = pred1.at[:, :-1, :].set(5.0)
  np.testing.assert_allclose(float(task.loss(pred2, ev)), float(task.loss(pred1, ev)))


@pytest.mark.parametrize("split, size", [("validation", 256), ("test", 512)])
def test_adding_split_baseline_is_the_constant_predictions_loss_on_that_split(split, size):
  """The no-memory loss of a fixed split is the task's own loss of predicting 1 on it, not
  the expectation 1/6: its targets' sampling moves it by a standard error of
  sqrt(7/5 / size) of 1/6 (E[(u_a + u_b - 1)^4] = 1/15)."""
  task = tasks.AddingTask(T=50)
  got = task.split_baseline_loss(split, size)
  batch = task.fixed_split(split, size)
  ones = jnp.ones((size, task.seq_len, 1), jnp.float32)
  # the same mean of `size` squares, by the task's loss: float32 summation order
  np.testing.assert_allclose(got, float(task.loss(ones, batch)), rtol=tol.probabilistic(size))
  se = math.sqrt(7 / 5 / size) / 6
  assert abs(got - 1 / 6) < 5 * se
  assert got != task.split_baseline_loss("test" if split == "validation" else "validation",
                                         size)
  with pytest.raises(ValueError, match="split"):
    task.split_baseline_loss("train", size)
  with pytest.raises(ValueError, match="size"):
    task.split_baseline_loss(split, 0)


@pytest.mark.parametrize("kind", ["mse", "cross_entropy"])
def test_parenthesis_split_baseline_is_the_marginal_predictors_loss_on_that_split(kind):
  """The best input-independent predictor scored on the split's own targets, by the module
  docstring's per-step expressions in NumPy (one-hot squared error 1 - 2 q_t(y) + |q_t|^2 per
  type over max_count + 1 units; cross-entropy -log q_t(y))."""
  task = tasks.ParenthesisTask(T=30, loss_kind=kind)
  batch = task.fixed_split("test", 64)
  q = task.target_marginals()
  y = np.asarray(batch.targets)  # (batch, T, 3) counts
  steps = np.arange(task.T)[None, :, None]
  if kind == "mse":
    per_type = (1 - 2 * q[steps, y] + np.sum(q * q, axis=1)[steps]) / (task.max_count + 1)
  else:
    per_type = -np.log(q[steps, y])
  mask = np.asarray(batch.mask, np.float64)
  want = np.sum(per_type.mean(axis=2) * mask) / np.sum(mask)
  # a float32 mean of 64 x 30 x 3 terms against float64, plus q_t and its log rounded to
  # float32 (a few units of EPS32 per term)
  np.testing.assert_allclose(task.split_baseline_loss("test", 64), want,
                             rtol=tol.probabilistic(64 * 30 * 3) + tol.EPS32 * 8)
  assert task.split_baseline_loss("test", 64) != task.split_baseline_loss("validation", 64)


def test_a_split_baseline_is_the_expectation_where_every_split_scores_the_same():
  """Copy and denoise recall the same number of symbols in every sequence."""
  for task in (tasks.CopyTask(T=20), tasks.DenoiseTask(T=20)):
    assert task.split_baseline_loss("test", 64) == task.baseline_loss()


@pytest.mark.parametrize("mode", ["saturating", "clipped"])
def test_parenthesis_marginals_monte_carlo(mode):
  task, batch = shared("parenthesis", **({} if mode == "saturating" else dict(count_mode=mode)))
  q = task.target_marginals()
  assert q.shape == (40, 6)
  np.testing.assert_allclose(q.sum(1), 1.0, rtol=tol.F64["rtol"])  # float64, 40 steps x 6 states
  tgt = np.asarray(batch.targets)
  emp = np.stack([(tgt == c).mean(axis=(0, 2)) for c in range(6)], -1)  # pooled types
  # 4.4 standard errors of a frequency of 3N = 12,000 pooled draws at p = 1/2: sqrt(1/4 / 12000)
  np.testing.assert_allclose(emp, q, atol=0.02)


def test_parenthesis_clipped_saturates_more():
  sat = tasks.ParenthesisTask(T=200).target_marginals()
  clip = tasks.ParenthesisTask(T=200, count_mode="clipped").target_marginals()
  assert clip[-1, 5] > sat[-1, 5]
  np.testing.assert_allclose(sat[0], [6 / 7, 1 / 7, 0, 0, 0, 0],
                             atol=tol.F64["atol"])  # one float64 step of 3 terms


def _np_marginals(t_len, m, mode):
  """Law of a type's target by brute-force transition-matrix powers (independent check)."""
  n = m + 1 if mode == "saturating" else t_len + 1
  P = np.zeros((n, n))
  for c in range(n):
    P[c, c] += 5 / 7
    P[c, min(c + 1, n - 1)] += 1 / 7
    P[c, max(c - 1, 0)] += 1 / 7
  p = np.eye(n)[0]
  out = []
  for _ in range(t_len):
    p = p @ P
    q = p[: m + 1].copy()
    q[m] = p[m:].sum()
    out.append(q)
  return np.array(out)


@pytest.mark.parametrize("mode", ["saturating", "clipped"])
def test_parenthesis_marginals_vs_transition_matrix(mode):
  np.testing.assert_allclose(
      paren_mod.count_marginals(25, 3, mode), _np_marginals(25, 3, mode),
      atol=tol.F64["atol"])  # float64: 25 steps of a <= 26-wide matrix, 650 terms


@pytest.mark.parametrize("loss_kind, mode", [
    ("mse", "saturating"), ("cross_entropy", "saturating"), ("mse", "clipped")])
def test_parenthesis_baseline_monte_carlo(loss_kind, mode):
  # the batch does not depend on loss_kind: reuse the sampled one
  _, ev = shared("parenthesis", seed=21, **({} if mode == "saturating" else dict(count_mode=mode)))
  task = tasks.ParenthesisTask(T=40, loss_kind=loss_kind, count_mode=mode)
  q = task.target_marginals()  # (T, 6)
  per_type = q if loss_kind == "mse" else np.log(np.maximum(q, 1e-30))
  out = np.broadcast_to(np.tile(per_type, (1, 3)), (N, 40, 18))
  mc = float(task.loss(jnp.asarray(out, jnp.float32), ev))
  # Monte Carlo over N=4000 sequences: standard error 0.16% of the baseline (measured over
  # 12 seeds, largest 0.48%); 0.02 is 12 standard errors
  np.testing.assert_allclose(mc, task.baseline_loss(), rtol=0.02)
  # an independent closed form of the same expectation from the empirical targets
  tgt = np.asarray(ev.targets)
  qt = q[None, :, None, :]
  onehot = np.eye(6)[tgt]
  if loss_kind == "mse":
    direct = np.mean((qt - onehot) ** 2)
  else:
    direct = -np.mean(np.sum(onehot * np.log(np.maximum(qt, 1e-30)), -1))
  # float32 against float64 on the same targets: the loss sums out.size terms (a mean over
  # the 18 units, then over N T steps)
  np.testing.assert_allclose(mc, direct, rtol=tol.probabilistic(out.size))
  # the baseline predictor beats the "always zero count" and uniform predictors
  zero = np.zeros((N, 40, 3, 6), np.float32)
  zero[..., 0] = 1.0 if loss_kind == "mse" else 10.0
  assert float(task.loss(jnp.asarray(zero.reshape(N, 40, 18)), ev)) > mc
  unif = np.full((N, 40, 18), 1 / 6 if loss_kind == "mse" else 0.0, np.float32)
  assert float(task.loss(jnp.asarray(unif), ev)) > mc


# ----------------------------------------------------------------------------------------
# Registry and bad options.
# ----------------------------------------------------------------------------------------

def test_registry():
  assert tasks.task_names() == ("copy", "adding", "denoise", "parenthesis")
  assert tasks.PAPER_LENGTHS == {
      "copy": (200, 1000, 2000), "adding": (200, 400, 750, 1000, 5000),
      "denoise": (200, 400), "parenthesis": (100, 200)}
  for name, lengths in tasks.PAPER_LENGTHS.items():
    for t in lengths:
      task = tasks.get_task(name, T=t)
      assert task.T == t and task.seq_len >= t
      assert task.baseline_loss() > 0
      assert task.name == name and name in task.describe()
  assert tasks.get_task("copy", T=1000).seq_len == 1020
  assert tasks.task_options("denoise") == {"T": 200, "K": 10, "num_symbols": 9}
  assert isinstance(tasks.get_task("copy"), tasks.SyntheticTask)


@pytest.mark.parametrize("name, opts, match", [
    ("copy", dict(T=0), "'T'"),
    ("copy", dict(T=-5), "'T'"),
    ("copy", dict(T=2.5), "'T'"),
    ("copy", dict(T=True), "'T'"),
    ("copy", dict(K=0), "'K'"),
    ("copy", dict(faithful=1), "'faithful'"),
    ("copy", dict(L=10), "valid options"),
    ("adding", dict(T=1), "'T'"),
    ("adding", dict(K=3), "valid options"),
    ("denoise", dict(T=5, K=10), "'T'"),
    ("denoise", dict(num_symbols=0), "'num_symbols'"),
    ("parenthesis", dict(T=0), "'T'"),
    ("parenthesis", dict(loss_kind="l1"), "'loss_kind'"),
    ("parenthesis", dict(count_mode="exact"), "'count_mode'"),
    ("parenthesis", dict(max_count=0), "'max_count'"),
])
def test_bad_options_raise(name, opts, match):
  with pytest.raises(ValueError, match=match):
    tasks.get_task(name, **opts)


def test_bad_name_and_arguments_raise():
  with pytest.raises(ValueError, match="copy.*adding.*denoise.*parenthesis"):
    tasks.get_task("addition")
  with pytest.raises(ValueError, match="'name'"):
    tasks.task_options("nope")
  task, batch = shared("copy")
  with pytest.raises(ValueError, match="batch_size"):
    task.sample(jax.random.key(0), 0)
  with pytest.raises(ValueError, match="batch_size"):
    task.sample(jax.random.key(0), 2.0)
  with pytest.raises(ValueError, match="'split'"):
    task.fixed_split("train", 4)
  with pytest.raises(ValueError, match="'size'"):
    task.fixed_split("test", -1)
  with pytest.raises(ValueError, match="'outputs'"):
    task.loss(jnp.zeros((N, task.seq_len, 10), jnp.float32), batch)
  with pytest.raises(ValueError, match="'outputs'"):
    task.metrics(jnp.zeros((N, task.seq_len, 9), jnp.int32), batch)
  with pytest.raises(ValueError, match="'symbols'"):
    task.encode(jnp.ones((3, 5), jnp.int32))
  with pytest.raises(ValueError, match="'positions'"):
    tasks.DenoiseTask(T=4, K=2).encode(jnp.ones((1, 2), jnp.int32), jnp.ones((1, 3), jnp.int32))
  with pytest.raises(ValueError, match="'values'"):
    tasks.AddingTask(T=4).encode(jnp.ones((1, 5)), jnp.zeros((1,), jnp.int32),
                                 jnp.ones((1,), jnp.int32))
  with pytest.raises(ValueError, match="'tokens'"):
    tasks.ParenthesisTask(T=4).encode(jnp.ones((1, 5), jnp.int32))
