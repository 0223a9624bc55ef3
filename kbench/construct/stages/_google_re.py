"""Google-RE's relations for `load_lama`: the release ships no template file, so each relation read
is named with the Wikidata property it corresponds to, a label and a cloze template; the three
LAMA evaluates are the defaults."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, field_validator

PID = re.compile(r"^P[1-9][0-9]*$")


def check_template(template: str) -> str | None:
    """Why a cloze template is unusable, or None when it has exactly one [X] and one [Y]."""
    for slot in ("[X]", "[Y]"):
        if template.count(slot) != 1:
            return f"template {template!r} must contain {slot} exactly once"
    return None


class GoogleRERelation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    #: The Wikidata property the Google-RE relation corresponds to (its rows' `wikidata_property`).
    wikidata_property: str
    label: str
    template: str

    @field_validator("wikidata_property")
    @classmethod
    def _pid(cls, v: str) -> str:
        if not PID.match(v):
            raise ValueError(f"not a Wikidata property id: {v!r}")
        return v

    @field_validator("template")
    @classmethod
    def _template(cls, v: str) -> str:
        if problem := check_template(v):
            raise ValueError(problem)
        return v


DEFAULT_GOOGLE_RE = {
    "date_of_birth": GoogleRERelation(wikidata_property="P569", label="date of birth", template="[X] was born in [Y] ."),
    "place_of_birth": GoogleRERelation(wikidata_property="P19", label="place of birth", template="[X] was born in [Y] ."),
    "place_of_death": GoogleRERelation(wikidata_property="P20", label="place of death", template="[X] died in [Y] ."),
}
