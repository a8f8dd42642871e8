"""Test configuration: strict dtype and rank promotion, deterministic hypothesis profile.

These settings apply to the test process only; importing lvf_jax never changes them. The raw
data directory is ``$LVF_JAX_DATA_DIR`` when set, else a ``shared/data`` folder beside the
repository when there is one (the data tests skip, saying why, where neither exists).
"""

import os
import pathlib

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
_SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
if not os.environ.get("LVF_JAX_DATA_DIR") and _SHARED.is_dir():
  os.environ["LVF_JAX_DATA_DIR"] = str(_SHARED)

import jax  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

settings.register_profile(
    "lvf", max_examples=25, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "lvf"))


@pytest.fixture
def x64():
  """Runs the test body with 64-bit types enabled (for gradient checks and tight tolerances)."""
  with jax.enable_x64(True):
    yield
