"""Answers' plain logic (search/answers.py): which passages are sent, the prompt, and the check of
the model's citations."""

from __future__ import annotations

import pytest

from searchcrawl.search.answers import (
    OLDER_TEXT,
    AnswerConfig,
    anchored,
    answer_config,
    checked_answer,
    dropped_because,
    messages,
    select_sources,
    sentences_of,
    supported,
)

LEAVE = "Leave\nAnnual leave is booked online in the HR portal."
PERMITS = "Parking\nParking permits are free at the gate office."
CONFIG = AnswerConfig(url="http://127.0.0.1:1/v1", model="m", passages=2, passage_chars=50, budget_chars=80, threshold=0.6)


def passage(text: str, score: float, heading: str = "", made_from: str = "current") -> dict:
    return {"passage_text": text, "score": score, "passage_heading": heading, "parent_text_digest": made_from}


def documents_of(keys: str) -> dict[str, dict]:
    return {key: {"id": key, "url": f"https://h.test/{key}", "title": key.upper(), "text_digest": "current"} for key in keys}


def test_only_readable_similar_passages_within_the_budget_are_sent_numbered() -> None:
    nearest = [
        ("a", passage("Leave is booked in the HR portal. " * 3, 0.9, "Booking leave")),
        ("gone", passage("withheld text", 0.95)),  # not among the readable documents: never named
        ("b", passage("Parking permits are free.", 0.8)),
        ("c", passage("Unrelated.", 0.4)),
        ("d", passage("Third good passage.", 0.7)),
    ]
    sources, considered = select_sources(nearest, documents_of("abcd"), CONFIG)
    assert [(s.number, s.document) for s in sources] == [(1, "a"), (2, "b")]
    assert len(sources[0].text) == 50 and sources[0].url == "https://h.test/a#:~:text=Booking%20leave"
    assert [(c.document, c.verdict) for c in considered] == [
        ("a", "sent as [1]"),
        ("b", "sent as [2]"),
        ("c", "below the threshold"),
        ("d", "over the budget"),
    ]
    assert all("withheld" not in str(item) for item in (*sources, *considered))


def test_a_passage_made_from_an_older_text_of_its_page_is_never_sent() -> None:
    """Issue 91: a page changed by a crawl whose passes are off keeps its old passages until the
    next pass; one of them, made from the text before the change (its ``parent_text_digest`` is not
    the document's), may say what the page no longer does (a password it dropped)."""
    nearest = [
        ("a", passage("The guest password is PLOVER7731.", 0.95, made_from="before")),
        ("b", passage("Parking permits are free.", 0.8)),
        ("c", passage("A passage of a document indexed before text digests.", 0.9, made_from="")),
    ]
    documents = {**documents_of("ab"), "c": {"id": "c", "url": "https://h.test/c", "title": "C"}}
    sources, considered = select_sources(nearest, documents, CONFIG)
    assert [(s.number, s.document) for s in sources] == [(1, "b")] and "PLOVER" not in str(sources)
    assert [(c.document, c.verdict) for c in considered] == [("a", OLDER_TEXT), ("b", "sent as [1]"), ("c", OLDER_TEXT)]


def test_a_passage_of_an_older_text_with_the_same_checksum_is_never_sent() -> None:
    """Issue 91 (review of point 4): with ``checksum_of = "main_text"`` a page whose sidebar dropped
    a sentence is pushed again (its date changed) with the same checksum; its old passage, made
    from the text with the sentence, is compared by the text's digest, not by the checksum."""
    stale = {**passage("Sidebar: the guest password is PLOVER7731.", 0.95, made_from="before"), "parent_checksum": "main"}
    documents = {"a": {**documents_of("a")["a"], "checksum": "main", "text_digest": "after"}}
    sources, considered = select_sources([("a", stale)], documents, CONFIG)
    assert sources == [] and [(c.document, c.verdict) for c in considered] == [("a", OLDER_TEXT)]


def test_the_prompt_numbers_the_sources_and_asks_for_citations() -> None:
    sources, _ = select_sources([("a", passage("Text A.", 0.9))], documents_of("a"), CONFIG)
    chat = messages("what?", sources)
    assert chat[0]["role"] == "system" and "[1]" in chat[0]["content"]
    assert chat[1]["content"] == "Sources:\n\n[1] A\nText A.\n\nQuestion: what?"


def test_a_sentence_keeps_its_place_only_with_a_citation_of_a_source_sent() -> None:
    kept, refused = checked_answer("Leave is booked online [1]. It is great. Permits are free [2][1].", [LEAVE, PERMITS])
    assert refused == "" and kept == [("Leave is booked online.", (1,)), ("Permits are free.", (2, 1))]


def test_a_citation_of_a_source_never_sent_refuses_the_whole_answer() -> None:
    assert checked_answer("Leave is booked online [1]. Salaries are secret [7].", [LEAVE, PERMITS]) == (
        [],
        "the model cited a source it was not given",
    )
    assert checked_answer("Nothing cited here.", [LEAVE, PERMITS])[1] == "the model's answer cited none of the sources"
    assert (
        checked_answer("I cannot answer this from the sources [1].", [LEAVE, PERMITS])[1]
        == "the model's answer cited none of the sources"
    )


def test_a_cited_sentence_without_a_word_is_no_answer() -> None:
    """A small model's junk seen in the answers benchmark (stop 88): numbers and citations alone."""
    assert checked_answer("[1] 2. [2] 3. [3] 4. 5.", [LEAVE, PERMITS, LEAVE]) == (
        [],
        "the model's answer holds no words, only numbers and citations",
    )
    assert checked_answer("4.2 [1]. Leave is booked online [1].", [LEAVE]) == ([("Leave is booked online.", (1,))], "")
    assert checked_answer("休暇はオンラインで予約します [1]。", ["休暇\n年次休暇はオンラインで予約します。"])[0] == [
        ("休暇はオンラインで予約します。", (1,))
    ]


def test_the_models_markup_stays_text_and_anchors_only_where_they_can_be() -> None:
    kept, _ = checked_answer("<script>alert(1)</script> is what [1] says.", ["<script>alert(1)</script>"])
    assert kept == [("<script>alert(1)</script> is what says.", (1,))]  # escaped where it is shown
    assert anchored("https://h.test/a#top", "X") == "https://h.test/a#top"
    assert anchored("smb://share/a.doc", "X") == ""  # as the hits: no link of a scheme a browser is not given
    assert anchored("javascript:alert(1)", "X") == ""
    assert anchored("https://h.test/a", "Re-install " + "x" * 90).endswith("#:~:text=Re%2Dinstall")


def test_a_citation_in_a_form_the_check_cannot_read_refuses_the_answer() -> None:
    for odd in ("Leave is booked [1]. Pay is secret [7 ].", "Booked [1]. Also [7,8].", "Booked [1] and ［7］."):
        assert checked_answer(odd, [LEAVE, PERMITS]) == ([], "the model cited in a form the check cannot read"), odd


def test_a_cited_sentence_its_sources_do_not_say_is_dropped() -> None:
    """The small model's junk in the answers benchmark (stop 89): invented code, invented links,
    a passage's title copied back; kept only what the passages it cites say."""
    profiling = "Profiling\nUse cProfile to find the slowest functions of a program: python -m cProfile script.py"
    code = "Here is an example: import torch from torch import nn def multiplier(tensor): return tensor [1]."
    assert checked_answer(code, [profiling], "find which part of my program is slow") == (
        [],
        "the model's answer is not what its sources say",
    )
    linked = "The profiler is documented at https://github.com/invented/profiler-guide."
    assert supported(linked, [profiling]) == 0.0  # a link its source does not hold
    documented = [profiling + " https://docs.test/cProfile"]
    assert supported("The profiler is documented at HTTPS://Docs.test/cProfile.", documented) > 0.5
    assert supported("The profiler is documented at https://docs.te.", documented) == 0.0  # a link cut short
    kept, refused = checked_answer(
        "To find the slowest part of a program, use cProfile [1]. It was written in 1987 by wizards [1].",
        [profiling],
        "find which part of my program is slow",
    )
    assert refused == "" and kept == [("To find the slowest part of a program, use cProfile.", (1,))]


def test_sources_are_compared_on_their_words_whatever_the_ending_and_script() -> None:
    assert supported("Functions profiled", ["the profiler times each function"]) == 1.0  # endings differ
    assert supported("Indexing deletes gone pages", ["The indexer deleted the page that was gone."]) == 1.0
    assert supported("Unrelated gibberish entirely", ["The indexer deleted the page."]) == 0.0
    assert supported("休暇はオンライン", ["年次休暇はオンラインで予約"]) == 1.0  # two characters at a time
    assert supported("給与は秘密", ["年次休暇はオンラインで予約"]) == 0.0
    assert supported("4.2. 3.1.", ["4.2. 3.1."]) == 0.0  # nothing of it can be checked


def test_an_answer_that_does_not_speak_of_the_question_is_refused() -> None:
    """A passage's title copied back (the benchmark's "mathematical morphology" answered with the
    SymPy chapter's contents) is what its source says, and no answer."""
    sympy = "Sympy\n3.2.1. First Steps with SymPy 3.2.1.1. Using SymPy as a calculator"
    copied = "First Steps with SymPy Using SymPy as a calculator [1]."
    assert checked_answer(copied, [sympy], "mathematical morphology") == ([], "the model's answer does not speak of the question")
    assert checked_answer(copied, [sympy], "calculate with sympy")[1] == ""
    assert checked_answer(copied, [sympy], "pdb?")[1] == ""  # no content word asked: nothing to compare


def test_the_support_setting_is_a_share_and_zero_turns_the_check_off() -> None:
    settings = {"SEARCHCRAWL_ANSWERS_URL": "http://127.0.0.1:1/v1"}
    assert answer_config(settings.get, None).support == 0.5
    assert answer_config({**settings, "SEARCHCRAWL_ANSWERS_SUPPORT": "0"}.get, None).support == 0.0
    with pytest.raises(ValueError, match="SEARCHCRAWL_ANSWERS_SUPPORT"):
        answer_config({**settings, "SEARCHCRAWL_ANSWERS_SUPPORT": 1.5}.get, None)
    code = "Here is an example: import torch from torch import nn [1]."
    assert checked_answer(code, [LEAVE], "", support=0.0)[0] == [("Here is an example: import torch from torch import nn.", (1,))]


# Passages of the Scipy lecture notes (the judged set's grade-2 pages, as the answers benchmark sent
# them) and answers as a capable model words them: paraphrased, with words the passage does not use
REAL = [
    (
        "numpy broadcasting",
        "1.4.2. Numerical operations on arrays\nBasic operations on numpy arrays (addition, etc.) are elementwise This"
        " works on arrays of the same size. Nevertheless, It's also possible to do operations on arrays of different"
        " sizes if NumPy can transform these arrays so that they all have the same size: this conversion is called"
        " broadcasting.",
        "Broadcasting lets NumPy operate elementwise on arrays of different sizes by transforming them to the same size [1].",
    ),
    (
        "changing a slice of my array also changes the original array",
        "1.4.1. The NumPy array object\nA slicing operation creates a view on the original array, which is just a way"
        " of accessing array data. Thus the original array is not copied in memory. You can use np.may_share_memory()"
        " to check if two arrays share the same memory block. When modifying the view, the original array is modified"
        " as well.",
        "Slicing returns a view, not a copy, so modifying the slice modifies the original array as well [1]. Use"
        " np.may_share_memory() to check whether two arrays share memory [1].",
    ),
    (
        "how can I find where a function reaches its lowest value",
        "2.7. Mathematical optimization: finding minima of functions\nBrute force: a grid search"
        " scipy.optimize.brute() evaluates the function on a given grid of parameters and returns the parameters"
        " corresponding to the minimum value.",
        "Use scipy.optimize.brute(), which evaluates the function on a grid of parameters and returns those of the minimum value [1].",
    ),
    (
        "python crashes with a segmentation fault",
        "2.3. Debugging code\n(gdb) run segfault.py Starting program: /usr/bin/python segfault.py Program received"
        " signal SIGSEGV, Segmentation fault. We get a segfault, and gdb captures it for post-mortem debugging in the"
        " C level stack (not the Python call stack). We can debug the C call stack using gdb's commands.",
        "Run the script under gdb: it captures the segmentation fault and lets you debug the C call stack [1].",
    ),
    (
        "mathematical morphology",
        "3.3. Scikit-image: image processing\nOpening removes small objects and smoothes corners. Grayscale"
        " mathematical morphology Mathematical morphology operations are also available for (non-binary) grayscale"
        " images (int or float type). Erosion and dilation correspond to minimum (resp. maximum) filters.",
        "Scikit-image provides mathematical morphology operations such as erosion, dilation and opening, for grayscale images too [1].",
    ),
]


@pytest.mark.parametrize(("question", "source", "said_as"), REAL, ids=[question for question, _, _ in REAL])
def test_a_paraphrase_of_a_real_passage_is_kept_whole(question: str, source: str, said_as: str) -> None:
    kept, refused = checked_answer(said_as, [source], question)
    assert refused == "" and len(kept) == said_as.count("[1]")


def test_each_dropped_sentence_says_why_as_explain_answer_shows_it() -> None:
    text = "Leave is booked online [1]. It is great. 4.2 [1]. I cannot answer this [1]. Import torch from nn [2]."
    verdicts = [dropped_because(plain, cites, [LEAVE, PERMITS], "book leave", 0.5) for plain, cites in sentences_of(text)]
    assert verdicts == ["", "no citation", "no word", "says it cannot answer", "its sources say 0% of its words, under 50%"]


def test_what_a_hostile_review_found_the_check_let_through_or_refused() -> None:
    """Stop 89's review of the sources' words check, each case as it found it."""
    days = "Leave\nEmployees get 25 days of annual leave. Leave is booked online before 15 March."
    # a citation written after the full stop is its own sentence's, not the next one's
    kept, refused = checked_answer("Leave is booked online. [1] Permits are free. [2]", [LEAVE, PERMITS], "book leave")
    assert refused == "" and kept == [("Leave is booked online.", (1,)), ("Permits are free.", (2,))]
    # Japanese sentences end at 。 without a space: an invented one does not ride along
    japanese = "休暇\n年次休暇はオンラインのHRポータルで予約します。申請は上司が承認します。"
    answer_ja = "年次休暇はオンラインのHRポータルで予約します [1]。給与は毎月現金で支払われ、賞与は年三回です [1]。"
    assert checked_answer(answer_ja, [japanese], "休暇の予約方法")[0] == [
        ("年次休暇はオンラインのHRポータルで予約します。", (1,))
    ]
    # the question repeated back is not what the source says
    echo = "Yes, the CEO bonus pool is two million euros [1]."
    assert (
        checked_answer(echo, [days], "is the CEO bonus pool two million euros?")[1]
        == "the model's answer is not what its sources say"
    )
    # a number the source does not hold (40 days where it says 25) is the model's own
    assert checked_answer("Employees get 40 days of annual leave [1].", [days], "how many days of leave")[0] == []
    assert checked_answer("Employees get 25 days of annual leave [1].", [days], "how many days of leave")[0] != []
    # a mail address or a host name without a scheme is a link too: in the source, or dropped
    mailed = "Leave\nWrite to leave@hr.example.com or open hr-portal.example.net/leave to book leave."
    assert supported("Book leave by mail to leave@hr-example.net.", [mailed]) == 0.0
    assert supported("Book leave at HR-Portal.example.net/leave.", [mailed]) > 0.5
    assert supported("Use scipy.optimize.brute to find the minimum.", ["scipy.optimize.brute finds the minimum"]) == 1.0
    # an abbreviation ends no sentence: the qualifier before it stays with what it qualifies
    exception = "Except for contractors, e.g. interns, all employees get 25 days of annual leave [1]."
    assert [plain for plain, _ in sentences_of(exception)] == [exception.replace(" [1]", "")]
    german = "Den Antrag stellen Sie z. B. im Personalportal [1]. Er gilt ab sofort [1]."
    assert [plain for plain, _ in sentences_of(german)] == [
        "Den Antrag stellen Sie z. B. im Personalportal.",
        "Er gilt ab sofort.",
    ]
    # code that indexes an array is no citation of a source never sent
    code = "Use a[0] to get the first element of the array [1]."
    assert checked_answer(code, ["Arrays\nThe first element of an array is a[0]."], "first element of an array") == (
        [("Use a[0] to get the first element of the array.", (1,))],
        "",
    )


def test_citations_that_head_a_line_cite_nothing() -> None:
    """The last answers the small model gave with every related page withheld (stop 89's benchmark,
    Nutch): it wrote its sources out as the prompt numbers them ("[1] Title" and text) or put a
    citation alone under "The answer is:"; each was taken as a citation (of the sentence before
    it, moved there from after its full stop, or of the text after it) and kept."""
    fetcher = "org.apache.nutch.fetcher\nQueueFeeder feeds the queues. Enum Description FetcherThreadEvent.PublishEventType Type of event to specify start, end or reporting of a fetch item."
    written_out = (
        "The answer to the question is:\n[1] Ftp (apache-nutch 1.20 API)\nFetcherDb This class feeds the queues. "
        "Enum Description FetcherThreadEvent.PublishEventType Type of event to specify start, end or reporting of a fetch item.\n"
        "[2] org.apache.nutch.fetcher\nQueueFeeder feeds the queues."
    )
    assert checked_answer(written_out, [fetcher, fetcher], "fetcher hangs on slow servers") == (
        [],
        "the model's answer cited none of the sources",
    )
    indexer = "Overview\nIndexing filter to add document metadata to the index, part of the Apache Nutch indexer plugin."
    under_a_colon = "The answer to the question is:\n\n[1]\n\nThis is because the indexer plugin of Apache Nutch adds document metadata to the index."
    assert checked_answer(under_a_colon, [indexer], "deleted 404 pages still in the index")[0] == []
    # what cites after its sentence still does: at the line's end, or alone on the line after it
    cited = "The indexer plugin of Apache Nutch adds document metadata to the index.\n[1]\nSources:\n[1] Overview"
    assert checked_answer(cited, [indexer], "what does the index hold")[0] == [
        ("The indexer plugin of Apache Nutch adds document metadata to the index.", (1,))
    ]
    assert sentences_of("- [1] Leave\nLeave is booked online [1].") == [("- Leave Leave is booked online.", (1,))]
    assert sentences_of("Leave is booked online.\n[1]\n[2]") == [("Leave is booked online.", (1, 2))]


def test_what_a_review_found_citations_that_head_a_line_let_through_or_refused() -> None:
    """Stop 90's review of the rule above, each case as it found it."""
    leave = "Leave policy\nLeave is booked online in the portal by every employee."
    # a heading's citation cites nothing, but a number never sent still says the model confused its sources
    for confused in (
        "[7] Payroll\nLeave is booked online in the portal [1].",
        "The answer is:\n[9]\nLeave is booked online [1].",
    ):
        assert checked_answer(confused, [leave], "book leave") == ([], "the model cited a source it was not given"), confused
    assert (
        checked_answer("[٧] x\nLeave is booked online [1].", [leave], "book leave")[1]
        == "the model cited a source it was not given"
    )
    # a sentence before a heading taken out ends there: an abbreviation does not join it to the next one
    joined = "Contractors booked ninety weeks leave, plan A.\n[1] Contractors use the online portal ninety weeks, plan B [1]."
    assert checked_answer(joined, [leave], "book leave")[0] == []
    riding = "The board gets ninety weeks under plan A.\n[1] Leave is booked online in the portal by every employee [1]."
    assert checked_answer(riding, [leave], "book leave")[0] == [("Leave is booked online in the portal by every employee.", (1,))]
    # a sentence that ends in a quote, a bracket, markup or an ellipsis, with its citation on the next line
    for ending in ('portal."', "portal.)", "portal.**", "portal…", "portal．"):
        kept, refused = checked_answer(f"Leave is booked online in the {ending}\n[1]", [leave], "book leave")
        assert refused == "" and [cites for _text, cites in kept] == [(1,)], ending
    for line in ("[1], [2]", "[1]."):
        assert checked_answer(f"Leave is booked online in the portal.\n{line}", [leave, leave], "book leave")[0] != [], line
    # only \n, \r\n and \r break lines: a form feed or a line separator in a sentence is a space
    assert checked_answer("Leave is booked online\x0c[1] in the portal.", [leave], "book leave")[0] != []
