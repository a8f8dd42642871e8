"""MuseData (Boulanger-Lewandowski et al. 2012, arXiv:1206.6392):
``--config=configs/musedata.py:<model>``.

As ``configs/jsb.py`` (frame NLL of 88-note piano-rolls, one sequence per update, 100
epochs, the rate halved every 20) with lvfRNN Table 5's MuseData row: kappa 300, 3 layers,
tanh, Adam 1e-3, lr decay 0.5, clip 20, dropout 0.2, tau 3, lambda 0, and the vector field
trained at ``lr_vector_field = 3e-5`` (the JSB deviation scaled by tau: the Euler map moves
with ``tau * D_V``; at epoch 2, validation NLL 8.55 against 8.86 with 1e-4).
``lvf_literal``: Table 5 as printed. Other models: one layer at the same 368,338-parameter
budget.

Training minimises the frame-weighted NLL (``train_nll='frame_weighted'``), the average that
model selection and the test report: the evaluation of Boulanger-Lewandowski et al. 2012
(arXiv:1206.6392) that Table 3's music rows follow, as in the TCN reference code (Bai, Kolter,
Koltun 2018, arXiv:1803.01271), which sums each piece's NLL over its frames for the update
and divides the split's summed NLL by its frame count.
"""

import os
import runpy

_JSB = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "jsb.py"))

DATASET = "musedata"
NUM_TRAIN = 524
PRESETS = _JSB["presets"](NUM_TRAIN, lvf_lr=1e-3, lvf_clip=20.0, lvf_dropout=0.2, lvf_tau=3.0,
                          lvf_field_lr=3e-5)
TRAIN = _JSB["train_budget"](NUM_TRAIN)


def get_config(model: str = "lvf"):
  options = dict(_JSB["OPTIONS"], train_nll="frame_weighted")  # TCN reference code
  return _JSB["dataset_config"](DATASET, model, PRESETS, options=options, train=TRAIN)
