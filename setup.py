"""Packages of lvf_jax: ``lvf_jax`` and its subpackages, plus the shipped configs.

``configs/`` (at the repository root, where ``--config=configs/copy.py:lvf`` finds it from a
checkout) is installed as ``lvf_jax.configs`` so that an installed ``lvf-jax`` finds the
presets by file name. Everything else is in ``setup.cfg``.
"""

from setuptools import find_packages, setup

setup(packages=find_packages(include=["lvf_jax", "lvf_jax.*"]) + ["lvf_jax.configs"],
      package_dir={"lvf_jax.configs": "configs"})
