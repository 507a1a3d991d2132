"""How often the question's own search reaches a page that holds the gold answer.

    .venv/bin/python scripts/search_reach.py QUESTIONS.jsonl [--split dev] [--results 3]

For each factoid, searches the offline web (`webgpt corpus build`) with the query the
question's own words make (agent.queries.question_query, an episode's first Search under
the question's own search) and counts the questions whose first result, and any of the
first `--results`, hold a gold answer in their stored document, and those whose first
result is the page the question was written from. No policy runs: this is
the search-only count behind the rule (docs/questions.md, "The question's own search":
130 of people's 147 dev factoids at the first result).
"""

import argparse
from pathlib import Path

from webgpt.agent.queries import question_query
from webgpt.browser.offline import OfflineWeb
from webgpt.evals.questions import load_questions, normalize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--split", default=None)
    parser.add_argument("--results", type=int, default=3)
    args = parser.parse_args()
    web = OfflineWeb()
    factoids = [q for q in load_questions(args.questions, args.split) if q.kind == "factoid"]
    first = anywhere = own_first = 0
    try:
        for question in factoids:
            results = web.search_sync(question_query(question.question), args.results)
            holds = [_holds_gold(web, r.url, question.gold_answers) for r in results]
            first += bool(holds) and holds[0]
            anywhere += any(holds)
            own_first += bool(results) and results[0].url == question.url
    finally:
        web.close()
    print(f"{len(factoids)} factoids: a gold answer in the first result for {first}, ", end="")
    print(f"in the first {args.results} for {anywhere}; the question's own page first for ", end="")
    print(own_first)


def _holds_gold(web: OfflineWeb, url: str, gold_answers: list[str]) -> bool:
    body = web.body(url)
    text = normalize(body.decode("utf-8", "replace")) if body else ""
    return any(normalize(gold) in text for gold in gold_answers)


if __name__ == "__main__":
    main()
