"""Packages of the distribution: `server/` installs as `durable_responses`, `migrations/` as
`durable_responses.migrations` (the metadata is in pyproject.toml)."""

from setuptools import find_packages, setup

PACKAGE_DIRS = {"durable_responses": "server", "durable_responses.migrations": "migrations"}

packages = [
    f"{name}.{sub}" if sub else name
    for name, folder in PACKAGE_DIRS.items()
    for sub in ["", *find_packages(folder)]
]

setup(packages=packages, package_dir=PACKAGE_DIRS)
