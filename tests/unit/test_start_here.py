"""The guided path's steps are short: each body at most MAX_WORDS words (placeholders count as one word each),
Data → Policy → Preview → Run → Review in that order, each with its details behind "Learn more"."""

from __future__ import annotations

import string

from ui import start_here as guide


def test_the_steps_follow_the_path_in_order():
    assert [s.title for s in guide.STEPS] == ["Data", "Policy", "Preview", "Run", "Review"]
    assert all(s.page.startswith("app_pages/") for s in guide.STEPS)


def test_every_step_is_at_most_120_words_with_its_details_behind_learn_more():
    assert guide.MAX_WORDS == 120
    for s in guide.STEPS:
        n = guide.words(s.body)
        assert 20 <= n <= guide.MAX_WORDS, (s.title, n)
        assert s.more or s.title == "Preview", s.title  # the Preview step's "Learn more" is the worked example
        fields = [f for _, f, _, _ in string.Formatter().parse(s.body) if f]
        assert all(f.isidentifier() for f in fields), (s.title, fields)


def test_words_counts_words_not_markdown_marks():
    assert guide.words("**P(r) = 2ρ** — the *base* loss, 1ρ.") == 6  # P(r), 2ρ, the, base, loss, 1ρ
    assert guide.words("") == 0
