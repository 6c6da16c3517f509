"""Answers to the manager prompts of agent-framework-orchestrations' GroupChat and Magentic.

The agent-based GroupChat manager is asked "Decide what to do next" and parses an
`AgentOrchestrationOutput` JSON object; the StandardMagenticManager asks for facts, a plan, a
progress ledger (JSON) and a final answer. These answers let each participant speak once, in the
order the prompt lists them, and then finish. Invariant: every answer is a pure function of the
prompt (the round is counted from the manager's earlier answers in the conversation).
"""

from __future__ import annotations

import json
import re

from ._prompt import Prompt

GROUP_CHAT_MARKER = "Decide what to do next. Respond with a JSON object"
_GROUP_CHAT_LIST = "valid participant names (case-sensitive) and their descriptions:\n"
MAGENTIC_FACTS_MARKER = "Here is the pre-survey:"
MAGENTIC_FACTS_UPDATE_MARKER = "Please rewrite the following fact sheet"
MAGENTIC_PLAN_MARKER = "please devise a short bullet-point plan"
MAGENTIC_PLAN_UPDATE_MARKER = "come up with a new plan"
MAGENTIC_LEDGER_MARKER = '"is_request_satisfied"'
MAGENTIC_FINAL_MARKER = "provide the final answer to the original request"
# Every Magentic instruction this fake writes is "<name>" + this phrase: the rounds are counted by it.
INSTRUCTION_PHRASE = ", please do your part of the task"

_SELECT_FROM = re.compile(r"\(select from: ([^)]*)\)")
_TEAM_LINE = re.compile(r"^- ([^:\n]+):", re.MULTILINE)
_INSTRUCTION = re.compile(r"^[\w-]+" + re.escape(INSTRUCTION_PHRASE))
_TASK = re.compile(r"(?:following request:|following task:)\s*\n+(.*?)\n\s*\n", re.DOTALL)


def manager_answer(prompt: Prompt) -> str | None:
    """The manager's reply when the latest user message is a manager prompt, else None."""
    text = prompt.latest_user_text
    if GROUP_CHAT_MARKER in text:
        return _group_chat(prompt, text)
    if MAGENTIC_LEDGER_MARKER in text:
        return _progress_ledger(prompt, text)
    if MAGENTIC_FACTS_MARKER in text or MAGENTIC_FACTS_UPDATE_MARKER in text:
        return (
            "1. GIVEN OR VERIFIED FACTS\n- The request as stated.\n"
            "2. FACTS TO LOOK UP\n- None.\n3. FACTS TO DERIVE\n- None.\n4. EDUCATED GUESSES\n- None."
        )
    if MAGENTIC_PLAN_MARKER in text or MAGENTIC_PLAN_UPDATE_MARKER in text:
        team = _TEAM_LINE.findall(text) or ["the team"]
        return "\n".join(f"- {name.strip()}: do their part of the request." for name in team)
    if MAGENTIC_FINAL_MARKER in text:
        return f"Final answer: the team has completed the task: {_task_of(text)}"
    return None


def _task_of(text: str) -> str:
    match = _TASK.search(text)
    return " ".join(match.group(1).split()) if match else ""


def _group_chat(prompt: Prompt, text: str) -> str:
    listing = text.split(_GROUP_CHAT_LIST, 1)[1] if _GROUP_CHAT_LIST in text else ""
    names = [line.split(":", 1)[0].strip() for line in listing.splitlines() if ":" in line]
    done = sum(1 for t in prompt.dialogue[:-1] if t.role == "user" and t.text.startswith(GROUP_CHAT_MARKER))
    if done < len(names):
        answer = {
            "terminate": False,
            "reason": f"{names[done]} has not spoken yet.",
            "next_speaker": names[done],
            "final_message": None,
        }
    else:
        answer = {
            "terminate": True,
            "reason": "Every participant has spoken.",
            "next_speaker": None,
            "final_message": "Every participant has spoken; the conversation is complete.",
        }
    return json.dumps(answer)


def _progress_ledger(prompt: Prompt, text: str) -> str:
    match = _SELECT_FROM.search(text)
    names = [n.strip() for n in match.group(1).split(",") if n.strip()] if match else []
    done = sum(1 for t in prompt.dialogue if t.role == "assistant" and _INSTRUCTION.match(t.text))
    satisfied = done >= len(names)
    speaker = names[min(done, len(names) - 1)] if names else ""
    instruction = "" if satisfied else f"{speaker}{INSTRUCTION_PHRASE}: {_task_of(text)}"

    def item(reason: str, answer: bool | str) -> dict[str, object]:
        return {"reason": reason, "answer": answer}

    ledger = {
        "is_request_satisfied": item(f"{done} of {len(names)} participants have spoken.", satisfied),
        "is_in_loop": item("Each participant speaks once.", False),
        "is_progress_being_made": item("A new participant speaks each round.", True),
        "next_speaker": item("Next in the team's order.", speaker),
        "instruction_or_question": item("Ask for their part.", instruction),
    }
    return json.dumps(ledger)
