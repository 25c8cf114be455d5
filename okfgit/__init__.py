"""okfgit: a Git-native manager for OKF knowledge bases."""

__version__ = "0.1.0"
TOOL = f"okfgit {__version__}"
