"""``foxaudit`` command line: check · baseline · rules · rule CODE · audit · history · install-hooks · clean.

Exit status: 0 clean, 1 findings, 2 usage or configuration error, 141 when the reader of the
output went away (``foxaudit check | head``). No traceback reaches the
user: configuration and usage problems are listed in the house format, and anything
unexpected is reported in one line (set FOXAUDIT_DEBUG=1 to see the traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader went away


class UsageError(Exception):
    """A command-line mistake; the message is in the house format."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"invalid command line ({message}) — hint: run `{self.prog} --help`")


def _codes(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="foxaudit", description="Invariant enforcement for Python and CUDA repositories.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)

    check = commands.add_parser("check", help="check files (default: the whole project)")
    _selection_arguments(check)
    check.add_argument("--fix", action="store_true", help="apply the fixes diagnostics offer, then re-check")
    check.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text", help="output format")
    check.add_argument("--statistics", action="store_true", help="print counts per code instead of each finding")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--output", "-o", type=Path, help="write the report to this file instead of stdout")
    check.add_argument("--baseline", type=Path, help="report only findings not recorded in this file (`foxaudit baseline`)")

    baseline = commands.add_parser("baseline", help="record the current findings, so that `check --baseline` reports only new ones")
    _selection_arguments(baseline)
    baseline.add_argument("--output", "-o", type=Path, default=None,
                          help="where to write it (default: .foxaudit-baseline.json at the project root)")

    hooks = commands.add_parser("install-hooks", help="install foxaudit's plain git hooks (pre-commit, pre-push) in this repository")
    hooks.add_argument("--force", action="store_true", help="replace existing hooks (they are kept as <hook>.foxaudit-backup)")

    clean = commands.add_parser("clean", help="delete the result cache `check` uses (it is kept bounded on its own)")
    clean.add_argument("--config", type=Path, help="TOML file with the settings; its directory is the project root")
    clean.add_argument("--cache-dir", help="cache directory (default: $FOXAUDIT_CACHE_DIR or .foxaudit_cache)")

    commands.add_parser("rules", help="list every rule: code, name, status, summary")
    rule = commands.add_parser("rule", help="print one rule's documentation, options and examples")
    rule.add_argument("code", help="a rule code, e.g. FX901")

    audit = commands.add_parser("audit", help="generate (--write) or verify (--check) docs/audits/*.md")
    mode = audit.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the stale docs (atomically)")
    mode.add_argument("--check", action="store_true", help="exit 1 when a doc is stale or missing")
    audit.add_argument("--config", type=Path, help="TOML file with the settings (default: nearest pyproject.toml)")
    history = commands.add_parser("history", help="commits in BASE..HEAD that add a component without touching docs/audits/")
    history.add_argument("range", nargs="?", help="BASE..HEAD (default: $PRE_COMMIT_FROM_REF..$PRE_COMMIT_TO_REF, else @{upstream}..HEAD)")
    history.add_argument("--config", type=Path, help="TOML file with the settings (default: nearest pyproject.toml)")
    return parser


def _selection_arguments(command: argparse.ArgumentParser) -> None:
    """What `check` and `baseline` share: which files, which rules, how to run."""
    command.add_argument("paths", nargs="*", help="files or directories (default: the project root)")
    command.add_argument("--config", type=Path, help="TOML file with the settings (default: nearest pyproject.toml)")
    command.add_argument("--select", action="append", type=_codes, help="codes or prefixes to enable (replaces the configured select)")
    command.add_argument("--ignore", action="append", type=_codes, help="codes or prefixes to disable (added to the configured ignore)")
    command.add_argument("--jobs", "-j", type=int, help="worker processes (default: every core)")
    command.add_argument("--no-project", action="store_true", help="skip the whole-project rules (per-file rules only)")
    command.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    command.add_argument("--cache-dir", help="cache directory (default: $FOXAUDIT_CACHE_DIR or .foxaudit_cache)")
    command.add_argument("--run-generators", action="store_true",
                         help="run the `generated-headers` check commands the analysed repository configures"
                              " (same as FOXAUDIT_RUN_GENERATORS=1; only for a repository you trust)")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        status = _main(list(sys.argv[1:] if argv is None else argv))
        # Flush here, not at interpreter exit, so a closed pipe is caught below.
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # `foxaudit check | head`: the reader has what it wanted. Point stdout at /dev/null so the
        # interpreter's final flush does not fail again, and exit like a process killed by SIGPIPE.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except UsageError as error:
        print(f"foxaudit: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("foxaudit: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if os.environ.get("FOXAUDIT_DEBUG"):
            raise
        print(
            f"foxaudit: internal error ({type(error).__name__}: {error}) — hint: rerun with FOXAUDIT_DEBUG=1"
            " for the traceback and report it",
            file=sys.stderr,
        )
        return EXIT_USAGE


def _main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        import foxaudit

        print(f"foxaudit {foxaudit.__version__}")
        return EXIT_CLEAN
    if args.command == "check":
        return command_check(args)
    if args.command == "baseline":
        return command_baseline(args)
    if args.command == "install-hooks":
        from foxaudit.hooks import command_install_hooks

        return command_install_hooks(Path.cwd(), force=args.force)
    if args.command == "clean":
        return command_clean(args.config, args.cache_dir)
    if args.command == "rules":
        return command_rules()
    if args.command == "rule":
        return command_rule(args.code)
    if args.command == "audit":
        from foxaudit.audits.command import command_audit

        return command_audit(args.config, _engine_project, write=args.write)
    if args.command == "history":
        from foxaudit.audits.command import command_history

        return command_history(args.config, args.range)
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def discovery_start(paths: list[str] | None, cwd: Path) -> Path:
    """Where `check` looks for the project and its configuration: the working directory, unless a
    path given lies outside the project found from it (or the working directory is in none) — then
    the project those paths are in.

    Why: `foxaudit check ~/src/other` run from elsewhere must check that repository as
    `foxaudit check` run inside it does — its [tool.foxaudit] settings, its root for module names
    and whole-program rules — not as files of whatever directory the shell stands in. Paths in two
    projects are a usage error: each has its own settings and program."""
    from foxaudit.config import find_config

    if not paths:
        return cwd
    here = find_config(cwd)[0]
    in_a_project = (here / "pyproject.toml").is_file() or (here / ".git").exists()
    targets = [Path(path).resolve() for path in paths]
    if in_a_project and all(target == here or here in target.parents for target in targets):
        return cwd
    starts = {target if target.is_dir() else target.parent for target in targets}
    roots = {find_config(start)[0]: start for start in sorted(starts)}
    if not in_a_project and all(target == here or here in target.parents for target in targets) and not any(
            (root / "pyproject.toml").is_file() or (root / ".git").exists() for root in roots):
        # No project anywhere (an unpacked tree): the working directory is the root, as it is
        # when no path is given — the same module names and cache keys, so `check FILES` after
        # `check` reads the whole-program summaries the first run cached.
        return cwd
    if len(roots) > 1:
        listed = ", ".join(str(root) for root in sorted(roots))
        raise UsageError(
            f"paths in {len(roots)} projects ({listed} vs one project per run) — hint: run foxaudit check once per "
            f"project, from its directory or with its paths"
        )
    return next(iter(roots.values()))


def _run_check(args: argparse.Namespace):  # -> (Settings, CheckResult) | int
    """Settings and the result of the run `check` and `baseline` both make; an exit status when
    the configuration or the command line is wrong (already reported)."""
    from foxaudit.config import RUN_GENERATORS_VARIABLE, ConfigError, generators_allowed, load_settings
    from foxaudit.engine.discovery import DiscoveryError
    from foxaudit.engine.resolve import resolve, resolve_cached
    from foxaudit.engine.run import check, open_cache

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be positive (got {args.jobs} vs 1 or more) — hint: omit it to use every core")
    if args.run_generators:
        # One switch, read where the command would run (foxaudit.config.generators_allowed).
        os.environ[RUN_GENERATORS_VARIABLE] = "1"
    overrides = {
        "select": [code for group in args.select for code in group] if args.select else None,
        "extend_ignore": [code for group in args.ignore for code in group] if args.ignore else None,
    }
    try:
        problems: list[str] = []
        start = Path.cwd() if args.config is not None else discovery_start(args.paths, Path.cwd())
        settings = load_settings(args.config, start, overrides, errors=problems)
        if problems:
            # Report the rule-level problems of the valid remainder in the same list.
            try:
                resolve(settings)
            except ConfigError as error:
                problems.extend(error.errors)
            raise ConfigError(problems)
        resolved = resolve_cached(settings, open_cache(settings.root, args.cache_dir, not args.no_cache))
    except ConfigError as error:
        count = len(error.errors)
        print(f"foxaudit: {count} configuration error{'s' if count != 1 else ''}:", file=sys.stderr)
        for message in error.errors:
            print(f"  {message}", file=sys.stderr)
        return EXIT_USAGE
    try:
        result = check(
            resolved,
            args.paths or None,
            jobs=args.jobs,
            use_cache=not args.no_cache,
            cache_dir=args.cache_dir,
            fix=getattr(args, "fix", False),
            project=not args.no_project,
        )
    except DiscoveryError as error:
        raise UsageError(str(error)) from None
    headers = settings.program.get("generated-headers")
    if not args.no_project and "FX503" in resolved.project_codes and headers and not generators_allowed():
        count = len(headers)
        print(
            f"foxaudit: note: the {'command' if count == 1 else f'{count} commands'} of `generated-headers` not run"
            " (FX503 checked the headers statically: present, and the layout's offsets and strides)"
            f" — hint: pass --run-generators or set {RUN_GENERATORS_VARIABLE}=1 for a repository you trust",
            file=sys.stderr,
        )
    return settings, result


def command_check(args: argparse.Namespace) -> int:
    from foxaudit.report import render

    known = None
    if args.baseline is not None:
        from foxaudit.report.baseline import BaselineError, read_baseline

        try:
            known = read_baseline(args.baseline)
        except BaselineError as error:
            raise UsageError(str(error)) from None
    ran = _run_check(args)
    if isinstance(ran, int):
        return ran
    settings, result = ran
    diagnostics = result.diagnostics
    if known is not None:
        from foxaudit.report.baseline import new_findings

        diagnostics, hidden = new_findings(diagnostics, known, settings.root)
        print(f"foxaudit: {hidden} finding{'s' if hidden != 1 else ''} of the baseline {args.baseline} not shown",
              file=sys.stderr)
    output = render(
        args.format,
        diagnostics,
        root=settings.root,
        files=result.files,
        fixed=result.fixed,
        statistics=args.statistics,
    )
    if args.format != "text" and args.statistics:
        from foxaudit.report.text import statistics_table

        print("\n".join(statistics_table(diagnostics)), file=sys.stderr)
    if args.output:
        _write_report(args.output, output)
    else:
        sys.stdout.write(output)
    if diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _write_report(target: Path, text: str) -> None:
    """``-o FILE``: atomic, and a file that cannot be written is a usage error (exit 2), not silence."""
    from foxaudit.files import write_text_atomic

    if not target.parent.is_dir():
        raise UsageError(
            f"cannot write the report ({target} vs an existing directory: {target.parent} does not exist)"
            " — hint: create the directory first or choose another --output path"
        )
    try:
        write_text_atomic(target, text)
    except OSError as error:
        raise UsageError(
            f"cannot write the report ({target}: {error.strerror or error} vs a writable file)"
            " — hint: check the path and its permissions, or omit --output to print to stdout"
        ) from None


def command_baseline(args: argparse.Namespace) -> int:
    from foxaudit.report.baseline import DEFAULT_PATH, write_baseline

    ran = _run_check(args)
    if isinstance(ran, int):
        return ran
    settings, result = ran
    target = (args.output or settings.root / DEFAULT_PATH).resolve()
    try:
        count = write_baseline(target, result.diagnostics, settings.root)
    except OSError as error:
        raise UsageError(f"cannot write the baseline ({error.strerror or error} vs a writable file {str(target)!r})"
                         " — hint: pass another --output") from None
    print(f"foxaudit: wrote {count} finding{'s' if count != 1 else ''} to {target}; commit it and run"
          f" `foxaudit check --baseline {target.name}` to see only new ones", file=sys.stderr)
    return EXIT_CLEAN


def _engine_project(settings):  # -> foxaudit.program.project.Project
    """The Project `foxaudit check` would build (same discovery), for `foxaudit audit`."""
    from foxaudit.engine.discovery import discover
    from foxaudit.engine.project import build_project
    from foxaudit.engine.resolve import resolve
    from foxaudit.engine.run import open_cache

    resolved = resolve(settings)
    return build_project(resolved, discover(settings), open_cache(settings.root))


def command_clean(config: Path | None, cache_dir: str | None) -> int:
    """Delete the cache `check` would use from here: what foxaudit wrote, nothing else."""
    from foxaudit.config import find_config
    from foxaudit.store import cache_directory, clear

    # The root as `check` finds it, without reading the configuration: a broken one must not
    # keep its cache from being cleared.
    root = config.resolve().parent if config is not None else find_config(Path.cwd())[0]
    directory = cache_directory(root, cache_dir)
    try:
        cleared = clear(directory)
    except OSError as error:
        where = error.filename or directory
        raise UsageError(
            f"cannot clear the cache ({where}: {error.strerror or error} vs a path foxaudit may delete)"
            f" — hint: check the permissions of {Path(where).parent}, or delete {directory} by hand"
        ) from None
    if not cleared.existed:
        print(f"foxaudit: no cache at {directory}: nothing to delete", file=sys.stderr)
        return EXIT_CLEAN
    print(f"foxaudit: deleted {cleared.removed} cache file{'s' if cleared.removed != 1 else ''}"
          f" ({_size(cleared.freed)}) from {directory}", file=sys.stderr)
    if cleared.kept:
        count = len(cleared.kept)
        print(f"foxaudit: kept {count} file{'s' if count != 1 else ''} foxaudit did not write, e.g. {min(cleared.kept)}"
              " — hint: delete them by hand if they are not needed", file=sys.stderr)
    return EXIT_CLEAN


def _size(count: int) -> str:
    """A byte count for people: ``512 B``, ``3.4 kB``, ``17.0 MB``, ``1.2 GB``."""
    if count < 1000:
        return f"{count} B"
    value = count / 1000
    for unit in ("kB", "MB"):
        if value < 1000:
            return f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def command_rules() -> int:
    from foxaudit.rules.registry import REGISTRY

    rows = [(entry.code, entry.rule.name, entry.status, entry.rule.summary) for entry in REGISTRY]
    widths = [max((len(row[index]) for row in rows), default=0) for index in range(3)]
    header = ("code", "name", "status", "summary")
    widths = [max(width, len(header[index])) for index, width in enumerate(widths)]
    for row in [header, *rows]:
        print(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {row[3]}")
    return EXIT_CLEAN


def command_rule(code: str) -> int:
    from foxaudit.rules.registry import by_code

    table = by_code()
    entry = table.get(code.strip().upper())
    if entry is None:
        raise UsageError(
            f"unknown rule code (got {code!r} vs one of {', '.join(sorted(table)) or 'no registered codes'})"
            " — hint: `foxaudit rules` lists them"
        )
    print(rule_documentation(entry.code, entry.rule, entry.status))
    return EXIT_CLEAN


def rule_documentation(code: str, rule: type, status: str) -> str:
    """Everything `foxaudit rule CODE` prints: header, docstring, options, examples."""
    from foxaudit.rules.base import ProjectExample
    from foxaudit.rules.docs import toml_value

    lines = [f"{code} {rule.name} ({status}, invariant {rule.invariant})", "", rule.summary, ""]
    lines.append(inspect.cleandoc(rule.__doc__ or ""))
    options_class = rule.options_class
    lines += ["", "## Configuration", ""]
    if dataclasses.is_dataclass(options_class) and dataclasses.fields(options_class):
        lines.append(f"[tool.foxaudit.rules.{code}]")
        for option in dataclasses.fields(options_class):
            if option.default is not dataclasses.MISSING:
                default = option.default
            elif option.default_factory is not dataclasses.MISSING:
                default = option.default_factory()
            else:
                default = "(required)"
            help_text = option.metadata.get("help", "")
            lines.append(f"{option.name.replace('_', '-')} = {toml_value(default)}")
            if help_text:
                lines.append(f"    {help_text}")
    else:
        lines.append("This rule has no options.")
    for title, examples in (("Valid", getattr(rule, "VALID", [])), ("Invalid", getattr(rule, "INVALID", []))):
        if not examples:
            continue
        lines += ["", f"## {title} examples"]
        for number, example in enumerate(examples, start=1):
            if isinstance(example, ProjectExample):
                # A whole-project rule's example is a small repository: every file of it.
                findings = f", {example.expect} finding{'s' if example.expect != 1 else ''}" if example.expect else ""
                lines += ["", f"project {number} ({len(example.files)} files{findings if title == 'Invalid' else ''}):"]
                if example.note:
                    lines.append(f"  {example.note}")
                for path, text in example.files.items():
                    lines += ["", f"  {path}:", *(("      " + line).rstrip() for line in text.splitlines())]
                    if not text:
                        lines.append("      (empty file)")
                continue
            # An example written for non-default options says which: under the defaults it would
            # read as wrong (FX901's `docstrings = false` example flags nothing otherwise).
            header = f"{example.path}" + (f" (with {toml_value(dict(example.options))})" if example.options else "")
            lines += ["", f"{header}:", *("    " + line for line in example.code.splitlines())]
            if not example.code:
                lines.append("    (empty file)")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
