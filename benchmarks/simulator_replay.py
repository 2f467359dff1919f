"""Replay the simulated user alone on the profile's simulator model, with a fixed PA reply per beat.

Not a test: prints one JSON line per simulator turn (the beat before and after it, the message
delivered, the rejected attempts' problems, seconds) and the session's check counts. It answers
one question cheaply: does the simulated user write each beat's message, or does it repeat itself,
stall or write as the assistant (issue 12: the quick start's A-S14 and A-S51 were discarded when
the 1.5B model wrote its previous message again at a beat change)? A full quick start takes about
18 minutes; one replayed session takes 2-4 on a 2-core CPU, with no PA, judge or memory calls.

The PA's side is fixed (``CANNED``: a plausible reply for each beat, the same every run), so two
versions of the simulator's prompt or checks can be compared on the same sessions. Only the
simulator runs: the UserSimulator is built as the episode loop builds it (paper Appendix D.1 turn
execution and rewrites; the profile's ``simulator_output`` and ``simulator_rewrite_temperature``;
the LLM checker as the profile says). Story time, facts and targets come from the user's files.

    python benchmarks/simulator_replay.py                      # A-S14 and A-S51 on models/embedded.yaml
    python benchmarks/simulator_replay.py --sessions A-S51 --profile embedded

Measured on 2 December 2026 (1.5B simulator, temperature 0, rewrites at 0.7, load about 1.5-2),
before and after the beat-change changes of that day (the turn line naming the new goal, rewrite
notes without the rejected reply, a copied part of an earlier message counted as a repeat):
before, A-S14 ended invalid at a beat change (4 attempts, all 'repeats word for word') and A-S51
played through, but its last beat's message copied the previous beat's question, so the check-in
was never asked; after, A-S14 played through (one repeat, rewritten) and A-S51 ended invalid at
its last beat (4 attempts copying earlier words, now caught instead of sent).

Measured on 3 December 2026 (same settings, load 0.2-2; single runs, and two runs of the same code
already differ in their first message, so read them as examples, not rates):
- a wider repeat rule (a message holding a whole earlier one, or sharing 8 words in a row with
  one) sent back the 1.5B's "previous message plus the next question" at the first beat change of
  both sessions; its rewrites then copied the previous message alone, and both sessions ended
  invalid on their second turn, with or without the copied words quoted in the note. Not kept.
- the last two of four attempts were the same message, character for character: the same prompt
  (each distinct note is shown once) gave the same seed. With each rewrite's number in the sampling
  scope (UserSimulator._attempt_scope), A-S14 played through (3 repeats rewritten); A-S51 ended
  invalid at its last beat (2 attempts sent back as 'private block name', 3 repeats).
- the 'private block name' rejections were replies cut at their cap (printed whole now, they loop
  one sentence); the cut check sends those back first. Replayed again, A-S51 played through, its
  how-to-get message holding the previous message whole before the new question (not caught).
- with trim_copied (a leading "You:" label and sentences copied from earlier user messages
  removed; a moving draft with only copies moves on without them): A-S14 and A-S51 both played
  through with no attempt sent back (trimmed_messages 3 and 2; load about 1).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's mempa_tui, not an installed one

from mempa_tui.ix.types import DeliveredTurn  # noqa: E402
from mempa_tui.llm import LLMClient  # noqa: E402
from mempa_tui.llm.profile import load_profile  # noqa: E402
from mempa_tui.llm.runtime import prepare_runtime  # noqa: E402
from mempa_tui.scripts.loader import load_user  # noqa: E402
from mempa_tui.simulator import UserSimulator  # noqa: E402

CANNED: dict[str, dict[str, str]] = {
    "A-S14": {
        "colm_email": (
            "I found Colm's email from 11 May, 'Summer leaflets - printing': he needs the 12,000 "
            "Summer Network leaflets printed and asks how you want to do it. He mentions Calder "
            "Print's quote and the in-house print room."
        ),
        "how_print": (
            "I recommend Calder Print: their quote delivers all 12,000 leaflets by 2 June, before "
            "your 5 June date, and the in-house print room is booked until mid-June."
        ),
        "reaction": "Great, I'll leave it with you to tell Colm. Anything else?",
    },
    "A-S51": {
        "booking": "Your Gull Cottage booking runs from Saturday 8 August to Saturday 15 August 2026.",
        "how_to_get": (
            "The easiest way is to drive: about 3 hours 20 minutes from Hollins Ferry, and the "
            "surfboard fits on a roof rack. The train takes 4 hours with one change, but a "
            "surfboard is awkward on it."
        ),
        "check_in": "Check-in at Gull Cottage is from 4 pm on Saturday 8 August, according to your calendar.",
    },
}
"""Session id -> beat id -> the PA reply delivered after the user's message in that beat."""

MAX_TURNS = 12


async def replay(sim: UserSimulator, session, targets: dict[str, str], replies: dict[str, str]) -> dict[str, int]:
    """Play ``session`` with ``replies`` as the PA; print one JSON line per turn.

    Returns:
        The simulator's check counts for the session (keys: ``CHECK_COUNT_KEYS``).
    """
    sim.start(session, targets)
    delivered: DeliveredTurn | None = None
    for turn_no in range(MAX_TURNS):
        before = sim.current_beat.id if sim.current_beat else None
        started = time.monotonic()
        turn = await sim.next_turn(delivered)
        after = sim.current_beat.id if sim.current_beat else None
        print(json.dumps({
            "turn": turn_no, "beat_before": before, "beat": after, "message": turn.message,
            "invalid": turn.invalid, "invalid_reason": turn.invalid_reason, "done": turn.done,
            "rejected": [{"problems": r.problems, "reply": r.reply} for r in turn.rejected],
            "seconds": round(time.monotonic() - started, 1),
        }), flush=True)
        if turn.done or turn.invalid or sim.done:
            break
        if turn.waiting_for_event:
            sim.advance_beat()
            delivered = None
            continue
        delivered = DeliveredTurn(reply=replies.get(after or "", "Done."))
    return sim.check_counts


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="A-S14,A-S51", help="comma-separated session ids (with canned PA replies)")
    parser.add_argument("--profile", default="embedded", help="model profile (name under models/ or a path)")
    parser.add_argument("--worlds", default="worlds")
    args = parser.parse_args(argv)
    ids = [s.strip() for s in args.sessions.split(",") if s.strip()]
    unknown = [s for s in ids if s not in CANNED]
    if unknown:
        parser.error(f"no canned PA replies for {', '.join(unknown)} (have: {', '.join(CANNED)})")
    profile = load_profile(args.profile)
    options = profile.options
    async with AsyncExitStack() as stack:
        ready = await prepare_runtime(profile, stack, sys.stdout)
        client = LLMClient(ready)
        for sid in ids:
            bundle = load_user(args.worlds, sid.split("-")[0])
            session = bundle.sessions[sid]
            sim = UserSimulator(
                client, bundle.persona, mode="accumulation",
                llm_checker=options.llm_message_checker,
                output_format=options.simulator_output,
                rewrite_temperature=options.simulator_rewrite_temperature,
            )
            counts = await replay(sim, session, bundle.targets_at(session.context, session.starts_at), CANNED[sid])
            print(f"{sid} checks {json.dumps(counts)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(anyio.run(main))
