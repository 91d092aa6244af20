"""Reads SenticNet's Python module (senticnet6.py) on stdin without running it: Python's own parser
(ast) and literal evaluator (ast.literal_eval) read the statements, and each assignment goes out
as one JSON line on stdout for `cargo xtask fetch senticnet` (xtask/src/senticnet.rs) to convert:

  {"name": "senticnet", "line": 3, "column": 1, "key": "ice_cream", "values": ["0.8", ...]}
      name[key] = [values], or one entry of a dict display (its line is the key's)
  {"name": "senticnet", "line": 2, "column": 1, "rebind": true}
      name = {...}: the variable is bound to a new dict (its entries follow)
  {"error": "...", "line": 5, "column": 9}
      the first problem; nothing follows it

Numbers among the values are written as Python writes them (repr). The module is parsed a few
thousand lines at a time, cut only where the part before parses on its own (a statement boundary),
so that memory stays small on the real file's 200,000 lines.
"""

import ast
import json
import sys

CHUNK_LINES = 4096


class Problem(Exception):
    def __init__(self, message, line, column):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


def at(node, offset, message):
    return Problem(message, node.lineno + offset, node.col_offset + 1)


def emit(record):
    sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")


def values(node, offset):
    if not isinstance(node, ast.List):
        raise at(node, offset, "expected a list of values, found " + type(node).__name__)
    out = []
    for element in node.elts:
        try:
            value = ast.literal_eval(element)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise at(element, offset, "expected a string or a number")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise at(element, offset, "expected a string or a number, found " + type(value).__name__)
        out.append(value if isinstance(value, str) else repr(value))
    return out


def key(node, offset):
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = None
    if not isinstance(value, str):
        raise at(node, offset, "expected a quoted string as the key")
    return value


def statement(stmt, offset):
    """One top-level statement: `name[key] = [...]` or `name = {key: [...], ...}`."""
    target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
        name = target.value.id
        emit({"name": name, "line": stmt.lineno + offset, "column": stmt.col_offset + 1,
              "key": key(target.slice, offset), "values": values(stmt.value, offset)})
    elif isinstance(target, ast.Name) and isinstance(stmt.value, ast.Dict):
        name = target.id
        emit({"name": name, "line": stmt.lineno + offset, "column": stmt.col_offset + 1,
              "rebind": True})
        for k, v in zip(stmt.value.keys, stmt.value.values):
            if k is None:
                raise at(v, offset, "`**` in the dict")
            emit({"name": name, "line": k.lineno + offset, "column": stmt.col_offset + 1,
                  "key": key(k, offset), "values": values(v, offset)})
    else:
        raise at(stmt, offset, "expected a statement like `senticnet['concept'] = [...]`")


def lines_of(data):
    """The source's lines with their newlines, as Python reads a file: UTF-8, a BOM dropped,
    universal newlines."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        good = data[: e.start]
        line = good.count(b"\n") + 1
        column = len(good[good.rfind(b"\n") + 1 :].decode("utf-8-sig", "replace")) + 1
        raise Problem("invalid UTF-8", line, column)
    if "\0" in text:
        line = text[: text.index("\0")].count("\n") + 1
        raise Problem("a NUL byte: not a Python source file", line, 1)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.splitlines(keepends=True) if "\n" in text else ([text] if text else [])


def parse(lines, start, end, last):
    """The statements of lines[start:end], or None when the cut at `end` splits one (and more
    lines follow)."""
    try:
        return ast.parse("".join(lines[start:end])).body
    except SyntaxError as e:
        if not last:
            return None
        line = start + (e.lineno or 1)
        raise Problem("invalid Python: " + e.msg, line, e.offset or 1)


def main():
    lines = lines_of(sys.stdin.buffer.read())
    start = 0
    while start < len(lines):
        size = CHUNK_LINES
        while True:
            end = min(start + size, len(lines))
            # Only cut before a line that opens at column 0 with a name: a statement may start there.
            while end < len(lines) and not (lines[end][:1].isalpha() or lines[end][:1] == "_"):
                end += 1
            body = parse(lines, start, end, end == len(lines))
            if body is not None:
                break
            size *= 2
        for stmt in body:
            statement(stmt, start)
        start = end


if __name__ == "__main__":
    try:
        main()
    except Problem as p:
        emit({"error": p.message, "line": p.line, "column": p.column})
