"""The XTEVAL document generator: fixed slots per input type, no gold leak, seeded."""

import random

import pytest

from kbench.errors import InputError, UserError
from kbench.tasks.xteval.documents import (GOLD, INPUT_TYPES, DocumentGenerator, Triple, load_templates,
                                              render)

FACTS = [
    Triple("Barack Obama", "P69", "Harvard"),
    Triple("Justin Trudeau", "P69", "McGill"),
    Triple("Bill Gates", "P69", "Harvard"),
    Triple("Barack Obama", "P19", "Honolulu"),
    Triple("Steve Jobs", "P19", "San Francisco"),
    Triple("Michael Jordan", "P106", "basketball player"),
    Triple("Marie Curie", "P106", "physicist"),
    Triple("Marie Curie", "P106", "chemist"),   # N-M: two true tails for one (head, relation)
]
TEMPLATES = {"P69": ["[X] graduated from [Y] .", "[X] earned a degree from [Y] ."],
             "P19": ["[X] was born in [Y] ."], "P106": ["[X] works as a [Y] ."]}


@pytest.fixture()
def gen():
    return DocumentGenerator(FACTS, TEMPLATES)


@pytest.mark.parametrize("doc_type", list(INPUT_TYPES))
def test_each_type_fixes_exactly_its_slots(gen, doc_type):
    keep = INPUT_TYPES[doc_type]
    rng = random.Random(0)
    for fact in FACTS:
        for _ in range(20):
            doc = gen.sample(doc_type, fact, rng)
            assert doc is not None and doc.doc_type == doc_type
            for kept, got, gold in zip(keep, (doc.head, doc.relation, doc.tail), (fact.head, fact.relation, fact.tail)):
                assert (got == gold) == kept, (doc_type, fact, doc)
            assert doc.text in {render(t, doc.head, doc.tail) for t in TEMPLATES[doc.relation]}


def test_negatives_never_carry_a_true_tail_of_the_query(gen):
    curie = Triple("Marie Curie", "P106", "physicist")
    rng = random.Random(1)
    tails = {gen.sample("(h,r,.)", curie, rng).tail for _ in range(50)}
    assert "chemist" not in tails and "physicist" not in tails and tails
    enumerated = gen.enumerate_head_relation(curie, rng)
    assert {d.tail for d in enumerated} == {"basketball player"}   # the other P106 tails of D^theta
    obama = gen.enumerate_head_relation(FACTS[0], rng)
    assert {d.tail for d in obama} == {"McGill"}
    assert all(d.head == "Marie Curie" and d.relation == "P106" for d in enumerated)
    for doc_type in INPUT_TYPES:
        if doc_type != GOLD:
            for _ in range(30):
                d = gen.sample(doc_type, curie, rng)
                assert (d.head, d.relation, d.tail) != (curie.head, curie.relation, curie.tail)


def test_true_unrelated_documents_share_no_slot(gen):
    fact = FACTS[0]
    docs = gen.true_unrelated(fact, FACTS, 10, random.Random(2))
    assert docs and all(d.head != fact.head and d.relation != fact.relation and d.tail != fact.tail for d in docs)
    assert all(Triple(d.head, d.relation, d.tail) in FACTS for d in docs)


def test_seeded_and_query_has_no_tail(gen):
    def draw(seed):
        rng = random.Random(seed)
        return [gen.sample(k, f, rng) for f in FACTS for k in INPUT_TYPES] + [gen.query(FACTS[0], rng)]

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)
    q = gen.query(FACTS[0], random.Random(0))
    assert "Barack Obama" in q and "Harvard" not in q


def test_missing_alternative_gives_none_and_missing_template_is_an_error():
    single = DocumentGenerator([Triple("A", "P1", "B")], {"P1": ["[X] is [Y] ."]})
    assert single.sample("(h,.,t)", Triple("A", "P1", "B"), random.Random(0)) is None
    with pytest.raises(UserError, match="P2"):
        DocumentGenerator([Triple("A", "P2", "B")], {"P1": ["[X] is [Y] ."]})


def test_load_templates_from_lama_folder(shared_data):
    templates = load_templates(shared_data / "lama_trex")
    assert templates["P19"] == ["[X] was born in [Y] ."]   # LPAQA's P19 prompt is the same, kept once
    assert templates["P27"][0] == "[X] is [Y] citizen ." and len(templates["P27"]) == 2   # + the LPAQA paraphrase
    every = load_templates(shared_data / "lama_trex", variants=None)
    assert len(every["P27"]) == 3 and set(templates["P27"]) < set(every["P27"])   # + AutoPrompt's
    assert all("[X]" in t and "[Y]" in t for ts in every.values() for t in ts)
    with pytest.raises(InputError, match="Nope_relations.jsonl"):
        load_templates(shared_data / "lama_trex", variants=("Nope",))


def test_iid_and_ood_splits():
    from kbench.tasks.xteval.pipeline import split_facts

    facts = [Triple(f"h{i}", f"P{i % 5 + 1}", f"t{i}") for i in range(50)]
    train, test = split_facts(facts, "iid", 0, 0.6)
    assert len(train) == 30 and len(test) == 20 and set(train) | set(test) == set(facts)
    assert split_facts(facts, "iid", 0, 0.6) == (train, test) and split_facts(facts, "iid", 1, 0.6) != (train, test)
    train, test = split_facts(facts, "ood", 0, 0.6)
    train_rel, test_rel = {f.relation for f in train}, {f.relation for f in test}
    assert len(train_rel) == 3 and len(test_rel) == 2 and not train_rel & test_rel
    with pytest.raises(UserError, match="at least 2 relations"):
        split_facts(facts[:1], "ood", 0, 0.6)


def test_ood_training_documents_never_show_a_held_out_relation():
    """Every training document (gold, hard negatives, validation rows, every epoch) of an OOD
    split names only train relations: no held-out template, head or tail reaches training."""
    from kbench.tasks.xteval.training.crossencoder import training_candidates
    from kbench.tasks.xteval.pipeline import downstream_generators, split_facts

    relations = [f"P{i}" for i in range(1, 6)]
    facts = [Triple(f"head-{r}-{i}", r, f"tail-{r}-{i % 3}") for r in relations for i in range(8)]
    templates = {r: [f"[X] marker{r}a [Y] .", f"[X] has marker{r}b [Y] ."] for r in relations}
    for seed in range(3):
        train, test = split_facts(facts, "ood", seed, 0.6)
        held_out = {f.relation for f in test}
        train_gen, test_gen = downstream_generators("ood", facts, train, templates)
        texts = []
        for epoch in range(5):
            rows = training_candidates(train, train_gen, 4, random.Random(f"{seed}-{epoch}"))
            texts += [t for row in rows for t in (row.query, *row.documents)]
        assert len(texts) > 5 * len(train) * 4
        for relation in held_out:
            leaked = [t for t in texts if f"marker{relation}" in t or f"-{relation}-" in t]
            assert not leaked, (seed, relation, leaked[:3])
        # The test side still draws distractors from all of D^theta (held-out relations included).
        assert set(test_gen.relations) == set(relations)
    iid_train, _ = split_facts(facts, "iid", 0, 0.6)
    assert set(downstream_generators("iid", facts, iid_train, templates)[0].relations) == set(relations)
