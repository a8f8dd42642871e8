"""Data failures on the command line: one line naming the file, checksum and source; exit 2."""

import os
import pickle
import subprocess
import sys
import textwrap

import pytest

from lvf_jax import data
from lvf_jax.data import paths, readers
from lvf_jax.train import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW = paths.raw_data_dir()
JSB_PICKLE = readers.MUSIC_PICKLES["jsb"][0][0]

needs_music = pytest.mark.skipif(not (RAW / JSB_PICKLE).is_file(),
                                 reason="polyphonic music data not in the data directory")

TINY = ["--config.train.steps=1", "--config.train.eval_every=1", "--config.model.hidden=8",
        "--config.train.progress_bar=False", "--config.train.plot=False",
        "--config.task.options.max_train_examples=2",
        "--config.task.options.max_eval_examples=2"]


def run_cli(tmp_path, *args, prelude=""):
  """The CLI on jsb.py:rnn with a fresh TFDS cache; ``prelude`` runs first (a stub)."""
  script = textwrap.dedent(prelude) + "\nfrom lvf_jax.train import cli\ncli.run()\n"
  env = dict(os.environ, JAX_PLATFORMS="cpu", LVF_JAX_TFDS_DIR=str(tmp_path / "tfds"))
  return subprocess.run(
      [sys.executable, "-c", script, "--config=configs/jsb.py:rnn",
       f"--workdir={tmp_path / 'run'}", *TINY, *args],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def error_lines(result):
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  assert "Downloading and preparing dataset" not in result.stdout + result.stderr
  return [l for l in result.stderr.splitlines() if l.startswith("lvf_jax: error:")]


@needs_music
def test_cli_reports_a_missing_raw_file_in_one_line(tmp_path):
  (tmp_path / "raw").mkdir()
  r = run_cli(tmp_path, f"--config.task.options.data_dir={tmp_path / 'raw'}")
  assert r.returncode == 2
  (line,) = error_lines(r)
  assert "expected file not found" in line and str(tmp_path / "raw" / "polyphonic") in line
  assert readers.MUSIC_PICKLES["jsb"][0][1] in line and "how to obtain it" in line
  assert not (tmp_path / "run" / "checkpoints").exists()


@needs_music
def test_cli_reports_a_corrupt_raw_file_in_one_line(tmp_path):
  target = tmp_path / "raw" / JSB_PICKLE
  target.parent.mkdir(parents=True)
  good = (RAW / JSB_PICKLE).read_bytes()
  target.write_bytes(good[:len(good) // 2])  # truncated
  r = run_cli(tmp_path, f"--config.task.options.data_dir={tmp_path / 'raw'}")
  assert r.returncode == 2
  (line,) = error_lines(r)
  assert "checksum mismatch" in line and str(target) in line
  assert readers.MUSIC_PICKLES["jsb"][0][1] in line and paths.sha256_file(target) in line


@needs_music
def test_a_split_without_examples_is_a_data_error(tmp_path):
  with open(RAW / JSB_PICKLE, "rb") as f:
    sets = pickle.load(f)
  sets["valid"] = []
  target = tmp_path / "raw" / JSB_PICKLE
  target.parent.mkdir(parents=True)
  with open(target, "wb") as f:
    pickle.dump(sets, f)
  with pytest.raises(paths.CorruptDataError, match=r"hold no examples of split 'valid'"):
    data.load("jsb", "train", data_dir=tmp_path / "raw", tfds_dir=tmp_path / "tfds",
              verify_checksums=False)
  assert not list((tmp_path / "tfds").rglob("*.array_record*"))  # nothing half-written


@needs_music
def test_cli_download_flag_fetches_a_missing_raw_file(tmp_path):
  pytest.importorskip("scipy")
  (tmp_path / "raw").mkdir()
  stub = f"""
      import tensorflow_datasets as tfds
      def download(self, url):
        print("stub download", url)
        return {str(RAW / readers.MUSIC_MAT['jsb'][0])!r}
      tfds.download.DownloadManager.download = download
  """
  raw = f"--config.task.options.data_dir={tmp_path / 'raw'}"
  r = run_cli(tmp_path, raw, prelude=stub)
  assert r.returncode == 2 and "stub download" not in r.stdout  # not without --download
  r = run_cli(tmp_path, raw, "--download", prelude=stub)
  assert r.returncode == 0, r.stderr[-3000:]
  assert "stub download " + readers.MUSIC_MAT_URL + "JSB_Chorales.mat" in r.stdout
  assert "lvf_jax: preparing lvf_polyphonic/jsb once from the raw files" in r.stderr
  assert (tmp_path / "run" / "summary.json").exists()


def test_download_sets_the_option_of_dataset_configs_only():
  from lvf_jax.train import config as config_lib  # pylint: disable=g-import-not-at-top
  import runpy  # pylint: disable=g-import-not-at-top
  jsb = runpy.run_path(os.path.join(ROOT, "configs", "jsb.py"))["get_config"]("rnn")
  assert jsb.task.options.download is False
  assert cli.allow_download(jsb) and jsb.task.options.download is True
  copy = config_lib.make_config("copy", {"T": 5}, "rnn", 4)
  assert not cli.allow_download(copy) and "download" not in copy.task.options
