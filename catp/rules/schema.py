"""The rule-file schema (pydantic). `catp rules schema` exports it as JSON Schema for editors."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, create_model, field_validator

from catp.select.policy import Flag, KeySection, SelectionPolicy  # noqa: F401 (KeySection: re-exported)

Lang = Literal["en", "zh"]


def _none_blank(values: list[str], info: ValidationInfo) -> list[str]:
    """A blank phrase, anchor or keyword matches everywhere (a blank detect keyword would pick every
    document)."""
    if any(not v.strip() for v in values):
        raise ValueError(f"{info.field_name} must not be blank")
    return values


Words = Annotated[list[str], AfterValidator(_none_blank)]  # phrases, pos anchors, detect keywords


class Examples(BaseModel):
    """Texts the rule must match (at least one span) and must not match (no span)."""

    model_config = ConfigDict(extra="forbid")

    match: list[str] = Field(default_factory=list)
    no_match: list[str] = Field(default_factory=list)


class RuleBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    category: str = Field(min_length=1, description="e.g. number, date, amount, entity, negation, cue, heading")
    priority: int = Field(ge=0, le=100, description="higher wins when the budget is short")
    action: Literal["protect", "boost", "delete", "detach", "discount"] = Field(
        "protect", description="protect: keep, and report it if the budget forces it out; boost: raise the "
        "score; delete: boilerplate, never kept; detach: units of its own, left out of any span a rule keeps "
        "whole (an address inside a preamble), ranked like any other text; discount: the facts of the units "
        "it covers weigh less, times its category's weight in category_weights (definitions, recitals)")
    lang: list[Lang] = Field(default_factory=lambda: ["en", "zh"])
    description: str = ""
    examples: Examples = Field(default_factory=Examples)


Expand = Literal["none", "clause", "sentence"]


class RegexRule(RuleBase):
    """Spans are the regex's matches (or its `group`), optionally grown to the enclosing clause or sentence."""

    kind: Literal["regex"]
    expand: Expand = "none"
    pattern: str
    flags: list[Flag] = Field(default_factory=list)
    group: int | str = 0
    validate_with: str | None = Field(None, description="a validator from catp.rules.validators, e.g. cn_numeral")
    anchors: list[str] = Field(
        default_factory=list,
        description="literals of which every match holds one (compared case-insensitively); the pattern then "
                    "runs only around them, with the same matches. `catp rules lint` checks them.")

    @field_validator("anchors")
    @classmethod
    def _no_blank_anchors(cls, anchors: list[str]) -> list[str]:
        if any(not a for a in anchors):
            raise ValueError("anchors must not be empty strings")
        return anchors


class PhraseRule(RuleBase):
    """A phrase list, matched with Aho-Corasick. English phrases match whole words, any case."""

    kind: Literal["phrases"]
    phrases: Words = Field(min_length=1)
    expand: Expand = "none"
    case_sensitive: bool = False


class CueWindowRule(RuleBase):
    """Keep the text after a cue: `window_tokens` tokens, but never past `until`."""

    kind: Literal["cue_window"]
    pattern: str = Field(description="regex for the cue words")
    flags: list[Flag] = Field(default_factory=list)
    window_tokens: int = Field(50, ge=1, le=4096)
    until: Literal["clause", "sentence", "line", "none"] = "line"
    include_cue: bool = True


class PosToken(BaseModel):
    """One token of a part-of-speech pattern. zh: jieba.posseg flags; en: lexicon word lists."""

    model_config = ConfigDict(extra="forbid")

    pos: list[str] = Field(default_factory=list, description="zh: jieba flags (prefix match, e.g. v, n, nr)")
    words: list[str] = Field(default_factory=list, description="the token must be one of these words")
    shape: Literal["alpha", "capitalized", "digit", "any"] | None = None
    optional: bool = False


class PosRule(RuleBase):
    """A token pattern. zh runs jieba.posseg; en runs a spaCy blank tokenizer + Matcher."""

    kind: Literal["pos"]
    tokens: list[PosToken] = Field(min_length=1)
    anchors: Words = Field(min_length=1, description="words that must occur in a sentence before the tagger runs on it")
    extend: Literal["none", "clause"] = "none"


class HeadingRule(RuleBase):
    """Marks heading units whose text matches `pattern`."""

    kind: Literal["heading"]
    pattern: str
    flags: list[Flag] = Field(default_factory=list)


Rule = Annotated[Union[RegexRule, PhraseRule, CueWindowRule, PosRule, HeadingRule], Field(discriminator="kind")]

# Every rule kind's model by its `kind`: the built-in ones, then those that catp.rules.catalog.register_kind adds.
KINDS: dict[str, type[RuleBase]] = {"regex": RegexRule, "phrases": PhraseRule, "cue_window": CueWindowRule,
                                    "pos": PosRule, "heading": HeadingRule}
_BUILTIN_KINDS = frozenset(KINDS)


class Detection(BaseModel):
    """Keywords that make `--domain auto` pick this rule set."""

    model_config = ConfigDict(extra="forbid")

    keywords: Words = Field(default_factory=list)


class RuleSet(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(min_length=1)
    version: int = 1
    description: str = ""
    detect: Detection = Field(default_factory=Detection)
    selection: dict[Lang, SelectionPolicy] = Field(default_factory=dict)
    rules: list[Rule] = Field(default_factory=list)


_extended: type[RuleSet] | None = None  # RuleSet whose `rules` take every kind in KINDS, once one is added


def add_kind(kind: str, model: type[RuleBase]) -> None:
    """Let rule files use `kind: <kind>`, validated by `model` (catp.rules.catalog.register_kind checks both)."""
    global _extended
    KINDS[kind] = model
    union = Annotated[Union[tuple(KINDS.values())], Field(discriminator="kind")]
    _extended = create_model("RuleSet", __base__=RuleSet, __module__=__name__,
                             rules=(list[union], Field(default_factory=list)))


def remove_kind(kind: str) -> None:
    """Undo `add_kind` (the built-in kinds stay)."""
    global _extended
    if kind in _BUILTIN_KINDS:
        raise ValueError(f"{kind!r} is a built-in rule kind")
    KINDS.pop(kind, None)
    extra = {k: m for k, m in KINDS.items() if k not in _BUILTIN_KINDS}
    _extended = None
    for name, model in extra.items():  # rebuilt with those left
        add_kind(name, model)


def validate_ruleset(data: dict) -> RuleSet:
    """`data` as a RuleSet, its rules of any registered kind. A RuleSet still (not the extended class, which only
    validates): rule sets travel to batch workers by pickle."""
    if _extended is None:
        return RuleSet.model_validate(data)
    extended = _extended.model_validate(data)
    return RuleSet.model_construct(_fields_set=extended.model_fields_set, **dict(extended))


def merged_policy(rulesets: list[RuleSet], lang: str) -> SelectionPolicy:
    """The selection policy for `lang`: each rule set's fields override those before it."""
    fields: dict = {}
    for ruleset in rulesets:
        policy = ruleset.selection.get(lang)
        if policy is not None:
            for name in policy.model_fields_set:
                if name == "key_sections":  # merged by name: a later rule set adds types or replaces one
                    fields[name] = {**fields.get(name, {}), **policy.key_sections}
                else:
                    fields[name] = getattr(policy, name)
    return SelectionPolicy(**fields)


def json_schema() -> dict:
    return (_extended or RuleSet).model_json_schema()
