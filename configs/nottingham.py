"""Nottingham (Boulanger-Lewandowski et al. 2012, arXiv:1206.6392):
``--config=configs/nottingham.py:<model>``.

As ``configs/jsb.py`` (frame NLL of 88-note piano-rolls, batch 8, 100 epochs). The papers'
tables do not cover Nottingham: every model uses its JSB settings (lvfRNN Table 5's JSB row;
other models one layer at the 368,338-parameter budget).
"""

import os
import runpy

_JSB = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "jsb.py"))

DATASET = "nottingham"
NUM_TRAIN = 694
PRESETS = _JSB["presets"](NUM_TRAIN)
TRAIN = _JSB["train_budget"](NUM_TRAIN)


def get_config(model: str = "lvf"):
  return _JSB["dataset_config"](DATASET, model, PRESETS, options=_JSB["OPTIONS"], train=TRAIN)
