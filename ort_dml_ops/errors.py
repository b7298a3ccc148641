"""One exception type for user mistakes: the CLI prints it as one line, never a traceback."""


class UserError(Exception):
    """A problem with what the user handed us (a path, a model, an argument)."""
