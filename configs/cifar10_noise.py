"""Noise-padded CIFAR-10 (Chang et al. 2019, arXiv:1902.09689, Sec. 5):
``--config=configs/cifar10_noise.py:<model>``.

32 rows of 96 features (one image row per step), then 968 steps of N(0, 1) noise (T = 1000),
reproducible per example (``--config.task.options.noise_seed``). Otherwise as
``configs/cifar10.py`` (AntisymmetricRNN Table 2: 256 units; LSTM 128; other models at the
60,042-parameter budget of AntisymmetricRNN-256 with 96 inputs).
"""

import os
import runpy

_CIFAR = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cifar10.py"))

DATASET = "cifar10_noise"
PRESETS = _CIFAR["presets"](96)


def get_config(model: str = "antisymmetric"):
  return _CIFAR["dataset_config"](DATASET, model, PRESETS, options=_CIFAR["OPTIONS"],
                                  train=_CIFAR["TRAIN"])
