"""The few error types nsys-diagnose raises; the CLI turns each into one line and exit code 2."""


class DiagnoseError(Exception):
    """Base of every error meant for the user (one line, no traceback)."""


class InputError(DiagnoseError):
    """The input file is missing, unreadable, or not an nsys SQLite export."""

    def __init__(self, path: object, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


class RuleSpecError(DiagnoseError):
    """A rule's YAML or SQL is invalid; names the file and, when known, the line."""

    def __init__(self, path: object, problem: str, line: int | None = None):
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {problem}")
        self.path = str(path)
        self.line = line


class UsageError(DiagnoseError):
    """A command-line option is malformed (e.g. --set without '=')."""
