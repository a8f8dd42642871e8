"""Raw-file readers against the statistics in shared/data/*/README.md (no TFDS preparation).

Skipped, with the reason shown, only where shared/data is absent.
"""

import collections
import gzip
import pathlib
import pickle
import shutil

import numpy as np
import pytest

from lvf_jax.data import paths, readers

RAW = paths.raw_data_dir()
needs_raw = pytest.mark.skipif(
    not (RAW / "mnist").is_dir(),
    reason=f"shared data not found at {RAW} (set LVF_JAX_DATA_DIR to the shared/data folder)")


# ---------------------------------------------------------------------------------------------
# MNIST (README: 60,000 / 10,000; means 0.130660 / 0.132515; class counts)

@needs_raw
def test_mnist_sizes_means_and_class_counts():
  train_x, train_y = readers.read_mnist(RAW, "train")
  test_x, test_y = readers.read_mnist(RAW, "test")
  assert train_x.shape == (60000, 28, 28) and train_x.dtype == np.uint8
  assert test_x.shape == (10000, 28, 28)
  assert train_y.shape == (60000,) and test_y.shape == (10000,)
  # shared/data/mnist/README.md prints the means to 6 decimals: half a unit of the last, 5e-7
  np.testing.assert_allclose(train_x.mean() / 255.0, 0.130660, atol=5e-7)
  np.testing.assert_allclose(test_x.mean() / 255.0, 0.132515, atol=5e-7)  # 6 decimals too
  assert np.bincount(train_y).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265,
                                           5851, 5949]
  assert np.bincount(test_y).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def test_read_idx_rejects_truncated_file(tmp_path):
  bad = tmp_path / "x-idx1-ubyte.gz"
  with gzip.open(bad, "wb") as f:
    f.write(np.array([2049, 10], ">i4").tobytes() + bytes(7))  # header says 10, has 7
  with pytest.raises(paths.CorruptDataError, match="header announces 10"):
    readers.read_idx(bad)


# ---------------------------------------------------------------------------------------------
# PTB (README: word 929,589 / 73,760 / 82,430 tokens with <eos>, vocabulary 10,000;
# char 4,975,414 / 389,672 / 438,662 characters in 42,068 / 3,370 / 3,761 lines, 49 + <eos>)

PTB_LINES = {"train": 42068, "valid": 3370, "test": 3761}


@needs_raw
@pytest.mark.parametrize("level,counts,vocab_size", [
    ("word", {"train": 929589, "valid": 73760, "test": 82430}, 10000),
    ("char", {"train": 4975414 + 42068, "valid": 389672 + 3370, "test": 438662 + 3761}, 50),
])
def test_ptb_token_counts_and_vocabulary(level, counts, vocab_size):
  lines = {s: readers.read_ptb_lines(readers.ptb_file(RAW, level, s)) for s in counts}
  for s, n in counts.items():
    assert len(lines[s]) == PTB_LINES[s]
    assert sum(len(line) for line in lines[s]) == n
    assert all(line[-1] == readers.EOS for line in lines[s])
  vocab = readers.build_vocab(lines["train"])
  assert len(vocab) == vocab_size and readers.EOS in vocab
  assert len(set(vocab)) == len(vocab)
  # every valid/test token is in the train vocabulary
  assert {t for s in ("valid", "test") for line in lines[s] for t in line} <= set(vocab)
  # ordering: non-increasing train frequency
  counts_train = collections.Counter(t for line in lines["train"] for t in line)
  freqs = [counts_train[w] for w in vocab]
  assert all(a >= b for a, b in zip(freqs, freqs[1:]))


@needs_raw
def test_ptb_char_is_word_level_spelled_out():
  words = readers.read_ptb_lines(readers.ptb_file(RAW, "word", "valid"))
  chars = readers.read_ptb_lines(readers.ptb_file(RAW, "char", "valid"))
  for w, c in zip(words[:200], chars[:200]):
    assert list("_".join(w[:-1])) == c[:-1]


# ---------------------------------------------------------------------------------------------
# Polyphonic music (README table)

MUSIC_STATS = {
    "jsb": ((229, 76, 77), (13807, 4602, 4725), (43, 96)),
    "musedata": ((524, 135, 124), (245202, 82755, 64339), (21, 105)),
    "nottingham": ((694, 173, 170), (176561, 45513, 44463), (31, 93)),
    "piano_midi": ((87, 12, 25), (75911, 8540, 19036), (21, 108)),
}


@needs_raw
@pytest.mark.parametrize("name", readers.MUSIC_SETS)
def test_music_split_sizes_steps_and_note_range(name):
  seqs, steps, (lo, hi) = MUSIC_STATS[name]
  data = readers.read_music(readers.music_source_file(RAW, name))
  for s, n, t in zip(("train", "valid", "test"), seqs, steps):
    assert len(data[s]) == n
    assert sum(r.shape[0] for r in data[s]) == t
    assert all(r.shape[1] == 88 and r.dtype == np.uint8 for r in data[s])
  active = np.flatnonzero(np.concatenate([np.concatenate(v) for v in data.values()]).any(0))
  assert (active.min() + 21, active.max() + 21) == (lo, hi)


@needs_raw
def test_jsb_pickle_equals_mat_conversion():
  pytest.importorskip("scipy")
  from_pickle = readers.read_music(RAW / readers.MUSIC_PICKLES["jsb"][0][0])
  from_mat = readers.read_music(RAW / readers.MUSIC_MAT["jsb"][0])
  for s in ("train", "valid", "test"):
    assert len(from_pickle[s]) == len(from_mat[s])
    for a, b in zip(from_pickle[s], from_mat[s]):
      np.testing.assert_array_equal(a, b)


def test_notes_to_roll_columns():
  roll = readers.notes_to_roll([(21, 60), (), (108,)])
  expected = np.zeros((3, 88), np.uint8)
  expected[0, 0] = expected[0, 39] = expected[2, 87] = 1
  np.testing.assert_array_equal(roll, expected)
  with pytest.raises(ValueError, match="outside the 88-key"):
    readers.notes_to_roll([(20,)])


def test_music_unpickler_refuses_arbitrary_globals(tmp_path):
  path = tmp_path / "evil.pickle"
  path.write_bytes(pickle.dumps({"train": [[(shutil.rmtree,)]]}, protocol=2))
  with pytest.raises(pickle.UnpicklingError, match="forbidden global"):
    readers.read_music(path)


# ---------------------------------------------------------------------------------------------
# FSDD (README: 3,000 files, 500 per speaker, 300 per digit, index 0-4 = 300 test files,
# 8 kHz mono 16-bit, durations 0.143 s .. 2.283 s, 1,312 s in total)

@needs_raw
def test_fsdd_files_split_and_format():
  files = readers.fsdd_files(RAW)  # also verifies the README tree hash
  assert len(files) == 3000
  assert collections.Counter(f[2] for f in files) == {s: 500 for s in readers.FSDD_SPEAKERS}
  assert collections.Counter(f[1] for f in files) == {d: 300 for d in range(10)}
  splits = collections.Counter(readers.fsdd_split_of(f[3]) for f in files)
  assert splits == {"train": 2400, "valid": 300, "test": 300}
  lengths = []
  for path, *_ in files[::10]:
    x, rate = readers.read_wav(path)
    assert rate == 8000 and x.dtype == np.int16 and x.ndim == 1
    lengths.append(x.shape[0] / rate)
  assert 0.142 <= min(lengths) and max(lengths) <= 2.284


def test_fsdd_corrupt_tree_hash(tmp_path):
  rec = tmp_path / "fsdd" / "recordings"
  rec.mkdir(parents=True)
  (rec / "0_theo_0.wav").write_bytes(b"RIFF")
  with pytest.raises(paths.CorruptDataError, match=readers.FSDD_TREE_SHA256):
    readers.fsdd_files(tmp_path)


# ---------------------------------------------------------------------------------------------
# Error path: a missing file names the file, its checksum and how to obtain it.

def test_missing_file_error_message(tmp_path):
  with pytest.raises(paths.MissingDataError) as err:
    readers.read_mnist(tmp_path, "train")
  msg = str(err.value)
  assert str(tmp_path / "mnist" / "train-images-idx3-ubyte.gz") in msg
  assert readers.MNIST_FILES["train_images"][1] in msg
  assert "how to obtain" in msg and paths.DATA_DIR_ENV in msg
  assert isinstance(err.value, FileNotFoundError)


def test_corrupt_file_error_message(tmp_path):
  (tmp_path / "ptb").mkdir()
  (tmp_path / "ptb" / "ptb.valid.txt").write_text(" a b \n")
  with pytest.raises(paths.CorruptDataError) as err:
    readers.ptb_file(tmp_path, "word", "valid")
  assert readers.PTB_FILES[("word", "valid")][1] in str(err.value)
  assert paths.sha256_file(tmp_path / "ptb" / "ptb.valid.txt") in str(err.value)


def test_raw_and_tfds_dir_resolution(tmp_path, monkeypatch):
  monkeypatch.setenv(paths.DATA_DIR_ENV, str(tmp_path / "raw"))
  monkeypatch.setenv(paths.TFDS_DIR_ENV, str(tmp_path / "tfds"))
  assert paths.raw_data_dir() == tmp_path / "raw"
  assert paths.tfds_data_dir() == tmp_path / "tfds"
  assert paths.raw_data_dir(tmp_path / "x") == tmp_path / "x"
  monkeypatch.delenv(paths.DATA_DIR_ENV)
  monkeypatch.delenv(paths.TFDS_DIR_ENV)
  assert paths.tfds_data_dir() == pathlib.Path("~/tensorflow_datasets").expanduser()
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
  assert paths.raw_data_dir() == tmp_path / "cache" / "lvf_jax" / "data"
  monkeypatch.delenv("XDG_CACHE_HOME")
  monkeypatch.setenv("HOME", str(tmp_path / "home"))
  assert paths.raw_data_dir() == tmp_path / "home" / ".cache" / "lvf_jax" / "data"


@needs_raw
def test_music_falls_back_to_mat(tmp_path):
  rel, sha = readers.MUSIC_MAT["piano_midi"]
  (tmp_path / rel).parent.mkdir(parents=True)
  (tmp_path / rel).write_bytes((RAW / rel).read_bytes())
  assert readers.music_source_file(tmp_path, "piano_midi") == tmp_path / rel
  with pytest.raises(paths.MissingDataError, match="derived/MuseData.pickle") as err:
    readers.music_source_file(tmp_path, "musedata")
  assert "mat/MuseData.mat" in str(err.value) and readers.MUSIC_MAT["musedata"][1] in str(
      err.value)
