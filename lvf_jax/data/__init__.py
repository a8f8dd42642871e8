"""Benchmark data for lvf_jax through tensorflow-datasets, without TensorFlow.

Datasets: sequential / permuted MNIST, pixel and noise-padded CIFAR-10,
PTB (char and word level, truncated BPTT), the four polyphonic music sets, TIMIT frame
prediction (Wisdom et al. 2016 pipeline) and the same pipeline on FSDD.

Raw files are read from ``$LVF_JAX_DATA_DIR`` (default: ``~/.cache/lvf_jax/data``) and prepared
once into
TFDS's array_record format under ``$LVF_JAX_TFDS_DIR`` (default ``~/tensorflow_datasets``);
records are read with the TFDS data source and batched with NumPy.

Example::

  from lvf_jax import data
  train = data.load('jsb', 'train')
  for batch in data.batches(train, 16, seed=0, epoch=3):
    break  # batch['inputs'] (16, time, 88) piano-roll frames, with their lengths
  ptb = data.load('ptb_char', 'train')
  for chunk in data.tbptt_batches(ptb, 128, 150):
    break  # reset the state when chunk.reset, otherwise carry it over
"""

from lvf_jax._deprecation import renamed_getattr
from lvf_jax.data.features import (HOP, N_FFT, NUM_BINS, SAMPLE_RATE, decimate_2x, hann,
                                   log_magnitude, stft, waveform_to_features)
from lvf_jax.data.metrics import (bits_per_character, masked_cross_entropy, masked_mse,
                                  music_nll, music_nll_from_probs,
                                  music_nll_per_sequence, perplexity)
from lvf_jax.data.paths import (DATA_DIR_ENV, TFDS_DIR_ENV, CorruptDataError, DataError,
                                MissingDataError, raw_data_dir, tfds_data_dir)
from lvf_jax.data.datasets import (DATASETS, PERMUTATION_SEED, Dataset, TBPTTBatch, TokenStream,
                                   batch_order, batches, builder, cifar_noise,
                                   download_and_prepare, holdout_split, load, mnist_permutation,
                                   num_batches, prefetch, tbptt_batches, tbptt_layout)

__all__ = [
    "DATASETS", "DATA_DIR_ENV", "TFDS_DIR_ENV", "PERMUTATION_SEED", "HOP", "N_FFT", "NUM_BINS",
    "SAMPLE_RATE", "CorruptDataError", "DataError", "MissingDataError", "Dataset",
    "TBPTTBatch", "TokenStream", "batch_order", "batches", "bits_per_character", "builder",
    "cifar_noise", "decimate_2x", "download_and_prepare", "hann", "holdout_split", "load",
    "log_magnitude",
    "masked_cross_entropy", "masked_mse", "mnist_permutation", "music_nll",
    "music_nll_from_probs", "music_nll_per_sequence", "num_batches", "perplexity", "prefetch",
    "raw_data_dir", "stft", "tbptt_batches", "tbptt_layout", "tfds_data_dir",
    "waveform_to_features",
]

#: Names renamed after 0.1.0, reachable under their old names (with a DeprecationWarning) for
#: one release: the modules ``pipeline`` and ``builders``, and ``prepare``.
__getattr__ = renamed_getattr(__name__, globals(),
                              modules={"pipeline": "datasets", "builders": "tfds_builders"},
                              names={"prepare": "download_and_prepare"})
