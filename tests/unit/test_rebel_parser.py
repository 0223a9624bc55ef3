"""The REBEL parser on real REBEL-format strings (linearised from the sample) and tricky ones."""

from __future__ import annotations

import json

from kbench.sources.rebel import OBJ, SUBJ, TRIPLET, ParsedTriplet, find_span, parse_rebel_output


def linearise(triples: list[tuple[str, int, str, str]]) -> str:
    """Write REBEL's target string from (subject, subject_start, object, relation) tuples, as the REBEL
    dataset loader does (the real format the parser reads).

    Subjects appear in order of their start offset; the triples of one subject keep their order.
    """
    by_subject: dict[tuple[int, str], list[tuple[str, str]]] = {}
    for subject, start, obj, relation in triples:
        by_subject.setdefault((start, subject), []).append((obj, relation))
    chunks = []
    for (_, subject), pairs in sorted(by_subject.items()):
        chunks.append(f"{TRIPLET} {subject} " + " ".join(f"{SUBJ} {o} {OBJ} {r}" for o, r in pairs))
    return " ".join(chunks)


def _sample_docs(shared_data, n=200):
    with open(shared_data / "rebel_sample" / "sample.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for _, line in zip(range(n), fh)]


def test_round_trips_the_sample_annotations(shared_data):
    checked = 0
    for doc in _sample_docs(shared_data):
        by_sentence: dict[int, list] = {}
        for t in doc["triples"]:
            by_sentence.setdefault(t["sentence_id"], []).append(t)
        for triples in by_sentence.values():
            tuples = [(t["subject"]["surfaceform"], t["subject"]["boundaries"][0], t["object"]["surfaceform"],
                       t["predicate"]["surfaceform"]) for t in triples]
            parsed = parse_rebel_output(linearise(tuples))
            assert sorted((p.head, p.tail, p.relation) for p in parsed) == sorted((s, o, r) for s, _, o, r in tuples)
            checked += len(tuples)
    assert checked > 300


def test_first_sample_record_exact_string(shared_data):
    doc = _sample_docs(shared_data, 1)[0]
    t = doc["triples"][0]
    text = linearise([(t["subject"]["surfaceform"], 0, t["object"]["surfaceform"], t["predicate"]["surfaceform"])])
    assert text == "<triplet> Transportation Journal <subj> Penn State University Press <obj> publisher"


def test_shared_head_and_several_heads_with_model_noise():
    out = ("<s><triplet> Trinity Peninsula <subj> Graham Land <obj> part of <subj> Antarctica <obj> continent "
           "<triplet> Graham Land <subj> Antarctica <obj> continent</s><pad><pad>")
    assert parse_rebel_output(out) == [
        ParsedTriplet("Trinity Peninsula", "Graham Land", "part of"),
        ParsedTriplet("Trinity Peninsula", "Antarctica", "continent"),
        ParsedTriplet("Graham Land", "Antarctica", "continent"),
    ]


def test_missing_obj_and_empty_relation_yield_nothing_for_that_pair():
    assert parse_rebel_output("<triplet> A <subj> B") == []
    assert parse_rebel_output("<triplet> A <subj> B <obj>") == []
    assert parse_rebel_output("<triplet> A <subj> B <obj>   <triplet> C <subj> D <obj> r") == [ParsedTriplet("C", "D", "r")]
    assert parse_rebel_output("<triplet> <subj> B <obj> r") == []  # empty head
    assert parse_rebel_output("") == [] and parse_rebel_output("no markers at all") == []


def test_unicode_and_glued_markers():
    out = "<triplet>Zürich<subj>Schweiz  (CH)<obj>country<subj> 東京 <obj> twin town"
    assert parse_rebel_output(out) == [ParsedTriplet("Zürich", "Schweiz (CH)", "country"),
                                       ParsedTriplet("Zürich", "東京", "twin town")]


def test_find_span_prefers_exact_then_nearest_then_casefold():
    s = "Paris is in France. paris, not Paris, France."
    assert find_span(s, "Paris") == (0, 5)
    assert find_span(s, "Paris", near=30) == (31, 36)
    assert find_span("the PARIS agreement", "Paris") == (4, 9)
    assert find_span("Straße", "STRASSE") is None  # casefold changes length: no unreliable offsets
    assert find_span(s, "Berlin") is None and find_span(s, "") is None
