"""`webgpt` with a hand rule that has no switch of its own left out, to measure its worth
on dev (docs/agent.md, "Hand rules and their measured worth on dev").

    RULES_OFF=named_by python scripts/rules_off.py eval --questions DEV.jsonl ...

RULES_OFF names the rules, comma-separated: `named_by` (browser.offline.named_by: no page
the query names is ranked first). The rest of the code is the same in both arms; compare
the runs with scripts/rewrite_worth.py compare.
"""

import os
import sys

import webgpt.browser.offline as offline

RULES = {"named_by"}


def leave_out(rules: set[str]) -> None:
    unknown = rules - RULES
    if unknown:
        sys.exit(f"RULES_OFF: unknown rules {sorted(unknown)}; known: {sorted(RULES)}")
    if "named_by" in rules:
        offline.named_by = lambda query, title, document: 0


leave_out({rule for rule in os.environ.get("RULES_OFF", "").split(",") if rule})

if __name__ == "__main__":  # the browser's spawned workers import this module again
    from webgpt.service.cli import main

    sys.exit(main())
