"""experiments/parenthesis_metric.py: the minima of a loss history under each reading of NC-GRU
Table 1's "minimum attained loss", and the page written from its records alone."""

import numpy as np

from experiments import parenthesis_metric as pm


def test_window_minima_are_the_smallest_means_of_consecutive_batches():
  rng = np.random.default_rng(0)
  losses = rng.uniform(0.5, 1.5, size=1003)
  got = pm.window_minima(losses, windows=(1, 10, 100))
  assert got["1"] == losses.min()
  for w in (10, 100):  # a loop over the non-overlapping windows, the last partial one dropped
    means = [losses[i:i + w].mean() for i in range(0, len(losses) - w + 1, w)]
    assert got[str(w)] == min(means)
  assert got["1"] <= got["10"] <= got["100"]


def test_the_page_comes_from_the_records():
  run = {"row": "parenthesis-ncgru-uc-t100", "paper": 0.286e-3, "steps": 10000,
         "minima": {"1": 0.0002, "10": 0.0019, "100": 0.004}, "command": "c", "commit": "abc",
         "machine": "m", "date": "d"}
  page = pm.page([run])
  assert "| parenthesis-ncgru-uc-t100 | 0.000286 | 0.0002 | 0.0019 | 0.004 | 0.70, 6.64 |" in page
