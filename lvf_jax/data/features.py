"""Speech features of the Wisdom et al. (2016) TIMIT pipeline, in NumPy.

Pipeline (Wisdom et al. 2016, arXiv:1611.00035, Sec. 5.3): waveform at 8 kHz scaled to [-1, 1)
(int16 / 32768),
STFT with a 256-sample periodic Hann window and hop 128 (no centring; the tail is zero-padded
so that every sample lies in a frame), 129 one-sided bins, log-magnitude
``10 log10(1e-5 + |X|^2)``. The model predicts frame t+1 from frames <= t (masked MSE).
"""

from __future__ import annotations

import math

import numpy as np

SAMPLE_RATE = 8000
N_FFT = 256
HOP = 128
NUM_BINS = N_FFT // 2 + 1
LOG_FLOOR = 1e-5


def hann(n: int) -> np.ndarray:
  """Periodic Hann window ``0.5 - 0.5 cos(2 pi k / n)`` (scipy.signal.get_window('hann', n))."""
  k = np.arange(n, dtype=np.float64)
  return 0.5 - 0.5 * np.cos(2.0 * np.pi * k / n)


def stft(x: np.ndarray, n_fft: int = N_FFT, hop: int = HOP) -> np.ndarray:
  """One-sided STFT ``X[t, k] = sum_n w[n] x[t*hop + n] exp(-2 pi i k n / n_fft)``.

  Args:
    x: 1-D real signal.
    n_fft: window and FFT length.
    hop: frame hop.

  Returns:
    complex128 array of shape (num_frames, n_fft // 2 + 1) with
    ``num_frames = 1 + ceil(max(len(x) - n_fft, 0) / hop)``.
  """
  x = np.asarray(x, np.float64)
  if x.ndim != 1:
    raise ValueError(f"stft: argument 'x' must be 1-D; got shape {x.shape}.")
  if n_fft <= 0 or hop <= 0:
    raise ValueError(f"stft: 'n_fft' and 'hop' must be positive; got {n_fft}, {hop}.")
  n_frames = 1 + math.ceil(max(x.shape[0] - n_fft, 0) / hop)
  padded = np.zeros((n_frames - 1) * hop + n_fft, np.float64)
  padded[:x.shape[0]] = x
  frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop]
  return np.fft.rfft(frames * hann(n_fft)[None, :], axis=-1)


def log_magnitude(spec: np.ndarray) -> np.ndarray:
  """``10 log10(1e-5 + |X|^2)`` as float32."""
  return (10.0 * np.log10(LOG_FLOOR + np.abs(spec) ** 2)).astype(np.float32)


def kaiser_lowpass_2x() -> np.ndarray:
  """41-tap FIR for 2x decimation: cutoff 0.5 Nyquist, Kaiser beta 5, unit DC gain.

  This is the filter that ``scipy.signal.resample_poly(x, 1, 2)`` designs.
  """
  half = 20
  m = np.arange(2 * half + 1, dtype=np.float64) - half
  h = 0.5 * np.sinc(0.5 * m) * np.kaiser(2 * half + 1, 5.0)
  return h / h.sum()


def decimate_2x(x: np.ndarray) -> np.ndarray:
  """Halves the sample rate (16 kHz -> 8 kHz) with :func:`kaiser_lowpass_2x` (zero-phase)."""
  x = np.asarray(x, np.float64)
  n_out = (x.shape[0] + 1) // 2
  return np.convolve(x, kaiser_lowpass_2x())[20:20 + 2 * n_out:2]


def waveform_to_features(x_int16: np.ndarray, sample_rate: int) -> np.ndarray:
  """int16 waveform at 8 or 16 kHz -> (frames, 129) float32 log-magnitude features."""
  x = np.asarray(x_int16, np.float64) / 32768.0
  if sample_rate == 16000:
    x = decimate_2x(x)
  elif sample_rate != SAMPLE_RATE:
    raise ValueError(f"waveform_to_features: argument 'sample_rate' must be 8000 or 16000; "
                     f"got {sample_rate}.")
  return log_magnitude(stft(x))
