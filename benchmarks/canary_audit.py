"""How tight the one-run canary audit is on the shipped models: for every method, its shipped model nearest ε = 1
and ε = 10, each plan of the ledger run by the mechanism's own code with canaries (``dpzoo audit``'s path,
``zoo.auditing.ledger_audit``); prints the plan's own ε beside ε̂ (95% confidence) and the time on this machine.

    python benchmarks/canary_audit.py [--canaries 1000]

ε̂ is a lower bound: below the stated ε on a sound mechanism, by the one-run method's slack. A broken mechanism
shows up as ε̂ above the stated ε (``tests/auditing/test_canaries.py`` pins that for tiny plans).
"""

from __future__ import annotations

import argparse

from zoo.auditing.ledger_audit import audit_ledger, model_of_method
from zoo.release.layout import load_config
from zoo.release.loading import list_models, resolve

METHODS = ("dp-merf", "dp-mepf", "dp-kernel", "dp-lflow", "dp-nf", "dp2-vae", "private-set", "gs-wgan")
EPSILONS = (1.0, 10.0)


def audited_models() -> list[str]:
    """Each method's listed model nearest each ε of ``EPSILONS``, once each."""
    models = list_models()
    chosen: list[str] = []
    for method in METHODS:
        for epsilon in EPSILONS:
            model_id = model_of_method(method, epsilon, models)
            if model_id not in chosen:
                chosen.append(model_id)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--canaries", type=int, default=1000)
    args = parser.parse_args()
    print("| model | plan | canaries | plan's own ε | ε̂ (95%) | time |")
    print("|---|---|---|---|---|---|")
    for model_id in audited_models():
        for audit in audit_ledger(load_config(resolve(model_id)), args.canaries):
            print(
                f"| {model_id} | {audit.plan.describe()} | {audit.bound.canaries:,} | {audit.stated_epsilon:.4g} | "
                f"{audit.bound.epsilon:.3g} | {audit.seconds:.0f} s |",
                flush=True,
            )


if __name__ == "__main__":
    main()
