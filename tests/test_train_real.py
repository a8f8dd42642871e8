"""Training on the real datasets (lvf_jax.train.dataset_pipelines + configs/<dataset>.py), offline.

Every dataset trains end to end from its config at toy size; the truncated-BPTT state is
really carried across batches (and reset at epoch starts); evaluation averages are weighted by
real examples / tokens / frames and match direct NumPy computations over the whole split;
a run resumed on a real dataset equals an uninterrupted one.

Datasets are prepared once per session into a temporary TFDS directory (set
``LVF_JAX_TEST_TFDS_DIR`` to reuse a prepared cache between sessions). Tests needing
shared/data skip, with the reason shown, where it is absent. CIFAR-10 runs on
``tfds.testing.mock_data``; TIMIT on a small synthetic LDC-style tree.
"""

import importlib.util
import json
import math
import os
import runpy

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow_datasets as tfds

from lvf_jax import data
from lvf_jax import train
from lvf_jax.data import paths
from lvf_jax.train import builders, checkpoints, dataset_pipelines, loop, presets
import tolerances as tol

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW = paths.raw_data_dir()
SUBDIR = {"mnist": "mnist", "pmnist": "mnist", "ptb_char": "ptb", "ptb_word": "ptb",
          "jsb": "polyphonic", "musedata": "polyphonic", "nottingham": "polyphonic",
          "piano_midi": "polyphonic", "fsdd": "fsdd"}


def _needs(dataset):
  sub = SUBDIR.get(dataset)
  return pytest.mark.skipif(sub is not None and not (RAW / sub).is_dir(),
                            reason=f"shared data '{sub}' not found under {RAW} "
                                   f"(set {paths.DATA_DIR_ENV})")


@pytest.fixture(scope="session")
def tfds_dir(tmp_path_factory):
  tfds.disable_progress_bar()
  reuse = os.environ.get("LVF_JAX_TEST_TFDS_DIR")
  return reuse if reuse else str(tmp_path_factory.mktemp("tfds_train"))


def load_config(dataset, model):
  spec = importlib.util.spec_from_file_location(
      f"cfg_{dataset}", os.path.join(ROOT, "configs", f"{dataset}.py"))
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config(model)


TOY_OPTIONS = {
    "classification": dict(max_train_examples=10, max_eval_examples=6),
    "lm": dict(max_train_tokens=97, max_eval_tokens=61, bptt=8),  # 3 chunks of 4 x 8
    "next_step": dict(max_len=12, max_train_examples=8, max_eval_examples=5, pad_multiple=4),
}
FAMILY = {**{d: "classification" for d in ("mnist", "pmnist", "cifar10", "cifar10_noise")},
          **{d: "lm" for d in ("ptb_char", "ptb_word")},
          **{d: "next_step" for d in ("jsb", "musedata", "nottingham", "piano_midi", "fsdd",
                                      "timit")}}


def toy(dataset, model, tfds_dir, *, hidden=None, steps=2, **options):
  """The dataset's config for ``model`` at toy size (same model, cell options, optimiser)."""
  if hidden is None:  # a 6-unit tanh RNN's gradient overflows float32 over 784 MNIST steps
    hidden = 8 if model == "rnn" else 6
  c = load_config(dataset, model)
  c.task.options.tfds_dir = str(tfds_dir)
  for k, v in {**TOY_OPTIONS[FAMILY[dataset]], **options}.items():
    c.task.options[k] = v
  if "embed_dim" in c.task.options:
    c.task.options.embed_dim = 5
  if isinstance(c.model.hidden, tuple):
    c.model.hidden = (hidden,) * len(c.model.hidden)
  else:
    c.model.hidden = hidden
  if "rho" in c.model.cell:
    c.model.cell.rho = 2
  if "rho" in c.optim:
    c.optim.rho = 2
  for k, v in dict(steps=steps, batch_size=4, eval_batch_size=4, eval_every=steps,
                   checkpoint_every=steps, log_every=1, progress_bar=False, plot=False,
                   tensorboard=False, allow_resume_changes=True).items():
    c.train[k] = v
  return c


def _sphere(x, rate=16000):
  head = (f"NIST_1A\n   1024\nsample_count -i {x.size}\nsample_rate -i {rate}\n"
          "channel_count -i 1\nsample_byte_format -s2 01\nsample_n_bytes -i 2\n"
          "sample_coding -s3 pcm\nend_head\n").encode()
  return head + b" " * (1024 - len(head)) + x.astype("<i2").tobytes()


@pytest.fixture(scope="session")
def timit_raw(tmp_path_factory):
  """A small synthetic LDC-style TIMIT tree (TIMIT itself is licensed)."""
  raw = tmp_path_factory.mktemp("timit_raw")
  rng = np.random.default_rng(0)
  layout = {("TRAIN", "DR1", "FCJF0"): ["SI648", "SX37", "SX38", "SX39", "SX40"],
            ("TRAIN", "DR2", "FAEM0"): ["SI762", "SX42", "SX43", "SX44"],
            ("TEST", "DR1", "MDAB0"): ["SI1039", "SX139", "SX140"],  # core test speaker
            ("TEST", "DR2", "MABC0"): ["SI1620", "SX26", "SX27"]}
  for (part, dr, spk), utts in layout.items():
    d = raw / "timit" / part / dr / spk
    d.mkdir(parents=True)
    for u in utts:
      (d / f"{u}.WAV").write_bytes(_sphere((3000 * rng.standard_normal(1800)).astype(np.int16)))
  return raw


def _run(c, workdir):
  summary = train.train_and_evaluate(c, str(workdir))
  records = [json.loads(l) for l in open(os.path.join(str(workdir), "metrics.jsonl"))]
  return summary, records


# ---------------------------------------------------------------------------------------------
# Every dataset trains from its config (one model per dataset here, all of them when slow)

EXPECTED_KEYS = {"classification": {"loss", "accuracy"}, "lm": {"loss", "accuracy"},
                 "next_step": {"loss"}}
# One dataset per family by default (ptb_char trains end to end in the resume test below);
# the others go through the same pipeline classes with another file and are marked slow.
_slow = pytest.mark.slow
ONE_MODEL_EACH = [("mnist", "exprnn"), ("jsb", "lvf"), ("jsb", "fcurnn"),
                  ("piano_midi", "rnn_orth"),
                  ("fsdd", "lstm"), pytest.param("pmnist", "nnrnn", marks=_slow),
                  pytest.param("ptb_char", "lvf", marks=_slow),
                  pytest.param("ptb_word", "ncgru", marks=_slow),
                  pytest.param("musedata", "scornn", marks=_slow),
                  pytest.param("nottingham", "gru", marks=_slow)]


def _check_run(dataset, summary, records):
  assert summary["steps"] == 2
  val = summary["final_validation"]
  assert EXPECTED_KEYS[FAMILY[dataset]] <= set(val)
  assert all(np.isfinite(v) for v in val.values())
  assert summary["test_at_best_validation"] is not None
  assert len([r for r in records if r["split"] == "train"]) == 2
  if dataset == "ptb_char":
    assert val["bpc"] == pytest.approx(val["loss"] / math.log(2))
  if dataset == "ptb_word":
    assert val["perplexity"] == pytest.approx(math.exp(val["loss"]))


@pytest.mark.parametrize("dataset,model", ONE_MODEL_EACH)
def test_every_dataset_trains_from_its_config(dataset, model, tfds_dir, tmp_path):
  if not (RAW / SUBDIR[dataset]).is_dir():
    pytest.skip(f"shared data '{SUBDIR[dataset]}' not found under {RAW}")
  _check_run(dataset, *_run(toy(dataset, model, tfds_dir), tmp_path))


@pytest.mark.parametrize("dataset,model", [("cifar10", "antisymmetric"),
                                           ("cifar10_noise", "gated_antisymmetric")])
def test_cifar10_trains_on_mock_data(dataset, model, tmp_path):
  with tfds.testing.mock_data(num_examples=12, policy=tfds.testing.MockPolicy.USE_CODE):
    c = toy(dataset, model, tmp_path / "tfds", valid_size=4)
    summary, records = _run(c, tmp_path / "run")
  _check_run(dataset, summary, records)
  assert "cifar" in summary["task"]


def test_timit_trains_on_a_synthetic_tree(timit_raw, tmp_path):
  c = toy("timit", "lvf", tmp_path / "tfds", data_dir=str(timit_raw))
  _check_run("timit", *_run(c, tmp_path / "run"))


@pytest.mark.slow
@pytest.mark.parametrize("dataset", [d for d in FAMILY if d not in ("cifar10", "cifar10_noise",
                                                                     "timit")])
@pytest.mark.parametrize("model", presets.MODELS)
def test_every_model_on_every_dataset(dataset, model, tfds_dir, tmp_path):
  if not (RAW / SUBDIR[dataset]).is_dir():
    pytest.skip(f"shared data '{SUBDIR[dataset]}' not found under {RAW}")
  _check_run(dataset, *_run(toy(dataset, model, tfds_dir), tmp_path))


def test_configs_cover_every_model_and_paper_settings():
  for dataset in FAMILY:
    for model in presets.MODELS:
      c = load_config(dataset, model)
      assert c.task.name == dataset and c.model.name == model
  for dataset in ("ptb_char", "timit", "jsb", "musedata"):  # lvfRNN Tables 1-3
    for model in presets.UNITARY_MODELS:
      assert load_config(dataset, model).model.name == model
  assert load_config("ptb_char", "fcurnn").model.hidden == 1024  # Table 1: 1024 units each
  assert load_config("jsb", "eurnn").model.cell.capacity == 2
  lvf = load_config("jsb", "lvf")  # lvfRNN Table 5, JSB
  assert (lvf.model.hidden, lvf.model.num_layers, lvf.model.dropout) == (300, 3, 0.3)
  assert (lvf.optim.optimizer, lvf.optim.learning_rate, lvf.optim.clip_norm,
          lvf.optim.lr_decay, lvf.model.cell.tau) == ("adam", 1.5e-3, 15.0, 0.5, 1.0)
  ptb = load_config("ptb_char", "lvf")
  assert (ptb.model.hidden, ptb.model.cell.tau, ptb.model.cell.div_penalty) == (1400, 5.0, 0.1)
  nc = load_config("ptb_char", "ncgru")
  assert nc.model.hidden == (430, 1000, 430) and nc.model.num_layers == 3
  assert nc.model.cell.rho == nc.optim.rho == 50
  assert (nc.train.batch_size, nc.task.options.bptt, nc.model.dropout) == (32, 100, 0.15)
  word = load_config("ptb_word", "ncgru")  # NC-GRU Sec. 4.5: its three dropouts
  assert (word.model.dropout, word.model.input_dropout, word.model.output_dropout) == (
      0.4, 0.4, 0.25)
  assert load_config("ptb_word", "gru").model.output_dropout is None
  timit = load_config("timit", "lvf")
  assert (timit.model.hidden, timit.model.num_layers, timit.optim.optimizer,
          timit.model.cell.div_penalty) == (255, 2, "rmsprop", 0.2)
  # lvfRNN Table 2: the baselines at its sizes (about 200k parameters)
  assert {m: load_config("timit", m).model.hidden for m in ("eurnn", "fcurnn", "scornn",
                                                           "exprnn")} == dict(
      eurnn=378, fcurnn=256, scornn=425, exprnn=425)
  assert load_config("pmnist", "exprnn").optim.learning_rate == 1e-3
  assert load_config("mnist", "exprnn").optim.learning_rate == 7e-4
  with pytest.raises(ValueError, match=r"configs/jsb.py: unknown model 'foo'; valid models"):
    load_config("jsb", "foo")


_MUSIC = ("exprnn", "scornn", "ncgru", "antisymmetric", "gated_antisymmetric", "nnrnn", "rnn",
          "rnn_orth", "lstm", "gru", "urnn", "eurnn", "fcurnn")
_CIFAR = ("lvf", "exprnn", "scornn", "ncgru", "nnrnn", "rnn", "rnn_orth", "gru")
# file: (the budget its docstring states, inputs, outputs, head, the models sized to it)
MATCHED = {
    **{f: (368338, 88, 88, "predictor", _MUSIC)
       for f in ("jsb", "musedata", "nottingham", "piano_midi")},
    "mnist": (16415, 1, 10, "classifier", ("lvf", "ncgru", "gru", "rnn", "rnn_orth")),
    "cifar10": (36234, 3, 10, "classifier", _CIFAR),
    "cifar10_noise": (60042, 96, 10, "classifier", _CIFAR),
    "timit": (200304, 129, 129, "predictor", ("scornn", "ncgru", "antisymmetric",
                                              "gated_antisymmetric", "nnrnn", "rnn",
                                              "rnn_orth", "gru", "urnn")),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MATCHED))
def test_matched_budgets_are_what_hidden_for_budget_gives(name):
  """The hidden sizes a flat config writes out for its budget-matched models."""
  from lvf_jax.models import hidden_for_budget
  budget, inputs, outputs, head, models = MATCHED[name]
  presets = runpy.run_path(os.path.join(ROOT, "configs", f"{name}.py"))["PRESETS"]
  for model in models:
    cell = {k: v for k, v in presets[model].get("cell", {}).items()
            if k in ("factored", "capacity")}
    assert hidden_for_budget(model, budget, inputs, outputs, head=head,
                             cell_kwargs=cell or None) == presets[model]["hidden"], model


@_needs("jsb")
def test_unknown_option_is_rejected_with_the_valid_ones(tfds_dir):
  c = toy("jsb", "rnn", tfds_dir)
  c.task.options.unlock()
  c.task.options.bptt = 5
  with pytest.raises(ValueError, match=r"unknown config field\(s\) 'task.options.bptt'.*"
                                       r"'max_len'"):
    train.validate_config(c)


# ---------------------------------------------------------------------------------------------
# Batches are a pure function of (seed, step): epochs, start_batch


@_needs("mnist")
def test_host_batches_follow_the_epoch_order(tfds_dir):
  c = toy("mnist", "rnn", tfds_dir)
  p = builders.build_pipeline(c)
  assert p.batches_per_epoch == 2  # 10 examples, batch 4, remainder dropped
  expected = [b for epoch in range(3) for b in data.batches(p.train, 4, c.train.seed, epoch)]
  for step, b in enumerate(expected):
    got = p.host_batch(step)
    np.testing.assert_array_equal(got["inputs"], b["inputs"])
    np.testing.assert_array_equal(got["labels"], b["labels"])


@pytest.mark.parametrize("dataset", [pytest.param(d, marks=_needs(d))
                                     for d in ("mnist", "ptb_char", "jsb")])
def test_a_process_share_of_a_batch_is_those_rows_of_the_whole_batch(dataset, tfds_dir):
  """Multi-process data parallelism builds each process's rows of a training batch alone;
  stacked in process order they are the batch one process reads."""
  p = builders.build_pipeline(toy(dataset, "rnn", tfds_dir))
  for step in range(3):
    whole = p.host_batch(step)
    shares = [p.host_batch(step, rows=slice(a, a + 2)) for a in (0, 2)]
    assert set(shares[0]) == set(whole)
    for key, value in whole.items():
      if np.ndim(value) == 0:  # the truncated-BPTT reset flag: the same for every row
        assert all(bool(s[key]) == bool(value) for s in shares)
        continue
      assert shares[0][key].shape[0] == 2
      np.testing.assert_array_equal(np.concatenate([s[key] for s in shares]), value)


# ---------------------------------------------------------------------------------------------
# Evaluation weighting: padded last batches, tokens, frames


def _evaluated(dataset, model_name, tfds_dir, split):
  """``(config, pipeline, model, variables, metrics)``: the toy config's model at its
  initial parameters, evaluated by the training loop's own evaluation on ``split``."""
  c = toy(dataset, model_name, tfds_dir)
  p = builders.build_pipeline(c)
  model = builders.build_model(c, p.model_head())
  variables = builders.init_variables(model, p, jax.random.PRNGKey(3))
  state = loop.TrainState(step=0, params=variables["params"], opt_state=None, extras={},
                          carry=None, data_key=None, dropout_key=None)
  got = loop.evaluate(jax.jit(loop.make_eval_step(model, p)), p, state.params, state.extras,
                      split)
  return c, p, model, variables, got


@_needs("mnist")
def test_classification_eval_weights_the_padded_last_batch(tfds_dir):
  c, p, model, variables, got = _evaluated("mnist", "gru", tfds_dir, "validation")  # 6 validation examples in batches of 4: last has 2 real
  full = p.split("validation").get_batch(np.arange(6))
  logits = np.asarray(model.apply(variables, full["inputs"]), np.float64)
  logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  ce = -logp[np.arange(6), full["labels"]]
  # two float32 forwards (padded batches of 4, one batch of 6) of 784 steps at width 6 plus
  # the input: T (n + 1) = 5,488 terms, past F32's 400
  assert got["loss"] == pytest.approx(ce.mean(), rel=tol.F32_LONG["rtol"])
  assert got["accuracy"] == pytest.approx(np.mean(logits.argmax(-1) == full["labels"]))


@_needs("jsb")
def test_music_eval_is_the_frame_average_over_whole_sequences(tfds_dir):
  c, p, model, variables, got = _evaluated("jsb", "lstm", tfds_dir, "validation")  # 5 sequences, batches of 4 padded to a multiple of 4 steps
  total, frames = 0.0, 0
  for rec in p.split("validation").records(range(5)):  # one unpadded sequence at a time
    roll = np.asarray(rec["roll"], np.float32)[:13]
    x, y = roll[None, :-1], roll[1:].astype(np.float64)
    z = np.asarray(model.apply(variables, x)[0], np.float64)
    ll = y * -np.logaddexp(0, -z) + (1 - y) * -np.logaddexp(0, z)
    total -= ll.sum()
    frames += y.shape[0]
  # the float32 eval sums 60 frames x 88 keys = 5,280 positive terms, past F32's 400
  assert got["loss"] == pytest.approx(total / frames, rel=tol.F32_LONG["rtol"])


@_needs("jsb")
def test_music_eval_reports_the_mean_over_sequences_of_whole_sequences(tfds_dir):
  c = toy("jsb", "rnn", tfds_dir, max_len=None)  # whole validation pieces: lengths differ
  c.train.eval_batch_size = 3  # 5 sequences: the last batch holds a padded example row
  p = builders.build_pipeline(c)
  model = builders.build_model(c, p.model_head())
  variables = builders.init_variables(model, p, jax.random.PRNGKey(4))
  got = loop.evaluate(jax.jit(loop.make_eval_step(model, p)), p, variables["params"], {},
                      "validation")
  per_seq, total, frames = [], 0.0, 0
  for rec in p.split("validation").records(range(5)):
    roll = np.asarray(rec["roll"], np.float32)
    y = roll[1:].astype(np.float64)
    z = np.asarray(model.apply(variables, roll[None, :-1])[0], np.float64)
    nll = -(y * -np.logaddexp(0, -z) + (1 - y) * -np.logaddexp(0, z)).sum()
    per_seq.append(nll / y.shape[0])
    total, frames = total + nll, frames + y.shape[0]
  assert len({len(np.asarray(r["roll"])) for r in p.split("validation").records(range(5))}) > 1
  # the float32 eval sums 351 frames x 88 keys = 30,888 positive terms (whole pieces)
  assert got["loss"] == pytest.approx(total / frames, rel=tol.F32_LONG["rtol"])
  assert got["nll_per_sequence"] == pytest.approx(np.mean(per_seq), rel=tol.F32_LONG["rtol"])
  assert not any(k.endswith("_per_frame") for k in got)  # the helper sums are summarised


@_needs("fsdd")
def test_speech_eval_is_the_masked_mse_over_whole_sequences(tfds_dir):
  c, p, model, variables, got = _evaluated("fsdd", "rnn", tfds_dir, "test")
  # the config standardises the inputs and centres the predictions on the training mean
  assert c.task.options.standardize_inputs and c.task.options.center_targets
  train_frames = np.concatenate([np.asarray(r["features"], np.float64)[1:13]
                                 for r in p.train.records(range(len(p.train)))])
  mean, std = train_frames.mean(0), train_frames.std(0)
  # float32 against float64 moments of the 96 training frames: the rounding of their sums,
  # relative to the frames' magnitudes (up to 49)
  atol = tol.probabilistic(len(train_frames)) * np.abs(train_frames).mean(0).max()
  np.testing.assert_allclose(p.frame_mean, mean, rtol=tol.F32["rtol"], atol=atol)
  np.testing.assert_allclose(p.frame_std, std, rtol=tol.F32["rtol"], atol=atol)
  se, count = 0.0, 0
  for rec in p.split("test").records(range(5)):
    f = np.asarray(rec["features"], np.float32)[:13]
    x = ((f[:-1] - mean) / std).astype(np.float32)
    pred = np.asarray(model.apply(variables, x[None])[0], np.float64) + mean
    se += np.square(pred - f[1:]).sum()
    count += pred.size
  # float32 eval: 5 x 12 frames of 129 features and 12-step forwards, within 40,000 terms
  assert got["loss"] == pytest.approx(se / count, rel=tol.F32_LONG["rtol"])


# ---------------------------------------------------------------------------------------------
# Truncated BPTT: the carry is carried, reset at epoch starts, threaded through evaluation


@pytest.fixture(scope="module")
def ptb_setup(tfds_dir):
  if not (RAW / "ptb").is_dir():
    pytest.skip(f"shared data 'ptb' not found under {RAW}")
  c = toy("ptb_char", "lstm", tfds_dir)
  p = builders.build_pipeline(c)
  model = builders.build_model(c, p.model_head())
  tx = builders.build_optimizer(c)
  return c, p, model, tx


def _forward(p, model, params, batch, carry):
  (logits, carries), _ = p.forward(model, {"params": params}, batch, carry, deterministic=True,
                                   rngs={}, mutable=False)
  return logits, carries


def _assert_trees_close(a, b, **kw):
  la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), **kw)


def test_tbptt_carry_is_carried_and_reset(ptb_setup):
  c, p, model, tx = ptb_setup
  assert p.batches_per_epoch == 3
  step = jax.jit(loop.make_train_step(model, p, tx))
  s0 = loop.initial_state(c, model, p, tx)
  b0, b1, b3 = p.host_batch(0), p.host_batch(1), p.host_batch(3)
  assert bool(b0["reset"]) and not bool(b1["reset"]) and bool(b3["reset"])  # epoch starts
  s1, _, _ = step(s0, b0)
  _, carry0 = _forward(p, model, s0.params, b0, s0.carry)
  # float32 LSTM, 8 steps of (5 + 6)-term gate sums: 88 terms
  _assert_trees_close(s1.carry, carry0, **tol.F32)  # final state of batch 0 ...
  s2, _, _ = step(s1, b1)
  _, carry1 = _forward(p, model, s1.params, b1, s1.carry)  # ... is the initial state of batch 1
  _assert_trees_close(s2.carry, carry1, **tol.F32)
  assert any(np.abs(np.asarray(x)).max() > 0 for x in jax.tree_util.tree_leaves(s2.carry))
  # rows continue: batch 1 from the carry of batch 0 == the second half of one long forward
  long = {k: np.concatenate([b0[k], b1[k]], axis=1) for k in ("inputs", "targets", "mask")}
  long["reset"] = np.asarray(True)
  logits_long, _ = _forward(p, model, s0.params, long, p.initial_carry())
  logits1, _ = _forward(p, model, s0.params, b1, carry0)
  # float32 LSTM, 16 steps of (5 + 6)-term gate sums and the readout: about 180 terms (F32
  # covers it; the looser F32_LONG keeps the old rtol)
  np.testing.assert_allclose(np.asarray(logits_long)[:, 8:], np.asarray(logits1),
                             **tol.F32_LONG)
  # reset on the first chunk of an epoch, carried otherwise
  zeros = p.carry_for_batch(s2.carry, b3)
  assert all(not np.asarray(x).any() for x in jax.tree_util.tree_leaves(zeros))
  _assert_trees_close(p.carry_for_batch(s2.carry, b1), s2.carry)


def test_lm_eval_threads_the_carry_and_weights_tokens(ptb_setup):
  c, p, model, tx = ptb_setup
  s0 = loop.initial_state(c, model, p, tx)
  got = loop.evaluate(jax.jit(loop.make_eval_step(model, p)), p, s0.params, s0.extras,
                      "validation")
  chunks = list(p.eval_batches("validation"))  # 60 targets in 4 rows of 15: 2 chunks of 8
  assert len(chunks) == 2 and float(chunks[-1]["mask"].sum()) == 4 * 7
  whole = {k: np.concatenate([b[k] for b in chunks], axis=1) for k in ("inputs", "targets",
                                                                       "mask")}
  logits, _ = _forward(p, model, s0.params, whole, p.initial_carry(eval=True))
  logits = np.asarray(logits, np.float64)
  logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  nll = -np.take_along_axis(logp, whole["targets"][..., None], -1)[..., 0]
  m = whole["mask"]
  assert m.sum() == 60
  expected = (nll * m).sum() / m.sum()
  # float32: two 8-step chunks of (5 + 6)-term gate sums, a log-softmax over V, a mean of 60
  assert got["loss"] == pytest.approx(expected, rel=tol.F32["rtol"])
  assert got["bpc"] == pytest.approx(expected / math.log(2), rel=tol.F32["rtol"])


def test_metric_definitions_by_hand(ptb_setup):
  _, p, _, _ = ptb_setup
  v = p.vocab_size
  # uniform logits: cross-entropy ln V nats = log2 V bits per character
  uniform = {"targets": np.zeros((1, 3), np.int32), "mask": np.ones((1, 3), np.float32)}
  ce = float(p.loss(jnp.zeros((1, 3, v), jnp.float32), uniform))
  # float32 log of an exact sum of V ones, a mean of 3 equal values: a few roundings
  assert ce == pytest.approx(math.log(v), rel=tol.F32_SHORT["rtol"])
  assert p.summarize({"loss": ce})["bpc"] == pytest.approx(math.log2(v), rel=tol.F32_SHORT["rtol"])
  # token weighting: two batches with 3 and 1 valid tokens average as 4 tokens
  rng = np.random.default_rng(0)
  logits = rng.standard_normal((2, 1, 3, v)).astype(np.float32)
  targets = rng.integers(0, v, (2, 1, 3)).astype(np.int32)
  masks = np.array([[[1, 1, 1]], [[1, 0, 0]]], np.float32)
  records = []
  for i in range(2):
    batch = {"targets": targets[i], "mask": masks[i]}
    records.append({"loss": p.loss(jnp.asarray(logits[i]), batch),
                    "weight": p.batch_weight(batch)})
  got = loop._mean_records(records)["loss"]
  lg = logits.astype(np.float64)
  logp = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
  nll = -np.take_along_axis(logp, targets[..., None], -1)[..., 0]
  # float32 log-softmax over V units, a weighted mean of 4 tokens
  assert got == pytest.approx((nll * masks).sum() / 4, rel=tol.F32["rtol"])
  word = dataset_pipelines.LanguageModelPipeline.summarize(
      type("P", (), {"name": "ptb_word"})(), {"loss": 2.0})
  assert word["perplexity"] == pytest.approx(math.exp(2.0))


# ---------------------------------------------------------------------------------------------
# Resume on a real dataset (the TBPTT carry is part of the checkpoint)


def _final_state(c, workdir):
  p = builders.build_pipeline(c)
  model = builders.build_model(c, p.model_head())
  tx = builders.build_optimizer(c)
  state = loop.initial_state(c, model, p, tx)
  ck = checkpoints.Checkpointer(os.path.join(str(workdir), "checkpoints"))
  try:
    return ck.restore(state)
  finally:
    ck.close()


@_needs("ptb_char")
def test_resume_equals_uninterrupted_on_ptb(tfds_dir, tmp_path):
  straight, split = tmp_path / "straight", tmp_path / "split"
  full = toy("ptb_char", "lvf", tfds_dir, steps=5)  # crosses an epoch boundary (3 chunks)
  _run(full, straight)
  _run(toy("ptb_char", "lvf", tfds_dir, steps=2), split)
  summary, _ = _run(full, split)
  assert summary["resumed_from"] == 2
  _check_run("ptb_char", dict(summary, steps=2), [{"split": "train"}] * 2)
  a, b = _final_state(full, straight), _final_state(full, split)
  assert int(a.step) == int(b.step) == 5
  for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
  ra = [json.loads(l) for l in open(straight / "metrics.jsonl")]
  rb = [json.loads(l) for l in open(split / "metrics.jsonl")]
  assert [r["step"] for r in ra if r["split"] == "train"] == list(range(1, 6))
  # each loss: one float32 forward (8 steps of (5 + 6)-term sums) and a log-softmax over V
  # averaged over 4 x 8 tokens, in case the resumed process compiles it otherwise
  np.testing.assert_allclose([r["loss"] for r in ra if r["split"] == "train"],
                             [r["loss"] for r in rb if r["split"] == "train"],
                             rtol=tol.F32["rtol"])


@_needs("jsb")
def test_frame_weighted_training_nll_weighs_every_training_frame_alike(tfds_dir):
  """Over one epoch at batch 1, the mean of the 'frame_weighted' training losses is the
  training split's NLL per frame (long pieces weigh more); 'per_frame' averages the pieces."""
  c = toy("jsb", "rnn", tfds_dir, max_len=None, max_train_examples=4, train_nll="frame_weighted")
  c.train.batch_size = 1
  p = builders.build_pipeline(c)
  model = builders.build_model(c, p.model_head())
  variables = builders.init_variables(model, p, jax.random.PRNGKey(2))
  weighted, per_frame, total, frames = [], [], 0.0, 0
  for step in range(4):  # one epoch: every training piece once
    batch = jax.tree_util.tree_map(jnp.asarray, p.host_batch(step))
    (out, _), _ = p.forward(model, variables, batch, None, deterministic=True, rngs={},
                            mutable=["losses"])
    weighted.append(float(p.train_loss(out, batch)))
    per_frame.append(float(p.loss(out, batch)))
    n = float(np.sum(batch["mask"]))
    total, frames = total + per_frame[-1] * n, frames + n
  lengths = [len(np.asarray(r["roll"])) - 1 for r in p.train.records(range(4))]
  assert len(set(lengths)) > 1
  assert p.mean_train_frames() == pytest.approx(np.mean(lengths))
  # float32 sums over pieces of up to 128 frames of 88 keys (26,752 terms in the epoch), past
  # F32's 400
  assert np.mean(weighted) == pytest.approx(total / frames, rel=tol.F32_LONG["rtol"])
  np.testing.assert_allclose(weighted, np.multiply(per_frame, lengths) / np.mean(lengths),
                             rtol=tol.F32_LONG["rtol"])


def test_train_nll_rejects_unknown_weightings_and_speech(tfds_dir):
  with pytest.raises(ValueError, match=r"'train_nll' must be 'per_frame' or 'frame_weighted'"):
    builders.build_pipeline(toy("jsb", "rnn", tfds_dir, train_nll="per_piece"))
