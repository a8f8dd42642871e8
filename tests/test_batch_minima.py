"""experiments/batch_minima.py: the minima of a loss history under each reading of "minimum
attained loss", and a run that logs every batch."""

import numpy as np

from experiments import batch_minima


def test_window_minima_are_the_smallest_means_of_consecutive_batches():
  rng = np.random.default_rng(0)
  losses = rng.uniform(0.5, 1.5, size=1003)
  got = batch_minima.window_minima(losses, windows=(1, 10, 100))
  assert got["1"] == losses.min()
  for w in (10, 100):  # a loop over the non-overlapping windows, the last partial one dropped
    means = [losses[i:i + w].mean() for i in range(0, len(losses) - w + 1, w)]
    assert got[str(w)] == min(means)
  assert got["1"] <= got["10"] <= got["100"]


def test_window_means_are_the_means_of_consecutive_batches():
  losses = np.arange(1, 26, dtype=np.float64)  # 25 losses: two windows of 10, 5 dropped
  got = batch_minima.window_means(losses, 10)
  # float64 means of ten terms in either summation order: within 10 eps64 = 2.2e-15
  np.testing.assert_allclose(got, [np.mean(losses[:10]), np.mean(losses[10:20])], rtol=1e-14)
  assert batch_minima.window_means(losses[:9], 10).shape == (0,)


def test_train_every_batch_returns_one_loss_per_step(tmp_path):
  from experiments.reproduce import rows, runner  # pylint: disable=g-import-not-at-top
  c = runner.row_config(rows.get("ncgru-t1").row("parenthesis-gru-t100"), steps=3, smoke=True)
  losses = batch_minima.train_every_batch(c, str(tmp_path / "run"))
  assert c.train.log_every == 1
  assert len(losses) == 3 and all(np.isfinite(losses))


def test_runs_round_trip_and_start_empty(tmp_path):
  path = str(tmp_path / "sub" / "runs.json")
  assert batch_minima.load_runs(path) == []
  runs = [{"row": "r", "minima": {"1": 0.5}}]
  batch_minima.save_runs(path, runs)
  assert batch_minima.load_runs(path) == runs


def test_settings_lines_name_the_section_and_the_code():
  lines = batch_minima.settings_lines("Sec. 9", "owner/repo at abc", (("a", "b", "c", "d"),))
  assert lines == ["| setting | paper (Sec. 9) | authors' code (owner/repo at abc) | harness |",
                   "|---|---|---|---|", "| a | b | c | d |"]
