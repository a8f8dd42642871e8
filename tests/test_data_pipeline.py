"""TFDS preparation (array_record, no TensorFlow), loading and batching.

Datasets are prepared once per test session into a temporary TFDS directory (never the home
directory). Tests needing shared/data skip, with the reason shown, only where it is absent.
"""

import collections
import dataclasses
import io
import pathlib
import subprocess
import sys
import tarfile
import time

import numpy as np
import pytest
import tensorflow_datasets as tfds
from hypothesis import given, settings, strategies as st

from lvf_jax import data
from lvf_jax.data import features, paths, readers
import tolerances as tol

RAW = paths.raw_data_dir()


def _needs(sub):
  return pytest.mark.skipif(not (RAW / sub).is_dir(),
                            reason=f"shared data '{sub}' not found under {RAW} "
                                   f"(set {paths.DATA_DIR_ENV})")


@pytest.fixture(scope="session", autouse=True)
def _quiet_tfds():
  tfds.disable_progress_bar()


@pytest.fixture(scope="session")
def tfds_dir(tmp_path_factory):
  return tmp_path_factory.mktemp("tfds")


def test_no_tensorflow_imported():
  import lvf_jax.data  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  assert "tensorflow" not in sys.modules


# ---------------------------------------------------------------------------------------------
# Batching contracts on an in-memory dataset (no files needed)

def _toy_dataset(n):
  recs = [{"id": i} for i in range(n)]
  return data.Dataset(name="toy", split="train", source=recs, indices=np.arange(n),
                      transform=lambda r, idx: {"id": np.asarray([x["id"] for x in r])},
                      info={})


@settings(max_examples=20)
@given(st.integers(1, 60), st.integers(1, 16), st.integers(0, 3), st.integers(0, 3))
def test_batches_cover_epoch_and_are_deterministic(n, batch_size, seed, epoch):
  ds = _toy_dataset(n)
  eval_batches = list(data.batches(ds, batch_size, seed, epoch, drop_remainder=False))
  assert all(b["id"].shape == (batch_size,) for b in eval_batches)
  seen = np.concatenate([b["id"][b["example_mask"] > 0] for b in eval_batches])
  assert sorted(seen.tolist()) == list(range(n))  # every example exactly once
  train = [b["id"] for b in data.batches(ds, batch_size, seed, epoch)]
  assert len(train) == n // batch_size
  again = [b["id"] for b in data.batches(ds, batch_size, seed, epoch)]
  assert all(np.array_equal(a, b) for a, b in zip(train, again))
  if train:
    flat = np.concatenate(train)
    assert len(set(flat.tolist())) == flat.size
    resumed = [b["id"] for b in data.batches(ds, batch_size, seed, epoch, start_batch=1)]
    assert all(np.array_equal(a, b) for a, b in zip(train[1:], resumed))


@settings(max_examples=20)
@given(st.integers(1, 40), st.integers(1, 12), st.integers(0, 3), st.data())
def test_rows_of_batches_are_those_rows_and_read_alone(n, batch_size, epoch, draw):
  """``rows`` (a process's share of every batch) gives the rows of the whole batch, reading
  only the records of those rows; for evaluation batches with their example mask too."""
  a = draw.draw(st.integers(0, batch_size - 1))
  rows = slice(a, draw.draw(st.integers(a + 1, batch_size)))
  read = []
  ds = _toy_dataset(n)
  inner = ds.transform
  ds = dataclasses.replace(ds, transform=lambda r, idx: read.append(len(r)) or inner(r, idx))
  for drop in (True, False):
    whole = list(data.batches(ds, batch_size, 3, epoch, drop_remainder=drop))
    read.clear()
    part = list(data.batches(ds, batch_size, 3, epoch, drop_remainder=drop, rows=rows))
    assert read == [rows.stop - rows.start] * len(whole)
    for w, p in zip(whole, part, strict=True):
      assert set(w) == set(p)
      for key in w:
        np.testing.assert_array_equal(p[key], w[key][rows])


def test_prefetch_preserves_order_and_errors():
  ds = _toy_dataset(37)
  direct = [b["id"] for b in data.batches(ds, 5, seed=2, epoch=1)]
  fetched = [b["id"] for b in data.prefetch(data.batches(ds, 5, seed=2, epoch=1), size=3)]
  assert len(direct) == len(fetched) == 7
  assert all(np.array_equal(a, b) for a, b in zip(direct, fetched))

  def broken():
    yield 1
    raise RuntimeError("boom")
  it = data.prefetch(broken())
  assert next(it) == 1
  with pytest.raises(RuntimeError, match="boom"):
    next(it)
  early = data.prefetch(iter(range(1000)), size=1)
  assert next(early) == 0
  early.close()  # stops the worker without draining
  with pytest.raises(ValueError, match="prefetch: argument 'size'"):
    next(data.prefetch(iter([]), size=0))


def test_batch_order_changes_with_epoch_and_seed():
  base = data.batch_order(100, 0, 0)
  assert not np.array_equal(base, data.batch_order(100, 0, 1))
  assert not np.array_equal(base, data.batch_order(100, 1, 0))
  np.testing.assert_array_equal(base, np.random.default_rng([0, 0]).permutation(100))
  np.testing.assert_array_equal(data.batch_order(5, 0, 0, shuffle=False), np.arange(5))


def test_holdout_split_is_a_partition():
  s = data.holdout_split(100, 10, seed=3)
  assert len(s["valid"]) == 10 and len(s["train"]) == 90
  assert sorted(np.concatenate([s["valid"], s["train"]]).tolist()) == list(range(100))
  np.testing.assert_array_equal(
      s["valid"], np.sort(np.random.RandomState(3).permutation(100)[:10]))
  with pytest.raises(ValueError, match="holdout_split: argument 'valid_size'"):
    data.holdout_split(10, 10)


# ---------------------------------------------------------------------------------------------
# TBPTT

def _check_tbptt(tokens, batch_size, seq_len, drop_remainder):
  chunks = list(data.tbptt_batches(tokens, batch_size, seq_len, drop_remainder=drop_remainder))
  assert [c.reset for c in chunks] == [True] + [False] * (len(chunks) - 1)
  assert [c.index for c in chunks] == list(range(len(chunks)))
  for c in chunks:
    assert c.inputs.shape == c.targets.shape == c.mask.shape == (batch_size, seq_len)
    assert c.inputs.dtype == np.int32 and c.mask.dtype == np.float32
  inputs = np.concatenate([c.inputs for c in chunks], axis=1)
  targets = np.concatenate([c.targets for c in chunks], axis=1)
  mask = np.concatenate([c.mask for c in chunks], axis=1) > 0
  tokens = np.asarray(tokens)
  n_targets = tokens.size - 1
  row = data.tbptt_layout(tokens.size, batch_size, drop_remainder)
  covered = 0
  for b in range(batch_size):
    m = int(mask[b].sum())
    assert mask[b, :m].all() and not mask[b, m:].any()  # padding only at the end of a row
    # row b is one contiguous piece of the stream, so the state carries from chunk k to k+1
    np.testing.assert_array_equal(targets[b, :m], tokens[b * row + 1:b * row + 1 + m])
    np.testing.assert_array_equal(inputs[b, :m], tokens[b * row:b * row + m])
    if drop_remainder:
      assert m == (row // seq_len) * seq_len
    covered += m
  if drop_remainder:
    assert mask.all()
    assert n_targets - covered < batch_size * (seq_len + 1)
  else:
    assert covered == n_targets  # rows tile the stream: every target exactly once
  return chunks


@settings(max_examples=25)
@given(st.integers(2, 400), st.integers(1, 8), st.integers(1, 50), st.booleans())
def test_tbptt_covers_every_target_once(n, batch_size, seq_len, drop_remainder):
  if n - 1 < batch_size:
    with pytest.raises(ValueError, match="tbptt_layout: argument 'batch_size'"):
      list(data.tbptt_batches(np.arange(n), batch_size, seq_len))
    return
  if drop_remainder and (n - 1) // batch_size < seq_len:
    assert list(data.tbptt_batches(np.arange(n), batch_size, seq_len,
                                   drop_remainder=True)) == []
    return
  tokens = np.random.default_rng(n).integers(0, 50, size=n).astype(np.int32)
  _check_tbptt(tokens, batch_size, seq_len, drop_remainder)


# ---------------------------------------------------------------------------------------------
# PTB through TFDS

@_needs("ptb")
def test_ptb_char_prepared_matches_raw_and_tbptt(tfds_dir):
  expected = {"train": 4975414 + 42068, "valid": 389672 + 3370, "test": 438662 + 3761}
  streams = {s: data.load("ptb_char", s, tfds_dir=tfds_dir) for s in expected}
  for s, n in expected.items():
    assert len(streams[s]) == n and streams[s].tokens.dtype == np.int32
  valid = streams["valid"]
  assert valid.vocab_size == 50 and "<eos>" in valid.vocab and "_" in valid.vocab
  raw = [t for line in readers.read_ptb_lines(readers.ptb_file(RAW, "char", "valid"))
         for t in line]
  assert [valid.vocab[i] for i in valid.tokens] == raw
  for seq_len in (150, 300):
    chunks = _check_tbptt(valid.tokens, 32, seq_len, drop_remainder=False)
    assert sum(float(c.mask.sum()) for c in chunks) == len(raw) - 1
  # batch size 1: the whole split in order, evaluation without padding except the last chunk
  chunks = list(data.tbptt_batches(valid, 1, 150))
  assert len(chunks) == -(-(len(raw) - 1) // 150)


@pytest.mark.slow
@_needs("ptb")
def test_ptb_word_prepared_counts(tfds_dir):
  expected = {"train": 929589, "valid": 73760, "test": 82430}
  for s, n in expected.items():
    stream = data.load("ptb_word", s, tfds_dir=tfds_dir)
    assert len(stream) == n and stream.vocab_size == 10000


# ---------------------------------------------------------------------------------------------
# Music

@_needs("polyphonic")
def test_jsb_prepared_splits_and_padded_batches(tfds_dir):
  raw = readers.read_music(readers.music_source_file(RAW, "jsb"))
  for s, n in zip(("train", "valid", "test"), (229, 76, 77)):
    ds = data.load("jsb", s, tfds_dir=tfds_dir)
    assert len(ds) == n
    for i in (0, n - 1):
      np.testing.assert_array_equal(ds.records([i])[0]["roll"], raw[s][i])
  ds = data.load("jsb", "train", tfds_dir=tfds_dir, pad_multiple=16)
  order = data.batch_order(len(ds), seed=7, epoch=2)
  batch = next(data.batches(ds, 10, seed=7, epoch=2))
  assert batch["inputs"].shape[1] % 16 == 0 and batch["inputs"].shape[2] == 88
  for row, idx in enumerate(order[:10]):
    roll = raw["train"][idx]
    t = roll.shape[0] - 1
    assert batch["lengths"][row] == t
    np.testing.assert_array_equal(batch["inputs"][row, :t], roll[:-1])
    np.testing.assert_array_equal(batch["targets"][row, :t], roll[1:])
    assert batch["mask"][row, :t].all() and not batch["mask"][row, t:].any()
    assert not batch["inputs"][row, t:].any()
  assert ds.info["loss"] == "music_nll"
  cached = data.load("jsb", "train", tfds_dir=tfds_dir, pad_multiple=16, in_memory=True)
  again = next(data.batches(cached, 10, seed=7, epoch=2))
  for k in batch:
    np.testing.assert_array_equal(batch[k], again[k])


# ---------------------------------------------------------------------------------------------
# MNIST

@_needs("mnist")
def test_mnist_prepared_sizes_holdout_and_permutation(tfds_dir):
  full = data.load("mnist", "train_full", tfds_dir=tfds_dir)
  test = data.load("mnist", "test", tfds_dir=tfds_dir)
  train = data.load("pmnist", "train", tfds_dir=tfds_dir)
  valid = data.load("mnist", "valid", tfds_dir=tfds_dir)
  assert (len(full), len(test), len(train), len(valid)) == (60000, 10000, 55000, 5000)
  assert not set(train.indices.tolist()) & set(valid.indices.tolist())
  raw_x, raw_y = readers.read_mnist(RAW, "train")
  for i in (0, 12345, 59999):  # record i is image i of the idx file
    rec = full.records([i])[0]
    np.testing.assert_array_equal(rec["image"], raw_x[i])
    assert rec["label"] == raw_y[i]
  perm = np.random.RandomState(92916).permutation(784)
  np.testing.assert_array_equal(data.mnist_permutation(), perm)
  np.testing.assert_array_equal(train.info["permutation"], perm)
  assert sorted(perm.tolist()) == list(range(784))
  batch = train.get_batch([0, 1, 2])
  assert batch["inputs"].shape == (3, 784, 1) and batch["inputs"].dtype == np.float32
  src = train.indices[:3]
  # float32 x / 255 against float64: one rounding
  np.testing.assert_allclose(batch["inputs"][..., 0],
                             raw_x[src].reshape(3, 784)[:, perm] / 255.0,
                             rtol=tol.F32_SHORT["rtol"])
  np.testing.assert_array_equal(batch["labels"], raw_y[src])
  seq = valid.get_batch([4])
  np.testing.assert_allclose(seq["inputs"][0, :, 0], raw_x[valid.indices[4]].reshape(784) / 255.,
                             rtol=tol.F32_SHORT["rtol"])
  assert 0.0 <= seq["inputs"].min() and seq["inputs"].max() <= 1.0
  other = data.load("pmnist", "train", tfds_dir=tfds_dir, permutation_seed=1)
  assert not np.array_equal(other.info["permutation"], perm)


# ---------------------------------------------------------------------------------------------
# CIFAR-10: mock data (not available offline) and the binary-format reader on a fake archive

@pytest.mark.parametrize("source", ["lvf", "tfds"])
def test_cifar10_mock_data_pipeline(source, tmp_path):
  with tfds.testing.mock_data(num_examples=12, policy=tfds.testing.MockPolicy.USE_CODE):
    pixel = data.load("cifar10", "test", source=source, tfds_dir=tmp_path)
    noisy = data.load("cifar10_noise", "train", source=source, tfds_dir=tmp_path, valid_size=4,
                      noise_seed=5)
    valid = data.load("cifar10_noise", "valid", source=source, tfds_dir=tmp_path,
                      valid_size=4, noise_seed=5)
    assert (len(pixel), len(noisy), len(valid)) == (12, 8, 4)
    assert pixel.info["seq_len"] == 1024 and noisy.info["seq_len"] == 1000
    rec = pixel.records([3])[0]
    batch = pixel.get_batch([3])
    img = np.asarray(rec["image"], np.float32).reshape(32, 32, 3) / 255.0
    # float32 x / 255 on both sides: one rounding each
    np.testing.assert_allclose(batch["inputs"][0], img.reshape(1024, 3),
                               rtol=tol.F32_SHORT["rtol"])
    assert batch["labels"][0] == rec["label"]
    b1 = noisy.get_batch([0, 1, 2])
    b2 = noisy.get_batch([2, 0])
    assert b1["inputs"].shape == (3, 1000, 96) and b1["inputs"].dtype == np.float32
    rec0 = noisy.records([0])[0]
    rows = np.asarray(rec0["image"], np.float32).reshape(32, 96) / 255.0
    np.testing.assert_allclose(b1["inputs"][0, :32], rows, rtol=tol.F32_SHORT["rtol"])
    np.testing.assert_array_equal(b1["inputs"][2], b2["inputs"][0])  # per-example noise
    assert not np.allclose(b1["inputs"][0, 32:], b1["inputs"][1, 32:])
    np.testing.assert_array_equal(
        b1["inputs"][1, 32:], data.cifar_noise(noisy.indices[1], "train", 5))
    assert tmp_path.exists() and not any(tmp_path.iterdir())  # mock wrote nothing


def test_cifar10_noise_statistics():
  noise = np.stack([data.cifar_noise(i, "train", 0) for i in range(20)])
  assert noise.shape == (20, 968, 96)
  # N = 20 x 968 x 96 = 1.86e6 draws: the mean's sigma is N^-1/2 = 7.3e-4, the std's
  # (2 N)^-1/2 = 5.2e-4, so 0.01 is 13 and 19 sigma
  assert abs(float(noise.mean())) < 0.01 and abs(float(noise.std()) - 1.0) < 0.01
  np.testing.assert_array_equal(noise[3], data.cifar_noise(3, "train", 0))
  assert not np.array_equal(data.cifar_noise(3, "test", 0), noise[3])


def _fake_cifar_archive(path, n_per_batch=3):
  rng = np.random.default_rng(0)
  truth = {}
  with tarfile.open(path, "w:gz") as tar:
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
      labels = rng.integers(0, 10, n_per_batch).astype(np.uint8)
      chw = rng.integers(0, 256, (n_per_batch, 3, 32, 32)).astype(np.uint8)
      payload = np.concatenate([labels[:, None], chw.reshape(n_per_batch, -1)], 1).tobytes()
      info = tarfile.TarInfo(f"cifar-10-batches-bin/{name}")
      info.size = len(payload)
      tar.addfile(info, io.BytesIO(payload))
      truth[name] = (chw.transpose(0, 2, 3, 1), labels)
  return truth


def test_cifar10_builder_on_fake_binary_archive(tmp_path):
  raw = tmp_path / "raw"
  (raw / "cifar10").mkdir(parents=True)
  truth = _fake_cifar_archive(raw / "cifar10" / "cifar-10-binary.tar.gz")
  with pytest.raises(paths.CorruptDataError, match=readers.CIFAR10_FILE[1]):
    data.download_and_prepare("cifar10", data_dir=raw, tfds_dir=tmp_path / "tfds")
  assert not (tmp_path / "tfds" / "lvf_cifar10" / "1.0.0").exists()
  ds = data.load("cifar10", "test", data_dir=raw, tfds_dir=tmp_path / "tfds",
                 verify_checksums=False)
  img, lab = truth["test_batch.bin"]
  assert len(ds) == 3
  np.testing.assert_array_equal(ds.records([1])[0]["image"], img[1])
  assert ds.get_batch([1])["labels"][0] == lab[1]
  full = data.load("cifar10", "train_full", data_dir=raw, tfds_dir=tmp_path / "tfds",
                   verify_checksums=False)
  assert len(full) == 15
  np.testing.assert_array_equal(full.records([4])[0]["image"], truth["data_batch_2.bin"][0][1])


_PREPARE_TOGETHER = """
import pathlib, sys, time
from lvf_jax import data
root = pathlib.Path(sys.argv[1])
(root / ("ready" + sys.argv[2])).touch()
while not (root / "go").exists():
  time.sleep(0.01)
print(len(data.load("cifar10", "test", data_dir=root / "raw", tfds_dir=root / "tfds",
                    verify_checksums=False)))
"""


def test_processes_preparing_a_dataset_together_both_read_it(tmp_path):
  """Two processes that find the dataset unprepared at the same moment (parallel runs on a
  new machine): one prepares it while the other waits, and both read it."""
  (tmp_path / "raw" / "cifar10").mkdir(parents=True)
  _fake_cifar_archive(tmp_path / "raw" / "cifar10" / "cifar-10-binary.tar.gz")
  procs = [subprocess.Popen([sys.executable, "-c", _PREPARE_TOGETHER, str(tmp_path), str(i)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
           for i in range(2)]
  deadline = time.time() + 120
  while not all((tmp_path / f"ready{i}").exists() for i in range(2)):
    assert time.time() < deadline and all(p.poll() is None for p in procs), \
        [p.communicate() for p in procs if p.poll() is not None]
    time.sleep(0.01)
  (tmp_path / "go").touch()
  outs = [p.communicate(timeout=120) for p in procs]
  assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
  assert [out.split()[-1] for out, _ in outs] == ["3", "3"]


def test_load_of_an_unprepared_dataset_builds_its_builder_twice(tmp_path, monkeypatch):
  """Once to find it unprepared, once more under the lock (another process may have
  prepared it meanwhile); the prepared dataset is then read with one builder."""
  from lvf_jax.data import datasets  # pylint: disable=import-outside-toplevel
  (tmp_path / "raw" / "cifar10").mkdir(parents=True)
  _fake_cifar_archive(tmp_path / "raw" / "cifar10" / "cifar-10-binary.tar.gz")
  calls = []
  real = datasets.builder

  def counting(*args, **kwargs):
    calls.append(args)
    return real(*args, **kwargs)

  monkeypatch.setattr(datasets, "builder", counting)
  kw = dict(data_dir=tmp_path / "raw", tfds_dir=tmp_path / "tfds", verify_checksums=False)
  assert len(data.load("cifar10", "test", **kw)) == 3
  assert len(calls) == 2
  assert len(data.load("cifar10", "test", **kw)) == 3
  assert len(calls) == 3


# ---------------------------------------------------------------------------------------------
# FSDD and (synthetic-tree) TIMIT

@_needs("fsdd")
def test_fsdd_prepared_split_and_features(tfds_dir):
  sizes = {"train": 2400, "valid": 300, "test": 300}
  for s, n in sizes.items():
    assert len(data.load("fsdd", s, tfds_dir=tfds_dir)) == n
  test = data.load("fsdd", "test", tfds_dir=tfds_dir)
  recs = test.records(range(len(test)))
  assert {int(r["index"]) for r in recs} == set(range(5))
  assert collections.Counter(int(r["digit"]) for r in recs) == {d: 30 for d in range(10)}
  rec = recs[7]
  speaker = readers.FSDD_SPEAKERS[int(rec["speaker"])]
  path = RAW / "fsdd" / "recordings" / f"{rec['digit']}_{speaker}_{rec['index']}.wav"
  x, rate = readers.read_wav(path)
  np.testing.assert_array_equal(rec["features"], features.waveform_to_features(x, rate))
  batch = next(data.batches(test, 8, shuffle=False, drop_remainder=False))
  np.testing.assert_array_equal(batch["inputs"][0, :batch["lengths"][0]],
                                recs[0]["features"][:-1])
  np.testing.assert_array_equal(batch["targets"][0, :batch["lengths"][0]],
                                recs[0]["features"][1:])
  assert batch["inputs"].shape[2] == 129 and test.info["loss"] == "masked_mse"


def _sphere(x, rate=16000):
  head = (f"NIST_1A\n   1024\nsample_count -i {x.size}\nsample_rate -i {rate}\n"
          "channel_count -i 1\nsample_byte_format -s2 01\nsample_n_bytes -i 2\n"
          "sample_coding -s3 pcm\nend_head\n").encode()
  return head + b" " * (1024 - len(head)) + x.astype("<i2").tobytes()


def test_timit_loader_on_synthetic_tree(tmp_path):
  root = tmp_path / "raw" / "timit"
  rng = np.random.default_rng(0)
  layout = {("TRAIN", "DR1", "FCJF0"): ["SA1", "SI648", "SX37"],
            ("TEST", "DR1", "MDAB0"): ["SA1", "SI1039", "SX139"],  # core test speaker
            ("TEST", "DR2", "MABC0"): ["SI1620", "SX26"]}
  waves = {}
  for (part, dr, spk), utts in layout.items():
    d = root / part / dr / spk
    d.mkdir(parents=True)
    for u in utts:
      x = (3000 * rng.standard_normal(2000 + 100 * len(waves))).astype(np.int16)
      (d / f"{u}.WAV").write_bytes(_sphere(x))
      waves[(spk, u)] = x
  sizes = {"train": 2, "valid": 2, "test": 2}
  for s, n in sizes.items():
    ds = data.load("timit", s, data_dir=tmp_path / "raw", tfds_dir=tmp_path / "tfds")
    assert len(ds) == n
    for rec in ds.records(range(n)):
      spk, utt = rec["speaker"], rec["utterance"]
      spk, utt = (v.decode() if isinstance(v, bytes) else str(v) for v in (spk, utt))
      assert not utt.startswith("SA")
      assert (spk == "MDAB0") == (s == "valid") and (spk == "FCJF0") == (s == "train")
      expected = features.log_magnitude(features.stft(
          features.decimate_2x(waves[(spk, utt)] / 32768.0)))
      np.testing.assert_array_equal(rec["features"], expected)


# ---------------------------------------------------------------------------------------------
# Error paths

def _no_partial_cache(tfds_root: pathlib.Path):
  leftovers = [p for p in tfds_root.rglob("*") if "incomplete" in p.name
               or p.name.endswith(".array_record-00000-of-00001")]
  assert leftovers == []


@_needs("polyphonic")
def test_missing_and_corrupt_file_leave_no_cache(tmp_path):
  raw, cache = tmp_path / "raw", tmp_path / "tfds"
  raw.mkdir()
  with pytest.raises(paths.MissingDataError) as err:
    data.load("jsb", "train", data_dir=raw, tfds_dir=cache)
  msg = str(err.value)
  assert str(raw / "polyphonic" / "JSB Chorales.pickle") in msg
  assert readers.MUSIC_PICKLES["jsb"][0][1] in msg and "how to obtain" in msg
  _no_partial_cache(cache)
  assert not (cache / "lvf_polyphonic" / "jsb" / "1.0.0").exists()
  good = (RAW / readers.MUSIC_PICKLES["jsb"][0][0]).read_bytes()
  (raw / "polyphonic").mkdir()
  target = raw / readers.MUSIC_PICKLES["jsb"][0][0]
  target.write_bytes(good[:-10] + bytes(10))
  with pytest.raises(paths.CorruptDataError, match="checksum mismatch"):
    data.load("jsb", "train", data_dir=raw, tfds_dir=cache)
  _no_partial_cache(cache)
  target.write_bytes(good)
  assert len(data.load("jsb", "valid", data_dir=raw, tfds_dir=cache)) == 76


@_needs("fsdd")
def test_failure_while_writing_leaves_no_cache(tmp_path):
  rec = tmp_path / "raw" / "fsdd" / "recordings"
  rec.mkdir(parents=True)
  for name in ("0_theo_10.wav", "1_theo_11.wav"):
    (rec / name).write_bytes((RAW / "fsdd" / "recordings" / name).read_bytes())
  (rec / "2_theo_12.wav").write_bytes(b"RIFF....WAVEjunk")  # breaks mid-generation
  with pytest.raises(Exception):  # noqa: B017 -- any error mid-generation
    data.load("fsdd", "train", data_dir=tmp_path / "raw", tfds_dir=tmp_path / "tfds",
              verify_checksums=False)
  _no_partial_cache(tmp_path / "tfds")
  assert not (tmp_path / "tfds" / "lvf_fsdd" / "1.0.0").exists()


def test_prepare_if_missing_false_and_bad_arguments(tmp_path):
  with pytest.raises(paths.MissingDataError, match="not prepared"):
    data.load("jsb", "train", tfds_dir=tmp_path, prepare_if_missing=False)
  with pytest.raises(ValueError, match="load: argument 'name'"):
    data.load("cifar100", "train")
  with pytest.raises(ValueError, match="load: argument 'split'"):
    data.load("jsb", "train_full")
  with pytest.raises(ValueError, match="load: argument 'source'"):
    data.load("jsb", "train", source="tfds")
  with pytest.raises(paths.MissingDataError, match="needs TensorFlow to \\*prepare\\*"):
    data.load("mnist", "test", source="tfds", tfds_dir=tmp_path)


@_needs("polyphonic")
def test_download_path_is_verified(tmp_path, monkeypatch):
  """download=True fetches the public .mat (here: a stubbed download manager) and checks it."""
  pytest.importorskip("scipy")
  calls = []

  def fake_download(self, url):  # pylint: disable=unused-argument
    calls.append(url)
    return RAW / readers.MUSIC_MAT["jsb"][0]

  monkeypatch.setattr(tfds.download.DownloadManager, "download", fake_download)
  raw = tmp_path / "raw"
  raw.mkdir()
  with pytest.raises(paths.MissingDataError):  # offline and download not allowed
    data.download_and_prepare("jsb", data_dir=raw, tfds_dir=tmp_path / "tfds")
  assert calls == []
  ds = data.load("jsb", "test", data_dir=raw, tfds_dir=tmp_path / "tfds", download=True)
  assert calls == [readers.MUSIC_MAT_URL + "JSB_Chorales.mat"] and len(ds) == 77

  def bad_download(self, url):  # pylint: disable=unused-argument
    return RAW / readers.MUSIC_MAT["nottingham"][0]

  monkeypatch.setattr(tfds.download.DownloadManager, "download", bad_download)
  with pytest.raises(paths.CorruptDataError, match=readers.MUSIC_MAT["musedata"][1]):
    data.download_and_prepare("musedata", data_dir=raw, tfds_dir=tmp_path / "tfds", download=True)


@_needs("ptb")
def test_prepared_dataset_readable_through_tfds_registry(tfds_dir):
  data.load("ptb_char", "valid", tfds_dir=tfds_dir)
  src = tfds.data_source("lvf_ptb/char", split="valid", data_dir=str(tfds_dir), download=False)
  assert len(src) == 3370 and src[0]["tokens"].dtype == np.int32
