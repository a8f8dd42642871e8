"""TFDS builders for the benchmark datasets, preparable and readable without TensorFlow.

TFDS's built-in ``mnist`` and ``cifar10`` builders cannot be *prepared* without TensorFlow:
their ``_generate_examples`` read files through ``tf.io.gfile`` and their ``Image`` feature
encodes PNGs with ``tf.image.encode_png``. These builders therefore store images as raw uint8
``Tensor`` features, read the standard files with NumPy, and keep every split in the original
file order (``disable_shuffling=True``), so record ``i`` of a split is example ``i`` of the
original file. All of them are prepared with ``file_format='array_record'`` and read through
``builder.as_data_source`` (no TensorFlow anywhere). Datasets prepared elsewhere with the
built-in builders can still be read (``lvf_jax.data.load(..., source='tfds')``).

Raw files come from the raw data directory (``raw_dir``; see :mod:`lvf_jax.data.paths`) or,
where a public URL exists and ``allow_download=True``, from the TFDS download manager. Every
file is checked against its sha256 before any record is written. TFDS writes into an
``incomplete.*`` directory and renames it only on success, so a failed preparation leaves
nothing half-written in the cache.
"""

from __future__ import annotations

import inspect
import pathlib
import sys
from typing import Optional

from etils import epath
import numpy as np
import tensorflow_datasets as tfds

from lvf_jax.data import features as feats
from lvf_jax.data import paths
from lvf_jax.data import readers

_CITATION_MNIST = ("LeCun, Bottou, Bengio, Haffner (1998). Gradient-based learning applied "
                   "to document recognition.")
_CITATION_CIFAR = "Krizhevsky (2009). Learning multiple layers of features from tiny images."
_CITATION_PTB = "Marcus et al. (1993); Mikolov et al. (2010), RNNLM simple-examples."
_CITATION_MUSIC = "Boulanger-Lewandowski, Bengio, Vincent (2012). ICML."
_CITATION_FSDD = "Free Spoken Digit Dataset (FSDD), Jakobovski/free-spoken-digit-dataset."
_CITATION_TIMIT = "Garofolo et al. (1993). TIMIT, LDC93S1; pipeline of Wisdom et al. (2016)."


class _LvfBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
  """Common plumbing: raw directory, checksum checks, optional download."""

  def __init__(self, *, raw_dir: Optional[paths.PathLike] = None,
               allow_download: bool = False, verify_checksums: bool = True, **kwargs):
    self._raw_dir = paths.raw_data_dir(raw_dir)
    self._allow_download = allow_download
    self._verify = verify_checksums
    kwargs.setdefault("file_format", "array_record")
    super().__init__(**kwargs)

  @tfds.core.utils.classproperty
  @classmethod
  def code_path(cls):
    """Path of the module defining the builder.

    TFDS's own implementation needs the optional ``importlib_resources`` package for builders
    that live inside a package; the plain module path is all it is used for (locating a
    ``checksums.tsv`` next to the code, which these builders do not ship).
    """
    return epath.Path(inspect.getfile(cls))

  # TFDS announces "Downloading and preparing dataset Unknown size ..." before generating
  # and a "downloaded" line after; these builders read local raw files (downloading only
  # with allow_download), so they say what they do instead.
  def _log_download_bytes(self) -> None:
    config = f"/{self.builder_config.name}" if self.builder_config else ""
    print(f"lvf_jax: preparing {self.name}{config} once from the raw files in "
          f"{self._raw_dir} into {self.data_dir}", file=sys.stderr)

  def _log_download_done(self) -> None:
    print(f"lvf_jax: prepared {self.data_dir}; later runs read it from there",
          file=sys.stderr)

  def _resolve(self, dl_manager, what: str, rel: str, sha256: Optional[str], how: str,
               url: Optional[str] = None, member: Optional[str] = None) -> pathlib.Path:
    """Returns a verified local path for raw file ``rel``, downloading it if allowed."""
    local = self._raw_dir / rel
    if local.is_file() or not (self._allow_download and url):
      return paths.check_file(what, local, sha256, how, self._verify)
    try:
      if member is None:
        path = pathlib.Path(dl_manager.download(url))
      else:
        root = pathlib.Path(dl_manager.download_and_extract(url))
        found = sorted(root.rglob(member))
        if not found:
          raise paths.missing_file_error(what, f"{url} (member {member})", sha256, how)
        path = found[0]
    except paths.DataError:
      raise
    except Exception as e:  # network errors etc.
      raise paths.missing_file_error(
          what, local, sha256, f"{how} (download of {url} failed: {e!r})") from e
    return paths.check_file(what, path, sha256, how, self._verify)


# ----------------------------------------------------------------------------------------------

class LvfMnist(_LvfBuilder):
  """MNIST from the original idx files; images as raw (28, 28) uint8 tensors."""

  VERSION = tfds.core.Version("1.0.0")

  def _info(self):
    return self.dataset_info_from_configs(
        description="MNIST digits (original idx files), stored without PNG encoding.",
        features=tfds.features.FeaturesDict({
            "image": tfds.features.Tensor(shape=(28, 28), dtype=np.uint8),
            "label": tfds.features.ClassLabel(num_classes=10),
        }),
        supervised_keys=("image", "label"),
        disable_shuffling=True,
        citation=_CITATION_MNIST)

  def _split_generators(self, dl_manager):
    files = {k: self._resolve(dl_manager, "MNIST", rel, sha, readers.MNIST_HOW,
                              readers.MNIST_URL + rel.split("/")[-1])
             for k, (rel, sha) in readers.MNIST_FILES.items()}
    return {s: self._generate_examples(files[f"{s}_images"], files[f"{s}_labels"])
            for s in ("train", "test")}

  def _generate_examples(self, images_path, labels_path):
    images = readers.read_idx(images_path)
    labels = readers.read_idx(labels_path)
    for i in range(images.shape[0]):
      yield i, {"image": images[i], "label": int(labels[i])}


class LvfCifar10(_LvfBuilder):
  """CIFAR-10 from ``cifar-10-binary.tar.gz``; images as raw (32, 32, 3) uint8 tensors."""

  VERSION = tfds.core.Version("1.0.0")

  def _info(self):
    return self.dataset_info_from_configs(
        description="CIFAR-10 (binary version), stored without PNG encoding.",
        features=tfds.features.FeaturesDict({
            "image": tfds.features.Tensor(shape=(32, 32, 3), dtype=np.uint8),
            "label": tfds.features.ClassLabel(num_classes=10),
        }),
        supervised_keys=("image", "label"),
        disable_shuffling=True,
        citation=_CITATION_CIFAR)

  def _split_generators(self, dl_manager):
    rel, sha = readers.CIFAR10_FILE
    archive = self._resolve(dl_manager, "CIFAR-10", rel, sha, readers.CIFAR10_HOW,
                            readers.CIFAR10_URL)
    return {s: self._generate_examples(archive, s) for s in ("train", "test")}

  def _generate_examples(self, archive, split):
    images, labels = readers.read_cifar10_binary(archive, split)
    for i in range(images.shape[0]):
      yield i, {"image": images[i], "label": int(labels[i])}


# ----------------------------------------------------------------------------------------------

class LvfPtb(_LvfBuilder):
  """Penn Treebank (Mikolov splits): one record per line of token ids, ``<eos>`` appended.

  The vocabulary (decreasing train frequency, ties alphabetical) is stored in
  ``info.metadata['vocab']``.
  """

  VERSION = tfds.core.Version("1.0.0")
  BUILDER_CONFIGS = [
      tfds.core.BuilderConfig(name="char", description="character level (50 symbols)"),
      tfds.core.BuilderConfig(name="word", description="word level (10k vocabulary)"),
  ]

  def _info(self):
    return self.dataset_info_from_configs(
        description="Penn Treebank language modelling (Mikolov's simple-examples).",
        features=tfds.features.FeaturesDict({
            "tokens": tfds.features.Tensor(shape=(None,), dtype=np.int32),
        }),
        metadata=tfds.core.MetadataDict(),
        disable_shuffling=True,
        citation=_CITATION_PTB)

  def _split_generators(self, dl_manager):
    level = self.builder_config.name
    files = {}
    for s in ("train", "valid", "test"):
      rel, sha = readers.PTB_FILES[(level, s)]
      files[s] = self._resolve(dl_manager, f"PTB ({level} level, {s})", rel, sha,
                               readers.PTB_HOW, readers.PTB_URL, member=rel.split("/")[-1])
    lines = {s: readers.read_ptb_lines(p) for s, p in files.items()}
    vocab = readers.build_vocab(lines["train"])
    self.info.metadata["vocab"] = vocab
    index = {w: i for i, w in enumerate(vocab)}
    for s in ("valid", "test"):
      unknown = {t for line in lines[s] for t in line if t not in index}
      if unknown:
        raise paths.CorruptDataError(f"PTB ({level}): split {s} has tokens outside the train "
                                     f"vocabulary: {sorted(unknown)[:10]}")
    return {s: self._generate_examples(lines[s], index) for s in ("train", "valid", "test")}

  def _generate_examples(self, lines, index):
    for i, line in enumerate(lines):
      yield i, {"tokens": np.asarray([index[t] for t in line], np.int32)}


# ----------------------------------------------------------------------------------------------

class LvfPolyphonic(_LvfBuilder):
  """Polyphonic music piano rolls (88 keys, MIDI 21..108), one record per sequence."""

  VERSION = tfds.core.Version("1.0.0")
  BUILDER_CONFIGS = [tfds.core.BuilderConfig(name=n) for n in readers.MUSIC_SETS]

  def _info(self):
    return self.dataset_info_from_configs(
        description="Boulanger-Lewandowski et al. (2012) piano rolls.",
        features=tfds.features.FeaturesDict({
            "roll": tfds.features.Tensor(shape=(None, 88), dtype=np.uint8),
        }),
        disable_shuffling=True,
        citation=_CITATION_MUSIC)

  def _split_generators(self, dl_manager):
    name = self.builder_config.name
    try:
      path = readers.music_source_file(self._raw_dir, name, self._verify)
    except paths.MissingDataError:
      if not self._allow_download:
        raise
      rel, sha = readers.MUSIC_MAT[name]
      path = self._resolve(dl_manager, f"music ({name})", rel, sha, readers.MUSIC_HOW,
                           readers.MUSIC_MAT_URL + rel.split("/")[-1])
    data = readers.read_music(path)
    return {s: self._generate_examples(data[s]) for s in ("train", "valid", "test")}

  def _generate_examples(self, rolls):
    for i, roll in enumerate(rolls):
      yield i, {"roll": roll}


# ----------------------------------------------------------------------------------------------

class LvfFsdd(_LvfBuilder):
  """FSDD through the TIMIT (Wisdom et al. 2016) feature pipeline.

  Split by recording index: 0-4 test (the upstream FSDD convention, 300 files), 5-9 valid
  (300), 10-49 train (2,400); every speaker and digit appears in every split.
  """

  VERSION = tfds.core.Version("1.0.0")

  def _info(self):
    return self.dataset_info_from_configs(
        description="Free Spoken Digit Dataset, log-magnitude STFT frames (8 kHz, 256/128).",
        features=tfds.features.FeaturesDict({
            "features": tfds.features.Tensor(shape=(None, feats.NUM_BINS), dtype=np.float32),
            "digit": tfds.features.ClassLabel(num_classes=10),
            "speaker": tfds.features.ClassLabel(names=list(readers.FSDD_SPEAKERS)),
            "index": np.int32,
        }),
        disable_shuffling=True,
        citation=_CITATION_FSDD)

  def _split_generators(self, dl_manager):
    recordings = None
    if not (self._raw_dir / "fsdd" / "recordings").is_dir() and self._allow_download:
      try:
        root = pathlib.Path(dl_manager.download_and_extract(readers.FSDD_URL))
        found = sorted(p for p in root.rglob("recordings") if p.is_dir())
        recordings = found[0] if found else None
      except Exception as e:  # network errors etc.
        raise paths.missing_file_error(
            "FSDD", self._raw_dir / "fsdd" / "recordings", None,
            f"{readers.FSDD_HOW} (download of {readers.FSDD_URL} failed: {e!r})") from e
    files = readers.fsdd_files(self._raw_dir, self._verify, recordings)
    by_split = {"train": [], "valid": [], "test": []}
    for item in files:
      by_split[readers.fsdd_split_of(item[3])].append(item)
    return {s: self._generate_examples(v) for s, v in by_split.items()}

  def _generate_examples(self, items):
    for path, digit, speaker, index in items:
      x, rate = readers.read_wav(path)
      yield path.name, {"features": feats.waveform_to_features(x, rate), "digit": digit,
                        "speaker": speaker, "index": index}


class LvfTimit(_LvfBuilder):
  """TIMIT frame prediction (Wisdom et al. 2016 pipeline) from a local LDC copy.

  See :func:`lvf_jax.data.readers.timit_files` for the split. Pass ``split_lists=`` to use
  explicit file lists.
  """

  VERSION = tfds.core.Version("1.0.0")
  MANUAL_DOWNLOAD_INSTRUCTIONS = readers.TIMIT_HOW

  def __init__(self, *, split_lists: Optional[paths.PathLike] = None, **kwargs):
    self._split_lists = split_lists
    super().__init__(**kwargs)

  def _info(self):
    return self.dataset_info_from_configs(
        description="TIMIT log-magnitude STFT frames (8 kHz, 256/128 Hann, 129 bins).",
        features=tfds.features.FeaturesDict({
            "features": tfds.features.Tensor(shape=(None, feats.NUM_BINS), dtype=np.float32),
            "speaker": tfds.features.Text(),
            "utterance": tfds.features.Text(),
        }),
        disable_shuffling=True,
        citation=_CITATION_TIMIT)

  def _split_generators(self, dl_manager):
    lists = readers.timit_files(self._raw_dir, self._split_lists)
    return {s: self._generate_examples(v) for s, v in lists.items()}

  def _generate_examples(self, items):
    for path, speaker, utt in items:
      x, rate = readers.read_wav(path)
      yield f"{speaker}/{utt}", {"features": feats.waveform_to_features(x, rate),
                                 "speaker": speaker, "utterance": utt}
