"""FSDD next-frame prediction, the real-speech stand-in for TIMIT: ``configs/fsdd.py:<model>``.

The TIMIT pipeline (``configs/timit.py``: 8 kHz, 129 log-magnitude bins, masked MSE) on the
Free Spoken Digit Dataset (2400 / 300 / 300 recordings, split by recording index), with
TIMIT's hyperparameters for every model (lvfRNN kappa 255 x 2 RMSprop 3e-4 clip 15 tau 2
lambda 0.2; lvfRNN Table 2's baselines at its sizes: euRNN 378, fcuRNN 256, scoRNN 425,
expRNN 425; LSTM 158; others at the 200k budget of expRNN n 425), the same input
standardisation / mean-centred predictions, batch 128, 1200 epochs.
"""

import os
import runpy

_TIMIT = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "timit.py"))

DATASET = "fsdd"
PRESETS = _TIMIT["presets"]()
TRAIN = _TIMIT["train_budget"](2400)


def get_config(model: str = "lvf"):
  return _TIMIT["dataset_config"](DATASET, model, PRESETS, options=_TIMIT["OPTIONS"],
                                  train=TRAIN)
