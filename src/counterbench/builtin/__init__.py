"""The built-in studies: plug-ins on top of the core, registered through counterbench's own entry
points (``pyproject.toml``) exactly like a third-party study. The core never imports this package."""

#: the study a verb works on when none is named (the ``counterbench.defaults`` entry point)
DEFAULT_STUDY = "rupeebias"
