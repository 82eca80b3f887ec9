"""Every ``relaykit ...`` example in the help texts, docs/cli.md and the README's
command-line section parses with the real parser (options and subcommands exist)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from relaykit.cli import SUBCOMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]


def _commands(text: str) -> list[str]:
    """``relaykit ...`` lines (several joined by ``&&`` count apart), comments dropped."""
    out = []
    for line in text.splitlines():
        for part in line.split("&&"):
            part = part.strip()
            if part.startswith("relaykit ") or part == "relaykit":
                out.append(part.split("  #", 1)[0].split(" # ", 1)[0].strip())
    return out


def _doc_blocks(path: Path) -> str:
    return "\n".join(re.findall(r"```bash\n(.*?)```", path.read_text(encoding="utf-8"), re.S))


def _examples() -> list[str]:
    found = _commands(_doc_blocks(ROOT / "docs" / "cli.md"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The command line", 1)[1].split("\n## ", 1)[0]
    found += _commands("\n".join(re.findall(r"```bash\n(.*?)```", section, re.S)))
    for module in SUBCOMMANDS:
        epilog = getattr(module, "EPILOG", "")
        found += _commands(epilog)
    return sorted(set(found))


def test_there_are_examples_for_every_subcommand():
    examples = _examples()
    for module in SUBCOMMANDS:
        name = module.__name__.rsplit(".", 1)[1]
        assert any(e.split()[1:2] == [name] for e in examples), name


@pytest.mark.parametrize("example", _examples())
def test_example_parses(example: str):
    argv = shlex.split(example)[1:]
    if argv in (["--version"], ["--help"]):
        return
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # pragma: no cover - the failure message
        pytest.fail(f"{example!r} does not parse (exit {stop.code})")
    assert callable(args.func)
