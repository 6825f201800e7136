"""Command line: ``python -m experiments {list,run,report}``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.runner import DEFAULT_STORE, REPO_ROOT, Store, run_many


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m experiments", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="list the studies and their grid sizes")

    run = sub.add_parser("run", help="run studies (resumes from the store)")
    run.add_argument("studies", nargs="+", help="study names, a group, or 'all'")
    profile = run.add_mutually_exclusive_group()
    profile.add_argument("--quick", dest="profile", action="store_const", const="quick")
    profile.add_argument("--full", dest="profile", action="store_const", const="full")
    run.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    run.add_argument("--store", type=Path, default=DEFAULT_STORE, help="JSONL store")
    run.add_argument("--limit", type=int, default=None, help="run at most N configurations")
    run.add_argument(
        "--force", action="store_true", help="rerun configurations already in the store"
    )
    run.add_argument("--match", default=None, help="only configurations whose key has TEXT")
    run.set_defaults(profile="quick")

    report = sub.add_parser("report", help="write RESULTS.md and figures from the store")
    report.add_argument("--store", type=Path, default=DEFAULT_STORE)
    report.add_argument("-o", "--output", type=Path, default=REPO_ROOT / "RESULTS.md")
    report.add_argument(
        "--figures", type=Path, default=None, help="figure folder (default: results/figures)"
    )

    args = parser.parse_args(argv)
    from experiments.registry import all_studies, select

    if args.command == "list":
        for study in all_studies().values():
            sizes = ", ".join(f"{p} {len(study.configs(p))}" for p in ("quick", "full"))
            print(f"{study.name:20s} [{study.group}] {study.description} ({sizes} configs)")
        return 0
    if args.command == "run":
        try:
            chosen = select(args.studies)
        except KeyError as exc:
            print(exc.args[0], file=sys.stderr)
            return 2
        store = Store(args.store)
        summaries = run_many(
            chosen,
            store,
            args.profile,
            args.workers,
            limit=args.limit,
            force=args.force,
            match=args.match,
        )
        return 1 if any(s.errors for s in summaries) else 0
    from experiments.report import write_report

    figures = args.figures or args.store.parent / "figures"
    path = write_report(Store(args.store), args.output, figures)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
