"""The interaction-preference taxonomy: 14 attributes, 32 settings, 4 dimensions.

Source: paper Section 3.2 and Appendix A.1 (Table 4) for the attributes, their settings and the
observable behaviour of each setting; Appendix E.3 for the IX mechanism of each attribute;
Appendix C.3 (mechanism 3) for the five attributes that use a write lock. The behaviour texts are
our own wording of the observable criteria of Table 4 (counts, orderings and thresholds kept).

Everything here is data; nothing imports a model, a file or the TUI.
"""

from __future__ import annotations

from enum import Enum
from fractions import Fraction

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ATTRIBUTES",
    "Attribute",
    "Context",
    "Dimension",
    "Mechanism",
    "RealizationGroup",
    "Setting",
    "attribute",
    "attribute_by_ix_tool",
    "chance_of",
    "chance_psa",
    "setting_names",
]


class Context(str, Enum):
    """The two contexts every attribute takes a setting in (paper Section 3.1)."""

    WORK = "work"
    PERSONAL = "personal"


class Dimension(str, Enum):
    """The four dimensions that group the attributes (paper Section 3.2)."""

    EXPRESSION_STYLE = "Expression Style"
    DISCLOSURE = "Disclosure"
    INITIATIVE_AUTONOMY = "Initiative & Autonomy"
    INFORMATION_FLOW = "Information Flow"


class Mechanism(str, Enum):
    """How the IX wrapper carries out a selected setting (paper Appendix E.3)."""

    PASS_THROUGH = "pass-through"
    SELECTIVE_RENDERING = "selective rendering"
    DELIVERY_CONTROL = "delivery control"
    EXECUTION_CONTROL = "execution control"


class RealizationGroup(str, Enum):
    """Whether a setting shows mainly in the reply text or in the actions that run.

    Used for the reply-vs-action breakdown of scores (SPEC section 4.9).
    """

    REPLY = "reply"
    ACTION = "action"


class Setting(BaseModel):
    """One discrete setting of an attribute.

    Attributes:
        name: the setting's name as the paper's Table 4 spells it, e.g. ``"Self-directed"``.
        behaviour: what the PA visibly does in its reply or actions under this setting; this is
            the definition the PA is given under Oracle and the judge scores against.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    behaviour: str


class Attribute(BaseModel):
    """One interaction attribute with its settings (paper Table 4).

    Attributes:
        key: snake_case identifier used in file formats and tool names, e.g. ``autonomy_level``.
        name: display name as in Table 4, e.g. ``"Autonomy Level"``.
        dimension: the dimension it belongs to.
        question: the decision question the attribute answers.
        settings: its settings in Table 4 order (two or three).
        mechanisms: the wrapper mechanisms that carry it out (Information Elicitation has two).
        write_lock: whether its sessions end in a user-dictated write the world refuses until the
            user supplies the content (Appendix C.3, mechanism 3).
        group: reply or action, for the reply-vs-action breakdown.
    """

    model_config = ConfigDict(frozen=True)

    key: str
    name: str
    dimension: Dimension
    question: str
    settings: tuple[Setting, ...] = Field(min_length=2, max_length=3)
    mechanisms: tuple[Mechanism, ...]
    write_lock: bool
    group: RealizationGroup

    @property
    def ix_tool(self) -> str:
        """Name of the interaction tool the PA calls to select a setting, e.g. ``IX_verbosity``."""
        return f"IX_{self.key}"

    @property
    def setting_names(self) -> tuple[str, ...]:
        """The setting names in Table 4 order."""
        return tuple(s.name for s in self.settings)

    def setting(self, name: str) -> Setting:
        """Return the setting called ``name``.

        Raises:
            KeyError: ``name`` is not a setting of this attribute; the message lists the valid ones.
        """
        for s in self.settings:
            if s.name == name:
                return s
        raise KeyError(
            f"{name!r} is not a setting of {self.name}; valid settings: "
            + ", ".join(self.setting_names)
        )


def _a(
    key: str,
    name: str,
    dimension: Dimension,
    question: str,
    settings: list[tuple[str, str]],
    mechanisms: tuple[Mechanism, ...],
    group: RealizationGroup,
    write_lock: bool = False,
) -> Attribute:
    return Attribute(
        key=key,
        name=name,
        dimension=dimension,
        question=question,
        settings=tuple(Setting(name=n, behaviour=b) for n, b in settings),
        mechanisms=mechanisms,
        write_lock=write_lock,
        group=group,
    )


_ES, _DI, _IA, _IF = (
    Dimension.EXPRESSION_STYLE,
    Dimension.DISCLOSURE,
    Dimension.INITIATIVE_AUTONOMY,
    Dimension.INFORMATION_FLOW,
)
_PT, _SR, _DC, _EC = (
    Mechanism.PASS_THROUGH,
    Mechanism.SELECTIVE_RENDERING,
    Mechanism.DELIVERY_CONTROL,
    Mechanism.EXECUTION_CONTROL,
)
_REPLY, _ACTION = RealizationGroup.REPLY, RealizationGroup.ACTION

#: The 14 attributes in Table 4 order.
ATTRIBUTES: tuple[Attribute, ...] = (
    _a(
        "tone_formality",
        "Tone & Formality",
        _ES,
        "Which register should the PA speak in, with the content and the task result unchanged?",
        [
            (
                "Casual",
                "At least two colloquial markers (contractions, interjections, idioms); no opening "
                "formula and no sign-off.",
            ),
            (
                "Consultative",
                "No more than one colloquial marker, no opening formula or sign-off, and the reply "
                "puts an offer or a choice to the user.",
            ),
            (
                "Formal",
                "No contractions at all, at least one formal connective (for example 'therefore' "
                "or 'accordingly'), and a conventional greeting or closing line.",
            ),
        ],
        (_PT,),
        _REPLY,
    ),
    _a(
        "verbosity",
        "Verbosity",
        _ES,
        "How much relevant information about the current topic should the PA include?",
        [
            (
                "Terse",
                "The answer or next action comes in the first sentence, followed by no more than "
                "one supporting move, and the reply ends without a summary.",
            ),
            (
                "Detailed",
                "The answer comes with supporting moves of at least two different kinds, such as "
                "background, a caveat or an alternative.",
            ),
        ],
        (_PT,),
        _REPLY,
    ),
    _a(
        "emotional_engagement",
        "Emotional Engagement",
        _ES,
        "How much emotional or relational acknowledgment should come with getting the task done?",
        [
            (
                "Task-focused",
                "The reply starts with task content, acknowledges no feeling anywhere, and meets a "
                "feeling the user states with a fact about the task.",
            ),
            (
                "Relationship-focused",
                "The first sentence names the feeling the user seems to have and responds to it; "
                "the task follows.",
            ),
        ],
        (_PT,),
        _REPLY,
    ),
    _a(
        "guidance_level",
        "Guidance Level",
        _ES,
        "How much knowledge of the topic and familiarity with the procedure should the PA assume?",
        [
            (
                "Assumed",
                "Domain terms appear without definitions, and there is no numbered walkthrough.",
            ),
            (
                "Guided",
                "Every new term is explained where it first appears (including any term the user "
                "asked about), and the steps are given in order with the first one named.",
            ),
        ],
        (_PT,),
        _REPLY,
    ),
    _a(
        "reasoning_visibility",
        "Reasoning Visibility",
        _DI,
        "How much of its rationale, evidence and basis for a decision should the PA show?",
        [
            (
                "Show",
                "Before the answer, a paragraph names the evidence used and the factor that "
                "decided it.",
            ),
            (
                "Hide",
                "Only the answer; nowhere in the reply is there a paragraph of evidence or of the "
                "deciding factor.",
            ),
        ],
        (_SR,),
        _REPLY,
        write_lock=True,
    ),
    _a(
        "uncertainty_expression",
        "Uncertainty Expression",
        _DI,
        "How much of the PA's real uncertainty should be put in front of the user?",
        [
            (
                "Express",
                "Each key claim carries a confidence level (high, medium or low) that fits the "
                "evidence behind it.",
            ),
            (
                "Hide",
                "No confidence levels; a limit is mentioned only where omitting it would change an "
                "action or its outcome.",
            ),
        ],
        (_SR,),
        _REPLY,
    ),
    _a(
        "process_visibility",
        "Process Visibility",
        _DI,
        "When should the PA tell the user how a multi-step task is progressing?",
        [
            (
                "Silent",
                "Only the result; not one sentence about what the PA is going to do, is doing or "
                "has done.",
            ),
            (
                "Bookend",
                "One opening sentence frames the task, then the result, then one closing sentence "
                "says it is finished.",
            ),
            (
                "Full narration",
                "One sentence for each task call that ran, in the order they ran, then the result "
                "and one closing sentence.",
            ),
        ],
        (_SR,),
        _REPLY,
        write_lock=True,
    ),
    _a(
        "autonomy_level",
        "Autonomy Level",
        _IA,
        "Which decisions and actions may the PA carry out before the user approves them?",
        [
            (
                "Reactive",
                "Reads run on its own and it may recommend, but every draft, record change and "
                "outward action waits for the user's approval.",
            ),
            (
                "Self-directed",
                "Reads, drafts and routine record changes run on its own; key record changes and "
                "every outward action wait for approval.",
            ),
            (
                "Autonomous",
                "Reads, drafts, record changes and outward actions all run on its own; the user "
                "hears about the outcome or an exception afterwards.",
            ),
        ],
        (_EC,),
        _ACTION,
        write_lock=True,
    ),
    _a(
        "proactive_outreach",
        "Proactive Outreach",
        _IA,
        "With no request open, should a relevant new event make the PA contact the user?",
        [
            ("Low", "It says nothing when the relevant event happens; the user finds out alone."),
            (
                "High",
                "It contacts the user unprompted when the relevant event happens and says what "
                "changed or fell due.",
            ),
        ],
        (_DC,),
        _ACTION,
    ),
    _a(
        "task_expansion",
        "Task Expansion",
        _IA,
        "How much separable neighbouring work should the PA fold into the current task?",
        [
            (
                "Low",
                "It acts only on the items the user named and raises at most one adjacent concern, "
                "in a single sentence.",
            ),
            (
                "High",
                "It also acts on at least one item the user did not name and marks that step as an "
                "addition.",
            ),
        ],
        (_PT,),
        _ACTION,
    ),
    _a(
        "solution_breadth",
        "Solution Breadth",
        _IA,
        "How much of the space of workable solutions should the PA lay out before settling?",
        [
            (
                "Low",
                "Exactly one workable option, recommended with its reasons, and no alternative "
                "named.",
            ),
            (
                "High",
                "Two or more workable options with the tradeoffs that tell them apart, with or "
                "without a recommendation.",
            ),
        ],
        (_PT,),
        _REPLY,
    ),
    _a(
        "capability_boundary",
        "Capability Boundary",
        _IA,
        "When a capability or information limit blocks the task, keep trying or hand control back?",
        [
            (
                "Suggest alternatives",
                "It states the limit and attempts a workaround with a tool call in the same turn; "
                "the attempt counts even if it fails.",
            ),
            (
                "Find and hand off",
                "It states the limit, attempts no workaround, explains what failed and why, and "
                "tells the user what their next step is.",
            ),
        ],
        (_EC,),
        _ACTION,
    ),
    _a(
        "information_elicitation",
        "Information Elicitation",
        _IF,
        "How should the PA get the information a request leaves out?",
        [
            (
                "Infer",
                "It asks nothing, fills the gaps with sensible and safe defaults, and runs task "
                "calls in its first turn.",
            ),
            (
                "Structured",
                "It asks for every missing field in a single turn, each clearly set apart, and runs "
                "task calls only once the user has answered.",
            ),
            (
                "Iterative",
                "It asks for one missing field per turn and runs task calls only in turns in which "
                "it asks nothing.",
            ),
        ],
        (_DC, _EC),
        _ACTION,
        write_lock=True,
    ),
    _a(
        "topic_management",
        "Topic Management",
        _IF,
        "How should the PA arrange several topics the user raised in the same turn?",
        [
            (
                "Organize",
                "All raised topics are handled in one reply, grouped under clear labels, and the "
                "task calls of every topic run.",
            ),
            (
                "One-at-a-time",
                "It handles one topic and runs only that topic's task calls, names the other "
                "topics as deferred, and asks before moving on.",
            ),
        ],
        (_DC,),
        _REPLY,
        write_lock=True,
    ),
)

_BY_KEY = {a.key: a for a in ATTRIBUTES}
_BY_NAME = {a.name: a for a in ATTRIBUTES}
_BY_TOOL = {a.ix_tool: a for a in ATTRIBUTES}


def attribute(key_or_name: str) -> Attribute:
    """Look up an attribute by key (``autonomy_level``) or display name (``Autonomy Level``).

    Raises:
        KeyError: no such attribute; the message lists the valid keys.
    """
    found = _BY_KEY.get(key_or_name) or _BY_NAME.get(key_or_name)
    if found is None:
        raise KeyError(
            f"unknown attribute {key_or_name!r}; valid attributes: " + ", ".join(_BY_KEY)
        )
    return found


def attribute_by_ix_tool(tool_name: str) -> Attribute | None:
    """Return the attribute whose interaction tool is ``tool_name`` (``IX_<key>``), else None."""
    return _BY_TOOL.get(tool_name)


def setting_names() -> tuple[str, ...]:
    """All 32 (attribute, setting) names as ``"<Attribute>: <Setting>"`` strings."""
    return tuple(f"{a.name}: {s.name}" for a in ATTRIBUTES for s in a.settings)


def chance_of(key_or_name: str) -> Fraction:
    """Chance that a uniform random pick among an attribute's settings is its target:
    ``1 / len(settings)`` (paper Appendix A.1), the unit of every random-selection reference.

    Raises:
        KeyError: no such attribute (the message lists the valid keys).
    """
    return Fraction(1, len(attribute(key_or_name).settings))


def chance_psa() -> Fraction:
    """Expected PSA of a PA that picks uniformly at random in every cell (paper Appendix A.1).

    Every attribute holds one cell per context, so the two contexts weigh equally and the
    expectation is the mean over attributes of ``1 / len(settings)``: 0.452 for Table 4.

    Returns:
        The exact fraction (``float(chance_psa())`` rounds to 0.452).
    """
    return sum((chance_of(a.key) for a in ATTRIBUTES), Fraction(0)) / len(ATTRIBUTES)
