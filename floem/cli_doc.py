"""docs/cli.md, generated from the ``floem`` command's argument parser so that it cannot
drift from it: ``python -m floem.cli_doc > docs/cli.md`` (tests/test_cli.py checks that
the file is current)."""
from __future__ import annotations

import argparse
import os

from floem.cli import EXAMPLES, EXIT_STATUSES, build_parser, default_note

#: The width the usage lines are wrapped to (whatever the terminal).
COLUMNS = 92


def _subcommands(parser: argparse.ArgumentParser) -> tuple[dict[str, argparse.ArgumentParser],
                                                             dict[str, str]]:
    """The subcommands' parsers and one-line helps, in the order they were added."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices), {a.dest: a.help or "" for a in action._choices_actions}


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(str(c) for c in action.choices) + "}"
    return action.dest if not action.option_strings else action.dest.upper()


def _invocation(action: argparse.Action) -> str:
    """How an argument is written, e.g. ``-o DIR, --out DIR`` or ``--pcap-timing [FACTOR]``."""
    m = _metavar(action)
    forms: dict[int | str | None, str] = {None: m, "?": f"[{m}]", "*": f"[{m} ...]",
                                          "+": f"{m} [{m} ...]"}
    value = forms.get(action.nargs, m)
    if not action.option_strings:
        return value
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    return ", ".join(f"{o} {value}" for o in action.option_strings)


def _meaning(action: argparse.Action) -> str:
    text = ((action.help or "") + default_note(action)).replace("|", "\\|")
    if isinstance(action, argparse._AppendAction):
        text += "; may be given several times"
    return text


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _table(actions: list[argparse.Action]) -> list[str]:
    rows = ["| argument | meaning |", "| --- | --- |"]
    rows += [f"| `{_invocation(a)}` | {_meaning(a)} |" for a in actions
             if not isinstance(a, argparse._HelpAction)]
    return rows


def markdown(parser: argparse.ArgumentParser | None = None) -> str:
    """The page: every subcommand with its usage, arguments and example, and the exit
    statuses."""
    parser = parser or build_parser()
    commands, helps = _subcommands(parser)
    description = (parser.description or "").replace("``", "`")
    out = ["# The `floem` command", "",
           "<!-- Generated from floem/cli.py by `python -m floem.cli_doc > docs/cli.md`; "
           "tests/test_cli.py checks that it is current. Do not edit by hand. -->", "",
           f"{_sentence(description)} `floem --version` prints the "
           "version, "
           "`python -m floem` is the same command, and every subcommand's `--help` ends with "
           "an example. The language and what each command does in detail: "
           "[reference.md](reference.md#command-line).", "",
           "| command | what it does |", "| --- | --- |"]
    out += [f"| [`floem {name}`](#floem-{name}) | {helps[name]} |" for name in commands]
    out += ["", "## Exit status", "", "| status | meaning |", "| --- | --- |"]
    out += [f"| {status} | {meaning} |" for status, meaning in EXIT_STATUSES]
    out += ["", "## Errors and warnings", "",
            "An error with a place in a file is printed as compilers print theirs, which "
            "editors parse: `FILE:LINE: error: MESSAGE` (`FILE: error: MESSAGE` without a "
            "line); one without is `floem: error: MESSAGE`. Independent mistakes found by "
            "one check (every wrongly typed connection, every body's misuse of its ports, "
            "...) are reported together, one a line in the order of the file, up to 20 "
            "(then `floem: note: N more errors not shown`). Warnings are "
            "`FILE:LINE: warning: MESSAGE` (gcc's with their column: "
            "`FILE:LINE:COL: warning: C compiler: MESSAGE`) or `floem: warning: MESSAGE`. "
            "The C runtime of a program reports its own errors as "
            "`floem: net pcap: MESSAGE` and the like."]
    for name, sub in commands.items():
        out += ["", f"## `floem {name}`", "", _sentence(sub.description or helps[name]), "", "```",
                sub.format_usage().strip(), "```", ""]
        out += _table(sub._actions)
        heading = "Examples" if sum(not ln.startswith(" ")
                                    for ln in EXAMPLES[name].split("\n")) > 1 else "Example"
        out += ["", f"{heading}:", "", "```", EXAMPLES[name], "```"]
    return "\n".join(out) + "\n"


def main() -> None:
    """Print the page (the usage lines wrapped to `COLUMNS`, whatever the terminal)."""
    os.environ["COLUMNS"] = str(COLUMNS)
    print(markdown(), end="")


if __name__ == "__main__":
    main()
