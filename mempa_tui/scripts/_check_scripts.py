"""``worlds check`` rules for one script (accumulation session or probe): beats, facts, bound
records, world events, the write lock and the tool steps (paper Appendix C.3, Table 8 cond. 1, 5).
"""

from __future__ import annotations

from datetime import datetime

from mempa_tui.scripts._check_content import ContentRules
from mempa_tui.scripts._yamldoc import YamlDoc
from mempa_tui.scripts.schema import AccumulationSession, Probe, ToolStep
from mempa_tui.world import WorkingCopy

__all__ = ["ScriptRules"]


class ScriptRules(ContentRules):
    """Rules that look at one session or probe at a time."""

    # ---- sessions and probes ------------------------------------------------------------

    def check_script(self, script: AccumulationSession | Probe) -> None:
        """Beats, facts, bound records, world events, write lock and tool steps of one script."""
        doc = self.doc(script.id)
        attr = script.attr
        dp = script.decision_beat_index()
        if isinstance(script, AccumulationSession) and dp == len(script.beats) - 1:
            self.add(
                doc,
                ("beats", dp, "decision_point"),
                "the decision point is the last beat; the next beat must carry the user's reaction",
            )
        released: dict[str, str] = {}
        for i, beat in enumerate(script.beats):
            for j, fid in enumerate(beat.releases):
                if fid in released:
                    self.add(
                        doc,
                        ("beats", i, "releases", j),
                        f"fact {fid!r} is already released at beat {released[fid]!r}",
                    )
                else:
                    released[fid] = beat.id
        # bound records and world events, each at the beat's time
        when = script.starts_at
        for i, beat in enumerate(script.beats):
            if beat.event is not None:
                at = beat.event.at
                if at <= script.starts_at:
                    self.add(
                        doc,
                        ("beats", i, "event", "at"),
                        f"event.at {at:%Y-%m-%dT%H:%M} is not after the "
                        f"session start {script.starts_at:%Y-%m-%dT%H:%M}",
                    )
                elif at < when:
                    self.add(
                        doc,
                        ("beats", i, "event", "at"),
                        f"event.at {at:%Y-%m-%dT%H:%M} is before an "
                        f"earlier beat's event at {when:%Y-%m-%dT%H:%M}",
                    )
                when = max(when, at)
                for k, ref in enumerate(beat.event.records):
                    self.check_ref(doc, ("beats", i, "event", "records", k), ref, at, "event record")
            for k, ref in enumerate(beat.records):
                self.check_ref(doc, ("beats", i, "records", k), ref, when, "record")
        # write lock (Appendix C.3, mechanism 3)
        lock = script.write_lock
        if attr.write_lock and lock is None:
            self.add(doc, ("attribute",), f"{attr.name} is tested with a write lock: declare write_lock")
        if lock is not None:
            tdef = self.registry.get(lock.tool)
            if tdef is None:
                self.add(
                    doc,
                    ("write_lock", "tool"),
                    f"write_lock.tool: {self.registry.unknown_tool_message(lock.tool)}",
                )
            elif not tdef.write:
                self.add(
                    doc,
                    ("write_lock", "tool"),
                    f"write_lock.tool {lock.tool!r} is a read tool; a lock needs a write tool",
                )
            if lock.unlocked_by not in released:
                self.add(
                    doc,
                    ("write_lock", "unlocked_by"),
                    f"write_lock.unlocked_by {lock.unlocked_by!r} is never released by a beat",
                )
        self.run_tool_steps(script, doc, when, set(released))

    def run_tool_steps(
        self, script: AccumulationSession | Probe, doc: YamlDoc | None, when: datetime, released: set[str]
    ) -> None:
        """Run the intended path on a scratch copy (Table 8, condition 1).

        The clock is the script's start, or its last world event's time. The write lock is in
        place and every fact the beats release is released, as by the end of play; a declared lock
        must also refuse at least one of the steps while its fact is still withheld. An update or
        delete step must target a record the beats bind or an earlier step created
        (:meth:`~._check_content.ContentRules.check_target_record`).
        """
        if self.state is None or self.bad_collections:
            return
        lock = script.write_lock
        wc = WorkingCopy(self.state, when)
        locked = WorkingCopy(self.state, when)
        if lock is not None:
            wc.add_write_lock(lock)
            locked.add_write_lock(lock)
        for fid in released:
            wc.release_fact(fid)
        lock_bites = False
        bound = self.bound_records(script)
        created: dict[str, set[str]] = {}
        for k, step in enumerate(script.tool_steps):
            if lock is not None and self._refused_by_lock(locked, step):
                lock_bites = True
            self.check_target_record(doc, ("tool_steps", k), step, bound, created)
            result = self.replay(doc, ("tool_steps", k), wc, step.tool, step.args, step.expect_error)
            tdef = self.registry.get(step.tool)
            if result is not None and tdef is not None:
                self.note_created(step, tdef.domain, result, created)
        if lock is not None and script.tool_steps and not lock_bites:
            self.add(
                doc,
                ("write_lock",),
                "write_lock matches none of the tool_steps, so it would never "
                "refuse the write the user must dictate",
            )
        if lock is not None and not script.tool_steps:
            self.add(
                doc,
                ("write_lock",),
                "write_lock is declared but there are no tool_steps with the locked write",
            )

    def _refused_by_lock(self, wc: WorkingCopy, step: ToolStep) -> bool:
        tdef = self.registry.get(step.tool)
        if tdef is None or not tdef.write:
            return False
        try:
            parsed = tdef.args_model.model_validate(step.args)
        except ValueError:
            return False  # the replay reports the bad arguments
        values = {k: getattr(parsed, k) for k in tdef.args_model.model_fields}
        return wc.locked_by(tdef.name, values) is not None
