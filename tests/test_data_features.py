"""Speech features (Wisdom et al. 2016 pipeline) and task losses against independent code.

STFT / resampling are checked against SciPy; the music NLL against a NumPy double loop over a
hand-made piano roll written from the definition of Boulanger-Lewandowski et al. 2012.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lvf_jax import data
from lvf_jax.data import features, paths, readers
import tolerances as tol

signal = pytest.importorskip("scipy.signal")

RAW = paths.raw_data_dir()


def _scipy_log_stft(x):
  """Reference: scipy.signal.stft without centring, zero-padded tail, unnormalised."""
  win = signal.get_window("hann", 256)
  _, _, z = signal.stft(x, fs=8000, window=win, nperseg=256, noverlap=128, detrend=False,
                        return_onesided=True, boundary=None, padded=True, scaling="spectrum")
  z = z.T * win.sum()  # undo scipy's 1/sum(window) "spectrum" scaling
  return z, 10.0 * np.log10(1e-5 + np.abs(z) ** 2)


@pytest.mark.parametrize("n", [256, 257, 1000, 1144, 4096])
def test_stft_matches_scipy(n):
  x = np.random.default_rng(n).standard_normal(n)
  z_ref, log_ref = _scipy_log_stft(x)
  z = features.stft(x)
  assert z.shape == (1 + math.ceil((n - 256) / 128), 129)
  # float64 256-point FFTs by two codes; a frame's sum |w x| is ~100 (|z| <= 33), so 100
  # times the rounding of a 256-term chain: well within F64_CONDITIONED's condition 1e3
  np.testing.assert_allclose(z, z_ref, **tol.F64_CONDITIONED)
  # log_magnitude rounds a float64 log to float32: half an ulp, 6e-8 relative
  np.testing.assert_allclose(features.log_magnitude(z), log_ref, **tol.F32_SHORT)


def test_stft_frame_is_windowed_dft():
  x = np.random.default_rng(0).standard_normal(600)
  k, t = 17, 2
  n = np.arange(256)
  w = 0.5 - 0.5 * np.cos(2 * np.pi * n / 256)
  expected = np.sum(w * x[t * 128:t * 128 + 256] * np.exp(-2j * np.pi * k * n / 256))
  # float64 256-term sum against an FFT; sum |terms| / |X[t, k]| = 13
  np.testing.assert_allclose(features.stft(x)[t, k], expected, rtol=tol.F64_CONDITIONED["rtol"])


def test_decimate_matches_scipy_resample_poly():
  x = np.random.default_rng(1).standard_normal(3001)
  # float64 41-tap filters of |x| <= 3.8, direct against polyphase
  np.testing.assert_allclose(features.decimate_2x(x), signal.resample_poly(x, 1, 2),
                             atol=tol.F64["atol"])


@pytest.mark.skipif(not (RAW / "fsdd").is_dir(), reason=f"FSDD not found under {RAW}")
def test_fsdd_features_against_scipy_pipeline():
  wavfile = pytest.importorskip("scipy.io.wavfile")
  path = RAW / "fsdd" / "recordings" / "7_jackson_3.wav"
  rate, x = wavfile.read(path)
  assert rate == 8000
  _, log_ref = _scipy_log_stft(x.astype(np.float64) / 32768.0)
  ours, our_rate = readers.read_wav(path)
  feats = features.waveform_to_features(ours, our_rate)
  assert feats.dtype == np.float32 and feats.shape[1] == 129
  # the same float64 pipeline on the same int16 samples, rounded to float32 (half an ulp)
  np.testing.assert_allclose(feats, log_ref, **tol.F32_SHORT)


def test_sphere_reader_and_16k_pipeline(tmp_path):
  x = (1000 * np.sin(np.arange(4000) * 0.05)).astype("<i2")
  path = tmp_path / "SI1.WAV"
  path.write_bytes(_sphere_bytes(x))
  y, rate = readers.read_wav(path)
  assert rate == 16000
  np.testing.assert_array_equal(y, x)
  ref = _scipy_log_stft(signal.resample_poly(x / 32768.0, 1, 2))[1]
  # float64 decimation and STFT by two codes (1e-15 apart), rounded to float32 (half an ulp)
  np.testing.assert_allclose(features.waveform_to_features(y, rate), ref, **tol.F32_SHORT)


def _sphere_bytes(x):
  fields = ("NIST_1A\n   1024\nsample_count -i {n}\nsample_rate -i 16000\nchannel_count -i 1\n"
            "sample_byte_format -s2 01\nsample_n_bytes -i 2\nsample_coding -s3 pcm\n"
            "end_head\n").format(n=x.shape[0]).encode()
  return fields + b" " * (1024 - len(fields)) + x.astype("<i2").tobytes()


# ---------------------------------------------------------------------------------------------
# Music NLL on a hand-made piano roll

def _nll_loop(p, y, lengths):
  total, frames = 0.0, 0
  for b in range(p.shape[0]):
    for t in range(lengths[b]):
      frames += 1
      for k in range(88):
        total -= y[b, t, k] * math.log(p[b, t, k]) + (1 - y[b, t, k]) * math.log(1 - p[b, t, k])
  return total / frames


def test_music_nll_on_hand_made_roll(x64):
  # Two pieces: a C-major chord held then released (4 steps), and a 3-step melody.
  piece_a = readers.notes_to_roll([(60, 64, 67), (60, 64, 67), (62,), ()])
  piece_b = readers.notes_to_roll([(72,), (74,), (76,)])
  transform = data.datasets._next_step_transform("roll", 88, 1, np.float64)
  batch = transform([{"roll": piece_a}, {"roll": piece_b}], np.arange(2))
  assert batch["lengths"].tolist() == [3, 2]
  np.testing.assert_array_equal(batch["targets"][0, :3], piece_a[1:])
  np.testing.assert_array_equal(batch["inputs"][1, :2], piece_b[:-1])
  assert batch["mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
  logits = np.random.default_rng(0).normal(size=batch["targets"].shape)
  p = 1.0 / (1.0 + np.exp(-logits))
  expected = _nll_loop(p, batch["targets"], batch["lengths"])
  got = data.music_nll(jnp.asarray(logits), jnp.asarray(batch["targets"]),
                       jnp.asarray(batch["mask"]))
  # float64: 5 frames x 88 positive terms, a few roundings each
  np.testing.assert_allclose(float(got), expected, rtol=tol.F64["rtol"])
  got_p = data.music_nll_from_probs(jnp.asarray(p), jnp.asarray(batch["targets"]),
                                    jnp.asarray(batch["mask"]))
  # the same sum; the clip to [1e-7, 1 - 1e-7] is inactive (p in [0.02, 0.96])
  np.testing.assert_allclose(float(got_p), expected, rtol=tol.F64["rtol"])
  # padding contributes nothing, whatever its values
  logits2 = logits.copy()
  logits2[1, 2] = 1e3
  got2 = data.music_nll(jnp.asarray(logits2), jnp.asarray(batch["targets"]),
                        jnp.asarray(batch["mask"]))
  np.testing.assert_allclose(float(got2), expected, rtol=tol.F64["rtol"])


def test_music_nll_per_sequence_on_hand_made_rolls(x64):
  pieces = [readers.notes_to_roll([(60, 64, 67), (60, 64, 67), (62,), ()]),
            readers.notes_to_roll([(72,), (74,), (76,)]),
            readers.notes_to_roll([(50,), (52, 55)])]
  transform = data.datasets._next_step_transform("roll", 88, 1, np.float64)
  batch = transform([{"roll": r} for r in pieces], np.arange(3))
  logits = np.random.default_rng(1).normal(size=batch["targets"].shape)
  logits[1, 2:] = 1e3  # padding contributes nothing
  p = 1.0 / (1.0 + np.exp(-logits))
  expected = [_nll_loop(p[b:b + 1], batch["targets"][b:b + 1], batch["lengths"][b:b + 1])
              for b in range(3)]
  args = (jnp.asarray(logits), jnp.asarray(batch["targets"]), jnp.asarray(batch["mask"]))
  got = data.music_nll_per_sequence(*args)
  # float64: <= 3 frames x 88 positive terms per piece
  np.testing.assert_allclose(np.asarray(got), expected, rtol=tol.F64["rtol"])
  # weighted by the frame counts, the pieces' NLLs average to the batch's frame NLL
  np.testing.assert_allclose(np.average(got, weights=batch["lengths"]),
                             float(data.music_nll(*args)), rtol=tol.F64["rtol"])
  assert float(data.music_nll_per_sequence(*args[:2], jnp.zeros_like(args[2]))[0]) == 0.0
  with pytest.raises(ValueError, match="music_nll_per_sequence"):
    data.music_nll_per_sequence(args[0][0], args[1][0], args[2][0])


def test_music_nll_perfect_and_uniform():
  y = jnp.asarray(readers.notes_to_roll([(60,), (61, 62)]), jnp.float32)[None]
  mask = jnp.ones((1, 2), jnp.float32)
  uniform = data.music_nll(jnp.zeros((1, 2, 88), jnp.float32), y, mask)
  # float32 sum of 2 frames x 88 terms log 2: a 176-term chain
  np.testing.assert_allclose(float(uniform), 88 * math.log(2.0), rtol=tol.F32["rtol"])
  sharp = data.music_nll(60.0 * (2.0 * y - 1.0), y, mask)
  assert float(sharp) < 1e-20 * 88 + 1e-6
  assert jax.jit(data.music_nll)(jnp.zeros((1, 2, 88)), y, mask).dtype == jnp.float32
  with pytest.raises(ValueError, match="music_nll"):
    data.music_nll(jnp.zeros((1, 2, 88)), y, jnp.ones((1, 3)))


def test_music_nll_gradient_is_sigmoid_minus_target():
  y = jnp.asarray(readers.notes_to_roll([(60,), (61, 62), ()]), jnp.float32)[None]
  mask = jnp.asarray([[1.0, 1.0, 0.0]], jnp.float32)
  logits = jnp.asarray(np.random.default_rng(3).normal(size=(1, 3, 88)), jnp.float32)
  g = jax.grad(data.music_nll)(logits, y, mask)
  expected = (jax.nn.sigmoid(logits) - y) * mask[..., None] / 2.0
  # float32, autodiff's and the closed form's few roundings of one entry of size <= 1
  np.testing.assert_allclose(g, expected, atol=tol.F32_SHORT["atol"])


@settings(max_examples=8)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 3),
       st.sampled_from(["element", "frame"]))
def test_masked_mse_against_numpy(b, t, f, per):
  rng = np.random.default_rng(b * 100 + t * 10 + f)
  pred, target = rng.normal(size=(2, b, t, f)).astype(np.float32)
  mask = (rng.random((b, t)) < 0.7).astype(np.float32)
  mask[0, 0] = 1.0
  sel = mask.astype(bool)
  se = ((pred - target) ** 2)[sel]
  expected = se.mean() if per == "element" else se.sum(-1).mean()
  got = data.masked_mse(jnp.asarray(pred), jnp.asarray(target), jnp.asarray(mask), per=per)
  # float32 sums of <= 36 positive terms, NumPy against XLA
  np.testing.assert_allclose(float(got), expected, rtol=tol.F32["rtol"])


def test_masked_cross_entropy_bpc_and_perplexity():
  rng = np.random.default_rng(0)
  logits = rng.normal(size=(2, 5, 7)).astype(np.float32)
  labels = rng.integers(0, 7, size=(2, 5)).astype(np.int32)
  mask = np.ones((2, 5), np.float32)
  mask[1, 3:] = 0
  logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  nll = -np.take_along_axis(logp, labels[..., None], -1)[..., 0]
  expected = (nll * mask).sum() / mask.sum()
  ce = data.masked_cross_entropy(jnp.asarray(logits), jnp.asarray(labels), jnp.asarray(mask))
  # float32: 8 positions of 7-term log-sum-exps, NumPy against XLA (about 60 terms); the
  # perplexity's exp multiplies the relative error by ce = 2.3
  np.testing.assert_allclose(float(ce), expected, rtol=tol.F32["rtol"])
  np.testing.assert_allclose(float(data.bits_per_character(ce)), expected / math.log(2),
                             rtol=tol.F32["rtol"])
  np.testing.assert_allclose(float(data.perplexity(ce)), math.exp(expected),
                             rtol=tol.F32["rtol"])
