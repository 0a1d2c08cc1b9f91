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


class NoSpaceError(DiagnoseError):
    """A folder nsys-diagnose writes to (the cache, a temporary folder) is full: the export is not
    to blame, and an analysis can go on without the cache."""

    def __init__(self, folder: object, problem: str):
        super().__init__(f"{folder}: {problem}")
        self.folder = str(folder)
        self.problem = problem


NO_SPACE = ("No space left on device", "Disk quota exceeded")


def is_no_space(e: BaseException) -> bool:
    """An OSError (ENOSPC, EDQUOT) or a DuckDB error whose message says the disk is full."""
    import errno

    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return any(words in str(e) for words in NO_SPACE)


def is_interrupted(e: BaseException) -> bool:
    """DuckDB's form of a Ctrl-C that arrives while it runs a query on the main thread: it stops the
    query and raises this error in place of KeyboardInterrupt."""
    return type(e) is RuntimeError and str(e) == "Query interrupted"
