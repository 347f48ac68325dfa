"""Whether the files and folders that options name can be written, found before any work.

Each check leaves nothing behind (no folder made, no file written) and answers with the reason
in a few words, or ``None`` where nothing stands in the way.
"""

from __future__ import annotations

from pathlib import Path


def folder_problem(path: str) -> str | None:
    """Why ``path`` cannot be (or become) a folder to write in, found before any work and
    leaving nothing behind: a file on the way, or a nearest existing folder where no file can
    be written (no permission, a read-only mount, ``/proc``: the store's probe); ``None``
    where nothing stands in the way."""
    from adaptable.experiments.store import probe_folder

    if not path:
        return "an empty path; name a folder"
    target = Path(path)
    if target.exists() and not target.is_dir():
        return f"{path!r} is not a folder"
    folder = target
    while not folder.exists():  # the nearest folder that is there: the rest gets made in it
        folder = folder.parent
    if not folder.is_dir():
        return f"{str(folder)!r} is not a folder"
    try:
        probe_folder(folder)
    except OSError as err:
        return f"cannot write in {str(folder)!r} ({os_reason(err)})"
    return None


def unwritable(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (its folders created as needed), found before
    any work: a path that is a folder, or a folder of it that cannot be (see
    :func:`folder_problem`); ``None`` where nothing stands in the way."""
    if Path(path).is_dir():
        return f"{path!r} is a folder"
    return folder_problem(str(Path(path).parent))


def figure_problem(path: str) -> str | None:
    """Why matplotlib cannot write a figure to ``path``: its suffix names no format it writes
    (``None``: it does). Without a suffix matplotlib would add one, writing another file."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(path).suffix.lower().removeprefix(".")
    if suffix in formats:
        return None
    others = ", .".join(sorted(set(formats) - {"png"}))
    if not suffix:
        return f"the file needs a suffix naming the figure's format: .png, or one of .{others}"
    return f"matplotlib writes no format with the suffix '.{suffix}': use .png, or one of .{others}"


def os_reason(err: Exception) -> str:
    """An OSError in a few words: ``Permission denied: 'out/r.csv'`` (its text where it has no
    error number, or for another error: a figure writer's missing tool)."""
    if not isinstance(err, OSError):
        return str(err)
    if isinstance(err, FileExistsError):  # a folder to create is there, as a file
        return f"{str(err.filename)!r} is not a folder"
    if err.strerror is None:
        return str(err)
    return f"{err.strerror}: {str(err.filename)!r}" if err.filename else err.strerror


def path_collisions(outputs: dict[str, str | None], inputs: dict[str, str | None]) -> list[str]:
    """One problem for each output that names the same file as another output or as an input
    (after ``~``, links and ``..`` are resolved): the command would write one over the other.

    Args:
        outputs: option (as the user typed it, e.g. ``"--report"``) -> the path it names, or
            ``None`` where the option is not given.
        inputs: the same for the files the command reads.

    Returns:
        the problems, each naming both options and the path; empty where none collide.

    Example:
        >>> path_collisions({"--report": "a.csv", "--figure": "./a.csv"}, {"FILE": "b"})
        ['--figure ./a.csv: the same file as --report; name another']
    """
    import os

    seen: dict[str, str] = {}
    for option, path in inputs.items():
        if path:
            seen.setdefault(os.path.realpath(os.path.expanduser(path)), option)
    problems = []
    for option, path in outputs.items():
        if not path:
            continue
        resolved = os.path.realpath(os.path.expanduser(path))
        if resolved in seen:
            what = "the file read as" if seen[resolved] in inputs else "the same file as"
            problems.append(f"{option} {path}: {what} {seen[resolved]}; name another")
        else:
            seen[resolved] = option
    return problems
