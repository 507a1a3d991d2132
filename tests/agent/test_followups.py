"""Follow-up questions made standalone from the last exchange of a conversation. The
places and people are made up: the rule reads the conversation, not a list of names."""

import pytest

from webgpt.agent.followups import Turn, standalone_question


def exchange(question: str, answer: str) -> list[Turn]:
    return [Turn("user", question), Turn("assistant", answer)]


WHO_FOUNDED = exchange("Who founded Pellworth Abbey?", "Edith Marrow founded Pellworth Abbey [1].")
WHO_WAS = exchange("Who was Tomas Vell?", "Tomas Vell was a Danish engraver [1].")
WHAT_CAPITAL = exchange(
    "What is the capital of Ostravia?", "Kelmar is the capital and largest city of Ostravia [1]."
)
WHERE_IS = exchange(
    "Where is the Orlin Bridge?", "The Orlin Bridge crosses the Vey in Dunmore [1]."
)
LOWER_CASE = exchange(
    "who founded pellworth abbey", "Pellworth Abbey was founded by Edith Marrow [1]."
)
# a thing named and asked about, whose answer names another place first
WHAT_IS = exchange("What is the Vey?", "The Vey is a river of Ostravia rising in Dunmore [1].")
# "what" typed with its "is" run in
WHATS = exchange(
    "whats the oldest bridge in ostravia", "The Orlin Bridge is Ostravia's oldest bridge [1]."
)


@pytest.mark.parametrize(
    ("history", "follow_up", "standalone"),
    [
        # a person asked for: he, she, his, her point to the answer's person
        (WHO_FOUNDED, "When did she die?", "When did Edith Marrow die?"),
        (
            WHO_FOUNDED,
            "what was her family name at birth",
            "what was Edith Marrow's family name at birth",
        ),
        (WHO_FOUNDED, "who taught her", "who taught Edith Marrow"),
        # ... and it to the thing the question named
        (WHO_FOUNDED, "when was it built", "when was Pellworth Abbey built"),
        # a person named and asked about: she is that person, not a word of the answer
        (WHO_WAS, "who did he marry", "who did Tomas Vell marry"),
        (WHO_WAS, "what was his best known print", "what was Tomas Vell's best known print"),
        # a thing asked for: it and there point to the answer's thing
        (WHAT_CAPITAL, "how big is it", "how big is Kelmar"),
        (WHAT_CAPITAL, "How many people live there?", "How many people live in Kelmar?"),
        # a thing named and asked about, with its article
        (WHERE_IS, "how long is it", "how long is the Orlin Bridge"),
        (WHAT_IS, "how long is it", "how long is the Vey"),
        (WHATS, "when was it built", "when was the Orlin Bridge built"),
        # a question typed in lower case names what its answer spells with capitals
        (LOWER_CASE, "when was it built", "when was Pellworth Abbey built"),
        (LOWER_CASE, "where was she born", "where was Edith Marrow born"),
    ],
)
def test_a_pronoun_is_replaced_by_what_it_points_to(
    history: list[Turn], follow_up: str, standalone: str
) -> None:
    made = standalone_question(follow_up, history)
    assert made.question == standalone and made.rewritten
    assert all(pronoun.lower() in follow_up.lower() for pronoun, _ in made.replaced)


@pytest.mark.parametrize(
    ("history", "question"),
    [
        (WHO_FOUNDED, "What is the tallest mountain in Ostravia?"),  # no pronoun
        (WHO_FOUNDED, "Who built the Orlin Bridge and when did he die?"),  # its own name
        (WHO_FOUNDED, "how long does it take to walk across Ostravia"),  # "it" of nothing
        (WHO_FOUNDED, "is it true that abbeys brewed beer"),
        (WHO_FOUNDED, "is there a museum of engraving"),  # "there" of being
        ([], "When did she die?"),  # nothing to point to
        (exchange("hello", "Hello! Ask me a question."), "when did she die"),  # nor here
        ([Turn("assistant", "Edith Marrow founded it.")], "When did she die?"),  # no question
    ],
)
def test_a_question_that_stands_alone_is_left_as_it_stands(
    history: list[Turn], question: str
) -> None:
    made = standalone_question(question, history)
    assert made.question == question and not made.rewritten


def test_only_the_last_exchange_is_read() -> None:
    history = [*WHO_WAS, *WHO_FOUNDED, Turn("user", "   ")]  # a blank message is no question
    assert standalone_question("when did he die", history).question == ("when did Edith Marrow die")
    unanswered = [*WHO_WAS, Turn("user", "Who founded Pellworth Abbey?")]  # no reply yet
    assert standalone_question("when was it built", unanswered).question == (
        "when was Pellworth Abbey built"
    )
