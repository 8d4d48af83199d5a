"""docs/cli.md against the parsers of `python -m platform_cli`, and every invocation the docs show.

docs/cli.md once listed 8 of the 12 commands (no `job`, `simulate`, `kueue-config`, `config-reference`), 3 of
the 11 `report` flags and no exit code 130, and nothing failed. These tests read the commands and flags from the
argparse parsers themselves (platform_cli/cli.py `parser`, simulator/options.py), so a command or flag that is
added, renamed or removed fails here until the docs follow:

- every `python -m platform_cli <command> ... --flag` in README.md or docs/*.md names a command and flags the
  parser has (a copied command line works);
- docs/cli.md has a section per command, and each section names every flag of its command, and only those;
- the exit codes docs/cli.md lists are the ones the CLI returns.
"""

from __future__ import annotations

import argparse
import functools
import re
from pathlib import Path

import pytest

from localcluster.signals import EXIT_INTERRUPTED
from platform_cli import cli
from platform_cli.config_reference import cli_markdown
from tests.conftest import ROOT

CLI_DOC = ROOT / "docs" / "cli.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "tasks").glob("*.md"))]
INVOCATION = "python -m platform_cli"
# Where a command line ends inside a line: a pipe, a chained command, a comment, a subshell's or code span's end.
END_OF_COMMAND = re.compile(r"\s(?:\||&&|;|#)|[)`]|$")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
SECTION = re.compile(r"(?m)^## `([a-z][a-z-]*)`\s*$")


@functools.cache
def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, by name, as `python -m platform_cli` builds them (built once: read, never changed)."""
    (sub,) = [a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def flags(command: argparse.ArgumentParser) -> set[str]:
    """A command's option strings (`--stack`, ...), its help flags left out."""
    return {o for a in command._actions if not isinstance(a, argparse._HelpAction) for o in a.option_strings}


def invocations(page: Path) -> list[str]:
    """Every `python -m platform_cli ...` command line of a page, continuation lines joined: in code blocks
    line by line, in prose each inline code span (which may wrap over a line break within its paragraph)."""
    found: list[str] = []
    fence, pending = False, ""
    for line in page.read_text().replace("\\\n", " ").splitlines() + [""]:
        if line.lstrip().startswith("```"):
            fence, pending = not fence, ""
        elif fence:
            found += [line[m.end():] for m in re.finditer(re.escape(INVOCATION), line)]
        else:
            # A span left open at the end of a line goes on in the next line of the paragraph.
            pending = f"{pending} {line}" if pending and line.strip() else line
            if pending.count("`") % 2 == 0 or not line.strip():
                for span in re.findall(r"`([^`]+)`", pending):
                    span = " ".join(span.split())
                    found += [span[m.end():] for m in re.finditer(re.escape(INVOCATION), span)]
                pending = ""
    return [" ".join(rest[:END_OF_COMMAND.search(rest).start()].split()) for rest in found]  # type: ignore[union-attr]


def unknown_in(line: str, parsers: dict[str, argparse.ArgumentParser]) -> list[str]:
    """What a command line names that the parsers do not have: its command, or its flags."""
    words = line.split()
    if not words or not re.fullmatch(r"[a-z][a-z-]*", words[0]):
        return []  # `python -m platform_cli` alone, or a placeholder (`<command>`, `...`)
    if words[0] not in parsers:
        return [f"no command {words[0]!r}"]
    known = flags(parsers[words[0]])
    return [f"{words[0]} has no {flag}" for flag in FLAG.findall(" ".join(words[1:])) if flag not in known]


def sections() -> dict[str, str]:
    """docs/cli.md's command sections (a `## \\`command\\`` heading to the next heading of that level)."""
    text = CLI_DOC.read_text()
    found = list(SECTION.finditer(text))
    out = {}
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(text)
        nxt = re.search(r"(?m)^## ", text[m.end():end])
        out[m.group(1)] = text[m.end():m.end() + nxt.start()] if nxt else text[m.end():end]
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_line_in_the_docs_names_a_command_and_flags_the_parser_has(page: Path) -> None:
    parsers = commands()
    problems = [f"`{INVOCATION} {line}`: {p}" for line in invocations(page) for p in unknown_in(line, parsers)]
    assert problems == []


def test_the_command_line_reader_finds_wrapped_and_continued_lines(tmp_path: Path) -> None:
    """The reader itself: a flag on a continuation line, or an inline span wrapped over a line break, is read."""
    page = tmp_path / "page.md"
    page.write_text("run `python -m platform_cli nodes\n--stack local | kubectl apply -f -` then\n\n```console\n"
                    "$ python -m platform_cli job --stack local \\\n    --no-such-flag 1 | kubectl create -f -\n```\n")
    assert sorted(invocations(page)) == ["job --stack local --no-such-flag 1", "nodes --stack local"]
    assert unknown_in(sorted(invocations(page))[0], commands()) == ["job has no --no-such-flag"]
    assert unknown_in("reprot --stack local", commands()) == ["no command 'reprot'"]


def test_cli_md_has_a_section_for_every_command_and_no_other() -> None:
    assert sorted(sections()) == sorted(commands())


def test_cli_md_lists_every_command_in_its_table_of_commands() -> None:
    """The table at the top, which a reader scans first, names each command once and links its section."""
    table = re.findall(r"^\| \[`([a-z-]+)`\]\(#([a-z-]+)\) \|", (ROOT / "docs" / "cli.md").read_text(), re.M)
    assert sorted(name for name, _ in table) == sorted(commands())
    assert all(name == anchor for name, anchor in table), table


@pytest.mark.parametrize("command", sorted(commands()))
def test_cli_md_names_every_flag_of_the_command_in_its_section(command: str) -> None:
    section = sections().get(command, "")
    missing = sorted(f for f in flags(commands()[command]) if f"`{f}" not in section)
    assert missing == [], f"docs/cli.md, section `{command}`, does not document {missing}"


@pytest.mark.parametrize("command", sorted(commands()))
def test_every_flag_cli_md_names_in_a_section_is_a_flag_of_that_command(command: str) -> None:
    section = sections().get(command, "")
    extra = sorted({f for f in re.findall(r"`(--[a-z][a-z0-9-]*)", section)} - flags(commands()[command]))
    assert extra == [], f"docs/cli.md, section `{command}`, names flags `{command}` does not have: {extra}"


def exit_code_table() -> dict[int, str]:
    """docs/cli.md's "Exit codes" table: code -> meaning."""
    text = CLI_DOC.read_text()
    start = text.index("## Exit codes")
    rows = re.findall(r"(?m)^\| (\d+) \| (.+) \|$", text[start:text.index("\n## ", start + 1)])
    return {int(code): meaning for code, meaning in rows}


def test_cli_md_lists_the_exit_codes_the_cli_returns() -> None:
    """0, 1 (check, inventory, config-reference --check), 2 (bad input and usage errors), 3 (simulate: the
    replay's cluster failed) and 130 (interrupted, as a shell reports Ctrl-C)."""
    table = exit_code_table()
    assert sorted(table) == [0, 1, 2, 3, 130]
    assert (cli.EXIT_OK, cli.EXIT_VIOLATIONS, cli.EXIT_INVALID, EXIT_INTERRUPTED) == (0, 1, 2, 130)
    assert "interrupt" in table[130].lower() and "SIGTERM" in table[130]
    assert "usage" in table[2].lower()


def test_an_interrupted_command_exits_with_the_documented_code(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """Ctrl-C (or SIGTERM, which the CLI turns into it) ends any command with 130 and a one-line message."""
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_validate", interrupted)
    assert cli.main(["validate", "--stack", "local"]) == 130
    assert 130 in exit_code_table()
    assert capsys.readouterr().err == "interrupted\n"


def test_a_usage_error_exits_with_the_documented_code(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["report", "--stack", "local", "--no-such-flag"])
    assert exited.value.code == 2 and "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_cli_md_blocks_are_what_the_parsers_generate() -> None:
    """A flag's value, default or meaning changed in its add_argument and the page not regenerated."""
    assert CLI_DOC.read_text() == cli_markdown(CLI_DOC.read_text(), cli.parser()), (
        "docs/cli.md's generated blocks differ from the parsers: run python -m platform_cli config-reference")


@pytest.mark.parametrize(("command", "row"), [
    ("report", "| `--since` | `SINCE` | `24h` | the window before `--at` (90m, 24h, 7d; default 24h) |"),
    ("report", "| `--format` | `table` \\| `markdown` \\| `json` | `table` |"),
    ("report", "| `--sigv4` | `REGION`, optional (alone: `auto`) | - |"),
    ("report", "| `--no-pending` | switch | off |"),
    ("validate", "| `--stack` | `STACK` | required: one of `--stack`, `FILE` |"),
    ("job", "| `--gpus` | `GPUS` (integer) | required |"),
    ("job", "| `--duration` | `DURATION` | `10m` |"),
    ("simulate", "| `--progress-every` | `S` (number) | `15` |"),
    ("simulate", "| `--trace` | `TRACE` | required: one of `--trace`, `--synthetic` |"),
    ("inventory", "| `--ignore` | `KIND/[NS/]NAME`, repeatable | - |"),
])
def test_cli_md_gives_a_flag_its_value_and_default(command: str, row: str) -> None:
    """What a user reads for a flag: what it takes and what the command uses without it."""
    assert any(line.startswith(row) for line in sections()[command].splitlines()), row


# Pages that explain one command with an option table of their own (rows starting "| `--flag ...` |").
OPTION_TABLES = {"report.md": "report", "what-if.md": "simulate", "submitting-work.md": "job"}


@pytest.mark.parametrize("page", sorted(OPTION_TABLES))
def test_every_flag_an_option_table_names_is_a_flag_of_its_command(page: str) -> None:
    command = OPTION_TABLES[page]
    rows = [line for line in (ROOT / "docs" / page).read_text().splitlines() if line.startswith("| `--")]
    named = {f for line in rows for f in re.findall(r"`(--[a-z][a-z0-9-]*)", cells_first(line))}
    assert rows and named
    assert sorted(named - flags(commands()[command])) == [], f"docs/{page}: flags `{command}` does not have"


def cells_first(line: str) -> str:
    """A table row's first cell (where the option table names its flags; the second may name others in prose)."""
    return re.split(r"(?<!\\)\|", line.strip().strip("|"))[0]
