"""Where raw files and prepared (TFDS array_record) datasets live, and checksum checks.

Two directories matter:

* the *raw data directory* (``LVF_JAX_DATA_DIR``): the standard files in the layout of
  ``shared/data`` (``mnist/``, ``ptb/``, ``polyphonic/``, ``fsdd/``, ``cifar10/``, ``timit/``).
  It is the TFDS "manual directory" of our builders. Default: ``lvf_jax/data`` in the user
  cache directory (``$XDG_CACHE_HOME``, else ``~/.cache``).
* the *TFDS data directory* (``LVF_JAX_TFDS_DIR``, default ``~/tensorflow_datasets``), where
  prepared datasets are cached in array_record format.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
from typing import Iterable, Optional, Union

PathLike = Union[str, os.PathLike]

DATA_DIR_ENV = "LVF_JAX_DATA_DIR"
TFDS_DIR_ENV = "LVF_JAX_TFDS_DIR"



def default_raw_dir() -> pathlib.Path:
  """``lvf_jax/data`` under ``$XDG_CACHE_HOME`` (``~/.cache`` when unset)."""
  cache = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
  return pathlib.Path(cache).expanduser() / "lvf_jax" / "data"


class DataError(RuntimeError):
  """Base class for data-layer errors."""


class MissingDataError(DataError, FileNotFoundError):
  """A raw file that a builder needs is missing (or could not be downloaded)."""


class CorruptDataError(DataError, ValueError):
  """A raw file exists but its checksum (or content) is not the expected one."""


def raw_data_dir(data_dir: Optional[PathLike] = None) -> pathlib.Path:
  """Returns the raw-data (manual) directory.

  Order: the ``data_dir`` argument, ``$LVF_JAX_DATA_DIR``, then :func:`default_raw_dir`
  (builders report precisely which file they expected where when it is absent).
  """
  if data_dir is not None:
    return pathlib.Path(data_dir).expanduser()
  env = os.environ.get(DATA_DIR_ENV)
  if env:
    return pathlib.Path(env).expanduser()
  return default_raw_dir()


def tfds_data_dir(tfds_dir: Optional[PathLike] = None) -> pathlib.Path:
  """Returns the TFDS data directory for prepared datasets.

  Order: the ``tfds_dir`` argument, ``$LVF_JAX_TFDS_DIR``, then ``~/tensorflow_datasets``.
  """
  if tfds_dir is not None:
    return pathlib.Path(tfds_dir).expanduser()
  env = os.environ.get(TFDS_DIR_ENV)
  if env:
    return pathlib.Path(env).expanduser()
  return pathlib.Path("~/tensorflow_datasets").expanduser()


def sha256_file(path: PathLike, chunk_size: int = 1 << 20) -> str:
  """Hex sha256 of a file's bytes."""
  h = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(chunk_size), b""):
      h.update(chunk)
  return h.hexdigest()


def tree_sha256(paths: Iterable[PathLike]) -> str:
  """FSDD-style tree hash: sha256 over ``name + b"\\0" + sha256(bytes)`` in sorted name order."""
  h = hashlib.sha256()
  for p in sorted((pathlib.Path(p) for p in paths), key=lambda q: q.name):
    h.update(p.name.encode() + b"\0" + bytes.fromhex(sha256_file(p)))
  return h.hexdigest()


def missing_file_error(what: str, expected: PathLike, sha256: Optional[str], how: str,
                       env_hint: bool = True) -> MissingDataError:
  """The standard error of a missing raw file: one line naming the file, its checksum and
  where to get it."""
  msg = [f"{what}: expected file not found: {expected}"]
  if sha256:
    msg.append(f"expected sha256 {sha256}")
  msg.append(f"how to obtain it: {how}")
  if env_hint:
    msg.append(f"the raw data directory is set by data_dir=... or ${DATA_DIR_ENV} "
               f"(default: {default_raw_dir()})")
  return MissingDataError("; ".join(msg))


def check_file(what: str, path: PathLike, sha256: Optional[str], how: str,
               verify: bool = True) -> pathlib.Path:
  """Checks that ``path`` exists and (if ``verify``) has the expected sha256.

  Raises:
    MissingDataError: the file is absent.
    CorruptDataError: the checksum differs.
  """
  path = pathlib.Path(path)
  if not path.is_file():
    raise missing_file_error(what, path, sha256, how)
  if verify and sha256:
    got = sha256_file(path)
    if got != sha256:
      raise CorruptDataError(
          f"{what}: checksum mismatch for {path}: expected sha256 {sha256}, got {got}; how "
          f"to obtain a good copy: {how}")
  return path
