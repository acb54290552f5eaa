"""Writes real Inspect logs (mockllm models) in the layouts of public agentic benchmarks."""
import sys
from pathlib import Path

from inspect_ai import Task, eval, eval_retry, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser
from inspect_ai.scorer import Score, Target, accuracy, mean, scorer, stderr
from inspect_ai.solver import Generate, TaskState, generate, solver

import inspect_ai.model._model as _model_module
import inspect_ai.model._tokens as _tokens_module

def _count(text):  # no network here: tiktoken cannot fetch its encoding
    return max(1, len(str(text)) // 4)

_tokens_module.count_text_tokens = _count
_model_module.count_text_tokens = _count

OUT = Path(sys.argv[1])
FAILED_ONCE: set[str] = set()
SOLVED = {"alpha": {1, 2, 4, 5}, "beta": {1, 3}}
LOOPING = {"alpha": {6}, "beta": {5, 6}}  # these samples keep talking: the message limit
ERRORS = {"alpha": {2, 4}, "beta": set()}  # these error on the first attempt


def ctf_dataset() -> MemoryDataset:
    return MemoryDataset([Sample(id=i, input=f"find flag {i}", target=f"flag{i}")
                          for i in range(1, 7)], name="ctf")


@solver
def agent(model_name: str):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        marker = OUT / f".failed-{model_name}-{state.sample_id}"
        if state.sample_id in ERRORS[model_name] and not marker.exists():
            marker.write_text("")
            raise RuntimeError("sandbox died")
        rounds = 12 if state.sample_id in LOOPING[model_name] else 1
        for _ in range(rounds):
            state = await generate(state)
            state.messages.append(ChatMessageUser(content="continue"))
        return state
    return solve


@scorer(metrics=[accuracy(), stderr()])
def flag(model_name: str):
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value="C" if state.sample_id in SOLVED[model_name] else "I")
    return score


@task
def ctf(model_name: str = "alpha"):
    return Task(dataset=ctf_dataset(), solver=agent(model_name), scorer=flag(model_name),
                message_limit=10)


def nl2bash_dataset() -> MemoryDataset:
    return MemoryDataset([Sample(id=i, input=f"list files {i}", target="ls")
                          for i in range(1, 6)], name="nl2bash")


GRADED = {"chat": {1: 1.0, 2: 0.8, 3: 0.5, 4: 0.2, 5: 0.0},
          "completion": {1: 1.0, 2: 1.0, 3: 0.2, 4: 0.0, 5: 0.0}}


@scorer(metrics=[mean(), stderr()])
def graded(variant: str):
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=GRADED[variant][int(state.sample_id)])
    return score


@task
def nl2bash_chat():
    return Task(dataset=nl2bash_dataset(), solver=generate(), scorer=graded("chat"))


@task
def nl2bash_completion():
    return Task(dataset=nl2bash_dataset(), solver=generate(), scorer=graded("completion"))


if __name__ == "__main__":
    ctf_dir, nl_dir = OUT / "ctf", OUT / "nl2bash"
    for name in ("alpha", "beta"):
        logs = eval(ctf(model_name=name), model=f"mockllm/{name}", log_dir=str(ctf_dir),
                    fail_on_error=False, display="none")
        if name == "alpha":  # a continuation re-running the errored samples
            eval_retry(logs[0], log_dir=str(ctf_dir), fail_on_error=False, display="none")
    # a one-sample retry of alpha, as its own eval
    eval(ctf(model_name="alpha"), model="mockllm/alpha", log_dir=str(ctf_dir),
         sample_id=[3], display="none")
    for t in (nl2bash_chat(), nl2bash_completion()):
        eval(t, model="mockllm/gamma", log_dir=str(nl_dir), display="none")
