"""Preference skills: one per setting, with a production and a reception side (paper Appendix D.2).

The 32 skills live in ``skills.yaml`` beside this module and are shared by every user. A skill
says what the user wants from the PA under one setting (``wants``), how the setting shapes the
user's own turns (production side) and how the user takes a reply (reception side: which reply
fits, which signals go against it, and the move the user makes either way). The wording and
intensity of each turn come from the persona, not from the skill.

Skills never contain the name of their attribute or setting; a test enforces it, so nothing the
simulator is told to say can give the preference away by name (Appendix D.4 'Prompt rules').
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mempa_tui.taxonomy import ATTRIBUTES, Context, attribute

__all__ = [
    "PreferenceSkill",
    "Reception",
    "SkillBook",
    "SkillExamples",
    "SkillFileError",
    "acting_sheet",
    "default_skills",
    "load_skills",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class SkillFileError(ValueError):
    """A skills file that cannot be read or does not hold exactly the 32 valid skills.

    Attributes:
        path: the file.
        problem: what is wrong and where (attribute / setting / field).
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class Reception(BaseModel):
    """How the user takes a reply under one setting (the reception side of a skill)."""

    model_config = _STRICT

    fits: list[str] = Field(min_length=1, description="Signals of a reply that follows the setting.")
    against: list[str] = Field(min_length=1, description="Signals of a reply that goes against it.")
    on_against: list[str] = Field(
        min_length=1, description="The move the user makes when a reply goes against the setting."
    )
    on_fit: list[str] = Field(
        min_length=1, description="What the user says they take from a reply that fits."
    )


class SkillExamples(BaseModel):
    """One example line for each reaction, for flavour only (the simulator must not copy them)."""

    model_config = _STRICT

    against: str = Field(min_length=1, description="An example reaction to a reply that goes against.")
    fit: str = Field(min_length=1, description="An example reaction to a reply that fits.")


class PreferenceSkill(BaseModel):
    """The preference skill of one setting (paper Appendix D.2).

    Attributes:
        attribute: attribute key, e.g. ``verbosity``.
        setting: setting name as Table 4 spells it, e.g. ``Terse``.
        wants: private, second-person statement of what the user wants from the PA (loaded
            with the reception side in accumulation sessions, never in probes).
        production: how the user writes under the setting (register, length, what they
            volunteer); never a request about the reply (a lint test runs the manner-request
            detector over it).
        reception: how the user takes a reply.
        examples: example reactions (flavour only).
    """

    model_config = _STRICT

    attribute: str
    setting: str
    wants: str = Field(min_length=1)
    production: list[str] = Field(min_length=1)
    reception: Reception
    examples: SkillExamples

    def spoken_lines(self) -> list[str]:
        """Every guidance line that shapes what the user says (production, moves, examples)."""
        r = self.reception
        return [
            *self.production,
            *r.on_against,
            *r.on_fit,
            self.examples.against,
            self.examples.fit,
        ]

    def all_lines(self) -> list[str]:
        """Every text line of the skill, private ones included."""
        r = self.reception
        return [self.wants, *self.spoken_lines(), *r.fits, *r.against]

    def render_production(self) -> str:
        """The production side alone as prompt text: how the user writes their own turns.

        No ``wants`` sentence and nothing of the reception side: this is what a probe loads
        (paper D.2, "only the production side applies"), so the simulator is never told what a
        good reply looks like and cannot cue it (Table 8 condition 3). No attribute or setting
        name either.
        """
        lines = ["In your own messages:"]
        lines += [f"- {line}" for line in self.production]
        return "\n".join(lines)

    def render_reception(self) -> str:
        """The reception side as prompt text (no attribute or setting name)."""
        r = self.reception
        lines = [self.wants]
        lines.append("A reply that suits you:")
        lines += [f"- {line}" for line in r.fits]
        lines.append("Signs that a reply goes against what you want:")
        lines += [f"- {line}" for line in r.against]
        lines.append("When a reply goes against it, in the same message as the task:")
        lines += [f"- {line}" for line in r.on_against]
        lines.append("When a reply suits you, in the same message as the task:")
        lines += [f"- {line}" for line in r.on_fit]
        lines.append(
            f'For flavour only, never to copy: "{self.examples.against}" / "{self.examples.fit}"'
        )
        return "\n".join(lines)

    def render_full(self) -> str:
        """Both sides as prompt text (the declaring beat, Appendix D.2)."""
        production = "\n".join(f"- {line}" for line in self.production)
        return f"{self.render_reception()}\nIn your own turns:\n{production}"

    def acting_sheet(self, context: Context | None = None) -> str:
        """The acting sheet of this setting: a compact, named view for PRS and a human user seat.

        Unlike the prompt renderings, the sheet names the attribute and setting; it is shown to
        the PRS rater (Table 9, note e) and to a person playing the user, never sent to the PA.

        Args:
            context: the cell's context, shown in the heading when given.

        Returns:
            Multi-line text.
        """
        attr = attribute(self.attribute)
        where = f" ({context.value})" if context is not None else ""
        r = self.reception
        parts = [
            f"Acting sheet: {attr.name} = {self.setting}{where}",
            self.wants,
            "How you write your own messages: " + " ".join(self.production),
            "A reply fits when: " + " ".join(r.fits),
            "It goes against you when: " + " ".join(r.against),
            "Then you: " + " ".join(r.on_against),
            "When it fits you: " + " ".join(r.on_fit),
        ]
        return "\n".join(parts)


class SkillBook(BaseModel):
    """All 32 skills, looked up by attribute key and setting name."""

    model_config = _STRICT

    skills: tuple[PreferenceSkill, ...]

    def get(self, attribute_key: str, setting: str) -> PreferenceSkill:
        """The skill of ``setting`` of ``attribute_key``.

        Raises:
            KeyError: unknown attribute or setting (the message lists the valid ones).
        """
        attr = attribute(attribute_key)
        attr.setting(setting)
        for skill in self.skills:
            if skill.attribute == attr.key and skill.setting == setting:
                return skill
        raise KeyError(f"no skill for {attr.name}: {setting}")

    def __len__(self) -> int:
        return len(self.skills)


def load_skills(path: str | Path | None = None) -> SkillBook:
    """Load and validate a skills file (default: the packaged ``skills.yaml``).

    Args:
        path: a YAML file shaped ``<attribute key>: {<setting name>: {wants, production,
            reception, examples}}``; None for the packaged file.

    Returns:
        The :class:`SkillBook` with exactly one skill per setting of Table 4.

    Raises:
        SkillFileError: unreadable YAML, an unknown attribute or setting, a missing skill, or a
            field that fails validation; the message names the attribute, setting and field.
    """
    if path is None:
        source = "mempa_tui/simulator/skills.yaml"
        text = resources.files("mempa_tui.simulator").joinpath("skills.yaml").read_text("utf-8")
    else:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as err:
            raise SkillFileError(source, f"cannot read: {err}") from err
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise SkillFileError(source, f"invalid YAML: {err}") from err
    if not isinstance(raw, dict):
        raise SkillFileError(source, "top level must map attribute keys to settings")
    skills: list[PreferenceSkill] = []
    for key, by_setting in raw.items():
        try:
            attr = attribute(str(key))
        except KeyError as err:
            raise SkillFileError(source, str(err.args[0])) from err
        if attr.key != key:
            raise SkillFileError(source, f"{key!r}: use the attribute key {attr.key!r}")
        if not isinstance(by_setting, dict):
            raise SkillFileError(source, f"{key}: must map setting names to skills")
        for setting, body in by_setting.items():
            try:
                attr.setting(str(setting))
            except KeyError as err:
                raise SkillFileError(source, f"{key}: {err.args[0]}") from err
            if not isinstance(body, dict):
                raise SkillFileError(source, f"{key}.{setting}: must be a mapping")
            try:
                skills.append(PreferenceSkill(attribute=key, setting=setting, **body))
            except ValidationError as err:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()
                )
                raise SkillFileError(source, f"{key}.{setting}: {problems}") from err
    have = {(s.attribute, s.setting) for s in skills}
    missing = [f"{a.key}.{s.name}" for a in ATTRIBUTES for s in a.settings if (a.key, s.name) not in have]
    if missing:
        raise SkillFileError(source, "no skill for " + ", ".join(missing))
    return SkillBook(skills=tuple(skills))


@lru_cache(maxsize=1)
def default_skills() -> SkillBook:
    """The packaged skills, loaded once (raises :class:`SkillFileError` if the file is broken)."""
    return load_skills()


def acting_sheet(
    attribute_key: str, setting: str, context: Context | None = None, skills: SkillBook | None = None
) -> str:
    """The acting sheet of one setting (PRS rater, human user seat); see
    :meth:`PreferenceSkill.acting_sheet`.

    Raises:
        KeyError: unknown attribute or setting.
    """
    return (skills or default_skills()).get(attribute_key, setting).acting_sheet(context)
