"""``dpzoo audit``: a model's ledger audited with canaries (``zoo.auditing.ledger_audit``), printed beside the ε each
plan states. The front end only: it names the model, prints, and writes nothing to any card or folder."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from zoo.errors import UserError

if TYPE_CHECKING:
    from zoo.auditing.ledger_audit import Plan

#: the exit status when an audit refutes a stated ε
REFUTED = 1


def add_audit_parser(commands: Any) -> None:
    """The ``audit`` subcommand on ``dpzoo``'s subparsers."""
    audit = commands.add_parser(
        "audit",
        help="audit a model's privacy mechanisms with canaries: a lower bound on ε beside the ε it states",
        description="Runs each DP mechanism in the model's ledger by its own code, at the plan the ledger records, "
        "with canaries in place of the data, and prints the one-run lower bound ε̂ (Steinke, Nasr & Jagielski 2023) "
        "beside the ε that plan states. Writes nothing.",
    )
    audit.add_argument("model", nargs="?", help="model id or folder (or --method with --epsilon)")
    audit.add_argument("--method", help="audit the listed model of this method whose ε is nearest --epsilon")
    audit.add_argument("--epsilon", type=float, help="with --method: the ε of the model to audit")
    audit.add_argument(
        "--canaries", type=int, default=1000, help="canaries per mechanism (default 1000; B3: one per critic's part)"
    )
    audit.add_argument("--confidence", type=float, default=0.95, help="the lower bound's confidence (default 0.95)")
    audit.set_defaults(run=run_audit)


def run_audit(args: argparse.Namespace) -> int:
    from zoo.auditing.ledger_audit import WHAT_A_LOWER_BOUND_SHOWS, audit_ledger, ledger_plans
    from zoo.release.layout import load_config
    from zoo.release.loading import resolve

    name = _model_name(args)
    config = load_config(resolve(name))
    ledger_plans(config)  # a mechanism without an audit is refused before any runs
    headline = config.get("headline") or {}
    print(f"auditing {name} (stated ε = {headline.get('epsilon')}, δ = {headline.get('delta')}) with canaries")
    refuted = False
    for audit in audit_ledger(config, args.canaries, args.confidence, on_start=_say_starting):
        over = audit.bound.epsilon > audit.stated_epsilon
        refuted |= over
        parts = f" (the plan of {audit.entries} ledger entries)" if audit.entries > 1 else ""
        print(
            f"    ε̂ {audit.bound.epsilon:.2f} beside the plan's own ε {audit.stated_epsilon:.4g}{parts}: "
            f"{audit.bound.sentence()}; {audit.seconds:.1f} s" + ("  REFUTED" if over else "")
        )
    print(WHAT_A_LOWER_BOUND_SHOWS)
    print("Nothing was written to any card or folder.")
    if refuted:
        print(
            "an audit found ε̂ above the ε its plan states: the mechanism does not do what its theorem says",
            file=sys.stderr,
        )
    return REFUTED if refuted else 0


def _say_starting(plan: Plan, canaries: int) -> None:
    print(f"  {plan.describe()}: {canaries:,} canaries ...", flush=True)


def _model_name(args: argparse.Namespace) -> str:
    """The model named positionally, or by --method and --epsilon; exactly one way."""
    if args.model and (args.method or args.epsilon is not None):
        raise UserError("name the model, or give --method with --epsilon, not both")
    if args.model:
        return args.model
    if not args.method or args.epsilon is None:
        raise UserError("name a model (an id from `dpzoo list`, or a folder), or give --method with --epsilon")
    from zoo.auditing.ledger_audit import model_of_method
    from zoo.release.loading import list_models

    return model_of_method(args.method, args.epsilon, list_models())
