"""Questions people ask: broadened factoid relations, long-form answers from several quotes,
honest declines, and their figures in `webgpt eval`."""

import random
import re
from pathlib import Path

import lxml.html
import pytest

from tests.agent.fake_policy import Script
from tests.evals.test_eval import scripted_report
from webgpt.agent.declines import DECLINE_PREFIX, decline_answer, indirect_question, is_declined
from webgpt.agent.grammar import answer_regex
from webgpt.browser.session import SessionConfig
from webgpt.browser.web import Web
from webgpt.evals.evaluate import distinct_sentence_count, key_point_coverage
from webgpt.evals.questions import Question, load_questions
from webgpt.learning.demonstrations import DemoQuote, replay, write_demonstrations
from webgpt.learning.question_generator import (
    documented_functions,
    generate_questions,
    longform_questions,
    made_up_function_questions,
    pick_questions,
    relation_questions,
    unanswerable_questions,
    unnamed_subject_questions,
)
from webgpt.learning.scripted import compose_answer, demonstrate


@pytest.mark.parametrize(
    ("question", "clause"),
    [
        ("When was Ada Lovelace born?", "when Ada Lovelace was born"),
        ("Who won the 2026 FIFA World Cup?", "who won the 2026 FIFA World Cup"),
        ("What is the capital of Atlantis?", "what the capital of Atlantis is"),
        ("When did the Berlin Wall fall?", "when the Berlin Wall fell"),
        ("Who did Frida Kahlo marry?", "who Frida Kahlo married"),
        ("How does a transistor work?", "how a transistor works"),
        ("In which year was the Eiffel Tower built?", "in which year the Eiffel Tower was built"),
        ("Is it raining", "the answer to “Is it raining?”"),
        # future tense: the modal goes before the verb after the subject, or stays after a
        # wh-word that is the subject
        ("Who will win the 2031 Tour de France?", "who will win the 2031 Tour de France"),
        (
            "Where will the 2031 Tour de France take place?",
            "where the 2031 Tour de France will take place",
        ),
        (
            "What will the population of Lagos be in 2060?",
            "what the population of Lagos will be in 2060",
        ),
        (
            "How many bricks are in the Empire State Building?",
            "how many bricks are in the Empire State Building",
        ),
        ("What does os.path.quickjoin() return?", "what os.path.quickjoin() returns"),
        ("How high is Mount Selbordri?", "how high Mount Selbordri is"),
        ("Who will win?", "who will win"),
        ("Where will they play?", "where they will play"),
        ("How much will it cost to be a member?", "how much it will cost to be a member"),
        (
            "Where will the 2045 Nobel Prize in Physics take place?",
            "where the 2045 Nobel Prize in Physics will take place",
        ),
        (
            "How will climate change affect Ghana?",
            "the answer to “How will climate change affect Ghana?”",
        ),
        ("How many taxis are there in Accra?", "how many taxis there are in Accra"),
        ("When did Charles de Gaulle die?", "when Charles de Gaulle died"),
    ],
)
def test_a_decline_restates_the_question_as_what_the_pages_do_not_say(
    question: str, clause: str
) -> None:
    assert indirect_question(question) == clause
    decline = decline_answer(question)
    assert decline == f"{DECLINE_PREFIX}{clause}."
    assert is_declined(decline)
    # the grammar lets a policy decline
    assert re.fullmatch(answer_regex([DemoQuote(title="t", extract="x")]), decline)


def test_a_decline_cites_nothing_and_a_cited_answer_is_no_decline() -> None:
    assert not is_declined(f"{DECLINE_PREFIX}much, but Skopje is the capital [1].")
    assert not is_declined("Skopje [1].") and not is_declined(None)
    quotes = [DemoQuote(title="t", extract="Madagascar"), DemoQuote(title="t", extract="Skopje")]
    assert not re.fullmatch(answer_regex(quotes), f"{DECLINE_PREFIX}who won [3].")


def test_relations_are_asked_from_any_sentence_of_a_summary() -> None:
    sentences = [
        "North Macedonia is a landlocked country in Southeast Europe.",
        "Its capital and largest city is Skopje.",
        "Battleships are big.",  # about something else: no question
    ]
    made = list(
        relation_questions(
            "https://w/nm", "North Macedonia", sentences, "Geography", random.Random(0)
        )
    )
    capital = [q for q in made if q.style == "capital (later sentence)"]
    assert [q.gold_answers for q in capital] == [["Skopje"]]
    assert capital[0].evidence == sentences[1]
    film = "Battleship Potemkin is a 1925 Soviet silent epic film produced by Mosfilm."
    made = list(
        relation_questions("https://w/bp", "Battleship Potemkin", [film], "Arts", random.Random(1))
    )
    assert [q.gold_answers for q in made if q.style == "made by"] == [["Mosfilm"]]
    # a relation inside a relative clause is about something else
    accra = "Accra is a city at the Gulf of Guinea, which is part of the Atlantic Ocean."
    assert not list(
        relation_questions("https://w/a", "Accra", [accra], "Geography", random.Random(0))
    )


def test_a_question_can_ask_for_the_subject_without_naming_it() -> None:
    first = "The Nile is the longest river in Africa, flowing north."
    [asked] = unnamed_subject_questions("https://w/n", "Nile", "", [first], random.Random(0))
    assert asked.gold_answers == ["Nile"] and "Nile" not in asked.question
    assert "longest" in asked.question and "Africa" in asked.question


def test_unanswerable_questions_have_no_gold_and_a_decline_as_their_answer() -> None:
    made = list(
        unanswerable_questions(
            "https://w/m", "Mozart", ["Mozart was a composer."], "People", random.Random(0)
        )
    )
    assert {q.style for q in made} >= {"detail no page holds", "made-up entity"}
    for question in made:
        assert question.kind == "unanswerable" and not question.gold_answers
        assert question.answer == decline_answer(question.question)
    with pytest.raises(ValueError, match="no gold_answers"):
        Question(question="q", kind="unanswerable", gold_answers=["x"])
    with pytest.raises(ValueError, match="needs gold_answers"):
        Question(question="q")


def test_unanswerable_questions_ask_later_years_and_functions_no_page_documents() -> None:
    made = [
        q
        for seed in range(20)
        for q in unanswerable_questions(
            "https://w/g",
            "Ghana",
            ["Ghana is a country in West Africa."],
            "Geography",
            random.Random(seed),
        )
        if q.style == "future event"
    ]
    assert len(made) == 20  # a country page always gets one
    for question in made:
        [year] = re.findall(r"\d{4}", question.question)
        assert "Ghana" in question.question and 2027 <= int(year) <= 2060
    # an event's templates say "the" themselves, whatever its summary opens with
    tour = ["The Tour de France is an annual men's multiple-stage bicycle race."]
    for seed in range(20):
        [event, *_] = unanswerable_questions(
            "https://w/t", "Tour de France", tour, "", random.Random(seed)
        )
        assert event.style == "future event" and "Tour de France" in event.question
        assert not re.search(r"(?i)\bthe (?:\d{4} )?the\b", event.question), event.question
    # "a state of matter" is no country
    liquid = ["Liquid is a state of matter with a definite volume."]
    assert not any(
        q.style == "future event"
        for q in unanswerable_questions("https://w/l", "Liquid", liquid, "", random.Random(0))
    )
    body = (
        b'<html><body><dl class="py function"><dt id="json.dumps">json.dumps</dt><dd><p>x</p>'
        b'</dd></dl><dl class="py function"><dt id="json.dump">json.dump</dt></dl></body></html>'
    )
    documented = documented_functions(lxml.html.document_fromstring(body))
    assert documented == {"json.dumps", "json.dump"}
    made_up = [
        question
        for seed in range(20)
        for question in made_up_function_questions(documented, random.Random(seed))
    ]
    assert len(made_up) >= 20
    for question in made_up:
        [name] = re.findall(r"json\.\w+", question.question)
        assert name not in documented and question.kind == "unanswerable"
        assert question.answer == decline_answer(question.question)


def test_long_form_questions_ask_what_people_ask_of_the_kind_of_thing() -> None:
    fridge = [
        "A refrigerator is a commercial and home appliance consisting of a thermally "
        "insulated compartment and a heat pump.",
        "It transfers heat from its inside to its external environment so that its inside "
        "is cooled.",
    ]
    asked = {
        q.question
        for seed in range(30)
        for q in longform_questions(
            "https://w/r", "Refrigerator", fridge, "Technology", random.Random(seed)
        )
    }
    assert asked <= {
        "How does a refrigerator work?",
        "how does a refrigerator work",
        "What is a refrigerator used for?",
        "how do you use a refrigerator",
    }
    assert len(asked) > 1
    flu = ["Influenza is an infectious disease caused by influenza viruses.", "x" * 50]
    [question] = longform_questions("https://w/f", "Influenza", flu, "", random.Random(0))
    assert re.search(r"symptoms|causes|get it|serious", question.question)
    assert question.supporting == flu
    # a kind is what the subject is, not a word the sentence holds; people keep their asks
    vaccine = ["A vaccine is a biological preparation that protects against a disease.", "y" * 50]
    kubrick = ["Stanley Kubrick was an American film director and screenwriter.", "z" * 50]
    for seed in range(20):
        [asked] = longform_questions("https://w/v", "Vaccine", vaccine, "", random.Random(seed))
        assert not re.search(r"symptoms|causes|get it|serious", asked.question)
        [asked] = longform_questions(
            "https://w/k", "Stanley Kubrick", kubrick, "People", random.Random(seed)
        )
        assert "about?" not in asked.question and "What makes" not in asked.question


def test_a_long_form_answer_has_one_cited_sentence_per_quote() -> None:
    answer = compose_answer(
        [
            "Crows are birds of the genus Corvus.",
            "Crows can recognise individual human faces and remember them for years.",
        ]
    )
    assert answer == (
        "Crows are birds of the genus Corvus [1]. Crows can recognise individual human faces "
        "and remember them for years [2]."
    )
    quotes = [DemoQuote(title="Crow", extract=e) for e in ("Crows.", "Crows and faces.")]
    assert re.fullmatch(answer_regex(quotes), answer)
    # a long sentence is cited whole, and the answer's grammar takes it
    long_first = "The first part of a long sentence about crows, " + "word " * 40 + "and the end."
    whole = compose_answer([long_first, "Second quote here."])
    assert whole == f"{long_first.removesuffix('.')} [1]. Second quote here [2]."
    assert re.fullmatch(answer_regex(quotes), whole)
    assert compose_answer(["Crows [sic] are birds.", "y"]) is None  # an answer holds no bracket


async def test_the_demonstrator_collects_several_quotes_and_declines_when_nothing_answers(
    learning_web: Web, tmp_path: Path
) -> None:
    assert learning_web.offline is not None
    questions = list(generate_questions(learning_web.offline, per_page=5, seed=0))
    assert {q.kind for q in questions} == {"factoid", "longform", "unanswerable"}
    rng = random.Random(0)
    longform = [q for q in questions if q.kind == "longform"]
    declines = [q for q in questions if q.kind == "unanswerable"]
    made_longform = made_decline = 0
    demos = []
    for question in longform + declines:
        demo = await demonstrate(
            question, learning_web.session(config=SessionConfig(max_actions=20)), rng
        )
        if demo is None:
            continue
        demos.append(demo)
        assert demo.answer is not None
        assert re.fullmatch(answer_regex(demo.quotes), demo.answer)
        assert await replay(demo, learning_web.session()) == []
        if question.kind == "longform":
            made_longform += 1
            assert len(demo.quotes) >= 2 and distinct_sentence_count(demo.answer) == len(
                demo.quotes
            )
            cited = {int(n) for n in re.findall(r"\[(\d+)\]", demo.answer)}
            assert cited == set(range(1, len(demo.quotes) + 1))
        else:
            made_decline += 1
            assert is_declined(demo.answer) and demo.gold_answers == []
    assert made_longform >= 2 and made_decline >= 2
    # a demonstrations file is a question file too: each row keeps its question's kind
    path = tmp_path / "demos.jsonl"
    write_demonstrations(path, demos)
    assert {q.kind for q in load_questions(path)} == {"longform", "unanswerable"}


def test_generated_sets_mix_the_kinds() -> None:
    def q(kind: str, n: int) -> Question:
        gold = ["g"] if kind == "factoid" else []
        return Question(
            question=f"{kind} {n}", kind=kind, gold_answers=gold, split="train", style=f"s{n % 4}"
        )  # type: ignore[arg-type]

    pool = [q(kind, n) for kind in ("factoid", "longform", "unanswerable") for n in range(40)]
    picked = pick_questions(pool, {"train": 20}, seed=0)
    counts = {
        kind: sum(p.kind == kind for p in picked)
        for kind in ("factoid", "longform", "unanswerable")
    }
    assert counts == {"factoid": 12, "longform": 5, "unanswerable": 3}
    # a rare style gets an equal share of its kind before the common one fills the rest
    pool = [
        Question(question=f"{style} {n}", kind="unanswerable", split="train", style=style)
        for style, count in (("rare", 3), ("a", 40), ("b", 40))
        for n in range(count)
    ]
    for seed in range(10):
        picked = pick_questions(pool, {"train": 60}, seed=seed)  # 9 unanswerable
        assert [sum(p.style == style for p in picked) for style in ("rare", "a", "b")] == [3, 3, 3]
    one_style = [q for q in pool if q.style == "a"]
    assert len(pick_questions(one_style, {"train": 60}, seed=0)) == 9  # the quota is filled


def test_key_point_coverage_counts_points_stated_by_any_of_their_phrases() -> None:
    points = [["Zambezi", "Zambezi River"], ["Zambia and Zimbabwe"], ["1,708 m"]]
    answer = "It is on the Zambezi River [1], between Zambia and Zimbabwe [2]."
    assert key_point_coverage(answer, points) == round(2 / 3, 4)
    assert key_point_coverage(None, points) == 0.0
    assert key_point_coverage(answer, []) is None


def test_a_long_form_answer_counts_its_distinct_sentences_only() -> None:
    """Answers v6 and v10 wrote, which two sentences and two citations alone would count
    as WebGPT's style: a sentence repeated (in another case), a loop that never ends a
    sentence, a page's title cited as a sentence, and a quote's opening and then the
    whole quote."""
    cases = {
        "Crows are corvids [1]. They use tools [2].": 2,
        "Crows are clever. They use tools [1].": 2,
        "Lavandula is a genus [1]. LAVandula is a genus [2].": 0,
        "Edinburgh had a population of [1]. Edinburgh had a population of [2] Edinburgh "
        "(en.wikipedia.org)▦Edinburgh had a population of [1].": 0,
        "Cardiac arrest (en.wikipedia.org) [1]. When the heart stops, blood cannot "
        "circulate [2].": 1,
        "The common cold is a viral infectious disease of the upper respiratory tract [1]. "
        "It spreads easily. The common cold is a viral infectious disease of the upper "
        "respiratory tract that affects the nose [2].": 0,  # a run of 8 words twice
    }
    for answer, sentences in cases.items():
        assert distinct_sentence_count(answer) == sentences, answer


async def test_eval_reports_declines_and_long_form_figures(learning_web: Web) -> None:
    crow = "Crows are birds of the genus Corvus."
    faces = "Crows can recognise individual human faces and remember them for years."
    questions = [
        Question(question="What is a crow?", gold_answers=["bird"]),
        Question(question="Who won the 2031 Tour de France?", kind="unanswerable"),
        Question(
            question="Tell me about crows.",
            kind="longform",
            key_points=[["genus Corvus"], ["human faces"], ["tools"]],
        ),
    ]
    browse = ["Search Crow", "Clicked on link 0", f"Quote: {crow}", "End: Answer"]
    script = Script(
        commands=[
            *browse,
            *browse,
            "Search Crow",
            "Clicked on link 0",
            f"Quote: {crow}",
            f"Quote: {faces}",
            "End: Answer",
        ],
        answers=[
            f"{DECLINE_PREFIX}what a crow is.",  # declines an answerable question
            decline_answer("Who won the 2031 Tour de France?"),
            "Crows are birds of the genus Corvus [1]. They recognise human faces [2].",
        ],
    )
    report = await scripted_report(learning_web, questions, script)
    first, second, third = report.outcomes
    assert first.declined and not first.correct and not first.cited  # a decline is never right
    assert second.declined and second.faithful is None
    assert third.long_enough and third.key_points == round(2 / 3, 4)
    figures = report.figures()
    assert figures["correct"] == 0.0  # over the one factoid
    assert figures["declined"] == round(2 / 3, 4)
    assert figures["declined_answerable"] == 0.5 and figures["declined_unanswerable"] == 1.0
    assert figures["longform_two_citations"] == 1.0
    assert figures["key_point_coverage"] == round(2 / 3, 4)
