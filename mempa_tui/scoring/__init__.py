"""Scoring: PSA, CS, PET, BRS, PRS, carry-over, intervals and reports (SPEC 4.9; paper 3.5, App. F)."""

from mempa_tui.scoring._defaults import BackboneDefaults, DefaultSetting, backbone_defaults
from mempa_tui.scoring._judge import (
    JUDGE_SCHEMA,
    BRSJudgeInput,
    BRSVerdict,
    JudgeClient,
    JudgeToolStep,
    JudgeTurn,
    judge_brs,
    judge_messages,
    judge_turn,
)
from mempa_tui.scoring._metrics import (
    ALL_MODELS,
    METRICS,
    ConditionScores,
    Difference,
    breakdown,
    differences_from,
    metric_tables,
    score_conditions,
    score_group,
)
from mempa_tui.scoring._outcome import CONDITION_LABELS, ProbeOutcome, ProbeStatus, condition_label
from mempa_tui.scoring._report import ReportPaths, format_table, write_reports
from mempa_tui.scoring._rubrics import RUBRICS, AttributeRubric, SettingCriteria, rubric_text
from mempa_tui.scoring._stats import (
    DEFAULT_RESAMPLES,
    Interval,
    MetricSummary,
    RepeatValue,
    bootstrap_difference,
    bootstrap_distribution,
    bootstrap_interval,
    summarise,
)
from mempa_tui.scoring._units import DuplicateOutcomeError, UnitTable

__all__ = [
    "ALL_MODELS",
    "CONDITION_LABELS",
    "DEFAULT_RESAMPLES",
    "JUDGE_SCHEMA",
    "METRICS",
    "RUBRICS",
    "AttributeRubric",
    "BRSJudgeInput",
    "BRSVerdict",
    "BackboneDefaults",
    "ConditionScores",
    "DefaultSetting",
    "Difference",
    "DuplicateOutcomeError",
    "Interval",
    "JudgeClient",
    "JudgeToolStep",
    "JudgeTurn",
    "MetricSummary",
    "ProbeOutcome",
    "ProbeStatus",
    "RepeatValue",
    "ReportPaths",
    "SettingCriteria",
    "UnitTable",
    "backbone_defaults",
    "bootstrap_difference",
    "bootstrap_distribution",
    "bootstrap_interval",
    "breakdown",
    "condition_label",
    "differences_from",
    "format_table",
    "judge_brs",
    "judge_messages",
    "judge_turn",
    "metric_tables",
    "rubric_text",
    "score_conditions",
    "score_group",
    "summarise",
    "write_reports",
]
