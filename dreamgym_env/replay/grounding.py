"""Replay grounding: retrieved demonstrations for experience requests, transitions written back.

:class:`ReplayGrounder` holds the logic that the :class:`~dreamgym_env.wrappers.ReplayGrounding`
wrappers plug into synthetic envs through their hooks: a context provider (the k transitions of the buffer most
similar to the request's ``(state, action)``, compacted to bound the prompt) and a step listener
(each finished step written back, tagged with its source).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Collection, Sequence

from dreamgym_env.errors import ConfigurationError
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.records import GROUNDING_SOURCES, SOURCES, ReplayRecord
from dreamgym_env.types import Demonstration, ExperienceRequest, Source, Step, Task

DEFAULT_K = 4
COMPACT_DEMO_STATE_CHARS = 160
"""A demonstration's state is compacted, line by line, to about this many characters (about 45
tokens) before the prompt clips it (``experience.prompt.DEMO_STATE_CHARS``, 600)."""
COMPACT_DEMO_NEXT_STATE_CHARS = 160
"""A demonstration's next state is compacted to about this many characters (about 45 tokens); a
next state on the same page shows only the lines the action changed."""
STRUCTURED_DEMO_CHARS = 600
"""A structured (JSON) demonstration state is clipped to this many characters once its fields are
compacted (the prompt's own clip of a demonstration state)."""
DEMO_LIST_ROWS = 2
"""A list of records (result rows, page elements) in a structured demonstration keeps this many,
then says how many more there were: the rows show the format, and a model copies shown rows."""

ActionArguments = Callable[[str], Sequence[str]]
"""What an action names on the page (a domain's ``action_arguments``): the lines and rows a demonstration keeps."""


def compact_text(
    text: str, limit: int, *, drop: str = "", keep: Sequence[str] = (), skip: Collection[str] = ()
) -> str:
    """Shorten ``text`` to about ``limit`` characters, whole lines at a time.

    Lines containing ``drop`` (e.g. the demonstration's own task instruction, repeated on every
    page) are removed. The first line (a page header in every domain) is always kept, then the
    lines containing any of ``keep`` (e.g. the label the action clicks), then the other lines in
    order while they fit; lines equal to one of ``skip`` (e.g. those a next state shares with its
    state) are left out. Omitted lines are counted in a closing ``[... N more lines]``.
    """
    lines = [line for line in text.splitlines() if not (drop and drop in line)]
    if not lines:
        return ""
    candidates = [i for i in range(1, len(lines)) if lines[i] not in skip]
    if len(candidates) == len(lines) - 1 and sum(len(line) + 1 for line in lines) <= limit + 1:
        return "\n".join(lines)
    chosen = {0}
    budget = limit - len(lines[0])
    wanted = [i for i in candidates if any(k and k in lines[i] for k in keep)]
    rest = [i for i in candidates if i not in wanted]
    for i in wanted + rest:
        if len(lines[i]) + 1 > budget and i in wanted and budget > 30:  # a wanted line is cut, not lost
            lines[i] = lines[i][: budget - 7] + " [...]"
        if len(lines[i]) + 1 <= budget:
            chosen.add(i)
            budget -= len(lines[i]) + 1
    if len(chosen) == 1 and candidates and budget > 20:  # a single long line: cut it
        chosen.add(candidates[0])
        lines[candidates[0]] = lines[candidates[0]][: budget - 6] + " [...]"
    omitted = len(lines) - len(chosen)
    kept = [lines[i] for i in sorted(chosen)]
    if len(kept[0]) > limit:
        kept[0] = kept[0][: max(limit - 6, 1)] + " [...]"
    return "\n".join(kept) + (f"\n[... {omitted} more line{'s' if omitted > 1 else ''}]" if omitted else "")


def compact_demonstration(
    demo: Demonstration, *, state_chars: int, next_state_chars: int, arguments: Sequence[str] = ()
) -> Demonstration:
    """A demonstration whose states are compacted for the prompt (see :func:`compact_text`).

    The instruction line is dropped (the demonstration belongs to another task). In the state
    the lines naming the action's bracketed argument are kept first. The next state shows the
    lines the action changed (e.g. a new page, a new selection, an error line): the lines it
    shares with the state are counted as omitted, and when its first line is the state's too
    (the same page) only the changed lines are shown, then ``[... N lines as in the state]``.
    """
    instruction = demo.task_instruction.strip() if len(demo.task_instruction.strip()) >= 8 else ""
    keep_labels = [argument for argument in arguments if argument.strip()]
    before = set(demo.state.splitlines())
    after = [line for line in demo.next_state.splitlines() if not (instruction and instruction in line)]
    if after and after[0] in before:
        changed = [line for line in after if line not in before]
        same = len(after) - len(changed)
        shown = compact_text("\n".join(changed), next_state_chars) if changed else ""
        next_state = "\n".join(
            [*([shown] if shown else []), f"[... {same} line{'s' if same > 1 else ''} as in the state]"]
        )
    else:
        next_state = compact_text(demo.next_state, next_state_chars, drop=instruction, skip=before)
    return demo.model_copy(
        update={
            "state": compact_text(demo.state, state_chars, drop=instruction, keep=keep_labels),
            "next_state": next_state,
        }
    )


def _json_object(text: str) -> dict[str, object] | None:
    """``text`` as a JSON object (a structured state), else ``None``."""
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _fewer_rows(value: object, wanted: Collection[str] = ()) -> object:
    """``value`` with every list of records cut to :data:`DEMO_LIST_ROWS` and a count of the rest.

    Records holding one of ``wanted`` (the action's bracketed arguments: the row or element it
    clicks) are kept besides.
    """
    if isinstance(value, dict):
        return {k: _fewer_rows(v, wanted) for k, v in value.items()}
    if not isinstance(value, list):
        return value
    if len(value) <= DEMO_LIST_ROWS or not all(isinstance(v, dict) for v in value):
        return [_fewer_rows(v, wanted) for v in value]
    named = {
        i
        for i, row in enumerate(value)
        if any(str(v) in wanted for k, v in row.items() if k == "id" or isinstance(v, str))
    }
    shown = sorted(named | set(range(DEMO_LIST_ROWS)))
    rows = [_fewer_rows(value[i], wanted) for i in shown]
    return [*rows, f"[... {len(value) - len(shown)} more]"]


def _clip_json(fields: dict[str, object], limit: int, wanted: Collection[str]) -> str:
    text = json.dumps(_fewer_rows(fields, wanted), ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 6] + " [...]"


def compact_structured_demonstration(
    demo: Demonstration, *, chars: int, arguments: Sequence[str] = ()
) -> Demonstration | None:
    """A demonstration of structured states compacted field by field; ``None`` if its states are not JSON objects.

    Fields holding the demonstration's own task instruction are left out (it belongs to another
    task), and both states show only the fields whose value the action changed: what the model
    is asked to write, before and after. Lists of records keep their first rows (see
    :data:`DEMO_LIST_ROWS`) and the rows the action names (``click[B0...]``'s result row,
    ``click [12]``'s element), and each state is clipped to ``chars`` characters.
    """
    state, next_state = _json_object(demo.state), _json_object(demo.next_state)
    if state is None or next_state is None:
        return None
    instruction = demo.task_instruction.strip()

    def own(fields: dict[str, object]) -> dict[str, object]:
        return {k: v for k, v in fields.items() if not (instruction and v == instruction)}

    changed = {k: v for k, v in own(next_state).items() if k not in state or state[k] != v}
    before = {k: v for k, v in own(state).items() if k in changed or k not in next_state}
    wanted = {argument.strip() for argument in arguments}
    return demo.model_copy(
        update={
            "state": _clip_json(before, chars, wanted),
            "next_state": _clip_json(changed, chars, wanted),
        }
    )


class ReplayGrounder:
    """Retrieval for experience requests and write-back of finished steps, for any synthetic env.

    Args:
        buffer: the replay buffer to search and to write to.
        k: demonstrations per request.
        sources: the sources retrieved (default ``("offline", "real")``; ``None``: all).
        write_back: write each finished step to the buffer.
        record_invalid: also write back invalid-action steps (their feedback is programmatic).
        state_chars, next_state_chars: compaction of demonstration pages (text states);
            structured (JSON) states are compacted field by field to
            :data:`STRUCTURED_DEMO_CHARS` (:func:`compact_structured_demonstration`). ``None``:
            keep every state whole.
        action_arguments: what an action names (a domain's ``action_arguments``): compaction
            keeps the lines and rows it names; ``None``: none are singled out.
    """

    def __init__(
        self,
        buffer: ExperienceReplayBuffer,
        *,
        k: int = DEFAULT_K,
        sources: Sequence[Source] | None = GROUNDING_SOURCES,
        write_back: bool = True,
        record_invalid: bool = False,
        state_chars: int | None = COMPACT_DEMO_STATE_CHARS,
        next_state_chars: int | None = COMPACT_DEMO_NEXT_STATE_CHARS,
        action_arguments: ActionArguments | None = None,
    ) -> None:
        if not isinstance(buffer, ExperienceReplayBuffer):
            raise ConfigurationError(f"buffer must be an ExperienceReplayBuffer, got {type(buffer).__name__}")
        if k < 0:
            raise ConfigurationError(f"k must be >= 0, got {k}")
        if sources is not None:
            unknown = [s for s in sources if s not in SOURCES]
            if unknown:
                raise ConfigurationError(f"unknown sources {unknown}; known: {SOURCES}")
        self.buffer = buffer
        self.k = k
        self.sources = tuple(sources) if sources is not None else None
        self.write_back = write_back
        self.record_invalid = record_invalid
        self.state_chars = state_chars
        self.next_state_chars = next_state_chars
        self.action_arguments = action_arguments
        self.retrievals = 0
        """Requests answered with demonstrations so far."""
        self.written = 0
        """Steps handed to the buffer so far (repeats included)."""
        self.replayed = 0
        """Next states taken whole from a recorded real transition (``supply="replay"``) so far."""
        self._prefetched: dict[tuple[str, str, str], list[ReplayRecord]] = {}

    # -- retrieval ----------------------------------------------------------------------------
    def _hits(self, domain: str, state: str, action: str) -> list[ReplayRecord]:
        """The stored transitions nearest ``(state, action)``, kept for the request's :meth:`demonstrations`."""
        key = (domain, state, action)
        found = self._prefetched.get(key)
        if found is None:
            hits = self.buffer.search(state, action, max(self.k, 1), domain=domain, sources=self.sources)
            found = self._prefetched[key] = [hit.record for hit in hits]
        return found

    def demonstrations(self, request: ExperienceRequest) -> list[Demonstration]:
        """The k demonstrations for a request (a context provider of a synthetic env)."""
        key = (request.task.domain, request.state, request.action)
        if self.k == 0:
            self._prefetched.pop(key, None)
            return []
        found = self._hits(*key)[: self.k]
        del self._prefetched[key]
        self.retrievals += 1
        return [self._compact(record.to_demonstration()) for record in found]

    def recorded_next_state(self, task: Task, state: str, action: str) -> str | None:
        """The next state of a real transition stored for exactly ``(state, action)``, else ``None`` (a recorded lookup of a synthetic env).

        Only real sources (``offline``, ``real``) count, whatever the grounder's ``sources``:
        a synthetic transition is the model's own guess, not a recording.
        """
        for record in self._hits(task.domain, state, action):
            if record.state == state and record.action == action and record.source in GROUNDING_SOURCES:
                self.replayed += 1
                return record.next_state
        return None

    def prefetch(self, domain: str, pairs: Sequence[tuple[str, str]]) -> None:
        """Retrieve for many ``(state, action)`` keys in one batch; later requests use the results."""
        if self.k == 0 or not pairs:
            return
        unique = list(dict.fromkeys(pairs))
        results = self.buffer.search_many(unique, max(self.k, 1), domain=domain, sources=self.sources)
        for (state, action), hits in zip(unique, results, strict=True):
            self._prefetched[(domain, state, action)] = [hit.record for hit in hits]

    def clear_prefetched(self) -> None:
        """Forget prefetched results that no request used (e.g. sub-envs that were resetting)."""
        self._prefetched.clear()

    def _compact(self, demo: Demonstration) -> Demonstration:
        if self.state_chars is None or self.next_state_chars is None:
            return demo
        arguments = self.action_arguments(demo.action) if self.action_arguments is not None else ()
        structured = compact_structured_demonstration(demo, chars=STRUCTURED_DEMO_CHARS, arguments=arguments)
        if structured is not None:
            return structured
        return compact_demonstration(
            demo, state_chars=self.state_chars, next_state_chars=self.next_state_chars, arguments=arguments
        )

    # -- write-back ---------------------------------------------------------------------------
    def record(self, task: Task, step: Step, *, source: Source, episode_id: str, step_index: int) -> None:
        """Write one finished step to the buffer (skipped when write-back is off)."""
        if not self.write_back or (not step.action_valid and not self.record_invalid):
            return
        self.buffer.add(task, step, source=source, episode_id=episode_id, step_index=step_index)
        self.written += 1
        if step.done:
            self.buffer.commit()

    def record_synthetic(self) -> Callable[[Task, Step, int], None]:
        """A step listener for one synthetic env: its steps written back as ``synthetic``.

        The listener gets each step with its index in the episode; index 0 starts a new episode id.
        """
        episode = {"id": uuid.uuid4().hex}

        def listener(task: Task, step: Step, step_index: int) -> None:
            if step_index <= 0:
                episode["id"] = uuid.uuid4().hex
            self.record(
                task, step, source="synthetic", episode_id=episode["id"], step_index=max(step_index, 0)
            )

        return listener
