"""SFT examples for an experience model, distilled from a domain's reference env (:mod:`.recorded`: from recorded episodes).

Each example is one reference transition: the chat messages the backends send for it (built by
:func:`dreamgym_env.experience.prompt.messages`, the function every backend calls, so the data
cannot drift from what a trained model is asked) and the true answer
``{"reasoning", "next_state", "reward", "done"}``. Transitions come from expert, noisy and
random episodes in equal shares (valid actions only: the synthetic env answers invalid ones
itself) and, with a teacher, from curriculum variations of the train tasks.

The split is by task, never by transition: train examples come from the domain's train tasks
(and variations of them), test examples from its test tasks. The reasoning is written from the
reference env's own knowledge (what the action did, why the reward: ``"reasoning_source":
"reference"``) or by a teacher endpoint (``"teacher"``), as the paper distils it from a stronger
LLM.

Example::

    summary = build_dataset("webshop", 600, "runs/webshop_sft.jsonl")
    rows = read_examples("runs/webshop_sft.jsonl", split="train")
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.registry import POLICY_NAMES
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.bench.fidelity import DEFAULT_HISTORY_LEN, ReferenceTransition, reference_transitions
from dreamgym_env.domain import ActionError, Domain, Split
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.experience.parsing import OutputParseError, parse_transition
from dreamgym_env.experience.prompt import (
    STRUCTURED_REASONING_CHARS,
    answer_state_schema,
    carried_values,
    clip,
    messages,
    prompt_fingerprint,
    updated_values,
    user_prompt,
)
from dreamgym_env.replay.jsonl import numbered_lines
from dreamgym_env.types import ExperienceRequest, ParsedAction, Task, Transition, Usage

if TYPE_CHECKING:
    from dreamgym_env.curriculum.chat import ChatModel

ReasoningSource = Literal["reference", "teacher"]
StateMode = Literal["text", "structured"]
DEFAULT_TRAIN_EXAMPLES: Final = 600
"""Train examples of a dataset from a reference env where none are asked for (``dreamgym experience dataset``)."""
DEFAULT_TEST_FRACTION: Final = 0.2
"""Test examples written beside the train ones, as a share of ``n``."""
DEFAULT_VARIATION_SHARE: Final = 0.25
"""With a teacher, the share of train examples played on curriculum variations of train tasks."""
MAX_COLLECT_ROUNDS: Final = 8
"""Rounds of episodes per policy before a short pool is accepted as it is."""

_TEACHER_SYSTEM = """You explain the transitions of a text environment. You are shown what the \
environment was asked and what really happened next. In one or two sentences (at most {limit} \
characters), say why this action leads to this next state and this reward. Answer with the \
explanation only."""


@dataclass(frozen=True)
class DatasetSummary:
    """What :func:`build_dataset` wrote: examples per split, policy and source, tasks, time."""

    domain: str
    state_mode: StateMode
    train_examples: int
    test_examples: int
    train_tasks: int
    test_tasks: int
    generated_tasks: int
    by_policy: dict[str, int]
    train_episode_ends: int
    reasoning_source: ReasoningSource
    seconds: float
    out: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format(self) -> str:
        lines = [
            f"{self.out}: {self.train_examples} train examples ({self.train_tasks} tasks, "
            f"{self.generated_tasks} generated) and {self.test_examples} test examples ({self.test_tasks} tasks)",
            f"domain {self.domain}, {self.state_mode} states, reasoning from the {self.reasoning_source}, "
            f"policies {dict(self.by_policy)}, {self.train_episode_ends} train examples end an episode, "
            f"{self.seconds:.1f} s",
        ]
        return "\n".join([*lines, *self.notes])


def state_mode_of(domain: Domain) -> StateMode:
    """Structured where the domain has a state schema (the backends' default), else text."""
    return "structured" if domain.state_json_schema is not None else "text"


def answer_text(request: ExperienceRequest, truth: Transition, reasoning: str) -> str:
    """The target answer, as a model constrained to the transition schema would write it.

    In structured mode ``next_state`` is the state's JSON object less the request's carried
    fields, its updated fields holding only their new or changed entries; a whole-number reward
    is written as an integer (the prompt asks for ``0 or 1``). The answer is read back with the
    backends' own parser, so a target that no backend would accept, or that does not give the
    true next state back (a field the pack wrongly calls carried or updated), raises :class:`DataError`.
    """
    structured = request.state_schema is not None
    reward: float | int = int(truth.reward) if float(truth.reward).is_integer() else truth.reward
    next_state: Any = truth.next_state
    if structured:  # the model leaves the carried fields out, as the backends ask it to
        next_state = {
            k: v
            for k, v in json.loads(truth.next_state).items()
            if k not in request.carried_fields and k not in request.given_fields
        }
        for name, current in updated_values(request).items():
            next_state[name] = {k: v for k, v in (next_state.get(name) or {}).items() if current.get(k) != v}
    answer = {
        "reasoning": reasoning,
        "next_state": next_state,
        "reward": reward,
        "done": truth.terminated,
    }
    text = json.dumps(answer, ensure_ascii=False)
    try:
        parsed = parse_transition(
            text, Usage(), answer_state_schema(request), carried_values(request), updated_values(request)
        )
    except OutputParseError as exc:
        raise DataError(
            f"task {request.task.id!r}: the reference answer is not a valid transition: {exc}"
        ) from exc
    if structured and json.loads(parsed.next_state) != json.loads(truth.next_state):
        raise DataError(
            f"task {request.task.id!r}: the answer without its carried and updated fields does not "
            f"give the next state back after {request.action!r}"
        )
    return text


def given_fields_hold(request: ExperienceRequest, truth: Transition) -> bool:
    """Whether ``request``'s given fields are ``truth``'s next state's (a field its JSON leaves out is an empty one).

    A pack's lookup can miss what its state does not hold (an earlier step's change out of
    sight); such a transition teaches a model nothing it could write, so the data leaves it out.
    """
    if not request.given_fields:
        return True
    after = json.loads(truth.next_state)
    return all(
        after[name] == value if name in after else not value for name, value in request.given_fields.items()
    )


def _kind(domain: Domain, state: str, structured: bool) -> str | None:
    if not structured or domain.state_kind_field is None:
        return None
    try:
        return str(getattr(domain.parse_state(state), domain.state_kind_field))
    except ValueError:
        return None


def reference_reasoning(domain: Domain, request: ExperienceRequest, truth: Transition) -> str:
    """Why this transition happens, in the reference env's terms: what the action did, why the reward.

    Written from the parsed action, the state's kind before and after (where the domain has
    kinds and the model writes the next one) and the reward and episode end; at most
    :data:`~dreamgym_env.experience.prompt.STRUCTURED_REASONING_CHARS` characters.
    """
    structured = request.state_schema is not None
    action = domain.parse_action(request.action)
    what = request.action if isinstance(action, ActionError) else f"{action.verb} {action.argument!r}".strip()
    before, after = _kind(domain, request.state, structured), _kind(domain, truth.next_state, structured)
    if structured and domain.state_kind_field in request.given_fields:
        # nothing to name: the model does not write the next kind (WebArena's given page), and a
        # 1M-parameter model copying two URLs into its reasoning ran on past them
        moved = "leads to the state the environment's data gives"
    elif before is not None and after is not None:
        moved = (
            f"keeps the {before} page"
            if before == after
            else f"leads from the {before} page to the {after} page"
        )
    else:
        moved = "leaves the state unchanged" if truth.next_state == request.state else "changes the state"
    if truth.terminated and truth.reward >= 1.0:
        outcome = "It completes the task: reward 1, the episode ends."
    elif truth.terminated and truth.reward > 0:
        outcome = f"The episode ends with a partial score of {truth.reward:g}: the result only partly fits the task."
    elif truth.terminated:
        outcome = "The episode ends without completing the task: reward 0."
    else:
        outcome = "The task is not complete yet: reward 0."
    return clip(f"The action {what} {moved}. {outcome}", STRUCTURED_REASONING_CHARS)


class TeacherReasoning:
    """Reasoning written by a teacher chat model shown the request and what really happened.

    Arguments:
        chat: a :class:`~dreamgym_env.curriculum.chat.ChatModel` (e.g. an ``EndpointChat``)
            with a ``run`` method for sync use.
    """

    def __init__(self, chat: ChatModel) -> None:
        self.chat = chat

    def __call__(self, request: ExperienceRequest, truth: Transition) -> str:
        outcome = (
            f"# What really happened\nNext state: {truth.next_state}\n"
            f"Reward: {truth.reward:g}, done: {str(truth.terminated).lower()}"
        )
        conversation = [
            {"role": "system", "content": _TEACHER_SYSTEM.format(limit=STRUCTURED_REASONING_CHARS)},
            {"role": "user", "content": f"{user_prompt(request)}\n\n{outcome}"},
        ]
        reply = self.chat.run(self.chat.complete(conversation))  # type: ignore[attr-defined]
        text = " ".join((reply.text or "").split())
        if not text:
            raise DataError(f"the teacher gave no reasoning for task {request.task.id!r}")
        return clip(text, STRUCTURED_REASONING_CHARS)


def sft_example(
    request: ExperienceRequest,
    truth: Transition,
    reasoning: str,
    *,
    split: Split,
    policy: str,
    reasoning_source: ReasoningSource,
) -> dict[str, Any]:
    """One JSONL row: TRL's conversational prompt-completion format plus where it came from.

    ``prompt`` is exactly :func:`~dreamgym_env.experience.prompt.messages` for the request;
    ``completion`` is the assistant's answer. ``request`` keeps the request's episode part
    (task, history, state, action, world lines, carried and updated fields); its domain part (prompt, state schema) is the domain's.
    """
    return {
        "prompt": messages(request.prompt, request),
        "completion": [{"role": "assistant", "content": answer_text(request, truth, reasoning)}],
        "split": split,
        "domain": request.task.domain,
        "state_mode": "structured" if request.state_schema is not None else "text",
        "prompt_fingerprint": prompt_fingerprint(request.prompt, request.state_schema),
        "task_id": request.task.id,
        "parent_id": request.task.parent_id,
        "policy": policy,
        "reasoning_source": reasoning_source,
        "request": request.model_dump(
            mode="json",
            include={
                "task",
                "history",
                "state",
                "action",
                "world",
                "carried_fields",
                "updated_fields",
                "given_fields",
            },
        ),
    }


def request_of(row: dict[str, Any], domain: Domain | str) -> ExperienceRequest:
    """The request a row was made from (its domain's prompt and, in structured mode, schema)."""
    pack = get_domain(domain)
    structured = row.get("state_mode") == "structured"
    return ExperienceRequest(
        prompt=pack.prompt, state_schema=pack.state_json_schema if structured else None, **row["request"]
    )


def policy_transitions(
    domain: Domain,
    split: Split,
    policy: str,
    count: int,
    *,
    seed: int,
    tasks: Sequence[Task] | None = None,
    history_len: int = DEFAULT_HISTORY_LEN,
    end_share: float | None = None,
    near_miss_share: float = 0.0,
    ending_verbs: frozenset[str] = frozenset(),
) -> list[ReferenceTransition]:
    """``count`` valid reference transitions of ``policy``'s episodes on ``split``'s tasks (or ``tasks``).

    Episodes are played until their valid transitions number at least twice ``count`` (or
    :data:`MAX_COLLECT_ROUNDS` rounds), then ``count`` are drawn at random (seeded), in
    episode order. With ``end_share``, that share of the draw are transitions that end their
    episode (WebShop's purchases, ALFWorld's completions), as far as the rounds' episodes
    give them, the rest transitions that do not: episodes end once, so at their natural rate
    the verdicts that decide an episode's outcome are a few percent of the data.

    At least ``near_miss_share`` of the draw are near misses, as far as the rounds give them:
    transitions that do not end their episode, of a verb that ends episodes (one of
    ``ending_verbs``, or of the verbs that end this policy's episodes): an ALFWorld ``put``
    of the wrong object, or in the wrong place. A random policy rarely carries anything, so
    at its natural rate the data holds few puts that win nothing, and a model learns that a
    put ends the episode.
    """
    if count <= 0:
        return []
    ends_wanted = 0 if end_share is None else round(count * end_share)
    near_misses_wanted = round(count * near_miss_share)
    env = domain.make_reference_env(split=split, max_steps=domain.max_episode_steps)
    mode = state_mode_of(domain)
    actor = make_policy(policy, domain, seed=seed)
    pool: list[ReferenceTransition] = []
    ends = near_misses = 0
    verbs = set(ending_verbs)
    try:
        for round_ in range(MAX_COLLECT_ROUNDS):
            steps_short = max(0, 2 * count - len(pool))
            episodes = max(
                2,
                math.ceil(steps_short / max(1, domain.max_episode_steps // 3)),
                ends_wanted - ends,
                near_misses_wanted - near_misses,
            )
            trajectories = collect_trajectories(
                env,
                actor,
                episodes,
                tasks=tasks,
                seed=seed + 1000 * round_,
                policy_name=policy,
                progress=False,
                state_mode=mode,
            )
            pool += reference_transitions(trajectories, domain, history_len=history_len)
            ends = sum(t.truth.terminated for t in pool)
            verbs |= {_verb(domain, t) for t in pool if t.truth.terminated}
            near_misses = sum(_near_miss(domain, t, verbs) for t in pool)
            if len(pool) >= 2 * count and ends >= ends_wanted and near_misses >= near_misses_wanted:
                break
    finally:
        env.close()
    rng = np.random.default_rng(seed)
    if end_share is None and not near_misses_wanted:
        picks = rng.choice(len(pool), size=min(count, len(pool)), replace=False)
        return [pool[int(i)] for i in sorted(picks)]
    near = [i for i, t in enumerate(pool) if _near_miss(domain, t, verbs)] if near_misses_wanted else []
    near_picks = (
        [int(i) for i in rng.choice(near, size=min(near_misses_wanted, len(near)), replace=False)]
        if near
        else []
    )
    taken = set(near_picks)
    if end_share is None:
        rest = [i for i in range(len(pool)) if i not in taken]
        rest_picks = rng.choice(rest, size=min(count - len(taken), len(rest)), replace=False)
        return [pool[int(i)] for i in sorted([*near_picks, *rest_picks])]
    ending = [i for i, t in enumerate(pool) if t.truth.terminated]
    going_on = [i for i, t in enumerate(pool) if not t.truth.terminated and i not in taken]
    end_picks = rng.choice(ending, size=min(ends_wanted, len(ending)), replace=False)
    other_picks = rng.choice(
        going_on, size=min(count - len(end_picks) - len(taken), len(going_on)), replace=False
    )
    return [pool[int(i)] for i in sorted([*near_picks, *end_picks, *other_picks])]


def _verb(domain: Domain, transition: ReferenceTransition) -> str:
    parsed = domain.parse_action(transition.request.action)
    return parsed.verb if isinstance(parsed, ParsedAction) else ""


def _near_miss(domain: Domain, transition: ReferenceTransition, ending_verbs: set[str]) -> bool:
    """Whether ``transition`` does not end its episode though its verb ends others (see :func:`policy_transitions`)."""
    return not transition.truth.terminated and _verb(domain, transition) in ending_verbs


def _shares(total: int) -> dict[str, int]:
    """``total`` split into near-equal shares, one for each of :data:`POLICY_NAMES`."""
    parts = len(POLICY_NAMES)
    return {name: total // parts + (1 if i < total % parts else 0) for i, name in enumerate(POLICY_NAMES)}


PlanItem = tuple[Split, str, int, int, Sequence[Task] | None]
"""``(split, policy, count, seed, tasks)``: one policy's share of a dataset (``tasks``: variations played)."""


def held_out_count(n: int, test_n: int | None) -> int:
    """The test examples :func:`build_dataset` writes beside ``n`` train ones (``None``: a fifth of ``n``)."""
    return max(1, round(n * DEFAULT_TEST_FRACTION)) if test_n is None else test_n


def _test_plan(test_n: int, seed: int) -> list[PlanItem]:
    """The test split's share of each policy, with its seed (after the train shares' seeds)."""
    return [
        ("test", name, count, seed + 7919 * (len(POLICY_NAMES) + index), None)
        for index, (name, count) in enumerate(_shares(test_n).items())
    ]


def _plan_examples(
    pack: Domain,
    plan: Sequence[PlanItem],
    *,
    generated: Sequence[Task],
    history_len: int,
    end_share: float | None,
    reasoning: Callable[[ExperienceRequest, Transition], str],
    source: ReasoningSource,
    near_miss_share: float = 0.0,
) -> tuple[list[dict[str, Any]], int]:
    """The SFT examples of ``plan``, and how many transitions were left out as stale.

    The verbs that ended an episode in the items drawn before name the near misses of the
    next (the expert's come first): a random policy's own episodes hardly ever end.
    """
    allowed = {split: {t.id for t in pack.tasks(split)} for split in ("train", "test")}
    allowed["train"] |= {t.id for t in generated}
    rows: list[dict[str, Any]] = []
    stale = 0
    ending_verbs: set[str] = set()
    for split, policy, count, seed, tasks in plan:
        drawn = policy_transitions(
            pack, split, policy, count, seed=seed, tasks=tasks, history_len=history_len,
            end_share=end_share if split == "train" else None,
            near_miss_share=near_miss_share if split == "train" else 0.0,
            ending_verbs=frozenset(ending_verbs),
        )  # fmt: skip
        ending_verbs |= {_verb(pack, t) for t in drawn if t.truth.terminated}
        for reference in drawn:
            task = reference.request.task
            if task.id not in allowed[split] or (
                task.parent_id is not None and task.parent_id not in allowed["train"]
            ):
                raise DataError(
                    f"task {task.id!r} is not a {split} task of {pack.name!r}: the split would leak"
                )
            if not given_fields_hold(reference.request, reference.truth):
                stale += 1
                continue
            rows.append(
                sft_example(
                    reference.request,
                    reference.truth,
                    reasoning(reference.request, reference.truth),
                    split=split,
                    policy=policy if tasks is None else f"{policy}:variation",
                    reasoning_source=source,
                )
            )
    return rows, stale


def held_out_examples(
    domain: Domain | str, test_n: int, *, seed: int = 0, history_len: int = DEFAULT_HISTORY_LEN
) -> list[dict[str, Any]]:
    """The test examples :func:`build_dataset` writes for ``test_n`` and ``seed`` (reference reasoning).

    They are made again from the reference env by today's code, so a shipped model's recorded
    :func:`examples_sha256` of them differs once anything its requests or answers hold has
    changed: the prompt, the world lines, the given, carried and updated fields, the reasoning.
    """
    pack = get_domain(domain)
    reasoning = partial(reference_reasoning, pack)
    plan = _test_plan(test_n, seed)
    return _plan_examples(
        pack,
        plan,
        generated=(),
        history_len=history_len,
        end_share=None,
        reasoning=reasoning,
        source="reference",
    )[0]


def examples_sha256(rows: Sequence[dict[str, Any]]) -> str:
    """The SHA-256 of ``rows`` as :func:`build_dataset` writes them (one JSON object a line)."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(_example_line(row).encode("utf-8"))
    return digest.hexdigest()


def _example_line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def write_examples(rows: Sequence[dict[str, Any]], out: str | Path) -> None:
    """Write ``rows`` to the JSONL file ``out``, one :func:`sft_example` a line (its folder made where missing)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(_example_line(row))


def build_dataset(
    domain: Domain | str,
    n: int,
    out: str | Path,
    *,
    test_n: int | None = None,
    seed: int = 0,
    history_len: int = DEFAULT_HISTORY_LEN,
    teacher: ChatModel | None = None,
    variation_share: float = DEFAULT_VARIATION_SHARE,
    end_share: float | None = None,
    near_miss_share: float = 0.0,
) -> DatasetSummary:
    """Write ``n`` train and ``test_n`` test SFT examples of ``domain`` to the JSONL file ``out``.

    Arguments:
        domain: a domain pack or its name.
        n: train examples (expert, noisy and random transitions in equal shares).
        out: the JSONL file (one :func:`sft_example` a line).
        test_n: test examples, from the test split's tasks (default: a fifth of ``n``).
        seed: seeds the episodes, the policies and the draws.
        history_len: past steps in each request, as the synthetic env sends them.
        teacher: a chat model that writes the reasoning and the curriculum variations.
        variation_share: with a teacher, the share of train examples played (by the expert) on
            curriculum variations of the train tasks, where the domain checks generated tasks.
        end_share: the share of each policy's train examples that end an episode (see
            :func:`policy_transitions`; default: their natural rate). Test examples keep the
            natural rate, as the synthetic env meets them.
        near_miss_share: the share of each policy's train examples that are near misses (see
            :func:`policy_transitions`); test examples keep their natural rate.
    """
    pack = get_domain(domain)
    if n < 1:
        raise ConfigurationError(f"n must be >= 1, got {n}")
    test_n = held_out_count(n, test_n)
    if test_n < 0 or not 0.0 <= variation_share < 1.0:
        raise ConfigurationError("test_n must be >= 0 and variation_share in [0, 1)")
    if end_share is not None and not 0.0 <= end_share <= 1.0:
        raise ConfigurationError(f"end_share must be in [0, 1], got {end_share}")
    if not 0.0 <= near_miss_share <= 1.0 - (end_share or 0.0):
        raise ConfigurationError(
            f"near_miss_share must be in [0, 1 - end_share], got {near_miss_share} (end_share {end_share})"
        )
    started = time.perf_counter()
    source: ReasoningSource = "teacher" if teacher is not None else "reference"
    write_reasoning: Callable[[ExperienceRequest, Transition], str] = (
        TeacherReasoning(teacher) if teacher is not None else partial(reference_reasoning, pack)
    )
    notes: list[str] = []
    generated: list[Task] = []
    if teacher is not None and pack.task_variations() is not None and variation_share > 0:
        from dreamgym_env.curriculum.generator import TaskGenerator

        wanted = max(1, round(n * variation_share / pack.max_episode_steps))
        report = TaskGenerator(teacher, pack).generate_sync(list(pack.tasks("train")), wanted)
        generated = report.accepted
        notes += [f"curriculum variations: {report.counts()}"] + ([report.note] if report.note else [])
    elif teacher is None:
        notes.append("no curriculum variations: they need a teacher to write them (--teacher-url)")
    else:
        notes.append(f"no curriculum variations: domain {pack.name!r} cannot check generated tasks")
    varied = round(n * variation_share) if generated else 0
    # Seeds go by a policy's place among the train shares, then the test shares, then the
    # variations, so that the test split does not depend on the teacher (see held_out_examples).
    plan: list[PlanItem] = [
        ("train", name, count, seed + 7919 * index, None)
        for index, (name, count) in enumerate(_shares(n - varied).items())
    ]
    if varied:
        plan.append(("train", "expert", varied, seed + 7919 * 2 * len(POLICY_NAMES), generated))
    plan += _test_plan(test_n, seed)
    rows, stale = _plan_examples(
        pack, plan, generated=generated, history_len=history_len, end_share=end_share, reasoning=write_reasoning,
        source=source, near_miss_share=near_miss_share,
    )  # fmt: skip
    by_policy = Counter(row["policy"] for row in rows if row["split"] == "train")
    if stale:
        notes.append(f"{stale} transitions left out: their given fields missed a change out of sight")
    write_examples(rows, out)
    splits = {s: [r for r in rows if r["split"] == s] for s in ("train", "test")}
    return DatasetSummary(
        domain=pack.name,
        state_mode=state_mode_of(pack),
        train_examples=len(splits["train"]),
        test_examples=len(splits["test"]),
        train_tasks=len({r["task_id"] for r in splits["train"]}),
        test_tasks=len({r["task_id"] for r in splits["test"]}),
        generated_tasks=len(generated),
        by_policy=dict(by_policy),
        train_episode_ends=sum(map(ends_episode, splits["train"])),
        reasoning_source=source,
        seconds=round(time.perf_counter() - started, 2),
        out=str(Path(out)),
        notes=notes,
    )


def iter_examples(path: str | Path) -> Iterator[dict[str, Any]]:
    """The rows of a dataset file, checked for the fields training needs."""
    path = Path(path)
    for number, line in numbered_lines(path, "the dataset"):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{number}: not JSON: {exc.msg}") from None
        if not isinstance(row, dict) or not {"prompt", "completion", "split", "task_id"} <= row.keys():
            raise DataError(f"{path}:{number}: not an SFT example (prompt, completion, split, task_id)")
        yield row


def read_examples(path: str | Path, *, split: Split | None = None) -> list[dict[str, Any]]:
    """The rows of a dataset file, those of ``split`` only when given."""
    return [row for row in iter_examples(path) if split is None or row["split"] == split]


def ends_episode(row: dict[str, Any]) -> bool:
    """Whether the example's answer ends the episode (``"done": true``)."""
    try:
        return bool(json.loads(row["completion"][-1]["content"]).get("done"))
    except (KeyError, IndexError, TypeError, json.JSONDecodeError):
        raise DataError(f"task {row.get('task_id')!r}: the completion is not an answer message") from None


def action_verb(row: dict[str, Any]) -> str:
    """The verb of the example's action (``put``, ``click`` ...), as its pack parses it; ``""`` if invalid."""
    try:
        parsed = get_domain(row["domain"]).parse_action(row["request"]["action"])
    except (KeyError, TypeError):
        raise DataError(f"task {row.get('task_id')!r}: the example records no domain and action") from None
    return parsed.verb if isinstance(parsed, ParsedAction) else ""


def decisive_verbs(rows: Sequence[dict[str, Any]]) -> set[str]:
    """The verbs whose examples end the episode in some rows and not in others (ALFWorld's ``put``).

    Their examples hold the verdicts a model must read from the request (two mugs put, or one);
    the rest end always or never.
    """
    ending: dict[str, set[bool]] = {}
    for row in rows:
        ending.setdefault(action_verb(row), set()).add(ends_episode(row))
    return {verb for verb, outcomes in ending.items() if verb and len(outcomes) == 2}
