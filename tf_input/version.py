"""The one version string of tf_input."""

__version__ = "0.1.0.dev0"
