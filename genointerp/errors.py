"""Exceptions that the CLI turns into one clear error line and exit status 1."""


class GenointerpError(Exception):
    """A problem with the user's data or files, reported without a traceback."""


class InputError(GenointerpError):
    """Malformed, empty or inconsistent input (file, record or option value)."""


class UsageError(GenointerpError):
    """A command line that cannot be run as given (exit status 2, like click's usage errors)."""
