"""tau-bench and tau2-bench result files -> runs and grades.

tau-bench (sierra-research/tau-bench, ``historical_trajectories/*.json``): a JSON list of
``{task_id, reward, info, traj, trial}``. Trials are repeats (trial 0 -> repeat 1); reward 1 is
resolved, anything else unresolved. There are no timestamps, so no timing; tool calls come from
the assistant messages' ``tool_calls``, with their arguments; their ids are reused across
calls, so each record is decided per call by its id, name and arguments (docs/methodology.md
§4 "Tool calls").

tau2-bench (``data/simulations/*.json``): ``{timestamp, info, tasks, simulations}``. Each
simulation has ``start_time``/``end_time`` (naive local times: the zone is an explicit
assumption, default UTC), ``termination_reason``, ``reward_info.reward``, ``trial`` and
messages with timestamps and unique tool-call ids. Reward 1 is resolved, 0 < reward < 1 partially
resolved, 0 unresolved.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from grade_kit.adapters.common import (
    Adapter,
    Imported,
    finite_number,
    grade_for_outcome,
    non_negative,
    question_id,
    read_log_json,
    register_adapter,
    whole_number,
)
from grade_kit.reading.io import Rejected
from grade_kit.reading.sniff import FileHead
from grade_kit.schema import Run, Task, arguments_text, openai_usage, summed_usage

KNOWN_DOMAINS = ("airline", "retail", "telecom", "mock")
DELIVERED_TERMINATIONS = {"user_stop", "agent_stop", "transfer", "user_transfer"}
LIMIT_TERMINATIONS = {"max_steps": ("steps", "max_steps"), "max_turns": ("turns", None)}
"""tau2 terminations by a limit of the harness: the limit's type, and the ``info`` key that
holds its value."""
TIMEOUT_TERMINATIONS = {"timeout"}


def _outcome(reward: float) -> str:
    if reward >= 1.0:
        return "resolved"
    return "partial" if reward > 0 else "unresolved"


def _last_assistant_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "assistant" and isinstance(message.get("content"), str) \
                and message["content"].strip():
            return str(message["content"])
    return ""


def _split_stem(stem: str) -> tuple[str, str]:
    """(setup, domain) from a tau-bench file name such as ``gpt-4o-airline``."""
    head, _, tail = stem.rpartition("-")
    if tail in KNOWN_DOMAINS and head:
        return head, tail
    return stem, "tau-bench"


def import_tau_bench(path: Path | str, setup: str | None = None,
                     domain: str | None = None) -> Imported:
    """Convert a tau-bench results file (a JSON list of trials).

    Args:
        path: The JSON file.
        setup: Setup name; default the file name without its domain (``gpt-4o``).
        domain: The dataset of its task ids (``<domain>/<task_id>``); default the domain
            in the file name (``airline``).
    """
    path = Path(path)
    records = read_log_json(path)
    if not isinstance(records, list) or not all(
            isinstance(r, dict) and "task_id" in r for r in records):
        raise ValueError("not a tau-bench results file (a JSON list of trials with task_id)")
    guess_setup, guess_domain = _split_stem(path.stem)
    given = setup is not None
    setup = setup or guess_setup
    domain = domain or guess_domain
    out = Imported(label=path.name, model=setup, fixed_setup=given, questions=domain, notes=[
        "tau-bench files have no timestamps, so no timing is reported for them",
        "tau-bench reuses tool-call ids across calls: a record is one call unless it repeats "
        "an earlier record's id, name and arguments",
        "tau-bench: reward 1 -> resolved, 0 < reward < 1 -> partially resolved, "
        "else unresolved (the adapter never claims a material error)",
        "tau-bench result files log only the simulated user's cost (info.user_cost), never "
        "the agent's: no cost of the setup is shown for them",
    ])
    tasks: dict[str, Task] = {}
    first: dict[tuple[str, int], int] = {}  # (task, trial) -> the record kept
    for index, rec in enumerate(records):
        task_id = question_id(domain, rec["task_id"])
        info = rec.get("info") or {}
        if task_id not in tasks:  # the question stays planned whatever its trial holds
            instruction = (info.get("task") or {}).get("instruction") or f"{domain} task"
            tasks[task_id] = Task(task_id=task_id, prompt=instruction, suite=domain,
                                  metadata={"source": "tau-bench", "domain": domain})
        trial = whole_number(rec.get("trial", 0))
        reward = finite_number(rec.get("reward"))
        key = (json.dumps(rec.get("task_id"), default=str), trial if trial is not None else -1)
        problem = (("trial", f"trial {rec.get('trial')!r} is not a whole number >= 0")
                   if trial is None or trial < 0 else
                   ("reward", f"reward {rec.get('reward')!r} is not a finite number")
                   if reward is None else
                   ("task_id", f"task {rec.get('task_id')!r} trial {trial} again (first at "
                               f"[{first[key]}], which is kept)")
                   if key in first else None)
        if problem is not None:
            out.rejected.append(Rejected(str(path), None, f"[{index}].{problem[0]}", problem[1],
                                         json.dumps({"task_id": rec.get("task_id"),
                                                     "trial": rec.get("trial"),
                                                     "reward": rec.get("reward")},
                                                    default=str)))
            continue
        assert trial is not None and reward is not None
        first[key] = index
        run_id = f"{setup}/{task_id}/trial-{trial}"
        traj = rec.get("traj") or []
        calls = [
            {"id": str(call.get("id") or ""),
             "name": str((call.get("function") or {}).get("name") or call.get("name") or "?"),
             "arguments": arguments_text((call.get("function") or {}).get(
                 "arguments", call.get("arguments")))}
            for message in traj if message.get("role") == "assistant"
            for call in message.get("tool_calls") or []
        ]
        user_cost = info.get("user_cost")
        if user_cost is not None and not _dollars(user_cost):
            out.rejected.append(Rejected(
                str(path), None, f"[{index}].info.user_cost",
                f"user_cost {user_cost!r} is not a number of dollars >= 0",
                json.dumps({"task_id": rec.get("task_id"), "trial": rec.get("trial"),
                            "user_cost": user_cost}, default=str)))
            continue
        run = Run.model_validate({
            "run_id": run_id, "setup": setup, "task_id": task_id, "repeat": trial + 1,
            "status": "delivered",
            "response": {"text": _last_assistant_text(traj)},
            "tool_calls": calls,
            # the simulated user's cost only: tau-bench v1 writes no cost of the agent's
            "usage": None if user_cost is None else {"user_cost": user_cost},
            "source": {"metric": "reward", "score": reward},
            "metadata": {"source": "tau-bench", "reward": reward},
        })
        out.runs.append(run)
        out.grades.append(grade_for_outcome(run_id, _outcome(reward), "tau-bench reward",
                                            f"reward {reward:g}"))
    out.tasks = list(tasks.values())
    return out


def _dollars(value: Any) -> bool:
    """Whether a logged cost is a finite number of dollars >= 0 (a bool or text is not)."""
    number = finite_number(value)
    return number is not None and number >= 0


def _tau2_usage(sim: dict[str, Any], messages: list[dict[str, Any]],
                model: str | None) -> dict[str, Any] | None:
    """A tau2 simulation's usage (docs/adapters.md "Cost"): ``agent_cost`` as logged, the
    agent's tokens from ``agent_usage`` where the simulation has it, else summed over its
    model calls' ``usage`` (OpenAI fields; unknown when one call lacks it), the
    agent's model (``info.agent_info.llm``) and the simulated user's ``user_cost``."""
    given = sim.get("agent_usage")
    if isinstance(given, dict):
        tokens = openai_usage(given)
    else:
        # a model call: an assistant message with usage or a cost (tau2's fixed greeting
        # has neither: no call); one that cost something but lacks usage leaves it unknown
        turns = [m for m in messages if m.get("role") == "assistant"
                 and (m.get("usage") or m.get("cost"))]
        tokens = summed_usage([openai_usage(m["usage"]) if isinstance(m.get("usage"), dict)
                               else None for m in turns]) or {}
    usage = {**tokens, "model": model, "total_cost": sim.get("agent_cost"),
             "user_cost": sim.get("user_cost")}
    usage = {k: v for k, v in usage.items() if v is not None}
    return usage if set(usage) - {"model"} else None


def _aware(value: str | None, zone: ZoneInfo) -> str | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone)
    return parsed.isoformat()


def import_tau2_bench(path: Path | str, setup: str | None = None,
                      assume_tz: str = "UTC") -> Imported:
    """Convert a tau2-bench simulations file.

    Args:
        path: The JSON file.
        setup: Setup name; default ``info.agent_info.llm``.
        assume_tz: Zone given to tau2's naive timestamps; default UTC. Durations do not
            depend on it unless a clock change falls inside a run.
    """
    path = Path(path)
    data = read_log_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("simulations"), list):
        raise ValueError("not a tau2-bench simulations file (a JSON object with "
                         "'simulations')")
    info = data.get("info") or {}
    given = setup is not None
    setup = setup or str((info.get("agent_info") or {}).get("llm") or path.stem)
    domain = str((info.get("environment_info") or {}).get("domain_name") or "tau2")
    zone = ZoneInfo(assume_tz)
    out = Imported(label=path.name, model=setup, fixed_setup=given, questions=domain, notes=[
        f"tau2 timestamps are naive; read as {assume_tz} (an assumption)",
        "tau2: submitted = start_time, received = end_time of each simulation",
        "tau2: reward 1 -> resolved, 0 < reward < 1 -> partially resolved, else "
        "unresolved; a run stopped by max_steps or max_turns is a limit, graded by its reward",
    ])
    prompts = {}
    for task in data.get("tasks") or []:
        scenario = (task.get("user_scenario") or {}).get("instructions") or {}
        text = scenario if isinstance(scenario, str) else json.dumps(scenario, sort_keys=True)
        prompts[str(task["id"])] = text
    tasks: dict[str, Task] = {}
    first: dict[tuple[str, int], int] = {}  # (task, trial) -> the simulation kept
    for index, sim in enumerate(data.get("simulations") or []):
        task_id = question_id(domain, sim["task_id"])
        if task_id not in tasks:  # the question stays planned whatever its trial holds
            tasks[task_id] = Task(task_id=task_id, suite=domain,
                                  prompt=prompts.get(str(sim["task_id"]), f"{domain} task"),
                                  metadata={"source": "tau2-bench", "domain": domain})
        trial = whole_number(sim.get("trial", 0))
        slot = (json.dumps(sim.get("task_id"), default=str), trial if trial is not None else -1)
        problem = (("trial", f"trial {sim.get('trial')!r} is not a whole number >= 0")
                   if trial is None or trial < 0 else
                   ("task_id", f"task {sim.get('task_id')!r} trial {trial} again (first at "
                               f"simulations[{first[slot]}], which is kept)")
                   if slot in first else None)
        if problem is not None:
            out.rejected.append(Rejected(str(path), None, f"simulations[{index}].{problem[0]}",
                                         problem[1], json.dumps({"task_id": sim.get("task_id"),
                                                                 "trial": sim.get("trial")},
                                                                default=str)))
            continue
        assert trial is not None
        first[slot] = index
        run_id = f"{setup}/{task_id}/trial-{trial}"
        termination = str(sim.get("termination_reason") or "")
        limit = None
        if termination in DELIVERED_TERMINATIONS:
            status = "delivered"
        elif termination in LIMIT_TERMINATIONS:
            status = "limit"
            kind, key = LIMIT_TERMINATIONS[termination]
            value = info.get(key) if key else None
            limit = {"type": kind, "value": non_negative(value)}
        elif termination in TIMEOUT_TERMINATIONS:
            status = "timeout"
        else:
            status = "failed"
        messages = sim.get("messages") or []
        tool_ends = {str(m.get("id")): m.get("timestamp") for m in messages
                     if m.get("role") == "tool"}
        calls = [
            {"id": str(call["id"]), "name": str(call.get("name") or "?"),
             "arguments": arguments_text(call.get("arguments")),
             "started": _aware(message.get("timestamp"), zone),
             "ended": _aware(tool_ends.get(str(call["id"])), zone)}
            for message in messages if message.get("role") == "assistant"
            for call in message.get("tool_calls") or []
        ]
        start = _aware(sim.get("start_time"), zone)
        end = _aware(sim.get("end_time"), zone)
        events: dict[str, str | None] = {"submitted": start}
        if status == "delivered":
            events["received"] = end
        else:
            events["stopped"] = end
        raw_reward = (sim.get("reward_info") or {}).get("reward")
        reward = finite_number(raw_reward)
        if reward is None and status in ("delivered", "limit"):
            out.rejected.append(Rejected(str(path), None,
                                         f"simulations[{index}].reward_info.reward",
                                         f"reward {raw_reward!r} is not a finite number",
                                         json.dumps({"task_id": sim.get("task_id"),
                                                     "trial": trial, "reward": raw_reward},
                                                    default=str)))
            continue
        bad_cost = next((key for key in ("agent_cost", "user_cost")
                         if sim.get(key) is not None and not _dollars(sim.get(key))), None)
        if bad_cost is not None:
            out.rejected.append(Rejected(
                str(path), None, f"simulations[{index}].{bad_cost}",
                f"{bad_cost} {sim.get(bad_cost)!r} is not a number of dollars >= 0",
                json.dumps({"task_id": sim.get("task_id"), "trial": trial,
                            bad_cost: sim.get(bad_cost)}, default=str)))
            continue
        duration = non_negative(sim.get("duration"))
        run = Run.model_validate({
            "run_id": run_id, "setup": setup, "task_id": task_id, "repeat": trial + 1,
            "status": status,
            "error": None if status in ("delivered", "limit") else termination,
            "limit": limit, "events": events,
            "response": {"text": _last_assistant_text(messages)}
            if status in ("delivered", "limit") else None,
            "tool_calls": calls,
            "usage": _tau2_usage(sim, messages, str((info.get("agent_info") or {}).get("llm")
                                                    or "") or None),
            "source": {"metric": "reward" if reward is not None else None, "score": reward,
                       "total_s": duration},
            "metadata": {"source": "tau2-bench",
                         "clock": {"source": "tau2 simulation start_time/end_time (naive, "
                                             f"read as {assume_tz})", "precision": "as logged"},
                         "reward": reward,
                         "termination_reason": termination,
                         "duration_s": sim.get("duration")},
        })
        out.runs.append(run)
        if status in ("delivered", "limit"):
            assert reward is not None
            out.grades.append(grade_for_outcome(run_id, _outcome(reward),
                                                "tau2-bench reward", f"reward {reward:g}"))
    trials = whole_number(info.get("num_trials"))
    if trials is not None and trials >= 1:
        out.stated_repeats[f"{path.name} (tau2 info.num_trials)"] = trials
    out.tasks = list(tasks.values())
    return out


def import_tau_file(path: Path | str, setup: str | None = None) -> Imported:
    """tau-bench or tau2-bench, whichever the file is."""
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        head = handle.read(256).lstrip()
    if head.startswith("["):
        return import_tau_bench(path, setup)
    return import_tau2_bench(path, setup)


def _is_tau_results(head: FileHead) -> bool:
    """A tau-bench results file (one JSON array whose first record has ``"traj"``,
    ``"reward"`` or ``"task_id"`` keys) or a tau2-bench one (one object with
    ``"simulations"``)."""
    if head.record is not None:
        return head.alone and isinstance(head.record.get("simulations"), list)
    if not head.document:
        return False
    if head.text.startswith("{"):
        return '"simulations"' in head.text
    return head.text.startswith("[") and any(
        key in head.text for key in ('"traj"', '"reward"', '"task_id"'))


register_adapter(Adapter(
    name="tau-bench", describes="a tau-bench or tau2-bench results file", suffixes=(".json",),
    recognises=_is_tau_results, read=lambda path, setup, options: import_tau_file(path, setup)))
