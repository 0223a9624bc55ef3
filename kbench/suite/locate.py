"""The line of a key in a suite's TOML text, so an error can say `suite.toml:14 [tasks[1].settings.limit]`.

Python's tomllib parses without positions, so the line is found in the text: the n-th
`[[tasks]]` header opens entry n, and the key is the first `key =` line (or `[tasks.settings]`
sub-table header) inside that entry. Suites are short, hand-written files, which this covers; a
key it cannot place gets the line of its entry (or none), never a wrong key name.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")


def key_line(text: str, path: tuple) -> int | None:
    """The 1-based line of `path` (("tasks", 1, "settings", "limit")) in the TOML `text`."""
    lines = text.splitlines()
    if not path:
        return None
    table, rest = str(path[0]), list(path[1:])
    start, stop = 0, len(lines)
    if rest and isinstance(rest[0], int):  # an array of tables: the n-th [[table]] header
        headers = [i for i, line in enumerate(lines) if _header(line) == (table, True)]
        if rest[0] >= len(headers):
            return headers[-1] + 1 if headers else None
        start = headers[rest[0]]
        stop = next((i for i in range(start + 1, len(lines)) if _opens_other_entry(lines[i], table)), len(lines))
        rest = rest[1:]
    else:
        found = next((i for i, line in enumerate(lines) if _header(line) == (table, False)), None)
        if found is None:
            return _assignment(lines, 0, len(lines), table)
        start = found
        stop = next((i for i in range(start + 1, len(lines)) if _header(lines[i]) is not None), len(lines))
    best = start
    prefix = table
    for key in (str(k) for k in rest if not isinstance(k, int)):
        prefix = f"{prefix}.{key}"
        sub = next((i for i in range(best, stop) if _header(lines[i]) == (prefix, False)), None)
        where = sub if sub is not None else _assignment(lines, best, stop, key)
        if where is None:
            break
        best = where - 1 if sub is None else where
    return best + 1


def _header(line: str) -> tuple[str, bool] | None:
    """(table name, is an array-of-tables header) of a header line, else None."""
    match = _HEADER.match(line)
    if match is None or "=" in line.split("#", 1)[0]:
        return None
    return match.group(1).replace('"', "").replace("'", ""), line.strip().startswith("[[")


def _opens_other_entry(line: str, table: str) -> bool:
    header = _header(line)
    return header is not None and not (header[0].startswith(table + ".") and not header[1])


def _assignment(lines: list[str], start: int, stop: int, key: str) -> int | None:
    pattern = re.compile(rf"(^|[\s{{,]){re.escape(key)}\s*=")
    return next((i + 1 for i in range(start, stop) if pattern.search(lines[i].split("#", 1)[0])), None)
