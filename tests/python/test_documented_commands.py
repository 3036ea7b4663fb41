"""Every hympi command line the README and docs/ show in a code block is one hympi takes: a flag renamed or removed
in the code, or mistyped in the text, fails here instead of in the hands of the user who copies it. A synopsis
(`hympi report [--db PATH] [--out DIR]`) has each flag it names checked against that command's options; any other
line is parsed as the CLI parses it (hympi.cli.parse_command_line), nothing run."""

from __future__ import annotations

import re
import shlex

import pytest

from clitree import subcommands
from conftest import REPO
from hympi.cli import parse_command_line
from hympi.errors import UsageError

DOCUMENTS = ("README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md")))
# Code blocks in these languages hold no shell command lines.
NOT_SHELL = ("cpp", "python", "toml")
# Where a line's command ends: a redirection, a pipe, the next command.
COMMAND_ENDS = (">", "2>&1", "|", "&&", ";")
SUBCOMMAND_OPTIONS = {words: {s for a in parser._actions for s in a.option_strings} for words, parser in subcommands()}


def documented_commands(text: str) -> list[list[str]]:
    """The words after `hympi` of each command line in the text's code blocks (continuation lines joined, trailing
    comments and what follows a redirection or pipe left out); lines drawn with non-ASCII arrows are diagrams."""
    commands = []
    for language, block in re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if language in NOT_SHELL:
            continue
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            found = re.match(r"^\s*(?:\S*/)?hympi (.*)$", line)
            if found is None or not line.isascii():
                continue
            words = shlex.split(re.split(r"\s+#\s", found.group(1))[0])
            ends = [i for i, word in enumerate(words) if word in COMMAND_ENDS]
            commands.append(words[:ends[0]] if ends else words)
    return commands


def test_the_documents_show_commands_and_the_scan_finds_them():
    found = {name: documented_commands((REPO / name).read_text()) for name in DOCUMENTS}
    assert len(found["README.md"]) >= 30 and found["docs/tune.md"] and found["docs/placement.md"]
    assert ["export", "--format", "csv"] in found["README.md"]  # '> runs.csv' left out
    assert ["study", "--quick"] in found["README.md"]  # its comment left out


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_command_a_document_shows_is_one_hympi_takes(document: str):
    for words in documented_commands((REPO / document).read_text()):
        line = " ".join(words)
        if any(word.startswith("[") for word in words):  # a synopsis: its flags must be the command's
            command = " ".join(words[:2]) if " ".join(words[:2]) in SUBCOMMAND_OPTIONS else words[0]
            hympis = words[:next((i for i, word in enumerate(words) if word in ("--", "[--")), len(words))]
            flags = {f for word in hympis for f in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", word)}
            unknown = sorted(flags - SUBCOMMAND_OPTIONS[command])
            assert not unknown, f"{document}: 'hympi {line}' names options hympi {command} does not take: {unknown}"
            continue
        try:
            parse_command_line(words)
        except (UsageError, SystemExit) as exc:
            pytest.fail(f"{document}: 'hympi {line}' is refused: {exc}")


def test_a_renamed_flag_or_an_unknown_command_would_be_found():
    with pytest.raises(UsageError, match="unrecognized arguments: --repeats 2"):
        parse_command_line(["sweep", "rb3d", "--repeats", "2"])
    # Nor is an abbreviation taken (cli.parser.Parser): '--rep' was --repeat, a mistyped document's line passed.
    with pytest.raises(UsageError, match="unrecognized arguments: --rep 2"):
        parse_command_line(["sweep", "rb3d", "--rep", "2"])
    assert parse_command_line(["run", "rb3d", "--time", "5"]).app_args == ["--time", "5"]  # the app's, not --timeout
    assert "--bind" in SUBCOMMAND_OPTIONS["sweep"] and "--binds" not in SUBCOMMAND_OPTIONS["sweep"]
    assert documented_commands("```sh\nhympi sweep rb3d --ranks 1,2 \\\n  --repeat 2 -- --size 8  # why\n```\n") == \
        [["sweep", "rb3d", "--ranks", "1,2", "--repeat", "2", "--", "--size", "8"]]
