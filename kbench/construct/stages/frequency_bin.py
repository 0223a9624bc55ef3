"""Stage `frequency_bin`: label facts head / torso / tail by frequency, drop the buffers.

The frequency comes from a pluggable source (`kbench.construct.frequency`): `evidence_count`
(the T-REx evidence column), `counts_table` (a local qid -> count table), `pageviews`, or any
source added through that module's hook. It is written to the `frequency` column.

Units (`unit`):
  * `"row"` (default): every fact row with a known frequency is ranked on its own.
  * `"entity"` (MAPLE: entities are binned by popularity): the rows are grouped by their
    `entity` ("subject" by default; the key is `<entity>_id`, or the label `<entity>` where the
    id is null), each entity gets one frequency (`entity_frequency`: the largest of its rows'
    frequencies, "max", or their sum, "sum"; a per-entity source such as pageviews gives every
    row of an entity the same value, so both are that value), the percentiles are cut over
    entities, and every fact gets its entity's bin. Its `frequency` column is then the entity's.
    A row whose own frequency is unknown stays unknown (it is not given its entity's bin).

Cuts (MAPLE's frequency bins): the n ranked units, highest frequency first, are cut at
c_k = floor(n * cum_k / 100) (exact arithmetic) for `percentages` = [head, buffer, torso,
buffer, tail] (default 10/20/40/20/10): the unit at position i (0-based) falls in the first
segment k with i < c_k. Example, n = 25: cuts 2, 7, 17, 22, 25 -> 2 head, 5 buffer, 10 torso,
5 buffer, 3 tail.

Cut by mass (`cut = "mass"`, Head-to-Tail's cut): the units, most popular first, are cut where the
running total of their popularity reaches 1/3 and 2/3 of the total popularity: the unit whose
popularity makes the running total reach 1/3 is the last head unit (the units before it hold
less than 1/3), and likewise for 2/3 and the torso. So the head is a few very popular units and
the tail many rare ones, each holding about a third of the mass; there are no buffers and
`percentages` does not apply. Ties are kept whole in the same way as below.

The raw popularity stays on every kept row (`frequency`), so a chart can also plot accuracy
against popularity as a continuous variable (PopQA's deciles).

Ties never split: units with equal frequency form a tie group, which occupies positions
first..last, and the whole group goes to the segment holding its (lower) median position
floor((first + last) / 2). For a group that straddles one cut this is the side with more of the
group; an exact half goes to the higher-frequency side. So bins hold only approximately their
percentage; `stats.json` records the exact sizes (`details`), how many units ties moved, and the
frequency range of each bin.

Drops: rows of buffer units (reason `frequency_buffer`); rows with an unknown (null) frequency
with reason `frequency_unknown` when `missing = "drop"` (default), or kept with a null
`frequency_bin` when `missing = "keep"` (e.g. training facts that have no frequency); rows
the source itself rejects, with the source's reason (e.g. `pageviews_missing`), whatever
`missing` says. Kept rows keep their input order.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from kbench.construct.frequency import DROP_COLUMN, frequency_sources, make_source
from kbench.construct.stage import Stage, StageOutput, StageParams, filter_with_reason, register_stage

BIN_NAMES = ("head", "buffer", "torso", "buffer", "tail")
MASS_BIN_NAMES = ("head", "torso", "tail")


def bin_cuts(n: int, percentages: list[float]) -> list[int]:
    """Cumulative cut points floor(n * cum% / 100) for the five segments."""
    total, cuts = Fraction(0), []
    for pct in percentages:
        total += Fraction(str(pct))
        cuts.append(int(n * total / 100))
    return cuts


def segment_of(position: int, cuts: list[int]) -> int:
    """The segment (0..4) a rank position falls in."""
    return next((k for k, cut in enumerate(cuts) if position < cut), len(cuts) - 1)


def mass_segments(ranked_frequencies: list[float]) -> list[int]:
    """The segment (0 head, 1 torso, 2 tail) of each position of the units ranked most popular
    first: a unit is in the head while the mass before it is under 1/3 of the total, in the
    torso while under 2/3 (compared as 3 x running < k x total, no division)."""
    total = sum(ranked_frequencies)
    segments, before = [], 0.0
    for frequency in ranked_frequencies:
        segments.append(0 if 3 * before < total else (1 if 3 * before < 2 * total else 2))
        before += frequency
    return segments


def assign_mass_bins(frequencies: list[float]) -> tuple[list[str], dict[str, Any]]:
    """Head-to-Tail's bins of each unit (same order as `frequencies`): a third of the total
    popularity each, tie groups kept whole (the segment of their lower median position)."""
    ranked = sorted(range(len(frequencies)), key=lambda i: -frequencies[i])
    by_position = mass_segments([frequencies[i] for i in ranked])
    group_span: dict[float, list[int]] = {}
    for position, i in enumerate(ranked):
        span = group_span.setdefault(frequencies[i], [position, position])
        span[1] = position
    group_segment = {f: by_position[(first + last) // 2] for f, (first, last) in group_span.items()}
    segments = [group_segment[f] for f in frequencies]
    mass = [0.0] * len(MASS_BIN_NAMES)
    sizes = [0] * len(MASS_BIN_NAMES)
    ranges: list[list[float]] = [[] for _ in MASS_BIN_NAMES]
    for i, k in enumerate(segments):
        sizes[k] += 1
        mass[k] += frequencies[i]
        ranges[k].append(frequencies[i])
    details = {
        "units_ranked": len(frequencies),
        "mass_total": sum(frequencies),
        "units_per_segment": dict(zip(MASS_BIN_NAMES, sizes)),
        "mass_per_segment": dict(zip(MASS_BIN_NAMES, mass)),
        "frequency_range_per_segment": {name: [min(r), max(r)] for name, r in zip(MASS_BIN_NAMES, ranges) if r},
        "units_moved_by_ties": sum(by_position[p] != segments[i] for p, i in enumerate(ranked)),
    }
    return [MASS_BIN_NAMES[k] for k in segments], details


def assign_bins(frequencies: list[float], percentages: list[float]) -> tuple[list[str], dict[str, Any]]:
    """The bin of each unit (same order as `frequencies`), with tie groups kept whole; and the details.

    Units are ranked highest frequency first; a tie group goes to the segment of its lower median
    position (see the module docstring).
    """
    n = len(frequencies)
    cuts = bin_cuts(n, percentages)
    ranked = sorted(range(n), key=lambda i: -frequencies[i])
    group_span: dict[float, list[int]] = {}
    for position, i in enumerate(ranked):
        span = group_span.setdefault(frequencies[i], [position, position])
        span[1] = position
    group_segment = {f: segment_of((first + last) // 2, cuts) for f, (first, last) in group_span.items()}
    segments = [group_segment[f] for f in frequencies]
    moved = sum(segment_of(position, cuts) != segments[i] for position, i in enumerate(ranked))
    straddling = sum(segment_of(first, cuts) != segment_of(last, cuts) for first, last in group_span.values())

    sizes = [0] * len(BIN_NAMES)
    ranges: list[list[float]] = [[] for _ in BIN_NAMES]
    for i, k in enumerate(segments):
        sizes[k] += 1
        ranges[k].append(frequencies[i])
    segment_names = ["head", "buffer_upper", "torso", "buffer_lower", "tail"]
    details = {
        "units_ranked": n,
        "cut_positions": cuts,
        "units_per_segment": dict(zip(segment_names, sizes)),
        "frequency_range_per_segment": {name: [min(r), max(r)] for name, r in zip(segment_names, ranges) if r},
        "tie_groups_straddling_a_cut": straddling,
        "units_moved_by_ties": moved,
    }
    return [BIN_NAMES[k] for k in segments], details


#: What each frequency source counts, as a protocol entry says it.
SOURCE_WORDS = {
    "evidence_count": "the number of evidence sentences of each fact in its source (T-REx)",
    "document_mentions": "annotated mention counts in a sample of documents",
    "corpus_count": "occurrence counts in a corpus index",
    "counts_table": "counts from a given table",
}


def _where(options: dict) -> str:
    location = options.get("documents") or options.get("corpus") or options.get("path")
    return f" ({location})" if location else ""


@register_stage
class FrequencyBin(Stage):
    name = "frequency_bin"
    version = 2  # 2: ties never split (tie groups go whole to one bin); entity units; source drop reasons

    class Params(StageParams):
        source: str = "evidence_count"
        options: dict[str, Any] = Field(default_factory=dict)
        percentages: list[float] = Field(default_factory=lambda: [10, 20, 40, 20, 10])
        missing: Literal["drop", "keep"] = "drop"
        unit: Literal["row", "entity"] = "row"
        entity: Literal["subject", "object"] = "subject"
        entity_frequency: Literal["max", "sum"] = "max"
        cut: Literal["rank", "mass"] = "rank"  # rank: percentages of the ranked units (MAPLE); mass: Head-to-Tail's thirds

        @field_validator("percentages")
        @classmethod
        def _five_segments(cls, v: list[float]) -> list[float]:
            if len(v) != 5 or any(p < 0 for p in v) or sum(Fraction(str(p)) for p in v) != 100:
                raise ValueError("percentages must be 5 numbers >= 0 (head, buffer, torso, buffer, tail) summing to 100")
            return v

        @model_validator(mode="after")
        def _percentages_need_rank_cut(self):
            if self.cut == "mass" and "percentages" in self.model_fields_set:
                raise ValueError('percentages apply to cut = "rank"; cut = "mass" splits the popularity mass in thirds')
            return self

        @model_validator(mode="after")
        def _known_source(self):
            sources = frequency_sources()
            if self.source not in sources:
                raise ValueError(f"unknown frequency source {self.source!r}; known: {', '.join(sorted(sources))}")
            options_model = sources[self.source].Options
            try:  # unknown or missing options fail when the recipe is loaded, not mid-build
                options_model.model_validate(self.options)
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                raise ValueError(
                    f"options.{where}: {err['msg']} (options of source {self.source!r}: "
                    f"{', '.join(options_model.model_fields) or 'none'})"
                ) from None
            return self

    def deviations(self, details: dict) -> list:
        """MAPLE: entities binned by 12 months of pageviews (March 2021-February 2022), 10/20/40/20/10."""
        from kbench.protocol import Deviation

        p, found = self.params, []
        effect = "frequency_bin (head / torso / tail) and every by-bin number, e.g. a head-tail difference"
        if p.source != "pageviews":
            found.append(
                Deviation(
                    id=f"frequency-source-{p.source.replace('_', '-')}",
                    paper="MAPLE labels entity frequency by monthly Wikipedia pageviews (March 2021-February 2022)",
                    kbench=f"frequency = {SOURCE_WORDS.get(p.source, p.source)}{_where(p.options)}",
                    effect=effect,
                )
            )
        else:
            window = (p.options.get("start_month", "2021-03"), p.options.get("months", 12))
            if window != ("2021-03", 12):
                found.append(
                    Deviation(
                        id="frequency-pageview-window",
                        paper="pageviews aggregated over March 2021-February 2022",
                        kbench=f"pageviews over {window[1]} months from {window[0]}",
                        effect=effect,
                    )
                )
        guessed = (details.get("source") or {}).get("titles_from_labels", 0)
        if p.source == "pageviews" and guessed:
            found.append(
                Deviation(
                    id="frequency-titles-from-labels",
                    paper="MAPLE maps entities to Wikidata (Wikimapper) and counts their articles' pageviews",
                    kbench=f"{guessed} of {details['source'].get('entities', '?')} entities' article titles are their labels "
                    "(no Wikidata sitelink), which may name another article",
                    effect=effect,
                )
            )
        if p.unit != "entity":
            found.append(
                Deviation(
                    id="frequency-bins-over-facts",
                    paper="MAPLE assigns each entity to a bin",
                    kbench="fact rows are ranked and cut, each by its own count",
                    effect=effect,
                )
            )
        if [float(x) for x in p.percentages] != [10.0, 20.0, 40.0, 20.0, 10.0]:
            found.append(
                Deviation(
                    id="frequency-percentages",
                    paper="10% head, 40% torso, 10% tail, separated by 20% buffer margins",
                    kbench="head / buffer / torso / buffer / tail = " + "/".join(f"{x:g}" for x in p.percentages) + "%",
                    effect=effect,
                )
            )
        if details.get("units_moved_by_ties"):
            found.append(
                Deviation(
                    id="bin-ties-kept-whole",
                    paper="percentile thresholds (the paper does not say how equal counts at a cut are split)",
                    kbench=f"equal counts never split: {details['units_moved_by_ties']} of {details.get('units_ranked', '?')} "
                    "ranked units moved to their tie group's bin, so the bins are not exactly the percentages",
                    effect="the sizes of the head / torso / tail bins",
                )
            )
        return found

    def _source(self):
        return make_source(self.params.source, self.params.options, self.ctx)

    def input_files(self) -> list[Path]:
        return self._source().input_files()

    def run_options(self) -> dict:
        return self._source().run_options()

    def _unit_key(self):
        """Polars: the key rows are ranked by (one per row, or one per entity)."""
        import polars as pl

        if self.params.unit == "row":
            return pl.col("__row").cast(pl.Utf8)
        side = self.params.entity
        return pl.coalesce(pl.col(f"{side}_id").cast(pl.Utf8), pl.lit("label:") + pl.col(side).cast(pl.Utf8))

    def run(self, table) -> StageOutput:
        import polars as pl

        stale = [c for c in ("frequency", "frequency_bin") if c in table.collect_schema().names()]
        table = table.drop(stale)  # a second binning replaces the first
        source = self._source()
        frame = source.frequency(table).with_row_index("__row").collect()
        if DROP_COLUMN not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.Utf8).alias(DROP_COLUMN))
        frame = frame.with_columns(self._unit_key().alias("__unit"))

        rankable = pl.col("frequency").is_not_null() & pl.col(DROP_COLUMN).is_null()
        frame = frame.with_columns(pl.when(rankable).then(pl.col("__unit")).alias("__unit"))
        known = frame.filter(rankable)
        aggregate = pl.col("frequency").max() if self.params.entity_frequency == "max" else pl.col("frequency").sum()
        units = known.group_by("__unit").agg(aggregate.alias("__unit_frequency")).sort("__unit")
        frequencies = units["__unit_frequency"].to_list()
        if self.params.cut == "mass":
            bins, details = assign_mass_bins(frequencies)
        else:
            bins, details = assign_bins(frequencies, self.params.percentages)
        units = units.with_columns(pl.Series("frequency_bin", bins, dtype=pl.Utf8))

        binned = (
            frame.join(units, on="__unit", how="left", maintain_order="left")
            .with_columns(
                pl.when(pl.col("__unit_frequency").is_not_null())
                .then(pl.col("__unit_frequency"))
                .otherwise(pl.col("frequency"))
                .alias("frequency")
            )
            .sort("__row")
            .drop("__row", "__unit", "__unit_frequency")
        )
        reason = (
            pl.when(pl.col(DROP_COLUMN).is_not_null())
            .then(pl.col(DROP_COLUMN))
            .when(pl.col("frequency_bin") == "buffer")
            .then(pl.lit("frequency_buffer"))
        )
        if self.params.missing == "drop":
            reason = reason.when(pl.col("frequency").is_null()).then(pl.lit("frequency_unknown"))
        out = filter_with_reason(binned.lazy(), reason.otherwise(pl.lit(None, pl.Utf8)))
        unit = {"unit": self.params.unit}
        if self.params.unit == "entity":
            unit |= {"entity": self.params.entity, "entity_frequency": self.params.entity_frequency}
        if self.params.cut == "mass":  # rank-cut details stay as they were: earlier builds' stats.json are unchanged
            unit["cut"] = "mass"
        details = {**unit, "rows_ranked": known.height, **details}
        if source_details := source.details():
            details["source"] = source_details
        return StageOutput(kept=out.kept.drop(DROP_COLUMN), rejected=out.rejected.drop(DROP_COLUMN), details=details)
