"""Write the documentation's CLI reference (docs/cli/*.md) from the ``onnxdata`` parser.

    python tools/cli_pages.py            # rewrite docs/cli/ (run after changing an option)
    python tools/cli_pages.py --out DIR  # write the pages into DIR instead

One page per subcommand (its description, a synopsis, every argument with its help, the
exit codes) and an index. Everything comes from the parser that ``onnxdata`` runs
(``onnxdata.cli.main.build_parser``), so the pages say what ``--help`` says; the synopsis
and tables are written here rather than by argparse's formatter, whose layout changes with
the terminal's width and the Python version. tests/package/test_docs.py writes the pages
into a temporary folder and fails when docs/cli/ differs: never edit them by hand. A new
subcommand also needs its page in mkdocs.yml's nav (``make docs`` fails without it).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from onnxdata.cli.main import EXIT_CODES, build_parser  # noqa: E402

HEADER = "<!-- written by tools/cli_pages.py from the parser: do not edit by hand -->\n"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """``{name: (one-line help, parser)}`` in the parser's order."""
    for action in parser._actions:  # argparse keeps its subparsers as an action
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return {name: (helps.get(name, ""), p) for name, p in action.choices.items()}
    raise SystemExit("the onnxdata parser has no subcommands")


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(str(c) for c in action.choices) + "}"
    return action.dest.upper() if action.option_strings else action.dest


def _spelling(action: argparse.Action) -> str:
    """How the argument is written: ``FILE...``, ``--kind KIND``, ``--json``."""
    word = _metavar(action)
    if not action.option_strings:
        return {"+": f"{word}...", "*": f"[{word}...]", "?": f"[{word}]"}.get(
            str(action.nargs), word)
    if action.nargs == 0:
        return ", ".join(f"`{o}`" for o in action.option_strings)
    value = f"[{word}]" if action.nargs == "?" else word
    return ", ".join(f"`{o} {value}`" for o in action.option_strings)


def _text(text: str | None) -> str:
    """Help text as Markdown: one line, read literally (``[3]['k']`` is no link, ``*.pb``
    no emphasis, ``<(...)`` no tag)."""
    text = " ".join((text or "").split())
    text = re.sub(r"([\\`*_\[\]])", r"\\\1", text)
    return text.replace("<", "&lt;")


def _cell(text: str | None) -> str:
    """Help text in a Markdown table cell: also no stray pipe."""
    return _text(text).replace("|", "\\|")


def _arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions
            if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)]


def command_page(name: str, summary: str, parser: argparse.ArgumentParser) -> str:
    args = _arguments(parser)
    positional = [a for a in args if not a.option_strings]
    synopsis = " ".join([f"onnxdata {name}", "[OPTIONS]"] + [_spelling(a) for a in positional])
    lines = [HEADER, f"# onnxdata {name}", "", _text(f"{summary[:1].upper()}{summary[1:]}."), "",
             _text(parser.description), "", "```text", synopsis, "```", ""]
    if positional:
        lines += ["## Arguments", "", "| argument | meaning |", "|---|---|"]
        lines += [f"| `{_spelling(a)}` | {_cell(a.help)} |" for a in positional]
        lines.append("")
    lines += ["## Options", "", "| option | meaning |", "|---|---|",
              "| `-h`, `--help` | print the command's help and exit |"]
    for a in args:
        if a.option_strings:
            default = ""
            if a.nargs != 0 and a.default not in (None, [], "", argparse.SUPPRESS) and \
                    "default" not in (a.help or ""):
                default = f" (default: `{a.default}`)"
            lines.append(f"| {_spelling(a)} | {_cell(a.help)}{default} |")
    lines += ["", "## Exit status", "", "```text", EXIT_CODES, "```", ""]
    return "\n".join(lines)


def index_page(parser: argparse.ArgumentParser,
               commands: dict[str, tuple[str, argparse.ArgumentParser]]) -> str:
    lines = [HEADER, "# The onnxdata command", "",
             "Every subcommand has a page here, written from the parser the command runs "
             "(`onnxdata COMMAND --help` prints the same). The command's own help:", "",
             "```text", (parser.description or "").strip(), "```", "",
             "| command | what it does |", "|---|---|"]
    lines += [f"| [`onnxdata {n}`]({n}.md) | {_cell(h)} |" for n, (h, _) in commands.items()]
    lines += ["", "`onnxdata --version` prints the version.", "", "## Exit status", "",
              "```text", EXIT_CODES, "```", ""]
    return "\n".join(lines)


def pages() -> dict[str, str]:
    """``{file name: Markdown}`` of every CLI page."""
    parser = build_parser()
    commands = _subcommands(parser)
    out = {"index.md": index_page(parser, commands)}
    for name, (summary, sub) in commands.items():
        out[f"{name}.md"] = command_page(name, summary, sub)
    return out


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--out", type=Path, default=ROOT / "docs" / "cli",
                     help="the folder to write (default docs/cli)")
    args = cli.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.md"):
        old.unlink()
    for name, text in pages().items():
        (args.out / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(pages())} pages into {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
